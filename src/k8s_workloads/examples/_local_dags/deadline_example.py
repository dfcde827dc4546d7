"""A DAG whose run misses its deadline: the deadline alert's callback runs as a pod.

The run's one task takes 30 seconds; the deadline is 10 seconds after the run was
queued. When it passes, the scheduler hands the alert's callback to the executor, which
runs it in a pod of its own: ``notify_missed_deadline``, in ``deadline_example_alerts.py``
next to this file (the DAG's folder is on the callback's ``sys.path``).
"""

import datetime
import time

from airflow.sdk import DAG, DeadlineAlert, DeadlineReference, SyncCallback, task
from deadline_example_alerts import notify_missed_deadline

with DAG(
    dag_id="deadline_example",
    schedule=None,
    start_date=datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc),
    tags=["k8s-workloads"],
    deadline=DeadlineAlert(
        reference=DeadlineReference.DAGRUN_QUEUED_AT,
        interval=datetime.timedelta(seconds=10),
        callback=SyncCallback(notify_missed_deadline, kwargs={"team": "data-platform"}),
    ),
):

    @task
    def slow_report() -> None:
        time.sleep(30)
        print("the report is ready")

    slow_report()
