"""k8s_workloads.airflow._lifecycle: the executor's settings read and checked at start,
the core's configuration made from them, the pod template loaded within bounds, and the
options taking effect (with the real Airflow, provider and kubernetes client, against the
test kit's cluster served over HTTP on 127.0.0.1).
"""

from __future__ import annotations

import base64
import json
import time
import types
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("airflow.executors.workloads", reason="Airflow runs in the Airflow environment")

from k8s_workloads.airflow._lifecycle import _is_default_mutation_hook, executor_kube_client
from k8s_workloads.airflow.settings import InvalidExecutorSetting
from k8s_workloads.states import CallbackState
from tests.support.airflow_support import (
    NS,
    airflow,
    configured,
    launch_callback,
    queue_callbacks,
    running_executor,
    states_of,
    sync_until,
    task_workload,
)
from tests.support.airflow_support import OPTIONS as TEST_OPTIONS
from tests.support.event_factory import SUCCEEDED

SECTION = "kubernetes_executor"


def _alias_bomb(levels: int = 8) -> str:
    """An annotation of nine aliases of nine aliases ...: 9**9 strings from 500 bytes."""
    lines = ["l0: &l0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]" for n in range(1, levels + 1)]
    lines += ["metadata:", f"  annotations: {{note: *l{levels}}}"]  # read by the provider
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_alias_bomb(), "more than 100,000 YAML nodes once its aliases are expanded"),
        ("[" * 5000 + "]" * 5000, "nested more than 100 deep"),
    ],
)
def test_a_pod_template_file_past_the_yaml_limits_fails_the_task(
    executor: Any, tmp_path: Any, text: str, message: str
) -> None:
    # The provider's yaml.safe_load would fill the scheduler's memory (or its stack).
    template_file = tmp_path / "bomb.yaml"
    template_file.write_text(text)
    workload = task_workload({"pod_template_file": str(template_file)})
    executor.queue_workload(workload, session=None)
    executor.heartbeat()
    sync_until(executor, lambda: executor.event_buffer[workload.ti.key][0].value == "failed")
    info = executor.event_buffer[workload.ti.key][1]
    assert "could not be built" in info
    assert message in info
    assert executor.cluster.pod_names() == []


def test_secure_payload_puts_the_workload_in_a_secret_created_first_and_deleted_with_the_pod() -> (
    None
):
    from airflow.utils.state import CallbackState as AirflowCallbackState  # noqa: PLC0415

    with running_executor(secure_workload_payload="True") as executor:
        cluster = executor.cluster
        key, name = launch_callback(executor, 31)
        pod = cluster.pod(NS, name)
        (secret_name,) = cluster.secret_names()
        assert "secret-token" not in json.dumps(pod)  # the token is not in the pod
        stored = cluster.secret(NS, secret_name)
        assert stored is not None  # stringData is stored as base64 data, as the API does
        decoded = [base64.b64decode(value).decode() for value in stored["data"].values()]
        assert any("secret-token" in value for value in decoded)
        calls = [c[0] for c in cluster.calls]
        assert calls.index("create_secret") < calls.index("create_pod")
        executor.states[key] = CallbackState.RUNNING
        cluster.set_status(NS, name, SUCCEEDED)
        sync_until(executor, lambda: states_of(executor, key)[0] == AirflowCallbackState.SUCCESS)
        sync_until(executor, lambda: not cluster.pod_names() and not cluster.secret_names())


def test_pods_are_deleted_with_the_configured_delete_option_kwargs() -> None:
    from airflow.utils.state import CallbackState as AirflowCallbackState  # noqa: PLC0415

    from tests.support.airflow_support import SERVER  # noqa: PLC0415

    with running_executor(delete_option_kwargs='{"grace_period_seconds": 10}') as executor:
        key, name = launch_callback(executor, 41)
        executor.states[key] = CallbackState.RUNNING
        executor.cluster.set_status(NS, name, SUCCEEDED)
        sync_until(executor, lambda: states_of(executor, key)[0] == AirflowCallbackState.SUCCESS)
        sync_until(executor, lambda: not executor.cluster.pod_names())
        ((where, body),) = SERVER[0].delete_options
        assert where == (NS, name)
        assert body["gracePeriodSeconds"] == 10


def test_airflows_own_mutation_hook_with_no_policy_is_no_hook(executor: Any) -> None:
    # Airflow's pod_mutation_hook asks the policy plugins, and none implements it: each
    # pod would go to a V1Pod and back for nothing.
    settings = airflow("airflow.settings")
    assert settings.pod_mutation_hook.__module__ == "airflow.settings"
    assert not settings.get_policy_plugin_manager().hook.pod_mutation_hook.get_hookimpls()
    assert executor.core.config.mutation_hook is None


def _label_team(pod: Any) -> None:
    pod.metadata.labels["team"] = "data"  # a V1Pod, mutated in place as Airflow's are


@pytest.mark.parametrize("how", ["replaced", "policy plugin"])
def test_a_users_mutation_hook_still_mutates_the_pods(
    how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = airflow("airflow.settings")
    manager = settings.get_policy_plugin_manager()
    hookimpl = airflow("airflow.policies").hookimpl

    def pod_mutation_hook(pod: Any) -> None:
        _label_team(pod)

    # What airflow_local_settings' pod_mutation_hook becomes on Airflow 2.6+: a plugin.
    local_settings = types.SimpleNamespace(pod_mutation_hook=hookimpl(pod_mutation_hook))
    if how == "replaced":  # an older airflow_local_settings, or code, sets the function
        monkeypatch.setattr(settings, "pod_mutation_hook", _label_team)
    else:
        manager.register(local_settings)
    try:
        with running_executor() as executor:
            assert executor.core.config.mutation_hook is not None
            workload = task_workload(None)
            executor.queue_workload(workload, session=None)
            executor.heartbeat()
            cluster = executor.cluster
            sync_until(executor, lambda: bool(cluster.pod_names()))
            (name,) = cluster.pod_names()
            assert cluster.pod(NS, name)["metadata"]["labels"]["team"] == "data"
    finally:
        if manager.is_registered(local_settings):
            manager.unregister(local_settings)


def test_a_template_asking_for_restarts_is_logged_once_per_file(tmp_path: Path) -> None:
    # Issue 29: the pods never restart whatever the file says; the executor says so once
    # for the global template at start and once for a task's own file, not once a pod.
    files = {"Always": tmp_path / "global.yaml", "OnFailure": tmp_path / "task.yaml"}
    for policy, path in files.items():
        path.write_text(f"spec:\n  restartPolicy: {policy}\n  containers:\n  - name: base\n")
    with running_executor(record_log=True, pod_template_file=str(files["Always"])) as executor:
        for number in (21, 22):
            workload = task_workload({"pod_template_file": str(files["OnFailure"])})
            ti = workload.ti.model_copy(
                update={"task_id": f"t{number}", "id": uuid.UUID(int=number)}
            )
            executor.queue_workload(workload.model_copy(update={"ti": ti}), session=None)
        executor.heartbeat()
        cluster = executor.cluster
        sync_until(executor, lambda: len(cluster.pod_names()) == 2)
        pods = [cluster.pod(NS, name) for name in cluster.pod_names()]
        assert [pod["spec"]["restartPolicy"] for pod in pods] == ["Never", "Never"]
        warnings = executor._log.text("warning").splitlines()
    restarts = [line for line in warnings if "restartPolicy" in line]
    assert len(restarts) == 2, warnings
    for (policy, path), line in zip(files.items(), restarts, strict=True):
        assert f"pod_template_file {str(path)!r} asks for restartPolicy {policy!r}" in line
        assert "with restartPolicy 'Never'" in line


def test_async_pod_creation_keeps_many_creations_in_flight() -> None:
    from tests.support.airflow_support import SERVER  # noqa: PLC0415

    options = {"async_pod_creation": "True", "pod_creation_max_concurrency": "4"}
    with running_executor(latency=0.05, **options) as executor:
        assert executor.core.config.max_concurrent_creations == 4
        queue_callbacks(executor, 300, 10)
        executor.heartbeat()
        sync_until(executor, lambda: len(executor.cluster.pod_names()) == 10)
        assert 1 < SERVER[0].stats.max_in_flight_creations <= 4


def test_pods_are_created_one_at_a_time_without_async_pod_creation() -> None:
    from tests.support.airflow_support import SERVER  # noqa: PLC0415

    with running_executor(latency=0.02) as executor:
        assert executor.core.config.max_concurrent_creations == 1  # the provider's default
        queue_callbacks(executor, 320, 5)
        executor.heartbeat()
        sync_until(executor, lambda: len(executor.cluster.pod_names()) == 5)
        assert SERVER[0].stats.max_in_flight_creations == 1


def test_the_providers_fatal_pending_default_becomes_the_librarys_a_users_list_stays() -> None:
    from k8s_workloads.watch.failures import DEFAULT_FATAL_PENDING_REASONS  # noqa: PLC0415

    with running_executor() as executor:  # the option as the provider defaults it
        reasons = executor.core.config.resolver_config().fatal_pending_reasons
        assert reasons == DEFAULT_FATAL_PENDING_REASONS
        assert "ImagePullBackOff" in reasons
    option = {"worker_pod_pending_fatal_container_state_reasons": "ErrImagePull"}
    with running_executor(**option) as executor:
        reasons = executor.core.config.resolver_config().fatal_pending_reasons
        assert reasons == frozenset({"ErrImagePull"})


def test_a_max_concurrency_of_0_is_the_creation_batch_size() -> None:
    with running_executor(async_pod_creation="True", pod_creation_max_concurrency="0") as executor:
        assert executor.core.config.max_concurrent_creations == 10  # the batch size


def test_a_bad_sync_bound_fails_the_start_naming_the_option() -> None:
    with (
        pytest.raises(ValueError, match="sync_max_seconds"),
        running_executor(sync_max_seconds="soon"),
    ):
        pass


def _creation_failures(executor: Any) -> list[Any]:
    return [h for h in executor.handled if h.cause.startswith("create")]


def test_an_api_call_without_an_answer_fails_at_the_read_timeout() -> None:
    # Each answer comes after 1 s; the calls wait 0.3 s for it: a creation is a failed
    # call (the core decides), not a pass stuck for ever.
    with running_executor(api_request_timeout="5, 0.3", latency=1.0) as executor:
        (key,) = queue_callbacks(executor, 340, 1)
        executor.heartbeat()
        sync_until(executor, lambda: bool(_creation_failures(executor)))
        assert {failure.key for failure in _creation_failures(executor)} == {key}


def test_a_request_timeout_in_kube_client_request_args_wins() -> None:
    options = {"kube_client_request_args": '{"_request_timeout": [5, 5]}'}
    with running_executor(api_request_timeout="5, 0.3", latency=1.0, **options) as executor:
        queue_callbacks(executor, 350, 1)
        executor.heartbeat()
        sync_until(executor, lambda: bool(executor.cluster.pod_names()))
        assert _creation_failures(executor) == []


def test_end_returns_within_its_bound_with_calls_that_get_no_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every answer takes 20 s: the watch, the orphan scan's list and the creations hang.
    # end() waits for none of them longer than its bound (here 1 + 2 x 0.5 s; 20 s as
    # shipped), where it waited for every call before.
    from k8s_workloads.airflow import executor as executor_module  # noqa: PLC0415

    monkeypatch.setattr(executor_module, "_END_PASS_SECONDS", 1.0)
    monkeypatch.setattr(executor_module, "_END_WAIT_SECONDS", 0.5)
    options = {"api_request_timeout": "5, 120", "async_pod_creation": "True"}
    with running_executor(latency=20.0, **options) as executor:
        queue_callbacks(executor, 360, 3)
        executor.heartbeat()  # the creations are in flight (sync() returns at its bound)
        assert executor._driver.in_flight
        started = time.monotonic()
        executor.end()
        took = time.monotonic() - started
    assert took < 15  # the bound, 2 s here, with room for a loaded machine: not 20 s
    assert executor_module.END_SECONDS == 20  # as the docstring and docs/guarantees.md say


def _start(options: dict[str, str]) -> Any:
    from k8s_workloads.airflow.executor import KubernetesExecutor  # noqa: PLC0415

    wanted = {**TEST_OPTIONS, **{(SECTION, name): value for name, value in options.items()}}
    with configured(wanted):
        executor: Any = KubernetesExecutor()
        executor.job_id = 7
        try:
            executor.start()
        finally:
            executor.end()
    return executor


def test_no_cluster_access_is_one_line_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(InvalidExecutorSetting) as caught:
        _start({"in_cluster": "True", "client_factory": ""})
    assert caught.value.option == "in_cluster"
    assert "\n" not in str(caught.value)
    assert "set in_cluster = False and config_file" in str(caught.value)


def test_no_image_is_one_line_naming_the_setting(tmp_path: Path) -> None:
    (tmp_path / "kubeconfig").write_text("{}")
    with pytest.raises(InvalidExecutorSetting) as caught:
        _start({
            "in_cluster": "False", "config_file": str(tmp_path / "kubeconfig"),
            "worker_container_repository": "", "worker_container_tag": "",
        })  # fmt: skip
    assert caught.value.option == "worker_container_repository"
    assert "the worker pods would have no image" in str(caught.value)


def test_a_wrong_option_is_one_line_with_the_option_and_the_value() -> None:
    with pytest.raises(InvalidExecutorSetting) as caught:
        _start({"pod_cleanup_max_concurrency": "lots"})
    assert str(caught.value) == (
        "[kubernetes_executor] pod_cleanup_max_concurrency = 'lots': must be a count from 1"
    )


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("namespace", "Bad_NS"),
        ("worker_pods_creation_batch_size", "0"),
        ("pod_template_file", "/no/such/template.yaml"),
        ("multi_namespace_mode_namespace_list", "a, B"),
    ],
)
def test_start_refuses_what_airflow_config_check_reports(option: str, value: str) -> None:
    # Issue 32: each of these started, and every workload then failed (or hung).
    from k8s_workloads.cli._airflow_config import check_running_configuration  # noqa: PLC0415

    options = {
        option: value,
        "multi_namespace_mode": str(option.startswith("multi")),
        "in_cluster": "False",
        "config_file": __file__,  # a file: the client is not made before the check
    }
    with pytest.raises(InvalidExecutorSetting) as caught:
        _start(options)
    assert caught.value.option == option
    wanted = {
        **TEST_OPTIONS,
        **{(SECTION, name): text for name, text in options.items()},
        ("core", "executor"): "k8s_workloads.airflow.KubernetesExecutor",
    }
    with configured(wanted):
        problems, _ = check_running_configuration()
    assert problems == [str(caught.value)]


# --- where pods are watched ------------------------------------------------------------


def test_multi_namespace_mode_watches_each_listed_namespace_once() -> None:
    options = {"multi_namespace_mode": "True", "multi_namespace_mode_namespace_list": "b, a, ,b"}
    with running_executor(**options) as executor:
        assert [w.namespace for w in executor._watchers] == ["b", "a"]


def test_multi_namespace_mode_without_a_list_watches_every_namespace() -> None:
    with running_executor(multi_namespace_mode="True") as executor:
        (watcher,) = executor._watchers
        assert watcher.namespace is None
        key, name = launch_callback(executor, 61)
        executor.states[key] = CallbackState.RUNNING
        executor.cluster.set_status(NS, name, SUCCEEDED)
        sync_until(executor, lambda: states_of(executor, key)[0].value == "success")
        watched = {ns for call, ns, _ in executor.cluster.calls if call == "watch"}
        assert watched == {""}  # all namespaces (the kit records them as "")


# --- the provider's client and Airflow's mutation hook --------------------------------


def test_the_client_is_the_providers_executor_client_with_the_team() -> None:
    made: list[object] = []

    def executor_client(team_name: str | None) -> str:
        made.append(("executor", team_name))
        return "per-team client"

    def plain_client() -> str:
        made.append("plain")
        return "client"

    newer = types.SimpleNamespace(
        _get_executor_kube_client=executor_client, get_kube_client=plain_client
    )
    assert executor_kube_client(newer, "team-a") == "per-team client"
    older = types.SimpleNamespace(get_kube_client=plain_client)  # before 10.24: no teams
    assert executor_kube_client(older, "team-a") == "client"
    assert made == [("executor", "team-a"), "plain"]


def test_a_hook_this_cannot_tell_from_airflows_own_is_taken_for_a_users() -> None:
    def pod_mutation_hook(pod: Any) -> None:  # named and placed as Airflow's is
        del pod

    settings: Any = types.ModuleType("airflow.settings")
    pod_mutation_hook.__module__ = settings.__name__
    pod_mutation_hook.__qualname__ = "pod_mutation_hook"
    settings.pod_mutation_hook = pod_mutation_hook
    # No policy plugin manager (an Airflow before 2.6): the function is the user's.
    assert not _is_default_mutation_hook(settings, pod_mutation_hook)
    # A manager without the hook spec: not the manager Airflow's function asks.
    settings.get_policy_plugin_manager = lambda: types.SimpleNamespace(hook=types.SimpleNamespace())
    assert not _is_default_mutation_hook(settings, pod_mutation_hook)
    # A manager whose hook no plugin implements: Airflow's own, which does nothing.
    empty = types.SimpleNamespace(get_hookimpls=list)
    manager = types.SimpleNamespace(hook=types.SimpleNamespace(pod_mutation_hook=empty))
    settings.get_policy_plugin_manager = lambda: manager
    assert _is_default_mutation_hook(settings, pod_mutation_hook)
    # The same function under another name or module is a user's.
    assert not _is_default_mutation_hook(settings, lambda _pod: None)
