"""What the kit's server counts (:mod:`k8s_workloads.testing.stats`): requests by verb and
resource, the most under way at once, and the JSON form served at ``/_kit/stats``."""

from __future__ import annotations

from k8s_workloads.testing import ServerStats
from k8s_workloads.testing.stats import FAULTS, StatsRecorder


def test_requests_under_way_are_counted_until_ended_once() -> None:
    recorder = StatsRecorder()
    recorder.connected()
    first = recorder.begin("POST", "pods")
    second = recorder.begin("POST", "pods")
    recorder.begin("GET", "pods")()
    first()
    first()  # a second end does nothing
    third = recorder.begin("POST", "pods")
    second()
    third()
    stats = recorder.snapshot()
    assert stats.count("POST", "pods") == 3
    assert stats.count("DELETE", "pods") == 0
    assert (stats.connections, stats.max_in_flight, stats.max_in_flight_creations) == (1, 3, 2)


def test_the_json_form_reads_back_as_the_same_stats() -> None:
    recorder = StatsRecorder()
    recorder.counted("WATCH", "pods")
    for fault in FAULTS:
        recorder.faulted(fault)
    recorder.faulted("connections_reset")
    stats = recorder.snapshot()
    assert ServerStats.from_json(stats.to_json()) == stats
    assert (stats.connections_reset, stats.answers_dropped, stats.stalls, stats.refusals) == (
        2,
        1,
        1,
        1,
    )
    assert stats.count("WATCH", "pods") == 1
    assert stats.max_in_flight == 0  # a watch is counted, never held as under way
