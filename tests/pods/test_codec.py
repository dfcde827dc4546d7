from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from k8s_workloads.compat import CallbackWorkloadsUnsupported
from k8s_workloads.keys import CallbackKey, GenericKey, TaskInstanceKey, WorkloadKey
from k8s_workloads.pods.codec import (
    CallbackAnnotationsUnsupported,
    InvalidAnnotations,
    LegacyPodAnnotations,
    annotations_to_key,
    is_callback_pod,
    key_to_annotations,
)
from k8s_workloads.testing.strategies import workload_keys

CALLBACK_ID = "019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e"
V33 = "3.3.0"
TASK = {"dag_id": "dag", "task_id": "task", "try_number": "2", "run_id": "run"}


def test_task_pod() -> None:
    assert annotations_to_key(TASK) == TaskInstanceKey("dag", "task", "run", 2, -1)
    assert annotations_to_key(TASK | {"map_index": "3"}) == TaskInstanceKey(
        "dag", "task", "run", 2, 3
    )


def test_task_pod_without_run_id_or_date_decodes_with_none() -> None:
    annotations = {"dag_id": "dag", "task_id": "task", "try_number": "1"}
    assert annotations_to_key(annotations) == TaskInstanceKey("dag", "task", None)


@pytest.mark.parametrize("date_key", ["logical_date", "execution_date"])
def test_legacy_pod_is_a_typed_error_not_a_database_lookup(date_key: str) -> None:
    annotations = {"dag_id": "d", "task_id": "t", "try_number": "1", date_key: "2024-01-01"}
    with pytest.raises(LegacyPodAnnotations, match=f"only by {date_key}") as caught:
        annotations_to_key(annotations)
    assert caught.value.field == "run_id"
    assert isinstance(caught.value, InvalidAnnotations)


def test_run_id_wins_over_dates() -> None:
    key = annotations_to_key(TASK | {"logical_date": "2024-01-01T00:00:00+00:00"})
    assert isinstance(key, TaskInstanceKey)
    assert key.run_id == "run"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"dag_id": None}, "dag_id"),
        ({"task_id": None}, "task_id"),
        ({"try_number": None}, "try_number"),
        ({"try_number": "one"}, "try_number"),
        ({"try_number": " 1"}, "try_number"),
        ({"try_number": "+1"}, "try_number"),
        ({"try_number": "1_0"}, "try_number"),
        ({"try_number": "٣"}, "try_number"),
        ({"try_number": "-1"}, "try_number"),
        ({"try_number": 1}, "try_number"),
        ({"try_number": "9" * 5000}, "try_number"),
        ({"try_number": "2147483648"}, "try_number"),  # more than Airflow stores
        ({"map_index": "x"}, "map_index"),
        ({"map_index": "9" * 30}, "map_index"),
        ({"map_index": "-2"}, "map_index"),
        ({"dag_id": ""}, "dag_id"),
        ({"dag_id": ["a"]}, "dag_id"),
        ({"run_id": ""}, "run_id"),
        ({"run_id": 5}, "run_id"),
    ],
)
def test_bad_task_annotations_name_the_field(change: dict[str, Any], field: str) -> None:
    annotations = {k: v for k, v in (TASK | change).items() if v is not None}
    with pytest.raises(InvalidAnnotations) as caught:
        annotations_to_key(annotations)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}: ")


def test_callback_pod_by_annotation_or_label() -> None:
    key = CallbackKey(CALLBACK_ID)
    by_annotation = annotations_to_key({"callback_id": CALLBACK_ID}, airflow_version=V33)
    assert by_annotation == key
    by_label = annotations_to_key(
        {"callback_id": CALLBACK_ID, "dag_id": "d", "run_id": "r"},
        {"airflow-workload-type": "callback"},
        airflow_version="3.3.0rc1",
    )
    assert by_label == key


def test_callback_pod_never_decodes_as_a_task_even_with_task_annotations() -> None:
    annotations = TASK | {"callback_id": CALLBACK_ID}
    assert annotations_to_key(annotations, airflow_version=V33) == CallbackKey(CALLBACK_ID)


def test_callback_label_without_callback_id_is_an_error_not_a_task() -> None:
    with pytest.raises(InvalidAnnotations) as caught:
        annotations_to_key(TASK, {"airflow-workload-type": "callback"}, airflow_version=V33)
    assert caught.value.field == "callback_id"


@pytest.mark.parametrize("version", [None, "3.2.2", "2.11.0"])
def test_callback_pods_are_not_decoded_below_3_3(version: str | None) -> None:
    with pytest.raises(CallbackAnnotationsUnsupported) as caught:
        annotations_to_key({"callback_id": CALLBACK_ID}, airflow_version=version)
    # Catchable as either a bad-annotation error or the gate's own error.
    assert isinstance(caught.value, InvalidAnnotations)
    assert not isinstance(caught.value, CallbackWorkloadsUnsupported)
    assert "Airflow 3.3+" in str(caught.value)


def test_task_pods_decode_the_same_below_3_3() -> None:
    assert annotations_to_key(TASK, airflow_version="3.2.0") == annotations_to_key(TASK)


@pytest.mark.parametrize("bad_id", ["", "nope", CALLBACK_ID.upper(), 7])
def test_bad_callback_ids(bad_id: object) -> None:
    with pytest.raises(InvalidAnnotations) as caught:
        annotations_to_key({"callback_id": bad_id}, airflow_version=V33)
    assert caught.value.field == "callback_id"


def test_unknown_workload_type_label() -> None:
    with pytest.raises(InvalidAnnotations, match="unknown workload type 'trigger'"):
        annotations_to_key(TASK, {"airflow-workload-type": "trigger"})


@pytest.mark.parametrize("annotations", [None, [], "dag_id=x", 5])
def test_non_mapping_annotations(annotations: object) -> None:
    with pytest.raises(InvalidAnnotations) as caught:
        annotations_to_key(annotations)  # type: ignore[arg-type]
    assert caught.value.field == "metadata.annotations"
    with pytest.raises(InvalidAnnotations, match=r"metadata\.labels"):
        annotations_to_key(TASK, ["labels"])  # type: ignore[arg-type]


def test_is_callback_pod() -> None:
    assert is_callback_pod({"callback_id": "x"}, None)
    assert is_callback_pod({}, {"airflow-workload-type": "callback"})
    assert not is_callback_pod(TASK, {"airflow-workload-type": "task"})
    assert not is_callback_pod(None, None)


def test_key_to_annotations() -> None:
    assert key_to_annotations(TaskInstanceKey("d", "t", "r", 3, -1)) == {
        "dag_id": "d",
        "task_id": "t",
        "try_number": "3",
        "run_id": "r",
    }
    assert key_to_annotations(TaskInstanceKey("d", "t", None, 1, 0)) == {
        "dag_id": "d",
        "task_id": "t",
        "try_number": "1",
        "map_index": "0",
    }
    assert key_to_annotations(CallbackKey(CALLBACK_ID)) == {"callback_id": CALLBACK_ID}


@given(workload_keys(generic=True))
def test_round_trip(key: WorkloadKey) -> None:
    annotations = key_to_annotations(key)
    assert all(isinstance(v, str) for v in annotations.values())
    assert annotations_to_key(annotations, airflow_version=V33) == key


annotation_keys = st.sampled_from(
    ["dag_id", "task_id", "try_number", "map_index", "run_id", "callback_id", "workload_id",
     "logical_date", "execution_date", "other"]
)  # fmt: skip
annotation_values = st.one_of(
    st.text(max_size=40), st.integers(-3, 3).map(str), st.uuids().map(str)
)


@given(
    st.dictionaries(st.one_of(annotation_keys, st.text(max_size=10)), annotation_values),
    st.none()
    | st.dictionaries(
        st.sampled_from(["airflow-workload-type", "x"]),
        st.sampled_from(["callback", "generic"]) | st.text(max_size=10),
    ),
    st.sampled_from([None, "3.2.0", "3.3.0"]),
)
def test_decoding_any_strings_raises_only_invalid_annotations(
    annotations: dict[str, str], labels: dict[str, str] | None, version: str | None
) -> None:
    try:
        key = annotations_to_key(annotations, labels, airflow_version=version)
    except InvalidAnnotations as error:
        field = error.field
        assert field
    else:
        assert isinstance(key, (TaskInstanceKey, CallbackKey, GenericKey))


@given(
    st.dictionaries(
        st.one_of(annotation_keys, st.text(max_size=5)),
        st.one_of(st.none(), st.integers(), st.floats(), st.lists(st.integers()), st.text()),
    )
)
def test_decoding_raw_json_values_raises_only_invalid_annotations(
    annotations: dict[str, object],
) -> None:
    try:
        key = annotations_to_key(annotations, airflow_version=V33)
    except InvalidAnnotations as error:
        field = error.field
        assert field
    else:
        # Whatever decodes re-encodes to annotations that decode to the same key.
        assert annotations_to_key(key_to_annotations(key), airflow_version=V33) == key


_FIELD_VALUES = st.one_of(
    st.none(),
    st.integers(min_value=-3, max_value=12),
    st.sampled_from(["", "0", "1", "-1", "07", " 2", "2.0", "1e3", "x", "٣"]),
    st.text(max_size=12),
)


@given(
    st.dictionaries(
        st.sampled_from(["dag_id", "task_id", "try_number", "run_id", "map_index", "logical_date"]),
        _FIELD_VALUES,
        max_size=6,
    )
)
def test_the_cached_decoding_is_the_checked_one(annotations: dict[str, Any]) -> None:
    from k8s_workloads.pods import codec  # noqa: PLC0415

    def outcome(decode: Any) -> object:
        try:
            return decode(annotations)
        except Exception as error:  # noqa: BLE001 - compared, type and message
            return (type(error), str(error))

    for _ in range(2):  # the second call reads the cache
        assert outcome(codec._decode_task) == outcome(codec._decode_task_checked)


# --- generic workloads (issue 30, item 5) ----------------------------------------------------


def test_a_generic_pod_decodes_by_its_label_or_annotation_with_no_version() -> None:
    key = GenericKey("job-1")
    assert key_to_annotations(key) == {"workload_id": "job-1"}
    for labels in ({"airflow-workload-type": "generic"}, None, {}):
        assert annotations_to_key({"workload_id": "job-1"}, labels) == key
    # Task annotations beside it (an executor's own) do not make it a task pod.
    assert annotations_to_key(TASK | {"workload_id": "job-1"}) == key


@pytest.mark.parametrize(
    ("annotations", "labels", "field"),
    [
        ({}, {"airflow-workload-type": "generic"}, "workload_id"),
        ({"workload_id": ""}, None, "workload_id"),
        ({"workload_id": "a\nb"}, None, "workload_id"),
        ({"workload_id": 5}, None, "workload_id"),
        ({"workload_id": "j", "callback_id": CALLBACK_ID}, None, "callback_id"),
        ({"workload_id": "j"}, {"airflow-workload-type": ["generic"]}, "airflow-workload-type"),
    ],
)
def test_a_bad_generic_pod_names_the_field(
    annotations: dict[str, object], labels: dict[str, object] | None, field: str
) -> None:
    with pytest.raises(InvalidAnnotations) as caught:
        annotations_to_key(annotations, labels, airflow_version=V33)
    assert caught.value.field == field


def test_a_callback_label_wins_over_a_workload_id() -> None:
    labels = {"airflow-workload-type": "callback"}
    annotations = {"callback_id": CALLBACK_ID, "workload_id": "j"}
    assert annotations_to_key(annotations, labels, airflow_version=V33) == CallbackKey(CALLBACK_ID)
