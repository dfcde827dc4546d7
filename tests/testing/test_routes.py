"""What a request to the kit's server asks (:mod:`k8s_workloads.testing._routes`): its
kind as the API server's metrics label it, and query options read as the API server
reads them (a bad value is a 400 or a 422 naming the field)."""

from __future__ import annotations

import pytest

from k8s_workloads.testing import ApiError
from k8s_workloads.testing._routes import (
    dry_run_flag,
    grace_seconds,
    page_limit,
    request_kind,
    watch_options,
)


@pytest.mark.parametrize(
    ("method", "path", "query", "kind"),
    [
        ("GET", "/api/v1/namespaces/a/pods", {}, ("LIST", "pods")),
        ("GET", "/api/v1/pods", {"watch": "true"}, ("WATCH", "pods")),
        ("GET", "/api/v1/namespaces/a/pods/p", {}, ("GET", "pods")),
        ("PATCH", "/api/v1/namespaces/a/pods/p/status", {}, ("PATCH", "pods/status")),
        ("POST", "/api/v1/namespaces/a/secrets", {}, ("POST", "secrets")),
        ("GET", "/api/v1/namespaces", {}, ("LIST", "namespaces")),
        ("GET", "/api/v1", {}, ("GET", "/api/v1")),
        ("GET", "/apis/apps/v1/deployments", {}, ("GET", "other")),
    ],
)
def test_a_request_is_labelled_as_the_api_servers_metrics_label_it(
    method: str, path: str, query: dict[str, str], kind: tuple[str, str]
) -> None:
    assert request_kind(method, path, query) == kind


def test_dry_run_knows_only_all() -> None:
    assert dry_run_flag([]) is False
    assert dry_run_flag(["All"]) is True
    with pytest.raises(ApiError, match='Unsupported value: "Some"') as caught:
        dry_run_flag(["Some"])
    assert caught.value.status == 400


def test_numbers_in_the_query_are_numbers_or_a_400() -> None:
    assert page_limit({}) is None
    assert page_limit({"limit": "5"}) == 5
    assert grace_seconds("30") == 30
    assert grace_seconds(0) == 0
    assert grace_seconds(None) is None
    with pytest.raises(ApiError) as caught:
        page_limit({"limit": "x"})
    assert caught.value.status == 400
    with pytest.raises(ApiError, match="gracePeriodSeconds") as caught:
        grace_seconds(True)  # a JSON boolean is not a number of seconds
    assert caught.value.status == 400


def test_send_initial_events_needs_its_companions_as_apimachinery_validates() -> None:
    assert watch_options({"allowWatchBookmarks": "true"}) == (True, None)
    full = {
        "sendInitialEvents": "true",
        "allowWatchBookmarks": "true",
        "resourceVersionMatch": "NotOlderThan",
    }
    assert watch_options(full) == (True, True)
    with pytest.raises(ApiError) as caught:
        watch_options({"sendInitialEvents": "true"})
    assert caught.value.status == 422
    assert "resourceVersionMatch" in caught.value.body
    assert "allowWatchBookmarks" in caught.value.body
