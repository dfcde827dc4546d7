from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from k8s_workloads import __version__
from k8s_workloads.cli import main

CALLBACK_ID = "019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e"


def run(*argv: str, stdin: str = "") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err, stdin=io.StringIO(stdin))
    return code, out.getvalue(), err.getvalue()


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["--version"])
    assert caught.value.code == 0
    assert capsys.readouterr().out.strip() == f"k8s-workloads {__version__}"


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
    ],
)
def test_decode_usage_errors(argv: list[str], stdin: str, message: str) -> None:
    code, out, err = run(*argv, stdin=stdin)
    assert code == 2
    assert out == ""
    assert message in err


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


def test_console_script_runs_as_a_module_entry_point() -> None:
    completed = subprocess.run(
        [sys.executable, "-c", "from k8s_workloads.cli import main; raise SystemExit(main())",
         "decode", "--airflow-version", "3.3.0"],
        input=json.dumps({"callback_id": CALLBACK_ID}),
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["id"] == CALLBACK_ID
