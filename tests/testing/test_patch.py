"""PATCH bodies by content type (:mod:`k8s_workloads.testing._patch`), as the API server
applies them: RFC 7386, the strategic merge by the pod's patch keys, RFC 6902."""

from __future__ import annotations

from typing import Any

import pytest

from k8s_workloads.testing._patch import PatchError, apply_patch, patch_type

POD: dict[str, Any] = {
    "metadata": {"name": "p", "labels": {"a": "1", "b": "2"}},
    "spec": {
        "containers": [
            {"name": "base", "image": "x:1", "env": [{"name": "A", "value": "1"}]},
            {"name": "side", "image": "y:1"},
        ]
    },
}


def test_content_types_and_short_names_name_the_three_kinds_and_others_are_a_415() -> None:
    assert patch_type("application/merge-patch+json; charset=utf-8") == (
        "application/merge-patch+json"
    )
    assert patch_type("json") == "application/json-patch+json"
    assert patch_type("strategic") == "application/strategic-merge-patch+json"
    with pytest.raises(PatchError) as caught:
        patch_type("application/apply-patch+yaml")
    assert caught.value.code == 415


def test_a_merge_patch_removes_with_null_and_replaces_lists_whole() -> None:
    patch = {"metadata": {"labels": {"a": None, "c": "3"}}, "spec": {"containers": [{"name": "n"}]}}
    patched = apply_patch(POD, patch, "merge")
    assert patched["metadata"]["labels"] == {"b": "2", "c": "3"}
    assert patched["spec"]["containers"] == [{"name": "n"}]
    assert POD["metadata"]["labels"] == {"a": "1", "b": "2"}  # the original is untouched


def test_a_strategic_merge_patch_merges_containers_by_name_and_honours_delete() -> None:
    patch = {
        "spec": {
            "containers": [
                {"name": "base", "image": "x:2"},
                {"name": "side", "$patch": "delete"},
                {"name": "new", "image": "z:1"},
            ]
        }
    }
    containers = apply_patch(POD, patch, "strategic")["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [("base", "x:2"), ("new", "z:1")]
    assert containers[0]["env"] == [{"name": "A", "value": "1"}]  # merged, not replaced


def test_a_json_patch_applies_all_or_nothing_and_a_failed_test_is_a_422() -> None:
    ops = [
        {"op": "test", "path": "/metadata/labels/a", "value": "1"},
        {"op": "replace", "path": "/metadata/labels/a", "value": "9"},
        {"op": "remove", "path": "/metadata/labels/b"},
    ]
    assert apply_patch(POD, ops, "json")["metadata"]["labels"] == {"a": "9"}
    with pytest.raises(PatchError) as caught:
        apply_patch(POD, [{"op": "test", "path": "/metadata/labels/a", "value": "2"}], "json")
    assert caught.value.code == 422


@pytest.mark.parametrize(("patch", "kind"), [([1], "merge"), ("x", "strategic"), ({}, "json")])
def test_a_patch_document_of_the_wrong_shape_is_refused(patch: object, kind: str) -> None:
    with pytest.raises(PatchError) as caught:
        apply_patch(POD, patch, kind)
    assert caught.value.code in {400, 422}
