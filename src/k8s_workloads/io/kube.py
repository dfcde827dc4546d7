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

The client's own retries are turned off (its configuration's ``retries = False``): urllib3
would otherwise try a failed call again up to three times below the core, logging a
``Retrying`` warning each time, and hide from the core an error whose retries and pause
are its own (:mod:`~k8s_workloads.io.policy`). A failed call raises urllib3's error as it
happened (``NewConnectionError``, ``ReadTimeoutError``, ``ProtocolError``), never
``MaxRetryError``. Every user of the same ``ApiClient`` (a watch on it too) gets the same.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubernetes.client import rest
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from k8s_workloads.io.calls import CallPlan, CoreV1Client, ListsPods, on_core_v1
from k8s_workloads.io.policy import PAGE_SIZE

if TYPE_CHECKING:
    from collections.abc import Mapping


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


class KubeCalls(CoreV1Client[object], ListsPods):
    """Pod and Secret calls and lists through ``api`` (a ``kubernetes.client.CoreV1Api``).

    ``request_args``: keyword arguments every call takes (the provider's
    ``kube_client_request_args``, e.g. ``_request_timeout``). ``delete_options``: the
    ``DeleteOptions`` body of pod deletions (the provider's ``delete_option_kwargs``).
    ``pool_size``: the connections the client holds, all kept for reuse; a call beyond
    them waits for one (None: the client's own setting, which opens more when all are busy).
    Each call's timeouts are the client's ``_request_timeout`` in ``request_args`` (none:
    a call may wait for ever).
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
        super().__init__(
            api, request_args=request_args, delete_options=delete_options, page_size=page_size
        )
        _configure_client(api, pool_size)

    def _run(self, plan: CallPlan) -> object:
        for call in plan:
            try:
                plan.take(_drain(on_core_v1(self.api, call)))
            except ApiException as error:  # noqa: PERF203 - see CallPlan.recovered
                if not plan.recovered(error):
                    raise
        return plan.result


def _configure_client(api: Any, size: int | None) -> None:  # noqa: ANN401 - CoreV1Api
    """Turn ``api``'s client's own retries off (see the module) and, with ``size``, give
    it a pool of ``size`` connections per host, and no more.

    urllib3 closes the connections it cannot keep, so a pool smaller than the calls in
    flight means a new connection per call; and by default it opens one beyond the pool
    whenever all are busy. Blocking, a call beyond ``size`` waits for a connection: the
    client holds at most ``size`` (watches on the same client included). The client's
    pools are made anew when either setting changes (a pool keeps what it was made with).
    """
    client = api.api_client
    configuration = client.configuration
    changed = configuration.retries is not False
    configuration.retries = False
    if size is not None and (configuration.connection_pool_maxsize or 0) != size:
        configuration.connection_pool_maxsize = size
        changed = True
    if changed:
        client.rest_client = rest.RESTClientObject(configuration)
    if size is not None:
        client.rest_client.pool_manager.connection_pool_kw["block"] = True
