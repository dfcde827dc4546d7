"""The zygote itself: the process that imports the preloaded modules once, then forks
one child per container (the kubelet's side is :mod:`k8s_workloads.testing._zygote`).

:func:`_serve` runs when this file is run by ``<executable> -c`` (only the standard
library; :mod:`k8s_workloads` is not imported there, and the kubelet imports only the
framing from here). If the imports started a :mod:`threading` thread, forking is
unsafe: the zygote reports itself failed (a thread started in C, out of
:mod:`threading`'s sight, is not seen). Each child writes stdout and stderr to the pipe
whose write end came with the request (:func:`socket.send_fds`), starts a session
(:func:`os.setsid`, so the kubelet signals its group by pid as for a plain process; the
zygote answers ``started`` only once the child has it, and refuses the fork, killing the
child, if that takes over :data:`SESSION_SECONDS`), reads
``/dev/null``, takes the container's root variable (the rest of its environment is the
zygote's: the same, plus what the interpreter's start and the imports set, as in a fresh
process), working directory and ``sys.argv``, and runs the module with
:func:`runpy.run_module` as ``__main__``. Its exit status is the interpreter's:
``SystemExit``'s code (``None`` is 0, another object is printed and is 1), 1 for an
uncaught exception (shown by :func:`sys.excepthook`); non-daemon threads are joined,
``atexit`` handlers run and stdio flushed before :func:`os._exit`, and after that a
``KeyboardInterrupt`` ends the child by SIGINT, as CPython does. A child that fails
before its module runs says why in one line and exits 1. The zygote reaps its children
and reports each wait status. When the kubelet closes the socket, the zygote kills what
it still runs, reaps it and exits.

What differs from a fresh process, knowingly: the module is in ``sys.modules`` under its
own name too (runpy's warning about that is silenced), the children share the zygote's
hash seed (``random`` reseeds itself after a fork), the few standard modules this file
imports are loaded, and :func:`os._exit` skips the interpreter's finalization: objects
still alive at the end are not collected, so a ``__del__`` or a ``weakref.finalize``
with ``atexit=False`` does not run (``atexit`` handlers do).

Messages on the socket are a 4-byte big-endian length and a JSON object. To the zygote:
``{"module", "args", "own_env", "cwd"}`` (``own_env``: the container's root variable; the
rest of its environment is the zygote's) with the pipe's write end. From it: ``{"ready"}``
or ``{"failed": traceback}`` once, ``{"started": pid}`` or ``{"refused": why}`` per
request, ``{"exited": pid, "status": wait status}`` per child.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import re
import runpy
import select
import signal
import socket
import struct
import sys
import threading
import traceback
import warnings
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from types import FrameType

__all__ = ["HEADER", "SESSION_SECONDS", "Message", "frame", "frames"]

SESSION_SECONDS = 5
"""How long the zygote waits for a forked child to start its session (it takes
milliseconds); the kubelet waits longer for the answer."""

HEADER = struct.Struct(">I")
"""A message's length before its JSON body, on the socket both ways."""

Message = dict[str, Any]


def frame(message: Message) -> bytes:
    """``message`` as sent: its length, then its JSON."""
    body = json.dumps(message).encode()
    return HEADER.pack(len(body)) + body


def frames(buffer: bytearray) -> list[Message]:
    """The complete messages at the start of ``buffer``, removed from it."""
    found = []
    while len(buffer) >= HEADER.size:
        (size,) = HEADER.unpack_from(buffer)
        if len(buffer) < HEADER.size + size:
            break
        found.append(json.loads(bytes(buffer[HEADER.size : HEADER.size + size])))
        del buffer[: HEADER.size + size]
    return found


def _receive(channel: socket.socket) -> tuple[Message, list[int]] | None:
    """The next request and the descriptors sent with it; None when the kubelet closed."""
    data, fds, _, _ = socket.recv_fds(channel, HEADER.size, 1)
    while data and len(data) < HEADER.size:
        more = channel.recv(HEADER.size - len(data))
        if not more:
            return None
        data += more
    if not data:
        return None
    (size,) = HEADER.unpack(data)
    body = bytearray()
    while len(body) < size:
        more = channel.recv(size - len(body))
        if not more:
            return None
        body += more
    return json.loads(bytes(body)), fds


def _exit_status(code: object) -> int:
    """The status ``SystemExit(code)`` ends an interpreter with."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)  # noqa: T201 - what CPython prints for sys.exit("why")
    return 1


def _run_main(module: str) -> int:
    """Run ``module`` as ``__main__``: its exit status, or ``-SIGINT`` for an uncaught
    ``KeyboardInterrupt`` (the interpreter ends by that signal once finalized)."""
    # The zygote imported the module, so runpy warns that it is in sys.modules already
    # (for a dotted name): a plain `python -m` never says that. Only that one warning
    # is silenced, and before any filter of the module's own (an `error` from -W too).
    ignored = f"'{module}' found in sys.modules after import of package "
    warnings.filterwarnings("ignore", re.escape(ignored), RuntimeWarning, "runpy")
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as ended:
        return _exit_status(ended.code)
    except BaseException as error:  # noqa: BLE001 - the interpreter's last resort
        sys.excepthook(type(error), error, error.__traceback__)
        return -signal.SIGINT if isinstance(error, KeyboardInterrupt) else 1
    return 0


def _end_interpreter() -> None:
    """What an interpreter does after ``__main__``: join non-daemon threads, run the
    ``atexit`` handlers, flush stdio."""
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()  # noqa: SLF001 - a fork ends with os._exit, which skips them
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()


def _child(request: Message, output: int, session: int, closing: list[int]) -> int:
    """In the forked child: become the container and run its module; the exit status.
    ``session``: the pipe on which the child says it has its own session."""
    os.dup2(output, 1)
    os.dup2(output, 2)
    os.close(output)
    os.setsid()
    os.write(session, b"s")
    os.close(session)
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for descriptor in closing:
        os.close(descriptor)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    # The rest of the environment is the container's already (one signature), with what
    # the interpreter's start (PEP 538's LC_CTYPE) and the imports set, as in a fresh one.
    os.environ.update(request["own_env"])
    cwd = str(request["cwd"])
    try:
        os.chdir(cwd)
    except OSError as error:
        print(f"cannot enter the working directory: {error}", file=sys.stderr)  # noqa: T201
        return 1
    # As `python -m`: argv[0] is "-m" while the module is found, then its file
    # (run_module sets it); the working directory comes first on sys.path.
    module = str(request["module"])
    sys.argv = ["-m", *request["args"]]
    sys.orig_argv = [sys.orig_argv[0], "-m", module, *request["args"]]
    sys.path[0] = cwd
    code = _run_main(module)
    _end_interpreter()
    if code == -signal.SIGINT:
        # CPython's end for an uncaught KeyboardInterrupt: finalized, then SIGINT.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        return 128 + signal.SIGINT
    return code


def _forked(request: Message, output: int, session: int, closing: list[int]) -> NoReturn:
    """The child's whole life: never returns to the zygote's loop."""
    code = 1
    try:
        code = _child(request, output, session, closing)
    except BaseException as error:  # noqa: BLE001 - it must end here, saying why
        # Before its module ran (after, _run_main catches all): one line in its log.
        with contextlib.suppress(OSError):
            os.write(2, f"the zygote could not start the container: {error!r}\n".encode())
    finally:
        os._exit(code)


def _fork(
    channel: socket.socket, request: Message, fds: list[int], children: set[int], wake: list[int]
) -> None:
    if len(fds) != 1:
        for descriptor in fds:
            os.close(descriptor)
        channel.sendall(frame({"refused": "no output pipe came with the request"}))
        return
    (output,) = fds
    for stream in (sys.stdout, sys.stderr):
        stream.flush()  # else a child writes the zygote's pending text again
    pipe: tuple[int, ...] = ()
    try:
        pipe = waiting, session = os.pipe()
        pid = os.fork()
    except OSError as error:
        for descriptor in (output, *pipe):
            os.close(descriptor)
        channel.sendall(frame({"refused": f"fork: {error}"}))
        return
    if pid == 0:
        os.close(waiting)
        _forked(request, output, session, [channel.fileno(), *wake])
    os.close(output)
    os.close(session)
    children.add(pid)
    # Answered once the child has its session (or died before): a killpg by its pid
    # then reaches it, as for a plain process. A child stuck before it (an at-fork hook
    # of the preloaded modules waiting for ever) is killed and the fork refused, well
    # before the kubelet stops waiting for the answer: it runs the container plain.
    poller = select.poll()
    poller.register(waiting, select.POLLIN)
    session_started = bool(poller.poll(SESSION_SECONDS * 1000))
    os.close(waiting)
    if session_started:
        channel.sendall(frame({"started": pid}))
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    children.discard(pid)
    why = f"the child did not start its session within {SESSION_SECONDS} s"
    channel.sendall(frame({"refused": why}))


def _reap(channel: socket.socket, children: set[int]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        children.discard(pid)
        channel.sendall(frame({"exited": pid, "status": status}))


def _wake(number: int, frame: FrameType | None) -> None:
    """SIGCHLD's handler: nothing; its byte on the wakeup descriptor ends the poll."""


def _preload(channel: socket.socket, modules: list[str]) -> bool:
    """Import ``modules``; False (said on the socket) if forking after them is unsafe."""
    try:
        for module in modules:
            importlib.import_module(module)
    except BaseException:
        with contextlib.suppress(OSError):
            channel.sendall(frame({"failed": traceback.format_exc()}))
        raise
    if threading.active_count() == 1:
        return True
    # A fork copies only the forking thread: a lock another one held stays locked.
    others = set(threading.enumerate()) - {threading.main_thread()}
    names = ", ".join(sorted(thread.name for thread in others))
    why = f"the imports started threads, forking is unsafe: {names}"
    with contextlib.suppress(OSError):
        channel.sendall(frame({"failed": why}))
    return False


def _serve(arguments: list[str]) -> int:
    """The zygote's loop: ``arguments`` are the socket's descriptor and the modules."""
    channel = socket.socket(fileno=int(arguments[0]))
    if not _preload(channel, arguments[1:]):
        return 1
    wake = os.pipe()
    for descriptor in wake:
        os.set_blocking(descriptor, False)
    signal.set_wakeup_fd(wake[1])
    signal.signal(signal.SIGCHLD, _wake)
    children: set[int] = set()
    # poll, not select: the socket's number is the kubelet's, which may be over 1023.
    watched = select.poll()
    for descriptor in (channel.fileno(), wake[0]):
        watched.register(descriptor, select.POLLIN)
    try:
        channel.sendall(frame({"ready": os.getpid()}))
        while True:
            readable = {descriptor for descriptor, _ in watched.poll()}
            if wake[0] in readable:
                with contextlib.suppress(BlockingIOError):
                    while os.read(wake[0], 512):
                        pass
            _reap(channel, children)
            if channel.fileno() in readable:
                received = _receive(channel)
                if received is None:
                    break
                _fork(channel, *received, children, list(wake))
    except OSError:
        pass  # the kubelet is gone: stop what runs
    finally:
        for pid in children:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
        for pid in children:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
    return 0


if __name__ == "__zygote__":
    sys.exit(_serve(sys.argv[2:]))
