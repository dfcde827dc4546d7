"""The kit's kubelet in process mode: each container's command runs as a local process.

No image is pulled: a container's ``command`` + ``args`` (the args alone when it has no
``command``, as an image whose entrypoint runs its arguments) run on the host, the first
word looked up in ``executables`` (``python`` and ``python3`` are this interpreter by
default, so ``python -m airflow.sdk.execution_time.execute_workload`` runs in the
environment that has Airflow) and then on the container's ``PATH``. What the container
sees is prepared by :mod:`k8s_workloads.testing._sandbox`: its ``env`` (values,
``secretKeyRef``, ``fieldRef``), ``envFrom`` Secrets, and its volumes under a temporary
root, every mount path rewritten in the command line and env (see there). The process
starts in its own session with the kubelet's environment (``inherit_env``) under the
container's, stdin closed.

The kubelet binds each new ``Pending`` pod to its node, runs the init containers one by
one, then the containers side by side, and writes statuses as a kubelet does (the shapes
of :mod:`k8s_workloads.testing._statuses`, the same as scripted mode): ``Running`` with
each container's ``startedAt``; each container ``terminated`` with its exit code (a
signal ``N`` is ``128 + N``), reason ``Completed`` or ``Error`` (``StartError``, 128, when
the command cannot start, or a container has neither command nor args), and the message
a kubelet gives it (:mod:`k8s_workloads.testing._termination`): what the process wrote to
its ``terminationMessagePath`` — a new empty file for each run, found at
``$K8S_WORKLOADS_POD_ROOT`` plus the path, the path in its command line and env rewritten
to it as a mount's — else, for ``terminationMessagePolicy: FallbackToLogsOnError`` and a
non-zero exit, the tail of its output (80 lines, 2048 bytes); then ``Succeeded`` if every
exit code is 0, else ``Failed``. Stdout and stderr
go, line by line, to the pod's log (:meth:`FakeCluster.append_log`), complete before the
container's end is written (a restarted container's runs follow one another there: the kit
keeps no per-run log, so there is no ``previous`` log).

Restarts follow the pod's ``restartPolicy`` (the API server defaults it to ``Always``: a
pod that should end says ``Never`` or ``OnFailure``), as the kubelet's (see
:mod:`k8s_workloads.testing._restarts`): a container whose exit the policy restarts
(``Always``: any; ``OnFailure``: non-zero; an init container: a failure, unless
``Never``) is written ``terminated`` with the pod still ``Running`` (an init container's
pod ``Pending``), then started again once its back-off is over — none after its first
exit, then ``restart_backoff`` seconds (10 by default, the kubelet's), doubling up to 30
times that — with ``restartCount`` one more and ``lastState`` the run before; while it
backs off it is ``waiting`` with reason ``CrashLoopBackOff``. The pod ends only when no
container will start again (or it is stopped: deleted, or past its deadline).

Stopping: a deleted pod's processes get SIGTERM, then SIGKILL when its grace period
(``deletionGracePeriodSeconds``) ends; the last status is written and the deletion
confirmed (:meth:`FakeCluster.finish_deletion`), once (a pod its finalizers hold stays).
A pod simply gone is stopped the same way, with nothing written. Every pod lives at most
``max_lifetime`` seconds (or its ``activeDeadlineSeconds``, if shorter): then it is
stopped the same way and ends ``Failed`` with reason ``DeadlineExceeded``. Signals go to
the process group, so a command's children stop too. :meth:`ProcessKubelet.stop` (or
leaving the ``with``) stops every process (SIGTERM, SIGKILL a second later), waits for
each and removes the temporary directories.

Preloading (``preload``, off by default): a container whose command is ``<python> -m
<module> args...`` with ``<module>`` preloaded runs as a fork of a *zygote*, an
interpreter that imported the module once with exactly the container's environment and
working directory (see :mod:`k8s_workloads.testing._zygote`): Airflow's task command
then costs a fork instead of seconds of imports. Its logs, exit codes, signals, grace
periods and deadlines are a plain process's; while the zygote imports, the container
has not started (the pod stays ``Pending``, as while an image is pulled). Whatever the
zygote cannot do (it failed to import, its imports started a :mod:`threading` thread,
it died, a fork could not be asked for or its child did not start, or a fifth
environment) runs as a plain process.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import attrs

from k8s_workloads import config_checks as _checks
from k8s_workloads.display import shown
from k8s_workloads.testing import _restarts, _sandbox, _statuses, _termination, _zygote
from k8s_workloads.testing.errors import ApiError
from k8s_workloads.testing.kubelet import DEFAULT_NODE, _KubeletBase

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping

    from k8s_workloads.pods.manifest import Manifest
    from k8s_workloads.testing.cluster import FakeCluster

__all__ = ["ProcessKubelet"]

_SHUTDOWN_SECONDS = 1.0
_READER_JOIN_SECONDS = 2.0
_DEADLINE_MESSAGE = "Pod was active on the node longer than the specified deadline"
# A module name `python -m` accepts: dotted Python identifiers (ASCII, as module files).
_MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def _preloaded(value: object) -> tuple[str, ...]:
    """``preload`` as a tuple of module names (a list or set of them is fine, one string
    is not: it would be read as its letters)."""
    if isinstance(value, (tuple, list, frozenset, set)) and all(
        isinstance(item, str) and _MODULE_NAME.match(item) for item in value
    ):
        return tuple(value)
    wanted = "a tuple of module names such as 'pkg.module'"
    raise _checks.InvalidConfig(
        "ProcessKubelet", "preload", f"must be {wanted}, got {shown(value)}"
    )


@attrs.define(eq=False)
class _Container:
    spec: Manifest
    name: str
    state: Manifest
    crash_loop: _restarts.CrashLoop
    process: subprocess.Popen[bytes] | _zygote.ForkedProcess | None = None
    reader: threading.Thread | None = None
    started: str = ""
    tail: deque[str] = attrs.field(factory=lambda: deque(maxlen=_termination.LOG_LINES))
    termination_file: Path | None = None  # this run's terminationMessagePath on the host
    restarts: int = 0
    last_state: Manifest = attrs.field(factory=dict)  # the run before (lastState)
    ended: Manifest = attrs.field(factory=dict)  # the run that ended, while it restarts
    exited_at: float = 0.0
    restart_at: float | None = None  # set while the container waits to start again

    @property
    def running(self) -> bool:
        # Started and not reaped; a reaped one waiting to restart is not running.
        return (
            self.process is not None and "terminated" not in self.state and self.restart_at is None
        )

    @property
    def exit_code(self) -> int | None:
        code = self.state.get("terminated", {}).get("exitCode")
        return code if isinstance(code, int) else None


@attrs.define(eq=False)
class _Run:
    pod: Manifest
    root: Path
    init: list[_Container]
    main: list[_Container]
    deadline: float
    grace: float
    started: str = ""
    stage: str = "preparing"  # preparing, init, running, ended
    volumes: dict[str, Path] | None = None
    waiting: str | None = None  # the last config error shown
    stop_at: float | None = None  # when SIGKILL follows the SIGTERM sent
    deleting: bool = False
    gone: bool = False
    reason: str | None = None
    message: str | None = None
    cleaned: bool = False

    @property
    def key(self) -> tuple[str, str]:
        metadata = self.pod["metadata"]
        return metadata["namespace"], metadata["name"]

    def containers(self) -> list[_Container]:
        return [*self.init, *self.main]


class ProcessKubelet(_KubeletBase):
    """Runs the cluster's pods as local processes (see the module's description).

    ``max_lifetime``: seconds a pod may run at most (default 600); ``executables``: the
    host programs that stand for a command's first word (default: ``python`` and
    ``python3`` are ``sys.executable``); ``inherit_env``: start from this process's
    environment (default) or from ``PATH`` alone; ``poll_seconds``: how often the thread
    looks (default 50 ms); ``preload``: modules whose ``python -m`` containers are forked
    from a zygote that imported them (default none); ``restart_backoff``: the first
    back-off before a container restarts (default 10 s; the longest is 30 times it).
    Thread-safe with the cluster; ``step`` is for one thread.
    """

    def __init__(
        self,
        cluster: FakeCluster,
        *,
        node_name: str = DEFAULT_NODE,
        poll_seconds: float = 0.05,
        max_lifetime: float = 600.0,
        executables: Mapping[str, str] | None = None,
        inherit_env: bool = True,
        preload: Collection[str] = (),
        restart_backoff: float = _restarts.INITIAL_BACKOFF_SECONDS,
    ) -> None:
        super().__init__(
            cluster, node_name=node_name, poll_seconds=poll_seconds, restart_backoff=restart_backoff
        )
        _checks.check(self, "max_lifetime", _checks.seconds, max_lifetime)
        _checks.check(self, "executables", _checks.optional_mapping, executables)
        _checks.check(self, "inherit_env", _checks.boolean, inherit_env)
        self.max_lifetime = float(max_lifetime)
        self.executables = dict(
            executables
            if executables is not None
            else {"python": sys.executable, "python3": sys.executable}
        )
        self.inherit_env = inherit_env
        self.preload = _preloaded(preload)
        self._zygotes = _zygote.ZygotePool(self.preload, root_variable=_sandbox.POD_ROOT_VARIABLE)
        self._runs: dict[str, _Run] = {}
        self._lock = threading.Lock()  # step, pids and stop may run on different threads

    # --- one look -------------------------------------------------------------------

    def step(self, now: float) -> int:
        """One look at the cluster at ``now`` (``time.monotonic()`` seconds): new pods
        start, ended processes are written, deadlines and grace periods enforced. Returns
        how many statuses it wrote and deletions it confirmed."""
        with self._lock:
            return self._step(now)

    def _step(self, now: float) -> int:
        written = 0
        present: set[str] = set()
        for pod, uid in self._my_pods(present):
            run = self._runs.get(uid)
            if pod["metadata"].get("deletionTimestamp"):
                if run is None:
                    written += self._finish(pod)  # nothing of it runs here
                    continue
                run.pod, run.deleting = pod, True
                self._stop(run, now, self._grace_seconds(pod))
            elif run is not None:
                run.pod = pod
            elif (pod.get("status") or {}).get("phase") == "Pending" and self._bind(pod):
                self._runs[uid] = self._new_run(pod, now)
        for uid, run in list(self._runs.items()):
            if uid not in present and not run.gone:
                run.gone = True
                self._stop(run, now, run.grace)
            written += self._tend(uid, run, now)
        self._forget(present)
        self._zygotes.tend()
        return written

    def _new_run(self, pod: Manifest, now: float) -> _Run:
        deadline = self.max_lifetime
        active = (pod.get("spec") or {}).get("activeDeadlineSeconds")
        if isinstance(active, int) and not isinstance(active, bool) and active > 0:
            deadline = min(deadline, float(active))

        def containers(key: str) -> list[_Container]:
            return [
                _Container(
                    spec,
                    str(spec.get("name", "")),
                    _statuses.waiting("PodInitializing"),
                    self._crash_loop(),
                )
                for spec in _statuses.containers(pod, key)
            ]

        run = _Run(
            pod,
            Path(tempfile.mkdtemp(prefix="k8s-workloads-pod-")),
            containers("initContainers"),
            containers("containers"),
            deadline=now + deadline,
            grace=self._grace_seconds(pod),
        )
        for container in run.main if not run.init else []:
            container.state = _statuses.waiting("ContainerCreating")
        return run

    def _tend(self, uid: str, run: _Run, now: float) -> int:
        written = 0
        if run.stage != "ended":
            if run.stop_at is None and now >= run.deadline:
                run.reason, run.message = "DeadlineExceeded", _DEADLINE_MESSAGE
                self._stop(run, now, run.grace)
            if run.stop_at is not None and now >= run.stop_at:
                self._signal(run, signal.SIGKILL)
            changed = self._reap(run, now)
            stopping = run.stop_at is not None
            if run.stage == "preparing":
                changed |= self._prepare(run, stopping=stopping)
            if run.stage == "init":
                changed |= self._advance_init(run, now, stopping=stopping)
            if run.stage == "running":
                changed |= self._advance_main(run, now, stopping=stopping)
            if changed and not run.gone:
                written += self._write(run.pod, self._status(run))
        if run.stage == "ended":
            self._cleanup(run)
            if run.gone or run.deleting:
                if run.deleting and not run.gone:
                    written += self._finish(run.pod)
                self._runs.pop(uid, None)
                self._ips.pop(uid, None)
        return written

    # --- starting -------------------------------------------------------------------

    def _lookup(self, run: _Run) -> Any:  # noqa: ANN401 - the sandbox's lookup callable
        namespace = run.key[0]
        return lambda name: self.cluster.secret(namespace, name)

    def _prepare(self, run: _Run, *, stopping: bool) -> bool:
        if stopping:
            run.stage = "ended"
            return True
        run.started = run.started or self._timestamp()
        try:
            run.volumes = _sandbox.prepare_volumes(run.pod, run.root, self._lookup(run))
        except _sandbox.ConfigError as error:
            # A Secret volume not there yet: ContainerCreating, tried again next look.
            if run.waiting == error.message:
                return False
            run.waiting = error.message
            for container in run.main:
                container.state = _statuses.waiting("ContainerCreating", error.message)
            return True
        run.stage = "init" if run.init else "running"
        return False

    def _advance_init(self, run: _Run, now: float, *, stopping: bool) -> bool:
        # One init container at a time: the first that has not completed with 0.
        current = next(
            (item for item in run.init if item.exit_code != 0 or item.restart_at is not None),
            None,
        )
        if current is None:
            run.stage = "running"
            return True
        if current.running:
            return False
        if stopping or (current.exit_code is not None and current.restart_at is None):
            run.stage = "ended"  # stopped, or failed for good (restartPolicy Never)
            return True
        if current.restart_at is not None:
            return self._restart_when_due(run, current, now)
        return self._start(run, current, now)

    def _advance_main(self, run: _Run, now: float, *, stopping: bool) -> bool:
        changed = False
        if not stopping:
            for container in run.main:
                if container.restart_at is not None:
                    changed |= self._restart_when_due(run, container, now)
                elif container.process is None and "waiting" in container.state:
                    changed |= self._start(run, container, now)
        done = all("terminated" in item.state and item.restart_at is None for item in run.main)
        if not any(item.running for item in run.main) and (done or stopping):
            run.stage = "ended"
            return True
        return changed

    # --- restarts -------------------------------------------------------------------

    def _exited(self, run: _Run, container: _Container, now: float) -> None:
        """The container's run ended (its ``terminated`` state is set): if the pod's
        ``restartPolicy`` restarts it, and the pod is not being stopped, it starts again
        after its back-off (none after its first exit), in a later look."""
        init = any(container is item for item in run.init)
        policy = _restarts.restart_policy(run.pod)
        if run.stop_at is None and _restarts.restarts(policy, container.exit_code, init=init):
            container.ended, container.exited_at = container.state, now
            container.restart_at = container.crash_loop.restart_at(now)

    def _restart_when_due(self, run: _Run, container: _Container, now: float) -> bool:
        """Start the container again once its back-off is over (not in the look that saw it
        exit: that one writes the ``terminated`` state); until then it is ``waiting``
        with reason ``CrashLoopBackOff``, its last run in ``lastState``."""
        assert container.restart_at is not None  # noqa: S101 - the callers check
        # A back-off, however short, is shown: the kubelet's sync after the exit finds the
        # container in it, before any restart.
        shown = container.restart_at == container.exited_at or "waiting" in container.state
        if now > container.exited_at and now >= container.restart_at and shown:
            container.restarts += 1
            container.last_state, container.restart_at = container.ended, None
            container.process = container.reader = None
            container.tail.clear()
            container.state = _statuses.waiting("ContainerCreating")  # until it starts
            self._start(run, container, now)
            return True
        if now <= container.exited_at or "waiting" in container.state:
            return False
        waited = container.restart_at - container.exited_at
        message = _restarts.crash_loop_message(waited, container.name, run.pod)
        container.state = _statuses.waiting("CrashLoopBackOff", message)
        container.last_state = container.ended
        return True

    def _start(self, run: _Run, container: _Container, now: float) -> bool:
        """Start the container's process; False if it still cannot (the same error)."""
        assert run.volumes is not None  # noqa: S101 - prepared before any start
        base = dict(os.environ) if self.inherit_env else {"PATH": os.environ.get("PATH", "")}
        try:
            prepared = _sandbox.prepare(
                run.pod,
                container.spec,
                root=run.root,
                volumes=run.volumes,
                lookup=self._lookup(run),
                base_env=base,
                executables=self.executables,
            )
        except _sandbox.ConfigError as error:
            before = container.state
            container.state = _statuses.waiting(error.reason, error.message)
            return container.state != before
        forked = self._zygotes.spawn(prepared.argv, prepared.env, prepared.cwd)
        if forked is _zygote.STARTING:
            return False  # the zygote still imports: the container waits, as for its image
        container.started = self._timestamp()
        container.termination_file = prepared.termination_file
        try:
            if not prepared.argv:
                raise FileNotFoundError("no command or args to run")
            process = forked or subprocess.Popen(  # noqa: S603 - the pod's own command
                prepared.argv,
                env=prepared.env,
                cwd=prepared.cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as error:
            word = prepared.argv[0] if prepared.argv else ""
            container.state = self._ended(
                run,
                container,
                128,
                reason="StartError",
                message=f'exec: "{word}": {error.strerror or error}',
            )
            self._exited(run, container, now)
            return True
        container.process = process
        container.state = _statuses.running(container.started)
        assert process.stdout is not None  # noqa: S101 - stdout=PIPE
        container.reader = threading.Thread(
            target=self._pump,
            args=(run.key, container, process.stdout),
            name=f"k8s-workloads-log-{container.name}",
            daemon=True,
        )
        container.reader.start()
        return True

    def _pump(self, where: tuple[str, str], container: _Container, stream: IO[bytes]) -> None:
        with stream:
            for raw in iter(stream.readline, b""):
                text = raw.decode(errors="replace")
                container.tail.append(text)
                with contextlib.suppress(ApiError, KeyError):
                    self.cluster.append_log(*where, container.name, text)

    # --- ending ---------------------------------------------------------------------

    def _ended(
        self,
        run: _Run,
        container: _Container,
        code: int,
        *,
        reason: str | None = None,
        message: str | None = None,
    ) -> Manifest:
        where = container.termination_file
        written = None if where is None else _termination.read_message_file(where)
        message = _termination.termination_message(
            container.spec,
            exit_code=code,
            reason=reason,
            written=written,
            log_lines=list(container.tail),
            runtime_message=message,
        )
        return _statuses.terminated(
            str(run.pod["metadata"]["uid"]),
            container.name,
            exit_code=code,
            started=container.started or run.started,
            finished=self._timestamp(),
            reason=reason,
            message=message,
            attempt=container.restarts,
        )

    def _reap(self, run: _Run, now: float) -> bool:
        changed = False
        for container in run.containers():
            process = container.process
            if (
                process is None
                or "terminated" in container.state
                or container.restart_at is not None
            ):
                continue  # not started, or reaped (and maybe backing off to restart)
            code = process.poll()
            if code is None:
                continue
            # What the command left behind in its group goes with it.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            if container.reader is not None:
                container.reader.join(timeout=_READER_JOIN_SECONDS)
            container.state = self._ended(run, container, code if code >= 0 else 128 - code)
            self._exited(run, container, now)
            changed = True
        return changed

    def _stop(self, run: _Run, now: float, grace: float) -> None:
        if run.stop_at is None:
            run.stop_at = now + grace
            self._signal(run, signal.SIGTERM)

    @staticmethod
    def _signal(run: _Run, number: signal.Signals) -> None:
        for container in run.containers():
            if container.process is not None and container.process.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(container.process.pid, number)

    def _status(self, run: _Run) -> Manifest:
        main = [item.state for item in run.main]
        if run.stage == "ended":
            codes = [item.exit_code for item in run.containers()]
            clean = all(code in {0, None} for code in codes) and None not in codes[len(run.init) :]
            phase = "Succeeded" if clean and run.reason is None else "Failed"
        elif run.stage == "running" and any(
            "waiting" not in item.state or item.last_state for item in run.main
        ):
            phase = "Running"  # a container backing off to restart has run (getPhase)
        else:
            phase = "Pending"
        uid = str(run.pod["metadata"]["uid"])
        return _statuses.pod_status(
            run.pod,
            uid,
            phase=phase,
            states=main,
            init_states=[item.state for item in run.init],
            started=run.started or self._timestamp(),
            at=self._timestamp(),
            pod_ip=self._ip(uid),
            reason=run.reason if phase == "Failed" else None,
            message=run.message if phase == "Failed" else None,
            restarts={
                item.name: (item.restarts, item.last_state)
                for item in run.containers()
                if item.restarts or item.last_state
            },
        )

    @staticmethod
    def _cleanup(run: _Run) -> None:
        if not run.cleaned:
            shutil.rmtree(run.root, ignore_errors=True)
            run.cleaned = True

    # --- stopping the kubelet ---------------------------------------------------------

    def stop(self) -> None:
        """Stop the thread, then every process (SIGTERM; SIGKILL a second later) and
        the zygotes, and remove the pods' directories. Safe to call twice."""
        super().stop()
        with self._lock:
            self._stop_every_process()

    def _stop_every_process(self) -> None:
        runs = list(self._runs.values())
        for run in runs:
            self._signal(run, signal.SIGTERM)
        until = time.monotonic() + _SHUTDOWN_SECONDS
        for run in runs:
            for container in run.containers():
                process = container.process
                if process is None:
                    continue
                try:
                    process.wait(timeout=max(0.0, until - time.monotonic()))
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)
                if container.reader is not None:
                    container.reader.join(timeout=_READER_JOIN_SECONDS)
            self._cleanup(run)
        self._runs.clear()
        self._zygotes.close()

    def pids(self) -> list[int]:
        """The process ids of every container process started and not yet reaped."""
        with self._lock:
            return self._pids()

    def _pids(self) -> list[int]:
        return [
            container.process.pid
            for run in self._runs.values()
            for container in run.containers()
            if container.process is not None and container.process.returncode is None
        ]

    def zygote_pids(self) -> list[int]:
        """The process ids of the zygotes running (``preload``)."""
        with self._lock:
            return self._zygotes.pids()

    @property
    def zygote_notes(self) -> list[str]:
        """What the zygotes could not do, once each (those containers ran plain)."""
        return list(self._zygotes.notes)
