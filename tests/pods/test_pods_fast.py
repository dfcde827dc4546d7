"""The task pod builders' fast path: a planned pod with only its own values checked.

``_fast_task_pod`` builds a planned task pod checking only what the pod's own values could
break, and hands anything it cannot vouch for to the general path. Every pod and every
error must be exactly what the general path (the fast path switched off) gives for the same
values: key order, messages and all.
"""

from __future__ import annotations

import datetime
import json
import random
import string
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from k8s_workloads import pods
from k8s_workloads.compat import AirflowVersion
from k8s_workloads.keys import AIRFLOW_INT_MAX, InvalidKey
from k8s_workloads.labels import EXECUTION_DATE_KEY, LOGICAL_DATE_KEY, create_unique_id
from k8s_workloads.pods import PodMutationHookError, PodTemplate, construct_task_pod
from k8s_workloads.reconcile import Manifest, PodReconciliationError
from k8s_workloads.testing.strategies import (
    airflow_ids,
    container_args,
    hostile_ids,
    hostile_names,
    hostile_run_ids,
    hostile_templates_and_overrides,
    kube_images,
    namespaces,
    run_ids,
    scheduler_job_ids,
    templates_and_overrides,
)
from k8s_workloads.validation import validate_manifest

AIRFLOW_VERSION = "3.3.2"


class _Text(str):
    """A str subclass: equal to and hashing as the plain string, but not of its type."""

    __slots__ = ()


class _Count(int):
    __slots__ = ()


@contextmanager
def _general_path_only() -> Iterator[None]:
    def refuse(prepared: object, *_values: object) -> object:
        return prepared

    with mock.patch.object(pods, "_fast_task_pod", refuse):
        yield


@contextmanager
def _fast_path_counted(counts: list[int]) -> Iterator[None]:
    real = pods._fast_task_pod

    def counted(*values: Any) -> object:
        built = real(*values)
        if not isinstance(built, pods._Prepared):
            counts.append(1)
        return built

    with mock.patch.object(pods, "_fast_task_pod", counted):
        yield


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
hooks = st.sampled_from([None, _no_hook, _relabelling_hook, _identity_changing_hook])
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
        return template.task_pod(pod_override=override, **seeded)

    with _general_path_only():
        expected = _outcome(build)
    counts: list[int] = []
    with _fast_path_counted(counts):
        assert _outcome(build) == expected
    if expected[0] == "pod":
        assert validate_manifest(json.loads(str(expected[1]))) == []
    return "fast" if counts else "general"


def _warmed(template: Manifest | None, override: Manifest | None) -> PodTemplate | None:
    """A prepared template with this pair planned (if it can be), or None if refused."""
    try:
        prepared = PodTemplate(template)
        for image in ("img:1", "img:1", None, None):  # both plans: with and without an image
            prepared.task_pod(pod_override=override, **_values(kube_image=image))
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
    counts: list[int] = []
    values = _values()
    del values["rng"]
    with _fast_path_counted(counts):
        pods_built = [construct_task_pod(**values) for _ in range(4)]
    assert counts, "the bare template's plan never served a pod"
    with _general_path_only():
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
        prepared.task_pod(**_values(**{field: value}))
    assert raised.value.field == field
