"""A fault rate on the kit's server (:mod:`k8s_workloads.testing._rates`): its validation
(a typed error naming the field), its seeded draws (deterministic, at the rate asked,
only on the calls it selects, at most ``limit``), and a server serving them over HTTP —
statuses and resets, nothing applied, each counted in the stats."""

from __future__ import annotations

import contextlib
import http.client
import json
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from k8s_workloads import InvalidConfig
from k8s_workloads.testing import STATS_PATH, FakeApiServer, FakeCluster, FaultRate, ServerStats
from k8s_workloads.testing._rates import FaultDraws

NS = "airflow"
SPEC = {"containers": [{"name": "base", "image": "apache/airflow:3.3.2"}]}


# --- validation -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"rate": -0.1}, "rate"),
        ({"rate": 1.5}, "rate"),
        ({"rate": "0.1"}, "rate"),
        ({"rate": True}, "rate"),
        ({"rate": float("nan")}, "rate"),
        ({"rate": 0.1, "status": 200}, "status"),
        ({"rate": 0.1, "status": 600}, "status"),
        ({"rate": 0.1, "status": ()}, "status"),
        ({"rate": 0.1, "status": ("503",)}, "status"),
        ({"rate": 0.1, "status": "503"}, "status"),
        ({"rate": 0.1, "calls": "POST pod"}, "calls"),
        ({"rate": 0.1, "calls": ["FETCH pods"]}, "calls"),
        ({"rate": 0.1, "calls": ["post pods"]}, "calls"),
        ({"rate": 0.1, "calls": []}, "calls"),
        ({"rate": 0.1, "calls": 5}, "calls"),
        ({"rate": 0.1, "calls": [5]}, "calls"),
        ({"rate": 0.1, "seed": 1.5}, "seed"),
        ({"rate": 0.1, "seed": None}, "seed"),
        ({"rate": 0.1, "retry_after": -1}, "retry_after"),
        ({"rate": 0.1, "limit": 0}, "limit"),
        ({"rate": 0.1, "limit": 2.0}, "limit"),
    ],
)
def test_a_value_that_cannot_be_used_is_refused_naming_its_field(
    options: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidConfig) as refused:
        FaultRate(**options)
    assert refused.value.field == field
    assert str(refused.value).startswith(f"FaultRate.{field}: must ")


def test_the_server_refuses_faults_that_are_no_fault_rate() -> None:
    with pytest.raises(InvalidConfig) as refused:
        FakeApiServer(FakeCluster(), faults=0.05)  # type: ignore[arg-type]
    assert refused.value.field == "faults"


def test_a_fault_rate_reads_its_values_as_sets_and_tuples() -> None:
    rate = FaultRate(0.05, status=503, calls="POST pods", seed=3)
    assert (rate.status, rate.calls) == ((503,), frozenset({"POST pods"}))
    assert FaultRate(0.05, status=[500, 503]).status == (500, 503)
    assert FaultRate(0.05, status=None).status is None
    assert FaultRate(1).selects("DELETE", "secrets")
    assert not FaultRate(1).selects("GET", "/api/v1")  # discovery never fails
    assert FaultRate(1, calls=["pods"]).selects("WATCH", "pods")
    assert not FaultRate(1, calls=["pods"]).selects("POST", "pods/binding")


# --- the draws --------------------------------------------------------------------------


def _faulted(draws: FaultDraws, calls: list[tuple[str, str]]) -> list[str | None]:
    answers: list[str | None] = []
    for verb, resource in calls:
        drawn = draws.draw(verb, resource)
        answers.append(None if drawn is None else drawn[1])
    return answers


_CALLS = st.lists(
    st.tuples(
        st.sampled_from(["GET", "LIST", "POST", "DELETE", "PATCH"]),
        st.sampled_from(["pods", "secrets", "pods/status"]),
    ),
    max_size=60,
)


@given(
    rate=st.floats(0, 1),
    seed=st.integers(-(2**63), 2**63),
    calls=_CALLS,
    others=st.lists(st.booleans(), max_size=60),
)
def test_the_draws_are_a_function_of_the_seed_and_the_selected_calls(
    rate: float, seed: int, calls: list[tuple[str, str]], others: list[bool]
) -> None:
    fault_rate = FaultRate(rate, status=(500, 503), calls=["pods", "DELETE secrets"], seed=seed)
    first = _faulted(FaultDraws(fault_rate), calls)
    assert _faulted(FaultDraws(fault_rate), calls) == first  # the same run, the same faults
    for (verb, resource), answer in zip(calls, first, strict=True):
        if not fault_rate.selects(verb, resource):
            assert answer is None
        else:
            assert answer in {None, "500", "503"}
    # Calls it does not select, wherever they come, take no draw: the others fault alike.
    mixed: list[tuple[str, str]] = []
    for index, call in enumerate(calls):
        if index < len(others) and others[index]:
            mixed.append(("GET", "secrets"))
        mixed.append(call)
    answers = _faulted(FaultDraws(fault_rate), mixed)
    kept = [
        answer for call, answer in zip(mixed, answers, strict=True) if call != ("GET", "secrets")
    ]
    assert kept == [
        answer for call, answer in zip(calls, first, strict=True) if call != ("GET", "secrets")
    ]
    if rate == 0:
        assert set(first) == {None} or not first
    if rate == 1:
        assert all(
            answer is not None
            for call, answer in zip(calls, first, strict=True)
            if fault_rate.selects(*call)
        )


@pytest.mark.parametrize(("rate", "seed"), [(0.05, 1), (0.05, 2), (0.3, 20260607), (0.5, 0)])
def test_the_share_of_calls_failed_is_the_rate(rate: float, seed: int) -> None:
    draws = FaultDraws(FaultRate(rate, seed=seed))
    answers = _faulted(draws, [("POST", "pods")] * 4000)
    failed = sum(answer is not None for answer in answers)
    expected, spread = 4000 * rate, (4000 * rate * (1 - rate)) ** 0.5
    assert abs(failed - expected) < 4 * spread  # seeded: this is the same count every run


def test_a_limit_bounds_the_faults_served() -> None:
    draws = FaultDraws(FaultRate(1, status=None, limit=3))
    assert _faulted(draws, [("DELETE", "pods")] * 5) == ["reset"] * 3 + [None] * 2


def test_each_status_of_a_sequence_is_served() -> None:
    answers = _faulted(FaultDraws(FaultRate(1, status=(500, 503), seed=5)), [("GET", "pods")] * 50)
    assert set(answers) == {"500", "503"}


# --- over HTTP --------------------------------------------------------------------------


@pytest.fixture
def cluster() -> FakeCluster:
    return FakeCluster(namespaces=[NS])


@contextlib.contextmanager
def _serve(cluster: FakeCluster, faults: FaultRate) -> Iterator[FakeApiServer]:
    server = FakeApiServer(cluster, lifetime=120, faults=faults).start()
    try:
        yield server
    finally:
        server.stop()


def _call(
    server: FakeApiServer, method: str, path: str, body: object = None
) -> tuple[int, dict[str, str], Any]:
    address = urllib.parse.urlsplit(server.url)
    connection = http.client.HTTPConnection(address.hostname or "", address.port, timeout=30)
    try:
        data = None if body is None else json.dumps(body)
        connection.request(method, path, body=data, headers={"Content-Type": "application/json"})
        answer = connection.getresponse()
        return answer.status, dict(answer.getheaders()), json.loads(answer.read())
    finally:
        connection.close()


def test_a_server_fails_the_calls_its_draws_say_with_the_status_and_applies_none(
    cluster: FakeCluster,
) -> None:
    faults = FaultRate(0.3, status=503, calls="POST pods", seed=7, retry_after=1)
    expected = _faulted(FaultDraws(faults), [("POST", "pods")] * 40)
    assert 4 < expected.count("503") < 20
    with _serve(cluster, faults) as server:
        answers = []
        for number in range(40):
            pod = {"metadata": {"name": f"p{number}"}, "spec": SPEC}
            status, headers, document = _call(server, "POST", f"/api/v1/namespaces/{NS}/pods", pod)
            answers.append("503" if status == 503 else None)
            if status == 503:
                assert headers["Retry-After"] == "1"
                assert document["reason"] == "ServiceUnavailable"
            else:
                assert status == 201
        # Reads are not selected: never failed.
        status, _, listing = _call(server, "GET", f"/api/v1/namespaces/{NS}/pods")
        assert status == 200
        stats = server.stats
        over_http = ServerStats.from_json(_call(server, "GET", STATS_PATH)[2])
    assert answers == expected  # seeded: the same calls fail on every run
    failed = expected.count("503")
    assert len(listing["items"]) == 40 - failed  # a failed creation applied nothing
    assert stats.faults_served == {"POST pods 503": failed}
    assert stats.count_faults() == stats.count_faults("POST", "pods") == failed
    assert stats.count_faults("GET") == 0
    assert over_http.faults_served == stats.faults_served


def test_a_connection_fault_resets_the_call_and_is_counted(cluster: FakeCluster) -> None:
    cluster.create_pod(NS, {"metadata": {"name": "p"}, "spec": SPEC})
    with _serve(cluster, FaultRate(1, status=None, calls="DELETE pods", limit=2)) as server:
        for _ in range(2):
            with pytest.raises((ConnectionResetError, http.client.RemoteDisconnected)):
                _call(server, "DELETE", f"/api/v1/namespaces/{NS}/pods/p")
            assert cluster.pod(NS, "p") is not None  # the reset call applied nothing
        status, _, _ = _call(server, "DELETE", f"/api/v1/namespaces/{NS}/pods/p")
        stats = server.stats
    assert status == 200
    assert stats.faults_served == {"DELETE pods reset": 2}
    assert stats.connections_reset == 2
