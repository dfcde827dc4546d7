"""Pod building: the worker pod of a task, callback or generic workload, and the rules it
must keep.

The package's modules, from the bottom up:

* :mod:`~k8s_workloads.pods.validation` and :mod:`~k8s_workloads.pods.schema`: the
  Kubernetes naming rules and the 1.37 Pod schema (generated into ``schema_definitions``);
* :mod:`~k8s_workloads.pods.labels` and :mod:`~k8s_workloads.pods.codec`: label values,
  selectors, and a workload key written to and read back from annotations;
* :mod:`~k8s_workloads.pods.reconcile`: the provider's merge of pod layers;
* :mod:`~k8s_workloads.pods.redaction` and :mod:`~k8s_workloads.pods.payload`: the
  Execution API token kept out of what is shown, and out of the pod spec;
* :mod:`~k8s_workloads.pods.workload`: the container args that run a workload;
* :mod:`~k8s_workloads.pods.restart`: the restart policy every worker pod has (``Never``);
* :mod:`~k8s_workloads.pods.termination`: the ``base`` container's termination message
  policy (``FallbackToLogsOnError`` unless a layer sets one);
* :mod:`~k8s_workloads.pods.identity`: what the watcher decodes from a pod;
* :mod:`~k8s_workloads.pods.general_build`: the general build (merge, then every check);
* :mod:`~k8s_workloads.pods.prepared_build`: the prepared path, the same pods faster, and
  :func:`fast_path`, its switch;
* :mod:`~k8s_workloads.pods.build`: the builders, :class:`PodTemplate`,
  :func:`construct_task_pod`, :func:`construct_callback_pod`, :func:`construct_generic_pod`,
  :func:`construct_pod`.

``k8s_workloads.pods`` was a module: its names are here still, loaded on first use, so
that importing one of the package's lower modules (``pods.codec`` for the CLI's
``decode``, say) does not load the builders.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from k8s_workloads.pods.build import (
        PodTemplate,
        check_pod_override,
        construct_callback_pod,
        construct_generic_pod,
        construct_pod,
        construct_task_pod,
    )
    from k8s_workloads.pods.errors import (
        InvalidJob,
        InvalidMutatedPod,
        InvalidPod,
        PodMutationHookError,
    )
    from k8s_workloads.pods.general_build import MutationHook
    from k8s_workloads.pods.identity import callback_pod_name, generic_pod_name
    from k8s_workloads.pods.prepared_build import FastPathUse, fast_path
    from k8s_workloads.pods.restart import WORKER_RESTART_POLICY, replaced_restart_policy
    from k8s_workloads.pods.termination import BASE_TERMINATION_MESSAGE_POLICY
    from k8s_workloads.pods.workload import (
        BASE_CONTAINER_NAME,
        EXECUTE_WORKLOAD_MODULE,
        EXECUTOR_POD_ENV,
        parse_callback_log_path,
        workload_command_args,
    )

_OWNERS: dict[str, str] = {
    "PodTemplate": "build",
    "check_pod_override": "build",
    "construct_callback_pod": "build",
    "construct_generic_pod": "build",
    "construct_pod": "build",
    "construct_task_pod": "build",
    "InvalidJob": "errors",
    "InvalidMutatedPod": "errors",
    "InvalidPod": "errors",
    "PodMutationHookError": "errors",
    "MutationHook": "general_build",
    "callback_pod_name": "identity",
    "generic_pod_name": "identity",
    "FastPathUse": "prepared_build",
    "fast_path": "prepared_build",
    "WORKER_RESTART_POLICY": "restart",
    "replaced_restart_policy": "restart",
    "BASE_TERMINATION_MESSAGE_POLICY": "termination",
    "BASE_CONTAINER_NAME": "workload",
    "EXECUTE_WORKLOAD_MODULE": "workload",
    "EXECUTOR_POD_ENV": "workload",
    "parse_callback_log_path": "workload",
    "workload_command_args": "workload",
}
"""Each public name and the module of the package that defines it."""


def __getattr__(name: str) -> Any:  # noqa: ANN401 - whatever the owner defines
    """Load a public name from its module on first use (PEP 562)."""
    module = _OWNERS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "BASE_CONTAINER_NAME",
    "BASE_TERMINATION_MESSAGE_POLICY",
    "EXECUTE_WORKLOAD_MODULE",
    "EXECUTOR_POD_ENV",
    "WORKER_RESTART_POLICY",
    "FastPathUse",
    "InvalidJob",
    "InvalidMutatedPod",
    "InvalidPod",
    "MutationHook",
    "PodMutationHookError",
    "PodTemplate",
    "callback_pod_name",
    "check_pod_override",
    "construct_callback_pod",
    "construct_generic_pod",
    "construct_pod",
    "construct_task_pod",
    "fast_path",
    "generic_pod_name",
    "parse_callback_log_path",
    "replaced_restart_policy",
    "workload_command_args",
]
