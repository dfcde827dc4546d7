"""The console script as a whole (:mod:`k8s_workloads.cli._main`): its version, its
entry points, its light import, and errors that end in one line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from k8s_workloads import __version__
from k8s_workloads.cli import main
from tests.support.cli import CALLBACK_ID, run
from tests.support.fresh_python import loaded_after


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["--version"])
    assert caught.value.code == 0
    assert capsys.readouterr().out.strip() == f"k8s-workloads {__version__}"


def test_python_dash_m_runs_the_same_command() -> None:
    annotations = json.dumps({"dag_id": "d", "task_id": "t", "try_number": "1"})
    ran = subprocess.run(
        [sys.executable, "-m", "k8s_workloads", "decode"],
        input=annotations,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (ran.returncode, ran.stderr) == (0, "")
    assert ran.stdout == run("decode", stdin=annotations)[1]
    bad = subprocess.run(
        [sys.executable, "-m", "k8s_workloads", "decode"],
        input="{}",
        capture_output=True,
        text=True,
        check=False,
    )
    code, _, err = run("decode", stdin="{}")
    assert (bad.returncode, bad.stderr) == (code, err)  # the same exit code and message
    assert code != 0


def test_console_script_runs_as_a_module_entry_point() -> None:
    completed = subprocess.run(
        [sys.executable, "-c", "from k8s_workloads.cli import main; raise SystemExit(main())",
         "decode", "--airflow-version", "3.3.0"],
        input=json.dumps({"callback_id": CALLBACK_ID}),
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["id"] == CALLBACK_ID


def test_cli_import_stays_light() -> None:
    heavy = ("yaml", "kubernetes", "k8s_workloads.pods.build", "k8s_workloads.pods.payload")
    assert loaded_after("import k8s_workloads.cli", *heavy, "slugify") == []


@pytest.mark.parametrize(
    "argv",
    [
        ("decode", "{path}"),
        ("render", "task", "--airflow-version", "3.3.2", "--workload", "{path}"),
    ],
)
def test_a_huge_integer_is_one_line_and_exit_2(tmp_path: Path, argv: tuple[str, ...]) -> None:
    # Issue 11, item 7: a 5,000-digit number used to end in a ValueError traceback.
    path = tmp_path / "huge.json"
    path.write_text('{"dag_id": "d", "task_id": "t", "token": "x", "n": ' + "1" * 5000 + "}")
    code, out, err = run(*(part.format(path=path) for part in argv))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert "not JSON" in err
