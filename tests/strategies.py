"""Hypothesis strategies shared by the test modules."""

from __future__ import annotations

import string

from hypothesis import strategies as st

from k8s_workloads.keys import CallbackKey, TaskInstanceKey, WorkloadKey

# Airflow ids: its KEY_REGEX is ^[\w.-]+$ (Unicode word characters), up to 250.
airflow_ids = st.text(
    alphabet=st.characters(categories=("L", "N"), include_characters="_.-"),
    min_size=1,
    max_size=250,
)
# Anything at all, for hostile input.
hostile_text = st.text(max_size=300)
# What forges or rewrites lines of text output (newlines, ANSI and OSC escapes, C0 and C1
# controls, Unicode line separators, a bidi override) and lone surrogates, which JSON and
# YAML spell as "\ud800" and UTF-8 cannot write: what a text output must never print raw.
OUTPUT_FORGERS = (
    "\n", "\r", "\r\n", "\x00", "\x07", "\x08", "\t", "\x0b", "\x0c", "\x1b[2J",
    "\x1b[31m", "\x1b]0;title\x07", "\x7f", "\x85", "\x9b", "\u2028", "\u2029", "\u202e",
    "\ud800", "\udbff", "\udc00", "\udfff",
)  # fmt: skip
# Any code point, surrogates included (st.text leaves them out), with those mixed in often.
wild_text = st.lists(
    st.characters(exclude_categories=())
    | st.sampled_from(OUTPUT_FORGERS)
    | st.sampled_from(string.ascii_letters + string.digits + "-_."),
    max_size=40,
).map("".join)
label_alphabet_text = st.text(alphabet=string.ascii_letters + string.digits + "-_.", max_size=80)
run_ids = st.one_of(
    airflow_ids,
    st.builds(
        lambda kind, stamp: f"{kind}__{stamp}",
        st.sampled_from(["manual", "scheduled", "backfill", "asset_triggered"]),
        st.datetimes(timezones=st.timezones()).map(lambda d: d.isoformat()),
    ),
)


def task_keys() -> st.SearchStrategy[TaskInstanceKey]:
    return st.builds(
        TaskInstanceKey,
        dag_id=airflow_ids,
        task_id=airflow_ids,
        run_id=st.none() | run_ids,
        try_number=st.integers(min_value=0, max_value=10_000),
        map_index=st.integers(min_value=-1, max_value=100_000),
    )


def callback_keys() -> st.SearchStrategy[CallbackKey]:
    return st.uuids().map(lambda u: CallbackKey(str(u)))


def workload_keys() -> st.SearchStrategy[WorkloadKey]:
    return st.one_of(task_keys(), callback_keys())
