"""Hostile values (:mod:`k8s_workloads.testing.strategies._hostile`): the edits that put
them into a template or override, and the hooks that apply them in place or to a copy."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given

from k8s_workloads.testing.strategies import (
    RESERVED_KEYS,
    Edit,
    HostileHook,
    hostile_edits,
)

POD: dict[str, Any] = {
    "metadata": {"name": "p"},
    "spec": {"containers": [{"name": "base"}, {"name": "side"}]},
}


def test_each_kind_of_edit_changes_the_manifest_where_it_says() -> None:
    pod = copy.deepcopy(POD)
    Edit("set", ("metadata", "labels", "bad key!"), "-a").apply(pod)
    Edit("set", ("spec", "containers", 0, "tty"), "yes").apply(pod)
    Edit("init-container", (), "Bad_Name").apply(pod)
    Edit("drop-name").apply(pod)
    assert pod["metadata"]["labels"] == {"bad key!": "-a"}
    assert pod["spec"]["containers"][0] == {"name": "base", "tty": "yes"}
    assert pod["spec"]["initContainers"] == [{"name": "Bad_Name"}]
    assert pod["spec"]["containers"][1] == {}  # the second container lost its name
    empty: dict[str, Any] = {}
    Edit("set", ("spec", "containers", 2, "image"), 5).apply(empty)  # made where missing
    assert [container.get("image") for container in empty["spec"]["containers"]] == [
        None,
        None,
        5,
    ]


def test_a_hook_edits_in_place_or_returns_an_edited_copy() -> None:
    edit = Edit("set", ("metadata", "name"), "")
    in_place = copy.deepcopy(POD)
    assert HostileHook((edit,), returns_copy=False)(in_place) is None
    assert in_place["metadata"]["name"] == ""
    original = copy.deepcopy(POD)
    returned = HostileHook((edit,), returns_copy=True)(original)
    assert returned is not None
    assert returned["metadata"]["name"] == ""
    assert original == POD


@given(hostile_edits())
def test_edits_never_write_the_keys_a_pods_identity_is_read_from(edits: list[Edit]) -> None:
    assert len(edits) <= 2
    for edit in edits:
        if edit.path[:2] in {("metadata", "labels"), ("metadata", "annotations")}:
            assert edit.path[2] not in RESERVED_KEYS
