"""k8s_workloads: pure, typed building blocks for Kubernetes-based job executors.

Keys and states, naming rules and the annotation codec; pod building; watch-event
resolution; executor decisions and adoption. Nothing here imports ``kubernetes``; only
:mod:`k8s_workloads.adapters` does.

Names are loaded on first use (PEP 562), so ``import k8s_workloads`` costs almost
nothing; ``attrs``, which the value types need, is the bulk of the first use.
"""

from __future__ import annotations

# No import runs here: ``typing`` and ``importlib`` alone would cost more than the rest of
# ``import k8s_workloads``. Type checkers read this name as typing.TYPE_CHECKING.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any

    from k8s_workloads._config import InvalidConfig
    from k8s_workloads.adoption import (
        AdoptionPlan,
        TrackRunning,
        plan_adoption,
        plan_relist,
        plan_revoke,
    )
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
    from k8s_workloads.decisions import (
        UNKNOWN,
        Attempts,
        Decision,
        DecisionConfig,
        DeletePod,
        EmitEvent,
        FreeSlot,
        Ignore,
        KnownState,
        LookUpState,
        PatchLabels,
        RequeueJob,
        RetryLater,
        StateNotRead,
        classify_create_error,
        decide,
        describe_action,
        handling_failed,
    )
    from k8s_workloads.events import (
        Outcome,
        Resolution,
        ResolverConfig,
        resolve_event,
    )
    from k8s_workloads.executor import (
        CreatePod,
        DeleteSecret,
        ExecutorConfig,
        ExecutorCore,
        Handled,
        InvalidStateAnswer,
        ListPods,
        NothingToDo,
        ProtocolError,
        ReadStates,
        Request,
        WorkloadAlreadyRunning,
    )
    from k8s_workloads.failures import (
        FailureClassification,
        FailureKind,
        PendingPolicy,
        classify_failure,
        collect_failure_details,
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
    from k8s_workloads.payload import (
        attach_secure_payload,
        redact_manifest,
        secure_workload_payload,
    )
    from k8s_workloads.pods import (
        InvalidMutatedPod,
        InvalidPod,
        PodMutationHookError,
        construct_callback_pod,
        construct_task_pod,
        workload_command_args,
    )
    from k8s_workloads.reconcile import (
        PodReconciliationError,
        reconcile_pods,
    )
    from k8s_workloads.schema import SchemaViolation, pod_schema_errors
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
    from k8s_workloads.validation import NamingRuleViolation, validate_manifest


__version__ = "0.1.0.dev0"

_LAZY: dict[str, str] = {
    "UNKNOWN": "decisions",
    "plan_relist": "adoption",
    "AdoptionPlan": "adoption",
    "Attempts": "attempts",
    "CALLBACK_ACTIVE_STATES": "states",
    "CALLBACK_TERMINAL_STATES": "states",
    "CallbackAnnotationsUnsupported": "codec",
    "CallbackJob": "states",
    "CallbackKey": "keys",
    "CallbackResult": "states",
    "CallbackState": "states",
    "CallbackWorkloadsUnsupported": "compat",
    "Decision": "actions",
    "DecisionConfig": "decisions",
    "DeletePod": "actions",
    "EmitEvent": "actions",
    "ExecutorPseudoState": "states",
    "FailureClassification": "failures",
    "FailureDetails": "states",
    "FailureKind": "failures",
    "FreeSlot": "actions",
    "Ignore": "actions",
    "InvalidAnnotations": "codec",
    "InvalidKey": "keys",
    "InvalidMutatedPod": "pods",
    "InvalidPod": "pods",
    "InvalidVersion": "compat",
    "KubernetesJob": "states",
    "KubernetesResult": "states",
    "LegacyPodAnnotations": "codec",
    "LookUpState": "actions",
    "NamingRuleViolation": "validation",
    "Outcome": "events",
    "PatchLabels": "actions",
    "PendingPolicy": "failures",
    "PodMutationHookError": "pods",
    "PodReconciliationError": "reconcile",
    "PodSelector": "labels",
    "RequeueJob": "actions",
    "RetryLater": "actions",
    "Resolution": "events",
    "ResolverConfig": "events",
    "SchemaViolation": "schema",
    "TASK_ADOPTABLE_STATES": "states",
    "TASK_FINISHED_STATES": "states",
    "TASK_UNFINISHED_STATES": "states",
    "TaskInstanceKey": "keys",
    "TaskInstanceState": "states",
    "TaskJob": "states",
    "TaskResult": "states",
    "TrackRunning": "actions",
    "WorkloadKey": "keys",
    "WorkloadResult": "states",
    "WorkloadState": "states",
    "add_unique_suffix": "labels",
    "annotations_to_key": "codec",
    "attach_secure_payload": "payload",
    "build_labels_for_callback_pod": "labels",
    "build_labels_for_k8s_executor_pod": "labels",
    "build_selector_for_k8s_executor_pod": "labels",
    "classify_create_error": "creation_errors",
    "classify_failure": "failures",
    "collect_failure_details": "failures",
    "construct_callback_pod": "pods",
    "construct_task_pod": "pods",
    "create_unique_id": "labels",
    "datetime_to_label_safe_datestring": "labels",
    "decide": "decisions",
    "describe_action": "actions",
    "handling_failed": "decisions",
    "installed_airflow_version": "compat",
    "is_callback_pod": "codec",
    "key_to_annotations": "codec",
    "label_safe_datestring_to_datetime": "labels",
    "make_safe_label_value": "labels",
    "plan_adoption": "adoption",
    "plan_revoke": "adoption",
    "pod_schema_errors": "schema",
    "reconcile_pods": "reconcile",
    "redact_manifest": "payload",
    "require_callback_support": "compat",
    "resolve_event": "events",
    "secure_workload_payload": "payload",
    "state_class_for_key": "states",
    "supports_callbacks": "compat",
    "validate_manifest": "validation",
    "workload_command_args": "pods",
    "StateNotRead": "decisions",
    "KnownState": "decisions",
    "CreatePod": "executor",
    "DeleteSecret": "executor",
    "InvalidConfig": "_config",
    "ExecutorConfig": "executor",
    "ExecutorCore": "executor",
    "Handled": "executor",
    "InvalidStateAnswer": "executor",
    "ListPods": "executor",
    "NothingToDo": "executor",
    "ProtocolError": "executor",
    "ReadStates": "executor",
    "Request": "executor",
    "WorkloadAlreadyRunning": "executor",
}


if not TYPE_CHECKING:  # mypy sees the imports above, so a misspelt name is still an error

    def __getattr__(name: str) -> Any:  # noqa: ANN401 - the value of any public name
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module 'k8s_workloads' has no attribute {name!r}")
        from importlib import import_module  # noqa: PLC0415 - on first use only

        value = getattr(import_module(f"k8s_workloads.{module}"), name)
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
    "UNKNOWN",
    "AdoptionPlan",
    "Attempts",
    "CallbackAnnotationsUnsupported",
    "CallbackJob",
    "CallbackKey",
    "CallbackResult",
    "CallbackState",
    "CallbackWorkloadsUnsupported",
    "CreatePod",
    "Decision",
    "DecisionConfig",
    "DeletePod",
    "DeleteSecret",
    "EmitEvent",
    "ExecutorConfig",
    "ExecutorCore",
    "ExecutorPseudoState",
    "FailureClassification",
    "FailureDetails",
    "FailureKind",
    "FreeSlot",
    "Handled",
    "Ignore",
    "InvalidAnnotations",
    "InvalidConfig",
    "InvalidKey",
    "InvalidMutatedPod",
    "InvalidPod",
    "InvalidStateAnswer",
    "InvalidVersion",
    "KnownState",
    "KubernetesJob",
    "KubernetesResult",
    "LegacyPodAnnotations",
    "ListPods",
    "LookUpState",
    "NamingRuleViolation",
    "NothingToDo",
    "Outcome",
    "PatchLabels",
    "PendingPolicy",
    "PodMutationHookError",
    "PodReconciliationError",
    "PodSelector",
    "ProtocolError",
    "ReadStates",
    "Request",
    "RequeueJob",
    "Resolution",
    "ResolverConfig",
    "RetryLater",
    "SchemaViolation",
    "StateNotRead",
    "TaskInstanceKey",
    "TaskInstanceState",
    "TaskJob",
    "TaskResult",
    "TrackRunning",
    "WorkloadAlreadyRunning",
    "WorkloadKey",
    "WorkloadResult",
    "WorkloadState",
    "__version__",
    "add_unique_suffix",
    "annotations_to_key",
    "attach_secure_payload",
    "build_labels_for_callback_pod",
    "build_labels_for_k8s_executor_pod",
    "build_selector_for_k8s_executor_pod",
    "classify_create_error",
    "classify_failure",
    "collect_failure_details",
    "construct_callback_pod",
    "construct_task_pod",
    "create_unique_id",
    "datetime_to_label_safe_datestring",
    "decide",
    "describe_action",
    "handling_failed",
    "installed_airflow_version",
    "is_callback_pod",
    "key_to_annotations",
    "label_safe_datestring_to_datetime",
    "make_safe_label_value",
    "plan_adoption",
    "plan_relist",
    "plan_revoke",
    "pod_schema_errors",
    "reconcile_pods",
    "redact_manifest",
    "require_callback_support",
    "resolve_event",
    "secure_workload_payload",
    "state_class_for_key",
    "supports_callbacks",
    "validate_manifest",
    "workload_command_args",
]
