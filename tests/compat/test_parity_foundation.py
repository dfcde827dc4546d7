"""Parity with the released provider (apache-airflow-providers-cncf-kubernetes 10.25.0).

Every test calls the provider's own function next to ours on the same generated input.
Where the provider's output is valid Kubernetes, ours must be identical; where it is not,
ours must be valid and the input must fall under one of the documented deliberate
differences (module docstrings of pods/labels.py and pods/codec.py; reference §2.4, §3.2, §3.4):

* a label value with nothing alphanumeric: provider ``-<hash>``, ours ``<hash>``;
* a pod id whose slug is empty: provider ``""`` (or ``-<random>``), ours a hash;
* annotations the provider decodes to keys no pod of it can carry (empty ids or run id,
  try_number/map_index that are not plain ASCII integers, negative try_number,
  map_index below -1): ours raises :class:`InvalidAnnotations`.

One difference outside that list is pinned here too, so that it stays visible: a date
label of a datetime whose UTC offset has seconds is written identically by both, but only
ours reads it back (``test_date_label_with_a_seconds_offset_only_ours_reads_back``).

The module runs only where the provider is importable (``.venv-airflow``); elsewhere it is
reported as skipped. Nothing here touches the Airflow database: annotations that make the
provider look a run id up by date are never given to it.
"""

from __future__ import annotations

import datetime
import random
import re
import string
from importlib import metadata
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

pytest.importorskip(
    "airflow.providers.cncf.kubernetes.pod_generator",
    reason="provider parity runs in the Airflow environment (.venv-airflow)",
)

from airflow.providers.cncf.kubernetes import kubernetes_helper_functions as provider_helpers
from airflow.providers.cncf.kubernetes import pod_generator as provider_pod_generator
from airflow.providers.cncf.kubernetes.pod_generator import PodGenerator

from k8s_workloads.keys import TaskInstanceKey
from k8s_workloads.pods import labels as ours
from k8s_workloads.pods.codec import InvalidAnnotations, LegacyPodAnnotations, annotations_to_key
from k8s_workloads.pods.validation import is_dns1123_subdomain, is_label_value

pytestmark = pytest.mark.parity

AIRFLOW_VERSION = metadata.version("apache-airflow-core")
"""What the provider's label builder reads from the installed Airflow; ours is told."""

# --------------------------------------------------------------------------------------
# Strategies

_LABEL_CHARS = string.ascii_letters + string.digits + "-_."
_PUNCTUATION = string.punctuation + " \t\n"

_UNICODE_ALPHABET = st.one_of(
    st.characters(min_codepoint=0x80, max_codepoint=0x2FFF),
    st.sampled_from(_LABEL_CHARS),
)


def _texts(*, min_size: int = 0) -> st.SearchStrategy[str]:
    """Arbitrary text, label-ish text with punctuation, long, Unicode, valid label values."""
    return st.one_of(
        st.text(min_size=min_size, max_size=80),
        st.text(alphabet=_LABEL_CHARS + _PUNCTUATION, min_size=min_size, max_size=80),
        st.text(alphabet=_LABEL_CHARS + "*: ", min_size=50, max_size=300),
        st.text(alphabet=_UNICODE_ALPHABET, min_size=min_size, max_size=60),
        st.from_regex(
            r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
            if min_size
            else r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?",
            fullmatch=True,
        ),
    )


texts = _texts()
non_empty_texts = _texts(min_size=1)
label_ish_text = st.text(alphabet=_LABEL_CHARS + _PUNCTUATION, max_size=80)
long_text = st.text(alphabet=_LABEL_CHARS + "*: ", min_size=50, max_size=300)
unicode_text = st.text(alphabet=_UNICODE_ALPHABET, max_size=60)

_UTC_OFFSETS = st.integers(-(23 * 60 + 59), 23 * 60 + 59).map(
    lambda minutes: datetime.timezone(datetime.timedelta(minutes=minutes))
)
# Offsets of whole minutes: the ones real time zones and ISO 8601 have.
datetimes = st.datetimes(
    timezones=st.one_of(st.none(), st.just(datetime.timezone.utc), _UTC_OFFSETS)
)

_GENERATED_RUN_IDS = st.builds(
    lambda kind, moment: f"{kind}__{moment.isoformat()}",
    st.sampled_from(["manual", "scheduled", "backfill", "asset_triggered"]),
    datetimes,
)
run_ids = st.one_of(_GENERATED_RUN_IDS, texts)
non_empty_run_ids = st.one_of(_GENERATED_RUN_IDS, non_empty_texts)
ids = st.one_of(st.none(), st.sampled_from(["", "-", "...", "***", "_", "ß"]), texts)
"""dag/task ids for pod names: None, empty, punctuation-only or anything."""

# Text int() accepts (or not) that the provider never writes.
_ODD_INTEGERS = [
    "", " 1", "1 ", "\t2", "+1", "-1", "-2", "-10", "-0", "00", "007", "1_0", "1.0",
    "0x1", "one", "\u0663", "\uff11", "\u0967\u0968",
]  # fmt: skip
_IDENTITY_KEYS = {"dag_id", "task_id", "try_number", "map_index", "run_id"}
_DATE_KEYS = ("logical_date", "execution_date")
_RESERVED_KEYS = _IDENTITY_KEYS | set(_DATE_KEYS) | {"callback_id"}

_PLAIN_UNSIGNED = re.compile(r"[0-9]+")
_PLAIN_SIGNED = re.compile(r"-?[0-9]+")


def _mostly(draw: st.DrawFn) -> bool:
    """Usually True (and shrinks to False, so missing keys are explored)."""
    return draw(st.integers(0, 9)) > 0


@st.composite
def task_annotations(draw: st.DrawFn) -> dict[str, str]:
    """Task-pod annotations, mostly well-formed, never taking the provider's DB path."""
    annotations = draw(st.one_of(_well_formed_annotations(), _malformed_annotations()))
    if annotations.get("run_id"):
        # With a run id both decoders ignore the dates, so the provider stays off its DB.
        for key in _DATE_KEYS:
            if draw(st.booleans()):
                annotations[key] = draw(datetimes).isoformat()
    extras = draw(
        st.dictionaries(
            st.text(min_size=1, max_size=12).filter(lambda key: key not in _RESERVED_KEYS),
            st.text(max_size=12),
            max_size=3,
        )
    )
    return {**extras, **annotations}


@st.composite
def _well_formed_annotations(draw: st.DrawFn) -> dict[str, str]:
    """What the provider writes: ids, try_number, optional map_index and run_id."""
    annotations = {
        "dag_id": draw(non_empty_texts),
        "task_id": draw(non_empty_texts),
        "try_number": str(draw(st.integers(0, 10**6))),
    }
    if draw(st.booleans()):
        annotations["map_index"] = str(draw(st.integers(-1, 10**4)))
    if _mostly(draw):
        annotations["run_id"] = draw(non_empty_run_ids)
    return annotations


@st.composite
def _malformed_annotations(draw: st.DrawFn) -> dict[str, str]:
    """Missing keys, empty values, integers int() takes but the provider never writes."""
    annotations: dict[str, str] = {}
    if _mostly(draw):
        annotations["dag_id"] = draw(st.one_of(st.just(""), texts))
    if _mostly(draw):
        annotations["task_id"] = draw(st.one_of(st.just(""), texts))
    if _mostly(draw):
        annotations["try_number"] = draw(
            st.one_of(
                st.integers(0, 10**6).map(str),
                st.sampled_from(_ODD_INTEGERS),
                st.text(max_size=4),
            )
        )
    if draw(st.booleans()):
        annotations["map_index"] = draw(
            st.one_of(
                st.integers(-1, 10**4).map(str),
                st.sampled_from(_ODD_INTEGERS),
                st.text(max_size=4),
            )
        )
    if _mostly(draw):
        annotations["run_id"] = draw(st.one_of(st.just(""), run_ids))
    return annotations


def _documented_differences(annotations: dict[str, str]) -> list[str]:
    """Why ours refuses annotations the provider decodes (empty when it must not)."""
    reasons: list[str] = []
    if not annotations["dag_id"]:
        reasons.append("empty dag_id")
    if not annotations["task_id"]:
        reasons.append("empty task_id")
    if annotations.get("run_id") == "":
        reasons.append("empty run_id")
    if _PLAIN_UNSIGNED.fullmatch(annotations["try_number"]) is None:
        reasons.append("try_number not plain ASCII digits (or negative)")
    if "map_index" in annotations:
        if _PLAIN_SIGNED.fullmatch(annotations["map_index"]) is None:
            reasons.append("map_index not a plain ASCII integer")
        elif int(annotations["map_index"]) < -1:
            reasons.append("map_index below -1")
    return reasons


_HASH_SUFFIX = re.compile(r"-[0-9a-f]{9}")


def _random_suffix(length: int) -> re.Pattern[str]:
    return re.compile(rf"-[a-z0-9]{{{length}}}")


# --------------------------------------------------------------------------------------
# 1. make_safe_label_value


@given(value=texts)
def test_make_safe_label_value_matches_provider_where_valid(value: str) -> None:
    theirs = provider_pod_generator.make_safe_label_value(value)
    mine = ours.make_safe_label_value(value)
    assert is_label_value(mine)
    if is_label_value(theirs):
        event("provider valid: equal")
        assert mine == theirs
    else:
        # Nothing alphanumeric survives the clean-up: the provider's "-<hash>" (§3.2).
        event("provider invalid: documented -<hash>")
        assert _HASH_SUFFIX.fullmatch(theirs)
        assert mine == theirs[1:]


# --------------------------------------------------------------------------------------
# 2. create_unique_id


@given(dag_id=ids, task_id=ids, max_length=st.integers(10, 253))
def test_create_unique_id_matches_provider_where_valid(
    dag_id: str | None, task_id: str | None, max_length: int
) -> None:
    if not (dag_id or task_id):
        with pytest.raises(ValueError, match="Must supply either dag_id or task_id"):
            provider_helpers.create_unique_id(dag_id, task_id, max_length=max_length, unique=False)
        with pytest.raises(ValueError, match="Must supply either dag_id or task_id"):
            ours.create_unique_id(dag_id, task_id, max_length=max_length, unique=False)
        return
    theirs = provider_helpers.create_unique_id(dag_id, task_id, max_length=max_length, unique=False)
    mine = ours.create_unique_id(dag_id, task_id, max_length=max_length, unique=False)
    assert is_dns1123_subdomain(mine)
    assert len(mine) <= max_length
    if theirs and is_dns1123_subdomain(theirs) and len(theirs) <= 253:
        event("provider valid: equal")
        assert mine == theirs
    else:
        event("provider empty slug: documented")
        # The slug is empty (punctuation-only ids): the provider's "" (§2.4).
        assert theirs == ""
        assert re.fullmatch(r"[0-9a-f]{9}", mine)


@given(
    dag_id=ids,
    task_id=ids,
    max_length=st.integers(10, 253),
    seed=st.integers(0, 2**32),
)
def test_create_unique_id_with_suffix_matches_provider_shape(
    dag_id: str | None, task_id: str | None, max_length: int, seed: int
) -> None:
    if not (dag_id or task_id):
        return  # covered by the unique=False test
    theirs = provider_helpers.create_unique_id(dag_id, task_id, max_length=max_length)
    mine = ours.create_unique_id(
        dag_id, task_id, max_length=max_length, unique=True, rng=random.Random(seed)
    )
    again = ours.create_unique_id(
        dag_id, task_id, max_length=max_length, unique=True, rng=random.Random(seed)
    )
    assert mine == again
    assert _random_suffix(8).fullmatch(theirs[-9:])
    assert _random_suffix(8).fullmatch(mine[-9:])
    assert is_dns1123_subdomain(mine)
    assert len(mine) <= max_length
    if is_dns1123_subdomain(theirs):
        event("provider valid: same prefix")
        assert mine[:-9] == theirs[:-9]
    else:
        event("provider empty slug: documented")
        # Empty slug: the provider's "-<random>"; ours is "<hash>-<random>".
        assert theirs[:-9] == ""


# --------------------------------------------------------------------------------------
# 3. add_unique_suffix

pod_name_like = st.one_of(
    st.text(alphabet="abcxyz0189-.", max_size=300),
    st.from_regex(r"[a-z0-9]([-a-z0-9.]{0,280}[a-z0-9])?", fullmatch=True),
)


@given(
    name=st.one_of(pod_name_like, label_ish_text, unicode_text, long_text),
    rand_len=st.integers(1, 16),
    spare=st.integers(0, 290),
    seed=st.integers(0, 2**32),
)
def test_add_unique_suffix_matches_provider_prefix(
    name: str, rand_len: int, spare: int, seed: int
) -> None:
    max_len = rand_len + 1 + spare
    theirs = provider_helpers.add_unique_suffix(name=name, rand_len=rand_len, max_len=max_len)
    mine = ours.add_unique_suffix(
        name=name, rand_len=rand_len, max_len=max_len, rng=random.Random(seed)
    )
    width = rand_len + 1
    assert _random_suffix(rand_len).fullmatch(theirs[-width:])
    assert len(mine) <= max_len
    if is_dns1123_subdomain(theirs):
        event("provider valid: same prefix")
        assert _random_suffix(rand_len).fullmatch(mine[-width:])
        assert mine[:-width] == theirs[:-width]
    elif theirs[:-width] == "":
        event("provider -<random>: documented")
        # Nothing of the name is left: the provider's "-<random>", ours "<random>".
        assert re.fullmatch(rf"[a-z0-9]{{{rand_len}}}", mine)
        assert is_dns1123_subdomain(mine) or rand_len > 253
    else:
        # A name that is no DNS name stays one: neither helper sanitises, both cut alike.
        event("not a DNS name: same prefix")
        assert mine[:-width] == theirs[:-width]


# --------------------------------------------------------------------------------------
# 4. Label and selector builders

label_inputs = st.one_of(st.just(""), texts)


@given(
    dag_id=label_inputs,
    task_id=label_inputs,
    try_number=st.integers(0, 10**9),
    map_index=st.one_of(st.none(), st.integers(-3, 10**6)),
    run_id=st.one_of(st.none(), st.just(""), run_ids),
    airflow_worker=st.one_of(st.none(), st.integers(0, 10**6), label_inputs),
    logical_date=st.one_of(st.none(), datetimes),
)
def test_label_and_selector_builders_match_provider_where_valid(
    *,
    dag_id: str,
    task_id: str,
    try_number: int,
    map_index: int | None,
    run_id: str | None,
    airflow_worker: str | int | None,
    logical_date: datetime.datetime | None,
) -> None:
    # The same identity to both sides' label and selector builders.
    identity: dict[str, Any] = {
        "dag_id": dag_id,
        "task_id": task_id,
        "try_number": try_number,
        "airflow_worker": airflow_worker,
        "map_index": map_index,
        "logical_date": logical_date,
        "run_id": run_id,
    }
    theirs = PodGenerator.build_labels_for_k8s_executor_pod(**identity)
    mine = ours.build_labels_for_k8s_executor_pod(**identity, airflow_version=AIRFLOW_VERSION)
    their_selector = PodGenerator.build_selector_for_k8s_executor_pod(**identity)
    my_selector = ours.build_selector_for_k8s_executor_pod(**identity)
    assert all(is_label_value(value) for value in mine.values()), mine
    if all(is_label_value(value) for value in theirs.values()):
        event("provider valid: equal")
        assert mine == theirs
        assert my_selector == their_selector
    else:
        # Same keys; only the provider's invalid values ("-<hash>") differ.
        event("provider invalid: documented -<hash>")
        assert mine.keys() == theirs.keys()
        for key, value in mine.items():
            if value != theirs[key]:
                assert not is_label_value(theirs[key])
                assert theirs[key] == f"-{value}"


# --------------------------------------------------------------------------------------
# 5. Date label helpers


@given(moment=datetimes)
def test_date_label_helpers_match_provider_and_round_trip(moment: datetime.datetime) -> None:
    text = ours.datetime_to_label_safe_datestring(moment)
    assert text == provider_pod_generator.datetime_to_label_safe_datestring(moment)
    assert is_label_value(text)
    mine = ours.label_safe_datestring_to_datetime(text)
    theirs = provider_pod_generator.label_safe_datestring_to_datetime(text)
    for parsed in (mine, theirs):
        assert parsed == moment
        assert parsed.utcoffset() == moment.utcoffset()


# Whole minutes in (-24 h, 24 h) plus 1-59 seconds: never a whole-minute offset.
_SECONDS_OFFSETS = st.builds(
    lambda minutes, seconds: datetime.timezone(
        datetime.timedelta(minutes=minutes, seconds=seconds)
    ),
    st.integers(-24 * 60, 24 * 60 - 1),
    st.integers(1, 59),
)


@given(moment=st.datetimes(timezones=_SECONDS_OFFSETS))
def test_date_label_with_a_seconds_offset_only_ours_reads_back(moment: datetime.datetime) -> None:
    """Undocumented difference: offsets with seconds (zoneinfo LMT before ~1900).

    Both write the same label (``+00:19:32`` → ``_plus_00_19_32``); the provider's
    dateutil-based inverse cannot parse it back, ours does.
    """
    text = ours.datetime_to_label_safe_datestring(moment)
    assert text == provider_pod_generator.datetime_to_label_safe_datestring(moment)
    mine = ours.label_safe_datestring_to_datetime(text)
    assert mine == moment
    assert mine.utcoffset() == moment.utcoffset()
    with pytest.raises(ValueError, match="Unknown string format"):
        provider_pod_generator.label_safe_datestring_to_datetime(text)


# --------------------------------------------------------------------------------------
# 6. annotations_to_key


@given(annotations=task_annotations())
def test_annotations_to_key_matches_provider(annotations: dict[str, str]) -> None:
    try:
        theirs = provider_helpers.annotations_to_key(dict(annotations))
    except (KeyError, ValueError) as error:
        event(f"provider raises {type(error).__name__}: ours raises")
        with pytest.raises(InvalidAnnotations):
            annotations_to_key(annotations)
        return
    reasons = _documented_differences(annotations)
    if reasons:
        event("documented difference: ours raises")
        with pytest.raises(InvalidAnnotations):
            annotations_to_key(annotations)
        return
    event("both decode: equal")
    mine = annotations_to_key(annotations)
    assert isinstance(mine, TaskInstanceKey)
    assert mine.as_tuple() == tuple(theirs)


@pytest.mark.parametrize(
    ("annotations", "reason"),
    [
        ({"dag_id": "", "task_id": "t", "try_number": "1"}, "empty dag_id"),
        ({"dag_id": "d", "task_id": "", "try_number": "1"}, "empty task_id"),
        ({"dag_id": "d", "task_id": "t", "try_number": "1", "run_id": ""}, "empty run_id"),
        ({"dag_id": "d", "task_id": "t", "try_number": " 1"}, "try_number"),
        ({"dag_id": "d", "task_id": "t", "try_number": "+1"}, "try_number"),
        ({"dag_id": "d", "task_id": "t", "try_number": "-1"}, "try_number"),
        ({"dag_id": "d", "task_id": "t", "try_number": "1_0"}, "try_number"),
        ({"dag_id": "d", "task_id": "t", "try_number": "\u0663"}, "try_number"),
        ({"dag_id": "d", "task_id": "t", "try_number": "1", "map_index": "-2"}, "map_index"),
        ({"dag_id": "d", "task_id": "t", "try_number": "1", "map_index": "+3"}, "map_index"),
    ],
)
def test_annotations_to_key_documented_differences(
    annotations: dict[str, str], reason: str
) -> None:
    """The provider decodes these; ours refuses them, as documented."""
    provider_helpers.annotations_to_key(dict(annotations))
    assert any(reason in found for found in _documented_differences(annotations))
    with pytest.raises(InvalidAnnotations):
        annotations_to_key(annotations)


@given(
    dag_id=texts,
    task_id=texts,
    try_number=st.integers(0, 10**6),
    map_index=st.one_of(st.none(), st.integers(-1, 10**4)),
    run_id=st.sampled_from([None, ""]),
    date_key=st.sampled_from(_DATE_KEYS),
    moment=datetimes,
)
def test_annotations_without_run_id_but_with_a_date_are_legacy(
    *,
    dag_id: str,
    task_id: str,
    try_number: int,
    map_index: int | None,
    run_id: str | None,
    date_key: str,
    moment: datetime.datetime,
) -> None:
    """Ours only: the provider would query its database for these."""
    annotations = {"dag_id": dag_id, "task_id": task_id, "try_number": str(try_number)}
    if map_index is not None:
        annotations["map_index"] = str(map_index)
    if run_id is not None:
        annotations["run_id"] = run_id
    annotations[date_key] = moment.isoformat()
    with pytest.raises(LegacyPodAnnotations):
        annotations_to_key(annotations)


# --------------------------------------------------------------------------------------
# 7. Reference §8 cross-check cases, through both implementations


@pytest.mark.parametrize(
    ("dag_id", "task_id", "expected"),
    [
        pytest.param(None, "task-id", "task-id", id="case1"),
        pytest.param(None, "task_id", "task-id", id="case2"),
        pytest.param(None, "---task.id---", "task-id", id="case3"),
        pytest.param(None, ".task.id", "task-id", id="case4a"),
        pytest.param(None, "**task.id", "task-id", id="case4b"),
        pytest.param(None, "-90Abc*&", "90abc", id="case5"),
        pytest.param(
            None,
            "90A\u00e7Lb\u02c6\u02c6\u00e7\u02d9\u00df\u00df\u02dc\u02dc\u02d9c*a",
            "90aclb-c-ssss-c-a",
            id="case6",
        ),
        pytest.param(".dag.id", ".---task.id", "dag-id-task-id", id="case7"),
        pytest.param("-90Abc*&", "-90Abc*&", "90abc-90abc", id="case8"),
        pytest.param("0" * 254, None, "0" * 63, id="case10"),
    ],
)
def test_case_pod_ids(dag_id: str | None, task_id: str | None, expected: str) -> None:
    assert provider_helpers.create_unique_id(dag_id, task_id, unique=False) == expected
    assert ours.create_unique_id(dag_id, task_id, unique=False) == expected


def test_case9_long_dag_id_with_suffix() -> None:
    shape = re.compile(r"0{54}-[a-z0-9]{8}")
    theirs = provider_helpers.create_unique_id("0" * 254, unique=True)
    mine = ours.create_unique_id("0" * 254, unique=True, rng=random.Random(9))
    assert len(theirs) == len(mine) == 63
    assert shape.fullmatch(theirs)
    assert shape.fullmatch(mine)


@pytest.mark.parametrize(
    ("dag_id", "task_id"), [(None, None), ("", ""), ("", None), (None, "")], ids=str
)
def test_case11_no_ids(dag_id: str | None, task_id: str | None) -> None:
    with pytest.raises(ValueError, match="Must supply either dag_id or task_id"):
        provider_helpers.create_unique_id(dag_id, task_id)
    with pytest.raises(ValueError, match="Must supply either dag_id or task_id"):
        ours.create_unique_id(dag_id, task_id)


@pytest.mark.parametrize("max_length", [25, 100, 200, 300])
def test_case12_hyphenated_ids(max_length: int) -> None:
    dag_id = "dag-" * 16
    task_id = "task-" * 17
    base = (dag_id + task_id).strip("-")
    for implementation in (provider_helpers.create_unique_id, ours.create_unique_id):
        expected = base[:max_length]
        assert implementation(dag_id, task_id, max_length=max_length, unique=False) == expected
    theirs = provider_helpers.create_unique_id(dag_id, task_id, max_length=max_length)
    mine = ours.create_unique_id(
        dag_id, task_id, max_length=max_length, unique=True, rng=random.Random(12)
    )
    for result in (theirs, mine):
        assert result[:-9] == base[: max_length - 9].strip("-")
        assert _random_suffix(8).fullmatch(result[-9:])


@pytest.mark.parametrize("name", ["a" * 70, "a" * 253, "a" * 95, "aaa"], ids=len)
def test_case13_add_unique_suffix_lengths(name: str) -> None:
    theirs = provider_helpers.add_unique_suffix(name=name)
    mine = ours.add_unique_suffix(name=name, rng=random.Random(13))
    for result in (theirs, mine):
        assert len(result) <= 63
        base, _, suffix = result.rpartition("-")
        assert base == name[:54]
        assert re.fullmatch(r"[a-z0-9]{8}", suffix)


@pytest.mark.parametrize(
    ("name", "expected_base"),
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
def test_case14_add_unique_suffix_strips(name: str, expected_base: str) -> None:
    theirs = provider_helpers.add_unique_suffix(name=name)
    mine = ours.add_unique_suffix(name=name, rng=random.Random(14))
    for result in (theirs, mine):
        assert result[:-9] == expected_base
        assert _random_suffix(8).fullmatch(result[-9:])


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("my_dag_id", "my_dag_id", id="case15"),
        pytest.param("my_dag_id_" + "a" * 64, "my_dag_id_" + "a" * 43 + "-0ce114c45", id="case16"),
        pytest.param("dag*", "dag-6b24921d4", id="case17a"),
        pytest.param("task*", "task-b6aca8991", id="case17b"),
        pytest.param("a" * 63, "a" * 63, id="case18a"),
        pytest.param("a" * 64, "a" * 53 + "-014842d48", id="case18b"),
        pytest.param("__callback__", "callback-63f8b8db3", id="case19"),
        pytest.param("", "", id="empty"),
    ],
)
def test_case_safe_label_values(value: str, expected: str) -> None:
    assert provider_pod_generator.make_safe_label_value(value) == expected
    assert ours.make_safe_label_value(value) == expected


def test_case20_punctuation_only_label_value_is_a_deliberate_difference() -> None:
    theirs = provider_pod_generator.make_safe_label_value("***")
    mine = ours.make_safe_label_value("***")
    assert theirs == "-8a7ab20ec"  # upstream's invalid value, documented in §3.2
    assert not is_label_value(theirs)
    assert mine == "8a7ab20ec"
    assert is_label_value(mine)


_CASE21_BASE = {
    "dag_id": "dag-6b24921d4",
    "task_id": "task-b6aca8991",
    "try_number": "1",
    "kubernetes_executor": "True",
}


@pytest.mark.parametrize(
    ("extra_args", "extra_labels"),
    [
        pytest.param({}, {}, id="plain"),
        pytest.param({"airflow_worker": 2}, {"airflow-worker": "2"}, id="worker"),
        pytest.param({"map_index": 2}, {"map_index": "2"}, id="map_index"),
        pytest.param({"run_id": "2"}, {"run_id": "2"}, id="run_id"),
    ],
)
def test_case21_labels(extra_args: dict[str, int | str], extra_labels: dict[str, str]) -> None:
    expected = {**_CASE21_BASE, "airflow_version": AIRFLOW_VERSION, **extra_labels}
    worker = extra_args.get("airflow_worker")
    map_index = extra_args.get("map_index")
    run_id = extra_args.get("run_id")
    assert not isinstance(map_index, str)
    assert not isinstance(run_id, int)
    identity: dict[str, Any] = {
        "dag_id": "dag*",
        "task_id": "task*",
        "try_number": 1,
        "airflow_worker": worker,
        "map_index": map_index,
        "run_id": run_id,
    }
    theirs = PodGenerator.build_labels_for_k8s_executor_pod(**identity)
    mine = ours.build_labels_for_k8s_executor_pod(**identity, airflow_version=AIRFLOW_VERSION)
    assert theirs == expected
    assert mine == expected


def test_case22_selectors() -> None:
    without_worker = (
        "dag_id=dag-6b24921d4,kubernetes_executor=True,task_id=task-b6aca8991,"
        "try_number=1,airflow-worker"
    )
    with_everything = (
        "airflow-worker=2,dag_id=dag-6b24921d4,kubernetes_executor=True,map_index=2,"
        "run_id=2,task_id=task-b6aca8991,try_number=1"
    )
    assert (
        PodGenerator.build_selector_for_k8s_executor_pod(
            dag_id="dag*", task_id="task*", try_number=1
        )
        == without_worker
    )
    assert (
        ours.build_selector_for_k8s_executor_pod(dag_id="dag*", task_id="task*", try_number=1)
        == without_worker
    )
    assert (
        PodGenerator.build_selector_for_k8s_executor_pod(
            dag_id="dag*", task_id="task*", try_number=1, airflow_worker=2, map_index=2, run_id="2"
        )
        == with_everything
    )
    assert (
        ours.build_selector_for_k8s_executor_pod(
            dag_id="dag*", task_id="task*", try_number=1, airflow_worker=2, map_index=2, run_id="2"
        )
        == with_everything
    )


def test_case23_date_labels() -> None:
    aware = datetime.datetime(2020, 8, 24, tzinfo=datetime.timezone.utc)
    expected = "2020-08-24T00_00_00_plus_00_00"
    assert provider_pod_generator.datetime_to_label_safe_datestring(aware) == expected
    assert ours.datetime_to_label_safe_datestring(aware) == expected
    naive = datetime.datetime(2021, 3, 4, 5, 6, 7, 891011)  # noqa: DTZ001 - naive on purpose
    for to_label, from_label in (
        (
            provider_pod_generator.datetime_to_label_safe_datestring,
            provider_pod_generator.label_safe_datestring_to_datetime,
        ),
        (ours.datetime_to_label_safe_datestring, ours.label_safe_datestring_to_datetime),
    ):
        assert from_label(to_label(naive)) == naive
        assert from_label(to_label(naive)).tzinfo is None
        assert from_label(expected) == aware
