"""What the executor tells an operator of its pods and the core's decisions on them:
:class:`_CreationLog`, given a logger, the pod calls, the metrics and the API server's
address, never the executor.

One info line a pod created, adopted or deleted; each pod creation that failed is one
warning naming the pod, the workload, the error and what follows; an outage is a few
lines, not one a pod.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from k8s_workloads.decisions.actions import EmitEvent, RequeueJob
from k8s_workloads.io.watching import describe_failure

if TYPE_CHECKING:
    import logging
    from collections.abc import Callable

    from k8s_workloads.airflow._metrics import _Metrics
    from k8s_workloads.decisions.actions import Decision
    from k8s_workloads.executor.requests import CreatePod, Handled, PodChanged
    from k8s_workloads.keys import WorkloadKey

__all__ = ["_CreationLog"]


class _CreationLog:
    """The pods' creations and the lines about them.

    ``create`` performs a creation (on the driver's threads) and keeps its error for
    the line of the core's decision on it; :meth:`pod_changed` and :meth:`decision` are
    the core's ``on_pod`` and ``on_decision``. ``server``: the API server's address, as
    the lines name it.
    """

    def __init__(
        self,
        *,
        create: Callable[[CreatePod], object],
        metrics: _Metrics,
        log: logging.Logger | logging.LoggerAdapter[Any],
        server: str,
    ) -> None:
        self.call = create
        """The creation call (the driver's threads perform it)."""
        self._metrics = metrics
        self.log = log
        self.server = server
        self.failed: dict[WorkloadKey, str] = {}
        """Each failed creation's error, until the core's decision on it."""
        self.unsent = False
        """Whether pod creations are paused: the last one did not reach the API server."""

    def create(self, request: CreatePod) -> object:
        """A pod's creation; its error is kept for the line of the core's decision on it."""
        try:
            answer = self.call(request)
        except BaseException as error:
            self.failed[request.key] = describe_failure(error)
            self._metrics.creation_failed(error)
            raise
        self._metrics.pod_created(request.key)
        if self.unsent:
            self.unsent = False
            self.log.info("Pod creations reach the API server at %s again", self.server)
        return answer

    def pod_changed(self, changed: PodChanged) -> None:
        """One info line a pod created, adopted or deleted (``ExecutorCore.on_pod``),
        naming the pod and its workload: ``Created pod airflow/etl-load-x1 of task etl.load
        run=manual__1 try=1``. Only calls the API server took: a creation that failed is
        :meth:`decision`'s line, and an outage adds none."""
        workload = "an unknown workload" if changed.key is None else changed.key.to_text()
        self.log.info(
            "%s pod %s/%s of %s",
            changed.change.capitalize(),
            changed.namespace,
            changed.pod_name,
            workload,
        )

    def decision(self, handled: Handled) -> None:
        """The core's decisions an operator reads (``ExecutorCore.on_decision``).

        Each pod creation that failed is one warning naming the pod, the workload, the
        error and what follows; one that got no clear answer is an info line (the pod is
        read back), and so is the read back finding it; not finding it is the warning. A
        creation that never reached the API server pauses them all: the first of a pause
        is a warning, the others of it debug lines, so an outage is a few lines. A pod
        that could not be built fails its workload (a warning); a result whose handling
        failed is a debug line while it is retried, a warning when given up. Stale
        workloads are logged where they are screened out.
        """
        cause = handled.cause
        if cause in {"result", "stale"}:
            return
        key, decision, log = handled.key, handled.decision, self.log
        if cause == "handling failed":
            pod = handled.result.pod_name if handled.result is not None else "?"
            level = log.debug if decision.retry is not None else log.warning
            level("Handling the result of pod %s of %s failed: %s", pod, key, decision.reason)
            return
        if cause == "build error":
            log.warning("No pod could be built for %s: %s", key, _outcome(decision))
            return
        pod = handled.pod_name or "?"
        if cause == "create confirmed":
            self.unsent = False
            self.failed.pop(key, None)
            self._metrics.pod_created(key)
            log.info("Pod %s of %s was created after all (read back)", pod, key)
            return
        self._creation_failed(handled, pod)

    def _creation_failed(self, handled: Handled, pod: str) -> None:
        """A creation's error, the line of the core's decision on it."""
        key, cause, log = handled.key, handled.cause, self.log
        outcome = _outcome(handled.decision)
        # Kept past a "create unknown": the decision after the read back quotes it.
        error = self.failed.get(key, "no error seen")
        if cause != "create unknown":
            self.failed.pop(key, None)
        if error.partition(": ")[2] in outcome:  # the outcome quotes it already
            error = error.partition(": ")[0]
        if cause == "create unsent":
            if self.unsent:
                log.debug(
                    "Creating pod %s of %s did not reach %s: %s; %s",
                    *(pod, key, self.server, error, outcome),
                )
                return
            self.unsent = True
            log.warning(
                "Creating pod %s of %s did not reach the API server at %s: %s; %s. Pod "
                "creations pause until it answers (what fails meanwhile: debug lines)",
                *(pod, key, self.server, error, outcome),
            )
            return
        self.unsent = False  # it was reached (and answered, or may have)
        if cause == "create unknown":  # one warning a creation: the decision after it
            log.info("Creating pod %s of %s got no clear answer: %s; %s", pod, key, error, outcome)
            return
        log.warning("Creating pod %s of %s failed: %s; %s", pod, key, error, outcome)


def _outcome(decision: Decision) -> str:
    """What follows for the workload, in words: queued again (why, after how long),
    failed (the event's reason), why nothing is done yet, or the decision's summary."""
    for action in decision.actions:
        if isinstance(action, RequeueJob):
            after = "" if action.delay is None else f" after {action.delay:g} s"
            return f"queued again{after} ({action.reason})"
        if isinstance(action, EmitEvent) and action.info:
            return f"the workload fails: {action.info}"
    ignored = decision.ignored
    return ignored.reason if ignored is not None else decision.reason
