# airflow.utils.state (apache-airflow-core 3.3.2): the task instance states the provider's
# watcher reports. A str enum, so a member equals its value ("failed").

from enum import Enum

class TaskInstanceState(str, Enum):
    REMOVED = "removed"
    SCHEDULED = "scheduled"
    QUEUED = "queued"
    RUNNING = "running"
    SUCCESS = "success"
    RESTARTING = "restarting"
    FAILED = "failed"
    UP_FOR_RETRY = "up_for_retry"
    UP_FOR_RESCHEDULE = "up_for_reschedule"
    UPSTREAM_FAILED = "upstream_failed"
    SKIPPED = "skipped"
    DEFERRED = "deferred"
    AWAITING_INPUT = "awaiting_input"

class CallbackState(str, Enum):
    SCHEDULED = "scheduled"
    PENDING = "pending"
    QUEUED = "queued"
    RUNNING = "running"
    SUCCESS = "success"
    FAILED = "failed"
