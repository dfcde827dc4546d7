"""The provider's watcher and executor set up without their processes, for the benchmarks
that time its per-event path against ours (``bench_executor``, ``bench_events``).

Only where Airflow and the cncf provider are installed: :func:`provider_modules` gives
None elsewhere.
"""

from __future__ import annotations

import logging
import types
from typing import TYPE_CHECKING, Any

from _harness import import_optional

if TYPE_CHECKING:
    from types import ModuleType


def _quiet() -> logging.Logger:
    # Made after Airflow configured logging: the provider's info lines are not printed
    # (nor paid for), a bias in its favour.
    logger = logging.getLogger("bench_executor.quiet")
    logger.disabled = True
    return logger


class _Scheduler:
    def delete_pod(self, *, pod_name: str, namespace: str) -> None:
        pass

    def patch_pod_executor_done(self, *, pod_name: str, namespace: str) -> None:
        pass


def provider_modules() -> dict[str, ModuleType] | None:
    names = {
        "executor": "airflow.providers.cncf.kubernetes.executors.kubernetes_executor",
        "utils": "airflow.providers.cncf.kubernetes.executors.kubernetes_executor_utils",
        "types": "airflow.providers.cncf.kubernetes.executors.kubernetes_executor_types",
        "helpers": "airflow.providers.cncf.kubernetes.kubernetes_helper_functions",
        "state": "airflow.utils.state",
        "watch": "kubernetes.watch",
    }
    modules = {name: import_optional(module) for name, module in names.items()}
    found = {name: module for name, module in modules.items() if module is not None}
    return found if len(found) == len(names) else None


def provider_watcher(modules: dict[str, ModuleType], manager: Any) -> Any:  # noqa: ANN401
    """The provider's watcher, without its process: what ``_run`` calls per event."""
    utils = modules["utils"]
    watcher = utils.KubernetesJobWatcher.__new__(utils.KubernetesJobWatcher)
    watcher.namespace = "airflow"
    watcher.scheduler_job_id = "4217"
    watcher.watcher_queue = manager.Queue()
    watcher.resource_version = None
    watcher.kube_config = types.SimpleNamespace(
        worker_pod_pending_fatal_container_state_reasons=["ErrImagePull", "ImagePullBackOff"]
    )
    watcher.supports_task_instance_uuid = False
    watcher.team_name = None
    watcher._log = _quiet()  # noqa: SLF001
    return watcher


def provider_executor(modules: dict[str, ModuleType], manager: Any) -> Any:  # noqa: ANN401
    """The provider's executor, unstarted, with what ``_change_state`` reads."""
    success = modules["state"].TaskInstanceState.SUCCESS

    class Executor(modules["executor"].KubernetesExecutor):  # type: ignore[misc]
        def _get_task_instance_state(self, _key: object, **_session: object) -> object:
            return success  # the database read, as a look-up

    executor = Executor.__new__(Executor)
    executor.supports_task_instance_uuid = False
    executor._log = _quiet()  # noqa: SLF001
    executor.kube_config = types.SimpleNamespace(
        delete_worker_pods=True, delete_worker_pods_on_failure=False
    )
    executor.kube_scheduler = _Scheduler()
    executor.task_queue = manager.Queue()
    executor.event_buffer = {}
    executor.pod_launch_attempts = {}
    executor.pod_launch_failure_max_retries = 1
    executor.pod_launch_failure_excluded_container_reasons = {"Error"}
    return executor


def watch_report(pod: Any) -> dict[str, Any]:  # noqa: ANN401 - a V1Pod
    annotations = pod.metadata.annotations
    return {
        "pod_name": pod.metadata.name,
        "namespace": pod.metadata.namespace,
        "status": pod.status.phase,
        "annotations": {
            "dag_id": annotations["dag_id"],
            "task_id": annotations["task_id"],
            "logical_date": annotations.get("logical_date"),
            "run_id": annotations.get("run_id"),
            "try_number": annotations["try_number"],
        },
        "resource_version": pod.metadata.resource_version,
    }
