"""k8s_workloads.airflow.executor.KubernetesExecutor — intake, the loop, ``revoke_task`` —
with the real Airflow 3.3.2 and provider code, the real kubernetes client, and the test
kit's cluster served over HTTP on 127.0.0.1.

The client comes from the provider's own ``[kubernetes_executor] client_factory`` option, so
``start()`` and ``sync()`` run unchanged. In the first tests the state reads are answered
from a dictionary (``_reads.read_states``), to set a callback's row as each case needs; the
scenario test runs ``tests/support/airflow_scenarios.py`` in a fresh ``AIRFLOW_HOME`` with
a migrated SQLite database, real ``ExecutorCallback`` rows, the executor's own database
reads and the real ``SchedulerJobRunner.process_executor_events``. The executor's parts
have their own test modules: ``test_lifecycle``, ``test_reads``, ``test_adoption``,
``test_watcher``, ``test_runtime``.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

pytest.importorskip("airflow.executors.workloads", reason="Airflow runs in the Airflow environment")

from k8s_workloads.airflow.convert import from_airflow_key, to_airflow_key
from k8s_workloads.executor import CreatePod
from k8s_workloads.keys import CallbackKey
from k8s_workloads.states import CallbackState
from k8s_workloads.testing._defaults import admit_priority, default_pod
from tests.support.airflow_outage import run_outage
from tests.support.airflow_scenarios import LAST_WORDS
from tests.support.airflow_support import (
    NS,
    SERVER,
    RecordedLog,
    airflow,
    callback_workload,
    launch_callback,
    logged,
    migrated_database,
    queue_callbacks,
    run_scenario,
    running_executor,
    states_of,
    sync_until,
    task_workload,
)
from tests.support.event_factory import FAILED, RUNNING, SUCCEEDED


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


def test_each_pod_created_and_deleted_is_one_info_line_naming_it_and_its_workload(
    executor: Any,
) -> None:
    log = logged(executor)
    key, name = launch_callback(executor, 9)
    executor.states[key] = CallbackState.RUNNING
    executor.cluster.set_status(NS, name, SUCCEEDED)
    sync_until(executor, lambda: not executor.cluster.pod_names())
    for _ in range(3):
        executor.sync()  # nothing more to say about it
    about = [(level, text) for level, text in log.lines if name in text]
    assert about == [
        ("info", f"Created pod {NS}/{name} of callback {key.id}"),
        ("info", f"Deleted pod {NS}/{name} of callback {key.id}"),
    ]


def test_a_pod_goes_only_once_the_scheduler_took_its_event_and_came_round(
    executor: Any,
) -> None:
    # Report before delete: the event waits in the buffer, the pod with it; taken by the
    # scheduler (get_event_buffer), it is stored by the loop's next turn, then the pod
    # goes. end() after a take deletes nothing: that take may never have been stored.
    from airflow.utils.state import CallbackState as AirflowCallbackState  # noqa: PLC0415

    key, name = launch_callback(executor, 40)
    cluster = executor.cluster
    executor.states[key] = CallbackState.RUNNING
    cluster.set_status(NS, name, SUCCEEDED)
    deadline = time.monotonic() + 10
    while states_of(executor, key) is None or states_of(executor, key)[0] is not (
        AirflowCallbackState.SUCCESS
    ):
        assert time.monotonic() < deadline
        executor.sync()  # the scheduler never takes the events meanwhile
    for _ in range(3):
        executor.sync()
    assert name in cluster.pod_names()  # reported, not taken: the pod stays
    executor.get_event_buffer()  # taken; the loop then stores it...
    executor.end()  # ...but it ends first: nothing taken in its last turn is deleted
    assert name in cluster.pod_names()


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


def _lines(log: RecordedLog, level: str, start: str) -> list[str]:
    return [text for kept, text in log.lines if kept == level and text.startswith(start)]


def _requested_pods(executor: Any) -> list[str]:
    """The names of the pods the executor asks to create, from now on."""
    perform, names = executor._creations.call, []

    def recording(request: Any) -> object:
        if isinstance(request, CreatePod):
            names.append(request.pod_name)
        return perform(request)

    executor._creations.call = recording
    return names


def test_a_failed_creation_is_one_warning_naming_the_pod_the_workload_and_the_error(
    executor: Any,
) -> None:
    log = logged(executor)
    names = _requested_pods(executor)
    executor.cluster.fail_next("create_pod", 500, message="etcdserver: timed out")
    (key,) = queue_callbacks(executor, 6, 1)
    executor.heartbeat()
    sync_until(executor, lambda: bool(executor.cluster.pod_names()))
    (line,) = _lines(log, "warning", "Creating pod")
    assert line.startswith(f"Creating pod {names[0]} of {key} failed: ServiceException: HTTP 500")
    # Retried after its backoff (the driver keeps requests in flight: not on the next pass).
    assert "etcdserver: timed out; queued again after 1 s (" in line


def test_outage_creations_warn_once_per_pause_and_say_when_they_get_through(
    executor: Any,
) -> None:
    # "create unsent": the request never reached the API server; the core pauses creations.
    # The decisions as the core hands them out (a real outage: tests/support/airflow_outage).
    from k8s_workloads.decisions.actions import Decision, RequeueJob  # noqa: PLC0415
    from k8s_workloads.decisions.attempts import Attempts  # noqa: PLC0415
    from k8s_workloads.executor.requests import Handled  # noqa: PLC0415
    from k8s_workloads.states import KubernetesJob  # noqa: PLC0415

    log = logged(executor)
    keys = [CallbackKey(f"00000000-0000-0000-0000-00000000000{n}") for n in range(4)]

    def unsent(number: int) -> Handled:
        key = keys[number]
        executor._creations.failed[key] = "NewConnectionError: [Errno 111] Connection refused"
        why = "the API server was not reached: connection error"
        decision = Decision((RequeueJob(KubernetesJob(key, ["x"]), why, 1.0),), Attempts())
        return Handled(key, "create unsent", decision, pod_name=f"pod-{number}")

    for number in range(3):
        executor._creations.decision(unsent(number))
    (warning,) = _lines(log, "warning", "Creating pod")
    assert warning.startswith(
        f"Creating pod pod-0 of {keys[0]} did not reach the API server at "
        f"{executor.cluster_url}: NewConnectionError: [Errno 111] Connection refused; queued "
        "again after 1 s (the API server was not reached: connection error). Pod creations "
        "pause"
    )
    assert len(_lines(log, "debug", "Creating pod")) == 2  # the rest of the pause
    queue_callbacks(executor, 7, 1)
    executor.heartbeat()
    sync_until(executor, lambda: bool(executor.cluster.pod_names()))
    assert _lines(log, "info", f"Pod creations reach the API server at {executor.cluster_url}")
    executor._creations.decision(unsent(3))
    assert len(_lines(log, "warning", "Creating pod")) == 2  # a new pause, a new warning


def test_a_creation_without_an_answer_and_its_read_back_are_info_lines(
    executor: Any,
) -> None:
    # The pod is created, then its answer is lost (the connection closed): the core reads
    # the pod back and finds it.
    log = logged(executor)
    executor.cluster.fail_next("create_pod", None, applied=True)
    (key,) = queue_callbacks(executor, 8, 1)
    executor.heartbeat()
    sync_until(executor, lambda: bool(_lines(log, "info", "Pod ")))
    (name,) = executor.cluster.pod_names()
    (unanswered,) = _lines(log, "info", "Creating pod")
    assert unanswered.startswith(f"Creating pod {name} of {key} got no clear answer: ")
    assert unanswered.endswith("reading the pod back")
    assert _lines(log, "info", f"Pod {name} of {key} was created after all (read back)")
    assert _lines(log, "warning", "Creating pod") == []  # nothing failed


def test_an_api_server_down_for_30_s_is_a_few_log_lines_and_heartbeats_stay_short() -> None:
    # Issue 29: with the API server down the watch restarted once a second with a
    # traceback and ten urllib3 warnings each (2,199 lines in 25 s). The figures here are
    # the bounds (tests/support/airflow_outage.py prints them).
    figures = run_outage(30.0)
    shown = "\n".join(figures.lines)
    assert figures.records <= 40, shown
    assert figures.tracebacks <= 3, shown
    assert figures.longest_heartbeat <= 1.0
    assert figures.recovered, shown  # the watch is back once the server is
    assert not any("Retrying" in line for line in figures.lines)


def test_a_pod_that_cannot_be_built_is_one_warning(executor: Any) -> None:
    from kubernetes import client as k8s  # noqa: PLC0415

    log = logged(executor)
    override = k8s.V1Pod(metadata=k8s.V1ObjectMeta(labels={"airflow-worker": "99"}))
    workload = task_workload({"pod_override": override})
    executor.queue_workload(workload, session=None)
    executor.heartbeat()
    sync_until(executor, lambda: executor.event_buffer[workload.ti.key][0].value == "failed")
    (line,) = _lines(log, "warning", "No pod could be built")
    assert line.startswith(f"No pod could be built for {from_airflow_key(workload.ti.key)}: ")
    assert "the workload fails: the pod could not be built" in line


def test_an_override_refused_at_submit_fails_the_task_as_a_pod_not_built(executor: Any) -> None:
    from kubernetes import client as k8s  # noqa: PLC0415

    # Issue 30, item 5: the core refuses the job at submit (the override breaks the Pod
    # schema); the task ends as it did when the pod failed to build at creation.
    log = logged(executor)
    spec = k8s.V1PodSpec(containers=[], host_network="yes")  # type: ignore[arg-type]
    override = k8s.V1Pod(spec=spec)
    workload = task_workload({"pod_override": override})
    executor.queue_workload(workload, session=None)
    executor.heartbeat()
    state, info = executor.event_buffer[workload.ti.key]
    assert state.value == "failed"
    assert info.startswith("the pod could not be built: pod_override: ")
    assert "spec.hostNetwork" in info
    (line,) = _lines(log, "warning", "No pod could be built")
    assert "the workload fails: the pod could not be built" in line
    assert workload.ti.key not in executor.running
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
    # Lines the core cannot read, and a bug in a call (not a failure of the call): each
    # sync() returns, and the executor goes on with the next workload.
    log = logged(executor)
    executor.core.feed_event("{this is not json")
    executor.core.feed_event('{"type": "ADDED", "object": {"metadata": {"labels": 3}}}')
    perform = executor._creations.call
    bugs = [RuntimeError("a bug in the I/O layer")]

    def buggy(request: Any) -> object:
        if bugs and isinstance(request, CreatePod):
            raise bugs.pop()
        return perform(request)

    executor._creations.call = buggy
    executor.queue_workload(callback_workload(8), session=None)
    executor.heartbeat()
    sync_until(executor, lambda: "The executor pass failed" in log.text("exception"))
    assert "RuntimeError: a bug in the I/O layer" in log.text("exception")  # its traceback
    workload = callback_workload(9)
    executor.queue_workload(workload, session=None)
    executor.heartbeat()
    sync_until(
        executor,
        lambda: any(
            executor.cluster.pod(NS, name)["metadata"]["annotations"]["callback_id"]
            == workload.callback.id
            for name in executor.cluster.pod_names()
        ),
    )


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
    # The failed callback's row says why, as the scheduler stored the executor's event:
    # its pod by namespace/name, the cause, and its container's last words.
    failed_output = document["outputs"]["fails"]
    assert failed_output.startswith(f"Pod airflow/{pod_of['fails']} failed because of Error")
    assert failed_output.endswith(f"| {LAST_WORDS}")
    assert pod_of["succeeds"] not in pods  # a Succeeded pod is deleted
    assert pods[pod_of["fails"]] == {"phase": "Failed", "done": "True"}  # kept, labelled done
    assert pod_of["runs_long"] not in pods
    assert pod_of["succeeds_while_down"] not in pods
    assert document["adopted_running"] == 1  # the running callback, tracked by scheduler 8
    assert document["running"] == 0


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
    # The deliberate difference (issue 29): the provider passes the template's policy
    # through (none here: the API server's default, Always); ours never restarts.
    assert ours["spec"]["restartPolicy"] == "Never"
    assert "restartPolicy" not in theirs["spec"]
    theirs["spec"]["restartPolicy"] = "Never"
    # The other (issue 32): where the template sets none, the workload's container says
    # why it failed (FallbackToLogsOnError); the provider's gets the API server's File.
    (their_base, *_) = theirs["spec"]["containers"]
    assert ours["spec"]["containers"][0]["terminationMessagePolicy"] == "FallbackToLogsOnError"
    assert "terminationMessagePolicy" not in their_base
    their_base["terminationMessagePolicy"] = "FallbackToLogsOnError"
    # The kit's API server stores a pod defaulted (dnsPolicy, imagePullPolicy, ...):
    # theirs as it would store it.
    default_pod(theirs)
    admit_priority(theirs)
    assert ours == theirs


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
    sync_until(
        executor,
        lambda: (
            executor.core.resource_version(NS) == cluster.resource_version
            and executor._events.empty()
            and executor.core.waiting_results == 0
        ),
    )
    results = [h for h in executor.handled if h.result and h.result.pod_name == name]
    assert len(results) == 3  # Succeeded, and the deletion's two events
    for _ in range(3):
        executor.sync()
    assert deletes == [(NS, name)]


def test_a_sync_returns_at_its_bound_and_the_rest_goes_on_in_the_background() -> None:
    from airflow.utils.state import CallbackState as AirflowCallbackState  # noqa: PLC0415

    options = {"async_pod_creation": "True", "sync_max_seconds": "0.5"}
    with running_executor(latency=2.0, **options) as executor:
        keys = queue_callbacks(executor, 340, 4)
        executor.heartbeat()
        # Back with the creations still on the wire (each takes two seconds).
        assert executor._driver.in_flight == 4
        assert executor.core.in_flight != ()
        sync_until(executor, lambda: len(executor.cluster.pod_names()) == 4)
        sync_until(executor, lambda: executor.core.in_flight == ())
        for key in keys:  # each queued once, nothing failed or lost
            assert states_of(executor, key)[0] == AirflowCallbackState.QUEUED
        assert [h for h in executor.handled if h.cause == "create error"] == []


def test_an_api_restart_and_lost_answers_during_creation_run_each_callback_once() -> None:
    # Issue 29: the answers of two creations lost (stored, then the connection reset), then
    # the API server restarting while the rest are being created (every connection reset,
    # new ones refused for 2 s, the cluster kept). With the default
    # task_publish_max_retries (0) the provider fails what meets the restart and reports
    # failed what lost its answer; here each callback gets one pod and one success.
    from airflow.utils.state import CallbackState as AirflowCallbackState  # noqa: PLC0415

    with running_executor(
        task_publish_max_retries=0, api_request_timeout="2, 10", latency=0.01
    ) as executor:
        cluster, server = executor.cluster, SERVER[0]
        server.drop_next_create_answer("pods", times=2)
        keys = queue_callbacks(executor, 600, 12)
        executor.heartbeat()
        server.refuse_connections(2.0)
        for _ in range(3):
            executor.heartbeat()

        def one_pod_each() -> bool:
            ids = [pod["metadata"]["annotations"]["callback_id"] for pod in cluster.pods()]
            return sorted(ids) == sorted(key.id for key in keys)

        sync_until(executor, one_pod_each, timeout=90)
        assert server.stats.answers_dropped == 2
        causes = {handled.cause for handled in executor.handled}
        assert {"create unsent", "create unknown", "create confirmed"} <= causes
        for key in keys:
            executor.states[key] = CallbackState.RUNNING
        for name in cluster.pod_names():
            cluster.set_status(NS, name, SUCCEEDED)
        sync_until(
            executor,
            lambda: all(
                (states_of(executor, key) or (None,))[0] == AirflowCallbackState.SUCCESS
                for key in keys
            ),
            timeout=60,
        )
        sync_until(executor, lambda: not cluster.pod_names(), timeout=30)
        failed = [k for k, (state, _) in executor.event_buffer.items() if state == "failed"]
        assert failed == []
        creates = [call for call in cluster.calls if call[0] == "create_pod"]
        assert len({name for _, _, name in creates}) == len(keys)  # resends keep the name
