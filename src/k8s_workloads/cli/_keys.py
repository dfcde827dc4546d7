"""Workload keys as the CLI prints them: a JSON object, or one line of text."""

from __future__ import annotations

from typing import Any

from k8s_workloads.keys import CallbackKey, WorkloadKey


def key_to_json(key: WorkloadKey) -> dict[str, Any]:
    """A key as a JSON object with a ``kind`` discriminator."""
    if isinstance(key, CallbackKey):
        return {"kind": "callback", "id": key.id}
    return {
        "kind": "task",
        "dag_id": key.dag_id,
        "task_id": key.task_id,
        "run_id": key.run_id,
        "try_number": key.try_number,
        "map_index": key.map_index,
    }


def key_to_text(key: WorkloadKey | None) -> str:
    """A key on one line: ``task etl.load run=r1 try=2 map=3``, ``callback <id>`` or ``-``."""
    if key is None:
        return "-"
    if isinstance(key, CallbackKey):
        return f"callback {key.id}"
    parts = [f"task {key.dag_id}.{key.task_id}"]
    if key.run_id is not None:
        parts.append(f"run={key.run_id}")
    parts.append(f"try={key.try_number}")
    if key.map_index >= 0:
        parts.append(f"map={key.map_index}")
    return " ".join(parts)
