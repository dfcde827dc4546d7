"""k8s_workloads: pure, typed building blocks for Kubernetes-based job executors.

Keys and states, Kubernetes naming rules, and the annotation codec. Nothing here
imports ``kubernetes``; only :mod:`k8s_workloads.adapters` does.

Names are loaded on first use (PEP 562), so ``import k8s_workloads`` costs almost
nothing; ``attrs``, which the value types need, is the bulk of the first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from k8s_workloads.codec import (
        CallbackAnnotationsUnsupported,
        InvalidAnnotations,
        LegacyPodAnnotations,
        annotations_to_key,
        is_callback_pod,
        key_to_annotations,
    )
    from k8s_workloads.compat import (
        CallbackWorkloadsUnsupported,
        InvalidVersion,
        installed_airflow_version,
        require_callback_support,
        supports_callbacks,
    )
    from k8s_workloads.keys import CallbackKey, InvalidKey, TaskInstanceKey, WorkloadKey
    from k8s_workloads.labels import (
        PodSelector,
        add_unique_suffix,
        build_labels_for_callback_pod,
        build_labels_for_k8s_executor_pod,
        build_selector_for_k8s_executor_pod,
        create_unique_id,
        datetime_to_label_safe_datestring,
        label_safe_datestring_to_datetime,
        make_safe_label_value,
    )
    from k8s_workloads.states import (
        CALLBACK_ACTIVE_STATES,
        CALLBACK_TERMINAL_STATES,
        TASK_ADOPTABLE_STATES,
        TASK_FINISHED_STATES,
        TASK_UNFINISHED_STATES,
        CallbackJob,
        CallbackResult,
        CallbackState,
        ExecutorPseudoState,
        FailureDetails,
        KubernetesJob,
        KubernetesResult,
        TaskInstanceState,
        TaskJob,
        TaskResult,
        WorkloadResult,
        WorkloadState,
        state_class_for_key,
    )
    from k8s_workloads.validation import NamingRuleViolation

__version__ = "0.1.0.dev0"

_LAZY: dict[str, str] = {
    "CALLBACK_ACTIVE_STATES": "states",
    "CALLBACK_TERMINAL_STATES": "states",
    "CallbackAnnotationsUnsupported": "codec",
    "CallbackJob": "states",
    "CallbackKey": "keys",
    "CallbackResult": "states",
    "CallbackState": "states",
    "CallbackWorkloadsUnsupported": "compat",
    "ExecutorPseudoState": "states",
    "FailureDetails": "states",
    "InvalidAnnotations": "codec",
    "InvalidKey": "keys",
    "InvalidVersion": "compat",
    "KubernetesJob": "states",
    "KubernetesResult": "states",
    "LegacyPodAnnotations": "codec",
    "NamingRuleViolation": "validation",
    "PodSelector": "labels",
    "TASK_ADOPTABLE_STATES": "states",
    "TASK_FINISHED_STATES": "states",
    "TASK_UNFINISHED_STATES": "states",
    "TaskInstanceKey": "keys",
    "TaskInstanceState": "states",
    "TaskJob": "states",
    "TaskResult": "states",
    "WorkloadKey": "keys",
    "WorkloadResult": "states",
    "WorkloadState": "states",
    "add_unique_suffix": "labels",
    "annotations_to_key": "codec",
    "build_labels_for_callback_pod": "labels",
    "build_labels_for_k8s_executor_pod": "labels",
    "build_selector_for_k8s_executor_pod": "labels",
    "create_unique_id": "labels",
    "datetime_to_label_safe_datestring": "labels",
    "installed_airflow_version": "compat",
    "is_callback_pod": "codec",
    "key_to_annotations": "codec",
    "label_safe_datestring_to_datetime": "labels",
    "make_safe_label_value": "labels",
    "require_callback_support": "compat",
    "state_class_for_key": "states",
    "supports_callbacks": "compat",
}


if not TYPE_CHECKING:  # mypy sees the imports above, so a misspelt name is still an error

    def __getattr__(name: str) -> Any:  # noqa: ANN401 - the value of any public name
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module 'k8s_workloads' has no attribute {name!r}")
        value = getattr(importlib.import_module(f"k8s_workloads.{module}"), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "CALLBACK_ACTIVE_STATES",
    "CALLBACK_TERMINAL_STATES",
    "TASK_ADOPTABLE_STATES",
    "TASK_FINISHED_STATES",
    "TASK_UNFINISHED_STATES",
    "CallbackAnnotationsUnsupported",
    "CallbackJob",
    "CallbackKey",
    "CallbackResult",
    "CallbackState",
    "CallbackWorkloadsUnsupported",
    "ExecutorPseudoState",
    "FailureDetails",
    "InvalidAnnotations",
    "InvalidKey",
    "InvalidVersion",
    "KubernetesJob",
    "KubernetesResult",
    "LegacyPodAnnotations",
    "NamingRuleViolation",
    "PodSelector",
    "TaskInstanceKey",
    "TaskInstanceState",
    "TaskJob",
    "TaskResult",
    "WorkloadKey",
    "WorkloadResult",
    "WorkloadState",
    "__version__",
    "add_unique_suffix",
    "annotations_to_key",
    "build_labels_for_callback_pod",
    "build_labels_for_k8s_executor_pod",
    "build_selector_for_k8s_executor_pod",
    "create_unique_id",
    "datetime_to_label_safe_datestring",
    "installed_airflow_version",
    "is_callback_pod",
    "key_to_annotations",
    "label_safe_datestring_to_datetime",
    "make_safe_label_value",
    "require_callback_support",
    "state_class_for_key",
    "supports_callbacks",
]
