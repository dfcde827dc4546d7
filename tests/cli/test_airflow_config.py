"""``airflow-config`` (:mod:`k8s_workloads.cli._airflow_config`): the settings that run
the executor, and ``--check``.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from tests.support.cli import run

if TYPE_CHECKING:
    import pytest


def test_airflow_config_prints_the_executor_line_and_the_librarys_options() -> None:
    import configparser  # noqa: PLC0415

    code, out, err = run("airflow-config")
    assert (code, err) == (0, "")
    parsed = configparser.ConfigParser()
    parsed.read_string(out)
    assert parsed["core"]["executor"] == "k8s_workloads.airflow.KubernetesExecutor"
    assert parsed["kubernetes_executor"]["max_handling_retries"] == "3"
    code, env_out, _ = run("airflow-config", "--env")
    assert code == 0
    assert (
        "AIRFLOW__CORE__EXECUTOR=k8s_workloads.airflow.KubernetesExecutor" in env_out.splitlines()
    )
    settings = [line for line in env_out.splitlines() if not line.startswith("#")]
    assert len(settings) == len(parsed["kubernetes_executor"]) + 1


def test_airflow_config_shows_the_cluster_access_and_image_choices() -> None:
    # Issue 21: every user must also say how to reach the cluster and which image to run.
    import configparser  # noqa: PLC0415

    code, out, _ = run("airflow-config")
    assert code == 0
    commented = {line.lstrip("# ").split(" = ")[0] for line in out.splitlines() if " = " in line}
    for setting in ("in_cluster", "config_file", "client_factory", "worker_container_repository",
                    "worker_container_tag", "pod_template_file"):  # fmt: skip
        assert setting in commented, setting
    parsed = configparser.ConfigParser()
    parsed.read_string(out)
    assert "in_cluster" not in parsed["kubernetes_executor"]  # a choice, left commented
    _, env_out, _ = run("airflow-config", "--env")
    assert "#   AIRFLOW__KUBERNETES_EXECUTOR__IN_CLUSTER=False" in env_out.splitlines()


def test_airflow_config_check_without_airflow_is_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "airflow.configuration", None)  # import fails
    code, out, err = run("airflow-config", "--check")
    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert "pip install 'k8s-workloads[airflow]'" in err
