"""Run an :class:`~k8s_workloads.executor.ExecutorCore` against the fake cluster and
database: the ``perform`` loop every executor writes, once, for tests and the simulator."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from k8s_workloads.decisions.actions import EmitEvent
from k8s_workloads.executor.requests import (
    ListPods,
    NothingToDo,
    ReadPod,
    ReadStates,
    Request,
    Waiting,
)
from k8s_workloads.io.calls import PlansAdoption
from k8s_workloads.io.policy import failure_is_done
from k8s_workloads.pods.labels import watcher_selector
from k8s_workloads.testing.cluster_calls import ClusterCalls
from k8s_workloads.testing.errors import FAILURES

if TYPE_CHECKING:
    import datetime
    import random
    from collections.abc import Iterable

    from k8s_workloads.executor.core import ExecutorCore
    from k8s_workloads.executor.requests import Adoption
    from k8s_workloads.keys import CallbackKey, GenericKey, TaskInstanceKey
    from k8s_workloads.testing.cluster import FakeCluster
    from k8s_workloads.testing.database import FakeAirflowDB
    from k8s_workloads.testing.watch import FakeWatch

__all__ = ["CoreDriver", "PassReport"]


class PassReport:
    """What one pass did: the requests performed (in order), those that failed, and
    when the core wants to be called again."""

    def __init__(self) -> None:
        self.performed: list[Request] = []
        self.failed: list[tuple[Request, BaseException]] = []
        self.until: datetime.datetime | None = None


class CoreDriver(PlansAdoption):
    """An executor made of an :class:`ExecutorCore`, a :class:`FakeCluster` and a
    :class:`FakeAirflowDB`: it watches the cluster, feeds the core and performs its
    requests. ``perform`` is the whole mapping from requests to calls. It runs the one
    watch of a core that has one (``ExecutorConfig.watched_namespaces``)."""

    def __init__(self, core: ExecutorCore, cluster: FakeCluster, db: FakeAirflowDB) -> None:
        self.core = core
        self.cluster = cluster
        self.db = db
        self.calls = ClusterCalls(cluster)
        self.watch: FakeWatch = self._start_watch()

    def _start_watch(self) -> FakeWatch:
        watched = self.core.watched_namespaces
        if len(watched) != 1:
            raise ValueError(f"a CoreDriver runs one watch; the core watches {len(watched)}")
        (namespace,) = watched
        selector = watcher_selector(self.core.config.scheduler_id)
        return self.cluster.watch(
            namespace,
            label_selector=selector.label_selector,
            field_selector=selector.field_selector,
            resource_version=self.core.resource_version(namespace),
        )

    def deliver(self, *, now: datetime.datetime, limit: int | None = None) -> int:
        """Feed the core the watch events that have arrived (at most ``limit``)."""
        events = self.watch.lines(limit)
        for line in events:
            self.core.feed_event(line, now=now)
        self.ensure_watch()
        return len(events)

    def ensure_watch(self) -> None:
        """Start a new watch once the old one ended (a 410) and was read to the end,
        unless the core still waits for its re-list (which restarts the watch)."""
        if self.watch.closed and not len(self.watch) and not self.core.is_relisting:
            self.watch = self._start_watch()

    def perform(self, request: Request) -> None:
        """Perform one request against the cluster or the database (raises as they do;
        a failure the shared policy calls done, such as a 404 on a delete, is not raised).
        A :class:`ReadStates`, :class:`ListPods` or :class:`ReadPod` is answered to the
        core here."""
        if isinstance(request, EmitEvent):
            self.db.record(request)
            return
        if isinstance(request, ReadStates):
            self.core.states_read(request, self.db.read_states(request.keys))
            return
        try:
            answer = self.calls.perform(request)
        except FAILURES as error:
            if failure_is_done(request, error):
                return
            raise
        if isinstance(request, ReadPod):
            self.core.pod_read(request, cast("dict[str, Any] | None", answer))
        elif isinstance(request, ListPods):
            pods, version = cast("tuple[list[dict[str, Any]], str | None]", answer)
            self.core.pods_listed(request, pods, version)
            self.watch = self._start_watch()

    # --- concurrent driving: many requests in flight --------------------------------

    @property
    def in_flight(self) -> tuple[Request, ...]:
        """Requests started and not completed yet (see :meth:`start`)."""
        return self.core.in_flight

    def start(self, now: datetime.datetime) -> tuple[list[Request], Waiting | NothingToDo]:
        """Start every request the core hands out now, until it waits for a completion
        (:class:`Waiting`) or the pass is over (:class:`NothingToDo`); each stays in
        flight until :meth:`complete`. Returns them and the core's last answer."""
        started: list[Request] = []
        while not isinstance(answer := self.core.start_request(now), (Waiting, NothingToDo)):
            started.append(answer)
        return started, answer

    def complete(self, request: Request) -> BaseException | None:
        """Perform ``request`` (in flight) against the cluster or the database now and
        report its outcome to the core; returns its failure, if it failed."""
        try:
            self.perform(request)
        except FAILURES as error:
            self.core.request_failed(request, error)
            return error
        if not isinstance(request, (ReadStates, ListPods, ReadPod)):  # perform answered those
            self.core.request_done(request)
        return None

    def run_pass_concurrently(self, now: datetime.datetime, *, order: random.Random) -> PassReport:
        """One ``sync()`` with many requests in flight: start what the core hands out,
        complete one in flight (picked by ``order``), repeat until the pass is over."""
        report = PassReport()
        while True:
            started, answer = self.start(now)
            report.performed.extend(started)
            if isinstance(answer, NothingToDo):
                report.until = answer.until
                return report
            in_flight = self.core.in_flight
            request = in_flight[order.randrange(len(in_flight))]
            error = self.complete(request)
            if error is not None:
                report.failed.append((request, error))

    def run_pass(self, now: datetime.datetime) -> PassReport:
        """One ``sync()``: every request the core has, until it has nothing to do.

        The kit's failures (:class:`ApiError`, a connection reset, a database outage) go
        to the core; anything else — a bug, a failed check in a test — propagates.
        """
        report = PassReport()

        def perform(request: Request) -> None:
            report.performed.append(request)
            try:
                self.perform(request)
            except FAILURES as error:
                report.failed.append((request, error))
                raise

        report.until = self.core.run_pass(now, perform, failures=FAILURES).until
        return report

    def adopt(
        self,
        dead_scheduler_ids: Iterable[str | int],
        *,
        now: datetime.datetime,
        alive_scheduler_ids: Iterable[str | int] = (),
        expected_task_keys: Iterable[TaskInstanceKey] | None = None,
        expected_callback_keys: Iterable[CallbackKey] | None = None,
        expected_generic_keys: Iterable[GenericKey] | None = None,
    ) -> Adoption:
        """``try_adopt_task_instances``: list the pods the core's
        :meth:`~k8s_workloads.executor.ExecutorCore.adoption_lists` name (the dead
        schedulers' live pods, orphaned callback pods, Succeeded pods no live scheduler
        owns), adopt them, perform the relabels and say what to run again: the expected
        keys with no pod anywhere (:class:`~k8s_workloads.executor.Adoption`), generic
        workloads' (``expected_generic_keys``) as callbacks'."""
        alive, dead = list(alive_scheduler_ids), list(dead_scheduler_ids)
        lists = self.core.adoption_lists(dead, alive)
        plan, expected = self.plan_adoption(
            [self.calls.perform(listing) for listing in lists],
            alive,
            expected_task_keys=expected_task_keys,
            expected_callback_keys=expected_callback_keys,
            expected_generic_keys=expected_generic_keys,
            dead_scheduler_ids=dead,
        )
        self.run_pass(now)
        return self.core.adoption(plan, expected)
