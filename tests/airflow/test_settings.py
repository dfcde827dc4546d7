"""k8s_workloads.airflow.settings: the library's options read and checked, and the
settings without which the executor cannot start (cluster access, the worker image)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

from k8s_workloads.airflow.provider import OPTIONS
from k8s_workloads.airflow.settings import (
    InvalidExecutorSetting,
    cluster_access_problem,
    image_problem,
    read_options,
)

README = Path(__file__).resolve().parents[2] / "README.md"

# A valid value other than the default, for each of Airflow's option types.
_ANOTHER: dict[str, Callable[[str], str]] = {
    "boolean": lambda default: str(default.lower() != "true"),
    "integer": lambda default: str(int(default) + 1),
    "float": lambda default: str(float(default) + 0.5),
    "string": lambda default: default + "0",  # api_request_timeout: "10, 600"
}


def test_each_declared_option_is_read_into_its_own_field() -> None:
    defaults = attrs.asdict(read_options(lambda _name: None))
    for option in OPTIONS:
        read = attrs.asdict(read_options({option.name: _ANOTHER[option.type](option.default)}.get))
        assert {name for name, value in read.items() if value != defaults[name]} == {option.name}


def test_the_readme_documents_every_option_with_the_default_read() -> None:
    # The README's table of the library's options: | `name` | `default` | meaning |
    text = README.read_text(encoding="utf-8")
    table = text[text.index("The library's own, in the same section:") :].split("\n\n")[1]
    rows = [line.split("|")[1:3] for line in table.splitlines()[2:]]
    documented = {name.strip(" `"): default.strip(" `") for name, default in rows}
    options = read_options(lambda _name: None)
    assert documented == {option.name: str(getattr(options, option.name)) for option in OPTIONS}


def test_airflows_spellings_are_read() -> None:
    options = read_options(
        {"pending_policy": " TRUE ", "max_handling_retries": "-1", "sync_max_seconds": "0"}.get
    )
    assert (options.pending_policy, options.max_handling_retries) == (True, -1)
    assert options.sync_max_seconds == 0.0


@pytest.mark.parametrize(
    ("name", "value", "wanted"),
    [
        ("max_handling_retries", "three", "-1 (always) or a count from 0"),
        ("callback_launch_failure_retries", "-2", "-1 (always) or a count from 0"),
        ("pod_cleanup_max_concurrency", "0", "a count from 1"),
        ("pending_policy", "yes please", "True or False"),
        ("sync_max_seconds", "-1", "a number of seconds from 0"),
        ("sync_max_seconds", "nan", "a number of seconds from 0"),
        *(
            ("api_request_timeout", text, "CONNECT, READ seconds above 0 (or one number for both)")
            for text in ("soon", "10, 60, 90", "0", "10, -1", "inf", "")
        ),
    ],
)
def test_a_wrong_value_is_one_line_naming_the_option_and_the_value(
    name: str, value: str, wanted: str
) -> None:
    with pytest.raises(InvalidExecutorSetting) as caught:
        read_options({name: value}.get)
    assert caught.value.option == name
    assert str(caught.value) == f"[kubernetes_executor] {name} = {value!r}: must be {wanted}"


def test_the_request_timeout_is_a_connect_and_a_read_timeout() -> None:
    default = read_options(lambda _name: None).api_request_timeout
    assert default.pair == (10.0, 60.0)  # kube-apiserver's own --request-timeout: 60 s
    assert str(default) == "10, 60"
    assert read_options({"api_request_timeout": " 2.5 , 30 "}.get).api_request_timeout.pair == (
        2.5,
        30.0,
    )
    assert read_options({"api_request_timeout": "45"}.get).api_request_timeout.pair == (45, 45)


def test_in_cluster_needs_the_service_environment() -> None:
    outside = cluster_access_problem(lambda _name: None, environ={})
    assert outside is not None
    assert outside.option == "in_cluster"
    assert "KUBERNETES_SERVICE_HOST" in str(outside)
    inside = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    assert cluster_access_problem(lambda _name: None, environ=inside) is None


def test_a_kubeconfig_is_looked_for_where_the_client_looks(tmp_path: Path) -> None:
    outside = {"in_cluster": "False"}.get
    missing = cluster_access_problem(outside, environ={"KUBECONFIG": str(tmp_path / "none")})
    assert missing is not None
    assert missing.option == "config_file"
    (tmp_path / "config").write_text("{}")
    found = {"KUBECONFIG": f"{tmp_path / 'none'}:{tmp_path / 'config'}"}
    assert cluster_access_problem(outside, environ=found) is None
    named = {"in_cluster": "False", "config_file": str(tmp_path / "gone")}.get
    problem = cluster_access_problem(named, environ={})
    assert problem is not None
    assert "config_file = " in str(problem)
    assert "no such file" in str(problem)


def test_client_factory_counts_only_where_the_provider_reads_it() -> None:
    factory = {"client_factory": "my.make_client"}.get
    assert cluster_access_problem(factory, environ={}) is None
    old = cluster_access_problem(factory, environ={}, client_factory_read=False)
    assert old is not None
    assert "reads it only from 10.24.0" in str(old)


def test_the_image_comes_from_the_repository_and_tag_or_the_template() -> None:
    both = {"worker_container_repository": "apache/airflow", "worker_container_tag": "3.3.2"}
    assert image_problem(both.get, None) is None
    half = image_problem({"worker_container_repository": "apache/airflow"}.get, None)
    assert half is not None
    assert half.option == "worker_container_tag"
    nothing = image_problem(lambda _name: None, None)
    assert nothing is not None
    assert nothing.option == "worker_container_repository"
    assert "no pod_template_file" in str(nothing)
    template = {"spec": {"containers": [{"name": "base", "image": "mine:1"}]}}
    assert image_problem({"pod_template_file": "t.yaml"}.get, template) is None
    sidecar_only = {"spec": {"containers": [{"name": "sidecar", "image": "mine:1"}]}}
    imageless = image_problem({"pod_template_file": "t.yaml"}.get, sidecar_only)
    assert imageless is not None
    assert "'t.yaml' has no 'base' container with an image" in str(imageless)
