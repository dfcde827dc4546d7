"""``decode`` and ``demo`` (:mod:`k8s_workloads.cli._decode`): annotations to the workload
key they describe.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import CALLBACK_ID, run
from tests.support.json_errors import decoder_error


def test_decode_task_from_stdin() -> None:
    code, out, err = run(
        "decode", stdin=json.dumps({"dag_id": "d", "task_id": "t", "try_number": "1"})
    )
    assert (code, err) == (0, "")
    assert json.loads(out) == {
        "kind": "task", "dag_id": "d", "task_id": "t", "run_id": None,
        "try_number": 1, "map_index": -1,
    }  # fmt: skip


def test_decode_callback_from_file(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text(json.dumps({"callback_id": CALLBACK_ID}))
    code, out, _ = run(
        "decode", str(path), "--labels", '{"airflow-workload-type": "callback"}',
        "--airflow-version", "3.3.2",
    )  # fmt: skip
    assert code == 0
    assert json.loads(out) == {"kind": "callback", "id": CALLBACK_ID}


def test_decode_callback_gated_off_is_an_error() -> None:
    code, out, err = run(
        "decode", "--airflow-version", "3.2.0", stdin=json.dumps({"callback_id": CALLBACK_ID})
    )
    assert code == 1
    assert out == ""
    assert "CallbackAnnotationsUnsupported" in err


@pytest.mark.parametrize(
    ("argv", "stdin", "message"),
    [
        (["decode"], "{not json", "not JSON"),
        (["decode"], "[1, 2]", "expected a JSON object"),
        (["decode", "/no/such/file.json"], "", "cannot read"),
        (["decode", "--labels", "[]"], "{}", "--labels: expected a JSON object"),
        (["decode", "--airflow-version", "three"], "{}", "not a PEP 440 version"),
        (["decode"], "[" * 100_000, f"-: not JSON: {decoder_error('[' * 100_000)}"),
    ],
)
def test_decode_usage_errors(argv: list[str], stdin: str, message: str) -> None:
    code, out, err = run(*argv, stdin=stdin)
    assert code == 2
    assert out == ""
    assert message in err


def test_decode_a_file_that_is_not_utf8_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_bytes(b"\xff{}")
    assert run("decode", str(path)) == (2, "", f"k8s-workloads decode: {path} is not UTF-8 text\n")


def test_decode_invalid_annotations_exit_1_naming_the_field() -> None:
    code, _, err = run("decode", stdin=json.dumps({"dag_id": "d", "task_id": "t"}))
    assert code == 1
    assert "try_number: missing" in err


def test_demo_decodes_every_bundled_example() -> None:
    code, out, _ = run("demo")
    assert code == 0
    assert out.count("->") == 6
    assert '"kind": "callback"' in out
    assert "CallbackAnnotationsUnsupported" in out
    assert "LegacyPodAnnotations" in out
