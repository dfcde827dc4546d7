"""k8s_workloads.airflow.settings: the library's options read and checked, and the
settings without which the executor cannot start (cluster access, the worker image)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from k8s_workloads.airflow.provider import OPTIONS
from k8s_workloads.airflow.settings import (
    PROVIDER_OPTIONS,
    InvalidExecutorSetting,
    cluster_access_problem,
    image_problem,
    read_options,
    setting_problems,
    watched_namespaces,
)

OPTIONS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "options.md"

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


def test_the_options_page_documents_every_option_with_the_default_read() -> None:
    # The options reference's table of the library's options: | `name` | `default` | meaning |
    text = OPTIONS_PAGE.read_text(encoding="utf-8")
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


# --- every option the executor reads (issue 32) -----------------------------------------

# A wrong value for each way the provider's options are read.
_WRONG = {
    "boolean": "Flase",
    "integer": "many",
    "namespace": "Bad_NS",
    "namespaces": "airflow, Bad_NS",
    "request arguments": "{not json",
    "delete options": '{"grace_period": 0}',
    "retry arguments": '{"totl": 3}',
    "import path": "no_such_module_k8s_workloads.make",
    "file": "/no/such/file/k8s-workloads",
}


def _problems(options: dict[str, str], **more: Any) -> list[InvalidExecutorSetting]:
    settings = {"in_cluster": "False", "config_file": __file__, **_IMAGE, **options}
    return setting_problems(
        settings.get, environ={}, load_template=more.pop("load", _no_template), **more
    )


_IMAGE = {"worker_container_repository": "apache/airflow", "worker_container_tag": "3.3.2"}


def _no_template(path: str) -> dict[str, Any]:
    raise AssertionError(f"no template is read here: {path}")


def test_the_defaults_have_no_problem() -> None:
    assert _problems({}) == []


@pytest.mark.parametrize(("name", "how"), [(name, how) for name, how, _ in PROVIDER_OPTIONS])
def test_each_providers_option_is_checked_as_the_executor_reads_it(name: str, how: str) -> None:
    (problem,) = _problems({name: _WRONG[how]})
    assert problem.option == name
    assert str(problem).startswith(f"[kubernetes_executor] {name}")
    assert "\n" not in str(problem)


_INTEGERS = [(name, how, lowest or 0) for name, how, lowest in PROVIDER_OPTIONS if how == "integer"]


@pytest.mark.parametrize(
    ("name", "text", "lowest"),
    [(name, "", lowest) for name, _, lowest in _INTEGERS]
    + [(name, str(lowest - 1), lowest) for name, _, lowest in _INTEGERS],
)
def test_an_integer_below_its_lowest_or_empty_is_a_problem(
    name: str, text: str, lowest: int
) -> None:
    (problem,) = _problems({name: text})
    assert problem.option == name
    assert _problems({name: str(lowest)}) == []


@pytest.mark.parametrize(
    "namespace",
    ["a", "airflow", "team-1", "1a", "a" * 63],
)
def test_a_namespace_name_is_a_dns_1123_label(namespace: str) -> None:
    assert _problems({"namespace": namespace}) == []
    listed = {
        "multi_namespace_mode": "True",
        "multi_namespace_mode_namespace_list": f"{namespace}, b",
    }
    assert _problems({"namespace": namespace, **listed}) == []


@pytest.mark.parametrize(
    "namespace", ["", "Bad_NS", "a" * 64, "-a", "a-", "a.b", " airflow", "airflow "]
)
def test_what_is_no_namespace_name_is_refused(namespace: str) -> None:
    # Unstripped: the provider creates the pods in the namespace exactly as written.
    (problem,) = _problems({"namespace": namespace})
    assert problem.option == "namespace"
    assert f"namespace = {namespace!r}: must be a namespace name" in str(problem)


def test_the_namespaces_watched_are_the_providers() -> None:
    assert watched_namespaces(lambda _name: None) == ["default"]
    assert watched_namespaces({"namespace": "airflow"}.get) == ["airflow"]
    many = {"namespace": "airflow", "multi_namespace_mode": "True",
            "multi_namespace_mode_namespace_list": "b, a, ,b"}  # fmt: skip
    assert watched_namespaces(many.get) == ["b", "a"]
    assert watched_namespaces({"multi_namespace_mode": "true"}.get) == [None]


def test_every_problem_is_listed_not_only_the_first() -> None:
    wrong = {"max_handling_retries": "x", "delete_worker_pods": "Flase", "namespace": "Bad_NS"}
    assert {problem.option for problem in _problems(wrong)} == set(wrong)
    with pytest.raises(InvalidExecutorSetting):
        read_options(wrong.get)


def test_a_json_options_value_is_never_shown() -> None:
    # Request arguments may carry headers: the line names the option and the JSON error.
    arguments = '{"_headers": {"Authorization": "Bearer s3cret-value"}, oops}'
    (problem,) = _problems({"kube_client_request_args": arguments})
    assert "s3cret" not in str(problem)
    assert "kube_client_request_args is not JSON" in str(problem)


def test_the_delete_options_are_the_clients_v1_delete_options() -> None:
    from kubernetes.client import V1DeleteOptions  # noqa: PLC0415

    from k8s_workloads.airflow import settings as module  # noqa: PLC0415

    fields = getattr(V1DeleteOptions, "attribute_map", None) or V1DeleteOptions.model_fields
    assert set(fields) == module._DELETE_OPTION_FIELDS


def test_a_factory_must_be_importable_and_callable() -> None:
    assert _problems({"client_factory": "json.loads"}) == []
    (not_callable,) = _problems({"client_factory": "json.decoder"})
    assert "cannot be imported (not callable)" in str(not_callable)
    (no_dot,) = _problems({"client_factory": "make_client"})
    assert "(not a dotted path)" in str(no_dot)


# --- the pod template file ---------------------------------------------------------------


def _template_problem(path: str, template: object) -> str | None:
    def load(_path: str) -> Any:
        if isinstance(template, Exception):
            raise template
        return template

    problems = _problems({"pod_template_file": path}, load=load)
    assert all(problem.option == "pod_template_file" for problem in problems)
    return str(problems[0]) if problems else None


def test_the_pod_template_file_must_be_a_pod_with_a_base_container() -> None:
    here = __file__  # a file that exists
    base = {"spec": {"containers": [{"name": "base", "image": "mine:1"}]}}
    assert _template_problem(here, base) is None
    assert _template_problem(here, {"kind": "Pod", **base}) is None
    missing = _template_problem("/no/such/template.yaml", base)
    assert missing == (
        "[kubernetes_executor] pod_template_file = '/no/such/template.yaml': no such file: "
        "name a pod template file, or leave it unset"
    )
    folder = _template_problem(str(Path(here).parent), base)
    assert folder is not None
    assert "no such file" in folder
    unreadable = _template_problem(here, ValueError("not YAML: a tab"))
    assert unreadable is not None
    assert "cannot be read as a pod (not YAML: a tab)" in unreadable
    assert "is a 'Deployment', not a Pod" in str(_template_problem(here, {"kind": "Deployment"}))
    sidecar = {"spec": {"containers": [{"name": "sidecar", "image": "x:1"}]}}
    assert "has no container named 'base'" in str(_template_problem(here, sidecar))
    second = {"spec": {"containers": [{"name": "proxy", "image": "p:1"}, {"name": "base"}]}}
    assert "'base' is spec.containers[1], not the first" in str(_template_problem(here, second))


def test_a_template_without_an_image_needs_the_repository_and_tag() -> None:
    base = {"spec": {"containers": [{"name": "base"}]}}
    settings = {"in_cluster": "False", "config_file": __file__, "pod_template_file": __file__}
    problems = setting_problems(settings.get, environ={}, load_template=lambda _p: base)
    assert [problem.option for problem in problems] == ["worker_container_repository"]


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(
        [o.name for o in OPTIONS]
        + [n for n, how, _ in PROVIDER_OPTIONS if how != "import path"]  # imports: not random
    ),
    text=st.text(max_size=40),
)
def test_any_value_is_at_most_one_line_naming_its_option(name: str, text: str) -> None:
    problems = _problems({name: text})
    assert len(problems) <= 1
    for problem in problems:
        assert "\n" not in str(problem)
        assert problem.option == name


def test_the_options_page_lists_every_option_the_executor_reads() -> None:
    # The provider's options the checks read, and those with checks of their own: each a
    # row of the reference (alone or beside its companions: `a`, `b`).
    text = OPTIONS_PAGE.read_text(encoding="utf-8")
    rows = [line.split(" | ")[0] for line in text.splitlines() if line.startswith("| `")]
    documented = {name.strip("| `") for row in rows for name in row.split(", ")}
    own_checks = {"pod_template_file", "config_file", "cluster_context"}
    image = {"worker_container_repository", "worker_container_tag"}
    read = {name for name, _, _ in PROVIDER_OPTIONS} | own_checks | image
    assert read - documented == set()
    assert {option.name for option in OPTIONS} <= documented
