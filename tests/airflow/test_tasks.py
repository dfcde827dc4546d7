"""Task workloads through the library's executor and the provider's, on the same inputs.

``tests/support/airflow_task_scenarios.py`` runs in a subprocess per executor, each in a fresh
``AIRFLOW_HOME`` with a copy of one migrated SQLite database: a DAG parsed and serialised
as the DAG processor does, real ``TaskInstance`` rows, the scheduler's own
``process_executor_events``, and the kubernetes client talking HTTP to the test kit's
cluster (the provider's watcher process too). Five tasks: one succeeds, one fails in its
process, one is OOM-killed, one never pulls its image (requeued once, then failed), one is
killed and retried. Then a scheduler restart: a running pod adopted, a pod that succeeded
and one that was OOM-killed while no scheduler ran, and a task queued but never launched.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("airflow.executors.workloads", reason="Airflow runs in the Airflow environment")

from tests.support.airflow_support import migrated_database, run_scenario

SCENARIOS = "tests.support.airflow_task_scenarios"


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: Any) -> dict[str, Any]:
    database = migrated_database(tmp_path_factory.mktemp("airflow"))
    return {
        which: run_scenario(
            SCENARIOS, which, home=tmp_path_factory.mktemp(which), database=database
        )
        for which in ("provider", "library", "restart-provider", "restart-library")
    }


def test_the_pods_built_are_the_providers(outcomes: dict[str, Any]) -> None:
    provider, library = outcomes["provider"], outcomes["library"]
    assert set(library["built"]) == {"ok", "fails", "oom", "pull", "retried"}
    # The deliberate difference (issue 29): the provider passes the template's policy
    # through (none here: the kit's API server fills in its default, Always, as a real one
    # does); ours never restart.
    assert all(pod["spec"]["restartPolicy"] == "Never" for pod in library["built"].values())
    assert all(pod["spec"]["restartPolicy"] == "Always" for pod in provider["built"].values())
    # The other (issue 32): the workload's container says why it failed where the template
    # sets no policy (FallbackToLogsOnError); the provider's gets the API server's, File.
    policy = "terminationMessagePolicy"
    for ours, built in ((library, "FallbackToLogsOnError"), (provider, "File")):
        assert all(pod["spec"]["containers"][0][policy] == built for pod in ours["built"].values())
    theirs = {
        task: {
            **pod,
            "spec": {
                **pod["spec"],
                "restartPolicy": "Never",
                "containers": [
                    {**pod["spec"]["containers"][0], policy: "FallbackToLogsOnError"},
                    *pod["spec"]["containers"][1:],
                ],
            },
        }
        for task, pod in provider["built"].items()
    }
    assert library["built"] == theirs
    assert library["pull_pods"] == provider["pull_pods"] == 2  # one launch requeued


def test_the_events_and_the_rows_they_leave_are_the_providers(outcomes: dict[str, Any]) -> None:
    provider, library = outcomes["provider"], outcomes["library"]
    assert library["events"] == provider["events"]
    assert library["rows"] == provider["rows"]
    # What the scheduler made of them: the rows are real, not the scenario's.
    assert library["rows"] == {
        "ok": ["success", 1],
        "fails": ["failed", 1],
        "oom": ["failed", 1],  # killed while its row said running: failed by the scheduler
        "pull": ["failed", 1],
        "retried": ["up_for_retry", 1],
    }


def test_the_pods_left_differ_only_as_documented(outcomes: dict[str, Any]) -> None:
    provider, library = outcomes["provider"], outcomes["library"]
    assert "ok" not in library["pods_left"]  # a Succeeded pod is deleted, as the provider does
    unlabelled = {
        task: [
            {
                **pod,
                "labels": {k: v for k, v in pod["labels"].items() if k != "airflow_executor_done"},
            }
            for pod in pods
        ]
        for task, pods in library["pods_left"].items()
    }
    # CHANGELOG, "Differences": the pods of "pull" never started (their image could not
    # be pulled): deleted here, whatever keeps failed pods, lest they start later; the
    # provider keeps both launches' pods.
    assert "pull" not in library["pods_left"]
    assert len(provider["pods_left"]["pull"]) == 2
    assert unlabelled == {k: v for k, v in provider["pods_left"].items() if k != "pull"}
    # CHANGELOG, "Differences": kept failed pods are labelled done (mark_kept_failed_pods_done),
    # so a restarted scheduler does not read them again; the provider leaves them unlabelled.
    for pods in library["pods_left"].values():
        assert all(pod["labels"]["airflow_executor_done"] == "True" for pod in pods)
    for pods in provider["pods_left"].values():
        assert all("airflow_executor_done" not in pod["labels"] for pod in pods)


def test_a_restart_adopts_and_resets_as_the_provider_does(outcomes: dict[str, Any]) -> None:
    provider, library = outcomes["restart-provider"], outcomes["restart-library"]
    assert library["reset"] == provider["reset"] == ["never_launched"]
    assert library["adopted_running"] == provider["adopted_running"] == ["survives"]
    assert library["events"] == provider["events"]
    # The scheduler's reset of "never_launched" holds: the executor's own database reads
    # during try_adopt_task_instances use a session of their own, never the scheduler's
    # (a scoped one would commit and close it, detaching the rows it is about to reset).
    assert (
        library["rows"]
        == provider["rows"]
        == {
            "survives": ["success", 1],  # adopted by scheduler 8, then succeeded
            "finished_while_down": ["success", 1],  # its Succeeded pod cleaned up on adoption
            "failed_while_down": ["failed", 1],  # OOM-killed with no scheduler: failed by 8
            "never_launched": [None, 1],  # reset for the scheduler to queue again
        }
    )
    (kept,) = library["pods_left"]["failed_while_down"]
    assert kept["labels"]["airflow-worker"] == "8"
    assert kept["labels"].pop("airflow_executor_done") == "True"  # the documented difference
    assert library["pods_left"] == provider["pods_left"]


def test_a_429_a_stale_workload_a_database_outage_and_a_410_against_real_rows(
    tmp_path: Any, tmp_path_factory: Any
) -> None:
    database = migrated_database(tmp_path_factory.mktemp("airflow"))
    report = run_scenario(SCENARIOS, "faults", home=tmp_path, database=database)
    # The 429: creation paused for Retry-After (1 s), then every pod created.
    assert report["paused"] is True
    assert report["created_after_seconds"] >= 0.9
    # The outage: three heartbeats' state reads refused by the database driver; nothing
    # escaped, the result waited in the backlog with its pod, and was handled after.
    assert report["refused_queries"] == 3
    assert report["backlog_after_outage"] == 1
    assert report["pod_kept_during_outage"] is True
    # The 410: the watch resumed from a compacted version; the re-list found the pod.
    calls = report["calls_after_drop"]
    assert "watch" in calls
    assert "list_pods" in calls
    assert "delete_pod" in calls
    relisted = calls.index("list_pods")
    assert calls.index("watch") < relisted  # the watch came back first, with a 410
    assert "delete_pod" in calls[relisted:]  # the re-list found the pod, then it went
    # Taken over by another scheduler while creation waited: no pod, not running, its
    # row left to its new owner (the provider's stale-workload check).
    assert report["stale_pods"] == []
    assert report["stale_running"] is False
    assert report["rows"] == {
        "throttled": ["success", 1],
        "handled_while_down": ["success", 1],
        "relisted": ["success", 1],
        "taken_over": ["queued", 1],
    }
    finished = ["throttled", "handled_while_down", "relisted"]
    assert report["events"] == {
        **{name: ["queued", "success"] for name in finished},
        "taken_over": ["queued"],
    }
    assert report["pods_left"] == {}  # every Succeeded pod deleted


def test_the_stale_checks_are_one_query_per_creation_batch(
    tmp_path: Any, tmp_path_factory: Any
) -> None:
    database = migrated_database(tmp_path_factory.mktemp("airflow"))
    report = run_scenario(SCENARIOS, "stale-batches", home=tmp_path, database=database)
    # Twelve tasks, ten creations per heartbeat (worker_pods_creation_batch_size 10): the
    # first creation of each heartbeat reads its row and the next ones' in one query; the
    # provider reads one row per pod (10, then 2 queries).
    assert report["beats"] == [
        {"pods_created": 9, "stale_checks": 1, "rows_checked": [11]},  # b01 taken over
        {"pods_created": 1, "stale_checks": 1, "rows_checked": [2]},  # b11 taken over
        {"pods_created": 0, "stale_checks": 0, "rows_checked": []},
    ]
    # The verdicts are the provider's: the two tasks another scheduler queued get no pod,
    # are not running and lose their QUEUED event; every other one has its pod.
    taken_over = {"b01", "b11"}
    every = {f"b{number:02}" for number in range(12)}
    assert set(report["created"]) == every - taken_over
    assert set(report["running"]) == every - taken_over
    assert set(report["queued_events"]) == every - taken_over
