"""k8s_workloads.airflow._adoption: what dead schedulers left, taken over — their task pods
(``try_adopt_task_instances``, in this process against the test kit's cluster), and their
callbacks with or without a pod (a subprocess against a real migrated database, two live
executors racing).
"""

from __future__ import annotations

import types
from typing import Any

import pytest

pytest.importorskip("airflow.executors.workloads", reason="Airflow runs in the Airflow environment")

from k8s_workloads.airflow.convert import from_airflow_key
from tests.support.airflow_support import (
    NS,
    another_task,
    logged,
    migrated_database,
    pod_made_by,
    run_scenario,
)


@pytest.fixture
def executor(executor: Any) -> Any:
    executor._adoption.active_callbacks = list  # this process's database has no callback rows
    return executor


def _ti(workload: Any, queued_by: int | None) -> Any:
    """What adoption reads of a TaskInstance: its key and the scheduler that queued it."""
    return types.SimpleNamespace(key=workload.ti.key, queued_by_job_id=queued_by)


def test_a_dead_schedulers_task_pods_are_adopted_and_the_rest_reset(executor: Any) -> None:
    adopted, no_pod = another_task("adopted", 40), another_task("no-pod", 41)
    unowned = another_task("unowned", 42)
    name = pod_made_by(executor, 5, adopted)  # scheduler 5 is dead: no live job row
    log = logged(executor)
    reset = executor.try_adopt_task_instances([_ti(adopted, 5), _ti(no_pod, 5), _ti(unowned, None)])
    # The scheduler resets what has no pod to adopt, and what no scheduler queued.
    assert {ti.key for ti in reset} == {no_pod.ti.key, unowned.ti.key}
    assert executor.cluster.pod(NS, name)["metadata"]["labels"]["airflow-worker"] == "7"
    assert adopted.ti.key in executor.running  # tracked from now on by this scheduler
    workload = from_airflow_key(adopted.ti.key).to_text()
    assert [line for line in log.lines if name in line[1]] == [
        ("info", f"Adopted pod {NS}/{name} of {workload}")  # one info line a pod taken over
    ]


def test_when_the_pods_cannot_be_listed_every_task_instance_is_reset(executor: Any) -> None:
    adopted = another_task("adopted", 50)
    name = pod_made_by(executor, 5, adopted)
    executor.cluster.fail_next("list_pods", 503, message="the API server is restarting")
    tis = [_ti(adopted, 5), _ti(another_task("unowned", 51), None)]
    assert executor.try_adopt_task_instances(tis) == tis  # reset: run again from the start
    assert executor.cluster.pod(NS, name)["metadata"]["labels"]["airflow-worker"] == "5"
    assert adopted.ti.key not in executor.running


def test_orphaned_callbacks_run_again_exactly_once_across_live_schedulers(
    tmp_path: Any, tmp_path_factory: Any
) -> None:
    """Issue 19, item 1 (tests/support/airflow_orphans.py): real rows, two racing executors."""
    database = migrated_database(tmp_path_factory.mktemp("airflow"))
    document = run_scenario("tests.support.airflow_orphans", home=tmp_path, database=database)
    ids, rows, owners = document["ids"], document["rows"], document["pod_owners"]
    holder = "k8s_workloads: queued by scheduler job {}".format
    # Both scanned at once: every orphan went to exactly one of them.
    won_by_b, won_by_c = set(document["race"]["b"]), set(document["race"]["c"])
    assert won_by_b.isdisjoint(won_by_c)
    assert won_by_b | won_by_c == set(document["orphans"])
    assert document["race_failed"] == {"b": [], "c": []}
    # ... and ran it once: one pod, the winner's, the row marked for the winner.
    for orphan, (state, output) in zip(document["orphans"], document["orphan_rows"], strict=True):
        winner = ids["b"] if orphan in won_by_b else ids["c"]
        assert owners[orphan] == [str(winner)]
        assert (state, output) == ("queued", holder(winner))
    # Held by a live scheduler, or by no one this executor knows: never touched.
    assert rows["held_by_live"] == ["queued", holder(ids["d"])]
    assert rows["unmarked"] == ["queued", None]
    # A dead scheduler's callback whose pod exists is the pod's (adoption), never rerun.
    assert owners[document["ids_of"]["with_pod"]] in ([str(ids["b"])], [str(ids["c"])])
    assert rows["with_pod"] == ["queued", holder(ids["a"])]
    # Rows that cannot be rebuilt fail alone, each named in one log line.
    for name, why in (
        ("no_run", "its data names no dag_run_id"),
        ("gone_run", "its dag run 999 no longer exists"),
    ):
        state, output = rows[name]
        assert state == "failed"
        assert why in output
        callback_id = document["ids_of"][name]
        (line,) = [line for line in document["errors"] if callback_id in line]
        assert f"queued by scheduler job {ids['a']} (no longer alive)" in line
        assert why in line
    # A pod whose owner label is gone: skipped, named in a log line; its callback is not
    # run again (a pod exists), and the other pods were adopted all the same.
    no_owner = document["ids_of"]["no_owner"]
    assert owners[no_owner] == [None]
    assert rows["no_owner"] == ["queued", holder(ids["a"])]
    assert any(
        "callback-no-owner" in line and "no airflow-worker label" in line
        for line in document["warnings"]
    )
    # A pending callback queued by both schedulers: the second finds it held, drops it.
    assert rows["pending"] == ["queued", holder(ids["b"])]
    assert owners[document["ids_of"]["pending"]] == [str(ids["b"])]
    # Tracked: the orphans and the pending one by their winners, the pod by its adopter.
    assert sum(document["running"].values()) == len(document["orphans"]) + 2
