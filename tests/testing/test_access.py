"""Who may call the kit's API server (:mod:`k8s_workloads.testing._access`): a bearer token
required, verbs denied as RBAC denies them, and ``SelfSubjectAccessReview``
(``authorization.k8s.io/v1``), driven by the real kubernetes client (36.x or 37.x)."""

from __future__ import annotations

import http.client
import json
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kubernetes import client as _client_module
from kubernetes.client.exceptions import ApiException

from k8s_workloads.config_checks import InvalidConfig
from k8s_workloads.testing import STATS_PATH, Denied, FakeApiServer, FakeCluster
from k8s_workloads.testing._access import RBAC_VERBS, Access
from tests.support.pod_builds import named_task_pod as task_pod

NS = "airflow"
# The client is exercised at run time; kubernetes 36 has no types, 37 wants model objects
# where the tests pass manifests (dicts), which the client accepts.
k8s: Any = _client_module
TOKEN = "kit-token-1c2d3e"  # noqa: S105 - a test value

Api = Any


def _status(error: ApiException) -> Any:
    return json.loads(error.body or "null")


def _client(url: str, token: str | None = TOKEN) -> Api:
    configuration = k8s.Configuration(host=url)
    if token is not None:
        configuration.api_key = {"authorization": f"Bearer {token}"}
    return k8s.ApiClient(configuration)


def _review(api: Api, verb: str, resource: str, namespace: str | None = NS, **more: str) -> Any:
    attributes = k8s.V1ResourceAttributes(
        namespace=namespace, verb=verb, group=more.pop("group", ""), resource=resource, **more
    )
    body = k8s.V1SelfSubjectAccessReview(
        spec=k8s.V1SelfSubjectAccessReviewSpec(resource_attributes=attributes)
    )
    return k8s.AuthorizationV1Api(api).create_self_subject_access_review(body)


@pytest.fixture
def denied_server() -> Iterator[FakeApiServer]:
    denied = [Denied("delete", "pods", NS), Denied("list", "secrets"), Denied("get", "pods/log")]
    with FakeApiServer(
        FakeCluster(namespaces=[NS, "other"]), lifetime=60, token=TOKEN, denied=denied
    ) as server:
        yield server


def test_a_review_answers_allowed_or_not_as_the_client_reads_it(
    denied_server: FakeApiServer,
) -> None:
    api = _client(denied_server.url)
    refused = _review(api, "delete", "pods")
    assert refused.kind == "SelfSubjectAccessReview"
    assert refused.api_version == "authorization.k8s.io/v1"
    assert refused.status.allowed is False
    assert refused.status.reason is None  # RBAC's "no opinion": no reason, not denied
    assert not refused.status.denied
    # The review comes back as sent.
    assert refused.spec.resource_attributes.verb == "delete"
    assert refused.spec.resource_attributes.namespace == NS
    allowed = _review(api, "get", "pods")
    assert allowed.status.allowed is True
    assert allowed.status.reason
    assert _review(api, "delete", "pods", "other").status.allowed is True
    # A rule without a namespace denies everywhere; the cluster scope is denied when any
    # namespace is (a role bound in some namespaces does not grant it).
    assert _review(api, "list", "secrets", "other").status.allowed is False
    assert _review(api, "delete", "pods", None).status.allowed is False
    # Subresources by name; other groups are not the kit's to deny.
    assert _review(api, "get", "pods", subresource="log").status.allowed is False
    assert _review(api, "delete", "deployments", group="apps").status.allowed is True
    assert denied_server.stats.count("POST", "selfsubjectaccessreviews") == 7


def test_a_denied_verb_is_a_403_forbidden_on_the_request_itself(
    denied_server: FakeApiServer,
) -> None:
    core = k8s.CoreV1Api(_client(denied_server.url))
    core.create_namespaced_pod(NS, task_pod("load"))
    with pytest.raises(ApiException) as caught:
        core.delete_namespaced_pod("load", NS)
    assert caught.value.status == 403
    status = _status(caught.value)
    assert (status["reason"], status["details"]) == ("Forbidden", {"name": "load", "kind": "pods"})
    assert status["message"] == (
        'pods "load" is forbidden: User "k8s-workloads-kit" cannot delete resource "pods" '
        'in API group "" in the namespace "airflow"'
    )
    with pytest.raises(ApiException) as listing:
        core.list_secret_for_all_namespaces()
    assert _status(listing.value)["message"].endswith("at the cluster scope")
    with pytest.raises(ApiException) as log:
        core.read_namespaced_pod_log("load", NS)
    assert log.value.status == 403
    assert core.read_namespaced_pod("load", NS).metadata.name == "load"  # not deleted


def test_a_required_token_is_a_401_for_another_or_none(denied_server: FakeApiServer) -> None:
    for token in ("wrong-token", None):
        version = k8s.VersionApi(_client(denied_server.url, token))
        with pytest.raises(ApiException) as caught:
            version.get_code()
        assert caught.value.status == 401
        assert _status(caught.value) == {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Unauthorized", "reason": "Unauthorized", "code": 401,
        }  # fmt: skip
        assert TOKEN not in str(caught.value.body)
    assert k8s.VersionApi(_client(denied_server.url)).get_code().major == "1"
    # The kit's own stats path is no API call: no token needed.
    host = urllib.parse.urlsplit(denied_server.url)
    connection = http.client.HTTPConnection(host.hostname or "", host.port, timeout=10)
    connection.request("GET", STATS_PATH)
    assert connection.getresponse().status == 200
    connection.close()


def test_a_review_needs_exactly_one_kind_of_attributes() -> None:
    with FakeApiServer(FakeCluster(), lifetime=60) as server:
        api = k8s.AuthorizationV1Api(_client(server.url, None))
        with pytest.raises(ApiException) as neither:
            api.create_self_subject_access_review(
                k8s.V1SelfSubjectAccessReview(spec=k8s.V1SelfSubjectAccessReviewSpec())
            )
        both = k8s.V1SelfSubjectAccessReviewSpec(
            resource_attributes=k8s.V1ResourceAttributes(verb="get", resource="pods"),
            non_resource_attributes=k8s.V1NonResourceAttributes(path="/healthz", verb="get"),
        )
        with pytest.raises(ApiException) as two:
            api.create_self_subject_access_review(k8s.V1SelfSubjectAccessReview(spec=both))
        path = k8s.V1SelfSubjectAccessReviewSpec(
            non_resource_attributes=k8s.V1NonResourceAttributes(path="/version", verb="get")
        )
        answer = api.create_self_subject_access_review(k8s.V1SelfSubjectAccessReview(spec=path))
        stats = server.stats
    assert neither.value.status == 422
    document = _status(neither.value)
    assert document["message"] == (
        'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: '
        'Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes '
        "must be specified"
    )
    assert document["details"]["group"] == "authorization.k8s.io"
    assert "cannot be specified in combination" in _status(two.value)["message"]
    assert answer.status.allowed is True
    assert stats.count("POST", "selfsubjectaccessreviews") == 3


def test_discovery_lists_the_authorization_group() -> None:
    with FakeApiServer(FakeCluster(), lifetime=60) as server:
        api = _client(server.url, None)
        groups = k8s.ApisApi(api).get_api_versions()
        resources = k8s.AuthorizationV1Api(api).get_api_resources()
    assert [group.name for group in groups.groups] == ["authorization.k8s.io"]
    assert [(r.name, r.verbs) for r in resources.resources] == [
        ("selfsubjectaccessreviews", ["create"])
    ]


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"verb": "remove", "resource": "pods"}, "verb"),
        ({"verb": "get", "resource": "Pods"}, "resource"),
        ({"verb": "get", "resource": ""}, "resource"),
        ({"verb": "get", "resource": "pods", "namespace": 3}, "namespace"),
    ],
)
def test_a_wrong_rule_is_refused_naming_its_field(arguments: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidConfig) as caught:
        Denied(**arguments)
    assert caught.value.field == field


@pytest.mark.parametrize("token", ["", "two words", 5])
def test_a_token_is_text_without_spaces(token: object) -> None:
    with pytest.raises(InvalidConfig) as caught:
        FakeApiServer(FakeCluster(), token=token)  # type: ignore[arg-type]
    assert caught.value.field == "token"
    assert "two words" not in str(caught.value)  # a secret is not shown


@settings(max_examples=100, deadline=None)
@given(
    rules=st.lists(
        st.builds(
            Denied,
            verb=st.sampled_from(sorted(RBAC_VERBS)),
            resource=st.sampled_from(["pods", "secrets", "pods/log"]),
            namespace=st.sampled_from([None, "a", "b"]),
        ),
        max_size=4,
    ),
    verb=st.sampled_from(sorted(RBAC_VERBS)),
    resource=st.sampled_from(["pods", "secrets", "pods/log"]),
    namespace=st.sampled_from([None, "a", "b"]),
)
def test_a_verb_is_allowed_unless_denied_there_and_the_cluster_scope_only_if_everywhere(
    rules: list[Denied], verb: str, resource: str, namespace: str | None
) -> None:
    # The rules name namespaces a and b at most: c stands for every other one.
    access = Access(denied=tuple(rules))
    everywhere = access.allows(verb, resource, None)
    assert everywhere == all(access.allows(verb, resource, ns) for ns in ("a", "b", "c"))
    expected = not any(
        rule.verb == verb and rule.resource == resource and rule.namespace in {None, namespace}
        for rule in rules
    )
    if namespace is not None:
        assert access.allows(verb, resource, namespace) == expected
