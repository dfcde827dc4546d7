"""The statuses a kubelet writes (:mod:`k8s_workloads.testing._statuses`): container
states as the runtime reports them."""

from __future__ import annotations

from k8s_workloads.testing._statuses import container_id, running, terminated, waiting

T = "2026-06-07T00:00:00Z"


def test_a_terminated_state_defaults_its_reason_by_exit_code_as_the_runtime_does() -> None:
    done = terminated("u1", "base", exit_code=0, started=T, finished=T)["terminated"]
    failed = terminated("u1", "base", exit_code=3, started=T, finished=T)["terminated"]
    killed = terminated("u1", "base", exit_code=137, started=T, finished=T, reason="OOMKilled")
    assert (done["reason"], failed["reason"]) == ("Completed", "Error")
    assert killed["terminated"]["reason"] == "OOMKilled"
    assert done["containerID"] == container_id("u1", "base")
    assert "message" not in done


def test_running_and_waiting_states() -> None:
    assert running(T) == {"running": {"startedAt": T}}
    assert waiting("ContainerCreating") == {"waiting": {"reason": "ContainerCreating"}}
    assert waiting("ErrImagePull", "no such image")["waiting"]["message"] == "no such image"


def test_an_empty_message_is_kept_while_waiting_and_left_out_once_terminated() -> None:
    # waiting() keeps any message given, "" too; terminated() leaves an empty one out.
    assert waiting("ErrImagePull", "") == {"waiting": {"reason": "ErrImagePull", "message": ""}}
    ended = terminated("u1", "base", exit_code=1, started=T, finished=T, message="")
    assert "message" not in ended["terminated"]
    killed = terminated("u1", "base", exit_code=1, started=T, finished=T, message="oom")
    assert killed["terminated"]["message"] == "oom"


def test_a_container_id_is_stable_per_pod_and_container() -> None:
    assert container_id("u1", "base") == container_id("u1", "base")
    assert (
        len({container_id("u1", "base"), container_id("u2", "base"), container_id("u1", "x")}) == 3
    )
