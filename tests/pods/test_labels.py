"""Labels, names and selectors; the cross-check cases are reference §8's numbering."""

from __future__ import annotations

import datetime
import hashlib
import random
import re
import string

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from k8s_workloads.pods.labels import (
    InvalidDateLabel,
    PodSelector,
    add_unique_suffix,
    airflow_version_label,
    build_labels_for_callback_pod,
    build_labels_for_k8s_executor_pod,
    build_selector_for_k8s_executor_pod,
    callback_pods_selector,
    completed_pods_adoption_selector,
    create_unique_id,
    datetime_to_label_safe_datestring,
    label_safe_datestring_to_datetime,
    live_pods_adoption_selector,
    make_safe_label_value,
    scheduler_pods_selector,
    watcher_selector,
)
from k8s_workloads.pods.validation import POD_NAME_MAX_LENGTH, is_dns1123_subdomain, is_label_value
from k8s_workloads.testing.strategies import airflow_ids
from tests.support.strategies import hostile_text, label_alphabet_text, wild_text

SUFFIX = re.compile(r"-[a-z0-9]{8}\Z")
DNS1123 = re.compile(r"\A[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")


# --- create_unique_id: cases 1-12 -------------------------------------------------------


@pytest.mark.parametrize(
    ("dag_id", "task_id", "expected"),
    [
        (None, "task-id", "task-id"),  # 1
        (None, "task_id", "task-id"),  # 2
        (None, "---task.id---", "task-id"),  # 3
        (None, ".task.id", "task-id"),  # 4
        (None, "**task.id", "task-id"),  # 4
        (None, "-90Abc*&", "90abc"),  # 5
        (None, "90AçLbˆˆç˙ßß˜˜˙c*a", "90aclb-c-ssss-c-a"),  # 6
        (".dag.id", ".---task.id", "dag-id-task-id"),  # 7
        ("-90Abc*&", "-90Abc*&", "90abc-90abc"),  # 8
    ],
)
def test_create_unique_id_cases(dag_id: str | None, task_id: str, expected: str) -> None:
    assert create_unique_id(dag_id, task_id, unique=False) == expected
    unique = create_unique_id(dag_id, task_id)
    assert unique[:-9] == expected
    assert SUFFIX.search(unique)


def test_create_unique_id_long_ids() -> None:
    unique = create_unique_id("0" * 254, rng=random.Random(1))  # 9
    assert len(unique) == 63
    assert re.fullmatch(r"0{54}-[a-z0-9]{8}", unique)
    assert create_unique_id("0" * 254, unique=False) == "0" * 63  # 10


def test_create_unique_id_needs_an_id() -> None:  # 11
    with pytest.raises(ValueError, match="Must supply either dag_id or task_id"):
        create_unique_id()
    with pytest.raises(ValueError, match="Must supply either dag_id or task_id"):
        create_unique_id("", "")


@pytest.mark.parametrize("max_length", [25, 100, 200, 300])
def test_create_unique_id_max_length(max_length: int) -> None:  # 12
    dag_id = "dag-" * 16
    task_id = "task-" * 17
    base = (dag_id + task_id).strip("-")
    assert (
        create_unique_id(dag_id, task_id, max_length=max_length, unique=False)
        == (base[:max_length])
    )
    unique = create_unique_id(dag_id, task_id, max_length=max_length)
    assert unique[:-9] == base[: max_length - 9].strip("-")
    assert SUFFIX.search(unique)


def test_create_unique_id_is_reproducible_with_an_injected_rng() -> None:
    first = create_unique_id("dag", "task", rng=random.Random(7))
    assert first == create_unique_id("dag", "task", rng=random.Random(7))
    assert first != create_unique_id("dag", "task", rng=random.Random(8))


def test_the_default_suffix_covers_the_whole_alphabet_at_every_position() -> None:
    # One CSPRNG draw per suffix, written in base 36: every character can appear at
    # every position (a digit-only or letter-only bug, or a stuck position, shows here).
    suffixes = [create_unique_id("etl", "load").rsplit("-", 1)[1] for _ in range(4000)]
    assert {len(suffix) for suffix in suffixes} == {8}
    alphabet = set(string.ascii_lowercase + string.digits)
    for position in range(8):
        assert {suffix[position] for suffix in suffixes} == alphabet
    assert len(set(suffixes)) == len(suffixes)  # 36**8 values: a repeat means no randomness


@given(st.text(max_size=40), st.text(max_size=40))
def test_a_name_is_the_slug_of_the_ids_whether_cached_or_not(dag_id: str, task_id: str) -> None:
    from slugify import slugify  # noqa: PLC0415

    assume(dag_id or task_id)
    joined = "-".join(part for part in (dag_id, task_id) if part)
    expected = slugify(joined, lowercase=True)[:POD_NAME_MAX_LENGTH].strip(".-")
    for _ in range(2):  # the first call fills the cache, the second reads it
        name = create_unique_id(dag_id, task_id, unique=False)
        assert name == (expected or name)  # empty slugs fall back to a hash (tested above)


def test_create_unique_id_punctuation_only_is_still_a_valid_name() -> None:
    # The provider returns "" (or "-<random>") here, which Kubernetes rejects.
    name = create_unique_id("***", "!!!", unique=False)
    assert re.fullmatch(r"[0-9a-f]{9}", name)
    assert is_dns1123_subdomain(name)
    assert is_dns1123_subdomain(create_unique_id("***"))


def test_create_unique_id_rejects_a_max_length_with_no_room() -> None:
    with pytest.raises(ValueError, match="leaves no room"):
        create_unique_id("dag", max_length=9)
    assert create_unique_id("dag", max_length=2, unique=False) == "da"


@given(
    st.none() | hostile_text | airflow_ids | wild_text,
    st.none() | hostile_text | airflow_ids | wild_text,
    st.integers(10, 253),
    st.booleans(),
)
def test_create_unique_id_is_always_dns1123_within_max_length(
    dag_id: str | None, task_id: str | None, max_length: int, unique: bool
) -> None:
    assume(dag_id or task_id)
    name = create_unique_id(dag_id, task_id, max_length=max_length, unique=unique)
    assert 0 < len(name) <= max_length
    assert DNS1123.match(name)


# --- add_unique_suffix: cases 13-14 -----------------------------------------------------


@pytest.mark.parametrize("name", ["a" * 70, "a" * 253, "a" * 95, "aaa"])
def test_add_unique_suffix_lengths(name: str) -> None:  # 13
    result = add_unique_suffix(name=name)
    assert len(result) <= 63
    before, suffix = result.rsplit("-", 1)
    assert before == name[:54]
    assert re.fullmatch(r"[a-z0-9]{8}", suffix)


@pytest.mark.parametrize(
    ("name", "prefix"),
    [
        ("pod-name-with-hyphen-", "pod-name-with-hyphen"),
        ("pod-name-with-double-dot..", "pod-name-with-double-dot"),
        ("pod-name-with-hyphen-dot-.", "pod-name-with-hyphen-dot"),
        (
            "somewhat-long-pod-name-maybe-longer-than-previously-supported-with-hyphen-",
            "somewhat-long-pod-name-maybe-longer-than-previously-su",
        ),
    ],
)
def test_add_unique_suffix_strips_separators(name: str, prefix: str) -> None:  # 14
    result = add_unique_suffix(name=name)
    assert result[:-9] == prefix
    assert SUFFIX.search(result)


def test_add_unique_suffix_of_nothing_is_valid() -> None:
    assert re.fullmatch(r"[a-z0-9]{8}", add_unique_suffix(name="--..", rng=random.Random(0)))
    with pytest.raises(ValueError, match="must leave room"):
        add_unique_suffix(name="a", rand_len=8, max_len=8)


# --- make_safe_label_value: cases 15-20 -------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("my_dag_id", "my_dag_id"),  # 15
        ("my_dag_id_" + "a" * 64, "my_dag_id_" + "a" * 43 + "-0ce114c45"),  # 16
        ("dag*", "dag-6b24921d4"),  # 17
        ("task*", "task-b6aca8991"),  # 17
        ("a" * 63, "a" * 63),  # 18
        ("a" * 64, "a" * 53 + "-014842d48"),  # 18
        ("__callback__", "callback-63f8b8db3"),  # 19
        (
            "manual__2026-06-07T01:50:23.457423+00:00",
            "manual__2026-06-07T015023.4574230000-b7e8e540e",
        ),
        ("", ""),
    ],
)
def test_make_safe_label_value_cases(value: str, expected: str) -> None:
    assert make_safe_label_value(value) == expected


def test_make_safe_label_value_never_returns_a_leading_dash() -> None:  # 20
    # The provider returns "-8a7ab20ec" for "***", which is not a label value.
    assert make_safe_label_value("***") == "8a7ab20ec"
    assert make_safe_label_value("ü") == "c03410a52"
    assert is_label_value(make_safe_label_value("___"))


@given(st.one_of(hostile_text, label_alphabet_text, airflow_ids, wild_text))
def test_make_safe_label_value_is_valid_short_and_idempotent(value: str) -> None:
    safe = make_safe_label_value(value)
    assert is_label_value(safe)
    assert len(safe) <= 63
    assert make_safe_label_value(safe) == safe
    if len(value) <= 63 and is_label_value(value):
        assert safe == value


@given(label_alphabet_text.filter(lambda v: len(v) <= 63 and is_label_value(v)))
def test_valid_values_are_unchanged(value: str) -> None:
    assert make_safe_label_value(value) == value


@given(st.text(min_size=64, max_size=200), st.text(min_size=64, max_size=200))
def test_distinct_long_values_stay_distinct(first: str, second: str) -> None:
    assume(first != second)
    assert make_safe_label_value(first) != make_safe_label_value(second)


def test_a_lone_surrogate_gets_a_hash_instead_of_raising() -> None:
    # Issue 11, item 2: "\ud800" (JSON and YAML spell it) raised UnicodeEncodeError.
    assert make_safe_label_value("etl\ud800") == "etl-" + _md5(b"etl\xed\xa0\x80")
    assert make_safe_label_value("\udfff") == _md5(b"\xed\xbf\xbf")
    assert make_safe_label_value("a\ud800") != make_safe_label_value("a\ud801")


@given(wild_text, wild_text)
def test_values_with_surrogates_stay_distinct_and_match_the_provider_elsewhere(
    first: str, second: str
) -> None:
    assume(first != second)
    assume(not (is_label_value(first) and is_label_value(second)))
    assert make_safe_label_value(first) != make_safe_label_value(second)
    try:
        first.encode()
    except UnicodeEncodeError:
        return
    if not is_label_value(first):  # the provider's hash where it can compute one
        assert make_safe_label_value(first).endswith(_md5(first.encode()))


def _md5(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()[:9]


# --- builders and selectors: cases 21-23 ------------------------------------------------


def test_labels_case_21() -> None:
    base = {
        "dag_id": "dag-6b24921d4",
        "task_id": "task-b6aca8991",
        "try_number": "1",
        "airflow_version": "3.3.2",
        "kubernetes_executor": "True",
    }
    kwargs = {"dag_id": "dag*", "task_id": "task*", "try_number": 1, "airflow_version": "3.3.2"}
    assert build_labels_for_k8s_executor_pod(**kwargs) == base  # type: ignore[arg-type]
    assert build_labels_for_k8s_executor_pod(
        **kwargs,  # type: ignore[arg-type]
        airflow_worker=2,
        map_index=2,
        run_id="2",
    ) == base | {"airflow-worker": "2", "map_index": "2", "run_id": "2"}


def test_labels_worker_zero_counts_and_version_plus_becomes_dash() -> None:
    labels = build_labels_for_k8s_executor_pod(
        dag_id="d", task_id="t", try_number=1, airflow_worker=0, airflow_version="3.3.2+astro.1"
    )
    assert labels["airflow-worker"] == "0"
    assert labels["airflow_version"] == "3.3.2-astro.1"
    assert "map_index" not in build_labels_for_k8s_executor_pod(
        dag_id="d", task_id="t", try_number=1, map_index=-1, include_version=False
    )


def test_labels_need_a_version_to_label_it() -> None:
    with pytest.raises(ValueError, match="airflow_version is required"):
        build_labels_for_k8s_executor_pod(dag_id="d", task_id="t", try_number=1)
    assert airflow_version_label("3.3.0 weird!") == make_safe_label_value("3.3.0 weird!")


def test_selector_case_22() -> None:
    assert build_selector_for_k8s_executor_pod(dag_id="dag*", task_id="task*", try_number=1) == (
        "dag_id=dag-6b24921d4,kubernetes_executor=True,task_id=task-b6aca8991,try_number=1,"
        "airflow-worker"
    )
    assert build_selector_for_k8s_executor_pod(
        dag_id="dag*", task_id="task*", try_number=1, airflow_worker=2, map_index=2, run_id="2"
    ) == (
        "airflow-worker=2,dag_id=dag-6b24921d4,kubernetes_executor=True,map_index=2,run_id=2,"
        "task_id=task-b6aca8991,try_number=1"
    )


def test_date_labels_case_23() -> None:
    aware = datetime.datetime(2020, 8, 24, tzinfo=datetime.timezone.utc)
    assert datetime_to_label_safe_datestring(aware) == "2020-08-24T00_00_00_plus_00_00"
    assert label_safe_datestring_to_datetime("2020-08-24T00_00_00_plus_00_00") == aware
    with pytest.raises(InvalidDateLabel):
        label_safe_datestring_to_datetime("yesterday")
    # A sub-second offset would be silently rounded by fromisoformat: refused instead.
    with pytest.raises(InvalidDateLabel, match="same date"):
        label_safe_datestring_to_datetime("2020-01-01T00_00_00_plus_00_00_00.000030")


@given(st.datetimes() | st.datetimes(timezones=st.timezones()))
def test_date_labels_round_trip_and_are_valid(value: datetime.datetime) -> None:
    label = datetime_to_label_safe_datestring(value)
    assert is_label_value(label)
    back = label_safe_datestring_to_datetime(label)
    # Compare the wall time and offset: equality of aware datetimes across zones is
    # undefined for times in a DST gap, and the label keeps the offset, not the zone.
    assert back.isoformat() == value.isoformat()


@given(airflow_ids, airflow_ids, st.integers(0, 100), st.none() | st.integers(-1, 10**6))
def test_built_labels_are_always_valid(
    dag_id: str, task_id: str, try_number: int, map_index: int | None
) -> None:
    labels = build_labels_for_k8s_executor_pod(
        dag_id=dag_id,
        task_id=task_id,
        try_number=try_number,
        map_index=map_index,
        airflow_worker="1",
        run_id=dag_id,
        airflow_version="3.3.2",
    )
    assert all(is_label_value(value) for value in labels.values())


def test_callback_labels() -> None:
    assert build_labels_for_callback_pod(scheduler_job_id=42, airflow_version="3.3.2") == {
        "airflow-workload-type": "callback",
        "kubernetes_executor": "True",
        "airflow-worker": "42",
        "airflow_version": "3.3.2",
    }


def test_selectors() -> None:
    assert watcher_selector(42) == PodSelector("airflow-worker=42,airflow_executor_done!=True")
    assert scheduler_pods_selector("job:1") == PodSelector(
        f"airflow-worker={make_safe_label_value('job:1')}"
    )
    assert live_pods_adoption_selector(7) == PodSelector(
        "kubernetes_executor=True,airflow-worker=7,airflow_executor_done!=True",
        "status.phase!=Succeeded",
    )
    assert completed_pods_adoption_selector(3) == PodSelector(
        "kubernetes_executor=True,airflow-worker!=3,airflow_executor_done!=True",
        "status.phase=Succeeded",
    )
    assert completed_pods_adoption_selector("3", [5, 10, 3]).label_selector == (
        "kubernetes_executor=True,airflow-worker notin (10,3,5),airflow_executor_done!=True"
    )
    assert callback_pods_selector().label_selector == "airflow-workload-type=callback"
    assert callback_pods_selector(42).label_selector == (
        "airflow-workload-type=callback,airflow-worker=42"
    )


# The provider's clean-up spelled as one regex with three alternatives (reference §3.2).
PROVIDER_STYLE_CLEANUP = re.compile(r"^[^a-z0-9A-Z]*|[^a-zA-Z0-9_\-\.]|[^a-z0-9A-Z]*$")


@given(st.one_of(hostile_text, label_alphabet_text, st.text(alphabet="-_.a\n:ü ", max_size=20)))
def test_cleanup_keeps_the_same_characters_as_the_provider_regex(value: str) -> None:
    cleaned = PROVIDER_STYLE_CLEANUP.sub("", value)
    expected = cleaned if cleaned == value and len(value) <= 63 else None
    safe = make_safe_label_value(value)
    if expected is not None and cleaned:
        assert safe == value
    elif cleaned:
        assert safe == f"{cleaned[:53]}-{safe[-9:]}"
