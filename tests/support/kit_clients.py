"""The real Kubernetes clients (``kubernetes`` and ``kubernetes_asyncio``) as the kit's
conformance tests call them: one call, its answer as a plain dict, or a :class:`Failure`
with the status, the Status document and the headers."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import kubernetes_asyncio
import pytest
from kubernetes import client as k8s


class Failure(Exception):
    """An API call answered with an error: its status, the Status document, headers."""

    def __init__(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
        super().__init__(f"{status}: {body}")
        self.status = status
        self.body = body
        self.headers = headers


def _failure(error: Any) -> Failure:
    body = json.loads(error.body) if error.body else {}
    return Failure(int(error.status), body, dict(error.headers or {}))


class SyncClient:
    """``kubernetes.client.CoreV1Api`` calls, answers as plain dicts."""

    name = "kubernetes"

    def __init__(self, url: str) -> None:
        self.api_client: Any = k8s.ApiClient(k8s.Configuration(host=url))
        self.api: Any = k8s.CoreV1Api(self.api_client)

    def __call__(self, method: str, *args: Any, **kwargs: Any) -> Any:
        try:
            answer = getattr(self.api, method)(*args, **kwargs)
        except k8s.ApiException as error:
            raise _failure(error) from None
        return self.api_client.sanitize_for_serialization(answer)

    def text(self, method: str, *args: Any, **kwargs: Any) -> str:
        """A call answered in plain text (a log), read raw: kubernetes 36 deserialises a
        ``str`` answer as ``repr(bytes)``."""
        try:
            response = getattr(self.api, method)(*args, _preload_content=False, **kwargs)
        except k8s.ApiException as error:
            raise _failure(error) from None
        return str(response.data.decode())

    def stream(self, namespace: str, **options: Any) -> tuple[int, list[dict[str, Any]]]:
        """A watch's HTTP status and every event until the stream ends."""
        try:
            response = self.api.list_namespaced_pod(
                namespace, watch=True, _preload_content=False, **options
            )
        except k8s.ApiException as error:
            return int(error.status), [json.loads(error.body or "{}")]
        lines = response.read().decode().splitlines()
        return int(response.status), [json.loads(line) for line in lines]

    def close(self) -> None:
        self.api_client.close()


class AsyncClient:
    """``kubernetes_asyncio.client.CoreV1Api`` calls, each in its own event loop."""

    name = "kubernetes_asyncio"

    def __init__(self, url: str) -> None:
        self.url = url

    def __call__(self, method: str, *args: Any, **kwargs: Any) -> Any:
        aio: Any = kubernetes_asyncio.client

        async def call() -> Any:
            async with aio.ApiClient(aio.Configuration(host=self.url)) as api_client:
                try:
                    answer = await getattr(aio.CoreV1Api(api_client), method)(*args, **kwargs)
                except aio.ApiException as error:
                    raise _failure(error) from None
                return api_client.sanitize_for_serialization(answer)

        return asyncio.run(call())

    def text(self, method: str, *args: Any, **kwargs: Any) -> str:
        """A call answered in plain text (a log)."""
        return str(self(method, *args, **kwargs))

    def stream(self, namespace: str, **options: Any) -> tuple[int, list[dict[str, Any]]]:
        """A watch's HTTP status and every event until the stream ends."""
        aio: Any = kubernetes_asyncio.client

        async def call() -> tuple[int, list[dict[str, Any]]]:
            async with aio.ApiClient(aio.Configuration(host=self.url)) as api_client:
                try:
                    response = await aio.CoreV1Api(api_client).list_namespaced_pod(
                        namespace, watch=True, _preload_content=False, **options
                    )
                except aio.ApiException as error:
                    return int(error.status), [json.loads(error.body)]
                lines = (await response.read()).decode().splitlines()
                return int(response.status), [json.loads(line) for line in lines]

        return asyncio.run(call())

    def close(self) -> None:
        pass


Client = Any  # SyncClient or AsyncClient


def fails(client: Client, *args: Any, **kwargs: Any) -> Failure:
    """The :class:`Failure` a call answers (the test fails if it succeeds)."""
    with pytest.raises(Failure) as raised:
        client(*args, **kwargs)
    return raised.value
