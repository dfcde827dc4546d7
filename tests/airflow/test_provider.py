"""The package as a registered Airflow provider, with the real Airflow and provider (the
newest and the oldest admitted provider's environments); the executor's start-up checks
are in ``test_lifecycle``.

Airflow finds the package through its ``apache_airflow_provider`` entry point: the
installed package's metadata, so these tests read what ``pip install`` put there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("airflow.executors.workloads", reason="Airflow runs in the Airflow environment")

from k8s_workloads import __version__
from k8s_workloads.airflow.provider import EXECUTOR, OPTIONS, get_provider_info
from tests.support.airflow_support import airflow, configured

SECTION = "kubernetes_executor"


def _provider_declared() -> dict[str, Any]:
    provider_info = airflow("airflow.providers.cncf.kubernetes.get_provider_info")
    section: dict[str, Any] = provider_info.get_provider_info()["config"][SECTION]["options"]
    return section


def test_the_provider_info_passes_airflows_schema() -> None:
    discovery = airflow("airflow._shared.providers_discovery")
    info = get_provider_info()
    discovery._create_provider_info_schema_validator().validate(info)
    assert info["versions"] == [__version__]
    assert info["executors"] == [EXECUTOR]


def test_airflow_lists_the_package_with_its_version_and_executor() -> None:
    manager = airflow("airflow.providers_manager").ProvidersManager()
    assert manager.providers["k8s-workloads"].version == __version__
    executors = dict(manager.executor_without_check)
    assert executors[EXECUTOR] == "k8s-workloads"


def test_both_providers_options_keep_their_defaults_and_descriptions() -> None:
    # Airflow merges the providers' declarations a section at a time (the last package
    # name wins the section): the section declared here must hold the provider's too.
    conf = airflow("airflow.configuration").conf
    described = conf.configuration_description[SECTION]["options"]
    for option in OPTIONS:
        assert conf.get(SECTION, option.name) == option.default
        assert described[option.name]["description"] == option.description
    for name, declared in _provider_declared().items():
        assert described[name]["description"] == declared["description"], name
        assert described[name].get("default") == declared.get("default"), name


def _airflow_cli(*argv: str, home: Path) -> str:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW__")},
        "AIRFLOW_HOME": str(home),
    }
    done = subprocess.run(
        [str(Path(sys.executable).with_name("airflow")), *argv],
        env=env, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "missing 'cli' section" not in done.stdout + done.stderr
    return done.stdout


def test_airflows_cli_shows_the_package_and_its_defaults(tmp_path: Path) -> None:
    listed = json.loads(_airflow_cli("providers", "list", "--output", "json", home=tmp_path))
    versions = {row["package_name"]: row["version"] for row in listed}
    assert versions["k8s-workloads"] == __version__
    value = _airflow_cli(
        "config", "get-value", SECTION, "pod_cleanup_max_concurrency", home=tmp_path
    )
    assert value.strip().splitlines()[-1] == "16"


def test_airflow_config_check_reads_the_running_configuration() -> None:
    from k8s_workloads.cli._airflow_config import check_running_configuration  # noqa: PLC0415

    complete = {
        ("core", "executor"): f"LocalExecutor,k8s:{EXECUTOR}",
        (SECTION, "in_cluster"): "False",
        (SECTION, "config_file"): __file__,
        (SECTION, "worker_container_repository"): "apache/airflow",
        (SECTION, "worker_container_tag"): "3.3.2",
    }
    with configured(complete):
        assert check_running_configuration() == ([], "")
    with configured({**complete, (SECTION, "max_handling_retries"): "-5"}):
        (problem,), _ = check_running_configuration()
    assert problem == (
        "[kubernetes_executor] max_handling_retries = '-5': must be -1 (always) or a count from 0"
    )
    with configured({**complete, (SECTION, "api_request_timeout"): "10, never"}):
        (problem,), _ = check_running_configuration()
    assert problem.startswith("[kubernetes_executor] api_request_timeout = '10, never': must be")
