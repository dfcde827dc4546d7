from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from k8s_workloads.pods.validation import (
    TOTAL_ANNOTATION_SIZE_LIMIT_BYTES,
    AnnotationsTooLarge,
    DuplicateContainerName,
    InvalidAnnotationKey,
    InvalidDNS1123Label,
    InvalidDNS1123Subdomain,
    InvalidLabelKey,
    InvalidLabelValue,
    InvalidPodName,
    UnencodableString,
    annotation_errors,
    container_name_errors,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_label_value,
    is_valid_manifest,
    label_errors,
    label_key_errors,
    label_value_errors,
    pod_name_errors,
    validate_manifest,
)
from k8s_workloads.testing.strategies import (
    hostile_label_keys,
    hostile_label_values,
    hostile_names,
    huge_annotation_values,
)
from tests.support.output_checks import clean_lines, has_lone_surrogate
from tests.support.strategies import wild_text

# Independent spellings of the apimachinery rules, used as oracles.
DNS_LABEL = re.compile(r"\A[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
LABEL_VALUE = re.compile(r"\A(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")


@pytest.mark.parametrize("value", ["a", "a-b", "0", "abc123", "a" * 63])
def test_valid_dns_labels(value: str) -> None:
    assert is_dns1123_label(value)
    assert dns1123_label_errors(value, field="f") == []


@pytest.mark.parametrize("value", ["", "-a", "a-", "A", "a_b", "a.b", "a" * 64, "ü", "a\n"])
def test_invalid_dns_labels_name_the_field(value: str) -> None:
    assert not is_dns1123_label(value)
    (error,) = dns1123_label_errors(value, field="spec.containers[0].name")
    assert isinstance(error, InvalidDNS1123Label)
    assert isinstance(error, ValueError)
    assert error.field == "spec.containers[0].name"
    assert str(error).startswith("spec.containers[0].name: ")


def test_dns_subdomain() -> None:
    assert is_dns1123_subdomain("a.b-c.d")
    assert not is_dns1123_subdomain("a..b")
    assert not is_dns1123_subdomain("a.-b")
    assert not is_dns1123_subdomain("a" * 254)
    assert is_dns1123_subdomain("a" * 253)
    (error,) = dns1123_subdomain_errors("Bad_Name!", field="metadata.name")
    assert isinstance(error, InvalidDNS1123Subdomain)


def test_pod_names_stay_within_63() -> None:
    assert pod_name_errors("task-id-abcdefgh") == []
    (error,) = pod_name_errors("a" * 64)
    assert isinstance(error, InvalidPodName)
    assert "longer than 63" in str(error)
    (error,) = pod_name_errors("Bad_Name!")
    assert error.field == "metadata.name"
    (error,) = pod_name_errors(None)
    assert "must be a string" in str(error)


@pytest.mark.parametrize(
    ("key", "valid"),
    [
        ("dag_id", True),
        ("airflow-worker", True),
        ("app.kubernetes.io/name", True),
        ("example.com/a.b_c-d", True),
        ("/name", False),
        ("a/b/c", False),
        ("Example.com/name", False),
        ("example.com/", False),
        ("-name", False),
        ("n" * 63, True),
        ("n" * 64, False),
        ("", False),
    ],
)
def test_label_keys(key: str, *, valid: bool) -> None:
    errors = label_key_errors(key, field="k")
    assert (errors == []) is valid
    assert all(isinstance(e, InvalidLabelKey) for e in errors)


def test_label_values_and_mappings() -> None:
    assert label_value_errors("", field="v") == []
    assert label_value_errors("True", field="v") == []
    (error,) = label_value_errors("-8a7ab20ec", field="v")
    assert isinstance(error, InvalidLabelValue)
    errors = label_errors({"good": "ok", "bad key!": "ok", "k": "x" * 64, "n": 5})
    assert [e.field for e in errors] == [
        "metadata.labels['bad key!']",
        "metadata.labels['k']",
        "metadata.labels['n']",
    ]
    assert label_errors(None) == []
    (error,) = label_errors(["not", "a", "mapping"])
    assert "must be a mapping" in str(error)


def test_annotation_keys_are_checked_lower_cased() -> None:
    # ValidateAnnotations lower-cases the key first, so an upper-case prefix is fine.
    assert annotation_errors({"Example.COM/Key": "v"}) == []
    (error,) = annotation_errors({"a/b/c": "v"})
    assert isinstance(error, InvalidAnnotationKey)
    (error,) = annotation_errors({"k": 5})
    assert "must be a string" in str(error)


def test_annotation_size_counts_utf8_bytes() -> None:
    # 'é' is one code point but two bytes: a character count would let this through.
    value = "é" * ((TOTAL_ANNOTATION_SIZE_LIMIT_BYTES // 2) - 1)
    assert annotation_errors({"k": value}) == []
    errors = annotation_errors({"k": value + "é"})
    assert [type(e) for e in errors] == [AnnotationsTooLarge]
    assert "262145 bytes" in str(errors[0])


def test_container_names_unique_and_valid() -> None:
    assert container_name_errors(["base", "sidecar"]) == []
    errors = container_name_errors(["base", "Base_Container", "base"])
    assert [type(e) for e in errors] == [InvalidDNS1123Label, DuplicateContainerName]
    assert errors[1].field == "spec.containers[2].name"


@given(st.text(max_size=80))
def test_predicates_agree_with_independent_oracles(value: str) -> None:
    assert is_dns1123_label(value) is bool(len(value) <= 63 and DNS_LABEL.match(value))
    assert is_label_value(value) is bool(len(value) <= 63 and LABEL_VALUE.match(value))
    assert (label_value_errors(value, field="v") == []) is is_label_value(value)


@given(st.dictionaries(st.text(max_size=70), st.text(max_size=70), max_size=5))
def test_error_functions_never_raise(labels: dict[str, str]) -> None:
    for error in label_errors(labels) + annotation_errors(labels):
        assert error.field.startswith("metadata.")


# --- lone surrogates, hostile values in messages (issue 11, items 2 and 8) ------------------


def _pod(**metadata: object) -> dict[str, object]:
    return {
        "metadata": {"name": "p", **metadata},
        "spec": {
            "containers": [{"name": "base", "image": "i", "env": [{"name": "E", "value": "v"}]}]
        },
    }


def test_a_lone_surrogate_is_reported_naming_the_field_not_raised() -> None:
    # An annotation with "\ud800" used to raise UnicodeEncodeError (counting its bytes);
    # the API server would have stored U+FFFD in its place.
    pod = _pod(annotations={"dag_id": "etl\ud800", "k\udc00": "v"})
    pod["spec"]["containers"][0]["env"][0]["value"] = "x\udfff"  # type: ignore[index]
    errors = validate_manifest(pod)
    by_field = {error.field: error for error in errors}
    assert set(by_field) >= {
        "metadata.annotations['dag_id']",
        "metadata.annotations['k\\udc00']",
        "spec.containers[0].env[0].value",
    }
    # The key is reported by the annotation-key rule, the values as unencodable.
    surrogates = [e for e in errors if isinstance(e, UnencodableString)]
    assert len(surrogates) == 2
    assert "'etl\\ud800' holds a lone surrogate (\\ud800 at index 3)" in str(
        by_field["metadata.annotations['dag_id']"]
    )
    for error in errors:
        assert clean_lines(str(error)) == [str(error)]


def test_a_surrogate_a_naming_rule_reports_is_reported_once() -> None:
    errors = validate_manifest(_pod(name="p\ud800", labels={"a": "b\ud800"}))
    assert [type(e) for e in errors] == [InvalidPodName, InvalidLabelValue]


def test_surrogates_are_found_at_any_depth_and_in_shared_or_cyclic_values() -> None:
    deep: list[object] = ["\ud800"]
    for _ in range(5_000):  # deeper than Python's recursion limit
        deep = [deep]
    cyclic: dict[str, object] = {"v": "\ud800"}
    cyclic["self"] = cyclic
    pod = _pod(annotations={"a": "b"})
    pod["spec"] = {"deep": deep, "cyclic": cyclic, "twice": [cyclic, cyclic]}
    errors = [e for e in validate_manifest(pod) if isinstance(e, UnencodableString)]
    assert [e.field.split("[")[0] for e in errors] == ["spec.deep", "spec.cyclic.v"]


def test_messages_cut_long_values_and_mask_tokens() -> None:
    jwt = (  # made up, as long as an Execution API token: no valid label value
        "eyJhbGciOiJIUzUxMiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ0aS0xIiwiZXhwIjoxNzY0NjMwMDAwfQ"
        ".c2lnbmF0dXJlLW5vdC1yZWFs"
    )
    errors = validate_manifest(
        _pod(name=jwt + "X" * 300, namespace="Bad NS\n", labels={"leak": jwt, "big": "v" * 100_000})
    )
    assert {e.field for e in errors} == {
        "metadata.name",
        "metadata.namespace",
        "metadata.labels['leak']",
        "metadata.labels['big']",
    }
    for error in errors:
        message = str(error)
        assert jwt not in message
        assert len(message) < 300
        assert clean_lines(message) == [message]
    assert "***REDACTED***" in str(errors[0])


names_or_anything = st.one_of(wild_text, st.integers(), st.none())


@given(
    name=names_or_anything,
    namespace=names_or_anything,
    labels=st.dictionaries(wild_text, wild_text, max_size=3),
    annotations=st.dictionaries(wild_text, wild_text, max_size=3),
    containers=st.lists(wild_text, max_size=3),
    env=wild_text,
)
def test_validate_manifest_never_raises_and_reports_every_surrogate(
    *,
    name: object,
    namespace: object,
    labels: dict[str, str],
    annotations: dict[str, str],
    containers: list[str],
    env: str,
) -> None:
    pod = {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {
            "containers": [{"name": c, "env": [{"name": "E", "value": env}]} for c in containers]
        },
    }
    errors = validate_manifest(pod)
    for error in errors:
        assert clean_lines(str(error)) == [str(error)]
    strings = [name, namespace, env, *labels, *labels.values(), *annotations]
    strings += [*annotations.values(), *containers]
    if any(isinstance(s, str) and has_lone_surrogate(s) for s in strings):
        assert errors
    if any(has_lone_surrogate(v) for v in annotations.values()):
        assert any(isinstance(e, UnencodableString) for e in errors)
    if not any(has_lone_surrogate(s) for s in strings if isinstance(s, str)):
        assert not any(isinstance(e, UnencodableString) for e in errors)


def test_a_surrogate_pair_is_not_lone() -> None:
    # YAML reads "\ud83d\ude80" as two halves; the client's JSON spells them the same
    # way and the API server reads the rocket back.
    assert validate_manifest(_pod(annotations={"a": "\ud83d\ude80", "b": "🚀"})) == []
    (error,) = validate_manifest(_pod(annotations={"a": "\ude80\ud83d"}))
    assert "(\\ude80 at index 0)" in str(error)


# --- is_valid_manifest, the builders' fast form (issue 11, item 4) ------------------------

_NAMES = st.one_of(hostile_names, st.sampled_from(["base", "sidecar", "init"]))


@st.composite
def hostile_manifests(draw: st.DrawFn) -> dict[str, Any]:
    """Pods whose names, namespace, labels, annotations and container names are valid or
    broken in every way the rules know, with odd shapes now and then."""
    metadata: dict[str, Any] = {"name": draw(st.one_of(st.just("pod-1"), hostile_names))}
    if draw(st.booleans()):
        metadata["namespace"] = draw(st.one_of(st.just("airflow"), hostile_names, st.none()))
    metadata["labels"] = draw(st.dictionaries(hostile_label_keys, hostile_label_values, max_size=4))
    metadata["annotations"] = draw(
        st.dictionaries(
            hostile_label_keys, st.one_of(st.text(max_size=20), huge_annotation_values), max_size=3
        )
    )
    kinds = ("containers", "initContainers", "ephemeralContainers")
    spec = {kind: [{"name": name} for name in draw(st.lists(_NAMES, max_size=3))] for kind in kinds}
    manifest: dict[str, Any] = {"metadata": metadata, "spec": spec}
    odd = draw(st.sampled_from([None, "labels", "name", "spec", "container"]))
    if odd == "labels":
        metadata["labels"] = draw(st.sampled_from([["a"], {"a": 1}, {1: "a"}, "x"]))
    elif odd == "name":
        metadata["name"] = draw(st.sampled_from([None, 5, b"pod"]))
    elif odd == "spec":
        manifest["spec"] = draw(st.sampled_from([None, [], "x"]))
    elif odd == "container":
        spec["containers"] = draw(st.sampled_from([[None], [{"name": 5}], {"name": "a"}]))
    return manifest


@given(hostile_manifests())
def test_the_fast_form_agrees_with_the_rules(manifest: dict[str, Any]) -> None:
    verdict = is_valid_manifest(manifest)
    event(f"valid: {verdict}")
    assert verdict is (validate_manifest(manifest) == [])


def test_the_fast_form_is_exact_at_the_annotation_size_limit() -> None:
    for size, valid in (
        (TOTAL_ANNOTATION_SIZE_LIMIT_BYTES, True),
        (TOTAL_ANNOTATION_SIZE_LIMIT_BYTES + 1, False),
    ):
        base = {
            "metadata": {
                "name": "p",
                "annotations": {"k": "é" * ((size - 1) // 2) + "x" * ((size - 1) % 2)},
            }
        }
        assert is_valid_manifest(base) is valid
        assert (validate_manifest(base) == []) is valid


def test_lone_surrogates_are_counted_not_raised_on() -> None:
    # A lone surrogate reaches the API server as U+FFFD: three bytes.
    value = "\ud800" * (TOTAL_ANNOTATION_SIZE_LIMIT_BYTES // 3)
    assert annotation_errors({"k": value}) == []
    (error,) = annotation_errors({"k": value + "\ud800"})
    assert isinstance(error, AnnotationsTooLarge)
    assert validate_manifest({"metadata": {"name": "\ud800", "labels": {"\udfff": "\ud800"}}})


def test_messages_show_long_values_cut_short() -> None:
    (error,) = label_value_errors("x" * 100_000, field="metadata.labels['k']")
    assert len(str(error)) < 200
    assert "(100000 characters)" in str(error)
    (error,) = label_key_errors("k" * 100_000 + "/x", field="f")
    assert len(str(error)) < 200
    (error,) = label_errors({"bad key " * 10_000: "v"})
    assert len(error.field) < 140
