"""The ``kubernetes`` client: the one place that maps the core's requests to its calls.

:class:`KubeCalls` performs pod and Secret requests and lists with a ``CoreV1Api``; pair
it with :class:`~k8s_workloads.io.pool.PoolDriver` to keep many in flight::

    calls = KubeCalls(kubernetes.client.CoreV1Api(), pool_size=32)
    driver = PoolDriver(core, calls.performer(read_states=..., emit=...), failures=FAILURES)

Responses are never turned into model objects (nothing reads them, and a pod the client
cannot model must not fail a call the server accepted): each is read as bytes to its end
and released, so its connection goes back to the client's pool, whose size is raised to
``pool_size`` so that many calls in flight reuse as many connections. Lists are read in
pages (:data:`~k8s_workloads.io.policy.PAGE_SIZE`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from kubernetes.client import rest
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from k8s_workloads.decisions.actions import DeletePod, EmitEvent, PatchLabels
from k8s_workloads.executor import CreatePod, DeleteSecret, ListPods, ReadStates, Request
from k8s_workloads.io.policy import PAGE_SIZE, Paging, label_patch

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = ["FAILURES", "KubeCalls"]

FAILURES: tuple[type[BaseException], ...] = (ApiException, HTTPError, OSError)
"""What a failed call of the ``kubernetes`` client raises: an API error, urllib3's
transport errors, a connection error."""


def _drain(response: Any) -> bytes:  # noqa: ANN401 - urllib3's HTTPResponse
    """The whole body; the connection is released to the pool, never left half read."""
    try:
        data: bytes = response.data
    finally:
        response.release_conn()
    return data


class KubeCalls:
    """Pod and Secret calls and lists through ``api`` (a ``kubernetes.client.CoreV1Api``).

    ``request_args``: keyword arguments every call takes (the provider's
    ``kube_client_request_args``, e.g. ``_request_timeout``). ``delete_options``: the
    ``DeleteOptions`` body of pod deletions (the provider's ``delete_option_kwargs``).
    ``pool_size``: the connections the client holds, all kept for reuse; a call beyond
    them waits for one (None: the client's own setting, which opens more when all are busy).
    """

    def __init__(
        self,
        api: Any,  # noqa: ANN401 - kubernetes.client.CoreV1Api (untyped)
        *,
        request_args: Mapping[str, Any] | None = None,
        delete_options: Mapping[str, Any] | None = None,
        pool_size: int | None = None,
        page_size: int = PAGE_SIZE,
    ) -> None:
        self.api = api
        self.request_args = {**(request_args or {}), "_preload_content": False}
        self.delete_options = dict(delete_options or {})
        self.page_size = page_size
        if pool_size is not None:
            _ensure_pool_size(api, pool_size)

    # --- requests -------------------------------------------------------------------

    def perform(self, request: Request) -> object:
        """Perform a pod or Secret request, or a list (``(pods, resource_version)``).

        Raises the client's errors (:data:`FAILURES`); what a 404 means is the policy's
        (:func:`~k8s_workloads.io.policy.failure_is_done`), decided by the driver.
        """
        api, extra = self.api, self.request_args
        if isinstance(request, CreatePod):
            if request.secret is not None:  # the Secret before its pod, in one task
                _drain(api.create_namespaced_secret(request.namespace, request.secret, **extra))
            _drain(api.create_namespaced_pod(request.namespace, request.pod, **extra))
        elif isinstance(request, DeletePod):
            body = self.delete_options or None
            _drain(
                api.delete_namespaced_pod(request.pod_name, request.namespace, body=body, **extra)
            )
        elif isinstance(request, DeleteSecret):
            _drain(api.delete_namespaced_secret(request.name, request.namespace, **extra))
        elif isinstance(request, PatchLabels):
            # A list body (a guarded relabel) goes as application/json-patch+json.
            patch = label_patch(request)
            _drain(api.patch_namespaced_pod(request.pod_name, request.namespace, patch, **extra))
        elif isinstance(request, ListPods):
            return self.list_pods(
                request.namespace,
                label_selector=request.selector.label_selector,
                field_selector=request.selector.field_selector,
            )
        else:
            raise TypeError(f"{type(request).__name__} is not a Kubernetes call")
        return None

    def performer(
        self,
        *,
        read_states: Callable[[ReadStates], object],
        emit: Callable[[EmitEvent], None],
    ) -> Callable[[Request], object]:
        """One ``perform`` for every request: the database's and the scheduler's parts
        (state reads, events) are the caller's, the rest goes to the API."""

        def perform(request: Request) -> object:
            if isinstance(request, EmitEvent):
                emit(request)
                return None
            if isinstance(request, ReadStates):
                return read_states(request)
            return self.perform(request)

        return perform

    def list_pods(
        self,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Every pod matching the selectors (``namespace`` None: all), read in pages, and
        the list's resource version. An expired continue token starts the list again."""
        paging = Paging(
            self.request_args,
            label_selector=label_selector,
            field_selector=field_selector,
            page_size=self.page_size,
        )
        while (query := paging.query()) is not None:
            try:
                if namespace is None:
                    response = self.api.list_pod_for_all_namespaces(**query)
                else:
                    response = self.api.list_namespaced_pod(namespace, **query)
                paging.take(json.loads(_drain(response)))
            except ApiException as error:  # noqa: PERF203 - a page's call, retried as a whole
                if not paging.expired(error):
                    raise
        return paging.result


def _ensure_pool_size(api: Any, size: int) -> None:  # noqa: ANN401 - CoreV1Api
    """Give ``api``'s client a pool of ``size`` connections per host, and no more.

    urllib3 closes the connections it cannot keep, so a pool smaller than the calls in
    flight means a new connection per call; and by default it opens one beyond the pool
    whenever all are busy. Blocking, a call beyond ``size`` waits for a connection: the
    client holds at most ``size`` (watches on the same client included).
    """
    client = api.api_client
    configuration = client.configuration
    if (configuration.connection_pool_maxsize or 0) != size:
        configuration.connection_pool_maxsize = size
        client.rest_client = rest.RESTClientObject(configuration)
    client.rest_client.pool_manager.connection_pool_kw["block"] = True
