"""decide_create_error and classify_create_error: the pod-creation error table (§5.2),
row by row, and the ``Retry-After`` reading."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from typing import Any

import aiohttp
import kubernetes.client
import multidict
import pytest
import urllib3
import yarl
from hypothesis import given
from hypothesis import strategies as st

from k8s_workloads.config import DecisionConfig
from k8s_workloads.decisions.actions import (
    EmitEvent,
    FreeSlot,
    RequeueJob,
)
from k8s_workloads.decisions.creation_errors import (
    AfterCreateFailure,
    AfterReadBack,
    CreateErrorVerdict,
    Delivery,
    after_create_failure,
    after_read_back,
    classify_create_error,
    decide_create_error,
    delivery_of,
    is_attempt_pod,
    is_transport_error,
)
from k8s_workloads.states import (
    CallbackState,
    KubernetesJob,
    TaskInstanceState,
)
from k8s_workloads.testing import ApiError
from tests.support.decision_cases import (
    CALLBACK_JOB,
    OTHER_JOB,
    TASK_JOB,
    launched,
)

# --- pod-creation errors (§5.2) ----------------------------------------------------------

RETRYING = DecisionConfig(task_publish_max_retries=3)


def status_body(message: str) -> str:
    return json.dumps(
        {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message}
    )


CREATE_ERRORS = [
    pytest.param(
        403,
        status_body('pods "p" is forbidden: exceeded quota: compute, requested: cpu=2'),
        None,
        True,
        None,
        id="403-exceeded-quota",
    ),
    pytest.param(
        403,
        status_body('pods is forbidden: User "x" cannot create resource "pods"'),
        None,
        False,
        None,
        id="403-plain",
    ),
    pytest.param(
        409,
        status_body(
            'Operation cannot be fulfilled on pods "p": the object has been modified; '
            "please apply your changes to the latest version and try again"
        ),
        None,
        True,
        None,
        id="409-object-modified",
    ),
    pytest.param(409, status_body('pods "p" already exists'), None, False, None, id="409-plain"),
    pytest.param(
        410, status_body("too old resource version: 5 (10)"), None, True, None, id="410-too-old"
    ),
    pytest.param(410, status_body("Gone"), None, False, None, id="410-plain"),
    pytest.param(429, status_body("Too many requests"), None, True, 0.0, id="429-no-header"),
    pytest.param(
        429, status_body("Too many requests"), {"Retry-After": "7"}, True, 7.0, id="429-header"
    ),
    pytest.param(
        429,
        "",
        {"content-type": "text/plain", "retry-after": "3"},
        True,
        3.0,
        id="429-header-lower-case",
    ),
    pytest.param(500, status_body("internal error"), None, True, None, id="500"),
    pytest.param(502, "", None, True, None, id="502"),
    pytest.param(503, "", None, True, None, id="503"),
    pytest.param(503, "", {"Retry-After": "12"}, True, 12.0, id="503-retry-after"),
    pytest.param(504, "", None, True, None, id="504"),
    pytest.param(400, status_body("Pod is invalid"), None, False, None, id="400"),
    pytest.param(404, status_body('namespaces "x" not found'), None, False, None, id="404"),
    pytest.param(422, status_body("Pod is invalid: spec"), None, False, None, id="422"),
    pytest.param(401, "", None, False, None, id="401"),
    pytest.param(None, None, None, True, None, id="connection-error"),
]


@pytest.mark.parametrize(("status", "body", "headers", "retry", "delay"), CREATE_ERRORS)
def test_create_error_table(
    status: int | None,
    body: str | None,
    headers: dict[str, str] | None,
    retry: bool,
    delay: float | None,
) -> None:
    verdict = classify_create_error(status, body, headers, reason="Reason", config=RETRYING)
    assert verdict.retry is retry
    assert verdict.delay == delay
    if retry:
        assert verdict.reason.endswith("is transient: retry")
    else:
        assert verdict.reason.endswith("is not transient: fail")
    # Without a retry budget (the default config) no error is retried, whatever it is.
    default = classify_create_error(status, body, headers)
    assert default.retry is False
    assert default.delay is None


@pytest.mark.parametrize(
    ("body", "reason", "message", "retry"),
    [
        # The API server's Status JSON: its "message".
        (status_body("exceeded quota: q1"), None, "exceeded quota: q1", True),
        (status_body("exceeded quota: q1").encode(), None, "exceeded quota: q1", True),
        # JSON without a message: nothing to match.
        (json.dumps({"kind": "Status"}), "exceeded quota", "", False),
        # An empty body falls back to the HTTP reason.
        ("", "Forbidden", "Forbidden", False),
        (b"", "Forbidden", "Forbidden", False),
        (None, "Forbidden", "Forbidden", False),
        ("", None, "", False),
        # A plain-text body is the message itself.
        ("exceeded quota: q1", "Forbidden", "exceeded quota: q1", True),
        (b"exceeded quota: q1", None, "exceeded quota: q1", True),
        ('"exceeded quota"', None, '"exceeded quota"', True),
        ("[1, 2]", None, "[1, 2]", False),
    ],
)
def test_create_error_body_forms(
    body: object, reason: str | None, message: str, retry: bool
) -> None:
    verdict = classify_create_error(403, body, reason=reason, config=RETRYING)
    assert verdict.message == message
    assert verdict.retry is retry


def test_create_error_body_as_a_deserialised_status_mapping() -> None:
    """A body already parsed to a dict (the code has a Mapping branch for it) is read too.

    ``body in {"", b""}`` hashes the body first, so any dict body raises ``TypeError``
    before the Mapping branch is reached.
    """
    body = {"kind": "Status", "message": "exceeded quota: q1"}
    verdict = classify_create_error(403, body, config=RETRYING)
    assert verdict.retry is True
    assert verdict.message == "exceeded quota: q1"


@pytest.mark.parametrize("value", ["soon", "Wed, 21 Oct 2015 07:28:00 GMT", "", "1.5", "-5"])
def test_malformed_retry_after_is_ignored(value: str) -> None:
    """A malformed ``Retry-After`` is ignored: 429 waits 0 s, 503 gets no delay.

    RFC 9110 ``delay-seconds`` is ``1*DIGIT``, so "-5" is malformed too; today it gives a
    negative delay.
    """
    headers = {"Retry-After": value}
    assert classify_create_error(429, "", headers, config=RETRYING).delay == 0.0
    assert classify_create_error(503, "", headers, config=RETRYING).delay is None


def test_create_error_retries_exhausted_fail() -> None:
    config = DecisionConfig(task_publish_max_retries=2)
    assert classify_create_error(500, "", retries=1, config=config).retry is True
    verdict = classify_create_error(500, "", retries=2, config=config)
    assert verdict == CreateErrorVerdict(
        False, "HTTP 500 is transient but retries are exhausted (2 of 2)", message=""
    )
    connection = classify_create_error(None, retries=2, config=config)
    assert connection.retry is False
    assert "connection error" in connection.reason


def test_create_error_unlimited_retries() -> None:
    config = DecisionConfig(task_publish_max_retries=-1)
    for retries in (0, 1, 10_000):
        assert classify_create_error(429, "", retries=retries, config=config).retry is True
    assert classify_create_error(400, "", retries=0, config=config).retry is False


def test_requeue_after_a_retryable_create_error() -> None:
    attempts = launched(TASK_JOB)
    verdict = classify_create_error(429, "", {"Retry-After": "5"}, config=RETRYING)
    decision = decide_create_error(TASK_JOB, verdict, attempts)
    assert decision.actions == (RequeueJob(TASK_JOB, "HTTP 429 is transient: retry", 5.0),)
    assert decision.attempts == attempts  # the record stays: the workload goes on


@pytest.mark.parametrize(
    ("job", "state"),
    [(TASK_JOB, TaskInstanceState.FAILED), (CALLBACK_JOB, CallbackState.FAILED)],
)
def test_requeue_after_a_fatal_create_error_fails_the_workload(
    job: KubernetesJob[Any], state: TaskInstanceState | CallbackState
) -> None:
    attempts = launched(job, OTHER_JOB)
    verdict = classify_create_error(422, status_body("Pod is invalid"), config=RETRYING)
    decision = decide_create_error(job, verdict, attempts)
    assert decision.actions == (
        FreeSlot(job.key),
        EmitEvent(
            job.key, state, "pod creation failed: HTTP 422 is not transient: fail: Pod is invalid"
        ),
    )
    # The workload is finished: its attempt record goes, the others stay.
    assert decision.attempts == launched(OTHER_JOB)
    (_, failed) = decide_create_error(job, classify_create_error(400, "", config=RETRYING)).actions
    assert isinstance(failed, EmitEvent)
    assert failed.info == "pod creation failed: HTTP 400 is not transient: fail"


@pytest.mark.parametrize(
    ("value", "delay"),
    [
        ("1" + "0" * 400, 600.0),  # used to raise OverflowError
        ("100000000000000000000", 600.0),  # used to stop pod creation for good
        ("30", 30.0),
        ("1" * 5000, 0.0),  # past Python's digit limit: malformed, ignored (429: no delay)
        ("1e20", 0.0),  # not an integer: ignored, as the provider does
    ],
)
def test_retry_after_is_capped_and_never_raises(value: str, delay: float) -> None:
    verdict = classify_create_error(
        429, "", {"Retry-After": value}, config=DecisionConfig(task_publish_max_retries=1)
    )
    assert verdict.retry
    assert verdict.delay == delay


def test_the_retry_after_cap_is_configurable() -> None:
    config = DecisionConfig(task_publish_max_retries=1, max_retry_after_seconds=5)
    verdict = classify_create_error(503, "", {"Retry-After": "60"}, config=config)
    assert verdict.delay == 5.0


# --- a failure with no clear answer (issue 29): delivery, then the two tables ------------


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def _resetting_server() -> Iterator[int]:
    """A loopback server that reads each request, then resets the connection: a
    request sent whose answer never comes."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(10)

    def serve() -> None:
        with contextlib.suppress(OSError):
            connection, _ = listener.accept()
            connection.recv(65536)
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        listener.close()
        thread.join(timeout=10)


def _urllib3_error(port: int) -> BaseException:
    pool = urllib3.PoolManager(retries=False)
    with pytest.raises(Exception) as caught:
        pool.request("POST", f"http://127.0.0.1:{port}/api/v1/namespaces/a/pods", body=b"{}")
    return caught.value


def _aiohttp_error(port: int) -> BaseException:
    async def post() -> None:
        async with aiohttp.ClientSession() as session:
            await session.post(f"http://127.0.0.1:{port}/api/v1/namespaces/a/pods", data=b"{}")

    with pytest.raises(Exception) as caught:
        asyncio.run(post())
    return caught.value


@pytest.mark.parametrize("client", [_urllib3_error, _aiohttp_error], ids=["urllib3", "aiohttp"])
def test_a_refused_connection_was_never_sent_and_a_reset_one_may_have_been(
    client: Callable[[int], BaseException],
) -> None:
    assert delivery_of(client(_closed_port())) is Delivery.UNSENT
    with _resetting_server() as port:
        reset = client(port)
    assert delivery_of(reset) is Delivery.UNKNOWN
    assert is_transport_error(reset)


def test_the_kubernetes_client_errors_are_read_as_the_requests_got() -> None:
    configuration = kubernetes.client.Configuration(host=f"http://127.0.0.1:{_closed_port()}")
    configuration.retries = False
    api = kubernetes.client.CoreV1Api(kubernetes.client.ApiClient(configuration))
    with pytest.raises(Exception) as refused:
        api.create_namespaced_pod(
            "a", kubernetes.client.V1Pod(metadata=kubernetes.client.V1ObjectMeta(name="p"))
        )
    assert delivery_of(refused.value) is Delivery.UNSENT
    answered = kubernetes.client.ApiException(status=503, reason="Service Unavailable")
    assert delivery_of(answered) is Delivery.ANSWERED
    assert delivery_of(kubernetes.client.ApiException(status=0, reason="SSL")) is Delivery.UNKNOWN


@pytest.mark.parametrize(
    ("error", "delivery"),
    [
        (ConnectionRefusedError(111, "refused"), Delivery.UNSENT),
        (socket.gaierror(-2, "Name or service not known"), Delivery.UNSENT),
        (ConnectionResetError(104, "reset"), Delivery.UNKNOWN),
        (TimeoutError("read timed out"), Delivery.UNKNOWN),
        (ApiError(500, "InternalError"), Delivery.ANSWERED),
    ],
)
def test_delivery_of_plain_errors(error: BaseException, delivery: Delivery) -> None:
    assert delivery_of(error) is delivery
    wrapped = RuntimeError("wrapped")
    wrapped.__cause__ = error
    if delivery is not Delivery.ANSWERED:  # what it wraps is what happened
        assert delivery_of(wrapped) is delivery


def test_a_bug_is_no_transport_error() -> None:
    assert not is_transport_error(TypeError("bad argument"))
    assert is_transport_error(ConnectionResetError())


@pytest.mark.parametrize(
    ("delivery", "status", "body", "resend", "step"),
    [
        (Delivery.UNSENT, None, None, False, AfterCreateFailure.WAIT),
        (Delivery.UNKNOWN, None, None, False, AfterCreateFailure.READ_BACK),
        (Delivery.ANSWERED, 500, None, False, AfterCreateFailure.READ_BACK),
        (Delivery.ANSWERED, 504, None, True, AfterCreateFailure.READ_BACK),
        (Delivery.ANSWERED, 429, None, False, AfterCreateFailure.DECIDE),
        (Delivery.ANSWERED, 422, None, True, AfterCreateFailure.DECIDE),
        (Delivery.ANSWERED, 409, {"reason": "AlreadyExists"}, True, AfterCreateFailure.READ_BACK),
        (Delivery.ANSWERED, 409, 'pods "p" already exists', True, AfterCreateFailure.READ_BACK),
        (Delivery.ANSWERED, 409, {"reason": "AlreadyExists"}, False, AfterCreateFailure.DECIDE),
        (Delivery.ANSWERED, 409, {"reason": "Conflict"}, True, AfterCreateFailure.DECIDE),
    ],
)
def test_the_first_table(
    delivery: Delivery, status: int | None, body: object, resend: bool, step: AfterCreateFailure
) -> None:
    assert after_create_failure(delivery, status, body, resend=resend) is step


SENT = {"metadata": {"name": "p-1", "namespace": "a", "annotations": {"dag_id": "d", "x": "1"}}}


def test_a_pod_the_watch_showed_is_created_whatever_the_read_finds() -> None:
    assert after_read_back(None, SENT, None, seen=True) is AfterReadBack.CREATED
    assert after_read_back(None, SENT, 503, seen=True) is AfterReadBack.CREATED


@pytest.mark.parametrize(
    ("pod", "status", "earlier", "step"),
    [
        (SENT, None, False, AfterReadBack.CREATED),
        (SENT, 500, False, AfterReadBack.CREATED),
        (SENT, None, True, AfterReadBack.REBUILD),
        ({"metadata": {"name": "p-1", "namespace": "a"}}, None, False, AfterReadBack.REBUILD),
        (None, None, False, AfterReadBack.RESEND),
        (None, 409, False, AfterReadBack.RESEND),
        (None, 503, False, AfterReadBack.DECIDE),
    ],
)
def test_the_second_table(
    pod: dict[str, Any] | None, status: int | None, earlier: bool, step: AfterReadBack
) -> None:
    assert after_read_back(pod, SENT, status, earlier=earlier) is step


@given(
    sent=st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=4),
    extra=st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=4),
)
def test_a_pod_is_the_attempts_when_it_keeps_every_annotation_sent(
    sent: dict[str, str], extra: dict[str, str]
) -> None:
    mine = {"metadata": {"name": "p", "annotations": sent}}
    found = {"metadata": {"name": "p", "annotations": {**extra, **sent}}}
    assert is_attempt_pod(found, mine)
    assert not is_attempt_pod({"metadata": {**found["metadata"], "name": "q"}}, mine)
    changed = {key: value + "!" for key, value in sent.items()}
    if changed:
        assert not is_attempt_pod({"metadata": {"name": "p", "annotations": changed}}, mine)


# --- aiohttp's errors (issue 30, item 4): kubernetes_asyncio's connection failures -------


@contextlib.contextmanager
def _answering_server(answer: bytes | None) -> Iterator[int]:
    """A loopback server that reads each request, then writes ``answer`` (None: nothing)
    and closes the connection cleanly (a FIN): a server that goes away mid-request."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(10)

    def serve() -> None:
        with contextlib.suppress(OSError):
            connection, _ = listener.accept()
            connection.recv(65536)
            if answer is not None:
                connection.sendall(answer)
            connection.shutdown(socket.SHUT_WR)
            connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        listener.close()
        thread.join(timeout=10)


@contextlib.contextmanager
def _silent_server() -> Iterator[int]:
    """A loopback server that reads each request and never answers (until it ends)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(10)
    done = threading.Event()

    def serve() -> None:
        with contextlib.suppress(OSError):
            connection, _ = listener.accept()
            connection.recv(65536)
            done.wait(10)
            connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        done.set()
        listener.close()
        thread.join(timeout=10)


def _aiohttp_post(port: int, timeout: aiohttp.ClientTimeout | None = None) -> BaseException:
    async def post() -> None:
        async with aiohttp.ClientSession(timeout=timeout) as session:
            response = await session.post(
                f"http://127.0.0.1:{port}/api/v1/namespaces/a/pods", data=b"{}"
            )
            await response.read()

    with pytest.raises(Exception) as caught:
        asyncio.run(post())
    return caught.value


_CUT_SHORT = (
    b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
)


def test_aiohttps_errors_after_sending_are_read_back_and_none_is_an_oserror() -> None:
    """What kubernetes_asyncio raises when the answer to a sent request is lost: each is a
    connection's failure with no HTTP status, so a creation is read back (UNKNOWN)."""
    with _answering_server(None) as port:
        disconnected = _aiohttp_post(port)
    with _answering_server(_CUT_SHORT) as port:
        cut_short = _aiohttp_post(port)
    with _silent_server() as port:
        read_timeout = _aiohttp_post(port, aiohttp.ClientTimeout(sock_read=0.2))
    assert isinstance(disconnected, aiohttp.ServerDisconnectedError)
    assert isinstance(cut_short, aiohttp.ClientPayloadError)
    assert isinstance(read_timeout, aiohttp.SocketTimeoutError)
    for error in (disconnected, cut_short, read_timeout):
        assert is_transport_error(error), error
        assert delivery_of(error) is Delivery.UNKNOWN, error
        assert after_create_failure(delivery_of(error), None) is AfterCreateFailure.READ_BACK
        verdict = classify_create_error(None, reason=str(error), config=_ALWAYS)
        assert verdict.retry
        assert verdict.reason == "connection error is transient: retry"
    # Not OSErrors: a driver that lists only OSError raises them as bugs.
    assert not isinstance(disconnected, OSError)
    assert not isinstance(cut_short, OSError)


_ALWAYS = DecisionConfig(task_publish_max_retries=-1)


def _connection_key() -> Any:
    return aiohttp.client_reqrep.ConnectionKey("kube.example", 6443, True, True, None, None, None)


@pytest.mark.parametrize(
    ("error", "delivery"),
    [
        (aiohttp.ClientConnectorError(_connection_key(), ConnectionRefusedError(111, "refused")),
         Delivery.UNSENT),
        (aiohttp.ClientConnectorDNSError(_connection_key(), socket.gaierror(-2, "unknown")),
         Delivery.UNSENT),
        (aiohttp.ConnectionTimeoutError("Connection timeout to host"), Delivery.UNSENT),
        (aiohttp.ClientConnectorCertificateError(_connection_key(), ValueError("bad cert")),
         Delivery.UNSENT),
        (aiohttp.ServerDisconnectedError(), Delivery.UNKNOWN),
        (aiohttp.ClientPayloadError("Response payload is not completed"), Delivery.UNKNOWN),
        (aiohttp.SocketTimeoutError("Timeout on reading data from socket"), Delivery.UNKNOWN),
        (aiohttp.ClientOSError(104, "Connection reset by peer"), Delivery.UNKNOWN),
        (aiohttp.ClientConnectionResetError("Cannot write to closing transport"),
         Delivery.UNKNOWN),
        (asyncio.TimeoutError(), Delivery.UNKNOWN),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, BaseException) else None,
)  # fmt: skip
def test_aiohttps_connection_errors_by_how_far_the_request_got(
    error: BaseException, delivery: Delivery
) -> None:
    assert is_transport_error(error)
    assert delivery_of(error) is delivery
    step = AfterCreateFailure.WAIT if delivery is Delivery.UNSENT else AfterCreateFailure.READ_BACK
    assert after_create_failure(delivery_of(error), None) is step


def test_an_aiohttp_refusal_by_a_real_closed_port_was_never_sent() -> None:
    refused = _aiohttp_post(_closed_port())
    assert isinstance(refused, aiohttp.ClientConnectorError)
    assert isinstance(refused.os_error, ConnectionRefusedError)
    assert delivery_of(refused) is Delivery.UNSENT


def test_a_request_aiohttp_refused_to_make_is_no_connection_error() -> None:
    """A bad URL is refused before anything is sent, and would be again: not transient."""
    bad_url = aiohttp.InvalidURL("http://[::1")
    assert isinstance(bad_url, ValueError)
    assert not is_transport_error(bad_url)
    answered = aiohttp.ClientResponseError(
        aiohttp.RequestInfo(yarl.URL("http://kube/"), "POST", multidict.CIMultiDictProxy(
            multidict.CIMultiDict())),
        (),
        status=503,
    )  # fmt: skip
    assert delivery_of(answered) is Delivery.ANSWERED
