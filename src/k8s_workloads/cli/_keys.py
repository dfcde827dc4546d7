"""Workload keys as the CLI prints them: the keys' own ``to_json`` and ``to_text``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from k8s_workloads.keys import WorkloadKey


def key_to_json(key: WorkloadKey) -> dict[str, Any]:
    """A key as a JSON object with a ``kind`` discriminator: ``key.to_json()``."""
    return key.to_json()


def key_to_text(key: WorkloadKey | None) -> str:
    """A key on one line: ``task etl.load run=r1 try=2 map=3``, ``callback <id>``,
    ``generic <id>`` or ``-`` (``key.to_text()``, ``-`` for no key)."""
    return "-" if key is None else key.to_text()
