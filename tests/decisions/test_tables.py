"""The decision tables: the document generated from them, every row's reason, the rows
written once, and the give-up tables held against decide's rows."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from k8s_workloads.config import DecisionConfig
from k8s_workloads.decisions import (
    CALLBACK_GIVE_UP_RULES,
    CALLBACK_RULES,
    TASK_GIVE_UP_RULES,
    TASK_RULES,
    UNKNOWN,
    decide,
    decide_task,
    describe_rules,
    handling_failed,
)
from k8s_workloads.decisions.actions import (
    Ignore,
)
from k8s_workloads.decisions.results import _rules_document
from k8s_workloads.states import (
    ExecutorPseudoState,
    KubernetesJob,
    TaskInstanceState,
)
from tests.support.decision_cases import (
    ERROR,
    TASK_KEY,
    emitted,
    launched,
    said,
    task,
)

# --- the tables the code runs ------------------------------------------------------------

TABLES = {
    "task": TASK_RULES,
    "callback": CALLBACK_RULES,
    "task give-up": TASK_GIVE_UP_RULES,
    "callback give-up": CALLBACK_GIVE_UP_RULES,
}


def test_the_decision_rules_document_is_generated_from_the_tables() -> None:
    document = pathlib.Path(__file__).resolve().parents[2] / "docs" / "decision-rules.md"
    assert document.read_text(encoding="utf-8") == _rules_document(), (
        "docs/decision-rules.md is stale: run scripts/decision_rules.py"
    )
    for table in TABLES.values():
        assert describe_rules(table) in _rules_document()


@pytest.mark.parametrize("name", list(TABLES))
def test_every_table_ends_with_a_row_for_any_state_and_every_row_says_why(name: str) -> None:
    table = TABLES[name]
    last = table[-1]
    assert last.states is None
    assert last.when == "otherwise"
    for rule in table:
        assert rule.when, rule
        assert rule.then, rule
        assert rule.why, rule
        assert "|" not in rule.when + rule.then + rule.why  # one Markdown table cell each
        # The columns the rows are dispatched on are said in the prose the docs print.
        if rule.running is False:
            assert "not running" in rule.when, rule
        if rule.running is True:
            assert "running" in rule.when.replace("not running", ""), rule


ADOPTED_ONLY = frozenset({ExecutorPseudoState.ADOPTED})


def test_shared_rows_are_written_once() -> None:
    adopted = [rule for rule in TASK_RULES if rule.states == ADOPTED_ONLY]
    assert adopted
    for table in TABLES.values():
        rows = [rule for rule in table if rule.states == ADOPTED_ONLY]
        # The very same row objects, in the same order: one text, one code, every table.
        assert [id(row) for row in rows] == [id(shared) for shared in adopted]


def test_a_rows_text_is_its_decision() -> None:
    # The first row about FAILED tasks that applies when not running is the duplicate row:
    # the table, not a second copy of the rule, decides.
    (duplicate,) = [
        rule
        for rule in TASK_RULES
        if rule.is_about(TaskInstanceState.FAILED) and rule.when == "not running"
    ]
    assert duplicate.then == "ignore"
    decision = decide_task(task(TaskInstanceState.FAILED), running=False)
    assert said(decision) == (Ignore(f"{TASK_KEY!r} is not running: duplicate result"),)


@given(
    state=st.sampled_from(list(ExecutorPseudoState)),
    known=st.sampled_from([UNKNOWN, None, *TaskInstanceState]),
)
def test_giving_up_on_a_pseudo_state_reports_what_decide_would(
    state: ExecutorPseudoState, known: Any
) -> None:
    """The give-up rows that mirror decide's (the LOOKUP row "the state read is what the
    decision would report", the adopted, completed and vanished rows) are held against
    decide itself: for every result the watch or a re-list makes with a pseudo state and
    every state read, giving up reports what decide reports, so the tables cannot drift.
    (For a FAILED pod of a task that has finished, giving up reports the state read where
    decide reports FAILED; the scheduler ignores either for a finished task instance.)"""
    result = task(state)
    attempts = launched(KubernetesJob(result.key, ("x",)))
    gave_up = handling_failed(
        result,
        ERROR,
        running=True,
        failures_so_far=0,
        attempts=attempts,
        config=DecisionConfig(max_handling_retries=0),
        known_state=known,
    )
    reported = [event.state for event in emitted(gave_up)]
    if reported == [TaskInstanceState.FAILED] and known is not TaskInstanceState.FAILED:
        return  # the "otherwise" row: giving up fails what decide would still look up
    decided = decide(result, running=True, attempts=attempts, known_state=known)
    if decided.look_up:
        return  # decide asks for the state first; giving up cannot ask
    assert [event.state for event in emitted(decided)] == reported
