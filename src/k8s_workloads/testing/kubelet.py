"""The kit's kubelet in scripted mode: pods bound, run and ended by a plan.

``run_seconds`` after the kubelet first sees a pod (one with no ``deletionTimestamp``,
still ``Pending``) it binds the pod to its node at once (``spec.nodeName``), writes a
``Running`` status ``run_seconds`` later and, ``run_seconds`` after that, ends the pod
as its :class:`PodOutcome` says — by default it succeeds. A plan (a mapping from pod name
to outcome, or a callable from the pod manifest to one) picks other endings (the phases
below are those of a pod with ``restartPolicy: Never``; restarts are described after):

============================  ==============================================================
:meth:`PodOutcome.success`    ``Succeeded``; every container terminated, exit 0, ``Completed``
:meth:`PodOutcome.failure`    ``Failed``; the container exits ``exit_code``, reason ``Error``
:meth:`PodOutcome.oom_killed`  ``Failed``; the container exits 137, reason ``OOMKilled``
:meth:`PodOutcome.image_pull_failure`  stays ``Pending``: waiting ``ErrImagePull``, then
                              ``ImagePullBackOff`` (the pod never runs)
:meth:`PodOutcome.eviction`   ``Failed``, reason ``Evicted`` with a message, a
                              ``DisruptionTarget`` condition, containers exit 137
:meth:`PodOutcome.node_loss`  the node is gone once the pod ran: nothing more is written and
                              a deletion is never confirmed (it stays ``Terminating``)
============================  ==============================================================

A container ends with the message a kubelet gives it (see
:mod:`k8s_workloads.testing._termination`): an outcome's ``message`` stands for what the
container wrote to its ``terminationMessagePath``; its ``logs`` are the lines it wrote to
its log, added to the pod's log when the run ends, whose tail is the message of a
non-zero exit that wrote none when the container's ``terminationMessagePolicy`` is
``FallbackToLogsOnError`` (the policy the executor's pods have by default).

Restarts follow the pod's ``restartPolicy`` (defaulted to ``Always`` by the API server:
a pod that should end says ``Never`` or ``OnFailure``), as the kubelet's (see
:mod:`k8s_workloads.testing._restarts`): when a run ends, each container whose exit the
policy restarts (``Always``: any; ``OnFailure``: non-zero) is written ``terminated`` with
the pod still ``Running``, then, once its back-off is over (none after the first exit,
then ``restart_backoff`` seconds, 10 by default, doubling to 30 times that), ``running``
again for another ``run_seconds`` with ``restartCount`` one more and ``lastState`` the run
before; while it backs off it is ``waiting`` with reason ``CrashLoopBackOff``. Each run ends
as the outcome says (:meth:`PodOutcome.succeeding_after`: success after some runs). Only a
run that the policy does not restart ends the pod (``Succeeded`` when every container
exited 0, else ``Failed``); an eviction ends it whatever the policy.

The statuses have what a real kubelet reports and executors read (see
:mod:`k8s_workloads.testing._statuses`): every container with ``image``, ``imageID``,
``containerID``, ``ready``, ``restartCount``, ``started`` and ``state``; conditions;
``hostIP``/``podIP``; ``startTime``. A pod the test moved on itself (to ``Failed``, say)
is left alone, and so is a pod bound to another node.

A deleted pod (``deletionTimestamp`` set: the cluster keeps a bound pod ``Terminating``
until its kubelet confirms) that is running stops as on SIGTERM: after the outcome's
``sigterm_seconds`` (exit 143) or, if that is None or not within the grace period
(``deletionGracePeriodSeconds``, else the pod's ``terminationGracePeriodSeconds``, else
30), killed at its end (exit 137); the terminated status is written (``Failed``), then the
kubelet confirms the deletion (:meth:`FakeCluster.finish_deletion`), once (a pod its
finalizers hold stays until they are removed). A pod that never ran, already ended or is
between runs is confirmed at once; a pod simply gone is forgotten.

Timestamps are the cluster's ``now``. Run it on its own thread (:meth:`Kubelet.start`, or
as a context manager), or call :meth:`Kubelet.step` with the time yourself. The thread and
the test may share the cluster (it is thread-safe); ``step`` itself is for one thread.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, ClassVar, TypeVar

import attrs

from k8s_workloads import config_checks as _checks
from k8s_workloads.pods.manifest import Manifest
from k8s_workloads.testing import _restarts, _statuses, _termination
from k8s_workloads.testing._service import Service
from k8s_workloads.testing.cluster import FakeCluster
from k8s_workloads.testing.errors import ApiError

__all__ = ["DEFAULT_NODE", "Kubelet", "Plan", "PodOutcome"]

DEFAULT_NODE = "kit-node"
"""The node the kit's kubelets run pods on, unless told otherwise."""

_EVICTION_MESSAGE = (
    "The node was low on resource: memory. Threshold quantity: 100Mi, available: 64Mi. "
    "Container {container} was using 2Gi, request is 0, has larger consumption of memory. "
)
_DEFAULT_GRACE_SECONDS = 30.0
_SIGTERM_EXIT = 128 + 15
_SIGKILL_EXIT = 128 + 9


def _image_pull_message(image: str) -> str:
    return (
        f'Failed to pull image "{image}": rpc error: code = NotFound desc = failed to pull '
        f'and unpack image "{image}": failed to resolve reference "{image}": not found'
    )


def _lines(value: Iterable[str]) -> tuple[str, ...]:
    """Log lines as a tuple of strings (one string is one line, not its letters)."""
    lines = (value,) if isinstance(value, str) else tuple(value)
    if not all(isinstance(line, str) for line in lines):
        raise _checks.InvalidConfig("PodOutcome", "logs", "must be strings, a line each")
    return lines


def _optional_runs(instance: object, attribute: Any, value: object) -> None:  # noqa: ANN401
    if value is not None:
        _checks.positive(instance, attribute, value)


@attrs.frozen
class PodOutcome:
    """How the scripted kubelet ends one pod; make one with the class methods."""

    KINDS: ClassVar[frozenset[str]] = frozenset(
        {"success", "failure", "oom_killed", "image_pull_failure", "eviction", "node_loss"}
    )

    kind: str = attrs.field(validator=attrs.validators.in_(KINDS))
    exit_code: int = 0
    """The ending container's exit code."""
    reason: str | None = None
    """The container's (``failure``) or the pod's (``eviction``) reason."""
    message: str | None = None
    container: str | None = None
    """The container that fails (default: the first); the others complete with 0."""
    sigterm_seconds: float | None = attrs.field(default=0.0, validator=_checks.grace)
    """On deletion, how long the containers take to exit after SIGTERM; None: they
    ignore it and are killed when the grace period ends."""
    succeeds_after: int | None = attrs.field(default=None, validator=_optional_runs)
    """How many runs of the containers end as this outcome before one succeeds (None: all
    of them); see :meth:`succeeding_after`."""
    logs: tuple[str, ...] = attrs.field(default=(), converter=_lines)
    """What the container (the outcome's, else the first) writes to its log in each run,
    a line each: added to the pod's log when the run ends (:meth:`FakeCluster.pod_log`),
    and with ``terminationMessagePolicy: FallbackToLogsOnError`` the tail of them is the
    message of a non-zero exit that wrote no message (see the module)."""

    @classmethod
    def success(cls, *, logs: Iterable[str] = ()) -> PodOutcome:
        """Every container exits 0 (``Completed``): the pod ``Succeeded``."""
        return cls("success", logs=_lines(logs))

    @classmethod
    def failure(
        cls,
        exit_code: int = 1,
        *,
        message: str | None = None,
        container: str | None = None,
        logs: Iterable[str] = (),
    ) -> PodOutcome:
        """The container exits ``exit_code`` (reason ``Error``): the pod ``Failed``.
        ``message``: what it wrote to its ``terminationMessagePath`` (its terminated
        state's message, whatever the policy); ``logs``: the lines it wrote to its log."""
        code: object = exit_code  # checked: callers may pass anything
        if isinstance(code, bool) or not isinstance(code, int) or code < 1:
            raise _checks.InvalidConfig("PodOutcome", "exit_code", "must be an int from 1")
        return cls("failure", exit_code, "Error", message, container, logs=_lines(logs))

    @classmethod
    def oom_killed(cls, *, container: str | None = None) -> PodOutcome:
        """The container is killed for memory (137, ``OOMKilled``): the pod ``Failed``."""
        return cls("oom_killed", _SIGKILL_EXIT, "OOMKilled", None, container)

    @classmethod
    def image_pull_failure(cls, *, message: str | None = None) -> PodOutcome:
        """The image never pulls: ``ErrImagePull``, then ``ImagePullBackOff``; ``Pending``."""
        return cls("image_pull_failure", message=message)

    @classmethod
    def eviction(cls, *, message: str | None = None) -> PodOutcome:
        """The node evicts the pod under memory pressure: ``Failed``, reason ``Evicted``."""
        return cls("eviction", _SIGKILL_EXIT, "Evicted", message)

    @classmethod
    def node_loss(cls) -> PodOutcome:
        """The node is lost once the pod runs: the pod stays as last written."""
        return cls("node_loss")

    def stopping_after(self, seconds: float | None) -> PodOutcome:
        """The same outcome, its containers exiting ``seconds`` after SIGTERM (None: never)."""
        return attrs.evolve(self, sigterm_seconds=seconds)

    def succeeding_after(self, runs: int) -> PodOutcome:
        """The same outcome for the containers' first ``runs`` runs, success after: with
        ``restartPolicy: OnFailure`` a failure is restarted ``runs`` times, then the pod
        ``Succeeded``."""
        return attrs.evolve(self, succeeds_after=runs)


Plan = Mapping[str, PodOutcome] | Callable[[Manifest], PodOutcome]
"""How a kubelet picks each pod's outcome: by pod name (a pod not named succeeds), or a
callable given the pod manifest (a copy)."""

_SUCCESS = PodOutcome.success()


K = TypeVar("K", bound="_KubeletBase")  # the kubelet's own class (no typing.Self on 3.10)


class _KubeletBase(Service):
    """What both kit kubelets share: the node, the pod IPs, the clock, binding, status
    writes, deletion confirmations (once per pod), the restart back-off and the thread
    that calls :meth:`step`."""

    def __init__(
        self,
        cluster: FakeCluster,
        *,
        node_name: str,
        poll_seconds: float,
        restart_backoff: float = _restarts.INITIAL_BACKOFF_SECONDS,
    ) -> None:
        _checks.check(self, "cluster", _checks.kind(FakeCluster), cluster)
        _checks.check(self, "poll_seconds", _checks.seconds, poll_seconds)
        _checks.check(self, "restart_backoff", _checks.delay, restart_backoff)
        node: object = node_name
        if not isinstance(node, str) or not node:
            raise _checks.InvalidConfig(type(self).__name__, "node_name", "must be a name")
        self.cluster = cluster
        self.node_name = node_name
        self.poll_seconds = float(poll_seconds)
        self.restart_backoff = float(restart_backoff)
        self._ips: dict[str, str] = {}
        self._confirmed: set[str] = set()  # uids whose deletion this kubelet confirmed
        self._ip_count = 0
        self._stopping = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"k8s-workloads-{type(self).__name__}", daemon=True
        )

    def step(self, now: float) -> int:
        raise NotImplementedError

    def _my_pods(self, present: set[str]) -> Iterator[tuple[Manifest, str]]:
        """The cluster's pods this node runs, each with its uid (a shared snapshot, read
        only); every pod's uid, this node's or not, goes into ``present``."""
        for pod in self.cluster.pods(copy=False):
            uid = str(pod["metadata"].get("uid", ""))
            present.add(uid)
            if self._mine(pod):
                yield pod, uid

    def _mine(self, pod: Manifest) -> bool:
        node = (pod.get("spec") or {}).get("nodeName")
        return node in {None, "", self.node_name}

    def _bind(self, pod: Manifest) -> bool:
        """Bind the pod to this node; False if it cannot be (gone since the look, or bound
        to another node first: a 409): then it is not this kubelet's to run."""
        if (pod.get("spec") or {}).get("nodeName"):
            return True  # _mine checked that it is this node
        metadata = pod["metadata"]
        try:
            self.cluster.bind_pod(metadata["namespace"], metadata["name"], self.node_name)
        except (ApiError, KeyError):
            return False
        return True

    def _write(self, pod: Manifest, status: Manifest) -> int:
        metadata = pod["metadata"]
        try:
            self.cluster.set_status(
                metadata["namespace"], metadata["name"], status, uid=metadata.get("uid")
            )
        except KeyError:
            return 0  # deleted (or replaced) since the look: nothing to run
        return 1

    def _finish(self, pod: Manifest) -> int:
        """Confirm the pod's deletion, once: a pod its finalizers still hold stays, and is
        not confirmed again."""
        metadata = pod["metadata"]
        uid = str(metadata.get("uid", ""))
        if uid in self._confirmed:
            return 0
        try:
            self.cluster.finish_deletion(metadata["namespace"], metadata["name"], uid=uid)
        except (ApiError, KeyError):
            return 0  # already gone
        self._confirmed.add(uid)
        return 1

    def _forget(self, present: set[str]) -> None:
        """Drop what is kept for pods no longer in the cluster."""
        self._confirmed &= present

    def _crash_loop(self) -> _restarts.CrashLoop:
        """A new container back-off entry, at this kubelet's ``restart_backoff``."""
        return _restarts.CrashLoop(self.restart_backoff)

    def _timestamp(self) -> str:
        now = self.cluster.now.astimezone(datetime.timezone.utc)
        return now.strftime("%Y-%m-%dT%H:%M:%SZ")

    def _ip(self, uid: str) -> str:
        if uid not in self._ips:
            self._ip_count += 1
            number = self._ip_count
            self._ips[uid] = f"10.244.{number // 250}.{number % 250 + 2}"
        return self._ips[uid]

    @staticmethod
    def _grace_seconds(pod: Manifest) -> float:
        for value in (
            pod["metadata"].get("deletionGracePeriodSeconds"),
            (pod.get("spec") or {}).get("terminationGracePeriodSeconds"),
        ):
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
                return float(value)
        return _DEFAULT_GRACE_SECONDS

    # --- the thread -----------------------------------------------------------------

    def _run(self) -> None:
        while not self._stopping.wait(self.poll_seconds):
            self.step(time.monotonic())

    def start(self: K) -> K:  # noqa: PYI019 - no typing.Self on Python 3.10
        """Run on a daemon thread until :meth:`stop`."""
        if not self._thread.is_alive() and not self._stopping.is_set():
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the thread (safe to call twice, or without a start)."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)


@attrs.define
class _Run:
    seen: float
    outcome: PodOutcome
    crash_loop: _restarts.CrashLoop
    stage: str = "new"  # new, pulling, pullbackoff, running, exited, crashloop, done, lost
    started: str | None = None
    due: float = 0.0  # when the running containers exit
    stop_at: float | None = None
    stop_code: int = _SIGTERM_EXIT
    runs: int = 0  # runs ended so far
    states: dict[str, Manifest] = attrs.field(factory=dict)  # each container's state now
    ended: dict[str, Manifest] = attrs.field(factory=dict)  # the run that just ended
    restarts: dict[str, tuple[int, Manifest]] = attrs.field(factory=dict)
    exited_at: float = 0.0
    restart_at: float = 0.0

    def current_outcome(self) -> PodOutcome:
        """This run's outcome: the plan's, or success once its runs are over."""
        limit = self.outcome.succeeds_after
        return self.outcome if limit is None or self.runs < limit else _SUCCESS


class Kubelet(_KubeletBase):
    """Runs the cluster's pods by a plan (default: each succeeds): ``Running`` after
    ``run_seconds``, ended after as many more, restarted as the pod's ``restartPolicy``
    says (see the module's description). ``poll_seconds``: how often the thread looks
    (default 10 ms); ``node_name``: the node it binds pods to; ``restart_backoff``: the
    first back-off before a restart (default 10 s, the kubelet's; the longest is 30 times
    it)."""

    def __init__(
        self,
        cluster: FakeCluster,
        *,
        run_seconds: float = 1.0,
        poll_seconds: float = 0.01,
        plan: Plan | None = None,
        node_name: str = DEFAULT_NODE,
        restart_backoff: float = _restarts.INITIAL_BACKOFF_SECONDS,
    ) -> None:
        super().__init__(
            cluster, node_name=node_name, poll_seconds=poll_seconds, restart_backoff=restart_backoff
        )
        _checks.check(self, "run_seconds", _checks.delay, run_seconds)
        if plan is not None and not isinstance(plan, Mapping) and not callable(plan):
            raise _checks.InvalidConfig("Kubelet", "plan", "must be None, a mapping or callable")
        self.run_seconds = float(run_seconds)
        self.plan = plan
        self._runs: dict[str, _Run] = {}

    def _outcome(self, pod: Manifest) -> PodOutcome:
        if self.plan is None:
            return _SUCCESS
        if isinstance(self.plan, Mapping):
            found = self.plan.get(pod["metadata"]["name"], _SUCCESS)
        else:
            found = self.plan(json.loads(json.dumps(pod)))
        if not isinstance(found, PodOutcome):
            raise TypeError(f"the plan gave {found!r} for a pod, not a PodOutcome")
        return found

    def step(self, now: float) -> int:
        """One look at the cluster at ``now`` (seconds, any monotonic origin): the pods due
        move on. Returns how many statuses it wrote and deletions it confirmed."""
        written = 0
        present: set[str] = set()
        for pod, uid in self._my_pods(present):
            run = self._runs.get(uid)
            if pod["metadata"].get("deletionTimestamp"):
                written += self._terminating(pod, run, now)
                continue
            if run is None:
                if not self._bind(pod):
                    continue
                run = self._runs[uid] = _Run(now, self._outcome(pod), self._crash_loop())
            written += self._advance(pod, run, now)
        for gone in set(self._runs) - present:
            self._runs.pop(gone, None)
            self._ips.pop(gone, None)
        self._forget(present)
        return written

    def _advance(self, pod: Manifest, run: _Run, now: float) -> int:
        phase = (pod.get("status") or {}).get("phase")
        if run.stage == "new" and phase == "Pending" and now >= run.seen + self.run_seconds:
            run.started = self._timestamp()
            run.due = run.seen + 2 * self.run_seconds
            if run.outcome.kind == "image_pull_failure":
                run.stage = "pulling"
                return self._write(pod, self._pulling(pod, run, "ErrImagePull"))
            run.stage = "running"
            run.states = {name: _statuses.running(run.started) for name in _names(pod)}
            return self._write(pod, self._status(pod, run, "Running"))
        due = now >= run.seen + 2 * self.run_seconds
        if run.stage == "pulling" and phase == "Pending" and due:
            run.stage = "pullbackoff"
            return self._write(pod, self._pulling(pod, run, "ImagePullBackOff"))
        if phase != "Running":
            return 0  # not yet running, ended, or moved on by the test: left alone
        if run.stage == "running" and now >= run.due:
            if run.outcome.kind == "node_loss":
                run.stage = "lost"
                return 0
            return self._write(pod, self._exit(pod, run, now))
        # A back-off, however short, is shown before the restart: the kubelet's sync after
        # the exit finds the container in it.
        shown = run.stage == "crashloop" or run.restart_at == run.exited_at
        if run.stage in {"exited", "crashloop"} and now >= run.restart_at and shown:
            return self._write(pod, self._restart(pod, run, now))
        if run.stage == "exited":  # backing off: CrashLoopBackOff
            run.stage = "crashloop"
            waited = run.restart_at - run.exited_at
            for name in run.ended:
                message = _restarts.crash_loop_message(waited, name, pod)
                run.states[name] = _statuses.waiting("CrashLoopBackOff", message)
                run.restarts[name] = (run.restarts.get(name, (0, {}))[0], run.ended[name])
            return self._write(pod, self._status(pod, run, "Running"))
        return 0

    def _exit(self, pod: Manifest, run: _Run, now: float) -> Manifest:
        """The running containers exit as this run's outcome says: the pod ends, or those
        its ``restartPolicy`` restarts wait for it (``exited``)."""
        outcome = run.current_outcome()
        run.runs += 1
        if outcome.kind == "eviction":
            run.stage = "done"
            return self._evicted(pod, run, outcome)
        ended = self._ended_states(pod, run, outcome)
        policy = _restarts.restart_policy(pod)
        run.ended = {
            name: state
            for name, state in ended.items()
            if _restarts.restarts(policy, state["terminated"]["exitCode"])
        }
        run.states.update(ended)
        if not run.ended:
            run.stage = "done"
            codes = [state["terminated"]["exitCode"] for state in run.states.values()]
            return self._status(pod, run, "Succeeded" if not any(codes) else "Failed")
        run.stage = "exited"
        run.exited_at, run.restart_at = now, run.crash_loop.restart_at(now)
        return self._status(pod, run, "Running")

    def _restart(self, pod: Manifest, run: _Run, now: float) -> Manifest:
        started = self._timestamp()
        for name, state in run.ended.items():
            count = run.restarts.get(name, (0, {}))[0]
            run.restarts[name] = (count + 1, state)
            run.states[name] = _statuses.running(started)
        run.ended = {}
        run.stage = "running"
        run.due = now + self.run_seconds
        return self._status(pod, run, "Running")

    def _terminating(self, pod: Manifest, run: _Run | None, now: float) -> int:
        if run is None or run.stage != "running":
            if run is not None and run.stage == "lost":
                return 0  # no kubelet left to confirm it
            return self._finish(pod)  # nothing runs: never ran, ended, or between runs
        if run.stop_at is None:
            grace = self._grace_seconds(pod)
            after = run.outcome.sigterm_seconds
            if after is not None and after < grace:
                run.stop_at, run.stop_code = now + after, _SIGTERM_EXIT
            else:
                run.stop_at, run.stop_code = now + grace, _SIGKILL_EXIT
        if now < run.stop_at:
            return 0
        run.stage = "done"
        finished = self._timestamp()
        uid = pod["metadata"]["uid"]
        for name, state in run.states.items():
            if "running" in state:
                run.states[name] = _statuses.terminated(
                    uid,
                    name,
                    exit_code=run.stop_code,
                    started=state["running"]["startedAt"],
                    finished=finished,
                    attempt=run.restarts.get(name, (0, {}))[0],
                )
        return self._write(pod, self._status(pod, run, "Failed")) + self._finish(pod)

    # --- statuses -------------------------------------------------------------------

    def _status(
        self,
        pod: Manifest,
        run: _Run,
        phase: str,
        **extra: Any,  # noqa: ANN401 - pod_status's keywords
    ) -> Manifest:
        """The pod's status with each container's state as the run holds it."""
        states = [run.states[name] for name in _names(pod)]
        uid = pod["metadata"]["uid"]
        return _statuses.pod_status(
            pod,
            uid,
            phase=phase,
            states=states,
            started=str(run.started),
            at=self._timestamp(),
            pod_ip=self._ip(uid),
            restarts=run.restarts,
            **extra,
        )

    def _pulling(self, pod: Manifest, run: _Run, reason: str) -> Manifest:
        images = {
            str(item.get("name", "")): str(item.get("image", ""))
            for item in _statuses.containers(pod)
        }
        message = run.outcome.message
        for name, image in images.items():
            if reason == "ImagePullBackOff":
                run.states[name] = _statuses.waiting(reason, f'Back-off pulling image "{image}"')
            else:
                run.states[name] = _statuses.waiting(reason, message or _image_pull_message(image))
        return self._status(pod, run, "Pending")

    def _ended_states(self, pod: Manifest, run: _Run, outcome: PodOutcome) -> dict[str, Manifest]:
        """How each container running this run ends: the failing one (the outcome's, else
        the first) as the outcome says, the others with 0."""
        names = _names(pod)
        failing = outcome.container or (names[0] if names else "")
        specs = {str(item.get("name", "")): item for item in _statuses.containers(pod)}
        finished = self._timestamp()
        uid = pod["metadata"]["uid"]
        ended = {}
        for name, state in run.states.items():
            if "running" not in state:
                continue  # ended in an earlier run, not restarted (OnFailure, exit 0)
            mine = name == failing
            code = outcome.exit_code if mine else 0
            lines = self._log_run(pod, name, outcome.logs if mine else ())
            written = outcome.message if mine else None
            message = _termination.termination_message(
                specs.get(name, {}),
                exit_code=code,
                reason=outcome.reason if mine else None,
                written=None if written is None else written.encode(),
                log_lines=lines,
            )
            ended[name] = _statuses.terminated(
                uid,
                name,
                exit_code=code,
                started=state["running"]["startedAt"],
                finished=finished,
                reason=outcome.reason if mine else None,
                message=message,
                attempt=run.restarts.get(name, (0, {}))[0],
            )
        return ended

    def _log_run(self, pod: Manifest, container: str, lines: tuple[str, ...]) -> list[str]:
        """This run's log lines, each ended by a newline, added to the pod's log."""
        written = [line if line.endswith("\n") else f"{line}\n" for line in lines]
        metadata = pod["metadata"]
        with contextlib.suppress(KeyError):  # deleted since the look: no status written either
            for line in written:
                self.cluster.append_log(metadata["namespace"], metadata["name"], container, line)
        return written

    def _evicted(self, pod: Manifest, run: _Run, outcome: PodOutcome) -> Manifest:
        names = _names(pod)
        failing = outcome.container or (names[0] if names else "")
        finished = self._timestamp()
        uid = pod["metadata"]["uid"]
        for name, state in run.states.items():
            started = state.get("running", {}).get("startedAt", str(run.started))
            run.states[name] = _statuses.terminated(
                uid,
                name,
                exit_code=outcome.exit_code,
                started=started,
                finished=finished,
                attempt=run.restarts.get(name, (0, {}))[0],
            )
        message = outcome.message or _EVICTION_MESSAGE.format(container=failing)
        return self._status(
            pod,
            run,
            "Failed",
            reason="Evicted",
            message=message,
            disruption=_statuses.disruption_target("TerminationByKubelet", message, finished),
        )


def _names(pod: Manifest) -> list[str]:
    return [str(item.get("name", "")) for item in _statuses.containers(pod)]
