"""``k8s-workloads airflow-config --check`` on the running Airflow configuration (Airflow's
own ``conf``), against the executor: what the check reports the executor refuses to start
with, what it accepts the executor starts with; and ``--check --connect`` against the
kit's API server over HTTP, through a kubeconfig as a user writes one.

The options' rules themselves (every type and range) are in ``test_settings``.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("airflow.executors.workloads", reason="Airflow runs in the Airflow environment")

from k8s_workloads.airflow.provider import EXECUTOR, SECTION
from k8s_workloads.testing import Denied, FakeApiServer, FakeCluster
from tests.support.airflow_support import OPTIONS, configured, running_executor
from tests.support.cli import run

NS = "airflow"
TOKEN = "kit-token-9f8e7d"  # noqa: S105 - a test value; never in the output

_BASE_TEMPLATE = (
    "kind: Pod\nspec:\n  containers:\n  - name: base\n    image: apache/airflow:3.3.2\n"
)


@pytest.fixture
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as name:
        yield Path(name)


def _kubeconfig(folder: Path, url: str, token: str | None = TOKEN) -> Path:
    path = folder / "kubeconfig.yaml"
    user = {"token": token} if token else {}
    path.write_text(
        json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "kit",
            "clusters": [{"name": "kit", "cluster": {"server": url}}],
            "users": [{"name": "kit", "user": user}],
            "contexts": [{"name": "kit", "context": {"cluster": "kit", "user": "kit"}}],
        })
    )  # fmt: skip
    return path


def _complete(config_file: Path) -> dict[tuple[str, str], str]:
    """A configuration --check finds complete: the executor, a kubeconfig, an image."""
    return {
        **OPTIONS,
        ("core", "executor"): EXECUTOR,
        (SECTION, "in_cluster"): "False",
        (SECTION, "config_file"): str(config_file),
        (SECTION, "client_factory"): "",
    }


def _check(options: dict[tuple[str, str], str], *flags: str) -> tuple[int, str, list[str]]:
    with configured(options):
        code, out, err = run("airflow-config", "--check", *flags)
    return code, out, err.splitlines()


def _template(folder: Path, text: str) -> str:
    path = folder / "template.yaml"
    path.write_text(text)
    return str(path)


# (option, value, what the line says): the issue's five first; each started a scheduler
# whose workloads then all failed, or was refused by the provider's executor at start.
BAD = [
    ("delete_worker_pods", "Flase", "must be True or False"),
    ("task_publish_max_retries", "many", "must be -1 (always) or a count from 0"),
    ("worker_pods_creation_batch_size", "0", "must be a count from 1"),
    ("namespace", "Bad_NS", "must be a namespace name"),
    ("pod_template_file", "/no/such/template.yaml", "no such file"),
    ("in_cluster", "ture", "must be True or False"),
    ("multi_namespace_mode", "on", "must be True or False"),
    ("pod_launch_failure_retries", "-2", "must be -1 (always) or a count from 0"),
    ("running_pod_log_lines", "0", "must be a count from 1"),
    ("tcp_keep_idle", "0", "must be a count from 1"),
    ("namespace", "a" * 64, "must be a namespace name"),
    ("kube_client_request_args", "{'_request_timeout': 5}", "is not JSON"),
    ("kube_client_request_args", "[5, 30]", "a JSON list, not an object"),
    ("kube_client_request_args", '{"_request_timeout": [0, 30]}', "must be seconds above 0"),
    ("delete_option_kwargs", '{"grace_period": 0}', "'grace_period' is no field of V1Delete"),
    ("api_client_retry_configuration", '{"totl": 3}', "not the arguments of urllib3's Retry"),
    ("client_factory", "no_such_module.make_client", "cannot be imported"),
    ("ssl_ca_cert", "/no/such/ca.crt", "no such file"),
    ("max_handling_retries", "-5", "must be -1 (always) or a count from 0"),
]


@pytest.mark.parametrize(("option", "value", "says"), BAD, ids=[f"{o}={v}" for o, v, _ in BAD])
def test_check_reports_a_bad_value_in_one_line_and_the_executor_refuses_it(
    option: str, value: str, says: str
) -> None:
    from k8s_workloads.airflow.executor import KubernetesExecutor  # noqa: PLC0415

    options = {**_complete(Path(__file__)), (SECTION, option): value}
    code, out, lines = _check(options)
    assert (code, out) == (1, "")
    (line,) = lines
    assert line.startswith(f"k8s-workloads airflow-config: [{SECTION}] {option}")
    assert says in line
    if not option.endswith("_args") and not option.endswith(("kwargs", "configuration")):
        assert repr(value) in line  # the value, as written (JSON values are not shown)
    with configured(options), pytest.raises(Exception) as refused:
        _start(KubernetesExecutor)  # the provider's own checks run in the constructor
    assert type(refused.value).__name__ in {
        "InvalidExecutorSetting", "AirflowConfigException", "ValueError",
    }  # fmt: skip


def _start(executor_class: Any) -> None:
    executor = executor_class()
    executor.job_id = 7
    try:
        executor.start()
    finally:
        executor.end()


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("spec: [unclosed\n", "cannot be read as a pod (not YAML"),
        ("- name: base\n", "cannot be read as a pod (a YAML list, not a mapping)"),
        ("kind: Deployment\nspec:\n  containers:\n  - name: base\n", "is a 'Deployment', not a"),
        ("spec: {}\n", "cannot be read as a pod"),  # the client's model needs containers
        ("spec:\n  containers:\n  - name: worker\n    image: x:1\n", "no container named 'base'"),
        ("", "no container named 'base'"),  # empty: the provider's empty pod
        (  # merged container by container: the worker's own must be the first
            "spec:\n  containers:\n  - name: proxy\n    image: p:1\n  - name: base\n",
            "its container 'base' is spec.containers[1], not the first",
        ),
    ],
)
def test_a_pod_template_file_must_be_a_pod_with_a_base_container(
    folder: Path, text: str, says: str
) -> None:
    options = {**_complete(Path(__file__)), (SECTION, "pod_template_file"): _template(folder, text)}
    code, _, lines = _check(options)
    assert code == 1
    (line,) = lines
    assert "pod_template_file = " in line
    assert says in line


def test_the_issues_five_values_at_once_are_five_lines() -> None:
    options = {
        **_complete(Path(__file__)),
        **{(SECTION, option): value for option, value, _ in BAD[:5]},
    }
    code, _, lines = _check(options)
    assert code == 1
    named = sorted(line.split("] ")[1].split(" = ")[0] for line in lines)
    assert named == sorted(option for option, _, _ in BAD[:5])


# Valid forms, each accepted by --check and started with by the executor.
GOOD = [
    ("delete_worker_pods", "false"),
    ("delete_worker_pods", " TRUE "),
    ("delete_worker_pods_on_failure", "1"),
    ("task_publish_max_retries", "-1"),
    ("worker_pods_creation_batch_size", "32"),
    ("namespace", NS),
    ("multi_namespace_mode_namespace_list", f"{NS}, b"),
    ("kube_client_request_args", '{"_request_timeout": [5, 30]}'),
    ("delete_option_kwargs", '{"grace_period_seconds": 0}'),
    ("api_client_retry_configuration", '{"total": 3, "backoff_factor": 0.5}'),
    ("pod_template_file", "TEMPLATE"),
    ("sync_max_seconds", "0.5"),
]


@pytest.mark.parametrize(("option", "value"), GOOD, ids=[f"{o}={v}" for o, v in GOOD])
def test_a_valid_value_is_accepted(folder: Path, option: str, value: str) -> None:
    good = _good(folder, {option: value})
    options = {
        **_complete(Path(__file__)),
        **{(SECTION, name): text for name, text in good.items()},
    }
    assert _check(options) == (0, "airflow-config: the executor's settings are complete\n", [])


def test_the_executor_starts_with_the_valid_values(folder: Path) -> None:
    with (
        running_executor(**_good(folder, dict(GOOD))) as executor,
        configured({("core", "executor"): EXECUTOR}),
    ):
        problems, _ = _check_inside()
        assert [watcher.namespace for watcher in executor._watchers] == [NS, "b"]
        assert executor.core.config.creation_batch_size == 32
    assert problems == []


def _good(folder: Path, options: dict[str, str]) -> dict[str, str]:
    """``options`` as set: with a template file made, and the list's mode on."""
    if options.get("pod_template_file") == "TEMPLATE":
        options["pod_template_file"] = _template(folder, _BASE_TEMPLATE)
    if "multi_namespace_mode_namespace_list" in options:
        options["multi_namespace_mode"] = "True"
    return options


def _check_inside() -> tuple[list[str], str]:
    from k8s_workloads.cli._airflow_config import check_running_configuration  # noqa: PLC0415

    return check_running_configuration()


# --- --connect --------------------------------------------------------------------------


@pytest.fixture
def cluster() -> FakeCluster:
    return FakeCluster(namespaces=[NS])


def _connect(
    folder: Path, url: str, *, token: str | None = TOKEN, **more: str
) -> tuple[int, str, list[str]]:
    options = {
        **_complete(_kubeconfig(folder, url, token)),
        **{(SECTION, name): value for name, value in more.items()},
    }
    return _check(options, "--connect")


def test_connect_reports_the_server_reached_and_everything_allowed(
    folder: Path, cluster: FakeCluster
) -> None:
    with FakeApiServer(cluster, lifetime=60, token=TOKEN) as server:
        code, out, lines = _connect(folder, server.url, secure_workload_payload="True")
        reviews = server.stats.count("POST", "selfsubjectaccessreviews")
    assert (code, lines) == (0, [])
    assert out.count("\n") == 1
    assert f"the API server at {server.url} (v1.37.0-k8s-workloads-fake)" in out
    assert "namespace 'airflow' exists" in out
    assert "pods: create, get, list, watch, delete, patch; Secrets: create, delete" in out
    assert TOKEN not in out
    assert reviews == 6 + 2  # one per verb: six on pods, two on Secrets


def test_connect_names_the_address_it_cannot_reach(folder: Path, cluster: FakeCluster) -> None:
    with FakeApiServer(cluster, lifetime=60) as server:
        url = server.url
    code, out, lines = _connect(folder, url)  # the port is closed now
    assert (code, out) == (1, "")
    assert lines == [
        f"k8s-workloads airflow-config: cannot reach the API server at {url}: connection refused"
    ]


def test_connect_reports_credentials_refused_without_showing_them(
    folder: Path, cluster: FakeCluster
) -> None:
    with FakeApiServer(cluster, lifetime=60, token=TOKEN) as server:
        code, _, lines = _connect(folder, server.url, token="not-the-token-5a4b")  # noqa: S106
        _, _, anonymous = _connect(folder, server.url, token=None)
    assert code == 1
    (line,) = lines
    assert f"the API server at {server.url} refuses the client's credentials (401" in line
    assert "not-the-token-5a4b" not in line
    assert TOKEN not in line
    assert len(anonymous) == 1
    assert "(401 Unauthorized)" in anonymous[0]


def test_connect_reports_a_namespace_that_does_not_exist(
    folder: Path, cluster: FakeCluster
) -> None:
    with FakeApiServer(cluster, lifetime=60, token=TOKEN) as server:
        code, _, lines = _connect(
            folder,
            server.url,
            multi_namespace_mode="True",
            multi_namespace_mode_namespace_list=f"{NS}, gone",
        )
    assert code == 1
    (line,) = lines
    assert line.startswith("k8s-workloads airflow-config: namespace 'gone' does not exist: ")


def test_connect_reports_each_denied_verb(folder: Path, cluster: FakeCluster) -> None:
    denied = [Denied("delete", "pods", NS), Denied("watch", "pods"), Denied("create", "secrets")]
    with FakeApiServer(cluster, lifetime=60, token=TOKEN, denied=denied) as server:
        code, _, lines = _connect(folder, server.url)
        _, _, secured = _connect(folder, server.url, secure_workload_payload="True")
    assert code == 1
    prefix = "k8s-workloads airflow-config: RBAC: may not "
    assert [line.removeprefix(prefix).split(": grant")[0] for line in lines] == [
        "'watch' pods in namespace 'airflow'",  # denied in every namespace
        "'delete' pods in namespace 'airflow'",
    ]
    # Secrets are asked about only with secure_workload_payload: the executor makes none else.
    wanted = (
        f"{prefix}'create' secrets in namespace 'airflow': grant it to the scheduler's user or "
        "service account (a Role, bound to it, with verb 'create' on secrets)"
    )
    assert [line for line in secured if "secrets" in line] == [wanted]


def test_connect_waits_for_the_settings_and_needs_check(folder: Path) -> None:
    code, _, lines = _connect(folder, "http://127.0.0.1:9", namespace="Bad_NS")
    assert code == 1
    assert lines[-1].endswith("--connect: not tried, the settings above come first")
    assert len(lines) == 2
    code, out, err = run("airflow-config", "--connect")
    assert (code, out) == (2, "")
    assert "--connect goes with --check" in err
