"""The kit's errors (:mod:`k8s_workloads.testing.errors`): ``Status`` documents, the
``ApiException`` shape, a 422 with its causes, and a fault's error."""

from __future__ import annotations

import json

from k8s_workloads.testing import ApiError, Fault
from k8s_workloads.testing._admission import Cause
from k8s_workloads.testing.errors import invalid, status_document


def test_an_api_error_carries_a_status_document_as_the_client_exception_does() -> None:
    error = ApiError(404, "NotFound", 'pods "p" not found', details={"name": "p"})
    assert (error.status, error.reason, error.headers) == (404, "NotFound", {})
    body = json.loads(error.body)
    assert body == status_document(404, "NotFound", 'pods "p" not found', {"name": "p"})
    assert (body["kind"], body["status"], body["code"]) == ("Status", "Failure", 404)
    assert ApiError(500, "x", body="raw").body == "raw"  # a body as given


def test_an_invalid_object_is_a_422_naming_each_field() -> None:
    one = invalid("Pod", "p", [Cause("metadata.name", "FieldValueInvalid", "Invalid value")])
    assert one.status == 422
    assert json.loads(one.body)["message"] == 'Pod "p" is invalid: metadata.name: Invalid value'
    two = invalid(
        "Secret",
        None,  # a name that is not a string is shown empty
        [Cause("a", "FieldValueRequired", "Required"), Cause("b", "FieldValueInvalid", "bad")],
    )
    body = json.loads(two.body)
    assert body["message"] == 'Secret "" is invalid: [a: Required, b: bad]'
    assert [cause["field"] for cause in body["details"]["causes"]] == ["a", "b"]


def test_a_fault_raises_its_status_or_resets_the_connection() -> None:
    error = Fault(429, "TooManyRequests", "slow down", headers={"Retry-After": "3"}).error()
    assert isinstance(error, ApiError)
    assert (error.status, error.headers) == (429, {"Retry-After": "3"})
    assert isinstance(Fault(None).error(), ConnectionResetError)
