"""ExecutorConfig: each field checked when the config is made (a wrong value is an error
naming the field), text read once, and the resolver the core reads events with."""

from __future__ import annotations

import pytest

from k8s_workloads.compat import AirflowVersion
from k8s_workloads.config_checks import InvalidConfig
from k8s_workloads.executor.config import ExecutorConfig
from k8s_workloads.watch.resolution import ResolverConfig

NS = "airflow"
VERSION = "3.3.2"


def test_a_config_refuses_a_batch_size_below_one() -> None:
    with pytest.raises(ValueError, match="creation_batch_size"):
        ExecutorConfig(scheduler_id=1, namespace=NS, airflow_version=VERSION, creation_batch_size=0)


def test_text_is_read_once_when_the_config_is_made() -> None:
    config = ExecutorConfig(scheduler_id=42, namespace=NS, airflow_version=VERSION)
    assert config.scheduler_id == "42"
    assert isinstance(config.airflow_version, AirflowVersion)
    assert (config.creation_batch_size, config.max_concurrent_creations) == (1, 16)


@pytest.mark.parametrize("namespace", ["Airflow", "", "a" * 64, "with_underscore", 7])
def test_a_namespace_that_is_no_dns1123_label_names_the_field(namespace: object) -> None:
    with pytest.raises(InvalidConfig, match="namespace"):
        ExecutorConfig(scheduler_id=1, namespace=namespace, airflow_version=VERSION)  # type: ignore[arg-type]


def test_the_resolver_follows_the_airflow_version_unless_given() -> None:
    config = ExecutorConfig(scheduler_id=1, namespace=NS, airflow_version=VERSION)
    assert config.resolver_config() == ResolverConfig(airflow_version=VERSION)
    given = ResolverConfig(report_callback_running=False)
    assert (
        ExecutorConfig(
            scheduler_id=1, namespace=NS, airflow_version=VERSION, resolver=given
        ).resolver_config()
        is given
    )
    with pytest.raises(InvalidConfig, match="resolver"):
        ExecutorConfig(scheduler_id=1, namespace=NS, airflow_version=VERSION, resolver={})  # type: ignore[arg-type]


@pytest.mark.parametrize("namespaces", ["ab", ["a", "Bad_NS"], [3], None])
def test_watch_namespaces_must_be_a_list_of_namespace_names(namespaces: object) -> None:
    with pytest.raises(InvalidConfig, match=r"ExecutorConfig\.watch_namespaces: must be a list"):
        ExecutorConfig("1", "airflow", watch_namespaces=namespaces)  # type: ignore[arg-type]


def test_the_watched_namespaces_are_the_list_the_namespace_or_every_one() -> None:
    assert ExecutorConfig("1", "airflow").watched_namespaces == ("airflow",)
    listed = ExecutorConfig("1", "airflow", watch_namespaces=["b", "a", "b"])
    assert listed.watch_namespaces == ("b", "a")  # once each, in order
    assert listed.watched_namespaces == ("b", "a")
    every = ExecutorConfig("1", "airflow", watch_all_namespaces=True, watch_namespaces=["b"])
    assert every.watched_namespaces == (None,)
