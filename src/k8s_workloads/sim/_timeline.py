"""The timeline's lines about the executor: each watch event with the decision about
its result, and every other decision with its actions, in the words a reader follows,
written to the run's :class:`~k8s_workloads.sim._state.Journal`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from k8s_workloads.sim._state import action_texts, describe_key, shorten
from k8s_workloads.watch.resolution import Outcome

if TYPE_CHECKING:
    from collections.abc import Mapping

    from k8s_workloads.executor.requests import Handled
    from k8s_workloads.keys import WorkloadKey
    from k8s_workloads.pods.manifest import Manifest
    from k8s_workloads.sim._state import Journal, Live
    from k8s_workloads.states import WorkloadResult
    from k8s_workloads.watch.resolution import Resolution

__all__ = ["event_line", "log_event_line", "log_handled"]


def event_line(
    event: Manifest, resolution: Resolution, *, by_key: Mapping[WorkloadKey, Live]
) -> tuple[str, dict[str, Any], WorkloadResult | None]:
    """The line of a watch event, its fields (the workload found in ``by_key``) and the
    result it resolved to."""
    pod = event["object"]
    metadata = pod.get("metadata", {})
    phase = pod.get("status", {}).get("phase")
    deleting = " (deleting)" if metadata.get("deletionTimestamp") else ""
    shown = resolution.state.value if resolution.state is not None else resolution.outcome.value
    if resolution.outcome is Outcome.FAILED:
        shown = f"failed: {resolution.reason}"
    live = by_key.get(resolution.key) if resolution.key is not None else None
    about = f" ({describe_key(resolution.key)})" if resolution.key is not None else ""
    fields: dict[str, Any] = {
        "pod": metadata.get("name"),
        "workload": live.spec.id if live else None,
        "event": event["type"],
        "phase": phase,
        "outcome": resolution.outcome.value,
        "state": resolution.state.value if resolution.state is not None else None,
    }
    return f"{event['type']} {phase}{deleting} → {shown}{about}", fields, resolution.to_result()


def log_event_line(
    journal: Journal,
    event_line: tuple[str, dict[str, Any], WorkloadResult | None],
    handled: list[Handled],
) -> list[Handled]:
    """Log the event with the decision about its result; return the other records."""
    text, fields, result = event_line
    if not journal.record_timeline:
        return handled
    for index, record in enumerate(handled):
        if record.cause == "result" and result is not None and record.result == result:
            key, decision = record.key, record.decision
            journal.log(
                "event",
                f"{text} → {shorten(decision.reason, key)}",
                actions=action_texts(decision.actions, key),
                **fields,
            )
            return handled[:index] + handled[index + 1 :]
    journal.log("event", text, **fields)
    return handled


def log_handled(
    journal: Journal,
    handled: list[Handled],
    why: str | None,
    *,
    by_key: Mapping[WorkloadKey, Live],
) -> None:
    if not journal.record_timeline:
        return
    for record in handled:
        key, decision = record.key, record.decision
        live = by_key.get(key)
        text = shorten(decision.reason, key)
        actions = action_texts(decision.actions, key)
        result = record.result
        if record.cause == "create error":
            journal.log(
                "create_error",
                f"create failed → {text}",
                workload=live.spec.id if live else None,
                actions=actions,
            )
            continue
        if result is None:
            journal.log("note", f"{describe_key(key)}: {text}", actions=actions)
            continue
        state = result.state.value
        prefix = f"{why}: " if why else ""
        if record.cause == "handling failed":
            prefix = "retry after a failed call: "
        journal.log(
            "adopt" if why else "event",
            f"{prefix}{state} ({describe_key(key)}) → {text}",
            pod=result.pod_name or None,
            workload=live.spec.id if live else None,
            state=state,
            actions=actions,
        )
