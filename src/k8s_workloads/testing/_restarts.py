"""When a kubelet restarts a container, and how long it backs off first: for the kit's
kubelets (scripted and process), as pure code.

The rules are the kubelet's (verified against kubernetes/kubernetes):

* ``spec.restartPolicy`` (``kubecontainer.ShouldContainerBeRestarted``): ``Always``
  restarts a container after any exit, ``OnFailure`` after a non-zero exit, ``Never``
  never. An init container (one that is not a sidecar) restarts only after a failure, and
  only when the policy is not ``Never``.
* The back-off (``kuberuntime_manager.go`` ``doBackOff`` with client-go's
  ``flowcontrol.Backoff``; ``backOffPeriod`` 10 s and ``MaxContainerBackOff`` 300 s in
  ``pkg/kubelet``): the first exit of a container restarts it at once (no back-off entry
  yet: ``IsInBackOffSince`` is false, ``Next`` makes one of 10 s); each later exit waits
  the entry's back-off from the exit (``FinishedAt``), which then doubles, up to 5
  minutes. An entry not moved on for twice the maximum (10 minutes) starts over.
  Meanwhile the container is ``waiting`` with reason ``CrashLoopBackOff`` and the message
  ``back-off 10s restarting failed container=NAME pod=NAME_NAMESPACE(UID)``.

The kit's kubelets take the first back-off as ``restart_backoff`` (10 s by default) and
scale the maximum with it (30 times), so a test can run the whole rule in milliseconds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from k8s_workloads.pods.manifest import Manifest

__all__ = [
    "INITIAL_BACKOFF_SECONDS",
    "CrashLoop",
    "crash_loop_message",
    "go_duration",
    "restart_policy",
    "restarts",
]

INITIAL_BACKOFF_SECONDS = 10.0
"""The kubelet's first container back-off (``backOffPeriod`` in ``pkg/kubelet``)."""
_MAX_FACTOR = 30.0  # MaxContainerBackOff (300 s) over backOffPeriod (10 s)
_EXPIRY_FACTOR = 2.0  # flowcontrol's hasExpired: an entry idle for 2 * max starts over
_POLICIES = frozenset({"Always", "OnFailure", "Never"})


def restart_policy(pod: Manifest) -> str:
    """The pod's ``spec.restartPolicy``; ``Always`` (the API server's default) when it has
    none or one the kubelet does not know."""
    spec = pod.get("spec")
    policy = spec.get("restartPolicy") if isinstance(spec, dict) else None
    return policy if policy in _POLICIES else "Always"


def restarts(policy: str, exit_code: int | None, *, init: bool = False) -> bool:
    """Whether a container that exited with ``exit_code`` starts again under ``policy``;
    an ``init`` container only after a failure. An exit code of None (never ran) is not
    an exit."""
    if exit_code is None or policy == "Never":
        return False
    if init or policy == "OnFailure":
        return exit_code != 0
    return True


@attrs.define
class CrashLoop:
    """One container's back-off entry (``flowcontrol.Backoff`` for one key), in seconds of
    the kubelet's clock."""

    initial: float = INITIAL_BACKOFF_SECONDS
    backoff: float | None = None
    """The entry's current back-off; None before the first restart."""
    updated: float = 0.0
    """When the entry last moved on (``lastUpdate``)."""

    @property
    def maximum(self) -> float:
        """The longest back-off: 5 minutes for the kubelet's 10 s."""
        return self.initial * _MAX_FACTOR

    def restart_at(self, finished: float) -> float:
        """When the container that exited at ``finished`` starts again (``finished`` itself
        for the first exit); the entry moves on as ``Next`` moves it at that restart."""
        if self.backoff is None or finished - self.updated > _EXPIRY_FACTOR * self.maximum:
            delay, self.backoff = 0.0, self.initial
        else:
            delay, self.backoff = self.backoff, min(self.backoff * 2, self.maximum)
        self.updated = finished + delay
        return finished + delay


def go_duration(seconds: float) -> str:
    """``seconds`` as Go's ``time.Duration.String`` writes it: ``10s``, ``1m20s``,
    ``5m0s``, ``50ms``."""
    if seconds <= 0:
        return "0s"
    if seconds < 1:
        millis = round(seconds * 1000, 6)
        return f"{millis:g}ms"
    minutes, rest = divmod(round(seconds, 9), 60)
    text = f"{round(rest, 9):g}s"
    if minutes:
        hours, minutes = divmod(int(minutes), 60)
        text = f"{minutes}m{text}"
        if hours:
            text = f"{hours}h{text}"
    return text


def crash_loop_message(backoff: float, container: str, pod: Manifest) -> str:
    """The ``CrashLoopBackOff`` waiting message (``doBackOff``; the pod as ``format.Pod``
    writes it: ``name_namespace(uid)``)."""
    metadata = pod.get("metadata") or {}
    who = f"{metadata.get('name')}_{metadata.get('namespace')}({metadata.get('uid')})"
    return f"back-off {go_duration(backoff)} restarting failed container={container} pod={who}"
