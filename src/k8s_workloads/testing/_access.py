"""Who may call the kit's API server, and what they may do: a bearer token it requires
(401 ``Unauthorized`` without it), the verbs it refuses (:class:`Denied`: 403
``Forbidden``, as RBAC refuses a verb no role grants), and ``SelfSubjectAccessReview``,
which answers whether a verb would be allowed, as ``kubectl auth can-i`` asks it.

The kit's model of RBAC is an allow-all with exceptions: every verb is allowed but those
denied. A request at the cluster scope (a list or watch of every namespace) is refused
when the verb is denied in any namespace, as a role bound in some namespaces only does
not grant the cluster scope. No I/O: the server (:mod:`k8s_workloads.testing.server`)
asks :class:`Access` before it routes a request.
"""

from __future__ import annotations

import hmac
from typing import Any

import attrs

from k8s_workloads import config_checks as _checks
from k8s_workloads.display import shown
from k8s_workloads.testing._admission import Cause
from k8s_workloads.testing.errors import ApiError

__all__ = [
    "AUTHORIZATION_GROUP",
    "AUTHORIZATION_RESOURCES",
    "KIT_USER",
    "RBAC_VERBS",
    "REVIEW_PATH",
    "Access",
    "Denied",
    "check_token",
    "rbac_verb",
]

KIT_USER = "k8s-workloads-kit"
"""The user every caller is, as a 403's message names it."""

REVIEW_PATH = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
"""Where ``SelfSubjectAccessReview`` is created (``POST``)."""

RBAC_VERBS = frozenset({
    "create", "get", "list", "watch", "update", "patch", "delete", "deletecollection",
})  # fmt: skip
"""The verbs of a resource request (``k8s.io/apiserver`` ``RequestInfo``)."""

# A request's verb as the server counts it (ServerStats) -> its RBAC verb.
_RBAC_VERB = {
    "GET": "get",
    "LIST": "list",
    "WATCH": "watch",
    "POST": "create",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}

_GROUP = "authorization.k8s.io"
_API_VERSION = f"{_GROUP}/v1"
_REVIEW_KIND = "SelfSubjectAccessReview"


def rbac_verb(counted: str) -> str:
    """The RBAC verb of a request counted under ``counted`` (``LIST`` -> ``list``)."""
    return _RBAC_VERB.get(counted, counted.lower())


def _verb(instance: object, attribute: Any, value: Any) -> None:  # noqa: ANN401 - attrs'
    if value not in RBAC_VERBS:
        raise _checks.InvalidConfig(
            type(instance).__name__,
            attribute.name,
            f"must be one of {', '.join(sorted(RBAC_VERBS))}, got {shown(value)}",
        )


def _resource(instance: object, attribute: Any, value: Any) -> None:  # noqa: ANN401
    if not isinstance(value, str) or not value or value != value.strip().lower():
        raise _checks.InvalidConfig(
            type(instance).__name__,
            attribute.name,
            f"must be a resource as RBAC names it (pods, secrets, pods/log), got {shown(value)}",
        )


def check_token(instance: object, attribute: Any, value: object) -> None:  # noqa: ANN401 - attrs'
    """A bearer token, or None: text without spaces (an HTTP header carries it)."""
    if value is not None and (not isinstance(value, str) or not value or value.split() != [value]):
        raise _checks.InvalidConfig(
            type(instance).__name__,
            attribute.name,
            "must be None or a token: text without spaces",  # the value is a secret
        )


@attrs.frozen
class Denied:
    """A verb the kit's API server refuses, as RBAC refuses one the caller's roles do not
    grant: ``verb`` (``create``, ``get``, ``list``, ``watch``, ``patch``, ``delete``, ...)
    on ``resource`` (``pods``, ``secrets``, a subresource as ``pods/log``) in
    ``namespace`` (None: every namespace). Such a request is answered 403 ``Forbidden``,
    and a ``SelfSubjectAccessReview`` of it ``allowed: false``."""

    verb: str = attrs.field(validator=_verb)
    resource: str = attrs.field(validator=_resource)
    namespace: str | None = attrs.field(default=None, validator=_checks.optional_text)

    def covers(self, verb: str, resource: str, namespace: str | None) -> bool:
        """Whether a request of ``verb`` on ``resource`` in ``namespace`` (None: at the
        cluster scope, every namespace) is refused by this rule."""
        return (
            verb == self.verb
            and resource == self.resource
            and (self.namespace is None or namespace is None or namespace == self.namespace)
        )


def _forbidden_message(verb: str, resource: str, namespace: str | None, name: str | None) -> str:
    # k8s.io/apiserver's forbiddenMessage: the object (or the collection), the user, the
    # verb, the resource and group, and where.
    what = f'{resource} "{name}"' if name else resource
    where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    return (
        f'{what} is forbidden: User "{KIT_USER}" cannot {verb} resource "{resource}" '
        f'in API group "" {where}'
    )


@attrs.frozen
class Access:
    """The server's caller checks: the bearer token it requires (None: none) and the
    verbs it denies."""

    token: str | None = attrs.field(default=None, validator=check_token, repr=False)
    denied: tuple[Denied, ...] = ()

    def authenticate(self, authorization: str | None) -> None:
        """Raise the 401 an API server answers a request whose credentials it does not
        accept (with a token required: none, or another; anonymous requests are off)."""
        if self.token is None:
            return
        scheme, _, given = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            given.strip().encode(), self.token.encode()
        ):
            raise ApiError(401, "Unauthorized", "Unauthorized")

    def allows(self, verb: str, resource: str, namespace: str | None) -> bool:
        """Whether ``verb`` on ``resource`` in ``namespace`` (None: the cluster scope) is
        allowed."""
        return not any(rule.covers(verb, resource, namespace) for rule in self.denied)

    def authorize(
        self, counted: str, resource: str, namespace: str | None, name: str | None
    ) -> None:
        """Raise the 403 an API server answers a request RBAC does not allow; ``counted``
        is the verb the server counts it under (``LIST``, ``POST``, ...)."""
        verb = rbac_verb(counted)
        if not self.allows(verb, resource, namespace):
            raise ApiError(
                403,
                "Forbidden",
                _forbidden_message(verb, resource, namespace, name),
                details={"name": name, "kind": resource} if name else {"kind": resource},
            )

    def review(self, body: dict[str, Any]) -> dict[str, Any]:
        """The answer to a ``SelfSubjectAccessReview`` (``authorization.k8s.io/v1``): the
        review as sent, with ``status.allowed`` and, when allowed, a ``reason``; a 422
        ``Invalid`` unless ``spec`` has exactly one of ``resourceAttributes`` and
        ``nonResourceAttributes``."""
        spec = body.get("spec")
        spec = spec if isinstance(spec, dict) else {}
        attributes = spec.get("resourceAttributes")
        other = spec.get("nonResourceAttributes")
        if (attributes is None) == (other is None):
            both = attributes is not None
            field = "spec.nonResourceAttributes" if both else "spec.resourceAttributes"
            why = (
                "cannot be specified in combination with resourceAttributes"
                if both
                else "exactly one of nonResourceAttributes or resourceAttributes must be specified"
            )
            value = "{...}" if both else "null"
            message = f'Invalid value: "{value}": {why}'
            raise _invalid_review(Cause(field, "FieldValueInvalid", message))
        if attributes is not None and not isinstance(attributes, dict):
            raise ApiError(400, "BadRequest", "spec.resourceAttributes: must be an object")
        allowed = True
        if attributes is not None:
            verb = str(attributes.get("verb") or "")
            resource = str(attributes.get("resource") or "")
            subresource = str(attributes.get("subresource") or "")
            if subresource:
                resource = f"{resource}/{subresource}"
            group = str(attributes.get("group") or "")
            namespace = attributes.get("namespace") or None
            allowed = group != "" or self.allows(verb, resource, namespace)
        status: dict[str, Any] = {"allowed": allowed}
        if allowed:  # RBAC names what allowed it; a denial is its "no opinion", no reason
            status["reason"] = "RBAC: allowed by the kit's FakeApiServer (not denied)"
        return {
            "kind": _REVIEW_KIND,
            "apiVersion": _API_VERSION,
            "metadata": {"creationTimestamp": None},
            "spec": spec,
            "status": status,
        }


def _invalid_review(cause: Cause) -> ApiError:
    return ApiError(
        422,
        "Invalid",
        f'{_REVIEW_KIND}.{_GROUP} "" is invalid: {cause.field}: {cause.message}',
        details={"group": _GROUP, "kind": _REVIEW_KIND, "causes": [cause.to_json()]},
    )


AUTHORIZATION_RESOURCES = {
    "kind": "APIResourceList",
    "apiVersion": "v1",
    "groupVersion": _API_VERSION,
    "resources": [
        {
            "name": "selfsubjectaccessreviews",
            "singularName": "selfsubjectaccessreview",
            "namespaced": False,
            "kind": _REVIEW_KIND,
            "verbs": ["create"],
        }
    ],
}
"""``/apis/authorization.k8s.io/v1``: what the group serves here."""

AUTHORIZATION_GROUP = {
    "name": _GROUP,
    "versions": [{"groupVersion": _API_VERSION, "version": "v1"}],
    "preferredVersion": {"groupVersion": _API_VERSION, "version": "v1"},
}
"""The group's entry in ``/apis``."""
