"""What the simulation keeps while it runs: what it reports as it goes (the
:class:`Journal`, which holds the current tick), each workload's record (it outlives the
schedulers), each pod the kubelet plays, what a scheduler holds in memory; and the short
forms of keys and decisions the timeline shows.

The simulator's parts (``_airflow``, ``_checks``, ``_restart``, ``_timeline``) take these
records, and the values they read, as arguments: none of them knows the
:class:`~k8s_workloads.sim.world.Simulation` that holds them."""

from __future__ import annotations

import dataclasses
import heapq
from typing import TYPE_CHECKING, Any

from k8s_workloads.decisions.actions import Action, describe_action
from k8s_workloads.pods.labels import make_safe_label_value
from k8s_workloads.sim.report import Anomaly, EmittedEvent, TimelineEntry

if TYPE_CHECKING:
    from collections.abc import Iterable

    from k8s_workloads.executor.core import ExecutorCore
    from k8s_workloads.executor.requests import Handled
    from k8s_workloads.keys import WorkloadKey
    from k8s_workloads.pods.manifest import Manifest
    from k8s_workloads.sim.spec import PodScript, WorkloadSpec
    from k8s_workloads.testing.watch import FakeWatch

__all__ = [
    "Crash",
    "Journal",
    "Live",
    "PodRun",
    "Scheduler",
    "action_texts",
    "describe_key",
    "shorten",
]


def describe_key(key: WorkloadKey) -> str:
    # One run per timeline line: the run id would only repeat itself.
    return key.to_text(run_id=False)


def shorten(text: str, key: WorkloadKey) -> str:
    """A decision's reason with the key's long repr replaced by its short description."""
    return text.replace(repr(key), describe_key(key))


def action_texts(actions: Iterable[Action], key: WorkloadKey) -> tuple[str, ...]:
    return tuple(shorten(describe_action(action), key) for action in actions)


@dataclasses.dataclass
class Live:
    """A workload while the run goes on; survives scheduler restarts."""

    spec: WorkloadSpec
    key: WorkloadKey
    launches: int = 0
    create_calls: int = 0
    pods: list[str] = dataclasses.field(default_factory=list)
    events: list[str] = dataclasses.field(default_factory=list)
    terminal_events: int = 0
    notes: list[str] = dataclasses.field(default_factory=list)
    completed_by_adoption: set[str] = dataclasses.field(default_factory=set)
    lost_reported: bool = False

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


@dataclasses.dataclass
class Journal:
    """What the run reports as it goes, each entry at the current tick ``t``: the timeline
    (kept only when ``record_timeline``), the anomalies and the scheduler's event log."""

    record_timeline: bool = True
    t: int = 0
    timeline: list[TimelineEntry] = dataclasses.field(default_factory=list)
    anomalies: list[Anomaly] = dataclasses.field(default_factory=list)
    event_log: list[EmittedEvent] = dataclasses.field(default_factory=list)

    def log(self, kind: str, text: str, **fields: Any) -> None:  # noqa: ANN401
        if self.record_timeline:
            self.timeline.append(TimelineEntry(self.t, kind, text, **fields))

    def anomaly(self, kind: str, message: str, live: Live | None = None) -> None:
        self.anomalies.append(Anomaly(kind, message, self.t, live.spec.id if live else None))
        if live is not None:
            live.note(f"ANOMALY {kind}")


@dataclasses.dataclass
class PodRun:
    """A pod the kubelet drives through its script."""

    namespace: str
    name: str
    live: Live
    key: WorkloadKey
    script: PodScript
    created: int
    step: int = 0
    phase: str = "Pending"
    started: int | None = None
    ready: bool = False
    ready_since: int = 0


class Scheduler:
    """What one scheduler holds in memory: its executor core and its watch."""

    def __init__(self, job_id: int, core: ExecutorCore, watch: FakeWatch) -> None:
        self.job_id = job_id
        self.core = core
        self.watch = watch
        self.due: list[tuple[int, int, Manifest]] = []  # (tick, order, event)
        self.order = 0
        self.handled: list[Handled] = []
        self.relisted = False

    @property
    def label(self) -> str:
        return make_safe_label_value(str(self.job_id))

    def push(self, tick: int, event: Manifest) -> None:
        self.order += 1
        heapq.heappush(self.due, (tick, self.order, event))

    def pop_due(self, tick: int) -> Manifest | None:
        if self.due and self.due[0][0] <= tick:
            return heapq.heappop(self.due)[2]
        return None

    def drop_all(self) -> list[Manifest]:
        dropped = [event for _, _, event in sorted(self.due, key=lambda item: item[:2])]
        self.due = []
        dropped.extend(self.watch.events(copy=False))
        return dropped


class Crash(Exception):
    """Raised inside the simulation to unwind after a scheduler crash."""
