"""The prepared path (:mod:`k8s_workloads.pods.prepared_build`) against the general build.

A plan works a template's merge out once; the fast task path then builds a planned task
pod checking only what the pod's own values could break, and hands anything it cannot
vouch for to the general path. Every pod and every error must be exactly what the general
build (``fast_path(enabled=False)``) gives for the same values: key order, messages and
all; and every pod must pass the strict 1.37 schema and the naming rules, and share
nothing with other pods, the template or the arguments.
"""

from __future__ import annotations

import copy
import datetime
import functools
import json
import random
import string
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from k8s_workloads.compat import AirflowVersion
from k8s_workloads.keys import AIRFLOW_INT_MAX, InvalidKey
from k8s_workloads.pods import (
    FastPathUse,
    PodMutationHookError,
    PodTemplate,
    construct_callback_pod,
    construct_task_pod,
    fast_path,
)
from k8s_workloads.pods.general_build import _layer, _OwnValues
from k8s_workloads.pods.labels import EXECUTION_DATE_KEY, LOGICAL_DATE_KEY, create_unique_id
from k8s_workloads.pods.manifest import PodReconciliationError
from k8s_workloads.pods.prepared_build import _PLAN_PARAMETERS, _make_plan
from k8s_workloads.pods.validation import validate_manifest
from k8s_workloads.testing.strategies import (
    airflow_ids,
    container_args,
    hostile_ids,
    hostile_names,
    hostile_run_ids,
    hostile_templates_and_overrides,
    kube_images,
    namespaces,
    pod_templates,
    run_ids,
    scheduler_job_ids,
    templates_and_overrides,
)
from tests.support.pod_builds import (
    TaskPodInputs,
    assert_valid_pod,
    container_ids,
    containers_of,
    task_pod_inputs,
)

if TYPE_CHECKING:
    from k8s_workloads.pods.manifest import Manifest

AIRFLOW_VERSION = "3.3.2"


class _Text(str):
    """A str subclass: equal to and hashing as the plain string, but not of its type."""

    __slots__ = ()


class _Count(int):
    __slots__ = ()


def _outcome(build: Callable[[], Manifest]) -> tuple[str, object]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result: tuple[str, object] = ("pod", json.dumps(build()))
        except (PodReconciliationError, PodMutationHookError, ValueError, TypeError) as error:
            result = ("error", (type(error), str(error)))
    return (*result, [str(warning.message) for warning in caught])  # type: ignore[return-value]


def _no_hook(pod: Manifest) -> None:
    assert pod["metadata"]["name"]


def _relabelling_hook(pod: Manifest) -> Manifest:
    pod["metadata"]["labels"]["team"] = "hooked"
    return pod


def _identity_changing_hook(pod: Manifest) -> Manifest:
    pod["metadata"]["annotations"]["dag_id"] = "another"
    return pod


def _restarting_hook(pod: Manifest) -> None:
    pod["spec"]["restartPolicy"] = "Always"  # replaced by Never on either path (issue 29)


def _offsets() -> st.SearchStrategy[datetime.timezone]:
    return st.builds(
        datetime.timezone,
        st.timedeltas(
            min_value=-datetime.timedelta(hours=23, minutes=59),
            max_value=datetime.timedelta(hours=23, minutes=59),
        ),
    )


zones: st.SearchStrategy[datetime.timezone | None] = st.one_of(
    st.none(), st.just(datetime.timezone.utc), _offsets()
)
dates = st.one_of(st.none(), st.datetimes(timezones=zones))
date_keys = st.sampled_from([LOGICAL_DATE_KEY, EXECUTION_DATE_KEY, "run_id", "Not A Key!"])
hooks = st.sampled_from(
    [None, _no_hook, _relabelling_hook, _identity_changing_hook, _restarting_hook]
)
numbers = st.one_of(
    st.integers(0, 10**4),
    st.sampled_from([-1, AIRFLOW_INT_MAX, AIRFLOW_INT_MAX + 1, True, 1.0, _Count(2)]),
)
map_indexes = st.one_of(st.integers(-1, 10**4), st.sampled_from([-2, AIRFLOW_INT_MAX, False]))
ids = st.one_of(hostile_ids, hostile_ids.map(_Text), st.just(""))


ascii_ids = st.text(alphabet=string.ascii_letters + string.digits + "_.-", min_size=1, max_size=250)
generated_run_ids = st.builds(
    lambda kind, moment: f"{kind}__{moment.isoformat()}",
    st.sampled_from(["manual", "scheduled", "backfill"]),
    dates.filter(lambda moment: moment is not None),
)


versions = st.sampled_from(
    [
        AIRFLOW_VERSION,
        "3.1.0+astro.1",
        _Text(AIRFLOW_VERSION),
        AirflowVersion.parse(AIRFLOW_VERSION),
        AirflowVersion.parse("3.2.0+local.build.7"),
    ]
)


def _values(**drawn: Any) -> dict[str, Any]:
    values = {
        "namespace": "airflow",
        "scheduler_job_id": 7,
        "pod_id": "etl-load-abcd1234",
        "dag_id": "etl",
        "task_id": "load",
        "kube_image": "img:1",
        "try_number": 1,
        "args": ["python", "-m", "work"],
        "airflow_version": AIRFLOW_VERSION,
        "run_id": "manual__1",
        "rng": random.Random(0),
    }
    values.update(drawn)
    return values


def _compare(template: PodTemplate, override: Manifest | None, values: dict[str, Any]) -> str:
    """Build over ``template`` with and without the fast path: the same outcome."""
    rng_seed = 0

    def build() -> Manifest:
        seeded = {**values, "rng": random.Random(rng_seed)}
        return construct_task_pod(base_worker_pod=template, pod_override=override, **seeded)

    with fast_path(enabled=False) as off:
        expected = _outcome(build)
    assert off == FastPathUse()
    with fast_path() as use:
        assert _outcome(build) == expected
    if expected[0] == "pod":
        pod = json.loads(str(expected[1]))
        assert validate_manifest(pod) == []
        assert pod["spec"]["restartPolicy"] == "Never"
    return "fast" if use.fast_task_pods else "planned" if use.planned_pods else "general"


def _warmed(template: Manifest | None, override: Manifest | None) -> PodTemplate | None:
    """A prepared template with this pair planned (if it can be), or None if refused."""
    try:
        prepared = PodTemplate(template)
        for image in ("img:1", "img:1", None, None):  # both plans: with and without an image
            construct_task_pod(
                base_worker_pod=prepared, pod_override=override, **_values(kube_image=image)
            )
    except (PodReconciliationError, ValueError, TypeError):
        return None
    return prepared


@given(
    dag_id=ids,
    task_id=ids,
    run_id=st.one_of(st.none(), st.just(""), hostile_run_ids),
    try_number=numbers,
    map_index=map_indexes,
    date=dates,
    logical_date_key=date_keys,
    kube_image=kube_images,
    args=st.one_of(container_args, container_args.map(tuple)),
    namespace=st.one_of(namespaces, hostile_names),
    pod_id=st.one_of(st.just("etl-load-abcd1234"), hostile_names),
    scheduler_job_id=st.one_of(scheduler_job_ids, st.just(True)),
    mutation_hook=hooks,
    airflow_version=versions,
    pair=templates_and_overrides(valid=True),
)
def test_the_fast_path_builds_what_the_general_path_builds(
    pair: tuple[Manifest | None, Manifest | None], **drawn: Any
) -> None:
    template, override = pair
    prepared = _warmed(template, override)
    assert prepared is not None  # valid pairs
    event(_compare(prepared, override, _values(**drawn)))


@given(
    dag_id=st.one_of(ascii_ids, airflow_ids),
    task_id=ascii_ids,
    run_id=st.one_of(st.none(), generated_run_ids, run_ids),
    try_number=st.integers(0, AIRFLOW_INT_MAX),
    map_index=st.integers(-1, AIRFLOW_INT_MAX),
    date=dates,
    logical_date_key=st.sampled_from([LOGICAL_DATE_KEY, EXECUTION_DATE_KEY]),
    kube_image=kube_images,
    args=container_args.map(lambda words: ["python", *words]),
    namespace=namespaces,
    scheduler_job_id=st.one_of(st.integers(0, 10**9), st.from_regex(r"[a-z0-9-]{1,20}")),
    mutation_hook=hooks,
    airflow_version=versions,
    pair=templates_and_overrides(valid=True),
)
def test_plausible_values_take_the_fast_path_to_the_same_pod(
    pair: tuple[Manifest | None, Manifest | None], **drawn: Any
) -> None:
    template, override = pair
    prepared = _warmed(template, override)
    assert prepared is not None
    values = _values(**drawn)
    values["pod_id"] = create_unique_id(values["dag_id"], values["task_id"], rng=random.Random(0))
    event(_compare(prepared, override, values))


@given(
    pair=hostile_templates_and_overrides(),
    date=dates,
    mutation_hook=hooks,
    run_id=st.one_of(st.none(), hostile_run_ids),
    map_index=map_indexes,
)
def test_the_fast_path_refuses_what_the_general_path_refuses(
    pair: tuple[Manifest | None, Manifest | None], **drawn: Any
) -> None:
    template, override = pair
    prepared = _warmed(template, override)
    if prepared is None:
        return
    event(_compare(prepared, override, _values(**drawn)))


def test_construct_task_pod_without_a_template_takes_the_fast_path() -> None:
    values = _values()
    del values["rng"]
    with fast_path() as use:
        pods_built = [construct_task_pod(**values) for _ in range(4)]
    assert use.fast_task_pods, "the bare template's plan never served a pod"
    with fast_path(enabled=False):
        expected = construct_task_pod(**values)
    assert all(json.dumps(pod) == json.dumps(expected) for pod in pods_built)
    # Each pod is its own tree: changing one changes no other.
    pods_built[0]["metadata"]["labels"]["dag_id"] = "changed"
    pods_built[0]["spec"]["containers"][0]["args"].append("x")
    assert pods_built[1] == expected


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("try_number", True),
        ("try_number", 1.0),
        ("try_number", AIRFLOW_INT_MAX + 1),
        ("map_index", -2),
        ("dag_id", ""),
        ("task_id", 5),
    ],
)
def test_the_fast_path_leaves_bad_keys_to_the_key(field: str, value: object) -> None:
    prepared = _warmed(None, None)
    assert prepared is not None
    with pytest.raises(InvalidKey) as raised:
        construct_task_pod(base_worker_pod=prepared, **_values(**{field: value}))
    assert raised.value.field == field


# --- plans: the merge worked out once per template and override -------------------------


CALLBACK_ID = "019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e"


PODS_PER_EXAMPLE = 4


TEMPLATE: Manifest = {
    "metadata": {"labels": {"team": "data"}, "annotations": {"owner": "platform"}},
    "spec": {
        "serviceAccountName": "airflow-worker",
        "containers": [
            {
                "name": "base",
                "image": "registry.example.com/airflow:3",
                "env": [{"name": "A", "value": "1"}],
                "volumeMounts": [{"name": "logs", "mountPath": "/logs"}],
            },
            {"name": "sidecar", "image": "busybox:1"},
        ],
        "volumes": [{"name": "logs", "emptyDir": {}}],
        "tolerations": [{"key": "dedicated", "operator": "Exists"}],
    },
}


OVERRIDE: Manifest = {
    "metadata": {"labels": {"team": "analytics", "size": "big"}},
    "spec": {
        "containers": [
            {"name": "base", "resources": {"limits": {"memory": "8Gi"}}, "env": [{"name": "B"}]}
        ],
        "volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}}],
    },
}


def _quiet_outcome(build: Callable[[], Manifest]) -> tuple[str, object]:
    """The pod as JSON text (key order counts), or the error's type and message."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        try:
            return "pod", json.dumps(build())
        except (PodReconciliationError, PodMutationHookError, ValueError, TypeError) as error:
            return "error", (type(error), str(error))


def _task_pod(
    template: PodTemplate, override: Manifest | None, *, number: int, **values: Any
) -> Manifest:
    arguments: dict[str, Any] = {
        "namespace": "airflow",
        "scheduler_job_id": 7,
        "pod_id": f"etl-load-{number}",
        "dag_id": "etl",
        "task_id": "load",
        "kube_image": "img:1",
        "try_number": number + 1,
        "args": ["python", "-m", "work", str(number)],
        "airflow_version": AIRFLOW_VERSION,
        "run_id": f"manual__{number}",
        "pod_override": override,
        "rng": random.Random(number),
    }
    arguments.update(values)
    return construct_task_pod(base_worker_pod=template, **arguments)


def _planned(use: FastPathUse) -> int:
    """How many pods the prepared path built (from a plan, by either of its builds)."""
    return use.planned_pods + use.fast_task_pods


def test_a_realistic_template_is_planned_from_its_second_pod() -> None:
    template = PodTemplate(TEMPLATE)
    with fast_path() as use:
        first = _task_pod(template, OVERRIDE, number=0)
    assert _planned(use) == 0
    with fast_path() as use:
        second = _task_pod(template, OVERRIDE, number=0)
    assert _planned(use) == 1
    assert json.dumps(second) == json.dumps(first)
    assert second["spec"]["containers"][0]["env"] == [
        {"name": "A", "value": "1"},
        {"name": "AIRFLOW_IS_K8S_EXECUTOR_POD", "value": "True"},
        {"name": "B"},
    ]
    assert second["metadata"]["labels"]["team"] == "analytics"
    assert_valid_pod(second)


@given(inputs=task_pod_inputs())
def test_prepared_pods_are_the_general_builds_and_valid(inputs: TaskPodInputs) -> None:
    template, override, args = inputs.template, inputs.override, inputs.args
    prepared = PodTemplate(template)
    built: list[Manifest] = []
    use = FastPathUse()
    for number in range(PODS_PER_EXAMPLE):
        values: dict[str, Any] = {
            **inputs.arguments(),
            "pod_id": create_unique_id(inputs.dag_id, inputs.task_id, rng=random.Random(number)),
            "try_number": inputs.try_number + number,
            "args": [*args, str(number)] if number % 2 else args,
        }
        del values["pod_override"], values["base_worker_pod"]  # _task_pod's own arguments
        # A fresh template builds its first pod by the general merge: the reference.
        reference = functools.partial(
            _task_pod, PodTemplate(template), override, number=0, **values
        )
        expected = _quiet_outcome(reference)
        with fast_path() as one:
            pod = _task_pod(prepared, override, number=0, **values)
        use.planned_pods += one.planned_pods
        use.fast_task_pods += one.fast_task_pods
        assert ("pod", json.dumps(pod)) == expected
        assert_valid_pod(pod)
        built.append(pod)
    event(f"planned: {_planned(use) > 0}")
    # No two pods share a dict or list; nor do they with the layers given.
    for index, pod in enumerate(built):
        others = container_ids(*built[:index], *built[index + 1 :], template, override, args)
        assert not container_ids(pod) & others


@given(
    pod_id=st.one_of(st.just("etl-load-abcd1234"), hostile_names),
    namespace=st.one_of(namespaces, hostile_names),
    pair=hostile_templates_and_overrides(),
    image=st.sampled_from([None, "", "img:1"]),
    args=st.sampled_from([[], ["run"]]),
)
def test_prepared_builds_refuse_what_the_general_build_refuses(
    *,
    pod_id: str,
    namespace: str,
    pair: tuple[Manifest | None, Manifest | None],
    image: str | None,
    args: list[str],
) -> None:
    template, override = pair
    values = {"pod_id": pod_id, "namespace": namespace, "kube_image": image, "args": args}

    def fresh() -> Manifest:
        return _task_pod(PodTemplate(template), override, number=0, **values)

    expected = _quiet_outcome(fresh)
    refused: Exception | None = None
    try:
        prepared = PodTemplate(template)
    except (PodReconciliationError, ValueError, TypeError) as error:
        refused = error
    if refused is not None:
        assert expected == ("error", (type(refused), str(refused)))
        return
    outcomes = [
        _quiet_outcome(lambda: _task_pod(prepared, override, number=0, **values)) for _ in range(3)
    ]
    assert outcomes == [expected] * 3
    event(expected[0])
    if expected[0] == "pod":
        assert_valid_pod(json.loads(str(expected[1])))


@given(
    template=st.one_of(st.none(), pod_templates()),
    dag_id=st.one_of(st.none(), hostile_ids),
    kube_image=kube_images,
    namespace=namespaces,
)
def test_prepared_callback_pods_are_the_general_builds(
    template: Manifest | None, dag_id: str | None, kube_image: str | None, namespace: str
) -> None:
    prepared = PodTemplate(template)

    def build(source: PodTemplate) -> Manifest:
        return construct_callback_pod(
            base_worker_pod=source,
            callback_id=CALLBACK_ID,
            namespace=namespace,
            scheduler_job_id=3,
            kube_image=kube_image,
            args=["python", "-m", "callback"],
            airflow_version=AIRFLOW_VERSION,
            dag_id=dag_id,
            run_id="manual__1",
            rng=random.Random(0),
        )

    for _ in range(3):
        expected = _quiet_outcome(lambda: build(PodTemplate(template)))
        pod = build(prepared)
        assert ("pod", json.dumps(pod)) == expected
        assert_valid_pod(pod)


def test_returned_pods_are_independent_of_each_other_and_the_template() -> None:
    given_template = copy.deepcopy(TEMPLATE)
    template = PodTemplate(given_template)
    with fast_path() as use:
        pods_built = [_task_pod(template, OVERRIDE, number=number) for number in range(3)]
    assert _planned(use) == 2
    reference = copy.deepcopy(pods_built[2])
    # Mutating every dict and list of one pod, and the mapping the template came from,
    # changes neither the other pods nor the pods built after.
    for found in reversed(list(containers_of(pods_built[1]))):
        if isinstance(found, dict):
            found["scribbled"] = True
        elif isinstance(found, list):
            found.append("scribbled")
    given_template["spec"]["containers"][0]["image"] = "changed:1"
    given_template["spec"]["tolerations"].clear()
    assert pods_built[2] == reference
    again = _task_pod(template, OVERRIDE, number=2)
    assert again == reference
    assert not container_ids(again) & container_ids(*pods_built, given_template, OVERRIDE)


def test_construct_task_pod_keeps_templates_by_content_not_by_type() -> None:
    # The same msgpack bytes and an equal value is a hit; 1 for True, 1.0 for 1, a tuple
    # for a list: each is built as the general build builds it.
    base: Manifest = {"spec": {"hostNetwork": True, "containers": [{"name": "base"}]}}
    variants: list[Manifest] = [
        base,
        {"spec": {"hostNetwork": 1, "containers": [{"name": "base"}]}},
        {"spec": {"hostNetwork": True, "containers": ({"name": "base"},)}},
        {"spec": {"hostNetwork": True, "terminationGracePeriodSeconds": 600.0, "containers": []}},
        {"spec": {"hostNetwork": True, "terminationGracePeriodSeconds": 600, "containers": []}},
    ]

    def build(template: Manifest, *, prepared: bool) -> Manifest:
        return construct_task_pod(
            namespace="airflow",
            scheduler_job_id=1,
            pod_id="etl-load-1",
            dag_id="etl",
            task_id="load",
            kube_image="img:1",
            try_number=1,
            args=["run"],
            airflow_version=AIRFLOW_VERSION,
            base_worker_pod=PodTemplate(template) if prepared else template,
        )

    for variant in variants * 3:
        expected = _quiet_outcome(functools.partial(build, variant, prepared=True))
        assert _quiet_outcome(functools.partial(build, variant, prepared=False)) == expected
    assert _quiet_outcome(functools.partial(build, variants[1], prepared=True))[0] == "error"


@pytest.mark.parametrize(
    "override",
    [
        {"metadata": {"annotations": {"run_id": "manual__other"}}},
        {"metadata": {"annotations": {"dag_id": "other"}}},
        {"metadata": {"labels": {"airflow-worker": "99"}}},
        {"metadata": {"labels": {"airflow_executor_done": "True"}}},
        {"metadata": {"annotations": {"callback_id": CALLBACK_ID}}},
    ],
)
def test_planned_pods_refuse_layers_that_change_the_identity(override: Manifest) -> None:
    template = PodTemplate(TEMPLATE)
    with fast_path() as use:
        outcomes = [
            _quiet_outcome(lambda: _task_pod(template, override, number=0, run_id=None))
            for _ in range(3)
        ]
    assert _planned(use) == 2
    assert outcomes[0][0] == "error"
    assert outcomes == [outcomes[0]] * 3
    assert "changed the identity" in str(outcomes[0][1])


# --- the switch ----------------------------------------------------------------------------


def test_the_switch_counts_each_path_and_comes_back_when_its_block_ends() -> None:
    template = PodTemplate(TEMPLATE)
    pods_built: list[Manifest] = []
    uses: list[FastPathUse] = []

    def build_then_fail() -> None:
        with fast_path() as inner:
            uses.append(inner)
            # The first pod is merged, the second planned, the third takes the fast path.
            pods_built.extend(_task_pod(template, OVERRIDE, number=n) for n in range(3))
            raise RuntimeError

    with fast_path(enabled=False) as outer:
        with pytest.raises(RuntimeError):
            build_then_fail()
        _task_pod(template, OVERRIDE, number=3)  # switched off again: the general build
    inner = uses[0]
    assert inner == FastPathUse(planned_pods=1, fast_task_pods=1)
    assert outer == inner  # an outer block counts what blocks inside it built
    with fast_path() as after:
        again = _task_pod(template, OVERRIDE, number=2)
    assert after == FastPathUse(fast_task_pods=1)
    assert json.dumps(again) == json.dumps(pods_built[2])


def test_switched_off_no_pod_is_planned_however_many_are_built() -> None:
    template = PodTemplate(TEMPLATE)
    with fast_path(enabled=False) as off:
        for number in range(4):
            _task_pod(template, OVERRIDE, number=number)
            construct_callback_pod(
                base_worker_pod=template,
                callback_id=CALLBACK_ID,
                namespace="airflow",
                scheduler_job_id=3,
                kube_image="img:1",
                args=["run"],
                airflow_version=AIRFLOW_VERSION,
            )
    assert off == FastPathUse()


def test_a_plan_puts_each_own_value_of_a_pod_in_its_place() -> None:
    # A slot names its value by its place in _PLAN_PARAMETERS and _Plan.pod lists the
    # values in that order: a field missing there, or two swapped, shows here.
    fields = [field.name for field in attrs.fields(_OwnValues)]
    assert sorted(_PLAN_PARAMETERS) == sorted(fields)
    template = _layer({"spec": {"containers": [{"name": "base"}]}}, "base_worker_pod", ())
    plan = _make_plan(template, None, image=True)
    assert plan is not None
    own = _OwnValues("ns-a", "pod-b", {"note": "c"}, {"team": "d"}, ["run", "e"], "image:f")
    pod = plan.pod(own, fresh=False)
    (container,) = pod["spec"]["containers"]
    assert (pod["metadata"]["namespace"], pod["metadata"]["name"]) == ("ns-a", "pod-b")
    assert pod["metadata"]["annotations"] == {"note": "c"}
    assert pod["metadata"]["labels"] == {"team": "d"}
    assert (container["args"], container["image"]) == (["run", "e"], "image:f")
