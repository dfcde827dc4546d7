"""The simulator's options (:mod:`k8s_workloads.sim.config`): the executor's options at
the executor's own defaults, checked as every config is."""

from __future__ import annotations

import attrs
import pytest

from k8s_workloads.config import DecisionConfig
from k8s_workloads.executor import ExecutorConfig
from k8s_workloads.sim import SimConfig, parse_scenario, simulate
from k8s_workloads.sim.config import SIM_CREATION_BATCH_SIZE, _default
from k8s_workloads.watch.resolution import ResolverConfig


def test_a_default_sim_config_runs_the_executor_at_its_defaults() -> None:
    config = SimConfig()
    assert config.decision_config() == DecisionConfig()
    assert config.resolver_config() == ResolverConfig(airflow_version=config.airflow_version)
    default_executor = attrs.fields_dict(ExecutorConfig)
    assert config.kube_image == default_executor["kube_image"].default


def test_every_pod_queued_in_a_tick_is_created_in_that_tick() -> None:
    # The simulator's own batch size (ExecutorConfig's is 1): launches are not spread out.
    workloads = "".join(
        f"  - {{id: t{index}, kind: task, dag_id: d, task_id: t{index}}}\n" for index in range(5)
    )
    result = simulate(parse_scenario("workloads:\n" + workloads))
    creates = [entry.t for entry in result.timeline if entry.kind == "create"]
    assert creates == [0] * 5
    assert SimConfig().creation_batch_size == SIM_CREATION_BATCH_SIZE >= 5


def test_a_flat_option_reaches_the_decision_config() -> None:
    config = SimConfig(pod_launch_failure_retries=4, delete_worker_pods=False)
    decisions = config.decision_config()
    assert (decisions.pod_launch_failure_retries, decisions.delete_worker_pods) == (4, False)


def test_embedded_options_override_the_flat_ones() -> None:
    config = SimConfig(decisions=(("max_handling_retries", 7),))
    assert config.decision_config().max_handling_retries == 7


@attrs.frozen
class _Options:
    flag: bool = True
    name: str | None = None


def test_a_default_is_read_with_its_type() -> None:
    assert _default(_Options, "flag", bool) is True
    assert _default(_Options, "name", type(None)) is None


def test_a_default_of_another_kind_fails_at_once() -> None:
    with pytest.raises(TypeError, match=r"_Options\.flag defaults to True, not int"):
        _default(_Options, "flag", int)
