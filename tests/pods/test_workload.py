"""What runs in a worker pod (:mod:`k8s_workloads.pods.workload`): the workload's container
args, and a callback's ids read back from its log path."""

from __future__ import annotations

import pytest

from k8s_workloads.pods import (
    parse_callback_log_path,
    workload_command_args,
)
from tests.support.pod_builds import (
    CALLBACK_ID,
)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (
            f"executor_callbacks/etl/scheduled__2026-01-01/{CALLBACK_ID}",
            ("etl", "scheduled__2026-01-01", CALLBACK_ID),
        ),
        (
            f"/logs/executor_callbacks/etl/run/with/slash/{CALLBACK_ID}.log",
            ("etl", "run/with/slash", CALLBACK_ID),
        ),
        ("dag_id=etl/run_id=r/task_id=t/attempt=1.log", None),
        ("", None),
        (None, None),
    ],
)  # fmt: skip
def test_parse_callback_log_path(path: str | None, expected: tuple[str, str, str] | None) -> None:
    assert parse_callback_log_path(path) == expected


def test_workload_command_args() -> None:
    assert workload_command_args('{"a":1}') == [
        "python", "-m", "airflow.sdk.execution_time.execute_workload", "--json-string", '{"a":1}',
    ]  # fmt: skip
    assert workload_command_args({"a": 1})[-1] == '{"a":1}'
    with pytest.raises(TypeError, match="JSON string or a mapping"):
        workload_command_args(5)  # type: ignore[arg-type]
