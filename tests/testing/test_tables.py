"""Pods as the ``Table`` kubectl asks for (:mod:`k8s_workloads.testing._tables`): its
columns and its ages in kubectl's short form."""

from __future__ import annotations

import datetime

import pytest

from k8s_workloads.testing._tables import human_duration, pod_table


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (45, "45s"),
        (119, "119s"),  # seconds up to two minutes
        (200, "3m20s"),
        (300, "5m"),
        (5 * 3600, "5h"),
        (5 * 3600 + 7 * 60, "5h7m"),
        (30 * 3600, "30h"),
        (3 * 86400 + 4 * 3600, "3d4h"),
    ],
)
def test_ages_are_shown_as_kubectl_shows_them(seconds: int, shown: str) -> None:
    assert human_duration(seconds) == shown


def test_a_pod_list_is_a_table_with_kubectls_columns_and_one_row_a_pod() -> None:
    now = datetime.datetime(2026, 6, 7, 0, 5, tzinfo=datetime.timezone.utc)
    pod = {
        "metadata": {"name": "p1", "creationTimestamp": "2026-06-07T00:00:00Z"},
        "spec": {"containers": [{"name": "base"}], "nodeName": "node-1"},
        "status": {"phase": "Running", "containerStatuses": [{"ready": True, "restartCount": 0}]},
    }
    table = pod_table({"metadata": {"resourceVersion": "9"}, "items": [pod]}, now=now)
    assert (table["kind"], table["metadata"]) == ("Table", {"resourceVersion": "9"})
    names = [column["name"] for column in table["columnDefinitions"]]
    assert names == ["Name", "Ready", "Status", "Restarts", "Age", "IP", "Node"]
    (row,) = table["rows"]
    cells = dict(zip(names, row["cells"], strict=False))
    assert (cells["Name"], cells["Ready"], cells["Status"], cells["Age"]) == (
        "p1",
        "1/1",
        "Running",
        "5m",
    )
