"""What a scenario is (:mod:`k8s_workloads.sim.spec`): final states, default ids, and
which pod script each launch plays."""

from __future__ import annotations

import pytest

from k8s_workloads.keys import CallbackKey, TaskInstanceKey
from k8s_workloads.sim import PodScript, Step, WorkloadSpec
from k8s_workloads.sim.spec import DEFAULT_POD, default_id, is_terminal
from k8s_workloads.states import CallbackState, TaskInstanceState


@pytest.mark.parametrize(
    ("state", "final"),
    [
        (TaskInstanceState.SUCCESS, True),
        (TaskInstanceState.UP_FOR_RETRY, True),  # the try is over: the scheduler moves on
        (TaskInstanceState.RUNNING, False),
        (None, False),
        (CallbackState.FAILED, True),
        (CallbackState.RUNNING, False),
    ],
)
def test_which_states_end_a_workload(
    state: TaskInstanceState | CallbackState | None, *, final: bool
) -> None:
    assert is_terminal(state) is final


def test_default_ids_read_as_the_workload() -> None:
    assert default_id(TaskInstanceKey("etl", "load", "r")) == "etl.load"
    assert default_id(TaskInstanceKey("etl", "load", "r", map_index=2)) == "etl.load[2]"
    assert default_id(CallbackKey("019ea001-0000-7000-8000-000000000001")) == "callback-019ea001"


def test_the_last_pod_script_repeats_for_later_launches() -> None:
    first = PodScript((Step(phase="Failed"),))
    spec = WorkloadSpec("t", TaskInstanceKey("d", "t", "r"), pods=(first, DEFAULT_POD))
    assert [spec.script(launch) for launch in range(4)] == [first] + [DEFAULT_POD] * 3
