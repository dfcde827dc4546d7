"""k8s_workloads.airflow.cluster_check: the cluster asked whether the executor can work
there, with the real kubernetes client against the kit's API server (no Airflow: the
command's own tests are in ``test_config_check``)."""

from __future__ import annotations

from typing import Any

from kubernetes import client as _client_module

from k8s_workloads.airflow.cluster_check import POD_VERBS, _scrubbed, check_cluster
from k8s_workloads.testing import Denied, FakeApiServer, FakeCluster, FaultRate

NS = "airflow"
# The client is exercised at run time; kubernetes 36 has no types, 37 wants model objects
# where the tests pass manifests (dicts), which the client accepts.
k8s: Any = _client_module


def _check(url: str, **options: Any) -> Any:
    options = {"namespace": NS, "watched": [NS], "secrets": False, **options}
    api = k8s.ApiClient(k8s.Configuration(host=url))
    try:
        return check_cluster(api, request_timeout=(5, 5), **options)
    finally:
        api.close()


def test_every_namespace_needs_the_verbs_at_the_cluster_scope() -> None:
    # multi_namespace_mode without a list: the pods are listed and watched everywhere.
    with FakeApiServer(FakeCluster(namespaces=[NS]), lifetime=60) as server:
        fine = _check(server.url, watched=[None])
    assert fine.problems == ()
    assert fine.summary.endswith("in namespace 'airflow', every namespace (cluster scope)")
    # Denied in one namespace only: the cluster scope is not granted.
    denied = [Denied("watch", "pods", "other")]
    with FakeApiServer(FakeCluster(namespaces=[NS]), lifetime=60, denied=denied) as server:
        found = _check(server.url, watched=[None])
        asked = server.stats.count("POST", "selfsubjectaccessreviews")
    assert [problem.split(":")[1] for problem in found.problems] == [
        " may not 'watch' pods in every namespace (cluster scope)"
    ]
    assert asked == 2 * len(POD_VERBS)  # each verb, in the namespace and everywhere


def test_every_denied_verb_is_its_own_line() -> None:
    denied = [Denied(verb, "pods", NS) for verb in POD_VERBS]
    with FakeApiServer(FakeCluster(namespaces=[NS]), lifetime=60, denied=denied) as server:
        found = _check(server.url, secrets=True)
    assert found.summary == ""
    assert [problem.split("'")[1] for problem in found.problems] == list(POD_VERBS)


def test_no_credential_is_ever_shown() -> None:
    configuration = k8s.Configuration(host="https://example.invalid")
    configuration.api_key = {"authorization": "Bearer abc.def-secret"}
    configuration.password = "hunter2-pw"  # noqa: S105 - a test value
    lines = _scrubbed(
        ["header Bearer abc.def-secret refused", "token abc.def-secret", "pw hunter2-pw"],
        configuration,
    )
    assert lines == ("header *** refused", "token ***", "pw ***")


def test_a_call_that_fails_after_the_server_answered_is_one_line_not_a_traceback() -> None:
    # Review finding: only the API's own errors were caught after the version; a reset or
    # a timeout (urllib3's, no OSError) escaped as a traceback.
    reset = FaultRate(1.0, status=None, calls=["GET namespaces"])  # every try reset
    with FakeApiServer(FakeCluster(namespaces=[NS]), lifetime=60, faults=reset) as server:
        found = _check(server.url)
    assert found.summary == ""
    (problem,) = found.problems
    assert problem.startswith(f"the API server at {server.url} stopped answering: ")
