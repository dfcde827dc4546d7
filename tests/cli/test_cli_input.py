"""The CLI's input bounds and I/O faults: a refusal in one line, never a traceback.

The faults run the real console script in a subprocess: a closed standard input, a full
disk (/dev/full), a reader that went away (a closed pipe), each for every command.
"""

from __future__ import annotations

import io
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from k8s_workloads import cli, limits
from k8s_workloads.cli import main

V = ("--airflow-version", "3.3.2")
SCRIPT = "from k8s_workloads.cli import main; raise SystemExit(main())"
POSIX = pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/zero and /dev/full")
COMMANDS = [
    ("demo",),
    ("simulate",),
    ("resolve", "--example"),
    ("render", "task", *V),
    ("render", "callback", "--callback-id", "019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e", *V),
    ("airflow-config",),
    ("decode", *V),
]
DECODE_INPUT = b'{"dag_id": "d", "task_id": "t", "try_number": "1", "run_id": "r"}'


def run(*argv: str, stdin: str = "") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err, stdin=io.StringIO(stdin))
    return code, out.getvalue(), err.getvalue()


def one_line_refusal(code: int, out: str, err: str, *parts: str) -> None:
    assert (code, out) == (2, "")
    assert err.count("\n") == 1, err
    for part in parts:
        assert part in err


# --- input bounds -------------------------------------------------------------------------


def bomb(levels: int) -> str:
    lines = ["metadata:", "  annotations:", "    note: &l0 [lol, lol, lol, lol, lol, lol, lol]"]
    lines += [
        f"    l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * 7)}]"
        for level in range(1, levels + 1)
    ]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("option", ["--template", "--override"])
def test_a_yaml_alias_bomb_is_refused_naming_the_option_and_the_limit(
    tmp_path: Path, option: str
) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(bomb(9))  # 7**10 nodes from 500 bytes: a MemoryError traceback before
    code, out, err = run("render", "task", *V, option, str(path))
    one_line_refusal(code, out, err, f"render task: {option} {path}: refused: more than 100,000")
    assert "--max-yaml-nodes" in err


def test_aliases_in_a_normal_template_still_work_and_the_limit_can_be_set(tmp_path: Path) -> None:
    path = tmp_path / "template.yaml"
    path.write_text(
        "spec:\n  initContainers:\n  - name: init\n    env: &env [{name: A, value: '1'}]\n"
        "  containers:\n  - name: base\n    env: *env\n"
    )
    code, out, err = run("render", "task", *V, "--template", str(path), "-o", "json")
    assert (code, err) == (0, "")
    assert out.count('"name": "A"') == 2
    code, out, err = run("render", "task", *V, "--template", str(path), "--max-yaml-nodes", "10")
    one_line_refusal(code, out, err, "more than 10 YAML nodes")


def test_deep_yaml_is_refused_not_a_recursion_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("[" * 10_000 + "]" * 10_000)
    code, out, err = run("render", "task", *V, "--template", str(path))
    one_line_refusal(code, out, err, "nested more than 100 deep")


@POSIX
@pytest.mark.parametrize(
    "argv",
    [
        ("decode", "/dev/zero"),
        ("render", "task", *V, "--template", "/dev/zero"),
        ("render", "task", *V, "--override", "/dev/zero"),
        ("render", "task", *V, "--workload", "/dev/zero"),
    ],
)
def test_an_endless_file_is_refused_after_the_limit_not_read_to_its_end(
    argv: tuple[str, ...],
) -> None:
    code, out, err = run(*argv)
    one_line_refusal(code, out, err, "/dev/zero is over 4,194,304 bytes, the input limit")


def test_the_input_limit_is_inclusive(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(limits, "MAX_INPUT_BYTES", 20)
    path = tmp_path / "a.json"
    path.write_bytes(b'{"dag_id": "d"}' + b" " * 5)  # 20 bytes
    code, _, err = run("decode", str(path), "--airflow-version", "3.3.2")
    assert "input limit" not in err
    assert code == 1  # read, and found to name no task
    path.write_bytes(path.read_bytes() + b" ")
    one_line_refusal(*run("decode", str(path)), "is over 20 bytes, the input limit")
    one_line_refusal(*run("decode", stdin=" " * 21), "decode: - is over 20 bytes")


def test_the_cli_shows_the_librarys_limits() -> None:
    assert cli.MAX_INPUT_BYTES == limits.MAX_INPUT_BYTES
    assert cli.MAX_YAML_NODES == limits.MAX_YAML_NODES


# --- numbers that JSON has not -------------------------------------------------------------


def _strict_json(text: str) -> object:
    def refuse(name: str) -> object:
        raise AssertionError(f"{name} in the output")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("output", ["json", "yaml"])
@pytest.mark.parametrize("value", [".nan", ".inf", "-.Inf"])
def test_a_template_number_json_has_not_is_refused_naming_the_field(
    tmp_path: Path, output: str, value: str
) -> None:
    # render -o json wrote NaN, which no JSON reader (nor the API server) takes.
    path = tmp_path / "template.yaml"
    path.write_text(f"spec:\n  containers: [{{name: base}}]\n  activeDeadlineSeconds: {value}\n")
    code, out, err = run("render", "task", *V, "--template", str(path), "-o", output)
    one_line_refusal(code, out, err, "spec.activeDeadlineSeconds")


@given(
    st.sampled_from([math.nan, math.inf, -math.inf]) | st.floats() | st.integers(-(2**40), 2**40)
)
@settings(max_examples=40)  # each renders a pod
def test_render_json_output_is_strict_json_or_a_refusal(value: float) -> None:
    written = "spec: {activeDeadlineSeconds: " + yaml.safe_dump(value).split("\n")[0] + "}"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.yaml"
        path.write_text(written)
        code, out, err = run("render", "task", *V, "--template", str(path), "-o", "json")
    if code == 0:
        pod = _strict_json(out)
        assert isinstance(pod, dict)
        assert pod["spec"]["activeDeadlineSeconds"] == value
    else:
        one_line_refusal(code, out, err, "spec.activeDeadlineSeconds")


def test_a_workload_with_nan_is_not_json() -> None:
    workload = '{"ti": {"dag_id": "d", "task_id": "t"}, "note": NaN}'
    code, out, err = run("render", "task", *V, "--workload", "-", stdin=workload)
    one_line_refusal(code, out, err, "--workload -: not JSON: NaN (JSON has no NaN or Infinity)")


# --- I/O faults ---------------------------------------------------------------------------


def _close_stdin() -> None:
    os.close(0)


@POSIX
@pytest.mark.parametrize(
    "argv",
    [("resolve",), ("decode",), ("render", "task", *V, "--workload", "-")],
)
def test_a_closed_standard_input_is_one_line_and_exit_2(argv: tuple[str, ...]) -> None:
    completed = subprocess.run(
        [sys.executable, "-c", SCRIPT, *argv],
        preexec_fn=_close_stdin,  # the child starts with fd 0 closed, as after <&-
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 2
    assert completed.stderr.endswith("standard input is closed\n")
    assert completed.stderr.count("\n") == 1, completed.stderr


@POSIX
@pytest.mark.parametrize("argv", COMMANDS)
def test_a_full_disk_is_one_line_and_exit_1(argv: tuple[str, ...]) -> None:
    with open("/dev/full", "w") as full:  # noqa: PTH123
        completed = subprocess.run(
            [sys.executable, "-c", SCRIPT, *argv],
            input=DECODE_INPUT.decode(),
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    assert completed.returncode == 1
    assert completed.stderr.endswith("cannot write the output: No space left on device\n")
    assert completed.stderr.count("\n") == 1, completed.stderr  # no "Exception ignored"


@POSIX
@pytest.mark.parametrize("argv", [*COMMANDS, ("render", "task", "--help")])
def test_a_closed_pipe_ends_quietly(argv: tuple[str, ...]) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None
    assert child.stdin is not None
    assert child.stderr is not None
    child.stdout.close()  # the reader goes away before a line is written (| head -0)
    child.stdin.write(DECODE_INPUT)
    child.stdin.close()
    stderr = child.stderr.read()
    child.stderr.close()
    code = child.wait()
    assert stderr == b""  # no traceback, no "Exception ignored ... BrokenPipeError"
    if "--help" in argv:
        # argparse writes the help itself: from 3.11 it drops a failed write (exit 0),
        # before that the failure shows at the flush (141). Quiet either way.
        assert code in {0, cli.EXIT_CLOSED_PIPE}
    else:
        assert code == cli.EXIT_CLOSED_PIPE
