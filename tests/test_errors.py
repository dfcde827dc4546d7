"""The one shape of the errors that name the field at fault (``k8s_workloads.errors``)."""

from __future__ import annotations

import pytest

from k8s_workloads.errors import FieldError
from k8s_workloads.pods.codec import InvalidAnnotations, annotations_to_key


def test_a_field_error_names_its_field_before_the_reason() -> None:
    error = FieldError("metadata.labels['dag_id']", "must be 63 characters or fewer")
    assert error.field == "metadata.labels['dag_id']"
    assert str(error) == "metadata.labels['dag_id']: must be 63 characters or fewer"
    assert isinstance(error, ValueError)


def test_the_codec_raises_the_shape_naming_the_bad_annotation() -> None:
    with pytest.raises(InvalidAnnotations) as raised:
        annotations_to_key({"dag_id": "d", "task_id": "t", "run_id": "r", "try_number": "x"}, {})
    assert isinstance(raised.value, FieldError)
    assert raised.value.field
    assert str(raised.value).startswith(f"{raised.value.field}: ")
