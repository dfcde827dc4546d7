"""``python -m k8s_workloads.testing.server``: a :class:`FakeApiServer` in its own process.

For benchmarks and tests that want the server's threads out of their own interpreter.
It serves a fresh :class:`FakeCluster` on 127.0.0.1, prints its URL as the first line of
stdout, and serves until its ``--lifetime`` ends, its stdin is closed (start it with a
pipe for stdin: the pipe closes when the parent dies), or it gets SIGTERM or SIGINT; then
it exits 0. A bad argument is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from typing import TYPE_CHECKING, NoReturn

from k8s_workloads.config_checks import InvalidConfig
from k8s_workloads.testing.cluster import FakeCluster
from k8s_workloads.testing.errors import ApiError
from k8s_workloads.testing.kubelet import Kubelet
from k8s_workloads.testing.server import FakeApiServer
from k8s_workloads.testing.watch import DEFAULT_BOOKMARK_SECONDS

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from types import FrameType

    from k8s_workloads.testing.process_kubelet import ProcessKubelet

__all__ = ["main"]

_WAKE_SECONDS = 0.1


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line, not argparse's usage block: a caller reads it as the reason.
        self.exit(2, f"{self.prog}: error: {message}\n")


SCRIPTED_NOTICE = (
    "k8s_workloads.testing.server: --kubelet scripts pod phases and runs no container: a pod "
    "it reports Succeeded ran nothing (python -m k8s_workloads.testing serve runs pods as "
    "processes)"
)
"""What the server says on stderr when its kubelet is the scripted one."""


def _parser() -> _Parser:
    parser = _Parser(
        prog="python -m k8s_workloads.testing.server",
        description="Serve a fake Kubernetes API server on 127.0.0.1.",
    )
    parser.add_argument("--port", type=int, default=0, help="TCP port (0: any free one)")
    parser.add_argument(
        "--latency", type=float, default=0.0, help="seconds before each API call is answered"
    )
    parser.add_argument(
        "--lifetime", type=float, default=600.0, help="seconds to serve at most (default 600)"
    )
    parser.add_argument(
        "--bookmark-seconds",
        type=float,
        default=DEFAULT_BOOKMARK_SECONDS,
        metavar="SECONDS",
        help="how often a watch with allowWatchBookmarks gets a BOOKMARK (default 60)",
    )
    parser.add_argument(
        "--kubelet",
        type=float,
        default=None,
        metavar="SECONDS",
        help=(
            "script pods' phases: Running after SECONDS, Succeeded after as many more (a pod "
            "without restartPolicy Never is restarted, as on a cluster). No container is "
            "run: a pod it reports Succeeded ran nothing ('python -m k8s_workloads.testing "
            "serve' runs pods as processes)"
        ),
    )
    parser.add_argument(
        "--namespace",
        action="append",
        default=None,
        metavar="NAME",
        help="a namespace that exists besides default (repeatable; default: airflow)",
    )
    return parser


def _until_stdin_closes(done: threading.Event) -> None:
    try:
        descriptor = sys.stdin.fileno()
        while os.read(descriptor, 65536):
            pass
    except (OSError, ValueError, AttributeError):
        pass  # no stdin at all counts as closed
    done.set()


def _serve(
    server: FakeApiServer,
    kubelet: Kubelet | ProcessKubelet | None,
    announce: Callable[[], None],
    *,
    stdin: bool,
) -> None:
    """Serve until the server's lifetime ends, SIGTERM or SIGINT (or stdin closes, if
    ``stdin``); the kubelet runs meanwhile and is stopped first."""
    done = threading.Event()

    def stop_on_signal(number: int, frame: FrameType | None) -> None:  # noqa: ARG001
        done.set()

    signal.signal(signal.SIGTERM, stop_on_signal)
    signal.signal(signal.SIGINT, stop_on_signal)
    if stdin:
        threading.Thread(
            target=_until_stdin_closes, args=(done,), name="k8s-workloads-stdin", daemon=True
        ).start()
    with server:
        if kubelet is not None:
            kubelet.start()
        announce()
        try:
            while not done.wait(_WAKE_SECONDS) and not server.stopped:
                pass
        finally:
            if kubelet is not None:
                kubelet.stop()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m k8s_workloads.testing.server``: see the module's description."""
    parser = _parser()
    arguments = parser.parse_args(argv)
    try:
        cluster = FakeCluster(namespaces=arguments.namespace or ["airflow"])
        server = FakeApiServer(
            cluster,
            port=arguments.port,
            lifetime=arguments.lifetime,
            latency=arguments.latency,
            bookmark_seconds=arguments.bookmark_seconds,
        )
        kubelet = (
            None if arguments.kubelet is None else Kubelet(cluster, run_seconds=arguments.kubelet)
        )
    except InvalidConfig as error:
        parser.error(str(error))
    except ApiError as error:  # a namespace name that is not a DNS-1123 label
        parser.error(f"--namespace: {error}")
    except OSError as error:  # the port is taken
        parser.exit(1, f"{parser.prog}: error: {error}\n")

    def announce() -> None:
        sys.stdout.write(server.url + "\n")
        sys.stdout.flush()
        if kubelet is not None:  # said where a user sees it: nothing it ends really ran
            sys.stderr.write(SCRIPTED_NOTICE + "\n")
            sys.stderr.flush()

    _serve(server, kubelet, announce, stdin=True)
    return 0
