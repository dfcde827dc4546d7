"""The manifest strategies (:mod:`k8s_workloads.testing.strategies._manifests`) draw what
users write: names and labels Kubernetes accepts, never the keys a pod's identity is read
from, and templates and overrides whose container names a valid pod can hold."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings

from k8s_workloads.pods.validation import (
    is_dns1123_label,
    is_label_value,
    label_key_errors,
)
from k8s_workloads.testing.strategies import (
    RESERVED_KEYS,
    dns_labels,
    label_keys,
    label_values,
    namespaces,
    pod_overrides,
    pod_templates,
    templates_and_overrides,
)

Manifest = dict[str, Any]


def _container_names(pod: Manifest | None) -> list[str]:
    spec = (pod or {}).get("spec") or {}
    return [c["name"] for part in ("containers", "initContainers") for c in spec.get(part) or []]


@given(dns_labels, namespaces)
def test_names_and_namespaces_are_dns_labels(name: str, namespace: str) -> None:
    assert is_dns1123_label(name)
    assert is_dns1123_label(namespace)


@given(label_keys, label_values)
def test_labels_are_valid_and_never_a_reserved_key(key: str, value: str) -> None:
    assert label_key_errors(key, field="metadata.labels") == []
    assert is_label_value(value)
    assert key not in RESERVED_KEYS


@settings(max_examples=40)  # a manifest is a large draw: ~2 s at 40
@given(pod_templates())
def test_a_template_has_a_spec_with_distinct_containers_and_passes_the_naming_rules(
    template: Manifest,
) -> None:
    names = _container_names(template)
    assert template["spec"]["containers"]
    assert len(names) == len(set(names))
    assert all(is_dns1123_label(name) for name in names)
    labels = template.get("metadata", {}).get("labels", {})
    assert not set(labels) & RESERVED_KEYS


@settings(max_examples=40)  # a manifest is a large draw: ~2 s at 40
@given(pod_overrides())
def test_an_override_may_leave_main_container_names_empty(override: Manifest) -> None:
    assert all(
        name in {"", "base"} or is_dns1123_label(name) for name in _container_names(override)
    )


@settings(max_examples=40)  # a manifest is a large draw: ~2 s at 40
@given(templates_and_overrides(valid=True))
def test_valid_pairs_never_share_a_container_name_but_base(
    pair: tuple[Manifest | None, Manifest | None],
) -> None:
    template, override = pair
    shared = set(_container_names(template)) & set(_container_names(override))
    assert shared <= {"base"}
