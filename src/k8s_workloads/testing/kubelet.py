"""A small kubelet for :class:`~k8s_workloads.testing.FakeCluster`: pods run, then succeed.

``run_seconds`` after the kubelet first sees a pod (one with no ``deletionTimestamp``,
still ``Pending``), it writes a ``Running`` status; ``run_seconds`` later, ``Succeeded``.
The statuses have what a real kubelet reports and executors read: ``phase``,
``conditions``, ``hostIP``, ``podIP``, ``startTime`` and, for every container of the spec,
a ``containerStatuses`` entry with ``name``, ``image``, ``imageID``, ``containerID``,
``ready``, ``restartCount``, ``started`` and ``state`` (``running.startedAt``, then
``terminated`` with ``exitCode`` 0 and ``reason`` ``Completed``). A pod the test moved on
itself (to ``Failed``, say) is left alone.

Timestamps are the cluster's ``now``, as for everything else the cluster writes. Run it on
its own thread (:meth:`Kubelet.start`, or as a context manager), or call
:meth:`Kubelet.step` with the time yourself.
"""

from __future__ import annotations

import datetime
import hashlib
import threading
import time
from typing import TYPE_CHECKING, Any

from k8s_workloads import _config as _checks
from k8s_workloads.testing.cluster import FakeCluster

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["Kubelet"]

Manifest = dict[str, Any]

_HOST_IP = "10.0.0.1"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _container_id(uid: str, container: Manifest) -> str:
    return "containerd://" + _digest(f"{uid}/{container.get('name', '')}")


def _condition(kind: str, *, true: bool, at: str, reason: str | None = None) -> Manifest:
    condition: Manifest = {
        "type": kind,
        "status": "True" if true else "False",
        "lastProbeTime": None,
        "lastTransitionTime": at,
    }
    if reason is not None:
        condition["reason"] = reason
    return condition


def _conditions(*, running: bool, started: str, at: str) -> list[Manifest]:
    # A completed pod keeps Initialized and PodScheduled; Ready and ContainersReady turn
    # False with reason PodCompleted, as the kubelet's status manager writes them.
    done = None if running else "PodCompleted"
    return [
        _condition("PodReadyToStartContainers", true=running, at=at),
        _condition("Initialized", true=True, at=started),
        _condition("Ready", true=running, at=at, reason=done),
        _condition("ContainersReady", true=running, at=at, reason=done),
        _condition("PodScheduled", true=True, at=started),
    ]


def _container_status(
    container: Manifest, uid: str, *, state: Manifest, ready: bool, started: bool
) -> Manifest:
    name = str(container.get("name", ""))
    image = str(container.get("image", ""))
    return {
        "name": name,
        "image": image,
        "imageID": f"docker-pullable://{image}@sha256:{_digest(image)}",
        "containerID": _container_id(uid, container),
        "ready": ready,
        "restartCount": 0,
        "started": started,
        "state": state,
        "lastState": {},
    }


def _containers(pod: Manifest, key: str) -> list[Manifest]:
    spec = pod.get("spec")
    found = spec.get(key) if isinstance(spec, dict) else None
    return [item for item in found if isinstance(item, dict)] if isinstance(found, list) else []


class Kubelet:
    """Runs the cluster's pods: ``Running`` after ``run_seconds``, ``Succeeded`` after as
    many more. ``poll_seconds``: how often the thread looks (default 10 ms)."""

    def __init__(
        self, cluster: FakeCluster, *, run_seconds: float = 1.0, poll_seconds: float = 0.01
    ) -> None:
        _checks.check(self, "cluster", _checks.kind(FakeCluster), cluster)
        _checks.check(self, "run_seconds", _checks.delay, run_seconds)
        _checks.check(self, "poll_seconds", _checks.seconds, poll_seconds)
        self.cluster = cluster
        self.run_seconds = float(run_seconds)
        self.poll_seconds = float(poll_seconds)
        self._seen: dict[str, float] = {}
        self._started: dict[str, str] = {}
        self._ips: dict[str, str] = {}
        self._ip_count = 0
        self._stopping = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="k8s-workloads-fake-kubelet", daemon=True
        )

    def step(self, now: float) -> int:
        """One look at the cluster at ``now`` (seconds, any monotonic origin): the pods due
        move on. Returns how many statuses it wrote."""
        written = 0
        present = set()
        for pod in self.cluster.pods(copy=False):
            metadata = pod["metadata"]
            uid = str(metadata.get("uid", ""))
            present.add(uid)
            if metadata.get("deletionTimestamp"):
                continue
            seen = self._seen.setdefault(uid, now)
            phase = (pod.get("status") or {}).get("phase")
            if phase == "Pending" and now >= seen + self.run_seconds:
                written += self._write(pod, uid, self._running(pod, uid))
            elif phase == "Running" and now >= seen + 2 * self.run_seconds:
                written += self._write(pod, uid, self._succeeded(pod, uid))
        for gone in set(self._seen) - present:
            self._forget(gone)
        return written

    def _write(self, pod: Manifest, uid: str, status: Manifest) -> int:
        metadata = pod["metadata"]
        try:
            self.cluster.set_status(metadata["namespace"], metadata["name"], status, uid=uid)
        except KeyError:
            return 0  # deleted (or replaced) since the look: nothing to run
        return 1

    def _forget(self, uid: str) -> None:
        self._seen.pop(uid, None)
        self._started.pop(uid, None)
        self._ips.pop(uid, None)

    def _timestamp(self) -> str:
        now = self.cluster.now.astimezone(datetime.timezone.utc)
        return now.strftime("%Y-%m-%dT%H:%M:%SZ")

    def _ip(self, uid: str) -> str:
        if uid not in self._ips:
            self._ip_count += 1
            number = self._ip_count
            self._ips[uid] = f"10.244.{number // 250}.{number % 250 + 2}"
        return self._ips[uid]

    def _running(self, pod: Manifest, uid: str) -> Manifest:
        started = self._started.setdefault(uid, self._timestamp())
        ip = self._ip(uid)
        return {
            "phase": "Running",
            "conditions": _conditions(running=True, started=started, at=started),
            "hostIP": _HOST_IP,
            "hostIPs": [{"ip": _HOST_IP}],
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": started,
            "qosClass": (pod.get("status") or {}).get("qosClass", "BestEffort"),
            "initContainerStatuses": self._init_statuses(pod, uid, started),
            "containerStatuses": [
                _container_status(
                    container,
                    uid,
                    state={"running": {"startedAt": started}},
                    ready=True,
                    started=True,
                )
                for container in _containers(pod, "containers")
            ],
        }

    def _succeeded(self, pod: Manifest, uid: str) -> Manifest:
        started = self._started.setdefault(uid, self._timestamp())
        finished = self._timestamp()
        status = self._running(pod, uid)
        status["phase"] = "Succeeded"
        status["conditions"] = _conditions(running=False, started=started, at=finished)
        status["containerStatuses"] = [
            _container_status(
                container,
                uid,
                state={"terminated": self._completed(container, uid, started, finished)},
                ready=False,
                started=False,
            )
            for container in _containers(pod, "containers")
        ]
        return status

    def _init_statuses(self, pod: Manifest, uid: str, started: str) -> list[Manifest]:
        # Init containers ran to completion before the pod started.
        return [
            _container_status(
                container,
                uid,
                state={"terminated": self._completed(container, uid, started, started)},
                ready=True,
                started=False,
            )
            for container in _containers(pod, "initContainers")
        ]

    @staticmethod
    def _completed(container: Manifest, uid: str, started: str, finished: str) -> Manifest:
        return {
            "exitCode": 0,
            "reason": "Completed",
            "startedAt": started,
            "finishedAt": finished,
            "containerID": _container_id(uid, container),
        }

    # --- the thread -----------------------------------------------------------------

    def _run(self) -> None:
        while not self._stopping.wait(self.poll_seconds):
            self.step(time.monotonic())

    def start(self) -> Kubelet:
        """Run on a daemon thread until :meth:`stop`."""
        if not self._thread.is_alive() and not self._stopping.is_set():
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the thread (safe to call twice, or without a start)."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def __enter__(self) -> Kubelet:  # noqa: PYI034 - no typing.Self on Python 3.10
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
