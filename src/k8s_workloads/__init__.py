"""k8s_workloads: pure, typed building blocks for Kubernetes-based job executors.

Keys and states, Kubernetes naming rules, and the annotation codec. Nothing here
imports ``kubernetes``; only :mod:`k8s_workloads.adapters` does.
"""

from __future__ import annotations

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
