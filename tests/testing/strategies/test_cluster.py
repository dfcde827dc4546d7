"""The cluster's pods and events (:mod:`k8s_workloads.testing.strategies._cluster`) are
what a real cluster reports.

* Every pod :func:`cluster_pods` draws is a valid 1.37 pod (kubernetes-validate's strict
  schema), deserializes into the kubernetes client's ``V1Pod`` with every status field kept,
  decodes to the key it was drawn for, and resolves to the outcome its :class:`PodFate`
  means, for tasks and callbacks alike, as ``ADDED``, ``MODIFIED`` or (finished pods)
  ``DELETED`` events.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
from hypothesis import given, settings
from hypothesis import strategies as st

from k8s_workloads.adapters import to_manifest, to_v1pod
from k8s_workloads.keys import CallbackKey, TaskInstanceKey
from k8s_workloads.pods.codec import annotations_to_key
from k8s_workloads.states import CallbackState, ExecutorPseudoState, TaskInstanceState
from k8s_workloads.testing.strategies import (
    ClusterEvent,
    ClusterPod,
    PodFate,
    cluster_events,
    cluster_pods,
    task_keys,
)
from k8s_workloads.watch.events import resolve_event
from k8s_workloads.watch.resolution import Outcome, ResolverConfig

_UTC_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")

_CONFIG = ResolverConfig(airflow_version="3.3.2")

# What each fate means to the resolver under its default config (ErrImagePull fails the pod
# at once, as the provider's fatal pending reasons; the back-off between pulls does not).
_OUTCOMES = {
    PodFate.UNSCHEDULED: Outcome.PENDING,
    PodFate.CREATING: Outcome.PENDING,
    PodFate.IMAGE_PULL_FAILED: Outcome.FAILED,
    PodFate.IMAGE_PULL_BACK_OFF: Outcome.FAILED,  # unlike the provider (its list lacks it)
    PodFate.RUNNING: Outcome.RUNNING,
    PodFate.SUCCEEDED: Outcome.SUCCEEDED,
    PodFate.FAILED: Outcome.FAILED,
    PodFate.OOM_KILLED: Outcome.FAILED,
    PodFate.EVICTED: Outcome.FAILED,
}


def _as_the_models_give(value: Any) -> Any:
    # The models drop an explicit null (``lastProbeTime: null``, as kubelets write it) and
    # write a UTC time as +00:00.
    if isinstance(value, dict):
        return {key: _as_the_models_give(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_as_the_models_give(item) for item in value]
    if isinstance(value, str) and _UTC_TIME.fullmatch(value):
        return value[:-1] + "+00:00"
    return value


@settings(max_examples=60)  # the schema check and the models take ~0.1 s a pod
@given(cluster_pods())
def test_a_cluster_pod_is_a_valid_pod_that_the_client_models_keep_whole(pod: ClusterPod) -> None:
    kubernetes_validate.validate(
        {"apiVersion": "v1", "kind": "Pod", **pod.manifest}, "1.37", strict=True
    )
    # Through V1Pod and back: nothing the kubelet wrote is lost or refused by the models.
    kept = to_manifest(to_v1pod(pod.manifest, strict=True))["status"]
    assert kept == _as_the_models_give(pod.manifest["status"])


@given(cluster_pods())
def test_a_cluster_pod_decodes_to_the_key_it_was_drawn_for(pod: ClusterPod) -> None:
    metadata = pod.manifest["metadata"]
    assert (
        annotations_to_key(metadata["annotations"], metadata["labels"], airflow_version="3.3.2")
        == pod.key
    )


@given(cluster_events())
def test_a_cluster_event_resolves_to_what_its_fate_means(event: ClusterEvent) -> None:
    before = copy.deepcopy(event.event)
    resolution = resolve_event(event.event, config=_CONFIG)
    assert event.event == before  # resolving reads, never writes
    assert resolution.outcome is _OUTCOMES[event.pod.fate], resolution
    if isinstance(event.pod.key, CallbackKey):
        expected: dict[Outcome, Any] = {
            Outcome.SUCCEEDED: CallbackState.SUCCESS,
            Outcome.FAILED: CallbackState.FAILED,
        }
    else:
        # A task's own process writes its success: the executor reads it (LOOKUP).
        expected = {
            Outcome.SUCCEEDED: ExecutorPseudoState.LOOKUP,
            Outcome.FAILED: TaskInstanceState.FAILED,
        }
    if resolution.outcome in expected:
        result = resolution.to_result()
        assert result is not None
        assert result.key == event.pod.key
        assert result.state is expected[resolution.outcome]


@given(cluster_events(fates=st.sampled_from([PodFate.SUCCEEDED, PodFate.EVICTED])))
def test_only_finished_pods_are_drawn_deleted(event: ClusterEvent) -> None:
    assert event.pod.fate.terminal
    if event.type == "DELETED":
        assert "deletionTimestamp" in event.pod.manifest["metadata"]


@given(cluster_pods(keys=task_keys(), fates=st.just(PodFate.UNSCHEDULED)))
def test_the_arguments_narrow_what_is_drawn(pod: ClusterPod) -> None:
    assert isinstance(pod.key, TaskInstanceKey)
    assert pod.fate is PodFate.UNSCHEDULED
    assert "nodeName" not in pod.manifest["spec"]
    assert pod.manifest["status"]["phase"] == "Pending"
