"""Lists in pages, as the API server serves ``limit`` and ``continue`` from etcd.

A list with ``limit=N`` answers at most N items; when more remain it adds
``metadata.continue``, an opaque token naming the snapshot (its resource version) and the
last key answered, and ``metadata.remainingItemCount``. Following the token reads the same
snapshot from the next key, so every page shows the objects as they were at the first;
once the snapshot is gone (etcd compacted that revision) the token is expired: a 410.

Kept here, apart from :mod:`k8s_workloads.testing.cluster`, as pure code: the cluster
owns the lock and decides what a snapshot holds; this module only pages through it.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections import OrderedDict
from typing import TYPE_CHECKING

from k8s_workloads.pods.manifest import Manifest

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

Key = tuple[str, str]
Snapshot = tuple[tuple[Key, Manifest], ...]
"""Every object of a kind at one resource version, sorted by (namespace, name)."""

# The apiserver's message for a continue token whose revision was compacted
# (k8s.io/apiserver storage errors, ErrCodeResourceVersionConflicts / 410 Expired).
EXPIRED_MESSAGE = (
    "The provided continue parameter is too old to display a consistent list result. "
    "You can start a new list without the continue parameter."
)

# The token is base64 of a small JSON document, as the apiserver's is ("v", "rv", "start");
# clients must treat it as opaque, and this one is only ever read back by this module.
_CONTINUE_FORMAT = "meta.k8s.io/v1"


class InvalidContinue(ValueError):
    """A ``continue`` token this server did not make (a 400 BadRequest)."""


class ExpiredContinue(LookupError):
    """A ``continue`` token whose snapshot is gone (a 410 Expired)."""


def encode_continue(version: int, after: Key) -> str:
    document = {"v": _CONTINUE_FORMAT, "rv": version, "start": list(after)}
    raw = json.dumps(document, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode()


def decode_continue(token: str) -> tuple[int, Key]:
    """The snapshot's version and the last key answered, or :class:`InvalidContinue`."""
    try:
        document = json.loads(base64.urlsafe_b64decode(token.encode()))
    except (binascii.Error, ValueError):
        raise InvalidContinue(f"invalid continue token: {token[:64]!r}") from None
    version = document.get("rv") if isinstance(document, dict) else None
    start = document.get("start") if isinstance(document, dict) else None
    if (
        not isinstance(document, dict)
        or document.get("v") != _CONTINUE_FORMAT
        or isinstance(version, bool)
        or not isinstance(version, int)
        or version < 1
        or not isinstance(start, list)
        or len(start) != 2  # (namespace, name)
        or not all(isinstance(part, str) for part in start)
    ):
        raise InvalidContinue(f"invalid continue token: {token[:64]!r}")
    return version, (start[0], start[1])


class Snapshots:
    """The snapshots that continue tokens read, the newest ``keep`` by resource version."""

    def __init__(self, keep: int) -> None:
        self._keep = keep
        self._kept: OrderedDict[int, Snapshot] = OrderedDict()

    def remember(self, version: int, snapshot: Snapshot) -> None:
        self._kept[version] = snapshot
        self._kept.move_to_end(version)
        while len(self._kept) > self._keep:
            self._kept.popitem(last=False)  # its tokens expire, as after a compaction

    def recall(self, version: int) -> Snapshot:
        try:
            return self._kept[version]
        except KeyError:
            raise ExpiredContinue(EXPIRED_MESSAGE) from None

    def clear(self) -> None:
        self._kept.clear()

    def __len__(self) -> int:
        return len(self._kept)


def page(
    snapshot: Sequence[tuple[Key, Manifest]],
    selects: Callable[[Manifest], bool],
    *,
    after: Key | None,
    limit: int | None,
) -> tuple[list[Manifest], Key | None, int]:
    """The selected objects after ``after`` (at most ``limit``), the key to continue after
    (None: the list is complete) and how many selected objects remain past the page."""
    items: list[Manifest] = []
    last: Key | None = None
    remaining = 0
    for key, manifest in snapshot:
        if (after is not None and key <= after) or not selects(manifest):
            continue
        if limit is not None and len(items) >= limit:
            remaining += 1
        else:
            items.append(manifest)
            last = key
    return items, (last if remaining else None), remaining
