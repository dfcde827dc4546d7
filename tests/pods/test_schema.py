"""The Kubernetes 1.37 Pod schema check, with kubernetes-validate (strict) as its oracle.

The table is regenerated from the installed kubernetes-validate and compared with the one
shipped; on generated manifests, valid and mutated (a wrong type, an unknown field, a
missing required field, null), ``pod_schema_errors`` agrees with kubernetes-validate,
except where the module is stricter on purpose (integers out of their format's range or
written as floats, non-finite numbers); the fast checks agree with the exact walk.
"""

from __future__ import annotations

import datetime
import importlib.util
import math
import types
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import event, given
from hypothesis import strategies as st
from kubernetes.client import V1Pod

from k8s_workloads.display import SHOWN_LENGTH, shown
from k8s_workloads.pods import schema, schema_definitions
from k8s_workloads.pods.manifest import Manifest, clean_manifest
from k8s_workloads.pods.schema import SchemaViolation, checked_layer, is_pod_schema_valid
from k8s_workloads.pods.schema import pod_schema_errors as errors
from k8s_workloads.testing.strategies import pod_templates, wrong_type_values
from tests.support.pod_builds import schema_valid

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "src" / "k8s_workloads" / "examples"


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location(
        "gen_pod_schema", ROOT / "scripts/gen_pod_schema.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _oracle(manifest: object) -> bool:
    """kubernetes-validate's strict 1.37 verdict (a pod may lack apiVersion and kind)."""
    assert isinstance(manifest, dict)
    # It finds the schema by apiVersion and kind: anything but v1 and Pod has none.
    if manifest.get("apiVersion", "v1") != "v1" or manifest.get("kind", "Pod") != "Pod":
        return False
    return schema_valid(manifest)


def test_the_shipped_table_is_what_the_generator_makes_of_kubernetes_validate() -> None:
    generator = _generator()
    table = generator.read_schema()
    assert generator.render(table) == Path(schema_definitions.__file__).read_text()
    assert schema_definitions.KUBERNETES_VERSION == schema.POD_SCHEMA_VERSION == "1.37"
    assert "Pod" in table
    assert table["Container"][1] == ["name"]


@pytest.mark.parametrize("name", ["pod_template.yaml", "pod_override.yaml"])
def test_the_examples_pass(name: str) -> None:
    manifest = yaml.safe_load((EXAMPLES / name).read_text())
    assert errors(manifest) == []
    assert is_pod_schema_valid(manifest)


POD: Manifest = {"spec": {"containers": [{"name": "base"}]}}


def _pod(**spec: Any) -> Manifest:
    return {"spec": {"containers": [{"name": "base"}], **spec}}


@pytest.mark.parametrize(
    ("manifest", "field", "message"),
    [
        (_pod(hostNetwork="False,"), "spec.hostNetwork", "must be a boolean, got str 'False,'"),
        (_pod(hostNetwrk=True), "spec.hostNetwrk", "unknown field"),
        ({"spec": {}}, "spec.containers", "is required"),
        ({"spec": {"containers": [{}]}}, "spec.containers[0].name", "is required"),
        ({"kind": "Job"}, "kind", "must be 'Pod', got str 'Job'"),
        ({"apiVersion": "v2"}, "apiVersion", "must be 'v1'"),
        (_pod(priority=2**31), "spec.priority", "out of the int32 range"),
        (_pod(priority=5.0), "spec.priority", "must be an integer, got float 5.0"),
        (_pod(priority="5"), "spec.priority", "must be an integer, got str '5'"),
        (_pod(priority=True), "spec.priority", "must be an integer, got bool"),
        (_pod(activeDeadlineSeconds=10**70), "spec.activeDeadlineSeconds", "out of the int64"),
        (_pod(overhead={"cpu": math.nan}), "spec.overhead['cpu']", "must be a quantity"),
        (_pod(overhead={"cpu": None}), "spec.overhead['cpu']", "got null"),
        (_pod(nodeSelector={"a": 1}), "spec.nodeSelector['a']", "must be a string, got int 1"),
        (_pod(nodeSelector={1: "a"}), "spec.nodeSelector", "keys must be strings, got int 1"),
        (_pod(tolerations={"key": "a"}), "spec.tolerations", "must be a list, got dict"),
        (_pod(volumes={"data"}), "spec.volumes", "must be a list, got set"),
        (_pod(volumes="data"), "spec.volumes", "must be a list, got str 'data'"),
        (
            {"metadata": {"creationTimestamp": datetime.datetime(2026, 1, 1)}},  # noqa: DTZ001
            "metadata.creationTimestamp",
            "must be a string, got datetime",
        ),
        ({"spec": V1Pod()}, "spec", "to_manifest for kubernetes objects"),
        ([], "pod", "must be an object, got list"),
        (
            {"metadata": {"managedFields": [{"fieldsV1": {"f": {1: 2}}}]}},
            "metadata.managedFields[0].fieldsV1['f']",
            "keys must be strings",
        ),
        (
            {"metadata": {"managedFields": [{"fieldsV1": {"f": math.inf}}]}},
            "metadata.managedFields[0].fieldsV1['f']",
            "must be a JSON value, got float inf",
        ),
    ],
)  # fmt: skip
def test_violations_name_the_field(manifest: object, field: str, message: str) -> None:
    found = errors(manifest)
    assert found
    assert all(isinstance(violation, SchemaViolation) for violation in found)
    assert isinstance(found[0], ValueError)
    assert found[0].field == field
    assert message in str(found[0])
    assert not is_pod_schema_valid(manifest)


def test_free_form_fields_nested_deep_are_refused_without_recursing_far() -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(5000):
        node["f"] = {}
        node = node["f"]
    (violation,) = errors({"metadata": {"managedFields": [{"fieldsV1": deep}]}})
    assert "nested deeper than 64 levels" in str(violation)
    assert len(str(violation)) < 600


def test_lone_surrogates_huge_values_and_many_violations_do_not_break_it() -> None:
    assert errors({"metadata": {"name": "\ud800", "labels": {"\udfff": "\ud800"}}}) == []
    assert is_pod_schema_valid({"metadata": {"name": "\ud800"}})
    (violation,) = errors(_pod(hostNetwork="x" * 1_000_000))
    assert len(str(violation)) < 200
    many = errors(_pod(nodeSelector={f"k{n}": n for n in range(100)}))
    assert len(many) == 21
    assert str(many[-1]) == "pod: and 80 more violations"


# --- layers: coercion as the provider's loader does it, and completeness -------------------


@pytest.mark.parametrize(
    ("field", "given", "coerced"),
    [
        ("terminationGracePeriodSeconds", "600", 600),
        ("terminationGracePeriodSeconds", "-3", -3),
        ("terminationGracePeriodSeconds", 600.0, 600),
        ("serviceAccountName", 42, "42"),
        ("nodeSelector", {"pool": 7}, {"pool": "7"}),
    ],
)
def test_layers_coerce_what_is_unambiguous(field: str, given: object, coerced: object) -> None:
    manifest, complete, found = checked_layer(_pod(**{field: given}))
    assert found == []
    assert complete
    assert manifest["spec"][field] == coerced
    assert type(manifest["spec"][field]) is type(coerced)
    assert errors(manifest) == []


@pytest.mark.parametrize(
    ("field", "given"),
    [
        ("hostNetwork", "False,"),
        ("hostNetwork", "true"),
        ("hostNetwork", 1),
        ("terminationGracePeriodSeconds", 2.5),
        ("terminationGracePeriodSeconds", True),
        ("terminationGracePeriodSeconds", " 600"),
        ("terminationGracePeriodSeconds", "6_00"),
        ("terminationGracePeriodSeconds", "٦٠٠"),
        ("terminationGracePeriodSeconds", "9" * 25),
        ("priority", str(2**31)),
        ("serviceAccountName", True),
        ("serviceAccountName", 1.5),
    ],
)
def test_layers_refuse_what_is_ambiguous(field: str, given: object) -> None:
    _, _, found = checked_layer(_pod(**{field: given}))
    assert [violation.field for violation in found] == [f"spec.{field}"]


def test_layers_read_null_as_absent_and_may_lack_required_fields() -> None:
    layer = {"metadata": {"labels": {"a": None}}, "spec": {"nodeSelector": None}}
    manifest, complete, found = checked_layer(layer)
    assert (manifest, complete, found) == ({"metadata": {"labels": {}}, "spec": {}}, False, [])
    manifest, complete, found = checked_layer({"spec": {"containers": [{"image": "x"}]}})
    assert (complete, found) == (False, [])
    assert checked_layer(POD)[1] is True


# --- properties: the oracle, and the fast paths against the exact walk ---------------------


def _paths(value: object, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside a JSON value."""
    found: list[tuple[Any, ...]] = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*path, index))
    return found


def _replace(value: Any, path: tuple[Any, ...], new: object) -> Any:
    if not path:
        return new
    head, *rest = path
    copied = dict(value) if isinstance(value, dict) else list(value)
    copied[head] = _replace(value[head], tuple(rest), new)
    return copied


def _node_at(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


@st.composite
def mutated_pods(draw: st.DrawFn) -> Manifest:
    """A valid template (one in four), or one with one or two changes: a value replaced,
    a key dropped, a key added."""
    pod = clean_manifest(draw(pod_templates()))
    for _ in range(draw(st.sampled_from([0, 1, 1, 2]))):
        paths = [path for path in _paths(pod) if path]
        if not paths:  # the first change dropped the template's only key
            break
        path = draw(st.sampled_from(paths))
        parent = _node_at(pod, path[:-1])
        change = draw(st.sampled_from(["replace", "drop", "add"]))
        if change == "replace" or not isinstance(parent, dict):
            pod = _replace(pod, path, draw(wrong_type_values))
        elif change == "drop":
            pod = _replace(pod, path[:-1], {k: v for k, v in parent.items() if k != path[-1]})
        else:
            key = draw(st.sampled_from(["name", "extra", "hostNetwork", "image", "value"]))
            pod = _replace(pod, path[:-1], {**parent, key: draw(wrong_type_values)})
    assert isinstance(pod, dict)
    return pod


def _stricter_than_the_schema(value: object) -> bool:
    """A value the module refuses on purpose where JSON schema would not look: an integer
    written as a float, one out of int32 range, a non-finite float."""
    if isinstance(value, dict):
        return any(_stricter_than_the_schema(item) for item in value.values())
    if isinstance(value, list):
        return any(_stricter_than_the_schema(item) for item in value)
    if isinstance(value, float):
        return not math.isfinite(value) or value.is_integer()
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**31


@given(mutated_pods())
def test_the_verdict_is_kubernetes_validates(manifest: Manifest) -> None:
    ours = errors(manifest) == []
    event(f"valid: {ours}")
    if _stricter_than_the_schema(manifest):
        assert not ours or _oracle(manifest)
    else:
        assert ours == _oracle(manifest), errors(manifest)
    assert is_pod_schema_valid(manifest) == ours


@given(mutated_pods())
def test_the_fast_layer_check_agrees_with_the_walk(manifest: Manifest) -> None:
    fast = checked_layer(manifest)
    walk = schema._Walk(layer=True)
    copied = walk.value(manifest, schema._node("?Pod"), "")
    assert bool(fast[2]) == bool(walk.violations)
    if not walk.violations:
        assert fast[0] == copied
        assert fast[1] == walk.complete
        event(f"complete: {walk.complete}")


def test_shown_never_grows_with_the_value() -> None:
    assert shown("x" * 10**6) == f"{'x' * SHOWN_LENGTH!r}... (1000000 characters)"
    assert shown(10**5000) == "an integer of about 5001 digits"
    assert shown(7) == "7"
    assert shown(True) == "True"
    assert shown(None) == "None"
    assert len(shown({"a": "x" * 10**6})) <= SHOWN_LENGTH + 3


def test_every_spec_in_the_table_parses_and_builds() -> None:
    for properties, required in schema_definitions.DEFINITIONS.values():
        assert set(required) <= set(properties)
        for spec in properties.values():
            schema._node(spec)
    assert schema._pod_type(relaxed=False) is not schema._pod_type(relaxed=True)
    with pytest.raises(ValueError, match="not a type spec"):
        schema._node("?strnig")


def test_unknown_fields_suggest_the_closest_name() -> None:
    (violation,) = errors({"spec": {"containers": [{"name": "b", "imagee": "x"}]}})
    assert violation.field == "spec.containers[0].imagee"
    assert "a Kubernetes 1.37 Container has none; did you mean 'image'?" in str(violation)
    (violation,) = errors({"spec": {"containers": [{"name": "b"}], "a b": 1}})
    assert violation.field == "spec['a b']"


def test_a_huge_integer_for_a_string_field_is_refused_not_raised_on() -> None:
    _, _, found = checked_layer({"spec": {"serviceAccountName": 10**5000}})
    assert [violation.field for violation in found] == ["spec.serviceAccountName"]
    assert "an integer of about 5001 digits" in str(found[0])


def test_a_pod_holds_lists_and_dicts_where_a_layer_may_hold_tuples_and_mappings() -> None:
    # JSON schema (and json.dumps of a MappingProxy) know only lists and dicts; a layer is
    # copied, as clean_manifest copies it.
    layer = {"spec": {"containers": ({"name": "base", "args": ("a",)},)}}
    assert [v.field for v in errors(layer)] == ["spec.containers"]
    assert not _oracle(layer)
    manifest, complete, found = checked_layer(types.MappingProxyType(layer))
    assert (manifest, complete, found) == (
        {"spec": {"containers": [{"name": "base", "args": ["a"]}]}},
        True,
        [],
    )
    assert errors({"spec": types.MappingProxyType({"containers": []})})[0].field == "spec"
