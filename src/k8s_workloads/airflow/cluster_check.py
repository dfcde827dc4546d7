"""``k8s-workloads airflow-config --check --connect``: whether the cluster the executor is
configured for lets it work, asked with the executor's own API client.

In order, each step only once the one before passed: the API server answers at the
client's address (``GET /version``), it accepts the client's credentials (no 401), each
namespace the executor creates pods in or watches exists, and RBAC allows every verb the
executor uses there (one ``SelfSubjectAccessReview`` per verb, as ``kubectl auth can-i``
asks): on pods ``create``, ``get``, ``list``, ``watch``, ``delete`` and ``patch``; on
Secrets ``create`` and ``delete`` with ``secure_workload_payload`` (the executor never
reads one back). Each problem is one line; no credential is ever in one.

Takes a ``kubernetes.client.ApiClient`` (the executor's: ``CoreV1Api().api_client``), so
it runs against any cluster, the test kit's included; imports the ``kubernetes`` client,
not Airflow.
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

__all__ = ["POD_VERBS", "SECRET_VERBS", "ClusterCheck", "check_cluster"]

POD_VERBS = ("create", "get", "list", "watch", "delete", "patch")
"""What the executor does with pods: creates them, reads one, lists and watches them,
deletes them, and patches their labels (done marks, adoption)."""

SECRET_VERBS = ("create", "delete")
"""What it does with Secrets (``secure_workload_payload``): one created before each pod,
deleted with it."""


@attrs.frozen
class ClusterCheck:
    """What :func:`check_cluster` found: one line per problem, and a summary when none."""

    address: str
    problems: tuple[str, ...]
    summary: str


class _Stop(Exception):
    """The check cannot go on (the server cannot be reached or refuses the client)."""


def _namespace_text(namespace: str | None) -> str:
    return f"namespace {namespace!r}" if namespace else "every namespace (cluster scope)"


def _connection_reason(error: BaseException) -> str:
    """A connection failure in a few words: urllib3 wraps the socket's error in its own
    (``MaxRetryError(NewConnectionError(ConnectionRefusedError))``)."""
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in seen:
        seen.append(current)
        current = getattr(current, "reason", None) or current.__cause__ or current.__context__
    for cause in seen:
        if isinstance(cause, ConnectionRefusedError) or getattr(cause, "errno", None) == (
            errno.ECONNREFUSED
        ):
            return "connection refused"
    names = {type(cause).__name__ for cause in seen}
    text = " ".join(str(cause) for cause in seen)
    if names & {"ConnectTimeoutError", "ReadTimeoutError", "TimeoutError"}:
        return "no answer in time (api_request_timeout)"
    if "SSLError" in names:
        return f"TLS failed ({_last_words(seen, 'SSLError')})"
    if "NameResolutionError" in names or "Name or service not known" in text:
        return "the host name does not resolve"
    if "refused" in text.lower():
        return "connection refused"
    return _last_words(seen, None)


def _last_words(causes: Sequence[BaseException], name: str | None) -> str:
    for cause in reversed(causes):
        if name is None or type(cause).__name__ == name:
            return f"{type(cause).__name__}: {cause}".splitlines()[0][:200]
    return type(causes[-1]).__name__


def _needed(
    namespace: str, watched: Iterable[str | None], *, secrets: bool
) -> list[tuple[str | None, str, str]]:
    """(namespace, verb, resource) for each permission the executor uses: where it
    creates pods and where it watches them (None: at the cluster scope)."""
    places = list(dict.fromkeys([namespace, *watched]))
    needed = [(place, verb, "pods") for place in places for verb in POD_VERBS]
    if secrets:
        needed += [(place, verb, "secrets") for place in places for verb in SECRET_VERBS]
    return needed


def check_cluster(
    api_client: Any,  # noqa: ANN401 - a kubernetes.client.ApiClient (36.x has no types)
    *,
    namespace: str,
    watched: Sequence[str | None],
    secrets: bool,
    request_timeout: tuple[float, float] | float | None,
) -> ClusterCheck:
    """Ask the cluster behind ``api_client`` whether the executor can work there: pods
    created in ``namespace``, watched in ``watched`` (None: every namespace), Secrets
    made and deleted when ``secrets``. Every call is bounded by ``request_timeout`` (the
    executor's). Never raises for what the cluster answers; never shows a credential."""
    from kubernetes import client  # noqa: PLC0415 - the airflow extra's dependency

    configuration = api_client.configuration
    address = str(configuration.host)
    problems: list[str] = []
    args = {"_request_timeout": request_timeout}
    try:
        version = _reach(client, api_client, address, args)
        found = _namespaces(client, api_client, [namespace, *watched], args, problems)
        _access(client, api_client, _needed(namespace, watched, secrets=secrets), args, problems)
    except _Stop as stop:
        problems.append(str(stop))
    except Exception as error:  # noqa: BLE001 - it answered, then a call failed: timed out,
        # reset (urllib3's errors are no OSError): one line, never a traceback
        problems.append(
            f"the API server at {address} stopped answering: {_connection_reason(error)}"
        )
    if problems:
        return ClusterCheck(address, _scrubbed(problems, configuration), "")
    where = ", ".join(_namespace_text(place) for place in dict.fromkeys([namespace, *watched]))
    exist = (
        f"namespace {found[0]} exists; "
        if len(found) == 1
        else f"namespaces {' and '.join(found)} exist; "
        if found
        else ""
    )
    summary = (
        f"the API server at {address} ({version}) accepts the client; {exist}RBAC allows pods: "
        f"{', '.join(POD_VERBS)}"
        + (f"; Secrets: {', '.join(SECRET_VERBS)}" if secrets else "")
        + f" in {where}"
    )
    return ClusterCheck(address, (), _scrubbed([summary], configuration)[0])


def _reach(client: Any, api_client: Any, address: str, args: dict[str, Any]) -> str:  # noqa: ANN401
    """The server's version; :class:`_Stop` when it cannot be reached or refuses the
    client's credentials."""
    try:
        info = client.VersionApi(api_client).get_code(**args)
    except client.ApiException as error:
        if error.status == 401:
            raise _Stop(
                f"the API server at {address} refuses the client's credentials (401 "
                "Unauthorized): renew the token or certificate of the kubeconfig "
                "(config_file, cluster_context) or of the service account"
            ) from None
        # 403 and others: the server answers and knows the caller (RBAC comes next).
        return f"version not readable: {error.status}"
    except Exception as error:  # noqa: BLE001 - urllib3's, the socket's: any is a reason
        raise _Stop(
            f"cannot reach the API server at {address}: {_connection_reason(error)}"
        ) from None
    return str(getattr(info, "git_version", "") or "version unknown")


def _namespaces(
    client: Any,  # noqa: ANN401
    api_client: Any,  # noqa: ANN401
    names: Iterable[str | None],
    args: dict[str, Any],
    problems: list[str],
) -> list[str]:
    """The namespaces found (quoted); one problem for each that does not exist. A
    namespace the client may not read is taken as there (the executor never reads one)."""
    found = []
    core = client.CoreV1Api(api_client)
    for name in dict.fromkeys(n for n in names if n):
        try:
            core.read_namespace(name, **args)
        except client.ApiException as error:
            if error.status == 404:
                problems.append(
                    f"namespace {name!r} does not exist: create it (kubectl create namespace "
                    f"{name}), or set namespace / multi_namespace_mode_namespace_list"
                )
                continue
            if error.status == 401:
                raise _Stop(f"the API server refuses the client's credentials ({name!r})") from None
        found.append(repr(name))
    return found


def _access(
    client: Any,  # noqa: ANN401
    api_client: Any,  # noqa: ANN401
    needed: Iterable[tuple[str | None, str, str]],
    args: dict[str, Any],
    problems: list[str],
) -> None:
    """One ``SelfSubjectAccessReview`` per permission; one problem per one denied."""
    api = client.AuthorizationV1Api(api_client)
    for namespace, verb, resource in needed:
        body = client.V1SelfSubjectAccessReview(
            spec=client.V1SelfSubjectAccessReviewSpec(
                resource_attributes=client.V1ResourceAttributes(
                    namespace=namespace or "", verb=verb, group="", resource=resource
                )
            )
        )
        try:
            review = api.create_self_subject_access_review(body, **args)
        except client.ApiException as error:
            raise _Stop(
                f"cannot ask RBAC through SelfSubjectAccessReview ({error.status} "
                f"{error.reason}): check the permissions by hand (kubectl auth can-i)"
            ) from None
        status = review.status
        if status is None or not status.allowed:
            reason = f" ({status.reason})" if status is not None and status.reason else ""
            problems.append(
                f"RBAC: may not {verb!r} {resource} in {_namespace_text(namespace)}{reason}: "
                f"grant it to the scheduler's user or service account (a Role, bound to it, "
                f"with verb {verb!r} on {resource})"
            )


def _scrubbed(problems: Iterable[str], configuration: Any) -> tuple[str, ...]:  # noqa: ANN401
    """The problems with every credential of ``configuration`` masked (an error's text
    could quote one)."""
    secrets: set[str] = set()
    for value in (getattr(configuration, "api_key", None) or {}).values():
        if isinstance(value, str) and value:
            secrets.update({value, value.partition(" ")[2]})
    password = getattr(configuration, "password", None)
    if isinstance(password, str):
        secrets.add(password)
    lines = []
    for problem in problems:
        for secret in sorted(filter(None, secrets), key=len, reverse=True):
            problem = problem.replace(secret, "***")  # noqa: PLW2901
        lines.append(problem)
    return tuple(lines)
