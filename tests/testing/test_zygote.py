"""The process kubelet's zygotes (``preload``): a ``python -m`` container forked from an
interpreter that imported its module, held to what the same container does as a plain
process: logs, exit codes, env and cwd, signals, deadlines, fallbacks, no process left."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from k8s_workloads import InvalidConfig
from k8s_workloads.testing import FakeCluster
from k8s_workloads.testing._sandbox import POD_ROOT_VARIABLE
from k8s_workloads.testing.process_kubelet import ProcessKubelet
from tests.support.kit_processes import NS, ended, logged, pod_with, wait_for
from tests.support.processes import alive

REPORT = """
import json, os, sys


def main():
    print(json.dumps({
        "argv": sys.argv, "cwd": os.getcwd(), "path0": sys.path[0], "env": dict(os.environ),
        "ppid": os.getppid(), "main": __name__, "pgid": os.getpgid(0) == os.getpid(),
        "orig_argv": sys.orig_argv,
    }), flush=True)
    print("to stderr", file=sys.stderr)
    how = os.environ.get("END", "0")
    if how == "raise":
        raise RuntimeError("it broke")
    sys.exit(int(how) if how.isdigit() else how)


if __name__ == "__main__":
    main()
"""
SLEEPER = """
import signal, sys, time

if __name__ == "__main__":
    if sys.argv[1:] == ["stubborn"]:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print("ready", flush=True)
    time.sleep(60)
"""
BROKEN = 'raise ImportError("broken on purpose")\n'
SLOW = 'import time\ntime.sleep(0.5)\nif __name__ == "__main__":\n    print("imported")\n'


@pytest.fixture
def modules(tmp_path: Path) -> Path:
    """A directory with the modules the pods run (on their PYTHONPATH)."""
    texts = {"report": REPORT, "sleeper": SLEEPER, "broken": BROKEN, "slow": SLOW}
    for name, text in texts.items():
        (tmp_path / f"{name}.py").write_text(text)
    return tmp_path


def module_pod(
    modules: Path, module: str, *args: str, name: str = "p", end: str = "0", **spec: Any
) -> dict[str, Any]:
    env = [{"name": "PYTHONPATH", "value": str(modules)}, {"name": "END", "value": end}]
    container = {"name": "base", "image": "x", "args": ["python", "-m", module, *args]}
    return pod_with(container | {"env": env}, name=name, **spec)


def kubelet(cluster: FakeCluster, **options: Any) -> ProcessKubelet:
    options = {"preload": ("report", "sleeper")} | options
    return ProcessKubelet(cluster, poll_seconds=0.01, **options)


def report(cluster: FakeCluster, name: str = "p") -> dict[str, Any]:
    first = cluster.pod_log(NS, name, "base").splitlines()[0]
    found: dict[str, Any] = json.loads(first)
    return found


def killed(pid: int) -> bool:
    """Gone, or a zombie: an orphan waits for init to reap it, which may take a while."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    except OSError:  # no /proc here
        return not alive(pid)
    return stat.rsplit(")", 1)[1].split()[0] in {"Z", "X"}


def terminated(pod: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    return found


@pytest.mark.parametrize(
    ("end", "code", "phase", "log"),
    [
        ("0", 0, "Succeeded", "to stderr\n"),
        ("3", 3, "Failed", "to stderr\n"),
        ("raise", 1, "Failed", "RuntimeError: it broke\n"),
        ("a message", 1, "Failed", "to stderr\na message\n"),
    ],
)
def test_a_preloaded_module_runs_forked_with_its_exit_code_and_logs(
    modules: Path, end: str, code: int, phase: str, log: str
) -> None:
    cluster = FakeCluster(namespaces=[NS])
    cluster.create_pod(NS, module_pod(modules, "report", "--flag", "x", end=end))
    with kubelet(cluster) as running:
        pod = wait_for(ended(cluster))
        (zygote,) = running.zygote_pids()
    assert report(cluster)["ppid"] == zygote  # forked, not started
    assert report(cluster)["pgid"]  # its own process group, as a plain process
    assert (pod["status"]["phase"], terminated(pod)["exitCode"]) == (phase, code)
    assert cluster.pod_log(NS, "p", "base").endswith(log)
    assert running.zygote_notes == []


def test_env_cwd_and_argv_are_what_the_container_gets_as_a_plain_process(
    modules: Path,
) -> None:
    def run(**options: Any) -> dict[str, Any]:
        cluster = FakeCluster(namespaces=[NS])
        cluster.create_pod(NS, module_pod(modules, "report", "a b", "--c=$(END)", end="0"))
        with kubelet(cluster, **options) as running:
            wait_for(ended(cluster))
            zygotes = running.zygote_pids()
        seen = report(cluster)
        assert (seen["ppid"] in zygotes) == bool(options["preload"])
        root = seen["env"][POD_ROOT_VARIABLE]
        del seen["ppid"]
        normalized: dict[str, Any] = json.loads(json.dumps(seen).replace(root, "<root>"))
        return normalized

    forked, plain = run(preload=("report",)), run(preload=())
    assert forked == plain
    assert forked["cwd"] == forked["path0"] == "<root>"
    assert forked["argv"] == [str(modules / "report.py"), "a b", "--c=0"]
    assert forked["main"] == "__main__"
    assert forked["orig_argv"] == [sys.executable, "-m", "report", "a b", "--c=0"]
    assert forked["env"]["END"] == "0"


def test_pods_of_one_env_share_a_zygote_and_another_env_gets_its_own(modules: Path) -> None:
    cluster = FakeCluster(namespaces=[NS])
    for name, end in [("a", "0"), ("b", "0"), ("c", "4")]:
        cluster.create_pod(NS, module_pod(modules, "report", name=name, end=end))
    with kubelet(cluster) as running:
        for name in "abc":
            wait_for(ended(cluster, name))
        zygotes = running.zygote_pids()
    assert len(zygotes) == 2
    parents = {name: report(cluster, name)["ppid"] for name in "abc"}
    assert parents["a"] == parents["b"] != parents["c"]
    assert set(parents.values()) == set(zygotes)


def test_a_working_directory_is_the_zygotes_and_the_childs(modules: Path, tmp_path: Path) -> None:
    cluster = FakeCluster(namespaces=[NS])
    body = module_pod(modules, "report")
    body["spec"]["containers"][0]["workingDir"] = str(tmp_path)
    cluster.create_pod(NS, body)
    with kubelet(cluster) as running:
        wait_for(ended(cluster))
        assert len(running.zygote_pids()) == 1
    assert report(cluster)["cwd"] == report(cluster)["path0"] == str(tmp_path)


@pytest.mark.parametrize(
    ("args", "exit_code", "at_least", "at_most"),
    [((), 143, 0.0, 0.9), (("stubborn",), 137, 1.0, 3.0)],
)
def test_a_deleted_forked_pod_gets_sigterm_then_sigkill_at_its_grace(
    modules: Path, args: tuple[str, ...], exit_code: int, at_least: float, at_most: float
) -> None:
    cluster = FakeCluster(namespaces=[NS])
    cluster.create_pod(NS, module_pod(modules, "sleeper", *args, terminationGracePeriodSeconds=1))
    watch = cluster.watch(NS)
    with kubelet(cluster) as running:
        wait_for(logged(cluster, "ready"))
        (pid,) = running.pids()
        began = time.monotonic()
        cluster.delete_pod(NS, "p")
        wait_for(lambda: cluster.pod(NS, "p") is None)
        took = time.monotonic() - began
        assert not alive(pid)
        assert len(running.zygote_pids()) == 1  # the zygote outlives its child
    assert at_least <= took <= at_most
    stopped = watch.events()[-2]["object"]
    assert stopped["status"]["phase"] == "Failed"
    assert terminated(stopped)["exitCode"] == exit_code


def test_a_forked_pod_outliving_its_deadline_is_stopped(modules: Path) -> None:
    cluster = FakeCluster(namespaces=[NS])
    cluster.create_pod(NS, module_pod(modules, "sleeper", activeDeadlineSeconds=1))
    with kubelet(cluster) as running:
        wait_for(logged(cluster, "ready"))
        (pid,) = running.pids()
        pod = wait_for(ended(cluster))
        assert not alive(pid)
    status = pod["status"]
    assert (status["phase"], status["reason"]) == ("Failed", "DeadlineExceeded")
    assert terminated(pod)["exitCode"] == 143


def test_a_module_whose_import_fails_runs_as_a_plain_process(modules: Path) -> None:
    cluster = FakeCluster(namespaces=[NS])
    cluster.create_pod(NS, module_pod(modules, "broken"))
    with kubelet(cluster, preload=("broken",)) as running:
        pod = wait_for(ended(cluster))
        assert running.zygote_pids() == []
        (note,) = running.zygote_notes
    assert "ImportError: broken on purpose" in note
    # What the plain process said: Python's own traceback of `python -m broken`.
    assert terminated(pod)["exitCode"] == 1
    assert "ImportError: broken on purpose" in cluster.pod_log(NS, "p", "base")


def test_a_zygote_that_dies_takes_its_child_and_later_pods_run_plain(modules: Path) -> None:
    cluster = FakeCluster(namespaces=[NS])
    cluster.create_pod(NS, module_pod(modules, "sleeper", name="a"))
    with kubelet(cluster) as running:
        wait_for(logged(cluster, "ready", "a"))
        (zygote,) = running.zygote_pids()
        (child,) = running.pids()
        os.kill(zygote, signal.SIGKILL)
        pod = wait_for(ended(cluster, "a"), seconds=5)
        wait_for(lambda: killed(child), seconds=5)
        cluster.create_pod(NS, module_pod(modules, "report", name="b"))
        wait_for(ended(cluster, "b"))
        assert running.zygote_pids() == []
    assert terminated(pod)["exitCode"] == 137
    assert report(cluster, "b")["ppid"] == os.getpid()  # a plain process of this kubelet
    assert any("failed" in note for note in running.zygote_notes)


def test_a_pod_stays_pending_while_its_zygote_imports(modules: Path) -> None:
    cluster = FakeCluster(namespaces=[NS])
    cluster.create_pod(NS, module_pod(modules, "slow"))
    with kubelet(cluster, preload=("slow",)) as running:
        waiting = wait_for(
            lambda: running.zygote_pids() and cluster.pod(NS, "p")["status"]  # type: ignore[index]
        )
        pod = wait_for(ended(cluster))
    assert waiting["phase"] == "Pending"  # nothing started yet
    assert all("waiting" in item["state"] for item in waiting.get("containerStatuses", []))
    assert pod["status"]["phase"] == "Succeeded"
    assert cluster.pod_log(NS, "p", "base") == "imported\n"  # the import's once, in the zygote


def test_at_most_four_zygotes_then_plain_processes(modules: Path) -> None:
    cluster = FakeCluster(namespaces=[NS])
    for number in range(5):
        cluster.create_pod(NS, module_pod(modules, "report", name=f"p{number}", end=str(number)))
    with kubelet(cluster) as running:
        for number in range(5):
            wait_for(ended(cluster, f"p{number}"))
        zygotes = running.zygote_pids()
    parents = [report(cluster, f"p{number}")["ppid"] for number in range(5)]
    assert len(zygotes) == 4
    assert sorted(parents) == sorted([*zygotes, os.getpid()])
    assert running.zygote_notes == ["4 zygotes run already: plain processes for another env"]


def test_an_env_naming_a_mount_runs_as_a_plain_process(modules: Path) -> None:
    # The mount's path is rewritten under the pod's own root: an import reading it would
    # read another pod's file in a shared zygote.
    cluster = FakeCluster(namespaces=[NS])
    body = module_pod(modules, "report")
    container = body["spec"]["containers"][0]
    container["env"].append({"name": "CONFIG", "value": "/etc/config/a.cfg"})
    container["volumeMounts"] = [{"name": "config", "mountPath": "/etc/config"}]
    body["spec"]["volumes"] = [{"name": "config", "emptyDir": {}}]
    cluster.create_pod(NS, body)
    with kubelet(cluster) as running:
        wait_for(ended(cluster))
        assert running.zygote_pids() == []
    seen = report(cluster)
    assert seen["ppid"] == os.getpid()
    assert seen["env"]["CONFIG"].startswith(seen["env"][POD_ROOT_VARIABLE])
    (note,) = running.zygote_notes
    assert "names a path under its own root" in note


def test_other_commands_run_as_plain_processes(modules: Path) -> None:
    cluster = FakeCluster(namespaces=[NS])
    cluster.create_pod(NS, module_pod(modules, "report", name="a"))  # not preloaded
    body = module_pod(modules, "report", name="b")
    body["spec"]["containers"][0]["args"] = ["python", "-c", "print('plain')"]
    cluster.create_pod(NS, body)
    with kubelet(cluster, preload=("sleeper",)) as running:
        wait_for(ended(cluster, "a"))
        wait_for(ended(cluster, "b"))
        assert running.zygote_pids() == []
    assert report(cluster, "a")["ppid"] == os.getpid()
    assert cluster.pod_log(NS, "b", "base") == "plain\n"


def test_stopping_the_kubelet_stops_the_zygotes_and_their_children(modules: Path) -> None:
    cluster = FakeCluster(namespaces=[NS])
    cluster.create_pod(NS, module_pod(modules, "sleeper", name="a"))
    cluster.create_pod(NS, module_pod(modules, "sleeper", "stubborn", name="b", end="1"))
    running = kubelet(cluster).start()
    wait_for(lambda: logged(cluster, "ready", "a")() and logged(cluster, "ready", "b")())
    pids = running.pids() + running.zygote_pids()
    assert len(pids) == 4
    began = time.monotonic()
    running.stop()
    assert time.monotonic() - began < 3
    assert [pid for pid in pids if alive(pid)] == []
    running.stop()  # twice is fine


@pytest.mark.parametrize(
    "value", ["report", ["ok", "not a module"], [1], ("a..b",), {"report": True}, None]
)
def test_preload_is_checked(value: Any) -> None:
    with pytest.raises(InvalidConfig) as raised:
        ProcessKubelet(FakeCluster(), preload=value)
    assert raised.value.field == "preload"


def test_preload_takes_module_names() -> None:
    assert ProcessKubelet(FakeCluster(), preload=["a.b", "c"]).preload == ("a.b", "c")
    assert ProcessKubelet(FakeCluster()).preload == ()
