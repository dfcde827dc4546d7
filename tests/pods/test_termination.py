"""The base container says why it failed (:mod:`k8s_workloads.pods.termination`, issue
32): every task and callback pod, by every build path, gives its ``base`` container
``terminationMessagePolicy: FallbackToLogsOnError`` unless the template or
``pod_override`` sets one, which is kept; a mutation hook has the last word; the other
containers are left alone."""

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
    BASE_TERMINATION_MESSAGE_POLICY,
    PodTemplate,
    construct_callback_pod,
    construct_pod,
    construct_task_pod,
    fast_path,
    workload_command_args,
)
from k8s_workloads.states import KubernetesJob
from k8s_workloads.testing.strategies import pod_templates, templates_and_overrides
from tests.support.pod_builds import CALLBACK_ID, TEMPLATE, VERSION, assert_valid_pod, task_pod

if TYPE_CHECKING:
    from k8s_workloads.pods.manifest import Manifest

_FIELD = "terminationMessagePolicy"
_ASKED = [None, "", "File", "FallbackToLogsOnError"]
"""What a layer's first container may say: nothing, empty (the API server's default),
or each policy."""
policies = st.sampled_from(_ASKED)


def _asking(manifest: Manifest | None, policy: str | None) -> Manifest | None:
    """A copy of ``manifest`` whose first container asks for ``policy`` (None: as it was;
    a layer without containers gets a ``base`` one)."""
    if policy is None:
        return manifest
    asked: Manifest = copy.deepcopy(manifest) if manifest else {}
    containers = asked.setdefault("spec", {}).setdefault("containers", [])
    if not containers:
        containers.append({"name": "base"})
    containers[0][_FIELD] = policy
    return asked


def _first_policy(manifest: Manifest | None) -> object:
    containers = ((manifest or {}).get("spec") or {}).get("containers") or [{}]
    return containers[0].get(_FIELD)


def _base(pod: Manifest) -> dict[str, Any]:
    """The workload's container: the first (``base``, unless an override renames it)."""
    base: dict[str, Any] = pod["spec"]["containers"][0]
    return base


@dataclasses.dataclass(frozen=True)
class _PolicyHook:
    """A mutation hook setting (None: removing) the base container's policy."""

    policy: str | None

    def __call__(self, pod: Manifest) -> None:
        base = _base(pod)
        if self.policy is None:
            base.pop(_FIELD, None)
        else:
            base[_FIELD] = self.policy


hooks = st.one_of(st.none(), st.builds(_PolicyHook, st.sampled_from([None, "File"])))

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


def _expected(
    template: Manifest | None, override: Manifest | None, hook: _PolicyHook | None
) -> object:
    """The layers' first containers merge into ``base``, the override's truthy value over
    the template's; unset in both, the builders' default; the hook has the last word."""
    if hook is not None:
        return hook.policy
    return _first_policy(override) or _first_policy(template) or BASE_TERMINATION_MESSAGE_POLICY


def test_a_pod_without_a_template_says_why_it_failed() -> None:
    pod = task_pod(base_worker_pod=None)
    assert _base(pod)[_FIELD] == "FallbackToLogsOnError" == BASE_TERMINATION_MESSAGE_POLICY
    assert_valid_pod(pod)


@pytest.mark.parametrize("policy", ["File", "FallbackToLogsOnError"])
def test_a_policy_the_template_or_override_sets_is_kept(policy: str) -> None:
    template = _asking(TEMPLATE, policy)
    assert _base(task_pod(base_worker_pod=template))[_FIELD] == policy
    override = {"spec": {"containers": [{"name": "base", _FIELD: policy}]}}
    assert _base(task_pod(pod_override=override))[_FIELD] == policy


def test_an_empty_policy_is_unset_and_filled_in() -> None:
    # The API server defaults an empty policy to File: the builders' default comes first.
    assert _base(task_pod(base_worker_pod=_asking(TEMPLATE, "")))[_FIELD] == (
        BASE_TERMINATION_MESSAGE_POLICY
    )


def test_other_containers_keep_theirs_and_the_layers_are_not_changed() -> None:
    template = copy.deepcopy(TEMPLATE)
    template["spec"]["containers"].append({"name": "proxy", "image": "proxy:1"})
    template["spec"]["initContainers"] = [{"name": "init", "image": "init:1"}]
    before = copy.deepcopy(template)
    pod = task_pod(base_worker_pod=template)
    assert template == before
    assert _base(pod)[_FIELD] == BASE_TERMINATION_MESSAGE_POLICY
    assert pod["spec"]["containers"][1] == {"name": "proxy", "image": "proxy:1"}
    assert pod["spec"]["initContainers"] == [{"name": "init", "image": "init:1"}]


@pytest.mark.parametrize("policy", [None, "File"])
def test_the_mutation_hook_has_the_last_word(policy: str | None) -> None:
    pod = task_pod(mutation_hook=_PolicyHook(policy))
    assert _base(pod).get(_FIELD) == policy


@given(
    pair=templates_and_overrides(valid=True),
    template_policy=policies,
    override_policy=policies,
    hook=hooks,
)
def test_every_task_pod_has_the_policy_asked_or_the_default_and_both_paths_agree(
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
    # The first pod of a pair is merged, the second planned, the later ones fast.
    for _ in range(3):
        assert json.dumps(construct_task_pod(base_worker_pod=prepared, **values)) == json.dumps(
            general
        )
    expected = _expected(template, override, hook)
    event(f"policy: {expected}")
    assert _base(general).get(_FIELD) == expected
    assert_valid_pod(general)


@given(template=st.one_of(st.none(), pod_templates()), policy=policies)
def test_every_callback_pod_has_the_policy_asked_or_the_default_and_both_paths_agree(
    template: Manifest | None, policy: str | None
) -> None:
    asked = _asking(template, policy)
    values: dict[str, Any] = {
        "callback_id": CALLBACK_ID,
        "namespace": "airflow",
        "scheduler_job_id": 7,
        "kube_image": "img:1",
        "args": ["python", "-m", "callback"],
        "airflow_version": VERSION,
    }
    with fast_path(enabled=False):
        general = construct_callback_pod(base_worker_pod=asked, rng=random.Random(0), **values)
    prepared = PodTemplate(asked)
    for _ in range(3):
        pod = construct_callback_pod(base_worker_pod=prepared, rng=random.Random(0), **values)
        assert json.dumps(pod) == json.dumps(general)
    assert _base(general).get(_FIELD) == _expected(asked, None, None)


def test_construct_pod_gives_tasks_and_callbacks_the_default() -> None:
    key = TaskInstanceKey("etl", "load", "r", 1, -1)
    task = KubernetesJob(key, ("run",))
    callback = KubernetesJob(
        CallbackKey(CALLBACK_ID),
        workload_command_args({"log_path": f"executor_callbacks/etl/r/{CALLBACK_ID}"}),
    )
    for job in (task, callback):
        for source in (TEMPLATE, PodTemplate(TEMPLATE)):
            pod = construct_pod(
                job,
                base_worker_pod=source,
                airflow_version=VERSION,
                namespace="airflow",
                scheduler_job_id=5,
            )
            assert _base(pod)[_FIELD] == BASE_TERMINATION_MESSAGE_POLICY
