"""What to do when ``create_namespaced_pod`` fails: the provider's pod-creation error policy.

:func:`decide_create_error` answers with a :class:`~k8s_workloads.decisions.actions.Decision`, as
every planner does: requeue the job (after a pause, for a 429 or a ``Retry-After``
header) while the error is transient and retries remain, else fail the workload.
:func:`classify_create_error` is the verdict alone, for a caller that only asks whether
an error is transient.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from k8s_workloads.config import DecisionConfig
from k8s_workloads.decisions.actions import Decision, EmitEvent, FreeSlot, RequeueJob
from k8s_workloads.decisions.attempts import Attempts
from k8s_workloads.states import KubernetesJob, state_class_for_key

__all__ = [
    "CreateErrorVerdict",
    "classify_create_error",
    "decide_create_error",
    "requeue_after_create_error",
]

_TRANSIENT_5XX = frozenset({500, 502, 503, 504})


@attrs.frozen
class CreateErrorVerdict:
    """Retry the pod creation (after ``delay`` seconds, if given) or fail the workload."""

    retry: bool
    reason: str
    delay: float | None = None
    """Seconds to pause all pod creation (429 or a ``Retry-After`` header)."""
    message: str = ""


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


def _verdict_decision(
    job: KubernetesJob[Any], verdict: CreateErrorVerdict, attempts: Attempts
) -> Decision:
    if verdict.retry:
        return Decision((RequeueJob(job, verdict.reason, verdict.delay),), attempts)
    info = f"pod creation failed: {verdict.reason}: {verdict.message}".rstrip(": ")
    failed = EmitEvent(job.key, state_class_for_key(job.key).FAILED, info)
    return Decision((FreeSlot(job.key), failed), attempts.without(job.key))


def decide_create_error(
    job: KubernetesJob[Any],
    status: int | None,
    body: object = None,
    headers: Mapping[str, str] | None = None,
    *,
    reason: str | None = None,
    retries: int = 0,
    config: DecisionConfig | None = None,
    attempts: Attempts = Attempts(),
) -> Decision:
    """The decision after ``create_namespaced_pod`` failed for ``job``.

    The rules are :func:`classify_create_error`'s. A retry is one :class:`RequeueJob`
    action (its ``delay``, when set, is the pause a 429 or a ``Retry-After`` header asks
    of all pod creation); a failure frees the slot, reports the workload FAILED and drops
    its attempt record.
    """
    verdict = classify_create_error(
        status, body, headers, reason=reason, retries=retries, config=config
    )
    return _verdict_decision(job, verdict, attempts)


def requeue_after_create_error(
    job: KubernetesJob[Any],
    decision: CreateErrorVerdict,
    *,
    attempts: Attempts = Attempts(),
) -> Decision:
    """Deprecated: :func:`decide_create_error` classifies and decides in one call."""
    warnings.warn(
        "requeue_after_create_error() is deprecated: decide_create_error() gives the "
        "Decision in one call",
        DeprecationWarning,
        stacklevel=2,
    )
    return _verdict_decision(job, decision, attempts)


def _renamed(module: str, name: str) -> object:
    """A module ``__getattr__``'s answer: the renamed name, with its warning (here and in
    :mod:`~k8s_workloads.decisions.results`, its old home)."""
    if name == "CreateErrorDecision":
        warnings.warn(
            "CreateErrorDecision is renamed CreateErrorVerdict (it is no Decision)",
            DeprecationWarning,
            stacklevel=3,
        )
        return CreateErrorVerdict
    raise AttributeError(f"module {module!r} has no attribute {name!r}")


if TYPE_CHECKING:
    CreateErrorDecision = CreateErrorVerdict
else:

    def __getattr__(name: str) -> object:
        return _renamed(__name__, name)
