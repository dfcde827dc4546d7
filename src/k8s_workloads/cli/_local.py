"""``k8s-workloads local``: Airflow with this executor on this machine, in one command.

It prepares a home (``--home``; :mod:`~k8s_workloads.cli._local_home`), migrates its
SQLite database, and runs the test kit's cluster with its process kubelet and Airflow's
``api-server``, ``dag-processor`` and ``scheduler`` with
``k8s_workloads.airflow.KubernetesExecutor`` (:mod:`~k8s_workloads.cli._local_stack`):
every task and deadline callback runs as a pod, the pod's command as a local process.
It prints the UI's address and how to log in, the processes and their logs; with
``--trigger`` it triggers the bundled example once it is parsed and reports its run.
Ctrl-C or SIGTERM (or ``--lifetime``) stops everything it started; then it exits 0, or 1
if a process of the stack failed. Airflow must be installed (the ``airflow`` extra).
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import os
import signal
import socket
import threading
import time
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from k8s_workloads.cli._args import Command, option
from k8s_workloads.cli._io import UsageError, report

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Iterator
    from typing import TextIO

    from k8s_workloads.cli._local_stack import ExampleRun, LocalStack

__all__ = ["COMMAND", "airflow_problem"]

_AIRFLOW_SERIES = "3.3."
_INSTALL = "pip install 'k8s-workloads[airflow]'"


def airflow_problem(
    find_spec: Callable[[str], object] = importlib.util.find_spec,
    version: Callable[[str], str] | None = None,
) -> str | None:
    """Why this environment cannot run the stack (None: it can): Airflow 3.3 and the
    cncf.kubernetes provider must be installed."""
    if version is None:
        from importlib import metadata  # noqa: PLC0415

        version = metadata.version
    needed = ("airflow", "airflow.providers.cncf.kubernetes")
    try:
        missing = [name for name in needed if find_spec(name) is None]
    except (ImportError, ValueError):
        missing = list(needed)
    if missing:
        return f"needs Airflow 3.3 and its cncf.kubernetes provider: {_INSTALL}"
    try:
        installed = version("apache-airflow")
    except Exception:  # noqa: BLE001 - importlib.metadata's PackageNotFoundError, or worse
        installed = "unknown"
    if not installed.startswith(_AIRFLOW_SERIES):
        return f"needs Airflow 3.3, this environment has {installed}: {_INSTALL}"
    return None


def _checked_arguments(args: argparse.Namespace) -> tuple[Path, Path | None, int, float | None]:
    """The home, the DAGs folder, the UI's port and the lifetime, or a :class:`UsageError`
    naming the option."""
    for flag, value in (("--home", args.home), ("--dags", args.dags)):
        # airflow.cfg holds the paths one per line: a line break would end one.
        if value is not None and any(unicodedata.category(c) == "Cc" for c in value):
            raise UsageError(f"{flag} {value!r}: a path with a control character")
    home = Path(args.home).expanduser() if args.home else None
    if home is not None and home.exists() and not home.is_dir():
        raise UsageError(f"--home {args.home}: not a directory")
    dags = Path(args.dags).expanduser() if args.dags is not None else None
    if dags is not None and not dags.is_dir():
        raise UsageError(f"--dags {args.dags}: no such directory")
    port = _port(args.port)
    lifetime = None
    if args.lifetime is not None:
        try:
            lifetime = float(args.lifetime)
        except ValueError:
            lifetime = -1.0
        if not (math.isfinite(lifetime) and lifetime > 0):
            raise UsageError(
                f"--lifetime must be a number of seconds above 0, got {args.lifetime!r}"
            )
    from k8s_workloads.cli._local_home import default_home  # noqa: PLC0415

    return home or default_home(os.environ), dags, port, lifetime


def _port(text: str | None) -> int:
    """``--port``: 0 (none given) picks a free one; a port in use is refused now."""
    if text is None:
        return 0
    port = int(text) if text.isascii() and text.isdigit() else -1
    if not 1 <= port <= 65535:
        raise UsageError(f"--port must be a TCP port (1 to 65535), got {text!r}")
    with socket.socket() as probe:
        # As a server binds it: a port of a connection in TIME_WAIT is free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as error:
            raise UsageError(f"--port {port}: {error.strerror or error} on 127.0.0.1") from None
    return port


@contextlib.contextmanager
def _stop_on_signals(stopping: threading.Event) -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP set ``stopping`` (a second one too: the stop is
    bounded). SIGHUP: a closed terminal or a dropped SSH session stops everything, instead
    of leaving the processes it started, each in a session of its own, running for ever."""

    def handler(number: int, frame: Any) -> None:  # noqa: ANN401, ARG001 - a frame or None
        stopping.set()

    numbers = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {number: signal.signal(number, handler) for number in numbers}
    try:
        yield
    finally:
        for number, old in previous.items():
            signal.signal(number, old)


def run_local(args: argparse.Namespace, out: TextIO, err: TextIO, _inp: TextIO) -> int:
    root, dags, port, lifetime = _checked_arguments(args)
    problem = airflow_problem()
    if problem:
        raise UsageError(problem)
    # Imported here: the other commands never load the test kit.
    from k8s_workloads.cli._local_home import prepare  # noqa: PLC0415
    from k8s_workloads.cli._local_stack import ExampleRun, LocalStack, StackFailed  # noqa: PLC0415

    try:
        home = prepare(root, dags)
    except OSError as error:
        raise UsageError(f"--home {root}: {error.strerror or error}") from None
    stopping = threading.Event()
    stack = LocalStack(home, api_port=port, environ=os.environ)
    status = 0
    with _stop_on_signals(stopping):
        try:
            _say(out, f"home {home.root} (its AIRFLOW_HOME); migrating its database")
            if stack.migrate(stopping):
                stack.start()
                _announce(stack, out)
                example = ExampleRun(stack, out) if args.trigger else None
                _watch(stack, stopping, lifetime, example, out)
        except StackFailed as error:
            report(err, f"k8s-workloads local: {error}")
            status = 1
        except OSError as error:  # a file of the home, a port: the stack could not start
            where = f"{error.filename}: " if error.filename else ""
            report(err, f"k8s-workloads local: cannot start: {where}{error.strerror or error}")
            status = 1
        finally:
            _say(out, "stopping ...")
            stopped = stack.stop()
            _say(out, f"stopped {', '.join(stopped) or 'nothing'}")
    return status


def _say(out: TextIO, line: str) -> None:
    out.write(f"k8s-workloads local: {line}\n")
    out.flush()


def _watch(
    stack: LocalStack,
    stopping: threading.Event,
    lifetime: float | None,
    example: ExampleRun | None,
    out: TextIO,
) -> None:
    """Until a signal or the lifetime: the processes checked, the example followed."""
    until = None if lifetime is None else time.monotonic() + lifetime
    ready = False
    look = 0.0
    while not stopping.wait(0.25):
        stack.check()
        now = time.monotonic()
        if until is not None and now > until:
            return
        if now < look:
            continue
        look = now + 1.0
        stack.look()
        if not ready and stack.api_ready():
            ready = True
            _say(out, f"the api-server is up: {stack.api_url}")
        if example is not None:
            example.step()


def _announce(stack: LocalStack, out: TextIO) -> None:
    from k8s_workloads.cli._local_home import EXAMPLE_DAG_ID  # noqa: PLC0415

    home = stack.home
    passwords = home.root / "simple_auth_manager_passwords.json.generated"
    server = stack.server.url if stack.server is not None else "?"
    lines = [
        f"Airflow UI: {stack.api_url} (user admin, its password in {passwords})",
        f"DAGs: {home.dags} (yours: --dags) and {home.example_dags} ({EXAMPLE_DAG_ID})",
        (
            f"worker pods: local processes, on the kit's cluster at {server} "
            f"(kubeconfig {home.kubeconfig}); each pod's log in {home.pod_logs}"
        ),
        "processes, each in its own process group:",
        *(
            f"  airflow {name} (pid {process.pid}): log {home.log(name)}"
            for name, process in stack.processes.items()
        ),
        f"  the kit's API server and kubelet: this command (pid {os.getpid()})",
        "Ctrl-C stops them all.",
    ]
    out.writelines(f"{line}\n" for line in lines)
    out.flush()


COMMAND = Command(
    name="local",
    help="run Airflow with this executor locally: tasks and deadline callbacks as pods",
    description="Run a local Airflow stack with k8s_workloads.airflow.KubernetesExecutor: "
    "the test kit's Kubernetes API server on 127.0.0.1 with a kubelet that runs each pod "
    "as a local process, and airflow api-server, dag-processor and scheduler, in a home "
    "it prepares (SQLite, a bundled example DAG with a deadline callback). Ctrl-C stops "
    "everything. Needs the airflow extra.",
    run=run_local,
    options=(
        option(
            "--home",
            metavar="DIR",
            help="the stack's AIRFLOW_HOME (default: ~/.cache/k8s-workloads/local)",
        ),
        option("--dags", metavar="DIR", help="your DAGs folder (default: HOME/dags)"),
        option(
            "--trigger",
            action="store_true",
            help="trigger the example DAG once it is parsed, and report its run",
        ),
        option("--port", metavar="PORT", help="the Airflow UI's port (default: a free one)"),
        option(
            "--lifetime",
            metavar="SECONDS",
            help="stop by itself after SECONDS (default: run until Ctrl-C)",
        ),
    ),
)
