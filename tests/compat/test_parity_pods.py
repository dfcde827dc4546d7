"""Parity of pod construction and merging with the released provider (10.25.0).

``construct_task_pod`` is run next to the provider's ``PodGenerator.construct_pod`` (with
``date=None``, the Airflow 3 path) and ``reconcile_pods`` next to
``PodGenerator.reconcile_pods``, on the same generated templates, overrides and ids; the
provider's pods are compared as ``ApiClient().sanitize_for_serialization`` writes them
(through ``PodGenerator.serialize_pod``, which is that call).
Manifests reach the provider through its own ``deserialize_model_dict``; the strategies
(``tests/pod_strategies.py``) only make manifests that survive its models unchanged, which
``_to_provider`` checks, so both sides always see the same pods. The deserializer itself
coerces or refuses some odd values before any merging; that is pinned, not compared
(``test_provider_deserializer_coerces_some_non_lists``).

Identical manifests are expected except for these documented deliberate differences:

* (a) a template or pod_override that changes the identity the executor reads back (the
  ``dag_id``, ``task_id``, ``try_number``, ``map_index`` and ``run_id`` annotations the
  pod has, the ``airflow-worker`` and ``kubernetes_executor`` labels), adds an identity
  annotation it lacks (``map_index`` on an unmapped task; ``run_id``, ``logical_date`` or
  ``execution_date`` without a run id), or adds ``callback_id`` /
  ``airflow-workload-type``: ours raises ``PodReconciliationError``, the provider builds
  the pod (which then decodes to another key, or to none);
* (b) a label value with nothing alphanumeric (``dag_id``, ``task_id``, ``run_id``,
  ``airflow-worker``): the provider's ``-<hash>``, which Kubernetes rejects, ours
  ``<hash>``;
* (c) a ``pod_id`` over 63 characters: both cut it and add a random suffix, so the names
  are compared by shape; where nothing of the id is left, the provider's ``-<random>``
  (invalid), ours ``<random>``;
* (d) inputs that make a pod the API server would refuse (a ``pod_id`` such as
  ``Bad_Name!``, a label key or container name breaking the naming rules, a value of the
  wrong type): ours raises ``InvalidPod``, the provider builds the pod, which is checked
  to fail ``validate_manifest`` or the Kubernetes 1.37 schema;
* (e) a ``map_index`` below -1: ours raises ``InvalidKey`` naming it, the provider builds
  a pod without a ``map_index`` annotation, which decodes as another task's (-1);
* (f) ``spec.restartPolicy``: ours is always ``Never`` (issue 29), the provider's is the
  template's or override's (``Always``, ``OnFailure``), or absent (the API server then
  sets ``Always``); the provider's is set to ``Never`` before the pods are compared;
* (g) the workload's (first) container's ``terminationMessagePolicy``: where the template
  and override leave it unset, ours is ``FallbackToLogsOnError`` (issue 32: a failed
  container's log tail becomes its termination message), the provider's absent (the API
  server then sets ``File``); the provider's is set so before the pods are compared. A
  policy the template or override sets is the same on both sides.

The module runs only where the provider is importable (``.venv-airflow``).
"""

from __future__ import annotations

import copy
import re
import warnings
from importlib import metadata
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

pytest.importorskip(
    "airflow.providers.cncf.kubernetes.pod_generator",
    reason="provider parity runs in the Airflow environment (.venv-airflow)",
)

from airflow.providers.cncf.kubernetes.exceptions import (
    PodReconciliationError as ProviderPodReconciliationError,
)
from airflow.providers.cncf.kubernetes.pod_generator import PodGenerator

from k8s_workloads.keys import InvalidKey
from k8s_workloads.pods import InvalidPod, construct_task_pod
from k8s_workloads.pods.manifest import PodReconciliationError
from k8s_workloads.pods.reconcile import reconcile_pods
from k8s_workloads.pods.validation import is_label_value, validate_manifest
from k8s_workloads.testing.strategies import (
    container_args,
    hostile_ids,
    hostile_run_ids,
    kube_images,
    label_values,
    namespaces,
    pod_overrides,
    pod_templates,
    scheduler_job_ids,
    templates_and_overrides,
)
from tests.support.pod_builds import schema_valid

if TYPE_CHECKING:
    from kubernetes.client import V1Pod

    from k8s_workloads.pods.manifest import Manifest

pytestmark = pytest.mark.parity

AIRFLOW_VERSION = metadata.version("apache-airflow-core")
"""What the provider's label builder reads from the installed Airflow; ours is told."""

# --------------------------------------------------------------------------------------
# Helpers


def _theirs(pod: V1Pod) -> Manifest:
    """The provider's pod as its executor sends it: ``serialize_pod`` is exactly
    ``ApiClient().sanitize_for_serialization(pod)`` (camelCase, no nulls)."""
    return dict(PodGenerator.serialize_pod(pod))


def _to_provider(manifest: Manifest | None) -> V1Pod:
    """The provider's model of a manifest, checked to hold exactly the manifest."""
    pod = PodGenerator.deserialize_model_dict(manifest)
    assert _theirs(pod) == (manifest or {}), "the provider's model changed a generated manifest"
    return pod


def _metadata(manifest: Manifest) -> dict[str, Any]:
    found = manifest.get("metadata")
    assert isinstance(found, dict)
    return found


_SANITISED_LABELS = ("dag_id", "task_id", "run_id", "airflow-worker")


def _accept_documented_label_values(mine: Manifest, theirs: Manifest) -> None:
    """(b): where the provider's label value is ``-<hash>``, ours must be ``<hash>``."""
    my_labels = _metadata(mine)["labels"]
    their_labels = _metadata(theirs)["labels"]
    for key in _SANITISED_LABELS:
        if key in their_labels and their_labels[key] != my_labels.get(key):
            event(f"documented (b): {key} label -<hash>")
            assert not is_label_value(their_labels[key])
            assert is_label_value(my_labels[key])
            assert their_labels[key] == f"-{my_labels[key]}"
            their_labels[key] = my_labels[key]


def _accept_never_restarting(mine: Manifest, theirs: Manifest) -> None:
    """(f): ours never restarts; the provider's restartPolicy, whatever it is, becomes
    ``Never`` (the one field this touches)."""
    assert mine["spec"]["restartPolicy"] == "Never"
    their_spec = theirs["spec"]
    if their_spec.get("restartPolicy") != "Never" and currently_in_test_context():
        event(f"documented (f): restartPolicy {their_spec.get('restartPolicy')} made Never")
    their_spec["restartPolicy"] = "Never"


def _accept_saying_why(mine: Manifest, theirs: Manifest) -> None:
    """(g): where the provider's first container has no termination message policy, ours
    is ``FallbackToLogsOnError``, and the provider's becomes it (the one field this
    touches); a policy the provider's has is compared as it is."""
    (my_first, *_), (their_first, *_) = mine["spec"]["containers"], theirs["spec"]["containers"]
    if their_first.get("terminationMessagePolicy"):
        return
    if currently_in_test_context():
        event("documented (g): terminationMessagePolicy unset made FallbackToLogsOnError")
    assert my_first["terminationMessagePolicy"] == "FallbackToLogsOnError"
    their_first["terminationMessagePolicy"] = "FallbackToLogsOnError"


_SUFFIX = re.compile(r"[a-z0-9]{8}")


def _accept_random_names(
    mine: Manifest, theirs: Manifest, *, pod_id: str, override: Manifest | None
) -> None:
    """(c): a pod_id over 63 gets a random suffix on both sides; check the shapes."""
    override_name = _metadata(override).get("name") if override and "metadata" in override else ""
    if len(pod_id) <= 63 or override_name:
        return
    my_name = _metadata(mine).pop("name")
    their_name = _metadata(theirs).pop("name")
    kept = pod_id[:54].strip("-.")
    assert _SUFFIX.fullmatch(my_name[-8:])
    assert _SUFFIX.fullmatch(their_name[-8:])
    if kept:
        event("long pod_id: same cut, random suffix")
        assert my_name[:-8] == their_name[:-8] == f"{kept}-"
    else:
        event("documented (c): long pod_id with nothing kept")
        assert len(my_name) == 8
        assert their_name[:-8] == "-"


def _documented_refusal(mine: Manifest | ValueError, theirs: Manifest) -> bool:
    """(d) and (e): whether ours refused a pod the provider built, checking that the
    provider's pod is one the API server refuses, or one that decodes to another key."""
    if isinstance(mine, InvalidPod):
        event("documented (d): ours refuses a pod the API server would refuse")
        assert validate_manifest(theirs) or not schema_valid(theirs), mine
        return True
    if isinstance(mine, InvalidKey):
        event("documented (e): map_index below -1")
        assert mine.field == "map_index"
        assert "map_index" not in _metadata(theirs)["annotations"]
        return True
    return False


def _build_both(
    *,
    dag_id: str,
    task_id: str,
    run_id: str | None,
    try_number: int,
    map_index: int,
    kube_image: str | None,
    args: list[str],
    namespace: str,
    scheduler_job_id: str | int,
    pod_id: str,
    template: Manifest | None,
    override: Manifest | None,
) -> tuple[Manifest | PodReconciliationError | InvalidKey, Manifest]:
    """(ours or our error, the provider's) for the same inputs; both warn alike on pod_id."""
    base_pod = _to_provider(template)
    override_pod = None if override is None else _to_provider(override)
    mine: Manifest | PodReconciliationError | InvalidKey
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            mine = construct_task_pod(
                namespace=namespace,
                scheduler_job_id=scheduler_job_id,
                pod_id=pod_id,
                dag_id=dag_id,
                task_id=task_id,
                kube_image=kube_image,
                try_number=try_number,
                args=args,
                airflow_version=AIRFLOW_VERSION,
                run_id=run_id,
                map_index=map_index,
                pod_override=override,
                base_worker_pod=template,
            )
        except (PodReconciliationError, InvalidKey) as error:
            mine = error
        theirs = _theirs(
            PodGenerator.construct_pod(
                dag_id=dag_id,
                task_id=task_id,
                pod_id=pod_id,
                try_number=try_number,
                kube_image=kube_image,
                date=None,
                args=args,
                pod_override_object=override_pod,
                base_worker_pod=base_pod,
                namespace=namespace,
                scheduler_job_id=scheduler_job_id,
                run_id=run_id,
                map_index=map_index,
            )
        )
    cut = [w for w in caught if "longer than 63 characters" in str(w.message)]
    expected = 2 if len(pod_id) > 63 else 0
    if isinstance(mine, InvalidKey):  # ours refuses the key before it looks at the pod_id
        expected //= 2
    assert len(cut) == expected
    assert all(issubclass(w.category, UserWarning) for w in cut)
    return mine, theirs


# --------------------------------------------------------------------------------------
# Strategies

_valid_pod_ids = st.one_of(
    st.from_regex(r"[a-z0-9]([-a-z0-9]{0,52}[a-z0-9])?-[a-z0-9]{8}", fullmatch=True),
    st.from_regex(r"[a-z0-9]([-a-z0-9]{62,118}[a-z0-9])?", fullmatch=True),
)
_hostile_pod_ids = st.one_of(
    st.text(max_size=63),
    st.text(alphabet="abz09-.", min_size=64, max_size=120),
    st.text(alphabet="-.", min_size=64, max_size=70),
    st.text(min_size=64, max_size=300),
)
pod_ids = st.integers(0, 3).flatmap(lambda n: _hostile_pod_ids if n == 0 else _valid_pod_ids)
"""pod ids up to 63 (passed through by both) and longer (cut, given a random suffix); one
in four of any text, which mostly makes a pod name the API server refuses ((d))."""

try_numbers = st.integers(0, 10**6)
map_indexes = st.integers(-3, 10**4)
optional_run_ids = st.one_of(st.none(), hostile_run_ids)

# --------------------------------------------------------------------------------------
# 1. construct_task_pod


@given(
    dag_id=hostile_ids,
    task_id=hostile_ids,
    run_id=optional_run_ids,
    try_number=try_numbers,
    map_index=map_indexes,
    kube_image=kube_images,
    args=container_args,
    namespace=namespaces,
    scheduler_job_id=scheduler_job_ids,
    pod_id=pod_ids,
    pair=templates_and_overrides(valid=False),
)
def test_construct_task_pod_matches_provider(
    *,
    dag_id: str,
    task_id: str,
    run_id: str | None,
    try_number: int,
    map_index: int,
    kube_image: str | None,
    args: list[str],
    namespace: str,
    scheduler_job_id: str | int,
    pod_id: str,
    pair: tuple[Manifest | None, Manifest | None],
) -> None:
    template, override = pair
    event(f"template: {template is not None}, override: {override is not None}")
    mine, theirs = _build_both(
        dag_id=dag_id,
        task_id=task_id,
        run_id=run_id,
        try_number=try_number,
        map_index=map_index,
        kube_image=kube_image,
        args=args,
        namespace=namespace,
        scheduler_job_id=scheduler_job_id,
        pod_id=pod_id,
        template=template,
        override=override,
    )
    if _documented_refusal(mine, theirs):
        return
    assert isinstance(mine, dict), f"ours raised {mine!r}; the provider built {theirs!r}"
    _accept_documented_label_values(mine, theirs)
    _accept_random_names(mine, theirs, pod_id=pod_id, override=override)
    _accept_never_restarting(mine, theirs)
    _accept_saying_why(mine, theirs)
    assert mine == theirs


# --------------------------------------------------------------------------------------
# 2. (a) identity the template or override changes

_IDENTITY_ANNOTATIONS = ("dag_id", "task_id", "try_number", "map_index", "run_id")
_DATE_ANNOTATIONS = ("logical_date", "execution_date")
_IDENTITY_LABELS = ("airflow-worker", "kubernetes_executor")
_CALLBACK_MARKERS = (("annotations", "callback_id"), ("labels", "airflow-workload-type"))


@st.composite
def identity_writes(draw: st.DrawFn) -> tuple[str, str, str, str | None]:
    """(layer, field, key, value): a write of an identity key; None: keep the pod's value."""
    layer = draw(st.sampled_from(["template", "override"]))
    field, key = draw(
        st.one_of(
            st.sampled_from(
                [("annotations", key) for key in _IDENTITY_ANNOTATIONS + _DATE_ANNOTATIONS]
            ),
            st.sampled_from([("labels", key) for key in _IDENTITY_LABELS]),
            st.sampled_from(_CALLBACK_MARKERS),
        )
    )
    value = draw(st.one_of(st.none(), label_values, st.text(max_size=10)))
    if field == "labels" and value is not None and not is_label_value(value):
        value = "changed"
    return layer, field, key, value


def _write(pod: Manifest | None, field: str, key: str, value: str) -> Manifest:
    pod = copy.deepcopy(pod) if pod is not None else {}
    if not isinstance(pod.get("metadata"), dict):
        pod["metadata"] = {}
    target = pod["metadata"].get(field)
    if not isinstance(target, dict):
        target = pod["metadata"][field] = {}
    target[key] = value
    return pod


def _identity_changes(reference: Manifest, built: Manifest) -> list[str]:
    """What ours refuses, read off the provider's pods: identity the executor's own pod
    (``reference``) has, changed; identity annotations it lacks, added (dates only
    without a run id: with one, both decoders ignore them); callback markers added."""
    ref, found = _metadata(reference), _metadata(built)
    changes = [
        f"{field}[{key!r}] changed"
        for field, keys in (("annotations", _IDENTITY_ANNOTATIONS), ("labels", _IDENTITY_LABELS))
        for key in keys
        if key in ref[field] and found[field].get(key) != ref[field][key]
    ]
    addable: tuple[str, ...] = _IDENTITY_ANNOTATIONS
    if "run_id" not in ref["annotations"]:
        addable += _DATE_ANNOTATIONS
    changes += [
        f"annotations[{key!r}] added"
        for key in addable
        if key not in ref["annotations"] and key in found["annotations"]
    ]
    changes += [
        f"{field}[{key!r}] added" for field, key in _CALLBACK_MARKERS if key in found[field]
    ]
    return changes


@given(
    dag_id=hostile_ids,
    task_id=hostile_ids,
    run_id=optional_run_ids,
    try_number=try_numbers,
    map_index=map_indexes,
    # Job ids whose label both write alike: for a "-<hash>" one, a write of our label value
    # would be a change on the provider's side only.
    scheduler_job_id=st.one_of(st.integers(0, 10**6), st.sampled_from(["7", "scheduler-1"])),
    pair=templates_and_overrides(valid=False),
    writes=st.lists(identity_writes(), min_size=1, max_size=3),
)
def test_identity_changes_raise_where_the_provider_builds_the_pod(
    *,
    dag_id: str,
    task_id: str,
    run_id: str | None,
    try_number: int,
    map_index: int,
    scheduler_job_id: str | int,
    pair: tuple[Manifest | None, Manifest | None],
    writes: list[tuple[str, str, str, str | None]],
) -> None:
    """(a): ours raises exactly when the provider's pod has lost its identity."""
    ids: dict[str, Any] = {
        "dag_id": dag_id,
        "task_id": task_id,
        "run_id": run_id,
        "try_number": try_number,
        "map_index": map_index,
        "kube_image": "img",
        "args": ["run"],
        "namespace": "airflow",
        "scheduler_job_id": scheduler_job_id,
        "pod_id": "pod",
    }
    _, reference = _build_both(**ids, template=None, override=None)
    layers = {"template": pair[0], "override": pair[1]}
    for layer, field, key, value in writes:
        # None rewrites the value the executor's pod has (or a fresh one if it has none).
        current = _metadata(reference)[field].get(key, "written")
        layers[layer] = _write(layers[layer], field, key, current if value is None else value)
    mine, theirs = _build_both(**ids, template=layers["template"], override=layers["override"])
    changes = _identity_changes(reference, theirs)
    if isinstance(mine, InvalidKey) or (isinstance(mine, InvalidPod) and not changes):
        assert _documented_refusal(mine, theirs)
        return
    if changes:
        event("documented (a): identity changed, ours raises")
        assert isinstance(mine, PodReconciliationError), f"identity changed: {changes}"
        return
    event("identity kept: both build the pod")
    assert isinstance(mine, dict), f"ours raised {mine!r}; the provider's pod kept its identity"
    _accept_documented_label_values(mine, theirs)
    _accept_never_restarting(mine, theirs)
    _accept_saying_why(mine, theirs)
    assert mine == theirs


_UUID = "0b7e8c9d-1f2a-4b3c-8d4e-5f6a7b8c9d0e"
_DATE = "2026-01-01T00:00:00+00:00"


@pytest.mark.parametrize(
    ("layer", "field", "key", "value", "run_id", "map_index"),
    [
        ("override", "annotations", "dag_id", "other_dag", "manual__1", 3),
        ("override", "annotations", "task_id", "other_task", "manual__1", 3),
        ("override", "annotations", "try_number", "9", "manual__1", 3),
        ("override", "annotations", "map_index", "0", "manual__1", 3),
        ("override", "annotations", "run_id", "manual__other", "manual__1", 3),
        ("override", "labels", "airflow-worker", "999", "manual__1", 3),
        ("override", "labels", "kubernetes_executor", "False", "manual__1", 3),
        ("override", "annotations", "callback_id", _UUID, "manual__1", 3),
        ("override", "labels", "airflow-workload-type", "callback", "manual__1", 3),
        ("template", "annotations", "callback_id", _UUID, "manual__1", 3),
        ("template", "labels", "airflow-workload-type", "callback", "manual__1", 3),
        # Identity the executor's pod lacks, added: the pod would decode to another key.
        ("override", "annotations", "map_index", "3", "manual__1", -1),
        ("template", "annotations", "map_index", "3", "manual__1", -1),
        ("override", "annotations", "run_id", "manual__other", None, -1),
        ("template", "annotations", "run_id", "manual__other", "", -1),
        ("override", "annotations", "logical_date", _DATE, None, -1),
        ("template", "annotations", "execution_date", _DATE, None, -1),
    ],
)
def test_identity_change_examples(
    *, layer: str, field: str, key: str, value: str, run_id: str | None, map_index: int
) -> None:
    """(a), one key at a time: the provider's pod carries the write; ours raises."""
    layers: dict[str, Manifest | None] = {"template": None, "override": None}
    layers[layer] = _write(None, field, key, value)
    mine, theirs = _build_both(
        dag_id="dag",
        task_id="task",
        run_id=run_id,
        try_number=1,
        map_index=map_index,
        kube_image="img",
        args=["run"],
        namespace="airflow",
        scheduler_job_id=1,
        pod_id="pod",
        template=layers["template"],
        override=layers["override"],
    )
    assert _metadata(theirs)[field][key] == value
    assert isinstance(mine, PodReconciliationError)
    assert key in str(mine)


@pytest.mark.parametrize("key", _DATE_ANNOTATIONS)
def test_a_date_annotation_next_to_a_run_id_is_no_identity_change(key: str) -> None:
    """With a run id, both decoders ignore dates: the pods are the same."""
    mine, theirs = _build_both(
        dag_id="dag",
        task_id="task",
        run_id="manual__1",
        try_number=1,
        map_index=-1,
        kube_image="img",
        args=["run"],
        namespace="airflow",
        scheduler_job_id=1,
        pod_id="pod",
        template=None,
        override=_write(None, "annotations", key, _DATE),
    )
    assert isinstance(mine, dict)
    _accept_never_restarting(mine, theirs)
    _accept_saying_why(mine, theirs)
    assert mine == theirs


# --------------------------------------------------------------------------------------
# 3. reconcile_pods


@given(pair=templates_and_overrides(valid=False), swap=st.booleans())
def test_reconcile_pods_matches_provider(
    pair: tuple[Manifest | None, Manifest | None], *, swap: bool
) -> None:
    base, client = pair
    if swap:
        base, client = client, base
    base = base or {}
    event(f"client: {'None' if client is None else 'pod'}")
    theirs = _theirs(
        PodGenerator.reconcile_pods(
            _to_provider(base), None if client is None else _to_provider(client)
        )
    )
    assert reconcile_pods(base, client) == theirs


_NOTHING: tuple[Manifest | None, ...] = (None, {})
_EMPTY_METADATA: tuple[Manifest, ...] = (
    {"metadata": {}},
    {"metadata": {"labels": {}, "annotations": {}}},
)


@given(base=st.one_of(pod_templates(), pod_overrides()))
def test_reconcile_pods_with_nothing_is_the_base(base: Manifest) -> None:
    for client in _NOTHING:
        theirs = _theirs(
            PodGenerator.reconcile_pods(
                _to_provider(base), None if client is None else _to_provider(client)
            )
        )
        assert reconcile_pods(base, client) == base == theirs
    # An empty metadata object is a model, so it is set: kept where the base has none.
    for empty in _EMPTY_METADATA:
        theirs = _theirs(PodGenerator.reconcile_pods(_to_provider(base), _to_provider(empty)))
        assert reconcile_pods(base, empty) == theirs


_CONTAINER_LISTS = {
    "env": "env",
    "envFrom": "env_from",
    "ports": "ports",
    "volumeMounts": "volume_mounts",
    "volumeDevices": "volume_devices",
}
_SPEC_LISTS = {"initContainers": "init_containers", "volumes": "volumes"}


@st.composite
def list_field_breaks(draw: st.DrawFn) -> tuple[str, int | None, str, str]:
    """(side, container index or None for the spec, camelCase field, non-list value)."""
    side = draw(st.sampled_from(["base", "client"]))
    value = draw(st.sampled_from(["abc", "FOO=bar", "x"]))
    if draw(st.integers(0, 3)) == 0:
        return side, None, draw(st.sampled_from(sorted(_SPEC_LISTS))), value
    index = draw(st.integers(0, 2))
    return side, index, draw(st.sampled_from(sorted(_CONTAINER_LISTS))), value


def _break(manifest: Manifest, pod: V1Pod, where: tuple[str, int | None, str, str]) -> None:
    """Write a non-list into a list field of both the manifest and the provider's model."""
    _, index, field, value = where
    spec, spec_model = manifest["spec"], pod.spec
    if index is None:
        spec[field] = value
        setattr(spec_model, _SPEC_LISTS[field], value)
        return
    index %= len(spec["containers"])
    spec["containers"][index][field] = value
    assert spec_model is not None
    assert spec_model.containers is not None
    setattr(spec_model.containers[index], _CONTAINER_LISTS[field], value)


_ONE_CONTAINER: Manifest = {"spec": {"containers": [{"name": "base", "image": "img"}]}}


@given(pair=templates_and_overrides(valid=False), where=list_field_breaks())
def test_reconcile_pods_list_field_errors_match_provider(
    pair: tuple[Manifest | None, Manifest | None], where: tuple[str, int | None, str, str]
) -> None:
    """A list field holding a string: both fail (provider ValueError), or neither looks."""
    base = copy.deepcopy(pair[0] or _ONE_CONTAINER)
    client = copy.deepcopy(pair[1] if pair[1] and "spec" in pair[1] else _ONE_CONTAINER)
    base_pod, client_pod = _to_provider(base), _to_provider(client)
    if where[0] == "base":
        _break(base, base_pod, where)
    else:
        _break(client, client_pod, where)
    try:
        mine = reconcile_pods(base, client)
    except PodReconciliationError as error:
        event("both fail")
        assert "must be a list" in str(error)  # noqa: PT017 - whether it raises is the question
        with pytest.raises(ValueError, match="must be a list"):
            PodGenerator.reconcile_pods(base_pod, client_pod)
        return
    event("field not merged: both pass it through")
    assert mine == _theirs(PodGenerator.reconcile_pods(base_pod, client_pod))


def test_template_with_a_string_env_fails_on_both_sides() -> None:
    """The brief's case: ``env`` a string in the template's first container."""
    template: Manifest = {"spec": {"containers": [{"name": "base", "env": "FOO=bar"}]}}
    kwargs: dict[str, Any] = {
        "namespace": "airflow",
        "scheduler_job_id": 1,
        "pod_id": "pod",
        "dag_id": "dag",
        "task_id": "task",
        "kube_image": "img",
        "try_number": 1,
        "args": ["run"],
    }
    with pytest.raises(PodReconciliationError, match="must be a list"):
        construct_task_pod(**kwargs, airflow_version=AIRFLOW_VERSION, base_worker_pod=template)
    with pytest.raises(PodReconciliationError, match="must be a list"):
        reconcile_pods(template, {"spec": {"containers": [{"name": "base", "env": []}]}})
    # The provider's deserializer already refuses it (each character is an env var
    # without a name) ...
    with pytest.raises(ValueError, match="`name`, must not be `None`"):
        PodGenerator.deserialize_model_dict(template)
    # ... and a model holding it makes the merge raise, wrapped by construct_pod.
    base_pod = _to_provider({"spec": {"containers": [{"name": "base"}]}})
    _break({"spec": {"containers": [{"name": "base"}]}}, base_pod, ("base", 0, "env", "FOO=bar"))
    with pytest.raises(ProviderPodReconciliationError) as raised:
        PodGenerator.construct_pod(
            dag_id="dag",
            task_id="task",
            pod_id="pod",
            try_number=1,
            kube_image="img",
            date=None,
            args=["run"],
            pod_override_object=None,
            base_worker_pod=base_pod,
            namespace="airflow",
            scheduler_job_id=1,
        )
    assert isinstance(raised.value.__cause__, ValueError)
    assert "must be a list" in str(raised.value.__cause__)


@pytest.mark.parametrize(
    ("field", "value", "model_value"),
    [
        ("env", "", []),
        ("command", "ab", ["a", "b"]),
        ("args", "run", ["r", "u", "n"]),
        ("envFrom", "ab", [{}, {}]),
    ],
)
def test_provider_deserializer_coerces_some_non_lists(
    field: str, value: str, model_value: list[object]
) -> None:
    """Not parity: where comparisons start. The provider's loader iterates a string given
    for a list, so a template file with ``env: ""`` or ``command: "ab"`` reaches its merge
    as ``[]`` / ``["a", "b"]``; ours takes the manifest as written (and refuses a string in
    a list field it merges)."""
    manifest: Manifest = {"spec": {"containers": [{"name": "base", field: value}]}}
    loaded = _theirs(PodGenerator.deserialize_model_dict(manifest))
    assert loaded["spec"]["containers"][0][field] == model_value
    assert reconcile_pods(manifest, None) == manifest


# --------------------------------------------------------------------------------------
# 5. Values of the wrong type: the provider's loader coerces them; ours where unambiguous

_COERCED_TEMPLATES: list[Manifest] = [
    {"spec": {"terminationGracePeriodSeconds": "600", "containers": [{"name": "base"}]}},
    {"spec": {"activeDeadlineSeconds": 3600.0, "containers": [{"name": "base"}]}},
    {"spec": {"containers": [{"name": "base", "env": [{"name": "PORT", "value": 8080}]}]}},
    {"spec": {"containers": [{"name": "side", "ports": [{"containerPort": "8080"}]}]}},
    {"metadata": {"labels": {"version": 2}, "annotations": {"build": 1234}}},
    {"spec": {"containers": [{"name": "base", "command": ["sleep", 5]}]}},
]


@pytest.mark.parametrize("template", _COERCED_TEMPLATES)
def test_unambiguous_coercions_give_the_providers_pod(template: Manifest) -> None:
    ids: dict[str, Any] = {
        "dag_id": "etl",
        "task_id": "load",
        "pod_id": "etl-load-abcd1234",
        "try_number": 1,
        "kube_image": "img",
        "args": ["run"],
        "namespace": "airflow",
        "scheduler_job_id": 1,
        "run_id": "manual__1",
        "map_index": -1,
    }
    mine = construct_task_pod(
        **ids, airflow_version=AIRFLOW_VERSION, base_worker_pod=template, pod_override=None
    )
    theirs = _theirs(
        PodGenerator.construct_pod(
            **ids,
            date=None,
            pod_override_object=None,
            base_worker_pod=PodGenerator.deserialize_model_dict(template),
        )
    )
    _accept_never_restarting(mine, theirs)
    _accept_saying_why(mine, theirs)
    assert mine == theirs


@pytest.mark.parametrize(
    ("value", "model_value"), [("False,", True), ("false", True), ("no", True), (0, False)]
)
def test_a_boolean_written_otherwise_is_refused_where_the_provider_guesses(
    value: object, model_value: bool
) -> None:
    """Not parity, by design: the provider's loader reads ``bool(value)``, so the typo
    ``hostNetwork: "False,"`` (in the provider's own test fixture) turns host networking
    on; ours refuses the template, naming the field."""
    template: Manifest = {"spec": {"hostNetwork": value, "containers": [{"name": "base"}]}}
    spec = PodGenerator.deserialize_model_dict(template).spec
    assert spec is not None
    assert spec.host_network is model_value
    with pytest.raises(InvalidPod, match=r"spec\.hostNetwork: must be a boolean"):
        construct_task_pod(
            dag_id="etl",
            task_id="load",
            pod_id="p",
            try_number=1,
            kube_image="img",
            args=[],
            namespace="airflow",
            scheduler_job_id=1,
            airflow_version=AIRFLOW_VERSION,
            base_worker_pod=template,
        )
