"""The process kubelet's zygotes (``preload``): a ``python -m`` container forked from an
interpreter that imported its module, held to what the same container does as a plain
process: logs, exit codes, env and cwd, signals, deadlines, fallbacks, no process left."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import resource
import select
import signal
import socket
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from k8s_workloads import InvalidConfig
from k8s_workloads.testing import FakeCluster, _zygote
from k8s_workloads.testing._sandbox import POD_ROOT_VARIABLE
from k8s_workloads.testing._zygote import ForkedProcess, _Zygote
from k8s_workloads.testing.process_kubelet import ProcessKubelet
from tests.support.kit_processes import NS, delete_running_pod, ended, logged, pod_with, wait_for
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
INTERRUPTED = """
import atexit, sys

if __name__ == "__main__":
    atexit.register(print, "atexit ran")
    print("buffered")  # a pipe: block-buffered until the interpreter flushes it
    raise KeyboardInterrupt
"""
HOOKED = """
import sys


def hook(kind, value, trace):
    print("the hook saw", kind.__name__, file=sys.stderr)


if __name__ == "__main__":
    sys.excepthook = hook
    raise ValueError("shown by the hook")
"""
# Each fork waits in the child before it reaches the zygote's code (as a slow at-fork
# hook of an imported library would).
SLOW_FORK = """
import os, time

os.register_at_fork(after_in_child=lambda: time.sleep(0.5))
if __name__ == "__main__":
    time.sleep(60)
"""
# Each fork's child is stuck before the zygote's code (an at-fork hook that waits far
# longer than a child may take to start its session); it writes its pid first.
STUCK_FORK = """
import os, time

def _stuck():
    with open(os.environ["STUCK"], "a") as pids:
        pids.write(f"{os.getpid()}\\n")
    time.sleep(60)

os.register_at_fork(after_in_child=_stuck)
"""
THREADED = """
import threading, time

threading.Thread(target=time.sleep, args=(60,), name="busy", daemon=True).start()
if __name__ == "__main__":
    print("ran")
"""
# Counts its imports as a module (not its runs as __main__) in the file IMPORTS names.
COUNTED = """
import os

if __name__ != "__main__":
    with open(os.environ["IMPORTS"], "a") as imports:
        imports.write(f"{os.getpid()}\\n")
else:
    print("ran", os.getppid())
"""
DOTTED = "import json, os\nprint(json.dumps([__name__, os.getppid()]))\n"


@pytest.fixture
def modules(tmp_path: Path) -> Path:
    """A directory with the modules the pods run (on their PYTHONPATH)."""
    texts = {
        "report": REPORT,
        "sleeper": SLEEPER,
        "broken": BROKEN,
        "slow": SLOW,
        "interrupted": INTERRUPTED,
        "hooked": HOOKED,
        "slow_fork": SLOW_FORK,
        "stuck_fork": STUCK_FORK,
        "threaded": THREADED,
        "counted": COUNTED,
    }
    for name, text in texts.items():
        (tmp_path / f"{name}.py").write_text(text)
    (tmp_path / "package").mkdir()
    (tmp_path / "package" / "__init__.py").write_text("")
    (tmp_path / "package" / "dotted.py").write_text(DOTTED)
    return tmp_path


@pytest.fixture
def zygote_of(modules: Path) -> Iterator[Callable[..., _Zygote]]:
    """Start a ready zygote preloading the modules named (END=3 in its env), seen from
    the kubelet's side; each is closed at the end."""
    started: list[_Zygote] = []

    def start(*preloaded: str, env: dict[str, str] | None = None) -> _Zygote:
        env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(modules), "END": "3"} | (env or {})
        zygote = _Zygote(sys.executable, preloaded, env, None, None)
        started.append(zygote)

        def imported() -> bool:
            zygote.refresh()
            return zygote.state != "starting"

        wait_for(imported)
        assert zygote.state == "ready", zygote.failure
        return zygote

    try:
        yield start
    finally:
        for zygote in started:
            zygote.close()


def no_descriptor_left(*_: object) -> NoReturn:
    raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))


def fork(zygote: _Zygote, module: str, own_env: Any = None) -> ForkedProcess:
    child = zygote.spawn(module, [], own_env or {}, str(zygote.root))
    assert child is not None
    return child


def terminated_unread(zygote: _Zygote, child: ForkedProcess) -> None:
    """SIGTERM the running ``child`` (started: its start was read), then wait until the
    zygote's word of its exit is on the socket, read by no one yet."""
    assert child.returncode is None
    os.kill(child.pid, signal.SIGTERM)
    assert zygote.channel is not None
    assert select.select([zygote.channel], [], [], 10)[0]


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
    ("args", "exit_code", "at_least"), [((), 143, 0.0), (("stubborn",), 137, 1.0)]
)
def test_a_deleted_forked_pod_gets_sigterm_then_sigkill_at_its_grace(
    modules: Path, args: tuple[str, ...], exit_code: int, at_least: float
) -> None:
    cluster = FakeCluster(namespaces=[NS])
    cluster.create_pod(NS, module_pod(modules, "sleeper", *args, terminationGracePeriodSeconds=1))
    watch = cluster.watch(NS)
    with kubelet(cluster) as running:
        took = delete_running_pod(cluster, running)
        assert len(running.zygote_pids()) == 1  # the zygote outlives its child
    assert took >= at_least  # SIGKILL only once the grace period ended
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
    with kubelet(cluster) as running:
        wait_for(lambda: logged(cluster, "ready", "a")() and logged(cluster, "ready", "b")())
        pids = running.pids() + running.zygote_pids()
        assert len(pids) == 4
        running.stop()
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


def test_a_preloaded_module_is_imported_once_for_all_its_containers(modules: Path) -> None:
    imports = modules / "imports.txt"
    cluster = FakeCluster(namespaces=[NS])
    for name in "ab":
        body = module_pod(modules, "counted", name=name)
        body["spec"]["containers"][0]["env"].append({"name": "IMPORTS", "value": str(imports)})
        cluster.create_pod(NS, body)
    with kubelet(cluster, preload=("counted",)) as running:
        for name in "ab":
            wait_for(ended(cluster, name))
        (zygote,) = running.zygote_pids()
    assert imports.read_text() == f"{zygote}\n"  # by the zygote, not again by a child
    for name in "ab":
        assert cluster.pod_log(NS, name, "base") == f"ran {zygote}\n"


@pytest.mark.parametrize("preload", [("interrupted",), ()])
def test_a_keyboard_interrupt_flushes_and_runs_atexit_then_ends_by_sigint(
    modules: Path, preload: tuple[str, ...]
) -> None:
    cluster = FakeCluster(namespaces=[NS])
    cluster.create_pod(NS, module_pod(modules, "interrupted"))
    with kubelet(cluster, preload=preload) as running:
        pod = wait_for(ended(cluster))
        assert len(running.zygote_pids()) == len(preload)
    log = cluster.pod_log(NS, "p", "base")
    assert terminated(pod)["exitCode"] == 128 + signal.SIGINT
    # The traceback flushes stdout first; atexit's print is flushed at the end.
    assert log.startswith("buffered\nTraceback")
    assert log.endswith("\nKeyboardInterrupt\natexit ran\n")


@pytest.mark.parametrize("preload", [("hooked",), ()])
def test_an_uncaught_error_is_shown_by_sys_excepthook(
    modules: Path, preload: tuple[str, ...]
) -> None:
    cluster = FakeCluster(namespaces=[NS])
    cluster.create_pod(NS, module_pod(modules, "hooked"))
    with kubelet(cluster, preload=preload) as running:
        pod = wait_for(ended(cluster))
        assert len(running.zygote_pids()) == len(preload)
    assert terminated(pod)["exitCode"] == 1
    assert cluster.pod_log(NS, "p", "base") == "the hook saw ValueError\n"


def test_a_dotted_module_runs_as_main_without_runpys_warning(modules: Path) -> None:
    cluster = FakeCluster(namespaces=[NS])
    body = module_pod(modules, "package.dotted")
    body["spec"]["containers"][0]["env"].append(
        {"name": "PYTHONWARNINGS", "value": "always"}  # the warning shown, were it raised
    )
    cluster.create_pod(NS, body)
    with kubelet(cluster, preload=("package.dotted",)) as running:
        pod = wait_for(ended(cluster))
        (zygote,) = running.zygote_pids()
    assert pod["status"]["phase"] == "Succeeded"
    assert cluster.pod_log(NS, "p", "base") == json.dumps(["__main__", zygote]) + "\n"


def test_a_failed_zygote_lets_its_running_containers_end_as_they_would(
    modules: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = FakeCluster(namespaces=[NS])
    watch = cluster.watch(NS)
    cluster.create_pod(NS, module_pod(modules, "sleeper", name="a"))
    with kubelet(cluster) as running:
        wait_for(logged(cluster, "ready", "a"))
        (child,) = running.pids()
        (zygote,) = running.zygote_pids()
        monkeypatch.setattr(_zygote, "_REPLY_SECONDS", 0.0)  # the next fork: no answer
        cluster.create_pod(NS, module_pod(modules, "report", name="b"))
        wait_for(ended(cluster, "b"))
        assert report(cluster, "b")["ppid"] == os.getpid()  # plain: the zygote failed
        assert alive(child)
        assert cluster.pod(NS, "a")["status"]["phase"] == "Running"  # type: ignore[index]
        assert running.zygote_pids() == [zygote]  # kept while its child runs
        cluster.delete_pod(NS, "a")
        wait_for(lambda: cluster.pod(NS, "a") is None)
        wait_for(lambda: running.zygote_pids() == [])  # closed once its child ended
    stopped = watch.events()[-2]["object"]  # the last status before the deletion
    assert stopped["metadata"]["name"] == "a"
    assert terminated(stopped)["exitCode"] == 128 + signal.SIGTERM
    assert any("a fork was not answered" in note for note in running.zygote_notes)


def test_a_module_whose_import_starts_a_thread_runs_as_a_plain_process(modules: Path) -> None:
    cluster = FakeCluster(namespaces=[NS])
    cluster.create_pod(NS, module_pod(modules, "threaded"))
    with kubelet(cluster, preload=("threaded",)) as running:
        wait_for(ended(cluster))
        wait_for(lambda: running.zygote_pids() == [])
    assert cluster.pod_log(NS, "p", "base") == "ran\n"
    (note,) = running.zygote_notes
    assert "the imports started threads, forking is unsafe: busy" in note


def test_a_fork_that_cannot_be_asked_for_runs_the_container_plain(
    modules: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_Zygote, "spawn", no_descriptor_left)
    cluster = FakeCluster(namespaces=[NS])
    for name in "ab":
        cluster.create_pod(NS, module_pod(modules, "report", name=name))
    with kubelet(cluster) as running:
        for name in "ab":
            wait_for(ended(cluster, name))
    assert [report(cluster, name)["ppid"] for name in "ab"] == [os.getpid()] * 2
    (note,) = running.zygote_notes  # said once
    assert os.strerror(errno.EMFILE) in note


def test_a_child_has_its_own_session_once_it_is_started(
    zygote_of: Callable[..., _Zygote],
) -> None:
    zygote = zygote_of("slow_fork")
    child = fork(zygote, "slow_fork")
    os.killpg(child.pid, signal.SIGTERM)  # at once, as a deletion right after the start
    assert child.wait(timeout=10) == -signal.SIGTERM


def test_a_childs_exit_said_just_before_the_zygote_died_is_its_status(
    zygote_of: Callable[..., _Zygote],
) -> None:
    zygote = zygote_of("sleeper")
    child = fork(zygote, "sleeper")
    terminated_unread(zygote, child)
    os.kill(zygote.pid, signal.SIGKILL)
    zygote.process.wait()  # its exit and the socket's end now come in one read
    assert child.poll() == -signal.SIGTERM
    assert zygote.state == "dead"


def test_wait_with_no_time_left_reads_what_is_there(zygote_of: Callable[..., _Zygote]) -> None:
    zygote = zygote_of("sleeper")
    child = fork(zygote, "sleeper")
    terminated_unread(zygote, child)
    assert child.wait(timeout=0) == -signal.SIGTERM


def test_a_socket_numbered_over_1023_is_waited_on(zygote_of: Callable[..., _Zygote]) -> None:
    zygote = zygote_of("report")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 2048)), hard))
    try:
        assert zygote.channel is not None
        high = socket.socket(fileno=os.dup2(zygote.channel.fileno(), 2000))
        zygote.channel.close()
        zygote.channel = high  # as in a kubelet holding many descriptors
        child = fork(zygote, "report")
        assert child.wait(timeout=10) == 3
    finally:
        zygote.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_closing_a_zygote_that_exited_signals_no_stale_pid(
    zygote_of: Callable[..., _Zygote], monkeypatch: pytest.MonkeyPatch
) -> None:
    zygote = zygote_of("sleeper")
    child = fork(zygote, "sleeper")
    signalled: list[int] = []
    real = os.killpg

    def recorded(pid: int, number: int) -> None:
        signalled.append(pid)
        real(pid, number)

    monkeypatch.setattr(os, "killpg", recorded)
    zygote.close()  # the zygote kills and reaps its child, then exits
    assert zygote.process.returncode == 0
    assert signalled == []
    assert child.returncode == -signal.SIGKILL
    assert killed(child.pid)


def test_a_child_failing_before_its_module_runs_says_why(
    zygote_of: Callable[..., _Zygote],
) -> None:
    zygote = zygote_of("report")
    child = fork(zygote, "report", own_env={"NOT_TEXT": 1})  # os.environ refuses it
    assert child.stdout is not None
    with child.stdout:
        said = child.stdout.read().decode()
    assert child.wait(timeout=10) == 1
    assert said.count("\n") == 1
    assert said.startswith("the zygote could not start the container: TypeError(")


def test_a_zygote_that_cannot_be_set_up_leaves_no_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.setattr(socket, "socketpair", no_descriptor_left)
    with pytest.raises(OSError, match=os.strerror(errno.EMFILE)):
        _Zygote(sys.executable, ("report",), {}, None, None)
    assert list((tmp_path / "tmp").iterdir()) == []


def test_a_child_stuck_before_its_session_is_killed_and_its_fork_refused(
    zygote_of: Callable[..., _Zygote], tmp_path: Path
) -> None:
    pids = tmp_path / "stuck.txt"
    zygote = zygote_of("stuck_fork", env={"STUCK": str(pids)})
    assert zygote.spawn("stuck_fork", [], {}, str(zygote.root)) is None  # run plain
    (pid,) = map(int, pids.read_text().split())
    assert killed(pid)  # killed and reaped by the zygote before it answered
    assert zygote.state == "ready"  # the zygote itself goes on


def test_closing_a_zygote_killed_by_a_signal_kills_its_children(
    zygote_of: Callable[..., _Zygote],
) -> None:
    zygote = zygote_of("sleeper")
    child = fork(zygote, "sleeper")
    try:
        os.kill(zygote.pid, signal.SIGKILL)  # as the OOM killer: its children live on
        zygote.process.wait()
        zygote.close()
        assert child.returncode == -signal.SIGKILL
        wait_for(lambda: killed(child.pid), seconds=5)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
