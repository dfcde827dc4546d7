"""k8s_workloads.airflow._metrics: the executor's metrics through Airflow's ``Stats``.

The first tests need no Airflow (a recording ``Stats``); the last runs the executor against
the test kit's cluster with Airflow's StatsD metrics on, sent to a real UDP socket on
127.0.0.1, and reads the datagrams it sends.
"""

from __future__ import annotations

import contextlib
import datetime
import importlib.util
import logging
import pathlib
import re
import types
from collections import Counter
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from k8s_workloads.airflow._metrics import (
    METRICS,
    QUEUED_TO_RUNNING,
    Metric,
    _Metrics,
    creation_failure_status,
    workload_kind,
)
from k8s_workloads.keys import CallbackKey, GenericKey, TaskInstanceKey
from tests.support.statsd_listener import Datagram, StatsdListener

ROOT = pathlib.Path(__file__).resolve().parents[2]
TASK = TaskInstanceKey("etl", "load", "r1", 1, -1)
CALLBACK = CallbackKey("019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e")
STATSD_TYPES = {"counter": "c", "gauge": "g", "timer": "ms"}


class _RecordingStats:
    """Airflow's ``Stats`` as the executor calls it: each call kept."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, object, dict[str, str] | None]] = []

    def incr(self, stat: str, count: int, *, tags: dict[str, str] | None = None) -> None:
        self.calls.append(("incr", stat, count, tags))

    def gauge(self, stat: str, value: float, *, tags: dict[str, str] | None = None) -> None:
        self.calls.append(("gauge", stat, value, tags))

    def timing(
        self, stat: str, dt: datetime.timedelta, *, tags: dict[str, str] | None = None
    ) -> None:
        self.calls.append(("timing", stat, dt, tags))


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class _ApiError(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status


def test_with_metrics_off_nothing_is_sent_and_nothing_is_kept() -> None:
    metrics = _Metrics(None)
    for key in (TASK, CALLBACK):
        metrics.accepted(key)
        metrics.pod_created(key)
        metrics.adopted(key)
        metrics.relabel_refused(key)
        metrics.running(key)
    metrics.creation_failed(_ApiError(403))
    metrics.watch_restarted(failed=True)
    metrics.synced(0.5, 3)
    assert not metrics.on
    assert not metrics.timing_running  # sync() feeds events without looking at them
    assert metrics._accepted == {}


def test_each_metric_is_sent_under_its_name_ending_in_its_tag_and_with_the_tag() -> None:
    stats, clock = _RecordingStats(), _Clock()
    metrics = _Metrics(stats, clock=clock)
    metrics.pod_created(TASK)
    metrics.pod_created(CALLBACK)
    metrics.creation_failed(_ApiError(403))
    metrics.creation_failed(ConnectionRefusedError(111, "Connection refused"))
    metrics.adopted(TASK)
    metrics.relabel_refused(CALLBACK)
    metrics.watch_restarted(failed=False)
    metrics.watch_restarted(failed=True)
    metrics.synced(0.25, 4)
    assert stats.calls == [
        ("incr", "k8s_workloads.pods_created.task", 1, {"kind": "task"}),
        ("incr", "k8s_workloads.pods_created.callback", 1, {"kind": "callback"}),
        ("incr", "k8s_workloads.pod_creation_failures.403", 1, {"status": "403"}),
        ("incr", "k8s_workloads.pod_creation_failures.unsent", 1, {"status": "unsent"}),
        ("incr", "k8s_workloads.pods_adopted.task", 1, {"kind": "task"}),
        ("incr", "k8s_workloads.adoption_relabels_refused.callback", 1, {"kind": "callback"}),
        ("incr", "k8s_workloads.watch_restarts.ended", 1, {"cause": "ended"}),
        ("incr", "k8s_workloads.watch_restarts.failed", 1, {"cause": "failed"}),
        ("timing", "k8s_workloads.sync_duration", datetime.timedelta(seconds=0.25), None),
        ("gauge", "k8s_workloads.requests_in_flight", 4, None),
    ]


def test_queued_to_running_is_measured_once_from_acceptance_to_the_first_running_pod() -> None:
    stats, clock = _RecordingStats(), _Clock()
    metrics = _Metrics(stats, clock=clock)
    metrics.accepted(TASK)
    metrics.accepted(CALLBACK)
    assert metrics.timing_running
    clock.now += 2.5
    metrics.running(TASK)
    metrics.running(TASK)  # a later Running event of it (or of a pod of an earlier try)
    metrics.running(None)  # a Running pod whose workload the event does not name
    metrics.stopped(CALLBACK)  # ended without a Running pod: never measured
    metrics.running(CALLBACK)
    assert stats.calls == [
        (
            "timing",
            QUEUED_TO_RUNNING.full_name("task"),
            datetime.timedelta(seconds=2.5),
            {"kind": "task"},
        )
    ]
    assert not metrics.timing_running


@given(st.integers(min_value=100, max_value=599))
def test_an_answered_creation_is_counted_under_its_http_status(status: int) -> None:
    assert creation_failure_status(_ApiError(status)) == str(status)


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (ConnectionRefusedError(111, "Connection refused"), "unsent"),  # never reached it
        (ConnectionResetError(104, "Connection reset by peer"), "no_answer"),  # may be made
        (TimeoutError("read timed out"), "no_answer"),
        (_ApiError(0), "no_answer"),  # the kubernetes client's TLS failure: not answered
        (ValueError("the client refused to send it"), "error"),
    ],
)
def test_a_creation_without_an_answer_is_counted_by_how_far_it_got(
    error: BaseException, status: str
) -> None:
    assert creation_failure_status(error) == status


def test_the_kind_tag_names_the_workload_kind_never_the_workload() -> None:
    assert [workload_kind(key) for key in (TASK, CALLBACK, GenericKey("job-1"))] == [
        "task",
        "callback",
        "generic",
    ]
    with pytest.raises(TypeError, match="workload key"):
        workload_kind("etl.load")  # type: ignore[arg-type]


def test_a_metrics_backend_that_fails_is_one_warning_and_never_stops_the_executor(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class _Broken:
        def incr(self, *_: object, **__: object) -> None:
            raise OSError("statsd host unreachable")

    metrics = _Metrics(_Broken(), log=logging.getLogger("k8s_workloads.test_metrics"))
    with caplog.at_level(logging.WARNING):
        metrics.pod_created(TASK)
        metrics.pod_created(CALLBACK)
    (record,) = caplog.records
    assert record.getMessage().startswith(
        "Sending the metric k8s_workloads.pods_created.task failed (statsd host unreachable)"
    )


def test_the_metrics_page_documents_every_metric_with_its_type_and_tag() -> None:
    page = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    row = re.compile(r"^\| `(k8s_workloads\.[^`]+)` \| (\w+) \| ([^|]+) \|", re.MULTILINE)
    rows = {match[1]: (match[2], match[3]) for match in row.finditer(page)}
    documented = {
        metric.full_name("<" + metric.tag + ">" if metric.tag else None): (
            metric.type,
            f"`{metric.tag}`" if metric.tag else "none",
        )
        for metric in METRICS
    }
    assert {name: (kind, tag.strip()) for name, (kind, tag) in rows.items()} == documented
    assert len({metric.name for metric in METRICS}) == len(METRICS)


# --- the executor against the kit, its metrics read from a real UDP socket -------------


@contextlib.contextmanager
def _statsd_on(port: int, prefix: str) -> Iterator[None]:
    """Airflow's ``[metrics]`` sending StatsD to ``127.0.0.1:port``; Airflow's ``Stats`` made
    again from the restored configuration afterwards (as each executor's ``__init__``
    makes it)."""
    from tests.support.airflow_support import airflow, configured  # noqa: PLC0415

    options = {
        ("metrics", "statsd_on"): "True",
        ("metrics", "statsd_host"): "127.0.0.1",
        ("metrics", "statsd_port"): str(port),
        ("metrics", "statsd_prefix"): prefix,
    }
    try:
        with configured(options):
            yield
    finally:
        conf = airflow("airflow.configuration").conf
        airflow("airflow.observability.stats").initialize(
            factory=airflow("airflow.observability.metrics.stats_utils").get_stats_factory(),
            export_legacy_names=conf.getboolean("metrics", "legacy_names_on"),
        )


def _ours(datagrams: list[Datagram], prefix: str) -> list[Datagram]:
    start = f"{prefix}.k8s_workloads."
    return [datagram for datagram in datagrams if datagram.name.startswith(start)]


def _counts(datagrams: list[Datagram]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for datagram in datagrams:
        if datagram.type == "c":
            counts[datagram.name] += int(datagram.value)
    return counts


def _named(datagrams: list[Datagram], name: str) -> list[Datagram]:
    return [datagram for datagram in datagrams if datagram.name == name]


def _metric_of(name: str) -> Metric:
    """The metric a sent name is (its tag's value, if any, ends it)."""
    for metric in METRICS:
        if name == metric.full_name() and metric.tag is None:
            return metric
        if metric.tag is not None and re.fullmatch(
            re.escape(metric.full_name()) + r"\.[a-z0-9_]+", name
        ):
            return metric
    raise AssertionError(f"{name} is no documented metric")


def test_with_airflows_metrics_off_the_executor_keeps_nothing_per_workload() -> None:
    pytest.importorskip("airflow.executors.workloads", reason="Airflow runs in its environment")
    from tests.support.airflow_support import (  # noqa: PLC0415
        queue_callbacks,
        running_executor,
        sync_until,
    )

    with running_executor() as executor:  # [metrics]: Airflow's defaults, all off
        assert not executor._metrics.on
        queue_callbacks(executor, 80, 3)
        executor.heartbeat()
        sync_until(executor, lambda: len(executor.cluster.pod_names()) == 3)
        assert executor._metrics._accepted == {}


def test_a_task_and_callbacks_run_on_the_kit_send_their_metrics_to_statsd() -> None:
    pytest.importorskip("airflow.executors.workloads", reason="Airflow runs in its environment")
    assert importlib.util.find_spec("statsd") is not None, (
        "Airflow's StatsD metrics need the statsd package (apache-airflow[statsd]); "
        "scripts/dev.py installs it in the Airflow environment"
    )
    prefix = "kitflow"  # Airflow's statsd_prefix, before the library's own
    with StatsdListener() as listener:
        with _statsd_on(listener.port, prefix):
            _run_on_the_kit(listener, prefix)
        sent = _ours(listener.read(), prefix)
    counts = _counts(sent)
    base = f"{prefix}.k8s_workloads."
    # One pod a workload that ran; none for the one refused, counted under its status.
    assert counts[base + "pods_created.task"] == 1
    assert counts[base + "pods_created.callback"] == 1
    assert [(name, n) for name, n in counts.items() if ".pod_creation_failures." in name] == [
        (base + "pod_creation_failures.403", 1)
    ]
    assert counts[base + "pods_adopted.task"] == 1
    assert counts[base + "adoption_relabels_refused.task"] == 1
    assert counts[base + "watch_restarts.ended"] >= 1
    assert counts[base + "watch_restarts.failed"] >= 1
    # The time from queued to running, once per workload kind: the refused callback had
    # no pod, the adopted task was not accepted here.
    for kind in ("task", "callback"):
        (timed,) = _named(sent, base + "queued_to_running." + kind)
        assert 0 < timed.value < 60_000
    # A sync() timer and a gauge of the requests in flight after each sync().
    durations = _named(sent, base + "sync_duration")
    gauges = _named(sent, base + "requests_in_flight")
    assert len(durations) == len(gauges) > 10
    assert all(0 <= d.value < 5_000 for d in durations)  # sync_max_seconds (1 s), and more
    assert all(0 <= g.value < 64 and g.value.is_integer() for g in gauges)
    # Every name sent is a documented metric, with its type.
    for datagram in sent:
        metric = _metric_of(datagram.name.removeprefix(f"{prefix}."))
        assert datagram.type == STATSD_TYPES[metric.type], datagram


def _run_on_the_kit(listener: StatsdListener, prefix: str) -> None:
    """The executor against the kit: a creation forbidden, a task and a callback run to
    their end, the watch ended and failed, a dead scheduler's pod adopted and a relabel
    refused."""
    from k8s_workloads.airflow.convert import from_airflow_key  # noqa: PLC0415
    from k8s_workloads.executor import FailedRelabel  # noqa: PLC0415
    from k8s_workloads.states import CallbackState, TaskInstanceState  # noqa: PLC0415
    from tests.support.airflow_support import (  # noqa: PLC0415
        NS,
        SERVER,
        another_task,
        callback_workload,
        pod_made_by,
        running_executor,
        states_of,
        sync_until,
        task_workload,
    )
    from tests.support.event_factory import RUNNING, SUCCEEDED  # noqa: PLC0415

    base = f"{prefix}.k8s_workloads."
    with running_executor() as executor:
        cluster = executor.cluster
        assert executor._metrics.on
        # A creation the API server forbids (a plain 403 fails the workload at once).
        cluster.fail_next("create_pod", 403, reason="Forbidden", message="pods is forbidden")
        refused = callback_workload(70)
        refused_key = CallbackKey(refused.callback.id)
        executor.queue_workload(refused, session=None)
        executor.heartbeat()
        sync_until(executor, lambda: (states_of(executor, refused_key) or ("",))[0] == "failed")
        assert cluster.pod_names() == []

        # A task and a callback, each run to its end.
        task, callback = task_workload(None), callback_workload(71)
        task_key, callback_key = from_airflow_key(task.ti.key), CallbackKey(callback.callback.id)
        executor.states[task_key] = TaskInstanceState.QUEUED
        executor.states[callback_key] = CallbackState.QUEUED
        executor.queue_workload(task, session=None)
        executor.queue_workload(callback, session=None)
        executor.heartbeat()
        sync_until(executor, lambda: len(cluster.pod_names()) == 2)
        for name in cluster.pod_names():
            cluster.set_status(NS, name, RUNNING)
        timed = base + "queued_to_running."
        sync_until(executor, lambda: sum(d.name.startswith(timed) for d in listener.read()) == 2)
        executor.states[task_key] = TaskInstanceState.SUCCESS  # the worker's row
        executor.states[callback_key] = CallbackState.RUNNING  # the pod reports its end
        for name in cluster.pod_names():
            cluster.set_status(NS, name, SUCCEEDED)
        sync_until(executor, lambda: not cluster.pod_names())  # reported, then deleted
        assert states_of(executor, callback_key)[0] == "success"
        assert states_of(executor, task_key)[0] == "success"

        # The watch ended by the server (a 410: watched again after a re-list), then
        # failed (every connection reset: watched again after a backoff).
        restarts = base + "watch_restarts."
        cluster.expire_watches()
        sync_until(executor, lambda: bool(_named(listener.read(), restarts + "ended")))
        SERVER[0].reset_connections()
        assert listener.wait_for(lambda got: bool(_named(got, restarts + "failed")))

        # A dead scheduler's live task pod, adopted.
        executor._adoption.active_callbacks = list  # this process's database has no callback rows
        orphan = another_task("orphan", 72)
        pod_made_by(executor, 5, orphan)  # scheduler 5 is dead: no live job row
        orphan_ti = types.SimpleNamespace(key=orphan.ti.key, queued_by_job_id=5)
        assert executor.try_adopt_task_instances([orphan_ti]) == []  # adopted, not reset
        # A relabel refused, as the core reports it: the executor's pass counts it.
        rival = from_airflow_key(another_task("rival", 73).ti.key)
        refusal = FailedRelabel(rival, NS, "etl-rival", OSError("HTTP 422"))
        taken = executor.core.take_failed_relabels
        executor.core.take_failed_relabels = lambda: [refusal, *taken()]
        executor.sync()
        del executor.core.take_failed_relabels
