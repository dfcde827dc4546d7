"""Lists in pages (:mod:`k8s_workloads.testing._paging`): continue tokens, the snapshots
they read, and one page of a selection."""

from __future__ import annotations

import pytest

from k8s_workloads.testing._paging import (
    ExpiredContinue,
    InvalidContinue,
    Snapshots,
    decode_continue,
    encode_continue,
    page,
)


def test_a_token_names_its_snapshot_and_the_last_key_answered() -> None:
    token = encode_continue(12, ("airflow", "p3"))
    assert decode_continue(token) == (12, ("airflow", "p3"))


@pytest.mark.parametrize("token", ["", "not base64!", encode_continue(0, ("a", "b")), "e30="])
def test_a_token_this_server_did_not_make_is_invalid(token: str) -> None:
    with pytest.raises(InvalidContinue):
        decode_continue(token)


def test_only_the_newest_snapshots_are_kept() -> None:
    kept = Snapshots(2)
    for version in (1, 2, 3):
        kept.remember(version, ())
    assert len(kept) == 2
    assert kept.recall(3) == ()
    with pytest.raises(ExpiredContinue):
        kept.recall(1)  # its tokens expired, as after a compaction
    kept.clear()
    with pytest.raises(ExpiredContinue):
        kept.recall(3)


def test_a_page_is_the_selection_after_a_key_and_counts_what_remains() -> None:
    snapshot = [((("ns", f"p{n}")), {"n": n}) for n in range(6)]
    even = lambda item: item["n"] % 2 == 0  # noqa: E731
    items, last, remaining = page(snapshot, even, after=None, limit=2)
    assert (items, last, remaining) == ([{"n": 0}, {"n": 2}], ("ns", "p2"), 1)
    items, last, remaining = page(snapshot, even, after=last, limit=2)
    assert (items, last, remaining) == ([{"n": 4}], None, 0)  # the list is complete
