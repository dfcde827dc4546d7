"""k8s_workloads.airflow._creation_log: the lines an operator reads of the pods' creations
and of the core's decisions on them. No Airflow is needed: the part is given a creation
call, the metrics (off here), a logger and the server's address."""

from __future__ import annotations

import logging

import pytest

from k8s_workloads.airflow._creation_log import _CreationLog
from k8s_workloads.airflow._metrics import _Metrics
from k8s_workloads.decisions.actions import Decision, EmitEvent, RequeueJob
from k8s_workloads.decisions.attempts import Attempts
from k8s_workloads.executor.requests import CreatePod, Handled, PodChanged
from k8s_workloads.keys import CallbackKey, GenericKey
from k8s_workloads.states import CallbackState, KubernetesJob

SERVER = "https://kit.example:6443"
KEY = CallbackKey("00000000-0000-0000-0000-000000000001")


def _request(name: str = "callback-1") -> CreatePod:
    return CreatePod(KEY, "airflow", {"metadata": {"name": name}})


def _part(create: object = None) -> _CreationLog:
    def refused(_request: CreatePod) -> object:
        raise ConnectionRefusedError(111, "Connection refused")

    return _CreationLog(
        create=refused if create is None else create,  # type: ignore[arg-type]
        metrics=_Metrics(None),
        log=logging.getLogger("test_creation_log"),
        server=SERVER,
    )


def _requeued(cause: str, pod: str = "callback-1") -> Handled:
    why = "the API server was not reached: connection error"
    decision = Decision((RequeueJob(KubernetesJob(KEY, ["x"]), why, 1.0),), Attempts())
    return Handled(KEY, cause, decision, pod_name=pod)


def _lines(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == level]


def test_a_failed_creation_keeps_its_error_for_the_decisions_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    part = _part()
    with pytest.raises(ConnectionRefusedError):
        part.create(_request())
    assert part.failed[KEY] == "ConnectionRefusedError: [Errno 111] Connection refused"
    failed = Decision((EmitEvent(KEY, CallbackState.FAILED, "HTTP 422: invalid"),), Attempts())
    with caplog.at_level(logging.DEBUG, logger="test_creation_log"):
        part.decision(Handled(KEY, "create error", failed, pod_name="callback-1"))
    expected = (
        f"Creating pod callback-1 of {KEY} failed: ConnectionRefusedError: [Errno 111] "
        "Connection refused; the workload fails: HTTP 422: invalid"
    )
    assert _lines(caplog, logging.WARNING) == [expected]
    assert KEY not in part.failed  # said once


def test_an_outage_is_one_warning_then_debug_lines_until_a_creation_goes_through(
    caplog: pytest.LogCaptureFixture,
) -> None:
    part = _part()
    with caplog.at_level(logging.DEBUG, logger="test_creation_log"):
        for number in range(3):
            part.decision(_requeued("create unsent", f"pod-{number}"))
        assert len(_lines(caplog, logging.WARNING)) == 1
        assert len(_lines(caplog, logging.DEBUG)) == 2
        paused = part.unsent
        part.call = lambda request: {"created": request.pod_name}
        assert part.create(_request()) == {"created": "callback-1"}
        assert (paused, part.unsent) == (True, False)
        assert _lines(caplog, logging.INFO) == [
            f"Pod creations reach the API server at {SERVER} again"
        ]
        part.decision(_requeued("create unsent"))  # a new pause: a new warning
    assert len(_lines(caplog, logging.WARNING)) == 2


def test_a_creation_without_an_answer_is_read_back_in_info_lines(
    caplog: pytest.LogCaptureFixture,
) -> None:
    part = _part()
    part.failed[KEY] = "ReadTimeoutError: read timed out"
    with caplog.at_level(logging.INFO, logger="test_creation_log"):
        part.decision(_requeued("create unknown"))
        assert part.failed[KEY]  # kept: the decision after the read back quotes it
        confirmed = Handled(KEY, "create confirmed", Decision((), Attempts()), pod_name="p")
        part.decision(confirmed)
    assert _lines(caplog, logging.WARNING) == []
    assert [line.split(":")[0] for line in _lines(caplog, logging.INFO)] == [
        f"Creating pod callback-1 of {KEY} got no clear answer",
        f"Pod p of {KEY} was created after all (read back)",
    ]
    assert KEY not in part.failed


def test_each_pod_change_is_one_line_naming_the_pod_and_its_workload(
    caplog: pytest.LogCaptureFixture,
) -> None:
    part = _part()
    with caplog.at_level(logging.INFO, logger="test_creation_log"):
        part.pod_changed(PodChanged("created", "airflow", "job-1-x", GenericKey("job-1")))
        part.pod_changed(PodChanged("deleted", "airflow", "old-pod", None))
    assert _lines(caplog, logging.INFO) == [
        f"Created pod airflow/job-1-x of {GenericKey('job-1').to_text()}",
        "Deleted pod airflow/old-pod of an unknown workload",
    ]
