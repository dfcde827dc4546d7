"""Worker pods never restart (:mod:`k8s_workloads.pods.restart`, issue 29): every task and
callback pod, by every build path, has ``spec.restartPolicy: Never`` whatever the
template, ``pod_override`` or mutation hook asks for; and :func:`replaced_restart_policy`
names what a template or override asks for that its pods will not have."""

from __future__ import annotations

import copy
import dataclasses
import json
import random
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from k8s_workloads.keys import CallbackKey, TaskInstanceKey
from k8s_workloads.pods import (
    WORKER_RESTART_POLICY,
    FastPathUse,
    PodTemplate,
    construct_callback_pod,
    construct_pod,
    construct_task_pod,
    fast_path,
    replaced_restart_policy,
    workload_command_args,
)
from k8s_workloads.states import KubernetesJob
from k8s_workloads.testing.strategies import pod_templates, templates_and_overrides
from tests.support.pod_builds import CALLBACK_ID, TEMPLATE, VERSION, assert_valid_pod, task_pod

if TYPE_CHECKING:
    from k8s_workloads.pods.manifest import Manifest

_ASKED = [None, "", "Never", "Always", "OnFailure"]
"""What a layer may say: nothing, the API server's default (empty), or each policy."""
policies = st.sampled_from(_ASKED)


def _asking(manifest: Manifest | None, policy: str | None) -> Manifest | None:
    """A copy of ``manifest`` whose ``spec.restartPolicy`` is ``policy`` (None: as it was)."""
    if policy is None:
        return manifest
    asked: Manifest = copy.deepcopy(manifest) if manifest else {}
    asked.setdefault("spec", {})["restartPolicy"] = policy
    return asked


@dataclasses.dataclass(frozen=True)
class _PolicyHook:
    """A mutation hook setting (None: removing) the pod's policy, in place or on a copy."""

    policy: str | None
    returns_copy: bool

    def __call__(self, pod: Manifest) -> Manifest | None:
        target = copy.deepcopy(pod) if self.returns_copy else pod
        if self.policy is None:
            target["spec"].pop("restartPolicy", None)
        else:
            target["spec"]["restartPolicy"] = self.policy
        return target if self.returns_copy else None


hooks = st.one_of(st.none(), st.builds(_PolicyHook, policies, st.booleans()))

_TASK: dict[str, Any] = {
    "namespace": "airflow",
    "scheduler_job_id": 7,
    "dag_id": "etl",
    "task_id": "load",
    "kube_image": "img:1",
    "try_number": 1,
    "args": ["python", "-m", "work"],
    "airflow_version": VERSION,
    "run_id": "manual__1",
}
_CALLBACK: dict[str, Any] = {
    "callback_id": CALLBACK_ID,
    "namespace": "airflow",
    "scheduler_job_id": 7,
    "kube_image": "img:1",
    "args": ["python", "-m", "callback"],
    "airflow_version": VERSION,
}


def _policy(pod: Manifest) -> object:
    return pod["spec"].get("restartPolicy")


# --- replaced_restart_policy ------------------------------------------------------------


@pytest.mark.parametrize(
    ("manifest", "replaced"),
    [
        (None, None),
        ({}, None),
        ({"metadata": {"name": "x"}}, None),
        ({"spec": "not an object"}, None),
        ({"spec": {"containers": []}}, None),
        ({"spec": {"restartPolicy": None}}, None),
        ({"spec": {"restartPolicy": ""}}, None),
        ({"spec": {"restartPolicy": "Never"}}, None),
        ({"spec": {"restartPolicy": "Always"}}, "Always"),
        ({"spec": {"restartPolicy": "OnFailure"}}, "OnFailure"),
        ({"spec": {"restartPolicy": 5}}, "5"),
        # A sidecar's policy is its container's: kept, so nothing is replaced.
        ({"spec": {"initContainers": [{"name": "s", "restartPolicy": "Always"}]}}, None),
    ],
)
def test_replaced_restart_policy_names_what_the_pods_will_not_have(
    manifest: Manifest | None, replaced: str | None
) -> None:
    assert replaced_restart_policy(manifest) == replaced


@given(template=pod_templates(), policy=policies)
def test_replaced_restart_policy_is_what_a_built_pod_does_not_keep(
    template: Manifest, policy: str | None
) -> None:
    asked = _asking(template, policy)
    before = copy.deepcopy(asked)
    replaced = replaced_restart_policy(asked)
    assert asked == before  # pure
    asked_for = (asked or {}).get("spec", {}).get("restartPolicy")
    pod = task_pod(base_worker_pod=asked, pod_id="etl-load-1")
    # Named exactly when the template asked for a policy (not the empty default) that its
    # pod does not have; and then it is that policy.
    assert (replaced is not None) == (bool(asked_for) and asked_for != _policy(pod))
    assert replaced in (None, asked_for)


# --- every build path -------------------------------------------------------------------


@given(
    pair=templates_and_overrides(valid=True),
    template_policy=policies,
    override_policy=policies,
    hook=hooks,
)
def test_every_task_pod_never_restarts_and_both_paths_agree(
    pair: tuple[Manifest | None, Manifest | None],
    template_policy: str | None,
    override_policy: str | None,
    hook: _PolicyHook | None,
) -> None:
    template = _asking(pair[0], template_policy)
    override = _asking(pair[1], override_policy)
    values = {**_TASK, "pod_id": "etl-load-1", "pod_override": override, "mutation_hook": hook}
    with fast_path(enabled=False):
        general = construct_task_pod(base_worker_pod=template, **values)
    prepared = PodTemplate(template)
    use = FastPathUse()
    # The first pod of a pair is merged, the second planned, the later ones fast.
    for _ in range(3):
        with fast_path() as one:
            pod = construct_task_pod(base_worker_pod=prepared, **values)
        use.planned_pods += one.planned_pods
        use.fast_task_pods += one.fast_task_pods
        assert json.dumps(pod) == json.dumps(general)
    event(f"planned: {use.planned_pods > 0}, fast: {use.fast_task_pods > 0}")
    assert _policy(general) == WORKER_RESTART_POLICY
    assert_valid_pod(general)


@given(template=st.one_of(st.none(), pod_templates()), policy=policies, hook=hooks)
def test_every_callback_pod_never_restarts_and_both_paths_agree(
    template: Manifest | None, policy: str | None, hook: _PolicyHook | None
) -> None:
    asked = _asking(template, policy)
    values = {**_CALLBACK, "mutation_hook": hook}
    with fast_path(enabled=False):
        general = construct_callback_pod(base_worker_pod=asked, rng=random.Random(0), **values)
    prepared = PodTemplate(asked)
    for _ in range(3):
        pod = construct_callback_pod(base_worker_pod=prepared, rng=random.Random(0), **values)
        assert json.dumps(pod) == json.dumps(general)
    assert _policy(general) == WORKER_RESTART_POLICY
    assert_valid_pod(general)


@pytest.mark.parametrize("policy", ["Always", "OnFailure"])
def test_construct_pod_replaces_the_policy_of_a_template_and_an_override(policy: str) -> None:
    template = _asking(TEMPLATE, policy)
    override = {"spec": {"restartPolicy": policy}}
    key = TaskInstanceKey("etl", "load", "r", 1, -1)
    task = KubernetesJob(key, ("run",), pod_override=override)
    callback = KubernetesJob(
        CallbackKey(CALLBACK_ID),
        workload_command_args({"log_path": f"executor_callbacks/etl/r/{CALLBACK_ID}"}),
    )
    common: dict[str, Any] = {"namespace": "airflow", "scheduler_job_id": 5}
    for job in (task, callback):
        for source in (template, PodTemplate(template)):
            pod = construct_pod(job, base_worker_pod=source, airflow_version=VERSION, **common)
            assert _policy(pod) == WORKER_RESTART_POLICY


def test_a_hook_that_asks_for_restarts_is_overruled_and_its_spec_left_alone() -> None:
    shared_spec: Manifest = {}

    def restarting(pod: Manifest) -> Manifest:
        # A hook returning a spec it keeps: the builder's Never must not write into it.
        shared_spec.clear()
        shared_spec.update(pod["spec"], restartPolicy="Always")
        return {**pod, "spec": shared_spec}

    pod = task_pod(mutation_hook=restarting)
    assert _policy(pod) == WORKER_RESTART_POLICY
    assert shared_spec["restartPolicy"] == "Always"


def test_a_sidecars_own_policy_is_kept() -> None:
    sidecar = {"name": "proxy", "image": "proxy:1", "restartPolicy": "Always"}
    template = copy.deepcopy(TEMPLATE)
    template["spec"]["initContainers"] = [sidecar]
    pod = task_pod(base_worker_pod=template)
    assert pod["spec"]["initContainers"] == [sidecar]
    assert _policy(pod) == WORKER_RESTART_POLICY
