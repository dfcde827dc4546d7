"""The checks every configuration runs when it is made (:mod:`k8s_workloads.config_checks`): a
wrong value is an :class:`InvalidConfig` naming its field, whichever config holds it."""

from __future__ import annotations

import datetime
import math
import random
import re
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from k8s_workloads import InvalidConfig, compat
from k8s_workloads.compat import AirflowVersion, InvalidVersion
from k8s_workloads.config import DecisionConfig
from k8s_workloads.executor import ExecutorConfig
from k8s_workloads.keys import CallbackKey
from k8s_workloads.pods.codec import annotations_to_key
from k8s_workloads.sim.config import SimConfig
from k8s_workloads.testing import FakeApiServer, FakeCluster
from k8s_workloads.watch.events import resolve_event
from k8s_workloads.watch.failures import PendingPolicy
from k8s_workloads.watch.resolution import ResolverConfig


@pytest.mark.parametrize("version", ["three", "", "3.3.x", "1!3.3.0", 3.3, "not-a-version"])
def test_a_resolver_config_refuses_what_is_not_a_version_at_once(version: Any) -> None:
    # It used to be accepted, and then every callback pod resolved UNDECODABLE.
    with pytest.raises(InvalidConfig) as raised:
        ResolverConfig(airflow_version=version)
    assert raised.value.field == "airflow_version"
    assert str(raised.value).startswith("ResolverConfig.airflow_version: ")
    with pytest.raises(InvalidVersion):  # what a version parser raises, too
        ResolverConfig(airflow_version=version)


@pytest.mark.parametrize("version", ["3.3.2", "3.2.0", "3.4.0.dev0", "3.3.2+astro.1"])
def test_a_resolver_config_parses_a_version_once(version: str) -> None:
    config = ResolverConfig(airflow_version=version)
    assert config.airflow_version == AirflowVersion.parse(version)
    assert str(config.airflow_version) == version
    assert ResolverConfig(airflow_version=config.airflow_version) == config
    assert attrs.evolve(config, report_callback_running=False).airflow_version is (
        config.airflow_version
    )
    assert ResolverConfig(airflow_version=None).airflow_version is None


def test_callback_events_do_not_parse_the_version_again(monkeypatch: pytest.MonkeyPatch) -> None:
    config = ResolverConfig(airflow_version="3.3.2")
    pattern = compat._PEP440_VERSION  # the version parser's one regular expression
    parses: list[str] = []

    class Counting:
        def match(self, text: str) -> re.Match[str] | None:
            parses.append(text)
            return pattern.match(text)

    monkeypatch.setattr(compat, "_PEP440_VERSION", Counting())
    pod: dict[str, Any] = {
        "metadata": {
            "name": "callback-1",
            "namespace": "airflow",
            "labels": {"airflow-workload-type": "callback", "kubernetes_executor": "True"},
            "annotations": {"callback_id": "019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e"},
        },
        "status": {"phase": "Succeeded"},
    }
    for _ in range(50):
        resolution = resolve_event({"type": "MODIFIED", "object": pod}, config=config)
        assert isinstance(resolution.key, CallbackKey)
    assert parses == []
    # A text version, where one is still passed, is parsed where it is taken.
    annotations_to_key(pod["metadata"]["annotations"], airflow_version="3.3.2")
    assert parses == ["3.3.2"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("namespace", "Bad NS"),
        ("namespace", ""),
        ("airflow_version", "three"),
        ("creation_batch_size", 0),
        ("secure_payload", "yes"),
    ],
)
def test_a_bad_executor_option_is_refused_naming_its_field(field: str, value: Any) -> None:
    options: dict[str, Any] = {"scheduler_id": "1", "namespace": "airflow"}
    options["airflow_version"] = "3.3.2"
    options[field] = value
    with pytest.raises(InvalidConfig) as raised:
        ExecutorConfig(**options)
    assert raised.value.field == field


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("kube_image", 3),
        ("pod_template", ["not", "a", "mapping"]),
        ("load_template", "templates/"),
        ("mutation_hook", 1),
        ("decisions", {"pod_launch_failure_retries": 2}),
        ("resolver", "3.3.2"),
        ("rng", 42),
        ("watch_all_namespaces", None),
        ("read_callback_states", 0),
    ],
)
def test_every_executor_option_is_checked(field: str, value: Any) -> None:
    with pytest.raises(InvalidConfig) as raised:
        ExecutorConfig(
            scheduler_id="1", namespace="airflow", airflow_version="3.3.2", **{field: value}
        )
    assert raised.value.field == field
    assert str(raised.value).startswith(f"ExecutorConfig.{field}: ")


def test_an_executor_config_parses_its_version_once() -> None:
    config = ExecutorConfig(
        scheduler_id=1, namespace="airflow", airflow_version="3.3.2", rng=random.Random(1)
    )
    assert config.airflow_version == AirflowVersion.parse("3.3.2")
    assert config.resolver_config().airflow_version is config.airflow_version


@pytest.mark.parametrize(
    ("field", "value"),
    [("fatal_pending_reasons", [3]), ("pending", True), ("pending", {"image_pull_grace": 1})],
)
def test_every_resolver_option_is_checked(field: str, value: Any) -> None:
    with pytest.raises(InvalidConfig) as raised:
        ResolverConfig(**{field: value})
    assert raised.value.field == field


_FIELDS_OF_POLICY = [field.name for field in attrs.fields(PendingPolicy)]


@given(
    st.sampled_from(_FIELDS_OF_POLICY),
    st.one_of(
        st.floats(max_value=-1e-300), st.just(math.nan), st.just(math.inf), st.just(-math.inf),
        st.text(max_size=3), st.booleans(), st.integers(max_value=-1),
    ),
)  # fmt: skip
def test_a_pending_policy_refuses_what_is_not_seconds(field: str, value: Any) -> None:
    with pytest.raises(InvalidConfig) as raised:
        PendingPolicy(**{field: value})
    assert raised.value.field == field
    assert str(raised.value).startswith(f"PendingPolicy.{field}: ")


@given(
    st.sampled_from(_FIELDS_OF_POLICY),
    st.one_of(st.none(), st.floats(min_value=0, allow_nan=False, allow_infinity=False),
              st.integers(min_value=0, max_value=10**9)),
)  # fmt: skip
def test_a_pending_policy_takes_none_and_seconds_from_zero(field: str, value: float | None) -> None:
    assert getattr(PendingPolicy(**{field: value}), field) == value


@given(st.one_of(st.integers(), st.floats(allow_nan=False), st.text(max_size=5), st.none()))
def test_flags_are_true_or_false_only(value: object) -> None:
    for make in (
        lambda: DecisionConfig(delete_worker_pods=value),  # type: ignore[arg-type]
        lambda: ResolverConfig(oom_success_is_failure=value),  # type: ignore[arg-type]
        lambda: SimConfig(reset_orphaned_callbacks=value),  # type: ignore[arg-type]
    ):
        with pytest.raises(InvalidConfig):
            make()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("airflow_version", "three"),
        ("airflow_version", 3.3),
        ("namespace", None),
        ("kube_image", 7),
        ("pod_launch_failure_retries", -7),
        ("task_publish_max_retries", 1.0),
        ("pending_policy", True),
        ("tick_seconds", 0),
        ("tick_seconds", math.nan),
        ("max_ticks", 0),
        ("creation_batch_size", -1),
        ("delete_worker_pods", "yes"),
        ("decisions", {"max_handling_retries": 1}),
    ],
)
def test_a_simulator_config_is_checked_when_made(field: str, value: Any) -> None:
    with pytest.raises(InvalidConfig) as raised:
        SimConfig(**{field: value})
    assert raised.value.field == field
    assert str(raised.value).startswith(f"SimConfig.{field}: ")


def test_a_simulator_config_checks_the_options_it_passes_on() -> None:
    with pytest.raises(InvalidConfig, match=r"^DecisionConfig\.max_handling_retries: "):
        SimConfig(decisions=(("max_handling_retries", -1),))
    with pytest.raises(InvalidConfig, match=r"^ResolverConfig\.oom_success_is_failure: "):
        SimConfig(resolver=(("oom_success_is_failure", "no"),))
    assert (
        SimConfig(decisions=(("max_handling_retries", 0),)).decision_config().max_handling_retries
        == 0
    )


@given(st.integers(max_value=0))
def test_the_fake_clusters_history_is_a_count_from_one(history: int) -> None:
    with pytest.raises(InvalidConfig, match=r"^FakeCluster\.history: "):
        FakeCluster(history=history)


@given(st.one_of(st.integers(max_value=0), st.booleans()))
def test_the_fake_clusters_list_snapshots_is_a_count_from_one(kept: int) -> None:
    with pytest.raises(InvalidConfig, match=r"^FakeCluster\.list_snapshots: "):
        FakeCluster(list_snapshots=kept)


def test_the_fake_clusters_clock_is_a_datetime() -> None:
    with pytest.raises(InvalidConfig, match=r"^FakeCluster\.now: "):
        FakeCluster(now="2026-01-01")  # type: ignore[arg-type]
    when = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    assert FakeCluster(history=1, now=when).now == when


@given(st.one_of(st.integers(max_value=-1), st.integers(min_value=65536), st.booleans()))
def test_the_fake_api_servers_port_is_a_port(port: int) -> None:
    with pytest.raises(InvalidConfig, match=r"^FakeApiServer\.port: "):
        FakeApiServer(FakeCluster(), port=port)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("lifetime", 0),
        ("lifetime", math.inf),
        ("cluster", None),
        ("latency", -0.01),
        ("latency", math.nan),
        ("latency", "0.02"),
        ("latency", True),
    ],
)
def test_the_fake_api_servers_other_options_are_checked(field: str, value: Any) -> None:
    options: dict[str, Any] = {"cluster": FakeCluster(), field: value}
    with pytest.raises(InvalidConfig) as raised:
        FakeApiServer(**options)
    assert raised.value.field == field
