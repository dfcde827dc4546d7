"""Two Airflow schedulers with this executor on one PostgreSQL database, one SIGKILLed.

The real processes (``airflow api-server``, ``dag-processor`` and two ``scheduler``\\ s, see
``tests/support/airflow_deployment.py``) share a PostgreSQL database started for the test
(``tests/support/postgres.py``: the Debian package, as an unprivileged user, on 127.0.0.1)
and one test kit cluster. Four DAG runs make :data:`WORKLOADS` workloads: mapped tasks, a
last task per run, and deadline alerts that miss (callbacks). When both schedulers hold
running pods and work is still queued, one scheduler's process group is SIGKILLed; the
other adopts its pods and takes over its task instances and callbacks.

Every workload's pod appends one line naming it to a trace file, so "no workload ran
twice" is counted, not assumed. Checked at the end: every task instance, DAG run and
callback row in its end state, each trace line exactly once, one pod created per
workload, no pod left in the cluster; every process stopped (the deployment's ``close``).
Figures (wall time, CPU time, what the survivor adopted and ran again) are printed
(``pytest -s``). ``K8S_WORKLOADS_HA_RUNS``, ``_MAPPED`` and ``_ALERTS`` (4, 39, 10) size it
for a quicker local run.
"""

from __future__ import annotations

import collections
import functools
import json
import os
import re
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("airflow.executors.workloads", reason="Airflow runs in the Airflow environment")
pytest.importorskip("psycopg2", reason="no PostgreSQL driver (scripts/dev.py installs it)")
pytest.importorskip("asyncpg", reason="no async PostgreSQL driver (scripts/dev.py installs it)")

from tests.support.airflow_deployment import NS, Deployment
from tests.support.postgres import PostgresServer, postgres_bin

RUNS = int(os.environ.get("K8S_WORKLOADS_HA_RUNS", "4"))  # DAGs, one run each
MAPPED = int(os.environ.get("K8S_WORKLOADS_HA_MAPPED", "39"))  # mapped task instances per run
ALERTS = int(os.environ.get("K8S_WORKLOADS_HA_ALERTS", "10"))  # missed deadline alerts per run
TASKS = RUNS * (MAPPED + 1)
CALLBACKS = RUNS * ALERTS
WORKLOADS = TASKS + CALLBACKS  # 200
PARALLELISM = 8  # task pods per scheduler at once (two cores run them all)

START_SECONDS = 300.0
RUN_SECONDS = 1200.0  # 200 task processes on a loaded 2-core machine: 6-12 min
# Seconds without a heartbeat before Airflow counts a scheduler dead (its default). Airflow
# then hands the scheduler's task instances to another, live or not: on a loaded 2-core
# machine a live scheduler's heartbeat lagged 32 s at start and over 12 s mid-run, and with a
# shorter threshold the other scheduler reset task instances the live one was about to run.
HEALTH_THRESHOLD = 30

ALERTS_MODULE = '''\
"""Deadline callbacks of the HA test: each appends its line to the trace, then holds."""

import time


def record(trace, line, hold, context=None):
    with open(trace, "a") as out:
        out.write(line + "\\n")
    time.sleep(hold)
'''

DAGS = f'''\
"""The HA test's DAGs: mapped tasks, a last task, missed deadlines; every workload
appends one line naming it to the trace."""

import datetime
import pathlib
import time

from airflow.sdk import DAG, DeadlineAlert, DeadlineReference, SyncCallback, task

ROOT = pathlib.Path(__file__).resolve().parents[1]
TRACE = str(ROOT / "trace.txt")
START = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def record(line):
    with open(TRACE, "a") as out:
        out.write(line + "\\n")


def lines():
    path = pathlib.Path(TRACE)
    return path.read_text().splitlines() if path.exists() else []


for number in range({RUNS}):
    dag_id = f"ha_{{number}}"
    alerts = [
        DeadlineAlert(
            reference=DeadlineReference.DAGRUN_QUEUED_AT,
            # Spread over the run, so that callbacks are queued and running at the kill.
            interval=datetime.timedelta(seconds=5 + 25 * alert + 3 * number),
            callback=SyncCallback(
                "ha_alerts.record",
                kwargs={{"trace": TRACE, "line": f"callback {{dag_id}} {{alert}}", "hold": 2}},
            ),
        )
        for alert in range({ALERTS})
    ]
    with DAG(dag_id, schedule=None, start_date=START, deadline=alerts,
             default_args={{"retries": 0}}):

        @task
        def work(item, dag_id=dag_id):
            record(f"task {{dag_id}} {{item}}")
            time.sleep(2)

        @task
        def last(dag_id=dag_id):
            record(f"task {{dag_id}} last")
            # The run lasts until its deadlines are missed and their callbacks have run.
            wanted = {{f"callback {{dag_id}} {{alert}}" for alert in range({ALERTS})}}
            until = time.monotonic() + 900
            while not wanted <= set(lines()):
                if time.monotonic() > until:
                    raise TimeoutError(f"callbacks missing: {{wanted - set(lines())}}")
                time.sleep(0.5)

        work.expand(item=list(range({MAPPED}))) >> last()
'''

DAG_IDS = [f"ha_{number}" for number in range(RUNS)]
EXPECTED = sorted(
    [f"task {dag} {item}" for dag in DAG_IDS for item in range(MAPPED)]
    + [f"task {dag} last" for dag in DAG_IDS]
    + [f"callback {dag} {alert}" for dag in DAG_IDS for alert in range(ALERTS)]
)
HOLDER = "k8s_workloads: queued by scheduler job "  # the executor's mark (see docs/guarantees.md)
RUN_AGAIN = re.compile(r"Running callback (\S+) again")
DECLARED_DEAD = "SchedulerJob instances as failed"  # Airflow's line when it judges one dead


def migrate(url: str, scratch: Path) -> None:
    """``airflow db migrate`` on the PostgreSQL database at ``url``."""
    airflow_cli = Path(sys.executable).with_name("airflow")
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env = {
        **inherited,
        "AIRFLOW_HOME": str(scratch),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": url,
    }
    done = subprocess.run(
        [str(airflow_cli), "db", "migrate"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=START_SECONDS,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture
def postgres(tmp_path: Path) -> Iterator[str]:
    """The SQLAlchemy URL of a migrated PostgreSQL database; the server stopped after."""
    found = postgres_bin()
    if isinstance(found, str):
        print(f"note: {found}")  # noqa: T201 - the skip's reason, on the test command's output
        pytest.skip(found)
    with PostgresServer(found) as server:
        migrate(server.url, tmp_path)
        yield server.url


# --- reading the database and the cluster ---------------------------------------------------


def scheduler_jobs(deployment: Deployment) -> list[int]:
    rows = deployment.query(
        "SELECT id FROM job WHERE job_type = 'SchedulerJob' AND state = 'running' ORDER BY id"
    )
    return [row[0] for row in rows]


def process_of(deployment: Deployment, job: str) -> str:
    """The scheduler process whose job row is ``job``: the one whose log names it when it
    queues task instances (the job ids follow the order the rows were made, not the order
    the processes started)."""
    mark = f"(scheduler job_id={job})"
    names = [
        name for name in SCHEDULERS if mark in deployment.logs[name].read_text(errors="replace")
    ]
    assert len(names) == 1, f"job {job} in the logs of {names}"
    return names[0]


def task_states(deployment: Deployment) -> collections.Counter[str]:
    rows = deployment.query("SELECT state FROM task_instance WHERE dag_id LIKE 'ha_%'")
    return collections.Counter(str(state) for (state,) in rows)


def callback_states(deployment: Deployment) -> collections.Counter[str]:
    rows = deployment.query("SELECT state FROM callback WHERE type = 'executor'")
    return collections.Counter(str(state) for (state,) in rows)


def running_pods_by_worker(deployment: Deployment) -> collections.Counter[str]:
    return collections.Counter(
        pod["metadata"]["labels"].get("airflow-worker", "")
        for pod in deployment.cluster.pods()
        if (pod.get("status") or {}).get("phase") == "Running"
    )


def callback_holders(deployment: Deployment) -> collections.Counter[str]:
    """How many callbacks each scheduler job holds (queued or running, by the executor's
    mark in the row's ``output``)."""
    rows = deployment.query(
        "SELECT output FROM callback WHERE state IN ('queued', 'running') AND output LIKE ?",
        HOLDER + "%",
    )
    return collections.Counter(str(output).removeprefix(HOLDER) for (output,) in rows)


def trace(deployment: Deployment) -> list[str]:
    path = deployment.root / "trace.txt"
    return path.read_text().splitlines() if path.exists() else []


SCHEDULERS = ("scheduler-1", "scheduler-2")


def logged(deployment: Deployment, name: str, marks: dict[str, int]) -> str:
    """What process ``name`` logged since ``marks[name]`` (a size of its log)."""
    with deployment.logs[name].open("rb") as log:
        log.seek(marks[name])
        return log.read().decode(errors="replace")


def all_ended(deployment: Deployment) -> bool:
    tasks, callbacks = task_states(deployment), callback_states(deployment)
    ended = {"success", "failed", "upstream_failed", "skipped"}
    return (
        sum(tasks.values()) == TASKS
        and set(tasks) <= ended
        and sum(callbacks.values()) == CALLBACKS
        and set(callbacks) <= ended
    )


# --- the test -------------------------------------------------------------------------------


def test_two_schedulers_one_killed_every_workload_runs_once(postgres: str) -> None:
    started = time.monotonic()
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    figures: dict[str, Any] = {"workloads": WORKLOADS, "tasks": TASKS, "callbacks": CALLBACKS}
    dag_files = {"ha_dags.py": DAGS, "ha_alerts.py": ALERTS_MODULE}
    # The processes' lifetime (coreutils' timeout): past the longest run this test allows.
    with Deployment(postgres, dag_files, lifetime=START_SECONDS + 2 * RUN_SECONDS) as deployment:
        deployment.settings.update({
            "AIRFLOW__CORE__PARALLELISM": str(PARALLELISM),
            "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_THRESHOLD": str(HEALTH_THRESHOLD),
            "AIRFLOW__KUBERNETES_EXECUTOR__WORKER_PODS_CREATION_BATCH_SIZE": "4",
        })  # fmt: skip
        deployment.start("api-server", "api-server")
        deployment.start("dag-processor", "dag-processor")
        deployment.start("scheduler-1", "scheduler")
        deployment.start("scheduler-2", "scheduler")
        deployment.wait_for(
            lambda: deployment.answers("/api/v2/monitor/health"), "api-server", START_SECONDS
        )
        for dag_id in DAG_IDS:
            known = functools.partial(deployment.answers, f"/api/v2/dags/{dag_id}")
            deployment.wait_for(known, f"DAG {dag_id} parsed", START_SECONDS)

        def two_jobs() -> list[int] | None:
            """Both scheduler jobs running, each scheduler past its first look for
            orphans (at start each may judge the other dead: its job row is made some
            30 s before its first heartbeat on a loaded machine)."""
            looked = all(
                "Adopting or resetting orphaned tasks"
                in deployment.logs[name].read_text(errors="replace")
                for name in SCHEDULERS
            )
            found = scheduler_jobs(deployment)
            return found if looked and len(found) == 2 else None

        jobs = deployment.wait_for(two_jobs, "two scheduler jobs", START_SECONDS)
        figures["start s"] = round(time.monotonic() - started, 1)

        triggered = time.monotonic()
        marks = {name: deployment.logs[name].stat().st_size for name in SCHEDULERS}
        for dag_id in DAG_IDS:
            deployment.api("POST", f"/api/v2/dags/{dag_id}/dagRuns", {"logical_date": None})

        def both_busy() -> str | None:
            """The scheduler to kill, once both hold running pods, a tenth of the
            workloads has run and a quarter has not started: one that holds a callback
            (queued or running) besides, the one with more running pods first."""
            done = len(trace(deployment))
            if done < WORKLOADS // 10 or WORKLOADS - done < WORKLOADS // 4:
                return None
            running = running_pods_by_worker(deployment)
            if any(running[str(job)] < 1 for job in jobs):
                return None
            holding = callback_holders(deployment)
            candidates = [str(job) for job in jobs if holding[str(job)] >= 1]
            return max(candidates, key=lambda job: running[job]) if candidates else None

        victim = deployment.wait_for(both_busy, "both schedulers holding pods", RUN_SECONDS)
        (survivor,) = [str(job) for job in jobs if str(job) != victim]
        held = {
            pod["metadata"]["name"]
            for pod in deployment.cluster.pods()
            if pod["metadata"]["labels"].get("airflow-worker") == victim
        }
        queued = deployment.query(
            "SELECT count(*) FROM task_instance WHERE queued_by_job_id = ? AND state = 'queued'",
            int(victim),
        )[0][0]
        callbacks_held = callback_holders(deployment)[victim]
        since = len(deployment.cluster.calls)
        # A live scheduler judged dead before the kill would make the run test something
        # else (Airflow's reset of a live scheduler's work): say so, not a later symptom.
        judged = [name for name in SCHEDULERS if DECLARED_DEAD in logged(deployment, name, marks)]
        assert not judged, f"{judged} declared a live scheduler dead (heartbeat lag): {figures}"
        name = process_of(deployment, victim)
        deployment.kill(name)
        killed = time.monotonic()
        figures |= {
            "killed after s": round(killed - triggered, 1),
            "traces at the kill": len(trace(deployment)),
            "victim's pods": len(held),
            "victim's queued task instances": queued,
            "victim's callbacks": callbacks_held,
        }

        deployment.wait_for(lambda: all_ended(deployment), "every workload ended", RUN_SECONDS)
        figures["all ended s"] = round(time.monotonic() - triggered, 1)
        deployment.wait_for(lambda: not deployment.cluster.pods(), "no pod left", 60)

        assert task_states(deployment) == {"success": TASKS}
        assert callback_states(deployment) == {"success": CALLBACKS}
        runs = deployment.query("SELECT state FROM dag_run WHERE dag_id LIKE 'ha_%'")
        assert sorted(state for (state,) in runs) == ["success"] * RUNS
        lines = trace(deployment)
        twice = [line for line, count in collections.Counter(lines).items() if count > 1]
        assert not twice, twice  # no workload ran twice
        assert sorted(lines) == EXPECTED  # every workload ran
        created = [
            n for call, ns, n in deployment.cluster.calls if call == "create_pod" and ns == NS
        ]
        assert len(created) == len(set(created)) == WORKLOADS  # one pod per workload
        after = deployment.cluster.calls[since:]
        patched = {n for call, _, n in after if call == "patch_pod"}
        deleted = {n for call, _, n in after if call == "delete_pod"}
        log = deployment.logs["scheduler-2" if name == "scheduler-1" else "scheduler-1"].read_text(
            errors="replace"
        )
        retried = deployment.query(
            "SELECT count(*) FROM task_instance WHERE dag_id LIKE 'ha_%' AND try_number > 1"
        )[0][0]
        figures |= {
            # The victim is dead: its pods' patches and deletions are the survivor's.
            "victim's pods relabelled": len(held & patched),
            "victim's pods taken over": len(held & (patched | deleted)),
            "callbacks run again": len(set(RUN_AGAIN.findall(log))),
            "task instances reset and run": retried,
            "survivor": survivor,
        }
    # Every process reaped by now (the deployment's close): their CPU time, pods included.
    assert all(process.poll() is not None for process in deployment.processes.values())
    spent = resource.getrusage(resource.RUSAGE_CHILDREN)
    figures["wall s"] = round(time.monotonic() - started, 1)
    figures["cpu s"] = round(spent.ru_utime + spent.ru_stime - cpu.ru_utime - cpu.ru_stime)
    print(f"\nHA figures: {json.dumps(figures)}")  # noqa: T201 - the figures of docs/guarantees.md (-s)
