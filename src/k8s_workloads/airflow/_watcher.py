"""The executor's watcher thread: one namespace's pod watch (or every namespace's) read
as JSON lines, decoded once and put on the executor's queue for ``sync()`` to feed to the
core; it restarts when the stream ends and resumes from the last version it saw.
"""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING, Any

from k8s_workloads.pods.labels import watcher_selector
from k8s_workloads.watch._watchjson import decode_event

if TYPE_CHECKING:
    import queue

    from k8s_workloads.airflow.executor import KubernetesExecutor

__all__ = ["_Watcher"]

_WATCH_TIMEOUT_SECONDS = 300


class _Watcher(threading.Thread):
    """Reads one namespace's pod watch (None: every namespace's) as JSON lines onto the
    executor's queue; restarts when the stream ends."""

    def __init__(
        self,
        executor: KubernetesExecutor,
        namespace: str | None,
        events: queue.SimpleQueue[object],
    ) -> None:
        super().__init__(name=f"k8s-workloads-watcher-{namespace or 'all'}", daemon=True)
        self.executor = executor
        self.namespace = namespace
        self.events = events
        self.stopping = threading.Event()
        self.resource_version: str | None = None
        self.restart = threading.Event()
        """Set by ``sync()`` after a re-list: watch again from ``resource_version``."""
        self.response: Any = None

    def stop(self, timeout: float) -> None:
        """Stop reading: the open stream is shut down, so an idle watch ends at once."""
        self.stopping.set()
        response = self.response
        shutdown = getattr(response, "shutdown", None)  # urllib3 2.3+
        if shutdown is not None:
            with contextlib.suppress(Exception):
                shutdown()
        self.join(timeout=timeout)

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                self._stream()
            except Exception:  # noqa: PERF203 - the thread's boundary: it must not die
                if self.stopping.is_set():
                    return  # the stream was shut down by stop()
                self.executor.log.exception("The pod watch failed; restarting it")
                self.stopping.wait(1.0)

    def _stream(self) -> None:
        executor = self.executor
        selector = watcher_selector(executor.scheduler_job_id or "")
        api = executor.kube_client
        kwargs: dict[str, Any] = {
            "label_selector": selector.label_selector,
            "watch": True,
            "timeout_seconds": _WATCH_TIMEOUT_SECONDS,
            "_preload_content": False,
        }
        if self.resource_version:
            kwargs["resource_version"] = self.resource_version
        if self.namespace is None:
            response = api.list_pod_for_all_namespaces(**kwargs)
        else:
            response = api.list_namespaced_pod(self.namespace, **kwargs)
        self.response = response
        try:
            buffer = b""
            for chunk in response.stream(amt=None, decode_content=True):
                if self.stopping.is_set() or self.restart.is_set():
                    break
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        self._take(line.decode("utf-8", "replace"))
        finally:
            self.response = None
            response.release_conn()
        if self.restart.is_set():
            self.restart.clear()

    def _take(self, line: str) -> None:
        # Decoded here, once, on the watcher's thread (only what resolution reads); the
        # core takes the decoded event. Text that is not JSON goes on as it is, and the
        # core reports it.
        try:
            event = decode_event(line)
        except (ValueError, RecursionError):
            self.events.put(line)
            return
        self.events.put(event)
        if not isinstance(event, dict) or not isinstance(event.get("object"), dict):
            return
        obj = event["object"]
        if event.get("type") == "ERROR":
            # A 410 (or any ERROR): the stream ends; the core asks for a re-list.
            self.resource_version = None
            self.restart.set()
            return
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if isinstance(version, str):
            self.resource_version = version
