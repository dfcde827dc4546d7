"""The kit's kubelet in process mode: containers run as local processes, with their env,
Secrets and volumes; logs, exit codes, graceful stops, lifetimes; no process left."""

from __future__ import annotations

import base64
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from k8s_workloads import InvalidConfig
from k8s_workloads.pods.payload import attach_secure_payload, secure_workload_payload
from k8s_workloads.states import TaskInstanceState
from k8s_workloads.testing import FakeCluster
from k8s_workloads.testing.process_kubelet import ProcessKubelet
from k8s_workloads.watch.events import resolve_event
from k8s_workloads.watch.resolution import ResolverConfig
from tests.support.event_factory import VERSION
from tests.support.kit_processes import (
    NS,
    delete_running_pod,
    deserialize_in_both_clients,
    ended,
    logged,
    pod_with,
    task_body,
    wait_for,
)
from tests.support.processes import alive

MOUNT = "/run/secrets/airflow-workload"


def python(code: str, *, name: str = "base", **container: Any) -> dict[str, Any]:
    """A container running ``python -c code`` (``python``: this interpreter, by default)."""
    return {
        "name": name,
        "image": "apache/airflow:3.3.2",
        "args": ["python", "-c", code],
    } | container


@pytest.fixture
def cluster() -> FakeCluster:
    found = FakeCluster(namespaces=[NS])
    found.create_secret(
        NS,
        {
            "metadata": {"name": "creds"},
            "data": {"token": base64.b64encode(b"s3cret").decode(), "user": "YWRh"},
        },
    )
    found.create_secret(
        NS, {"metadata": {"name": "p-workload"}, "data": {"workload.json": "eyJhIjogMX0="}}
    )
    return found


def test_a_container_gets_its_env_secrets_and_volume_and_its_output_is_the_pods_log(
    cluster: FakeCluster,
) -> None:
    script = (
        "import json, os, sys\n"
        "path = sys.argv[2]\n"
        "keys = ('GREETING', 'NAME', 'TOKEN', 'CREDS_user', 'POD', 'NAMESPACE', 'WORKLOAD')\n"
        "print(json.dumps({k: os.environ.get(k) for k in keys}))\n"
        "print(open(path).read(), oct(os.stat(path).st_mode & 0o777), path)\n"
        "print('to stderr', file=sys.stderr)\n"
    )
    container = python(
        script,
        args=["python", "-c", script, "--json-path", f"{MOUNT}/workload.json"],
        env=[
            {"name": "NAME", "value": "world"},
            {"name": "GREETING", "value": "hello $(NAME), $$(NAME)"},
            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "WORKLOAD", "value": f"{MOUNT}/workload.json"},
        ],
        envFrom=[{"secretRef": {"name": "creds"}, "prefix": "CREDS_"}],
        volumeMounts=[{"name": "airflow-workload", "mountPath": MOUNT, "readOnly": True}],
    )
    volume = {
        "name": "airflow-workload",
        "secret": {"secretName": "p-workload", "defaultMode": 0o440},
    }
    cluster.create_pod(NS, pod_with(container, volumes=[volume]))
    with ProcessKubelet(cluster, poll_seconds=0.01):
        pod = wait_for(ended(cluster))
    status = pod["status"]
    assert status["phase"] == "Succeeded", cluster.pod_log(NS, "p", "base")
    terminated = status["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    first, second, third = cluster.pod_log(NS, "p", "base").splitlines()
    assert json.loads(first) == {
        "GREETING": "hello world, $(NAME)",
        "NAME": "world",
        "TOKEN": "s3cret",
        "CREDS_user": "ada",
        "POD": "p",
        "NAMESPACE": NS,
        "WORKLOAD": json.loads(first)["WORKLOAD"],
    }
    content, mode, path = second.rsplit(" ", 2)
    assert (content, mode) == ('{"a": 1}', "0o440")
    # The mount path is rewritten to the container's root on the host, the same in args
    # and env.
    assert path.endswith(MOUNT + "/workload.json")
    assert path != MOUNT + "/workload.json"
    assert json.loads(first)["WORKLOAD"] == path
    assert third == "to stderr"
    assert not Path(path).exists()  # the pod's directory is removed once it ended
    deserialize_in_both_clients(pod)


def test_exit_codes_are_terminated_states_and_the_pod_fails_as_the_library_reads_it(
    cluster: FakeCluster,
) -> None:
    watch = cluster.watch(NS)
    failing = python(
        "import sys; print('boom'); sys.exit(3)", terminationMessagePolicy="FallbackToLogsOnError"
    )
    cluster.create_pod(NS, pod_with(failing, python("pass", name="sidecar")))
    with ProcessKubelet(cluster, poll_seconds=0.01):
        pod = wait_for(ended(cluster))
    base, sidecar = pod["status"]["containerStatuses"]
    assert pod["status"]["phase"] == "Failed"
    assert base["state"]["terminated"]["exitCode"] == 3
    assert base["state"]["terminated"]["reason"] == "Error"
    assert base["state"]["terminated"]["message"] == "boom\n"
    assert sidecar["state"]["terminated"]["exitCode"] == 0
    events = watch.events()
    assert {event["object"]["status"]["phase"] for event in events} >= {"Running", "Failed"}
    for event in events:
        deserialize_in_both_clients(event["object"])
    resolution = resolve_event(events[-1], config=ResolverConfig(airflow_version=VERSION))
    assert resolution.state == TaskInstanceState.FAILED
    assert resolution.failure_details is not None
    assert resolution.failure_details.get("exit_code") == 3


def test_a_failed_container_says_why_as_a_kubelet_writes_it(cluster: FakeCluster) -> None:
    # A python command prints 100 lines, then raises: FallbackToLogsOnError gives the
    # tail of its output (80 lines, 2048 bytes) as the message, File gives none; what a
    # container writes to its terminationMessagePath (the path in its args rewritten, or
    # under $K8S_WORKLOADS_POD_ROOT) is the message whatever its policy and exit code.
    raising = "for n in range(100): print('line', n)\nimport alerts; alerts.notfy()"
    writing = (
        "import os, sys\n"
        "open(sys.argv[1], 'w').write('by argv')\n"
        "print('not the message'); sys.exit(int(sys.argv[2]))"
    )
    by_root = (
        "import os, pathlib\n"
        "root = pathlib.Path(os.environ['K8S_WORKLOADS_POD_ROOT'])\n"
        "(root / 'dev/termination-log').write_text('by root')"
    )
    cluster.create_pod(
        NS,
        pod_with(
            python(raising, terminationMessagePolicy="FallbackToLogsOnError"),
            python(raising, name="file", terminationMessagePolicy="File"),
            python(
                writing,
                name="written",
                args=["python", "-c", writing, "/dev/termination-log", "4"],
                terminationMessagePolicy="FallbackToLogsOnError",
            ),
            python(by_root, name="root"),
        ),
    )
    with ProcessKubelet(cluster, poll_seconds=0.01):
        pod = wait_for(ended(cluster))
    states = {
        item["name"]: item["state"]["terminated"] for item in pod["status"]["containerStatuses"]
    }
    message = states["base"]["message"]
    assert message.endswith("ModuleNotFoundError: No module named 'alerts'\n")
    assert "line 99\n" in message
    assert "line 0\n" not in message  # the first lines are past the tail
    assert len(message.encode()) <= 2048
    assert message.count("\n") <= 80
    assert message == cluster.pod_log(NS, "p", "base")[-len(message) :]
    assert "message" not in states["file"]
    assert (states["written"]["exitCode"], states["written"]["message"]) == (4, "by argv")
    assert (states["root"]["exitCode"], states["root"]["message"]) == (0, "by root")


def test_a_command_that_cannot_start_is_a_start_error(cluster: FakeCluster) -> None:
    container = {"name": "base", "image": "x", "command": ["no-such-program-k8s-workloads"]}
    cluster.create_pod(NS, pod_with(container))
    with ProcessKubelet(cluster, poll_seconds=0.01):
        pod = wait_for(ended(cluster))
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (128, "StartError")
    assert "no-such-program-k8s-workloads" in terminated["message"]
    assert pod["status"]["phase"] == "Failed"


def test_a_missing_secret_waits_as_a_config_error_until_it_exists(cluster: FakeCluster) -> None:
    env = [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "later", "key": "t"}}}]
    cluster.create_pod(NS, pod_with(python("import os; print(os.environ['T'])", env=env)))
    kubelet = ProcessKubelet(cluster, poll_seconds=0.01)
    try:
        kubelet.step(time.monotonic())
        status = cluster.pod(NS, "p")["status"]  # type: ignore[index]
        assert status["phase"] == "Pending"
        waiting = status["containerStatuses"][0]["state"]["waiting"]
        assert waiting == {
            "reason": "CreateContainerConfigError",
            "message": 'secret "later" not found',
        }
        assert kubelet.step(time.monotonic()) == 0  # the same error is not written again
        cluster.create_secret(NS, {"metadata": {"name": "later"}, "stringData": {"t": "now"}})
        kubelet.start()
        pod = wait_for(ended(cluster))
    finally:
        kubelet.stop()
    assert pod["status"]["phase"] == "Succeeded"
    assert cluster.pod_log(NS, "p", "base") == "now\n"


def test_init_containers_run_first_and_share_an_empty_dir(cluster: FakeCluster) -> None:
    mount = [{"name": "work", "mountPath": "/work"}]
    init = python(
        "import sys; open(sys.argv[1], 'w').write('made')",
        name="setup",
        args=["python", "-c", "import sys; open(sys.argv[1], 'w').write('made')", "/work/f"],
        volumeMounts=mount,
    )
    main = python(
        "import sys; print(open(sys.argv[1]).read())",
        args=["python", "-c", "import sys; print(open(sys.argv[1]).read())", "/work/f"],
        volumeMounts=mount,
    )
    cluster.create_pod(
        NS, pod_with(main, initContainers=[init], volumes=[{"name": "work", "emptyDir": {}}])
    )
    with ProcessKubelet(cluster, poll_seconds=0.01):
        pod = wait_for(ended(cluster))
    assert pod["status"]["phase"] == "Succeeded"
    assert pod["status"]["initContainerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    assert cluster.pod_log(NS, "p", "base") == "made\n"


SLEEPER = "import time; print('ready', flush=True); time.sleep(60)"
STUBBORN = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('ready', flush=True); time.sleep(60)"
)


@pytest.mark.parametrize(
    ("code", "exit_code", "at_least"), [(SLEEPER, 143, 0.0), (STUBBORN, 137, 1.0)]
)
def test_a_deleted_pod_gets_sigterm_then_sigkill_at_its_grace_and_is_confirmed(
    cluster: FakeCluster, code: str, exit_code: int, at_least: float
) -> None:
    cluster.create_pod(NS, pod_with(python(code), terminationGracePeriodSeconds=1))
    watch = cluster.watch(NS)
    with ProcessKubelet(cluster, poll_seconds=0.01) as kubelet:
        took = delete_running_pod(cluster, kubelet)
    assert took >= at_least  # SIGKILL only once the grace period ended
    events = watch.events()
    assert events[-1]["type"] == "DELETED"
    stopped = events[-2]["object"]
    assert stopped["status"]["phase"] == "Failed"
    terminated = stopped["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == exit_code
    deserialize_in_both_clients(stopped)


def test_a_pod_outliving_its_lifetime_is_killed_and_fails_deadline_exceeded(
    cluster: FakeCluster,
) -> None:
    cluster.create_pod(NS, pod_with(python(SLEEPER), terminationGracePeriodSeconds=1))
    with ProcessKubelet(cluster, poll_seconds=0.01, max_lifetime=0.5) as kubelet:
        wait_for(logged(cluster, "ready"))
        (pid,) = kubelet.pids()
        pod = wait_for(ended(cluster))
        assert not alive(pid)
    status = pod["status"]
    assert (status["phase"], status["reason"]) == ("Failed", "DeadlineExceeded")
    assert status["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 143


def test_a_pod_gone_at_once_has_its_processes_stopped_and_nothing_written(
    cluster: FakeCluster,
) -> None:
    cluster.create_pod(NS, pod_with(python(SLEEPER), terminationGracePeriodSeconds=1))
    kubelet = ProcessKubelet(cluster, poll_seconds=0.01)
    try:
        kubelet.step(time.monotonic())
        wait_for(logged(cluster, "ready"))
        (pid,) = kubelet.pids()
        uid = cluster.pod(NS, "p")["metadata"]["uid"]  # type: ignore[index]
        cluster.delete_pod(NS, "p")
        cluster.finish_deletion(NS, "p", uid=uid)  # forced: gone before the kubelet looks
        version = cluster.resource_version

        def stopped() -> bool:
            kubelet.step(time.monotonic())  # reaps it (a zombie until then)
            return not alive(pid)

        wait_for(stopped, seconds=5)
        assert cluster.resource_version == version  # nothing written for a pod gone
        assert kubelet.pids() == []
    finally:
        kubelet.stop()


def test_stopping_the_kubelet_stops_every_process_even_one_ignoring_sigterm(
    cluster: FakeCluster,
) -> None:
    cluster.create_pod(NS, pod_with(python(SLEEPER), name="a"))
    cluster.create_pod(NS, pod_with(python(STUBBORN), name="b"))
    with ProcessKubelet(cluster, poll_seconds=0.01) as kubelet:
        wait_for(lambda: logged(cluster, "ready", "a")() and logged(cluster, "ready", "b")())
        pids = kubelet.pids()
        assert len(pids) == 2
        kubelet.stop()
        assert [pid for pid in pids if alive(pid)] == []
        kubelet.stop()  # twice is fine


def test_a_child_the_command_started_is_stopped_with_it(cluster: FakeCluster) -> None:
    code = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print('child', child.pid, flush=True)\n"
    )
    cluster.create_pod(NS, pod_with(python(code)))
    with ProcessKubelet(cluster, poll_seconds=0.01):
        wait_for(ended(cluster))
    child = int(cluster.pod_log(NS, "p", "base").split()[1])
    wait_for(lambda: not alive(child), seconds=5)


@pytest.mark.parametrize(
    ("field", "value"),
    [("max_lifetime", 0), ("executables", ["python"]), ("inherit_env", "yes"), ("node_name", "")],
)
def test_the_process_kubelets_options_are_checked(field: str, value: Any) -> None:
    with pytest.raises(InvalidConfig) as raised:
        ProcessKubelet(FakeCluster(), **{field: value})
    assert raised.value.field == field


def test_python_is_this_interpreter_unless_told_otherwise() -> None:
    assert ProcessKubelet(FakeCluster()).executables["python"] == sys.executable
    assert signal.SIGTERM  # the platform has the signals the kubelet sends


def test_the_librarys_secure_payload_reaches_the_process_through_its_json_path(
    cluster: FakeCluster, tmp_path: Path
) -> None:
    # A stand-in for `python`: the workload module's command line, then what --json-path
    # names, as the real module would read it.
    stand_in = tmp_path / "python"
    stand_in.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        "print(' '.join(sys.argv[1:3]))\n"
        "print(open(sys.argv[sys.argv.index('--json-path') + 1]).read())\n"
    )
    stand_in.chmod(0o755)
    payload = secure_workload_payload({"token": "t0k3n"}, pod_name="task", namespace=NS)
    cluster.create_secret(NS, payload.secret)
    body = task_body("p")  # the Secret's name need not follow the pod's
    body["spec"]["containers"] = body["spec"]["containers"][:1]  # base only
    cluster.create_pod(NS, attach_secure_payload(body, payload))
    with ProcessKubelet(cluster, poll_seconds=0.01, executables={"python": str(stand_in)}):
        pod = wait_for(ended(cluster))
    assert pod["status"]["phase"] == "Succeeded", cluster.pod_log(NS, "p", "base")
    module, workload = cluster.pod_log(NS, "p", "base").splitlines()
    assert module == "-m airflow.sdk.execution_time.execute_workload"
    assert json.loads(workload) == {"token": "t0k3n"}


# --- restarts ---------------------------------------------------------------------------

# Exits 1 until it has run three times, counting its runs in the file named by argv[1].
THIRD_TIME_LUCKY = (
    "import pathlib, sys\n"
    "path = pathlib.Path(sys.argv[1])\n"
    "runs = int(path.read_text()) + 1 if path.exists() else 1\n"
    "path.write_text(str(runs))\n"
    "print('run', runs, flush=True)\n"
    "sys.exit(0 if runs >= 3 else 1)\n"
)


def counting(tmp_path: Path, **container: Any) -> dict[str, Any]:
    """A container running :data:`THIRD_TIME_LUCKY` with its count under ``tmp_path``."""
    name = container.pop("name", "base")
    args = ["python", "-c", THIRD_TIME_LUCKY, str(tmp_path / f"{name}-runs")]
    return python(THIRD_TIME_LUCKY, name=name, args=args, **container)


def statuses(events: list[dict[str, Any]], container: str = "base") -> list[tuple[Any, ...]]:
    """Each status seen: the phase, the container's state and reason, its restartCount."""
    found = []
    for event in events:
        status = event["object"]["status"]
        entries = status.get("containerStatuses", []) + status.get("initContainerStatuses", [])
        for entry in entries:
            if entry["name"] == container:
                (kind, state), *_ = entry["state"].items()
                found.append((status["phase"], kind, state.get("reason"), entry["restartCount"]))
    return found


def test_always_restarts_the_process_after_each_exit_backing_off(cluster: FakeCluster) -> None:
    watch = cluster.watch(NS)
    crashing = python("import sys; print('run', flush=True); sys.exit(1)")
    cluster.create_pod(NS, pod_with(crashing, restartPolicy="Always"))
    seen: list[tuple[Any, ...]] = []

    def restarted_thrice() -> bool:
        seen.extend(statuses(watch.events()))
        return any(count == 3 for *_, count in seen)

    with ProcessKubelet(cluster, poll_seconds=0.01, restart_backoff=0.05) as kubelet:
        wait_for(restarted_thrice, seconds=120)
        stored = cluster.pod(NS, "p")
        assert stored is not None
        base = stored["status"]["containerStatuses"][0]
        assert base["lastState"]["terminated"]["exitCode"] == 1
        assert base["lastState"]["terminated"]["reason"] == "Error"
        assert cluster.pod_log(NS, "p", "base").count("run\n") >= 3  # every run's output
        deserialize_in_both_clients(stored)
    assert kubelet.pids() == []
    running = [entry for entry in seen if entry[0] == "Running"]
    assert ("Running", "terminated", "Error", 0) in running  # the first exit: at once
    assert ("Running", "waiting", "CrashLoopBackOff", 1) in running  # the second: backs off
    assert [entry[0] for entry in seen].index("Running") + len(running) == len(seen)


def test_on_failure_restarts_a_failed_process_until_it_succeeds(
    cluster: FakeCluster, tmp_path: Path
) -> None:
    cluster.create_pod(NS, pod_with(counting(tmp_path), restartPolicy="OnFailure"))
    with ProcessKubelet(cluster, poll_seconds=0.01, restart_backoff=0.01):
        pod = wait_for(ended(cluster), seconds=120)
    assert pod["status"]["phase"] == "Succeeded"
    base = pod["status"]["containerStatuses"][0]
    assert base["restartCount"] == 2
    assert base["state"]["terminated"]["exitCode"] == 0
    assert base["lastState"]["terminated"]["exitCode"] == 1
    assert cluster.pod_log(NS, "p", "base") == "run 1\nrun 2\nrun 3\n"


def test_on_failure_does_not_restart_an_exit_zero_and_never_restarts_nothing(
    cluster: FakeCluster,
) -> None:
    cluster.create_pod(NS, pod_with(python("pass"), name="ok", restartPolicy="OnFailure"))
    failing = python("import sys; sys.exit(1)")
    cluster.create_pod(NS, pod_with(failing, name="no", restartPolicy="Never"))
    with ProcessKubelet(cluster, poll_seconds=0.01, restart_backoff=0.01):
        ok = wait_for(ended(cluster, "ok"))
        no = wait_for(ended(cluster, "no"))
    assert (ok["status"]["phase"], no["status"]["phase"]) == ("Succeeded", "Failed")
    for pod in (ok, no):
        assert pod["status"]["containerStatuses"][0]["restartCount"] == 0


def test_a_failed_init_container_restarts_while_the_pod_stays_pending(
    cluster: FakeCluster, tmp_path: Path
) -> None:
    watch = cluster.watch(NS)
    body = pod_with(
        python("print('main')"),
        initContainers=[counting(tmp_path, name="setup")],
        restartPolicy="Always",
    )
    cluster.create_pod(NS, body)
    with ProcessKubelet(cluster, poll_seconds=0.01, restart_backoff=0.01):
        wait_for(logged(cluster, "main"), seconds=120)
    setup = statuses(watch.events(), "setup")
    before_main = [entry for entry in setup if entry[1:3] != ("terminated", "Completed")]
    assert {phase for phase, *_ in before_main} == {"Pending"}
    assert ("Pending", "waiting", "CrashLoopBackOff", 1) in setup
    assert setup[-1][1:] == ("terminated", "Completed", 2)  # the third run completed


def test_a_pod_deleted_while_it_backs_off_is_confirmed_without_a_process(
    cluster: FakeCluster,
) -> None:
    crashing = python("import sys; sys.exit(2)")
    cluster.create_pod(NS, pod_with(crashing, restartPolicy="Always"))

    def backing_off() -> bool:
        stored = cluster.pod(NS, "p")
        entries = [] if stored is None else stored["status"].get("containerStatuses", [])
        return any("waiting" in entry["state"] for entry in entries if entry["restartCount"])

    with ProcessKubelet(cluster, poll_seconds=0.01, restart_backoff=600) as kubelet:
        wait_for(backing_off, seconds=120)
        assert kubelet.pids() == []
        cluster.delete_pod(NS, "p")
        wait_for(lambda: cluster.pod(NS, "p") is None, seconds=120)
