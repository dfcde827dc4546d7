"""parse_callback_log_path: as the regular expression it replaces reads paths, in linear time."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from k8s_workloads.pods import parse_callback_log_path

CALLBACK_ID = "019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e"

# The reference: the regular expression parse_callback_log_path used, right but slow
# (49 s on "executor_callbacks/" * 8000: it backtracks over every occurrence).
_REFERENCE = re.compile(
    r"(?:.*/)?executor_callbacks/(?P<dag_id>[^/]+)/(?P<run_id>.+)/(?P<callback_id>[^/]+?)(?:\.log)?"
)
_parts = st.sampled_from(
    ["executor_callbacks/", "executor_callbacks", "/", "//", "a", "b.log", ".log", "log", ".",
     "\n", "e", CALLBACK_ID, "run/id", "x.log.log"]
)  # fmt: skip


def reference(path: str | None) -> tuple[str, str, str] | None:
    match = _REFERENCE.fullmatch(path) if path else None
    return None if match is None else (match["dag_id"], match["run_id"], match["callback_id"])


@given(st.lists(_parts, max_size=12).map("".join) | st.text(max_size=40) | st.none())
def test_paths_read_as_the_reference_expression_reads_them(path: str | None) -> None:
    assert parse_callback_log_path(path) == reference(path)


def test_the_last_folder_that_fits_wins() -> None:
    path = f"logs/executor_callbacks/old/executor_callbacks/etl/r/1/{CALLBACK_ID}.log"
    assert parse_callback_log_path(path) == ("etl", "r/1", CALLBACK_ID) == reference(path)


def test_a_path_of_100_000_folders_is_read_at_once() -> None:
    # 1.9 MB: instant when linear; the old expression would backtrack for hours.
    folders = "executor_callbacks/" * 100_000
    assert parse_callback_log_path(folders) is None
    parsed = parse_callback_log_path(f"{folders}{CALLBACK_ID}.log")
    assert parsed == ("executor_callbacks", "executor_callbacks", CALLBACK_ID)
