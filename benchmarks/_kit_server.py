"""A stand-in for ``python -m k8s_workloads.testing.server`` until the kit's CLI is on main.

Private to ``bench_airflow_scale.py``. It wraps what the kit has today
(:class:`~k8s_workloads.testing.FakeApiServer` over a :class:`FakeCluster`) and adds, in
this process, what the kit's server is announced to have, with the same command line::

    python benchmarks/_kit_server.py --port 0 --latency 0.02 --lifetime 600 --kubelet 2

* the URL is the first line on stdout;
* ``--latency SECONDS``: every call (a watch: before it starts streaming) is answered that
  much later, on its own connection's thread, so calls on different connections overlap;
* ``--kubelet SECONDS``: a created pod is Running that long after its creation and
  Succeeded as long again, with container statuses as a kubelet writes them (image,
  imageID, containerID, start and finish times, exit code 0);
* responses go out with ``TCP_NODELAY`` (without it, each response stalls about 40 ms:
  Nagle's algorithm holds the body until the header's delayed ACK arrives);
* ``GET /_kit/stats``: JSON with the connections accepted, the requests by method and
  kind, and the most requests in flight at once, overall and for pod creations (a watch
  is not counted in flight: it is open for as long as the client watches).

One more option the kit does not have: ``--fail-rate P --fail-kind 5xx|429 --seed S``
fails that share of the calls (watches included, ``/_kit`` and discovery not) with a 500
or 503, or with a 429 carrying ``Retry-After: 1``, before they reach the cluster.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import sys
import threading
import time
import urllib.parse
from collections import Counter, deque
from typing import Any

from k8s_workloads.testing import FakeApiServer, FakeCluster
from k8s_workloads.testing.cluster import ApiError
from k8s_workloads.testing.server import _Handler

_DISCOVERY = frozenset({"/api", "/apis", "/api/v1", "/version"})
_IMAGE = "apache/airflow:3.3.2"
_IMAGE_ID = "docker.io/apache/airflow@sha256:" + "4f" * 32


class Stats:
    """What ``/_kit/stats`` reports; one lock for all of it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.connections = 0
        self.requests: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        self.creations_in_flight = 0
        self.max_creations_in_flight = 0
        self.faults: Counter[str] = Counter()
        self.deleted: Counter[str] = Counter()  # DELETE calls by pod path

    def document(self) -> dict[str, Any]:
        with self.lock:
            return {
                "connections_accepted": self.connections,
                "requests": dict(self.requests),
                "max_in_flight": self.max_in_flight,
                "max_pod_creations_in_flight": self.max_creations_in_flight,
                "faults": dict(self.faults),
                # launcher only: how many pods got one DELETE call, two, ...
                "deletes_per_pod": dict(Counter(str(n) for n in self.deleted.values())),
            }


def _kind(method: str, path: str, query: str) -> str:
    """``POST pods``, ``GET pods watch``, ``DELETE pods``, ``GET discovery``, ..."""
    if path in _DISCOVERY:
        return f"{method} discovery"
    parts = [part for part in path.split("/") if part]
    kind = next((part for part in reversed(parts) if part in {"pods", "secrets"}), None)
    if kind is None and len(parts) >= 2 and parts[-2] in {"pods", "secrets"}:
        kind = parts[-2]
    kind = kind or "other"
    if method == "GET" and "watch=true" in query.lower():
        return f"{method} {kind} watch"
    return f"{method} {kind}"


def make_handler(
    stats: Stats, latency: float, fail_rate: float, fail_kind: str, seed: int
) -> type[_Handler]:
    faults = random.Random(seed)
    fault_lock = threading.Lock()

    class Handler(_Handler):
        disable_nagle_algorithm = True  # TCP_NODELAY, set by StreamRequestHandler.setup

        def setup(self) -> None:
            super().setup()
            with stats.lock:
                stats.connections += 1

        def _handle(self, method: str) -> None:
            parsed = urllib.parse.urlsplit(self.path)
            if parsed.path == "/_kit/stats":
                self._send_json(200, stats.document())
                return
            kind = _kind(method, parsed.path, parsed.query)
            watch = kind.endswith(" watch")
            creation = kind == "POST pods"
            with stats.lock:
                stats.requests[kind] += 1
                if kind == "DELETE pods":
                    stats.deleted[parsed.path] += 1
                if not watch:
                    stats.in_flight += 1
                    stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
                if creation:
                    stats.creations_in_flight += 1
                    stats.max_creations_in_flight = max(
                        stats.max_creations_in_flight, stats.creations_in_flight
                    )
            try:
                if latency:
                    time.sleep(latency)
                if fail_rate and parsed.path not in _DISCOVERY:
                    with fault_lock:
                        failing = faults.random() < fail_rate
                        status = faults.choice((500, 503)) if fail_kind == "5xx" else 429
                    if failing:
                        with stats.lock:
                            stats.faults[f"{kind} {status}"] += 1
                        self._body_if_any()
                        headers = {"Retry-After": "1"} if status == 429 else {}
                        reason = "TooManyRequests" if status == 429 else "InternalError"
                        self._send_error(ApiError(status, reason, "injected", headers=headers))
                        return
                super()._handle(method)
            finally:
                with stats.lock:
                    if not watch:
                        stats.in_flight -= 1
                    if creation:
                        stats.creations_in_flight -= 1

        def _body_if_any(self) -> None:
            # The request's body is read before a fault's answer: the connection stays usable.
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)

    return Handler


def _status(pod: dict[str, Any], phase: str, started: str, finished: str | None) -> dict[str, Any]:
    containers = pod.get("spec", {}).get("containers") or [{"name": "base", "image": _IMAGE}]
    statuses = []
    for number, container in enumerate(containers):
        state: dict[str, Any]
        if finished is None:
            state = {"running": {"startedAt": started}}
        else:
            state = {
                "terminated": {
                    "exitCode": 0,
                    "reason": "Completed",
                    "startedAt": started,
                    "finishedAt": finished,
                    "containerID": f"containerd://{number:064x}",
                }
            }
        statuses.append(
            {
                "name": container.get("name", "base"),
                "state": state,
                "lastState": {},
                "ready": finished is None,
                "restartCount": 0,
                "image": container.get("image") or _IMAGE,
                "imageID": _IMAGE_ID,
                "containerID": f"containerd://{number:064x}",
                "started": finished is None,
            }
        )
    ready = "True" if finished is None else "False"
    return {
        "phase": phase,
        "conditions": [
            {"type": kind, "status": ready if kind in {"Ready", "ContainersReady"} else "True"}
            for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")
        ]
        + [{"type": "PodScheduled", "status": "True"}],
        "hostIP": "10.0.0.7",
        "hostIPs": [{"ip": "10.0.0.7"}],
        "podIP": "10.244.1.23",
        "podIPs": [{"ip": "10.244.1.23"}],
        "startTime": started,
        "containerStatuses": statuses,
        "qosClass": "BestEffort",
    }


def _stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Kubelet(threading.Thread):
    """Moves each created pod to Running after ``delay`` seconds, to Succeeded after 2x."""

    def __init__(self, cluster: FakeCluster, delay: float) -> None:
        super().__init__(name="kit-kubelet", daemon=True)
        self.cluster = cluster
        self.delay = delay
        self.created: deque[tuple[float, str, str]] = deque()
        self.running: deque[tuple[float, str, str, str]] = deque()
        create = cluster.create_pod

        def create_pod(namespace: str, body: Any) -> dict[str, Any]:  # noqa: ANN401
            pod = create(namespace, body)
            self.created.append((time.monotonic(), namespace, pod["metadata"]["name"]))
            return pod

        cluster.create_pod = create_pod  # type: ignore[method-assign]

    def run(self) -> None:
        while True:
            now = time.monotonic()
            while self.created and self.created[0][0] + self.delay <= now:
                _, namespace, name = self.created.popleft()
                started = _stamp()
                self._set(namespace, name, "Running", started, None)
                self.running.append((now, namespace, name, started))
            while self.running and self.running[0][0] + self.delay <= now:
                _, namespace, name, started = self.running.popleft()
                self._set(namespace, name, "Succeeded", started, _stamp())
            time.sleep(0.01)

    def _set(self, namespace: str, name: str, phase: str, started: str, done: str | None) -> None:
        pod = self.cluster.pod(namespace, name, copy=False)
        if pod is None:
            return  # deleted meanwhile
        with contextlib.suppress(KeyError):  # deleted meanwhile
            self.cluster.set_status(namespace, name, _status(pod, phase, started, done))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--lifetime", type=float, default=600.0)
    parser.add_argument("--kubelet", type=float, default=None)
    parser.add_argument("--fail-rate", type=float, default=0.0)
    parser.add_argument("--fail-kind", choices=("5xx", "429"), default="5xx")
    parser.add_argument("--seed", type=int, default=20260607)
    args = parser.parse_args(argv)

    cluster = FakeCluster(history=1_000_000)
    stats = Stats()
    server = FakeApiServer(cluster, port=args.port, lifetime=args.lifetime)
    server._server.RequestHandlerClass = make_handler(  # noqa: SLF001 - the wrapped server
        stats, args.latency, args.fail_rate, args.fail_kind, args.seed
    )
    server._server.socket.listen(128)  # noqa: SLF001 - bursts of new connections (default 5)
    if args.kubelet is not None:
        Kubelet(cluster, args.kubelet).start()
    with server:
        sys.stdout.write(server.url + "\n")
        sys.stdout.flush()
        server._server.stopping.wait()  # noqa: SLF001 - until the lifetime ends (or a kill)
    return 0


if __name__ == "__main__":
    sys.exit(main())
