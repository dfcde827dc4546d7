"""Zygotes for the process kubelet: ``python -m <module>`` containers forked after the import.

A *zygote* is a long-lived interpreter that imports the preloaded modules once and then
forks one child per container, as Airflow's own task supervisor forks its task runner
after importing everything. Importing ``airflow.sdk.execution_time.execute_workload``
costs seconds of CPU; a fork costs milliseconds.

The kubelet side (:class:`ZygotePool`) runs a container as a fork when its command is
``<executable> -m <module> args...`` with ``<module>`` preloaded. One zygote per
*signature*: the executable, the container's environment without the kit's per-container
root (:data:`~k8s_workloads.testing._sandbox.POD_ROOT_VARIABLE`) and its working directory
(the container's own root counts as "its root"), so every pod of one template shares
one. The zygote starts with exactly that environment and working directory, its own
temporary directory standing for the container's root, so what a module reads at import
(Airflow reads ``AIRFLOW__*`` then) is what the container would read. A container whose
environment names a path under its own root, a fifth signature, a zygote that did not
start, whose import failed, that died or stopped answering, a fork that cannot be
asked for: the container runs as a plain process, and the pool says so once (``notes``,
and a warning on this module's logger). A failed zygote forks nothing more, but the
containers it runs end as they would: it is closed after them (:meth:`ZygotePool.tend`).

The zygote's side, what a forked child does and the messages on the socket:
:mod:`k8s_workloads.testing._zygote_serve`. :class:`ForkedProcess` gives the kubelet
``pid``, ``poll``, ``wait`` and ``returncode`` as a ``Popen`` does. Closing the pool
closes each zygote's socket: a zygote kills what it still runs and exits (SIGKILL a
second later if it does not; then the pool kills the children it knew).
"""

from __future__ import annotations

import contextlib
import enum
import logging
import os
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections import deque
from pathlib import Path
from typing import IO, TYPE_CHECKING, Literal

from k8s_workloads.testing import _zygote_serve
from k8s_workloads.testing._zygote_serve import HEADER, Message, frame, frames

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping

__all__ = ["STARTING", "ForkedProcess", "Starting", "ZygotePool"]

_log = logging.getLogger("k8s_workloads.testing.process_kubelet")

ZYGOTE_LIMIT = 4
"""Zygotes a pool runs at most (one per signature); further signatures run plain."""
_START_SECONDS = 180.0  # an import slower than this on a loaded machine: plain processes
# A fork is answered in milliseconds (a child stuck before its session is refused after
# SESSION_SECONDS): silence past this means a stuck zygote.
_REPLY_SECONDS = _zygote_serve.SESSION_SECONDS + 5.0
_CLOSE_SECONDS = 1.0
_WAIT_SLICE = 0.1
# The zygote runs the serving file, not the package: the container's environment need
# not import k8s_workloads, and its sys.path[0] is then the working directory (not this
# directory, whose selectors.py would shadow the standard module).
_SERVE = _zygote_serve.__file__
_BOOTSTRAP = (
    "import sys\n"
    "path = sys.argv[1]\n"
    "with open(path, encoding='utf-8') as source:\n"
    "    code = compile(source.read(), path, 'exec')\n"
    "exec(code, {'__name__': '__zygote__'})\n"
)


class Starting(enum.Enum):
    """The one value :data:`STARTING`."""

    STARTING = "starting"


STARTING = Starting.STARTING
"""What :meth:`ZygotePool.spawn` answers while the container's zygote still imports."""


class ForkedProcess:
    """A container process a zygote forked: the part of ``Popen``'s interface the
    kubelet uses (``returncode`` is negative for a signal, as there)."""

    def __init__(self, zygote: _Zygote, pid: int, stdout: IO[bytes]) -> None:
        self._zygote = zygote
        self.pid = pid
        self.stdout: IO[bytes] | None = stdout
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """The exit code if the process ended, else None."""
        if self.returncode is None:
            self._zygote.collect(0.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """The exit code once the process ended; ``subprocess.TimeoutExpired`` after
        ``timeout`` seconds."""
        until = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            if self._zygote.channel is None:  # the zygote ended: its children were killed
                self.returncode = -signal.SIGKILL
                break
            left = _WAIT_SLICE if until is None else until - time.monotonic()
            self._zygote.collect(max(0.0, min(left, _WAIT_SLICE)))  # read at least once
            if left <= 0 and self.poll() is None:
                raise subprocess.TimeoutExpired(f"zygote child {self.pid}", timeout or 0.0)
        return self.returncode


class _Zygote:
    """One zygote process and its socket, seen from the kubelet."""

    def __init__(
        self,
        executable: str,
        modules: Collection[str],
        env: Mapping[str, str],
        cwd: str | None,
        root_variable: str | None,
    ) -> None:
        self.state: Literal["starting", "ready", "failed", "dead"] = "starting"
        self.failure = ""
        self.began = time.monotonic()
        self._buffer = bytearray()
        self._replies: deque[Message] = deque()
        self._children: dict[int, ForkedProcess] = {}
        self._early: dict[int, int] = {}  # exits read before their start was answered
        self._lock = threading.RLock()
        self.channel: socket.socket | None = None
        # The zygote's own directory stands for a container's root (and working
        # directory, when the containers start in theirs).
        self.root = Path(tempfile.mkdtemp(prefix="k8s-workloads-zygote-"))
        own = {} if root_variable is None else {root_variable: str(self.root)}
        with contextlib.ExitStack() as closing:
            try:
                self.channel, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
                closing.enter_context(theirs)
                log = closing.enter_context((self.root / "zygote.log").open("wb"))
                self.process = subprocess.Popen(  # noqa: S603 - the container's interpreter
                    [executable, "-c", _BOOTSTRAP, _SERVE, str(theirs.fileno()), *modules],
                    env={**env, **own},
                    cwd=cwd if cwd is not None else self.root,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    pass_fds=(theirs.fileno(),),
                    start_new_session=True,
                )
            except BaseException:  # not started: nothing of it may stay
                if self.channel is not None:
                    self.channel.close()
                    self.channel = None
                shutil.rmtree(self.root, ignore_errors=True)
                raise

    @property
    def pid(self) -> int:
        return self.process.pid

    def collect(self, timeout: float) -> None:
        """Read what the zygote said (waiting up to ``timeout`` seconds for something)."""
        with self._lock:
            channel = self.channel
            if channel is None:
                return
            # poll, not select: this process may hold more than 1023 descriptors.
            watched = select.poll()
            watched.register(channel, select.POLLIN)
            if not watched.poll(max(0, round(timeout * 1000))):
                return
            ended = False
            while not ended:
                try:
                    data = channel.recv(65536, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    break
                except OSError:
                    data = b""
                ended = not data
                self._buffer += data
            # What the zygote said before it ended first: a child's exit sent just
            # before comes in the same read as the end, and is its real status.
            for message in frames(self._buffer):
                self._take(message)
            if ended:
                self._lost()

    def _take(self, message: Message) -> None:
        if "ready" in message:
            self.state = "ready"
        elif "failed" in message:
            self.state, self.failure = "failed", str(message["failed"])
        elif "exited" in message:
            pid, status = int(message["exited"]), int(message["status"])
            child = self._children.pop(pid, None)
            if child is None:
                self._early[pid] = status
            else:
                child.returncode = os.waitstatus_to_exitcode(status)
        else:
            self._replies.append(message)

    def _lost(self) -> None:
        """The socket closed: the zygote ended. What it still ran is killed (its exit
        status can no longer be read)."""
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        # A zygote ending by itself (status 0) killed and reaped its children already;
        # its socket closes as it exits.
        try:
            code = self.process.wait(timeout=_CLOSE_SECONDS)
        except subprocess.TimeoutExpired:
            code = None
        self._end_children(kill=code != 0)

    def _end_children(self, *, kill: bool) -> None:
        """The zygote is gone: its children are too (SIGKILLed here if ``kill``: a
        zygote that was killed could not), and it is dead unless it had failed."""
        for pid, child in self._children.items():
            if kill:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)
            child.returncode = -signal.SIGKILL
        self._children.clear()
        if self.state in {"starting", "ready"}:
            self.state = "dead"

    @property
    def running_children(self) -> bool:
        """Whether a container forked from it may still run."""
        return bool(self._children)

    def refresh(self) -> None:
        """Read what is there; a zygote still importing after its time is given up."""
        self.collect(0.0)
        if self.state == "starting" and time.monotonic() - self.began > _START_SECONDS:
            self.state, self.failure = "failed", f"not ready after {_START_SECONDS:.0f} s"

    def spawn(
        self, module: str, args: list[str], own_env: Mapping[str, str], cwd: str
    ) -> ForkedProcess | None:
        """A :class:`ForkedProcess` running the container, or None if the zygote could
        not fork it."""
        with self._lock:
            if self.channel is None or self.state != "ready":
                return None
            reading, writing = os.pipe()
            body = {"module": module, "args": args, "own_env": dict(own_env), "cwd": cwd}
            try:
                framed = frame(body)
                socket.send_fds(self.channel, [framed[: HEADER.size]], [writing])
                self.channel.sendall(framed[HEADER.size :])
            except OSError:
                os.close(reading)
                self._lost()
                return None
            finally:
                os.close(writing)
            reply: Message = {}
            try:
                reply = self._reply()
            finally:
                if "started" not in reply:
                    os.close(reading)
            if "started" not in reply:
                if "refused" in reply:
                    _log.warning("the zygote could not fork: %s", reply["refused"])
                return None
            pid = int(reply["started"])
            child = ForkedProcess(self, pid, os.fdopen(reading, "rb"))
            if pid in self._early:
                child.returncode = os.waitstatus_to_exitcode(self._early.pop(pid))
            else:
                self._children[pid] = child
            return child

    def _reply(self) -> Message:
        """The zygote's answer to the request sent; ``{}`` if it ended, or if none came
        in time (then it is failed)."""
        until = time.monotonic() + _REPLY_SECONDS
        while not self._replies and self.channel is not None:
            left = until - time.monotonic()
            if left <= 0:
                self.state, self.failure = "failed", "a fork was not answered"
                break
            self.collect(left)
        return self._replies.popleft() if self._replies else {}

    def close(self) -> None:
        """Close the socket (the zygote kills its children and exits), SIGKILL it a
        second later if need be, remove its directory."""
        with self._lock:
            channel, self.channel = self.channel, None
            if channel is not None:
                channel.close()
            killed = False
            try:
                self.process.wait(timeout=_CLOSE_SECONDS)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
                killed = True
            # A zygote that exited killed and reaped its children: their pids are stale.
            # One ended by a signal (SIGKILLed here, or by the OOM killer) did neither.
            self._end_children(kill=killed or (self.process.returncode or 0) < 0)
            shutil.rmtree(self.root, ignore_errors=True)


Signature = tuple[str, frozenset[tuple[str, str]], str | None]


class ZygotePool:
    """The kubelet's zygotes, one per signature (see the module's description).

    ``modules``: the modules preloaded (each zygote imports them all); ``root_variable``:
    the environment variable naming a container's own root, which may differ between
    containers of one signature.
    """

    def __init__(
        self, modules: Collection[str], *, root_variable: str, limit: int = ZYGOTE_LIMIT
    ) -> None:
        self.modules = tuple(modules)
        self.root_variable = root_variable
        self.limit = limit
        self.notes: list[str] = []
        self._zygotes: dict[Signature, _Zygote] = {}
        self._refused: set[Signature] = set()
        self._retired: list[_Zygote] = []  # failed, closed once their children ended

    def _note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)
            _log.warning("process kubelet: %s", text)

    def signature(self, argv: list[str], env: Mapping[str, str], cwd: str) -> Signature | None:
        """The zygote a container's command can fork from, or None: not ``-m`` of a
        preloaded module, or its environment or working directory names its own root
        otherwise than as the root variable."""
        if len(argv) < 3 or argv[1] != "-m" or argv[2] not in self.modules:
            return None
        own = env.get(self.root_variable)
        shared = {name: value for name, value in env.items() if name != self.root_variable}
        if own and any(own in value for value in shared.values()):
            self._note(f"{argv[2]}: its env names a path under its own root: plain processes")
            return None
        if own and cwd != own and cwd.startswith(own):
            return None
        return argv[0], frozenset(shared.items()), None if cwd == own else cwd

    def spawn(
        self, argv: list[str], env: Mapping[str, str], cwd: str
    ) -> ForkedProcess | Starting | None:
        """The container forked from its zygote; :data:`STARTING` while the zygote
        still imports (ask again later); None: run it as a plain process."""
        self.tend()
        try:
            return self._spawn(argv, env, cwd)
        except (OSError, ValueError) as error:  # no descriptor left for the pipe, say
            self._note(f"a fork could not be asked for ({error}): plain processes")
            return None

    def _spawn(
        self, argv: list[str], env: Mapping[str, str], cwd: str
    ) -> ForkedProcess | Starting | None:
        signature = self.signature(argv, env, cwd)
        if signature is None or signature in self._refused:
            return None
        zygote = self._zygotes.get(signature)
        if zygote is None:
            zygote = self._start(signature, env)
            if zygote is None:
                return None
        zygote.refresh()
        if zygote.state == "starting":
            return STARTING
        if zygote.state == "ready":
            own = {name: env[name] for name in [self.root_variable] if name in env}
            forked = zygote.spawn(argv[2], argv[3:], own, cwd)
            if forked is not None or zygote.state == "ready":
                return forked  # None: this one fork was refused; the zygote stays
        why = zygote.failure.strip().splitlines()[-1:] or [f"it is {zygote.state}"]
        self._note(f"the zygote for {argv[2]} failed ({why[0]}): plain processes")
        self._refused.add(signature)
        self._zygotes.pop(signature, None)
        # Its containers running still end as they would: it is closed after them.
        self._retired.append(zygote)
        self.tend()
        return None

    def tend(self) -> None:
        """Close each failed zygote whose containers have all ended."""
        for zygote in list(self._retired):
            zygote.collect(0.0)
            if not zygote.running_children:
                self._retired.remove(zygote)
                zygote.close()

    def _start(self, signature: Signature, env: Mapping[str, str]) -> _Zygote | None:
        if len(self._zygotes) >= self.limit:
            self._note(f"{self.limit} zygotes run already: plain processes for another env")
            return None
        executable, shared, cwd = signature
        variable = self.root_variable if self.root_variable in env else None
        try:
            zygote = _Zygote(executable, self.modules, dict(shared), cwd, variable)
        except OSError as error:
            self._note(f"a zygote cannot start ({error}): plain processes")
            self._refused.add(signature)
            return None
        self._zygotes[signature] = zygote
        return zygote

    def pids(self) -> list[int]:
        """The process ids of the zygotes running (a failed one too, while a container
        forked from it runs)."""
        zygotes = [*self._zygotes.values(), *self._retired]
        return [zygote.pid for zygote in zygotes if zygote.process.poll() is None]

    def close(self) -> None:
        """Stop every zygote (and what they still run); safe to call twice."""
        for zygote in [*self._zygotes.values(), *self._retired]:
            zygote.close()
        self._zygotes.clear()
        self._retired.clear()
