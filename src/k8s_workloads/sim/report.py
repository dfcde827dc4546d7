"""Simulator results: the timeline, the scheduler's event log, anomalies and the report."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from k8s_workloads.display import one_line

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from k8s_workloads.sim.config import SimConfig

__all__ = [
    "Anomaly",
    "EmittedEvent",
    "SimulationResult",
    "TimelineEntry",
    "WorkloadReport",
]


@dataclasses.dataclass(frozen=True)
class TimelineEntry:
    """One line of the timeline."""

    t: int
    kind: str
    """scheduler, queue, create, create_error, event, kubelet, task, adopt, reset, watch."""
    text: str
    pod: str | None = None
    workload: str | None = None
    event: str | None = None
    phase: str | None = None
    outcome: str | None = None
    state: str | None = None
    actions: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        shown: dict[str, object] = {"t": self.t, "kind": self.kind, "text": self.text}
        for name in ("pod", "workload", "event", "phase", "outcome", "state"):
            value = getattr(self, name)
            if value is not None:
                shown[name] = value
        if self.actions:
            shown["actions"] = list(self.actions)
        return shown


@dataclasses.dataclass(frozen=True)
class EmittedEvent:
    """One entry of the scheduler's event log: what an executor reported."""

    t: int
    scheduler: int
    workload: str
    key: str
    state: str
    info: str | None = None

    def to_json(self) -> dict[str, object]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Anomaly:
    """An invariant the run broke: a likely bug, surfaced rather than hidden."""

    kind: str
    message: str
    t: int
    workload: str | None = None

    def to_json(self) -> dict[str, object]:
        shown: dict[str, object] = {"kind": self.kind, "t": self.t, "message": self.message}
        if self.workload is not None:
            shown["workload"] = self.workload
        return shown


@dataclasses.dataclass(frozen=True)
class WorkloadReport:
    """How one workload ended."""

    id: str
    kind: str
    key: str
    end_state: str
    """The database state at the end: the task instance's (current try) or callback's."""
    pods: tuple[str, ...]
    launches: int
    terminal_events: int
    """Final-state events the executor emitted for the workload (one is right)."""
    events: tuple[str, ...]
    """Every event emitted, as ``t<tick>:<state>``."""
    notes: tuple[str, ...]
    expected: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "kind": self.kind,
            "key": self.key,
            "end_state": self.end_state,
            "expected": self.expected,
            "pods": list(self.pods),
            "launches": self.launches,
            "terminal_events": self.terminal_events,
            "events": list(self.events),
            "notes": list(self.notes),
        }


@dataclasses.dataclass(frozen=True)
class SimulationResult:
    """Everything a run produced; deterministic for a scenario (no wall time)."""

    name: str
    seed: int
    config: SimConfig
    ticks: int
    timeline: tuple[TimelineEntry, ...]
    workloads: tuple[WorkloadReport, ...]
    end_states: Mapping[str, int]
    """Workload count per end state, e.g. ``{"failed": 4, "success": 9}``."""
    events_processed: int
    """Watch events the executors resolved."""
    restarts: int
    schedulers: int
    anomalies: tuple[Anomaly, ...]
    pods_left: tuple[str, ...]
    """Pods still in the cluster at the end (kept for debugging, or orphaned)."""
    scheduler_events: tuple[EmittedEvent, ...] = ()
    """The scheduler's event log: every EmitEvent, in order (empty without a timeline)."""

    @property
    def ok(self) -> bool:
        return not self.anomalies

    def workload(self, workload_id: str) -> WorkloadReport:
        for report in self.workloads:
            if report.id == workload_id:
                return report
        raise KeyError(workload_id)

    def summary(self) -> str:
        states = ", ".join(f"{count} {state}" for state, count in self.end_states.items())
        restarts = f"{self.restarts} restart" + ("" if self.restarts == 1 else "s")
        anomalies = f"{len(self.anomalies)} anomal" + ("y" if len(self.anomalies) == 1 else "ies")
        return (
            f"{len(self.workloads)} workloads: {states} | {self.events_processed} watch events | "
            f"{restarts} | {self.ticks} ticks | {len(self.pods_left)} pods left | {anomalies}"
        )

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "seed": self.seed,
            "config": self.config.to_json(),
            "ticks": self.ticks,
            "timeline": [entry.to_json() for entry in self.timeline],
            "workloads": [report.to_json() for report in self.workloads],
            "scheduler_events": [event.to_json() for event in self.scheduler_events],
            "summary": {
                "workloads": len(self.workloads),
                "end_states": dict(self.end_states),
                "events_processed": self.events_processed,
                "restarts": self.restarts,
                "schedulers": self.schedulers,
                "pods_left": list(self.pods_left),
                "anomalies": len(self.anomalies),
                "ok": self.ok,
                "text": self.summary(),
            },
            "anomalies": [anomaly.to_json() for anomaly in self.anomalies],
        }

    def format_text(self) -> str:
        """The report as text: every value from the scenario on one line, escaped (a
        newline in a status message cannot forge a line), token-shaped content masked."""
        name, version = one_line(self.name), one_line(self.config.airflow_version)
        lines = [f"Scenario {name} (seed {self.seed}, Airflow {version})"]
        pods = [one_line(entry.pod or "-") for entry in self.timeline]
        width = max(map(len, pods), default=1)
        lines.extend(
            f"t={entry.t:>3}  {pod:<{width}}  {one_line(entry.text)}"
            for entry, pod in zip(self.timeline, pods, strict=True)
        )
        lines.append("")
        lines.extend(_table(self.workloads))
        if self.pods_left:
            lines.append("")
            lines.append("pods left in the cluster: " + one_line(", ".join(self.pods_left)))
        if self.anomalies:
            lines.append("")
            lines.extend(
                one_line(
                    f"ANOMALY t={anomaly.t} {anomaly.kind}"
                    + (f" [{anomaly.workload}]" if anomaly.workload else "")
                    + f": {anomaly.message}"
                )
                for anomaly in self.anomalies
            )
        lines.append("")
        lines.append(one_line(self.summary()))
        return "\n".join(lines) + "\n"


def _table(reports: Sequence[WorkloadReport]) -> list[str]:
    header = ("workload", "kind", "key", "end state", "pods", "launches", "final events", "notes")
    rows = [
        tuple(
            map(
                one_line,
                (
                    report.id,
                    report.kind,
                    report.key,
                    report.end_state
                    + (
                        f" (expected {report.expected})"
                        if report.expected not in {None, report.end_state}
                        else ""
                    ),
                    ", ".join(report.pods) or "-",
                    str(report.launches),
                    str(report.terminal_events),
                    "; ".join(report.notes),
                ),
            )
        )
        for report in reports
    ]
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header))]
    widths[-1] = 0
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]
