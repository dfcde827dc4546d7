"""The core's private records' helpers: the workload JSON found in a pod's args, and how a
failed pod call's error is read (status, body, headers, reason; transient or not), with
the errors the real clients raise (``kubernetes.client.ApiException``, urllib3's,
aiohttp's under ``kubernetes_asyncio``)."""

from __future__ import annotations

import json

import aiohttp
import pytest
import urllib3
from hypothesis import given
from hypothesis import strategies as st
from kubernetes.client.exceptions import ApiException

from k8s_workloads.executor._records import _args_workload, _error_parts, _transient


def _api_error(
    status: int, body: str = "", headers: dict[str, str] | None = None, reason: str = "Reason"
) -> ApiException:
    """The error the kubernetes client raises for this answer (from urllib3's response)."""
    response = urllib3.HTTPResponse(
        body=body.encode(), status=status, reason=reason, headers=headers or {}
    )
    return ApiException(http_resp=response)


# --- the workload JSON in the args ------------------------------------------------------


@given(
    before=st.lists(st.text().filter(lambda arg: arg != "--json-string"), max_size=4),
    workload=st.text(),
    after=st.lists(st.text(), max_size=3),
)
def test_the_workload_is_the_arg_after_json_string(
    before: list[str], workload: str, after: list[str]
) -> None:
    args = [*before, "--json-string", workload, *after]
    assert _args_workload(args) == workload


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["python", "-m", "airflow.sdk.execution_time.execute_workload"],
        ["python", "-m", "airflow.sdk.execution_time.execute_workload", "--json-string"],
        ["--json-path", "/var/run/workload/workload.json"],  # the secure payload's args
    ],
)
def test_args_without_a_workload_json(args: list[str]) -> None:
    assert _args_workload(args) is None


def test_the_first_json_string_wins() -> None:
    assert _args_workload(["--json-string", "a", "--json-string", "b"]) == "a"


# --- a failed call's error --------------------------------------------------------------


def test_an_api_exception_gives_its_status_body_headers_and_reason() -> None:
    error = _api_error(429, '{"kind":"Status"}', {"Retry-After": "7"}, reason="Too Many")
    status, body, headers, reason = _error_parts(error) or (None, None, None, None)
    assert (status, reason) == (429, "Too Many")
    # The body as the client keeps it: text with kubernetes 37, bytes with 36.
    assert body is error.body
    assert body in ('{"kind":"Status"}', b'{"kind":"Status"}')
    assert headers is not None
    assert headers["Retry-After"] == "7"


def test_an_api_exception_without_a_response_keeps_its_status() -> None:
    parts = _error_parts(ApiException(status=503, reason="Service Unavailable"))
    assert parts == (503, None, None, "Service Unavailable")


@pytest.mark.parametrize(
    "error",
    [
        ConnectionResetError("Connection reset by peer"),
        TimeoutError("timed out"),
        urllib3.exceptions.ProtocolError("Connection aborted."),
        urllib3.exceptions.ReadTimeoutError(None, "/api/v1/pods", "Read timed out."),  # type: ignore[arg-type]
        aiohttp.ServerDisconnectedError(),
        aiohttp.ClientPayloadError("Response payload is not completed"),
        aiohttp.ClientConnectionError("Connection closed"),
    ],
    ids=[
        "reset",
        "timeout",
        "urllib3-protocol",
        "urllib3-read-timeout",
        "aiohttp-disconnected",
        "aiohttp-payload",
        "aiohttp-connection",
    ],
)
def test_a_connection_error_has_no_status_and_names_itself(error: BaseException) -> None:
    parts = _error_parts(error)
    assert parts is not None
    status, body, headers, reason = parts
    assert (status, body, headers) == (None, None, None)
    assert reason == str(error)
    assert _transient(error)


def test_a_connection_error_without_a_message_is_named_by_its_type() -> None:
    assert _error_parts(ConnectionRefusedError()) == (None, None, None, "ConnectionRefusedError")


class _BoolStatus(Exception):
    status = True  # not an HTTP status, though an int subclass


@pytest.mark.parametrize(
    "error",
    [
        ValueError("bad"),
        KeyError("x"),
        RuntimeError("boom"),
        _BoolStatus(),
        aiohttp.InvalidURL("http://[::1"),  # refused before sending: would be again
    ],
    ids=["ValueError", "KeyError", "RuntimeError", "bool-status", "aiohttp-invalid-url"],
)
def test_an_error_that_is_no_api_error_is_not_read_and_not_transient(
    error: BaseException,
) -> None:
    assert _error_parts(error) is None
    assert not _transient(error)


@pytest.mark.parametrize(
    ("status", "message", "transient"),
    [
        (429, "", True),
        (500, "", True),
        (502, "", True),
        (503, "", True),
        (504, "", True),
        (409, "Operation cannot be fulfilled: the object has been modified", True),
        (409, 'pods "p" already exists', False),
        (403, 'pods "p" is forbidden: exceeded quota: compute', True),
        (403, "pods is forbidden: User cannot create", False),
        (410, "too old resource version: 1 (2)", True),
        (400, "", False),
        (404, "", False),
        (422, "", False),
        (501, "", False),
    ],
)
def test_transient_follows_the_creation_rules_with_retries_unbounded(
    status: int, message: str, transient: bool
) -> None:
    status_body = json.dumps({"kind": "Status", "code": status, "message": message})
    assert _transient(_api_error(status, status_body)) is transient
