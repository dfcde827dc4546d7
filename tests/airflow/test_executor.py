"""k8s_workloads.airflow.executor.KubernetesExecutor with the real Airflow 3.3.2 and provider
code, the real kubernetes client, and the test kit's cluster served over HTTP on 127.0.0.1.

The client comes from the provider's own ``[kubernetes_executor] client_factory`` option, so
``start()`` and ``sync()`` run unchanged. In the first tests the state reads are answered
from a dictionary (``_read_states``), to set a callback's row as each case needs; the last
runs ``tests/support/airflow_scenarios.py`` in a fresh ``AIRFLOW_HOME`` with a migrated SQLite
database, real ``ExecutorCallback`` rows, the executor's own database reads and the real
``SchedulerJobRunner.process_executor_events``.
"""

from __future__ import annotations

import base64
import json
import time
import types
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("airflow.executors.workloads", reason="Airflow runs in the Airflow environment")

from k8s_workloads.airflow.convert import from_airflow_key, to_airflow_key
from k8s_workloads.keys import CallbackKey
from k8s_workloads.states import CallbackState, TaskInstanceState
from tests.support.airflow_support import (
    NS,
    airflow,
    callback_workload,
    launch_callback,
    migrated_database,
    run_scenario,
    running_executor,
    states_of,
    sync_until,
    task_workload,
)
from tests.support.event_factory import FAILED, RUNNING, SUCCEEDED


@pytest.fixture
def executor() -> Iterator[Any]:
    with running_executor() as instance:
        yield instance


def test_a_callback_runs_as_a_pod_and_is_reported_with_airflows_types(executor: Any) -> None:
    from airflow.models.callback import CallbackKey as AirflowCallbackKey  # noqa: PLC0415
    from airflow.utils.state import CallbackState as AirflowCallbackState  # noqa: PLC0415

    assert executor.supports_callbacks
    key, name = launch_callback(executor, 1)
    cluster = executor.cluster
    pod = cluster.pod(NS, name)
    assert pod["metadata"]["annotations"]["callback_id"] == key.id
    assert pod["metadata"]["annotations"]["dag_id"] == "etl"
    assert pod["metadata"]["labels"]["airflow-worker"] == "7"
    assert pod["spec"]["containers"][0]["image"] == "apache/airflow:3.3.2"
    assert to_airflow_key(key) in executor.running
    executor.states[key] = CallbackState.QUEUED
    cluster.set_status(NS, name, RUNNING)
    sync_until(executor, lambda: states_of(executor, key)[0] == AirflowCallbackState.RUNNING)
    executor.states[key] = CallbackState.RUNNING
    cluster.set_status(NS, name, SUCCEEDED)
    sync_until(executor, lambda: states_of(executor, key)[0] == AirflowCallbackState.SUCCESS)
    state, _ = states_of(executor, key)
    assert type(state) is AirflowCallbackState
    assert all(isinstance(k, AirflowCallbackKey) for k in executor.event_buffer)
    assert to_airflow_key(key) not in executor.running
    sync_until(executor, lambda: not cluster.pod_names())  # the Succeeded pod is deleted


def test_a_failed_callback_keeps_its_pod_labelled_done(executor: Any) -> None:
    from airflow.utils.state import CallbackState as AirflowCallbackState  # noqa: PLC0415

    key, name = launch_callback(executor, 2)
    cluster = executor.cluster
    executor.states[key] = CallbackState.RUNNING
    cluster.set_status(NS, name, FAILED)
    sync_until(executor, lambda: states_of(executor, key)[0] == AirflowCallbackState.FAILED)
    sync_until(
        executor,
        lambda: cluster.pod(NS, name)["metadata"]["labels"].get("airflow_executor_done") == "True",
    )
    assert "Error" in (states_of(executor, key)[1] or "")


def test_a_terminal_callback_is_never_overwritten(executor: Any) -> None:
    key, name = launch_callback(executor, 3)
    cluster = executor.cluster
    executor.states[key] = CallbackState.SUCCESS  # settled elsewhere
    executor.event_buffer.clear()
    cluster.set_status(NS, name, FAILED)
    sync_until(executor, lambda: to_airflow_key(key) not in executor.running)
    assert to_airflow_key(key) not in executor.event_buffer


def test_a_429_on_creation_pauses_and_retries(executor: Any) -> None:
    workload = callback_workload(4)
    executor.cluster.fail_next(
        "create_pod", 429, reason="TooManyRequests", headers={"Retry-After": "1"}
    )
    executor.queue_workload(workload, session=None)
    started = time.monotonic()
    executor.heartbeat()
    assert executor.core.paused_until is not None
    sync_until(executor, lambda: bool(executor.cluster.pod_names()))
    assert time.monotonic() - started >= 0.9  # Retry-After: 1 was honoured
    assert executor.core.create_retries(CallbackKey(workload.callback.id)) == 0


def test_creation_errors_past_the_budget_fail_the_workload(executor: Any) -> None:
    workload = callback_workload(5)
    executor.cluster.fail_next("create_pod", 500, message="etcdserver: timed out", times=2)
    executor.queue_workload(workload, session=None)
    executor.heartbeat()
    key = CallbackKey(workload.callback.id)
    sync_until(executor, lambda: states_of(executor, key)[0].value == "failed")
    assert "retries are exhausted" in states_of(executor, key)[1]
    assert to_airflow_key(key) not in executor.running
    assert executor.cluster.pod_names() == []


def test_a_database_outage_while_handling_is_retried_on_later_syncs(executor: Any) -> None:
    from airflow.utils.state import CallbackState as AirflowCallbackState  # noqa: PLC0415

    key, name = launch_callback(executor, 6)
    cluster = executor.cluster
    executor.states[key] = CallbackState.RUNNING
    reads = executor._read_states
    failures = [2]

    def outage(keys: Any) -> Any:
        if failures[0]:
            failures[0] -= 1
            raise ConnectionError("the metadata database is unavailable")
        return reads(keys)

    executor._read_states = outage
    cluster.set_status(NS, name, SUCCEEDED)
    sync_until(executor, lambda: states_of(executor, key)[0] == AirflowCallbackState.SUCCESS)
    assert failures == [0]  # two failed reads, then the result went through


def test_a_410_relists_and_settles_a_pod_that_vanished_meanwhile(executor: Any) -> None:
    key, name = launch_callback(executor, 7)
    cluster = executor.cluster
    executor.states[key] = CallbackState.RUNNING
    sync_until(executor, lambda: executor.core.waiting_results == 0)
    # The watch connection drops and cannot come back at once; meanwhile the pod goes and
    # the history is compacted: the watcher resumes from its version and gets a 410.
    cluster.fail_next("watch", 503, message="the watch cache is warming up")
    cluster.drop_watches()
    cluster.remove_pod(NS, name)
    cluster.compact()
    # The watcher backs off after the 503 before it resumes: more than the default wait
    # on a loaded machine (seen once at 10 s).
    sync_until(executor, lambda: states_of(executor, key)[0].value == "failed", timeout=30)
    assert "vanished" in states_of(executor, key)[1]


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


def test_an_override_that_breaks_the_pod_identity_fails_the_workload(executor: Any) -> None:
    from kubernetes import client as k8s  # noqa: PLC0415

    # The override wins over the executor's labels: the watcher could never match the pod.
    override = k8s.V1Pod(metadata=k8s.V1ObjectMeta(labels={"airflow-worker": "99"}))
    workload = task_workload({"pod_override": override})
    executor.queue_workload(workload, session=None)
    executor.heartbeat()
    sync_until(executor, lambda: executor.event_buffer[workload.ti.key][0].value == "failed")
    info = executor.event_buffer[workload.ti.key][1]
    assert "could not be built" in info
    assert "airflow-worker" in info
    assert executor.cluster.pod_names() == []
    assert workload.ti.key not in executor.running


def test_a_template_that_breaks_the_pod_identity_fails_the_workload(
    executor: Any, tmp_path: Any
) -> None:
    # A template that would hide the pod from every watcher (done before it ran).
    template_file = tmp_path / "hiding.yaml"
    template_file.write_text(
        TEMPLATE.replace("labels: {team: data}", 'labels: {airflow_executor_done: "True"}')
    )
    workload = task_workload({"pod_template_file": str(template_file)})
    executor.queue_workload(workload, session=None)
    executor.heartbeat()
    sync_until(executor, lambda: executor.event_buffer[workload.ti.key][0].value == "failed")
    info = executor.event_buffer[workload.ti.key][1]
    assert "could not be built" in info
    assert "airflow_executor_done" in info
    assert executor.cluster.pod_names() == []
    assert workload.ti.key not in executor.running


def test_no_library_error_escapes_sync(executor: Any) -> None:
    executor.core.feed_event("{this is not json")
    executor.core.feed_event('{"type": "ADDED", "object": {"metadata": {"labels": 3}}}')
    executor.sync()  # nothing raised
    assert TaskInstanceState.QUEUED.value == "queued"


def test_callbacks_against_a_migrated_database_and_the_schedulers_event_processing(
    tmp_path: Any, tmp_path_factory: Any
) -> None:
    """tests/support/airflow_scenarios.py in a fresh AIRFLOW_HOME: real rows, real events."""
    database = migrated_database(tmp_path_factory.mktemp("airflow"))
    document = run_scenario("tests.support.airflow_scenarios", home=tmp_path, database=database)
    # The rows as the real scheduler wrote them from the executor's events.
    assert document["states"] == {
        "succeeds": "success",
        "fails": "failed",
        "runs_long": "success",  # RUNNING under scheduler 7, adopted by 8, then done
        "succeeds_while_down": "success",  # Succeeded with no scheduler: adoption reports it
    }
    pods, pod_of = document["pods"], document["pod_of"]
    assert pod_of["succeeds"] not in pods  # a Succeeded pod is deleted
    assert pods[pod_of["fails"]] == {"phase": "Failed", "done": "True"}  # kept, labelled done
    assert pod_of["runs_long"] not in pods
    assert pod_of["succeeds_while_down"] not in pods
    assert document["adopted_running"] == 1  # the running callback, tracked by scheduler 8
    assert document["running"] == 0


def test_orphaned_callbacks_run_again_exactly_once_across_live_schedulers(
    tmp_path: Any, tmp_path_factory: Any
) -> None:
    """Issue 19, item 1 (tests/support/airflow_orphans.py): real rows, two racing executors."""
    database = migrated_database(tmp_path_factory.mktemp("airflow"))
    document = run_scenario("tests.support.airflow_orphans", home=tmp_path, database=database)
    ids, rows, owners = document["ids"], document["rows"], document["pod_owners"]
    holder = "k8s_workloads: queued by scheduler job {}".format
    # Both scanned at once: every orphan went to exactly one of them.
    won_by_b, won_by_c = set(document["race"]["b"]), set(document["race"]["c"])
    assert won_by_b.isdisjoint(won_by_c)
    assert won_by_b | won_by_c == set(document["orphans"])
    assert document["race_failed"] == {"b": [], "c": []}
    # ... and ran it once: one pod, the winner's, the row marked for the winner.
    for orphan, (state, output) in zip(document["orphans"], document["orphan_rows"], strict=True):
        winner = ids["b"] if orphan in won_by_b else ids["c"]
        assert owners[orphan] == [str(winner)]
        assert (state, output) == ("queued", holder(winner))
    # Held by a live scheduler, or by no one this executor knows: never touched.
    assert rows["held_by_live"] == ["queued", holder(ids["d"])]
    assert rows["unmarked"] == ["queued", None]
    # A dead scheduler's callback whose pod exists is the pod's (adoption), never rerun.
    assert owners[document["ids_of"]["with_pod"]] in ([str(ids["b"])], [str(ids["c"])])
    assert rows["with_pod"] == ["queued", holder(ids["a"])]
    # Rows that cannot be rebuilt fail alone, each named in one log line.
    for name, why in (
        ("no_run", "its data names no dag_run_id"),
        ("gone_run", "its dag run 999 no longer exists"),
    ):
        state, output = rows[name]
        assert state == "failed"
        assert why in output
        callback_id = document["ids_of"][name]
        (line,) = [line for line in document["errors"] if callback_id in line]
        assert f"queued by scheduler job {ids['a']} (no longer alive)" in line
        assert why in line
    # A pod whose owner label is gone: skipped, named in a log line; its callback is not
    # run again (a pod exists), and the other pods were adopted all the same.
    no_owner = document["ids_of"]["no_owner"]
    assert owners[no_owner] == [None]
    assert rows["no_owner"] == ["queued", holder(ids["a"])]
    assert any(
        "callback-no-owner" in line and "no airflow-worker label" in line
        for line in document["warnings"]
    )
    # A pending callback queued by both schedulers: the second finds it held, drops it.
    assert rows["pending"] == ["queued", holder(ids["b"])]
    assert owners[document["ids_of"]["pending"]] == [str(ids["b"])]
    # Tracked: the orphans and the pending one by their winners, the pod by its adopter.
    assert sum(document["running"].values()) == len(document["orphans"]) + 2


def test_the_one_configuration_line_loads_this_executor(tmp_path: Any) -> None:
    import os  # noqa: PLC0415
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    code = (
        "from airflow.executors.executor_loader import ExecutorLoader; "
        "cls, _ = ExecutorLoader.import_default_executor_cls(); "
        "print(cls.__module__, cls.__name__, cls.supports_callbacks)"
    )
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(tmp_path),
        "AIRFLOW__CORE__EXECUTOR": "k8s_workloads.airflow.KubernetesExecutor",
    }
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip().splitlines()[-1] == "k8s_workloads.airflow.executor KubernetesExecutor True"


TEMPLATE = """\
apiVersion: v1
kind: Pod
metadata:
  name: placeholder
  labels: {team: data}
spec:
  serviceAccountName: airflow-worker
  containers:
    - name: base
      image: registry.example.com/airflow:3.3.2
      resources: {requests: {cpu: 500m}}
"""


def test_a_task_pod_is_the_providers_pod_for_the_same_task_template_and_override(
    executor: Any,
    tmp_path: Any,
) -> None:
    from kubernetes import client as k8s  # noqa: PLC0415

    template_file = tmp_path / "pod_template.yaml"
    template_file.write_text(TEMPLATE)
    override = k8s.V1Pod(
        spec=k8s.V1PodSpec(
            containers=[k8s.V1Container(name="base", env=[k8s.V1EnvVar(name="X", value="1")])]
        )
    )
    workload = task_workload({"pod_override": override, "pod_template_file": str(template_file)})
    executor.queue_workload(workload, session=None)
    executor.heartbeat()
    cluster = executor.cluster
    sync_until(executor, lambda: bool(cluster.pod_names()))
    (name,) = cluster.pod_names()
    ours = cluster.pod(NS, name)
    assert to_airflow_key(from_airflow_key(workload.ti.key)) in executor.running
    assert executor.event_buffer[workload.ti.key][0].value == "queued"

    generator = airflow("airflow.providers.cncf.kubernetes.pod_generator").PodGenerator
    utils = airflow("airflow.providers.cncf.kubernetes.executors.kubernetes_executor_utils")
    args = utils.workload_to_command_args(workload)
    theirs_pod = generator.construct_pod(
        namespace=NS,
        scheduler_job_id="7",
        pod_id=name,
        dag_id="etl",
        task_id="load",
        kube_image=executor.kube_config.kube_image,
        try_number=2,
        map_index=3,
        date=None,
        run_id=workload.ti.run_id,
        args=list(args),
        pod_override_object=override,
        base_worker_pod=generator.deserialize_model_file(str(template_file)),
    )
    api_client: Any = k8s.ApiClient()
    theirs = api_client.sanitize_for_serialization(theirs_pod)
    # What the API server adds is not the executor's: uid, timestamps, version, status.
    for field in ("uid", "creationTimestamp", "resourceVersion"):
        ours["metadata"].pop(field)
    ours.pop("status")
    assert ours == theirs


def test_multi_namespace_mode_watches_and_relists_each_listed_namespace() -> None:
    from kubernetes import client as k8s  # noqa: PLC0415

    options = {"multi_namespace_mode": "True", "multi_namespace_mode_namespace_list": "a, b"}
    with running_executor(**options) as executor:
        assert [w.namespace for w in executor._watchers] == ["a", "b"]
        cluster = executor.cluster
        override = k8s.V1Pod(metadata=k8s.V1ObjectMeta(namespace="b"))
        workload = task_workload({"pod_override": override})
        key = from_airflow_key(workload.ti.key)
        executor.queue_workload(workload, session=None)
        executor.heartbeat()
        sync_until(executor, lambda: bool(cluster.pod_names()))
        (name,) = cluster.pod_names()
        assert cluster.pod("b", name) is not None  # created where the override says
        watched = {ns for call, ns, _ in cluster.calls if call == "watch"}
        assert watched == {"a", "b"}  # one watch per listed namespace, none elsewhere
        executor.states[key] = TaskInstanceState.SUCCESS
        cluster.set_status("b", name, SUCCEEDED)  # seen by b's watcher
        sync_until(executor, lambda: states_of(executor, key)[0].value == "success")
        sync_until(executor, lambda: not cluster.pod_names())
        # A 410 re-lists every listed namespace, not all of them.
        mark = len(cluster.calls)
        cluster.expire_watches()
        sync_until(executor, lambda: any(c[0] == "list_pods" for c in cluster.calls[mark:]))
        sync_until(
            executor,
            lambda: {c[1] for c in cluster.calls[mark:] if c[0] == "list_pods"} == {"a", "b"},
        )


def test_revoke_task_marks_the_pod_revoked_then_deletes_it_and_reports_nothing(
    executor: Any,
) -> None:
    workload = task_workload(None)
    executor.queue_workload(workload, session=None)
    executor.heartbeat()
    cluster = executor.cluster
    sync_until(executor, lambda: bool(cluster.pod_names()))
    (name,) = cluster.pod_names()
    executor.event_buffer.clear()
    mark = len(cluster.calls)

    class Ti:  # what revoke_task reads of a TaskInstance
        key = workload.ti.key

    executor.revoke_task(ti=Ti())
    assert workload.ti.key not in executor.running
    sync_until(executor, lambda: not cluster.pod_names())
    calls = [(c[0], c[2]) for c in cluster.calls[mark:] if c[0] in {"patch_pod", "delete_pod"}]
    assert calls == [("patch_pod", name), ("delete_pod", name)]  # marked revoked, then deleted
    for _ in range(5):
        executor.sync()
    assert executor.event_buffer == {}  # a revoked task gets no event
    assert name not in cluster.pod_names()


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


def _count_accepted_connections(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The TCP connections the test's API server accepts from now on (a local counter:
    each one the socket server accepts goes through its ``get_request``)."""
    from tests.support.airflow_support import SERVER  # noqa: PLC0415

    tcp = SERVER[0]._server  # the kit's socket server
    accept = tcp.get_request
    accepted = [0]

    def counted() -> Any:
        accepted[0] += 1
        return accept()

    monkeypatch.setattr(tcp, "get_request", counted)
    return accepted


def test_api_connections_are_reused_across_many_workloads(
    executor: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.utils.state import CallbackState as AirflowCallbackState  # noqa: PLC0415

    cluster = executor.cluster
    executor.sync()  # the first pass (adoption's lists) is behind us
    accepted = _count_accepted_connections(monkeypatch)
    workloads = [callback_workload(100 + number) for number in range(20)]
    keys = [CallbackKey(workload.callback.id) for workload in workloads]
    for workload, key in zip(workloads, keys, strict=True):
        executor.states[key] = CallbackState.RUNNING
        executor.queue_workload(workload, session=None)
    executor.heartbeat()
    sync_until(executor, lambda: len(cluster.pod_names()) == len(workloads))
    for name in cluster.pod_names():
        cluster.set_status(NS, name, SUCCEEDED)
    sync_until(
        executor,
        lambda: all(
            (states_of(executor, key) or (None,))[0] == AirflowCallbackState.SUCCESS for key in keys
        ),
    )
    sync_until(executor, lambda: not cluster.pod_names())
    calls = [call for call, _, _ in cluster.calls]
    assert calls.count("create_pod") == calls.count("delete_pod") == len(workloads)
    # 40 calls over the pool's kept-alive connections: at most one per call in flight at
    # once (deletions run side by side); every call used to open a new one, its response
    # never read nor released.
    config = executor.core.config
    assert accepted[0] <= config.max_concurrent_creations + config.max_concurrent_cleanups
    assert accepted[0] < 2 * len(workloads)


def test_a_succeeded_pod_is_deleted_once_over_its_whole_life(
    executor: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.utils.state import CallbackState as AirflowCallbackState  # noqa: PLC0415

    api = executor.kube_client
    delete = api.delete_namespaced_pod
    deletes: list[tuple[str, str]] = []

    def counted(name: str, namespace: str, **kwargs: Any) -> Any:
        deletes.append((namespace, name))  # every call, a 404 too (the server logs none)
        return delete(name, namespace, **kwargs)

    monkeypatch.setattr(api, "delete_namespaced_pod", counted)
    key, name = launch_callback(executor, 51)
    cluster = executor.cluster
    executor.states[key] = CallbackState.RUNNING
    cluster.set_status(NS, name, SUCCEEDED)
    sync_until(executor, lambda: states_of(executor, key)[0] == AirflowCallbackState.SUCCESS)
    sync_until(executor, lambda: not cluster.pod_names())
    # The deletion's events (MODIFIED with a deletionTimestamp, then DELETED) read by the
    # watcher and handled by the core, then more passes: none deletes the pod again.
    (watcher,) = executor._watchers
    sync_until(
        executor,
        lambda: (
            watcher.resource_version == cluster.resource_version
            and executor._events.empty()
            and executor.core.waiting_results == 0
        ),
    )
    results = [h for h in executor.handled if h.result and h.result.pod_name == name]
    assert len(results) == 3  # Succeeded, and the deletion's two events
    for _ in range(3):
        executor.sync()
    assert deletes == [(NS, name)]


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


# --- many requests in flight (issue 18) ------------------------------------------------------


def _queue_callbacks(executor: Any, first: int, count: int) -> list[CallbackKey]:
    keys = []
    for number in range(first, first + count):
        workload = callback_workload(number)
        key = CallbackKey(workload.callback.id)
        executor.states[key] = CallbackState.QUEUED
        executor.queue_workload(workload, session=None)
        keys.append(key)
    return keys


def test_async_pod_creation_keeps_many_creations_in_flight() -> None:
    from tests.support.airflow_support import SERVER  # noqa: PLC0415

    options = {"async_pod_creation": "True", "pod_creation_max_concurrency": "4"}
    with running_executor(latency=0.05, **options) as executor:
        assert executor.core.config.max_concurrent_creations == 4
        _queue_callbacks(executor, 300, 10)
        executor.heartbeat()
        sync_until(executor, lambda: len(executor.cluster.pod_names()) == 10)
        assert 1 < SERVER[0].stats.max_in_flight_creations <= 4


def test_pods_are_created_one_at_a_time_without_async_pod_creation() -> None:
    from tests.support.airflow_support import SERVER  # noqa: PLC0415

    with running_executor(latency=0.02) as executor:
        assert executor.core.config.max_concurrent_creations == 1  # the provider's default
        _queue_callbacks(executor, 320, 5)
        executor.heartbeat()
        sync_until(executor, lambda: len(executor.cluster.pod_names()) == 5)
        assert SERVER[0].stats.max_in_flight_creations == 1


def test_a_max_concurrency_of_0_is_the_creation_batch_size() -> None:
    with running_executor(async_pod_creation="True", pod_creation_max_concurrency="0") as executor:
        assert executor.core.config.max_concurrent_creations == 10  # the batch size


def test_a_sync_returns_at_its_bound_and_the_rest_goes_on_in_the_background() -> None:
    from airflow.utils.state import CallbackState as AirflowCallbackState  # noqa: PLC0415

    options = {"async_pod_creation": "True", "sync_max_seconds": "0.5"}
    with running_executor(latency=2.0, **options) as executor:
        keys = _queue_callbacks(executor, 340, 4)
        executor.heartbeat()
        # Back with the creations still on the wire (each takes two seconds).
        assert executor._driver.in_flight == 4
        assert executor.core.in_flight != ()
        sync_until(executor, lambda: len(executor.cluster.pod_names()) == 4)
        sync_until(executor, lambda: executor.core.in_flight == ())
        for key in keys:  # each queued once, nothing failed or lost
            assert states_of(executor, key)[0] == AirflowCallbackState.QUEUED
        assert [h for h in executor.handled if h.cause == "create error"] == []


def test_a_bad_sync_bound_fails_the_start_naming_the_option() -> None:
    with (
        pytest.raises(ValueError, match="sync_max_seconds"),
        running_executor(sync_max_seconds="soon"),
    ):
        pass
