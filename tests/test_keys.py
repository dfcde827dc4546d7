from __future__ import annotations

import json
import pickle
import re
import uuid

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from k8s_workloads.keys import (
    AIRFLOW_INT_MAX,
    GENERIC_ID_MAX_LENGTH,
    CallbackKey,
    GenericKey,
    InvalidKey,
    TaskInstanceKey,
    WorkloadKey,
    checked_task_key,
    key_from_json,
)
from k8s_workloads.testing.strategies import (
    callback_keys,
    generic_keys,
    task_keys,
    workload_keys,
)

CALLBACK_ID = "019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e"


def test_task_key_defaults_match_airflow() -> None:
    key = TaskInstanceKey("dag", "task", "run")
    assert key.try_number == 1
    assert key.map_index == -1


def test_task_key_primary_and_with_try_number() -> None:
    key = TaskInstanceKey("dag", "task", "run", 3, 5)
    assert key.primary == ("dag", "task", "run", 5)
    retry = key.with_try_number(4)
    assert retry == TaskInstanceKey("dag", "task", "run", 4, 5)
    assert key.try_number == 3  # the original is unchanged


def test_task_key_is_frozen() -> None:
    key = TaskInstanceKey("dag", "task", "run")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        key.dag_id = "other"  # type: ignore[misc]


def test_task_key_never_equals_tuple_string_or_callback_key() -> None:
    key = TaskInstanceKey("dag", "task", "run", 1, -1)
    assert key != ("dag", "task", "run", 1, -1)  # type: ignore[comparison-overlap]
    assert key.as_tuple() == ("dag", "task", "run", 1, -1)
    assert key != "dag"  # type: ignore[comparison-overlap]
    callback = CallbackKey(CALLBACK_ID)
    assert callback != CALLBACK_ID  # type: ignore[comparison-overlap]
    assert key != callback  # type: ignore[comparison-overlap]
    assert len({key, callback, CALLBACK_ID, key.as_tuple()}) == 4


def test_from_tuple_round_trip_and_errors() -> None:
    key = TaskInstanceKey.from_tuple(("dag", "task", "run", 2, 0))
    assert key == TaskInstanceKey("dag", "task", "run", 2, 0)
    with pytest.raises(InvalidKey, match="five fields"):
        TaskInstanceKey.from_tuple(("dag", "task"))
    with pytest.raises(InvalidKey, match="five fields"):
        TaskInstanceKey.from_tuple("abcde")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"dag_id": ""}, "dag_id"),
        ({"dag_id": 5}, "dag_id"),
        ({"task_id": ""}, "task_id"),
        ({"run_id": ""}, "run_id"),
        ({"run_id": 7}, "run_id"),
        ({"try_number": -1}, "try_number"),
        ({"try_number": True}, "try_number"),
        ({"try_number": "1"}, "try_number"),
        ({"map_index": -2}, "map_index"),
        ({"map_index": 1.5}, "map_index"),
        # Issue 11, item 4: no Airflow column holds these, and no pod could carry them.
        ({"try_number": AIRFLOW_INT_MAX + 1}, "try_number"),
        ({"try_number": 10**70}, "try_number"),
        ({"try_number": 10**5000}, "try_number"),
        ({"map_index": AIRFLOW_INT_MAX + 1}, "map_index"),
    ],
)
def test_task_key_rejects_bad_fields_naming_them(kwargs: dict[str, object], field: str) -> None:
    fields: dict[str, object] = {"dag_id": "d", "task_id": "t", "run_id": "r"} | kwargs
    with pytest.raises(InvalidKey, match=rf"TaskInstanceKey\.{field} ") as raised:
        TaskInstanceKey(**fields)  # type: ignore[arg-type]
    assert raised.value.field == field


def test_counters_may_be_as_large_as_airflow_stores_them() -> None:
    key = TaskInstanceKey("d", "t", "r", AIRFLOW_INT_MAX, AIRFLOW_INT_MAX)
    assert (key.try_number, key.map_index) == (2**31 - 1, 2**31 - 1)
    with pytest.raises(InvalidKey, match="an integer of about 5001 digits"):
        TaskInstanceKey("d", "t", "r", 10**5000)


def test_run_id_may_be_none() -> None:
    assert TaskInstanceKey("d", "t", None).run_id is None


def test_callback_key_str_is_its_id() -> None:
    key = CallbackKey(CALLBACK_ID)
    assert str(key) == CALLBACK_ID
    assert key == CallbackKey(CALLBACK_ID)
    assert hash(key) == hash(CallbackKey(CALLBACK_ID))


@pytest.mark.parametrize(
    "bad", ["", "not-a-uuid", CALLBACK_ID.upper(), CALLBACK_ID.replace("-", ""), 5, None]
)
def test_callback_key_requires_canonical_uuid(bad: object) -> None:
    with pytest.raises(InvalidKey, match=r"CallbackKey\.id") as raised:
        CallbackKey(bad)  # type: ignore[arg-type]
    assert raised.value.field == "id"


def test_a_generic_key_is_any_id_and_equals_only_a_generic_key() -> None:
    key = GenericKey("job-1")
    assert str(key) == "job-1"
    assert key == GenericKey("job-1")
    assert hash(key) == hash(GenericKey("job-1"))
    assert key != "job-1"  # type: ignore[comparison-overlap]
    uuid_key = GenericKey(CALLBACK_ID)
    assert uuid_key != CallbackKey(CALLBACK_ID)  # type: ignore[comparison-overlap]
    assert len({uuid_key, CallbackKey(CALLBACK_ID)}) == 2
    assert GenericKey("nightly/report 2026-06-07 ü").id == "nightly/report 2026-06-07 ü"


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        ("", "non-empty string"),
        (None, "non-empty string"),
        (7, "non-empty string"),
        ("x" * (GENERIC_ID_MAX_LENGTH + 1), f"at most {GENERIC_ID_MAX_LENGTH}"),
        ("job\n2", "control characters"),
        ("job\x1b[2J", "control characters"),
        ("job\u2028", "line separators"),
        ("abc\u202edef", "bidirectional"),
        ("half\ud800", "lone surrogates"),
    ],
)
def test_a_generic_key_refuses_what_a_pod_cannot_carry_naming_the_field(
    bad: object, words: str
) -> None:
    with pytest.raises(InvalidKey, match=re.escape(words)) as raised:
        GenericKey(bad)  # type: ignore[arg-type]
    assert raised.value.field == "id"
    assert str(raised.value).startswith("GenericKey.id ")


@given(st.text(min_size=1, max_size=GENERIC_ID_MAX_LENGTH + 20))
def test_a_generic_id_is_taken_exactly_when_it_is_one_printable_line(text: str) -> None:
    # The rule, stated apart from the code: short enough, and shown as written.
    printable = not any(
        ord(char) < 0x20 or 0x7F <= ord(char) <= 0x9F or 0xD800 <= ord(char) <= 0xDFFF
        or char in "\u200e\u200f\u2028\u2029\u202a\u202b\u202c\u202d\u202e"
        or char in "\u2066\u2067\u2068\u2069"
        for char in text
    )  # fmt: skip
    if len(text) <= GENERIC_ID_MAX_LENGTH and printable:
        assert GenericKey(text).id == text
    else:
        with pytest.raises(InvalidKey) as raised:
            GenericKey(text)
        assert raised.value.field == "id"


@given(task_keys())
def test_task_keys_hash_consistently_and_pickle(key: TaskInstanceKey) -> None:
    clone = TaskInstanceKey(*key.as_tuple())
    assert clone == key
    assert hash(clone) == hash(key)
    assert pickle.loads(pickle.dumps(key)) == key  # noqa: S301 - our own bytes


@given(callback_keys())
def test_callback_keys_accept_every_uuid(key: CallbackKey) -> None:
    assert str(uuid.UUID(key.id)) == key.id
    assert pickle.loads(pickle.dumps(key)) == key  # noqa: S301 - our own bytes


# --- JSON and text forms ------------------------------------------------------------------


@given(workload_keys(generic=True))
def test_a_keys_json_reads_back_to_an_equal_key(key: WorkloadKey) -> None:
    data = key.to_json()
    assert key_from_json(data) == key
    # Through JSON text too: the form is plain JSON (strings, ints, null).
    assert key_from_json(json.loads(json.dumps(data))) == key
    kinds = {CallbackKey: "callback", GenericKey: "generic", TaskInstanceKey: "task"}
    assert data["kind"] == kinds[type(key)]
    assert pickle.loads(pickle.dumps(key)) == key  # noqa: S301 - our own bytes


@given(task_keys())
def test_a_task_keys_text_names_every_field_it_has(key: TaskInstanceKey) -> None:
    text = key.to_text()
    assert text.startswith(f"task {key.dag_id}.{key.task_id} ")
    assert f" try={key.try_number}" in text
    assert (f" run={key.run_id} " in text) is (key.run_id is not None)
    assert text.endswith(f" map={key.map_index}") is (key.map_index >= 0)
    without_run = key.to_text(run_id=False)
    assert "run=" not in without_run.removeprefix(f"task {key.dag_id}.{key.task_id}")
    run_part = "" if key.run_id is None else f" run={key.run_id}"
    assert text == without_run.replace(" try=", f"{run_part} try=", 1)


@given(callback_keys())
def test_a_callback_keys_text_is_its_id(key: CallbackKey) -> None:
    assert key.to_text() == key.to_text(run_id=False) == f"callback {key.id}"


@given(generic_keys())
def test_a_generic_keys_text_is_its_id_on_one_line(key: GenericKey) -> None:
    assert key.to_text() == key.to_text(run_id=False) == f"generic {key.id}"
    assert len(key.to_text().splitlines()) == 1


def test_key_text_examples() -> None:
    key = TaskInstanceKey("etl", "load", "r1", 2, 3)
    assert key.to_text() == "task etl.load run=r1 try=2 map=3"
    assert TaskInstanceKey("etl", "load", None).to_text() == "task etl.load try=1"
    assert CallbackKey(CALLBACK_ID).to_json() == {"kind": "callback", "id": CALLBACK_ID}


@pytest.mark.parametrize(
    ("data", "field", "words"),
    [
        (["task"], None, "is an object"),
        ({"id": CALLBACK_ID}, "kind", "kind 'task', 'callback' or 'generic'"),
        ({"kind": "generic", "id": ""}, "id", "non-empty string"),
        ({"kind": "generic", "id": "j", "try_number": 1}, "try_number", "no field"),
        ({"kind": "pod", "id": CALLBACK_ID}, "kind", "got 'pod'"),
        ({"kind": "callback"}, "id", "has no 'id'"),
        ({"kind": "callback", "id": CALLBACK_ID, "dag_id": "d"}, "dag_id", "no field 'dag_id'"),
        ({"kind": "callback", "id": CALLBACK_ID.upper()}, "id", "canonical"),
        ({"kind": "task", "dag_id": "d", "task_id": "t", "run_id": None, "try_number": 1},
         "map_index", "has no 'map_index'"),
        ({"kind": "task", "dag_id": "d", "task_id": "t", "run_id": None, "try_number": "1",
          "map_index": -1}, "try_number", "must be an int"),
    ],
)  # fmt: skip
def test_key_from_json_names_what_is_wrong(data: object, field: str | None, words: str) -> None:
    with pytest.raises(InvalidKey, match=re.escape(words)) as caught:
        key_from_json(data)
    assert caught.value.field == field


@given(st.dictionaries(st.text(max_size=12), st.none() | st.integers() | st.text(max_size=12)))
def test_key_from_json_refuses_anything_else_with_invalid_key(data: dict[str, object]) -> None:
    try:
        key = key_from_json(data)
    except InvalidKey:
        return
    assert key.to_json() == data  # only an exact key's JSON is read


@given(
    dag_id=st.one_of(st.text(max_size=3), st.integers()),
    task_id=st.text(max_size=3),
    run_id=st.one_of(st.text(max_size=3), st.none()),
    try_number=st.one_of(st.integers(-2, 2**31 + 1), st.booleans()),
    map_index=st.one_of(st.integers(-3, 2**31 + 1), st.sampled_from([2**31 - 1, 2**31])),
)
def test_the_decoders_key_constructor_is_the_constructor(
    dag_id: object, task_id: str, run_id: str | None, try_number: int, map_index: int
) -> None:
    # keys.checked_task_key skips the validators' calls, never their checks.
    fields = (dag_id, task_id, run_id, try_number, map_index)
    try:
        expected = TaskInstanceKey(*fields)  # type: ignore[arg-type]
    except InvalidKey as error:
        refused = (str(error), error.field)
        with pytest.raises(InvalidKey) as raised:
            checked_task_key(*fields)  # type: ignore[arg-type]
        assert (str(raised.value), raised.value.field) == refused
        return
    got = checked_task_key(*fields)  # type: ignore[arg-type]
    assert got == expected
    assert hash(got) == hash(expected)
    assert repr(got) == repr(expected)
    assert pickle.loads(pickle.dumps(got)) == expected  # noqa: S301 - our own bytes
