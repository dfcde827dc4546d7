"""The provider's merge rules, one example per rule (reference §2.3)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from k8s_workloads.pods.manifest import clean_manifest
from k8s_workloads.pods.reconcile import PodReconciliationError, reconcile_pods

BASE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "template", "labels": {"a": "1", "b": "1"}, "annotations": {"x": "1"}},
    "spec": {
        "hostNetwork": True,
        "serviceAccountName": "worker",
        "securityContext": {"runAsUser": 50000},
        "nodeSelector": {"pool": "workers"},
        "containers": [
            {
                "name": "base",
                "image": "template:1",
                "env": [{"name": "T", "value": "t"}],
                "volumeMounts": [{"name": "logs", "mountPath": "/logs"}],
            },
            {"name": "sidecar", "image": "sidecar:1"},
        ],
        "initContainers": [
            {"name": "init", "image": "busybox", "env": [{"name": "I", "value": "1"}]}
        ],
        "volumes": [{"name": "logs", "emptyDir": {}}],
    },
}


def test_none_and_empty_client_return_base() -> None:
    assert reconcile_pods(BASE, None) == BASE
    assert reconcile_pods(BASE, {}) == BASE
    assert reconcile_pods(BASE, {"metadata": {}, "spec": {}}) == BASE


def test_inputs_are_never_mutated_and_output_shares_nothing() -> None:
    base = copy.deepcopy(BASE)
    client = {"spec": {"containers": [{"name": "base", "env": [{"name": "C", "value": "c"}]}]}}
    client_before = copy.deepcopy(client)
    merged = reconcile_pods(base, client)
    assert base == BASE
    assert client == client_before
    merged["spec"]["containers"][0]["env"].append({"name": "Z"})
    merged["metadata"]["labels"]["z"] = "z"
    assert base == BASE


def test_labels_and_annotations_are_unions_client_wins() -> None:
    merged = reconcile_pods(BASE, {"metadata": {"labels": {"b": "2", "c": "2"}}})
    assert merged["metadata"]["labels"] == {"a": "1", "b": "2", "c": "2"}
    assert merged["metadata"]["annotations"] == {"x": "1"}
    assert merged["metadata"]["name"] == "template"


def test_falsy_client_values_never_override_truthy_base_values() -> None:
    merged = reconcile_pods(
        BASE,
        {"spec": {"hostNetwork": False, "serviceAccountName": "", "nodeSelector": {}}},
    )
    assert merged["spec"]["hostNetwork"] is True
    assert merged["spec"]["serviceAccountName"] == "worker"
    # nodeSelector is a string map: empty is falsy, as for the provider's dict.
    assert merged["spec"]["nodeSelector"] == {"pool": "workers"}


def test_an_empty_model_object_is_truthy_and_replaces_the_base() -> None:
    # securityContext is a model (V1PodSecurityContext); an empty instance is truthy.
    merged = reconcile_pods(BASE, {"spec": {"securityContext": {}}})
    assert merged["spec"]["securityContext"] == {}


def test_falsy_client_kept_where_base_has_nothing() -> None:
    merged = reconcile_pods({"spec": {}}, {"spec": {"hostNetwork": False}})
    assert merged["spec"]["hostNetwork"] is False


def test_containers_merge_by_position_and_concatenate_lists() -> None:
    client = {
        "spec": {
            "containers": [
                {"name": "main", "env": [{"name": "C", "value": "c"}], "image": ""},
            ]
        }
    }
    merged = reconcile_pods(BASE, client)
    first, second = merged["spec"]["containers"]
    assert first["name"] == "main"  # a truthy client name replaces the base's
    assert first["image"] == "template:1"  # an empty image keeps the base's
    assert first["env"] == [{"name": "T", "value": "t"}, {"name": "C", "value": "c"}]
    assert first["volumeMounts"] == [{"name": "logs", "mountPath": "/logs"}]
    assert second == {"name": "sidecar", "image": "sidecar:1"}


def test_extra_client_containers_are_appended() -> None:
    client = {"spec": {"containers": [{"name": "base"}, {"name": "a"}, {"name": "b"}]}}
    names = [c["name"] for c in reconcile_pods(BASE, client)["spec"]["containers"]]
    assert names == ["base", "a", "b"]


def test_duplicate_env_entries_are_kept() -> None:
    client = {"spec": {"containers": [{"name": "base", "env": [{"name": "T", "value": "u"}]}]}}
    env = reconcile_pods(BASE, client)["spec"]["containers"][0]["env"]
    assert env == [{"name": "T", "value": "t"}, {"name": "T", "value": "u"}]


def test_init_containers_merge_by_name_then_append() -> None:
    client = {
        "spec": {
            "initContainers": [
                {"name": "other", "image": "o"},
                {"name": "init", "image": "busybox:2", "env": [{"name": "J", "value": "2"}]},
            ]
        }
    }
    merged = reconcile_pods(BASE, client)["spec"]["initContainers"]
    assert merged == [
        {
            "name": "init",
            "image": "busybox:2",
            "env": [{"name": "I", "value": "1"}, {"name": "J", "value": "2"}],
        },
        {"name": "other", "image": "o"},
    ]


def test_volumes_are_concatenated_without_dedup() -> None:
    client = {
        "spec": {"volumes": [{"name": "logs", "emptyDir": {}}, {"name": "v2", "emptyDir": {}}]}
    }
    volumes = reconcile_pods(BASE, client)["spec"]["volumes"]
    assert [v["name"] for v in volumes] == ["logs", "logs", "v2"]


def test_metadata_lists_are_the_clients_when_set() -> None:
    base = {"metadata": {"finalizers": ["a"]}}
    assert reconcile_pods(base, {"metadata": {"finalizers": ["b"]}})["metadata"] == {
        "finalizers": ["b"]
    }
    assert reconcile_pods(base, {"metadata": {"name": "n"}})["metadata"] == {
        "finalizers": ["a"],
        "name": "n",
    }


def test_top_level_fields_fill_from_base() -> None:
    merged = reconcile_pods(BASE, {"spec": {"containers": [{"name": "base"}]}})
    assert (merged["apiVersion"], merged["kind"]) == ("v1", "Pod")


def test_nulls_count_as_absent() -> None:
    merged = reconcile_pods(BASE, {"spec": {"serviceAccountName": None}, "metadata": None})
    assert merged["spec"]["serviceAccountName"] == "worker"
    assert None not in merged["metadata"].values()


@pytest.mark.parametrize(
    ("client", "message"),
    [
        ({"spec": {"containers": [{"name": "base", "env": "X=1"}]}}, "must be a list"),
        ({"spec": {"volumes": {"name": "v"}}}, "must be a list"),
        ({"spec": {"initContainers": "init"}}, "must be a list"),
        ({"metadata": {"finalizers": "x"}}, "must be a list"),
        ({"spec": "nope"}, "spec must be an object"),
        ({"metadata": {"labels": ["a"]}}, "labels and annotations must be objects"),
        ({"spec": {"containers": {"name": "base"}}}, "must be a list"),
    ],
)
def test_shapes_the_provider_cannot_merge_are_typed_errors(
    client: dict[str, Any], message: str
) -> None:
    with pytest.raises(PodReconciliationError, match=message):
        reconcile_pods(BASE, client)


def test_clean_manifest_rejects_non_json_values() -> None:
    with pytest.raises(PodReconciliationError, match=r"pod\.spec\.x: object is not a JSON value"):
        clean_manifest({"spec": {"x": object()}})
    with pytest.raises(PodReconciliationError, match="keys must be strings"):
        clean_manifest({1: "a"})
    assert clean_manifest({"a": (1, {"b": None})}) == {"a": [1, {}]}
