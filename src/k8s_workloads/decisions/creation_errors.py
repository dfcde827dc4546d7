"""What to do when a pod creation fails: the provider's pod-creation error policy, made
safe for a request whose answer never came.

A failed ``create_namespaced_pod`` is one of three things, and only the API server's own
answer may count as a publish attempt (:func:`delivery_of` tells them apart;
:func:`after_create_failure` is the first table, :func:`after_read_back` the second):

=================================  ==========  ===========================================
the failure                        pod exists  what the executor does
=================================  ==========  ===========================================
never sent: connection refused,    no          ``WAIT``: the workload stays queued with the
DNS failure, connect timeout                   same pod; creation pauses (backing off)
                                               until the API answers. No publish attempt.
sent, no answer: reset, read       maybe       ``READ_BACK``: read the pod by its name
timeout, disconnect
HTTP 5xx                           maybe       ``READ_BACK``: the server may have stored it
HTTP 409 ``AlreadyExists`` to a    yes         ``READ_BACK``: the first send may have made it
resend
any other HTTP answer (429,        no          ``DECIDE``: :func:`classify_create_error`, the
quota, 409 to a first send, 400,               provider's rules (retries counted; a name in
422 ...)                                       use fails the workload, as the provider's)
=================================  ==========  ===========================================

After a read back (the pod's name is drawn once per attempt and kept for every resend, so a
pod of that name carrying the attempt's annotations is the attempt's pod):

==============================  ==================  ====================================
what was read                   the failure         what the executor does
==============================  ==================  ====================================
the pod, with its annotations   any                 ``CREATED``: the creation succeeded
a pod of that name, not ours    any                 ``REBUILD``: a new name, created again
(or an earlier attempt's)
no pod, but the watch showed    any                 ``CREATED``: it was made and is gone
it meanwhile                                        since (its events tell the rest)
no pod                          no answer, or 409   ``RESEND``: the same pod again (no
                                                    publish attempt: nothing was answered)
no pod                          HTTP 5xx            ``DECIDE``: the provider's rules
==============================  ==================  ====================================

A read back that fails is tried again (backing off); until it answers, nothing about the
workload is decided, so a pod that exists is never reported failed nor created twice.

:func:`classify_create_error` gives the verdict on an error: retry (after a pause, for a
429 or a ``Retry-After`` header) while it is transient and retries remain, else fail.
:func:`decide_create_error` turns a verdict into a
:class:`~k8s_workloads.decisions.actions.Decision`, as every planner answers: requeue the
job, or fail the workload.
"""

from __future__ import annotations

import enum
import json
import socket
from collections.abc import Mapping
from typing import Any

import attrs

from k8s_workloads.config import DecisionConfig
from k8s_workloads.decisions.actions import Decision, EmitEvent, FreeSlot, RequeueJob
from k8s_workloads.decisions.attempts import Attempts
from k8s_workloads.states import KubernetesJob, state_class_for_key

__all__ = [
    "AfterCreateFailure",
    "AfterReadBack",
    "CreateErrorVerdict",
    "Delivery",
    "after_create_failure",
    "after_read_back",
    "classify_create_error",
    "decide_create_error",
    "delivery_of",
    "is_attempt_pod",
    "is_transport_error",
]

_TRANSIENT_5XX = frozenset({500, 502, 503, 504})


class Delivery(enum.Enum):
    """How far a failed request got."""

    ANSWERED = "answered"
    """The API server answered it with an HTTP status."""
    UNSENT = "unsent"
    """It never reached the API server: no connection was made."""
    UNKNOWN = "unknown"
    """It was sent (or may have been) and no answer came: it may have been applied."""


# The errors that mean no connection was made, by class name (matched along the class's
# MRO) so that no client is imported here: urllib3's (``NewConnectionError`` is a
# ``ConnectTimeoutError``; ``NameResolutionError`` a ``NewConnectionError``) and aiohttp's
# ``ClientConnectorError`` (refused; ``ClientConnectorDNSError``, ``…SSLError`` and
# ``…CertificateError`` are subclasses: nothing was written before the handshake failed)
# and ``ConnectionTimeoutError`` (its connect timeout; a ``ServerTimeoutError``, as its read
# timeout ``SocketTimeoutError`` is). A read timeout, a reset (``ClientOSError``), a server
# that disconnects (``ServerDisconnectedError``) or a body cut short (``ClientPayloadError``)
# is UNKNOWN.
_UNSENT_CLASSES = frozenset(
    {
        "NewConnectionError",
        "ConnectTimeoutError",
        "NameResolutionError",
        "ClientConnectorError",
        "ConnectionTimeoutError",
    }
)
_CHAIN_LIMIT = 8


def _causes(error: BaseException) -> list[BaseException]:
    """``error`` and what it wraps: ``__cause__``/``__context__``, urllib3's
    ``MaxRetryError.reason``, aiohttp's ``os_error`` (a few levels; no cycles)."""
    seen: list[BaseException] = []
    todo = [error]
    while todo and len(seen) < _CHAIN_LIMIT:
        current = todo.pop()
        if any(current is other for other in seen):
            continue
        seen.append(current)
        for name in ("__cause__", "__context__", "reason", "os_error"):
            inner = getattr(current, name, None)
            if isinstance(inner, BaseException):
                todo.append(inner)
    return seen


def delivery_of(error: BaseException) -> Delivery:
    """How far a request that failed with ``error`` got.

    An error carrying an HTTP ``status`` (``ApiException``, the kit's ``ApiError``) was
    answered; status 0 (the ``kubernetes`` client's wrapping of a TLS error) was not. No
    connection made — refused, a name that does not resolve, a connect timeout, a TLS
    handshake that failed (urllib3's ``NewConnectionError``, aiohttp's
    ``ClientConnectorError`` and ``ConnectionTimeoutError``, known by class name; the
    cause chain is read) — is UNSENT; every other error is UNKNOWN (the request may have
    been applied: a reset, a server that disconnected, a read timeout).
    """
    status = getattr(error, "status", None)
    if isinstance(status, int) and not isinstance(status, bool) and status > 0:
        return Delivery.ANSWERED
    for cause in _causes(error):
        if isinstance(cause, (ConnectionRefusedError, socket.gaierror)) or any(
            cls.__name__ in _UNSENT_CLASSES for cls in type(cause).__mro__
        ):
            return Delivery.UNSENT
    return Delivery.UNKNOWN


# The HTTP clients' own modules: urllib3's errors (``ProtocolError``, ``ReadTimeoutError``
# ...), aiohttp's ``ClientError`` family (``ServerDisconnectedError`` and
# ``ClientPayloadError`` are no ``OSError``), http.client's (``RemoteDisconnected``), and
# asyncio's TimeoutError (not an OSError before Python 3.11) and CancelledError (a call
# cancelled in flight may have been sent).
_TRANSPORT_MODULES = ("urllib3", "aiohttp", "http.client", "asyncio")


def is_transport_error(error: BaseException) -> bool:
    """Whether ``error`` is a connection's failure, not an API answer nor a bug.

    The core imports no client, so a client's errors are known by their kind, not their
    class: an ``OSError`` (a reset, a refusal, a timeout), or an error whose class (or a
    base) comes from an HTTP client's module — urllib3's, aiohttp's ``ClientError`` family,
    ``http.client``'s, asyncio's timeout. An error that carries an HTTP ``status`` is the
    API's answer and is read as such before this is asked (:func:`delivery_of`). Not a
    connection's failure, although a client raised it: a ``ValueError`` or ``TypeError``
    that is no ``OSError`` (aiohttp's ``InvalidURL``: the request was refused before it
    was sent, and would be again)."""
    if isinstance(error, OSError):
        return True
    if isinstance(error, (ValueError, TypeError)):
        return False
    return any(cls.__module__.startswith(_TRANSPORT_MODULES) for cls in type(error).__mro__)


class AfterCreateFailure(enum.Enum):
    """The first step after a failed pod creation (see the module's first table)."""

    WAIT = "wait"
    READ_BACK = "read back"
    DECIDE = "decide"


class AfterReadBack(enum.Enum):
    """The step after a failed creation's read back (see the module's second table)."""

    CREATED = "created"
    REBUILD = "rebuild"
    RESEND = "resend"
    DECIDE = "decide"


def _already_exists(status: int | None, body: object) -> bool:
    if status != 409:
        return False
    document = _document(body)
    if document is not None and document.get("reason") == "AlreadyExists":
        return True
    return "already exists" in _error_message(body, None)


def after_create_failure(
    delivery: Delivery, status: int | None, body: object = None, *, resend: bool = False
) -> AfterCreateFailure:
    """The first table: what a failed creation calls for (``status`` read off an
    answered error; ``body`` its ``Status`` document, for a 409's reason; ``resend``:
    the same pod was sent before)."""
    if delivery is Delivery.UNSENT:
        return AfterCreateFailure.WAIT
    if delivery is Delivery.UNKNOWN or status is None:
        return AfterCreateFailure.READ_BACK
    if status >= 500 or (resend and _already_exists(status, body)):
        return AfterCreateFailure.READ_BACK
    return AfterCreateFailure.DECIDE


def is_attempt_pod(pod: Mapping[str, Any], sent: Mapping[str, Any]) -> bool:
    """Whether ``pod`` (read back) is the one ``sent`` created: same name and namespace,
    and every annotation sent (the workload's identity) there with its value."""
    metadata = pod.get("metadata")
    own = sent.get("metadata")
    if not isinstance(metadata, Mapping) or not isinstance(own, Mapping):
        return False
    if metadata.get("name") != own.get("name"):
        return False
    if own.get("namespace") and metadata.get("namespace") != own.get("namespace"):
        return False
    found = metadata.get("annotations")
    found = found if isinstance(found, Mapping) else {}
    wanted = own.get("annotations")
    wanted = wanted if isinstance(wanted, Mapping) else {}
    return all(found.get(key) == value for key, value in wanted.items())


def after_read_back(
    pod: Mapping[str, Any] | None,
    sent: Mapping[str, Any],
    status: int | None,
    *,
    earlier: bool = False,
    seen: bool = False,
) -> AfterReadBack:
    """The second table: what the read back of a failed creation (``pod``: None when
    there is none; ``sent``: the pod the creation sent; ``status``: the failure's HTTP
    status, None when no answer came) calls for. ``earlier``: the pod read is one the
    executor already settled for an earlier attempt (a name fixed by a ``pod_override``
    is used again by every attempt): not this attempt's, whatever its annotations say.
    ``seen``: the watch showed a pod of that name since the creation was sent."""
    if pod is None and seen:
        return AfterReadBack.CREATED
    if pod is not None:
        ours = not earlier and is_attempt_pod(pod, sent)
        return AfterReadBack.CREATED if ours else AfterReadBack.REBUILD
    if status is None or status == 409:  # gone since: nothing answered the creation
        return AfterReadBack.RESEND
    return AfterReadBack.DECIDE


@attrs.frozen
class CreateErrorVerdict:
    """Retry the pod creation (after ``delay`` seconds, if given) or fail the workload."""

    retry: bool
    reason: str
    delay: float | None = None
    """Seconds to pause all pod creation (429 or a ``Retry-After`` header)."""
    message: str = ""


def _document(body: object) -> Mapping[str, Any] | None:
    """The ``Status`` document an error body holds, if it is one."""
    if isinstance(body, Mapping):
        return body
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            parsed = json.loads(body)
        except ValueError:
            return None
        return parsed if isinstance(parsed, Mapping) else None
    return None


def _error_message(body: object, reason: str | None) -> str:
    # The API server's Status JSON carries "message"; an empty body falls back to the HTTP
    # reason and a body that is not JSON is the message itself (a plain-text 429).
    if body is None or (isinstance(body, (str, bytes)) and not body):
        return reason or ""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if isinstance(body, Mapping):
        message = body.get("message")
        return message if isinstance(message, str) else ""
    if isinstance(body, str):
        try:
            parsed = json.loads(body)
        except ValueError:
            return body
        if isinstance(parsed, Mapping):
            message = parsed.get("message")
            return message if isinstance(message, str) else ""
        return body
    return str(body)


def _retry_after(headers: Mapping[str, str] | None) -> int | None:
    if not headers:
        return None
    for name, value in headers.items():
        if name.lower() == "retry-after":
            try:
                seconds = int(value)
            except (TypeError, ValueError):
                return None  # a malformed header is ignored, as the provider does
            return seconds if seconds >= 0 else None
    return None


def classify_create_error(
    status: int | None,
    body: object = None,
    headers: Mapping[str, str] | None = None,
    *,
    reason: str | None = None,
    retries: int = 0,
    config: DecisionConfig | None = None,
) -> CreateErrorVerdict:
    """Retry or fail after ``create_namespaced_pod`` failed, with the provider's rules.

    ``status`` is the HTTP status, or None for a connection error (reset, DNS, timeout:
    the request may never have arrived). Transient: 403 "exceeded quota", 409 "object has
    been modified", 410 "too old resource version", 429, 500/502/503/504 and connection
    errors — retried while ``retries`` < ``task_publish_max_retries`` (-1: always).
    Everything else (400, a plain 403, 404, 422 …) fails at once.
    """
    if config is None:
        config = _default_config()
    message = _error_message(body, reason)
    limit = config.task_publish_max_retries
    can_retry = limit == -1 or retries < limit
    if status is None:
        transient = True
        what = "connection error"
    else:
        transient = (
            (status == 403 and "exceeded quota" in message)
            or (status == 409 and "object has been modified" in message)
            or (status == 410 and "too old resource version" in message)
            or status == 429
            or status in _TRANSIENT_5XX
        )
        what = f"HTTP {status}"
    if not transient:
        return CreateErrorVerdict(False, f"{what} is not transient: fail", message=message)
    if not can_retry:
        return CreateErrorVerdict(
            False, f"{what} is transient but retries are exhausted ({retries} of {limit})",
            message=message,
        )  # fmt: skip
    delay_seconds = _retry_after(headers)
    if delay_seconds is not None and delay_seconds > config.max_retry_after_seconds:
        delay_seconds = int(config.max_retry_after_seconds)  # compared as ints: no overflow
    delay = float(delay_seconds or 0) if status == 429 or delay_seconds is not None else None
    return CreateErrorVerdict(True, f"{what} is transient: retry", delay, message)


def _default_config() -> DecisionConfig:
    return DecisionConfig()


def decide_create_error(
    job: KubernetesJob[Any], verdict: CreateErrorVerdict, attempts: Attempts = Attempts()
) -> Decision:
    """The decision after ``create_namespaced_pod`` failed for ``job``, as ``verdict``
    (:func:`classify_create_error`'s, for the failure) says.

    A retry is one :class:`RequeueJob` action (its ``delay``, when set, is the pause a 429
    or a ``Retry-After`` header asks of all pod creation); a failure frees the slot,
    reports the workload FAILED and drops its attempt record.
    """
    if verdict.retry:
        return Decision((RequeueJob(job, verdict.reason, verdict.delay),), attempts)
    info = f"pod creation failed: {verdict.reason}: {verdict.message}".rstrip(": ")
    failed = EmitEvent(job.key, state_class_for_key(job.key).FAILED, info)
    return Decision((FreeSlot(job.key), failed), attempts.without(job.key))
