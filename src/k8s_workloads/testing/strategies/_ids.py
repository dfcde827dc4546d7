"""Strategies for the ids a workload is named by, and for its keys.

The ids are what Airflow holds: dag and task ids of ``[\\w.-]+`` up to 250, run ids of any
text, scheduler job ids as integers or text; the ``hostile_*`` ones reach past what Airflow
accepts, for code that must refuse or escape them. The keys are built from the plausible ones.
:data:`generic_ids` are any id a :class:`~k8s_workloads.keys.GenericKey` takes.
"""

from __future__ import annotations

import string

from hypothesis import strategies as st

from k8s_workloads.display import has_unprintable
from k8s_workloads.keys import (
    GENERIC_ID_MAX_LENGTH,
    CallbackKey,
    GenericKey,
    TaskInstanceKey,
    WorkloadKey,
)

__all__ = [
    "airflow_ids",
    "callback_keys",
    "generic_ids",
    "generic_keys",
    "hostile_ids",
    "hostile_run_ids",
    "run_ids",
    "scheduler_job_ids",
    "task_keys",
    "workload_keys",
]

_WORD_CHARACTERS = st.characters(categories=("L", "N"), include_characters="_.-")

airflow_ids = st.one_of(
    st.text(alphabet=string.ascii_letters + string.digits + "_.-", min_size=1, max_size=250),
    st.text(alphabet=_WORD_CHARACTERS, min_size=1, max_size=250),
)
"""dag/task ids Airflow accepts: ``[\\w.-]+`` (ASCII or any script), up to 250."""

hostile_ids = st.one_of(
    airflow_ids,
    st.text(min_size=1, max_size=500),
    st.text(alphabet=string.punctuation + " \t", min_size=1, max_size=40),
    st.text(alphabet=_WORD_CHARACTERS, min_size=251, max_size=500),
    st.sampled_from(
        ["-", "...", "***", "_", "__", "ß", "ǅ", "日本語", "🙂", "a" * 500, "." * 250, "ß" * 300]
    ),
)
"""Non-empty dag/task ids of any text: Unicode, 500 long, punctuation only."""

_GENERATED_RUN_IDS = st.builds(
    lambda kind, moment: f"{kind}__{moment.isoformat()}",
    st.sampled_from(["manual", "scheduled", "backfill", "asset_triggered"]),
    st.datetimes(timezones=st.timezones()),
)

run_ids = st.one_of(st.just(""), _GENERATED_RUN_IDS, st.text(max_size=250))
"""Run ids as Airflow may hold them: any text up to 250 (``""`` means none)."""

hostile_run_ids = st.one_of(run_ids, hostile_ids)
"""Run ids of any text, 500 long, punctuation only; ``""`` means none."""

scheduler_job_ids: st.SearchStrategy[str | int] = st.one_of(
    st.integers(0, 10**9), st.from_regex(r"[a-z0-9-]{1,20}", fullmatch=True), hostile_ids
)
"""Scheduler job ids: integers as Airflow has them, and any text."""


def task_keys() -> st.SearchStrategy[TaskInstanceKey]:
    """Task instance keys: Airflow's ids, a run id or none, any try number and map index."""
    return st.builds(
        TaskInstanceKey,
        dag_id=airflow_ids,
        task_id=airflow_ids,
        run_id=st.none() | airflow_ids | _GENERATED_RUN_IDS,
        try_number=st.integers(min_value=0, max_value=10_000),
        map_index=st.integers(min_value=-1, max_value=100_000),
    )


def callback_keys() -> st.SearchStrategy[CallbackKey]:
    """Callback keys: the callback row's id, a UUID as Airflow makes them."""
    return st.uuids().map(lambda value: CallbackKey(str(value)))


generic_ids = st.one_of(
    st.from_regex(r"[a-z0-9][-a-z0-9]{0,20}", fullmatch=True),
    st.uuids().map(str),
    st.text(min_size=1, max_size=GENERIC_ID_MAX_LENGTH).filter(
        lambda text: not has_unprintable(text)
    ),
    st.sampled_from(["-", "a/b c", "日本語", "🙂", "x" * GENERIC_ID_MAX_LENGTH, "ß" * 200]),
)
"""Any id a generic workload may have: names, UUIDs, any one-line text up to 253
characters (Unicode, punctuation, spaces)."""


def generic_keys() -> st.SearchStrategy[GenericKey]:
    """Generic workload keys, of :data:`generic_ids`."""
    return generic_ids.map(GenericKey)


def workload_keys(*, generic: bool = False) -> st.SearchStrategy[WorkloadKey]:
    """Task instance keys and callback keys (and generic keys, with ``generic``)."""
    if generic:
        return st.one_of(task_keys(), callback_keys(), generic_keys())
    return st.one_of(task_keys(), callback_keys())
