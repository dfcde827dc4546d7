"""Deadline alert callbacks: what runs, in a pod, when a run misses its deadline.

A callback is a top-level function in a module that the executor's pods can import.
It gets the alert's ``kwargs``; with a ``context`` parameter, also the run and the
deadline missed: ``context["dag_run"]`` (its ``dag_id``, ``dag_run_id``, ...) and
``context["deadline"]`` (its ``deadline_time``). An exception fails the callback; what
it prints is the pod's log.
"""

import datetime


def notify_missed_deadline(team: str, context: dict | None = None) -> None:
    run = (context or {}).get("dag_run") or {}
    deadline = (context or {}).get("deadline") or {}
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    # Send this to your pager or chat instead: the pod's log is where a print goes.
    print(
        f"{now} deadline missed: {run.get('dag_id')} run {run.get('dag_run_id')} was due by "
        f"{deadline.get('deadline_time')}; telling {team}"
    )
