"""``docs/troubleshooting.md`` against the code: every problem the start-up checks and
``airflow-config --check --connect`` find, and every line the executor logs at INFO or
above, matches a row of the page (its message with ``<...>`` for the part that changes).

No Airflow: the checks are made with the settings' own functions and the cluster check
with the real ``kubernetes`` client against the kit's API server."""

from __future__ import annotations

import ast
import re
import socket
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as _client_module

from k8s_workloads.airflow.cluster_check import check_cluster
from k8s_workloads.airflow.settings import setting_problems
from k8s_workloads.testing import Denied, FakeApiServer, FakeCluster

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "troubleshooting.md"
k8s: Any = _client_module  # kubernetes 36 has no types
_ROW = re.compile(r"^\| `(.+?)` \|", re.MULTILINE)
_PART = re.compile(r"<[^<>]*>")
_LEVELS = {"info", "warning", "error", "exception", "critical"}
TOKEN = "kit-token-3c2b1a"  # noqa: S105 - a test value
_SPECIFIER = re.compile(r"%(?:\.\d+)?[sdrf]")


def _messages() -> list[str]:
    rows = _ROW.findall(PAGE.read_text(encoding="utf-8"))
    assert len(rows) > 40, "the page's message tables were not found"
    return rows


def _pattern(message: str) -> re.Pattern[str]:
    """A page's message as a pattern: each ``<...>`` any text (or none: a note that may
    be absent, such as the one about ``client_factory``)."""
    literal = _PART.split(message)
    return re.compile(".*".join(re.escape(part) for part in literal))


def _undocumented(lines: list[str]) -> list[str]:
    patterns = [_pattern(message) for message in _messages()]
    return [line for line in lines if not any(p.fullmatch(line) for p in patterns)]


def _load(path: str) -> dict[str, Any]:
    try:
        loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise ValueError(f"not YAML: {error}".replace("\n", " ")) from None
    if not isinstance(loaded, dict):
        raise TypeError(f"a YAML {type(loaded).__name__}, not a mapping")
    return loaded


def _problems(options: dict[str, str], **more: Any) -> list[str]:
    checked = setting_problems(options.get, environ={}, load_template=_load, **more)
    assert checked, options  # each configuration below has a problem
    return [str(problem) for problem in checked]


def test_every_settings_problem_is_on_the_page(tmp_path: Path) -> None:
    templates = {
        "not_yaml": "kind: [Pod",
        "deployment": "kind: Deployment\nspec: {}\n",
        "no_base": "kind: Pod\nspec:\n  containers:\n  - name: worker\n    image: a:1\n",
        "no_image": "kind: Pod\nspec:\n  containers:\n  - name: base\n",
    }
    for name, text in templates.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("{}", encoding="utf-8")
    reach = {"in_cluster": "False", "config_file": str(kubeconfig)}
    image = {"worker_container_repository": "apache/airflow", "worker_container_tag": "3.3.2"}
    bad_values = {
        # The values issue 32 found --check calling complete, and one of each other kind.
        "delete_worker_pods": "Flase",
        "task_publish_max_retries": "many",
        "worker_pods_creation_batch_size": "0",
        "namespace": "Bad_NS",
        "pod_template_file": str(tmp_path / "missing.yaml"),
        "sync_max_seconds": "-1",
        "api_request_timeout": "soon",
        "multi_namespace_mode_namespace_list": "airflow;jobs",
        "delete_option_kwargs": '{"gracePeriodSeconds": 0}',
        "api_client_retry_configuration": '{"nope": 1}',
        "client_factory": "no_such_module_k8s.make_client",
        "ssl_ca_cert": str(tmp_path / "missing-ca.pem"),
    }
    lines = _problems({**reach, **image, **bad_values})
    assert len(lines) == len(bad_values)
    for value in ("not JSON", "[1]", '{"_request_timeout": 0}'):
        lines += _problems({**reach, **image, "kube_client_request_args": value})
    for name in templates:
        lines += _problems({**reach, "pod_template_file": str(tmp_path / name)})
    lines += _problems({**image, "in_cluster": "True"})
    lines += _problems({**image, "in_cluster": "False", "config_file": "/no/such/kubeconfig"})
    lines += _problems(
        {**image, "in_cluster": "False", "client_factory": "os.getcwd"},
        client_factory_read=False,
        exists=lambda path: path.name != "config",  # no ~/.kube/config either
    )
    lines += _problems({**reach, "worker_container_repository": "apache/airflow"})
    lines += _problems(reach)
    assert _undocumented(lines) == []


def _cluster_lines(url: str, token: str | None = None) -> tuple[str, ...]:
    configuration = k8s.Configuration(host=url)
    if token is not None:
        configuration.api_key = {"authorization": f"Bearer {token}"}
    api = k8s.ApiClient(configuration)
    try:
        found = check_cluster(
            api, namespace="airflow", watched=["airflow", "jobs"], secrets=True,
            request_timeout=(5, 5),
        )  # fmt: skip
    finally:
        api.close()
    return found.problems


def test_every_cluster_problem_is_on_the_page() -> None:
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    lines = list(_cluster_lines(f"http://127.0.0.1:{port}"))
    kit = FakeApiServer(FakeCluster(namespaces=["airflow"]), lifetime=60, token=TOKEN)
    with kit as server:
        lines += _cluster_lines(server.url, token=TOKEN + "-expired")
    denied = [Denied("patch", "pods", "airflow"), Denied("create", "secrets", "airflow")]
    with FakeApiServer(FakeCluster(namespaces=["airflow"]), lifetime=60, denied=denied) as server:
        lines += _cluster_lines(server.url)
    assert lines[0].endswith(": connection refused")
    assert "(401 Unauthorized)" in lines[1]
    assert any("does not exist" in line for line in lines)
    assert sum(line.startswith("RBAC: ") for line in lines) >= 2
    assert _undocumented(lines) == []


def _logged_formats() -> list[str]:
    """The format string of every ``*log*.info/warning/error/exception/critical(...)``
    call of the executor's modules and its watch."""
    sources = [*sorted((ROOT / "src/k8s_workloads/airflow").glob("*.py"))]
    sources.append(ROOT / "src/k8s_workloads/io/watching.py")
    formats = []
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _LEVELS
            ):
                continue
            owner = node.func.value
            owner_name = (
                owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
            )
            if "log" not in owner_name.lower():
                continue
            (first, *_) = node.args
            assert isinstance(first, ast.Constant), f"{path.name}: a log line not in %-style"
            formats.append(str(first.value))
    return formats


def test_every_line_the_executor_logs_is_on_the_page() -> None:
    formats = _logged_formats()
    assert len(formats) > 20
    # A row shown with "X" for each part that changes matches the format, each of whose
    # %-specifiers stands for any text.
    samples = [_PART.sub("X", message) for message in _messages()]
    undocumented = [
        form
        for form in formats
        if not any(
            re.fullmatch(".+".join(re.escape(part) for part in _SPECIFIER.split(form)), sample)
            for sample in samples
        )
    ]
    assert undocumented == []


@pytest.mark.parametrize(
    ("line", "documented"),
    [
        ("[kubernetes_executor] namespace = 'Bad_NS': must be True or False", True),
        ("[kubernetes_executor] brand new problem", False),
    ],
)
def test_the_page_check_itself_tells_a_documented_line(line: str, documented: bool) -> None:
    assert (_undocumented([line]) == []) is documented
