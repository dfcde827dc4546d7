"""``python -m k8s_workloads.testing.server`` with faults: for the fault runs of the benchmarks.

Private to ``bench_airflow_scale.py``. The same server, options and ``/_kit/stats`` as the
kit's (:mod:`k8s_workloads.testing._process`: a :class:`FakeApiServer` with ``--latency``
and the kit's :class:`Kubelet` with ``--kubelet``), with the kit's fault rate::

    python benchmarks/_kit_server.py --port 0 --latency 0.02 --kubelet 2 \\
        --fail-rate 0.05 --fail-kind 5xx --seed 1

fails that share of the calls on pods and Secrets (watches included, discovery and
``/_kit`` not), after their latency and before they reach the cluster: with a 500 or a 503
(``5xx``), or with a 429 carrying ``Retry-After: 1`` (``429``) — a :class:`FaultRate` on
the server, its faults counted in ``/_kit/stats``'s ``faults_served`` (by ``"VERB resource
status"``). ``/_kit/stats`` then also has ``deletes_per_pod`` (how many pods were asked to
be deleted once, twice, ...). The URL is the first line on stdout; the server stops at the
end of its lifetime, when stdin closes, or on SIGTERM.

The network runs (``bench_network.py``) schedule the kit's connection faults instead::

    python benchmarks/_kit_server.py --port 0 --latency 0.02 --kubelet 2 \
        --drop-create-answers 3 --restart-after-creates 60 --restart-seconds 8 \
        --stall-after-succeeded 150 --stall-seconds 15

loses the answers of the first creations (stored, connection reset), restarts the API
server once that many pods exist (every connection reset, new ones refused for
``--restart-seconds``, the cluster kept), and stalls every open connection once that many
pods have succeeded (nothing forwarded for ``--stall-seconds``, then reset; ``-1``: for
ever). ``/_kit/stats`` then also has ``network``: when each fault began and ended (wall
clock), the pods created for each task, and the pods left.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
import time
import urllib.parse
from collections import Counter
from typing import Any

from k8s_workloads.testing import STATS_PATH, FakeApiServer, FakeCluster, FaultRate, Kubelet
from k8s_workloads.testing import server as kit_server


def fault_rate(rate: float, kind: str, seed: int) -> FaultRate | None:
    """The fault runs' faults: ``rate`` of the calls on pods and Secrets, a 500 or a 503
    (``5xx``), or a 429 with ``Retry-After: 1`` (``429``); None for no faults."""
    if not rate:
        return None
    if kind == "5xx":
        return FaultRate(rate, status=(500, 503), calls=("pods", "secrets"), seed=seed)
    return FaultRate(rate, status=429, calls=("pods", "secrets"), seed=seed, retry_after=1)


class Deletes:
    """How many times each pod was asked to be deleted."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.deleted: Counter[str] = Counter()

    def asked(self, path: str) -> None:
        with self.lock:
            self.deleted[path] += 1

    def document(self) -> dict[str, Any]:
        with self.lock:
            return {"deletes_per_pod": dict(Counter(str(n) for n in self.deleted.values()))}


def handler(deletes: Deletes, network: Network | None = None) -> type[Any]:
    base: Any = kit_server._Handler  # noqa: SLF001 - the kit's, extended here

    class Handler(base):  # type: ignore[misc]
        def _route(self, method: str, path: str, query: dict[str, list[str]]) -> None:
            if method == "GET" and path == STATS_PATH:
                document = self.server.stats.snapshot().to_json() | deletes.document()
                if network is not None:
                    document |= network.document()
                self._send_json(200, document)
                return
            super()._route(method, path, query)

        def _fault_drawn(self) -> None:
            # Before the fault rate's draw: a DELETE that fails is still one asked for.
            if self._kind == ("DELETE", "pods"):
                deletes.asked(urllib.parse.urlsplit(self.path).path)
            super()._fault_drawn()

    return Handler


class Network:
    """The network faults' schedule, run by a thread that watches the cluster."""

    def __init__(self, server: FakeApiServer, cluster: FakeCluster, args: Any) -> None:  # noqa: ANN401
        self.server, self.cluster, self.args = server, cluster, args
        self.lock = threading.Lock()
        self.times: dict[str, float] = {}
        self.pods_of: dict[str, set[str]] = {}
        self.succeeded: set[str] = set()
        self.restarts: dict[str, int] = {}
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="network-faults", daemon=True)

    @property
    def active(self) -> bool:
        args = self.args
        return bool(
            args.drop_create_answers
            or args.restart_after_creates
            or args.stall_after_succeeded
            or args.count_pods
        )

    def start(self) -> None:
        if self.args.drop_create_answers:
            self.server.drop_next_create_answer("pods", times=self.args.drop_create_answers)
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        if self.thread.is_alive():
            self.thread.join(timeout=5)

    def _run(self) -> None:
        args = self.args
        restart, stall = args.restart_after_creates, args.stall_after_succeeded
        while not self.stopping.wait(0.02):
            pods = self.cluster.pods()
            with self.lock:
                for pod in pods:
                    metadata = pod["metadata"]
                    task = (metadata.get("annotations") or {}).get("task_id")
                    if task is not None:
                        self.pods_of.setdefault(task, set()).add(metadata["name"])
                    status = pod.get("status") or {}
                    if status.get("phase") == "Succeeded":
                        self.succeeded.add(metadata["name"])  # ever: deleted ones stay counted
                    restarts = sum(
                        int(container.get("restartCount") or 0)
                        for container in status.get("containerStatuses") or ()
                    )
                    if restarts:
                        self.restarts[metadata["name"]] = restarts
                succeeded = len(self.succeeded)
                created = sum(len(names) for names in self.pods_of.values())
                if restart and "restart_at" not in self.times and created >= restart:
                    self.times["restart_at"] = time.time()
                    self.server.refuse_connections(args.restart_seconds)
                if (
                    "restart_at" in self.times
                    and "restart_ended_at" not in self.times
                    and not self.server.refusing
                ):
                    self.times["restart_ended_at"] = time.time()
                if stall and "stall_at" not in self.times and succeeded >= stall:
                    self.times["stall_at"] = time.time()
                    forever = args.stall_seconds < 0
                    self.server.stall(None if forever else args.stall_seconds)
                    if not forever:
                        self.times["stall_ended_at"] = time.time() + args.stall_seconds

    def document(self) -> dict[str, Any]:
        with self.lock:
            per_task = Counter(str(len(names)) for names in self.pods_of.values())
            return {
                "network": {
                    **self.times,
                    "created_per_task": {task: len(n) for task, n in self.pods_of.items()},
                    "tasks_by_pods": dict(per_task),
                    "pods_left": len(self.cluster.pods()),
                    "container_restarts": sum(self.restarts.values()),
                }
            }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--lifetime", type=float, default=600.0)
    parser.add_argument("--kubelet", type=float, default=None)
    parser.add_argument("--fail-rate", type=float, default=0.0)
    parser.add_argument("--fail-kind", choices=("5xx", "429"), default="5xx")
    parser.add_argument("--seed", type=int, default=20260607)
    parser.add_argument("--drop-create-answers", type=int, default=0)
    parser.add_argument("--restart-after-creates", type=int, default=0)
    parser.add_argument("--restart-seconds", type=float, default=8.0)
    parser.add_argument("--stall-after-succeeded", type=int, default=0)
    parser.add_argument("--stall-seconds", type=float, default=15.0)
    parser.add_argument("--count-pods", action="store_true", help="the network document only")
    args = parser.parse_args(argv)

    cluster = FakeCluster(namespaces=["airflow"])
    server = FakeApiServer(
        cluster,
        port=args.port,
        lifetime=args.lifetime,
        latency=args.latency,
        faults=fault_rate(args.fail_rate, args.fail_kind, args.seed),
    )
    network = Network(server, cluster, args)
    server._server.RequestHandlerClass = handler(  # noqa: SLF001 - the wrapped server
        Deletes(), network if network.active else None
    )
    kubelet = None if args.kubelet is None else Kubelet(cluster, run_seconds=args.kubelet)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())

    def until_stdin_closes() -> None:
        with contextlib.suppress(OSError, ValueError):
            while os.read(sys.stdin.fileno(), 65536):
                pass
        done.set()

    threading.Thread(target=until_stdin_closes, daemon=True).start()
    with server:
        if kubelet is not None:
            kubelet.start()
        if network.active:
            network.start()
        sys.stdout.write(server.url + "\n")
        sys.stdout.flush()
        try:
            while not done.wait(0.1) and not server.stopped:
                pass
        finally:
            network.stop()
            if kubelet is not None:
                kubelet.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
