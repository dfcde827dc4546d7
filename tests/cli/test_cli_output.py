"""Every text output of the CLI under hostile text (issue 11, items 2, 8 and 10).

Lone surrogates (``"\\ud800"``, which JSON and YAML can spell and UTF-8 cannot write)
must not crash any command; control characters and line separators must never reach a
text output raw (one value, one line; no forged lines, no terminal escapes); JSON
outputs stay valid JSON; and no output or message shows an Execution API token.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from k8s_workloads.cli import main
from k8s_workloads.pods import workload_command_args
from k8s_workloads.pods.validation import is_label_value
from k8s_workloads.sim import simulate
from k8s_workloads.sim.scenario import parse_scenario
from tests.support.event_factory import event, task_pod
from tests.support.output_checks import clean_lines, has_lone_surrogate
from tests.support.strategies import wild_text

V = ("--airflow-version", "3.3.2")
# Made up, in the shape of an Execution API token (a JWT), and an opaque one that only
# the workload it belongs to can reveal.
JWT = (
    "eyJhbGciOiJIUzUxMiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ0aS0xIiwic2NvcGUiOiJ3b3JrbG9hZCJ9"
    ".c2lnbmF0dXJlLW5vdC1yZWFs"
)
OPAQUE = "opaque-secret-4f9c2a71e8"
# Functions that get a fresh tmp_path per example have nothing to reset between them.
per_example_files = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


def run(*argv: str, stdin: str = "") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err, stdin=io.StringIO(stdin))
    return code, out.getvalue(), err.getvalue()


def _stderr_lines(err: str, prefix: str) -> list[str]:
    lines = clean_lines(err)
    for line in lines:
        assert line.startswith(prefix), line
    return lines


# --- regressions --------------------------------------------------------------------------


def test_render_with_a_lone_surrogate_in_the_dag_id_is_one_line_and_exit_2() -> None:
    # The label builder raised UnicodeEncodeError: a traceback.
    code, out, err = run("render", "task", *V, "--dag-id", "etl\ud800\nforged")
    assert (code, out) == (2, "")
    warning, error = _stderr_lines(err, "k8s-workloads render task: ")
    assert "warning: --dag-id 'etl\\ud800\\nforged' differs" in warning
    assert "metadata.annotations['dag_id']: 'etl\\ud800\\nforged' holds a lone surrogate" in error


def test_render_refuses_nan_naming_the_field(tmp_path: Path) -> None:
    # .nan in a template became NaN in -o json: not JSON, and no pod the API server reads.
    template = tmp_path / "t.yaml"
    template.write_text(
        "spec:\n  containers:\n  - name: base\n    resources: {limits: {cpu: .nan}}\n"
    )
    for output in ("json", "yaml"):
        code, out, err = run("render", "task", *V, "--template", str(template), "-o", output)
        assert (code, out) == (2, "")
        (line,) = _stderr_lines(err, "k8s-workloads render task: ")
        assert "spec.containers[0].resources.limits" in line
        assert "nan" in line.lower()


def test_usage_errors_are_one_line_whatever_the_value() -> None:
    code, _, err = run("resolve", "--pending-policy", "--now=2026\n\x1b[2Jforged", *V)
    assert code == 2
    (line,) = _stderr_lines(err, "k8s-workloads resolve: --now '2026\\n\\x1b[2Jforged'")
    assert "not an ISO 8601" in line
    code, _, err = run("decode", "--airflow-version=3\u2028\ud800", stdin="{}")
    assert code == 2
    assert _stderr_lines(err, "k8s-workloads decode: ") == [
        "k8s-workloads decode: not a PEP 440 version: '3\\u2028\\ud800'"
    ]


def test_decode_errors_are_one_line_and_keys_survive_hostile_text() -> None:
    annotations = {"dag_id": "d\ud800\n", "task_id": "t\x1b[2J", "try_number": "1"}
    code, out, err = run("decode", "-", *V, stdin=json.dumps(annotations))
    assert (code, err) == (0, "")
    assert json.loads(out)["dag_id"] == "d\ud800\n"
    annotations["try_number"] = "x\u2029y"
    code, out, err = run("decode", "-", *V, stdin=json.dumps(annotations))
    assert (code, out) == (1, "")
    assert _stderr_lines(err, "k8s-workloads decode: ") == [
        "k8s-workloads decode: InvalidAnnotations: try_number: not an integer: 'x\\u2029y'"
    ]


SCENARIO = {
    "name": "evil\u2028name",
    "workloads": [
        {
            "id": "w\ud800\nforged",
            "kind": "task",
            # (A lone surrogate here would be refused when the pod is built: annotations.)
            "dag_id": "d\x1b[31m",
            "task_id": "t\nt=  9  fake",
            "pod": {
                "steps": [
                    {"after": 1, "phase": "Running"},
                    {
                        "after": 1,
                        "phase": "Failed",
                        "reason": "R\ud800\r",
                        "message": "m\nt=  9  forged SUCCESS\x1b[2J",
                    },
                ]
            },
        }
    ],
}


def test_simulate_text_output_keeps_every_value_on_its_line(tmp_path: Path) -> None:
    # A lone surrogate crashed the text output with UnicodeEncodeError; a newline in a
    # status message forged timeline lines.
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(SCENARIO), encoding="utf-8")
    code, out, err = run("simulate", str(path))
    assert (code, err) == (0, "")
    result = simulate(parse_scenario(path.read_text(encoding="utf-8"), source=str(path)))
    lines = clean_lines(out)
    assert lines[0] == "Scenario evil\\u2028name (seed 0, Airflow 3.3.2)"
    timeline = lines[1 : 1 + len(result.timeline)]
    assert all(line.startswith("t=") for line in timeline)
    assert lines[1 + len(result.timeline)] == ""
    assert not any("t=  9" in line[:6] for line in lines)
    assert any("Pod failed because of R\\ud800\\r (container base" in line for line in timeline)
    code, out, _ = run("simulate", str(path), "-o", "json")
    assert json.loads(out)["workloads"][0]["id"] == "w\ud800\nforged"


def test_simulate_scenario_errors_are_one_line(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"workloads": [{"kind": "task\n\ud800"}]}), encoding="utf-8")
    code, out, err = run("simulate", str(path))
    assert (code, out) == (2, "")
    (line,) = _stderr_lines(err, "k8s-workloads simulate: ")
    assert "unknown kind 'task\\n\\ud800'" in line


# --- the token never shows ----------------------------------------------------------------


def _workload(token: str) -> dict[str, Any]:
    return {
        "type": "ExecuteTask",
        "token": token,
        "ti": {"dag_id": "etl", "task_id": "load", "run_id": "r1", "try_number": 1},
    }


@pytest.mark.parametrize("token", [JWT, OPAQUE])
def test_a_token_in_a_template_or_override_value_never_shows(tmp_path: Path, token: str) -> None:
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps(_workload(token)))
    template = tmp_path / "t.yaml"
    template.write_text(
        yaml.safe_dump({"metadata": {"labels": {"leak": f"{token}-{token}-{token}"}}}),
        encoding="utf-8",
    )
    override = tmp_path / "o.yaml"
    override.write_text(yaml.safe_dump({"metadata": {"name": f"{token}_x"}}), encoding="utf-8")
    argv = ["render", "task", *V, "--workload", str(workload), "--dag-id", token]
    code, out, err = run(*argv, "--template", str(template), "--override", str(override))
    assert (code, out) == (2, "")
    assert token not in err
    warning, error = _stderr_lines(err, "k8s-workloads render task: ")
    assert "warning: --dag-id '***REDACTED***' differs" in warning
    # The messages still name the fields.
    assert "metadata.name: '***REDACTED***" in error
    assert "metadata.labels['leak']: '***REDACTED***" in error


@pytest.mark.parametrize("token", [JWT, OPAQUE])
@pytest.mark.parametrize("output", [(), ("--explain",), ("--json", "--explain")])
def test_a_token_in_a_termination_message_never_shows_in_resolve(
    token: str, output: tuple[str, ...]
) -> None:
    # The pod runs the workload from its args (the provider's way), so the token is in
    # the pod; the task printed it as it died, and the kubelet made it the message.
    args = workload_command_args(_workload(token))
    message = f"Traceback ...\nRuntimeError: bad workload {json.dumps(_workload(token))}"
    status = {
        "phase": "Failed",
        "containerStatuses": [
            {
                "name": "base",
                "state": {"terminated": {"exitCode": 1, "message": message}},
            }
        ],
    }
    pod = task_pod(status)
    pod["spec"]["containers"][0]["args"] = args
    code, out, err = run("resolve", *V, *output, stdin=json.dumps(event("MODIFIED", pod)) + "\n")
    assert (code, err) == (0, "")
    assert token not in out
    assert json.dumps(token)[1:-1] not in out
    assert "***REDACTED***" in out
    assert "RuntimeError: bad workload" in out  # the message is still there, token masked
    if "--json" in output:
        (line,) = clean_lines(out)
        assert json.loads(line)["failure_details"]["container_message"].count("REDACTED") == 1


def test_a_jwt_in_a_decode_annotation_never_shows() -> None:
    annotations = {"dag_id": "d", "task_id": "t", "try_number": JWT}
    code, out, err = run("decode", "-", *V, stdin=json.dumps(annotations))
    assert (code, out) == (1, "")
    assert JWT not in err
    assert "try_number: not an integer: '***REDACTED***'" in err


# --- properties: any text through every text output -------------------------------------


@given(value=wild_text)
def test_decode_output_is_one_json_line_or_one_error_line(value: str) -> None:
    annotations = {"dag_id": value, "task_id": value or "t", "try_number": value, "run_id": value}
    code, out, err = run("decode", "-", *V, stdin=json.dumps(annotations))
    assert code in {0, 1}
    if code == 0:
        (line,) = clean_lines(out)
        assert json.loads(line)["dag_id"] == value  # nothing lost
        assert err == ""
    else:
        assert out == ""
        assert len(_stderr_lines(err, "k8s-workloads decode: ")) == 1


@per_example_files
@given(value=wild_text, output=st.sampled_from(["yaml", "json"]), in_label=st.booleans())
def test_render_prints_a_pod_that_reads_back_or_one_line_per_problem(
    tmp_path: Path, value: str, output: str, *, in_label: bool
) -> None:
    template = tmp_path / "t.json"
    template.write_text(
        json.dumps(
            {
                "metadata": {
                    "labels": {"l": value if in_label else "v"},
                    "annotations": {"a": value},
                },
                "spec": {"containers": [{"name": "base", "env": [{"name": "E", "value": value}]}]},
            }
        )
    )
    argv = ["render", "task", *V, "--template", str(template), "-o", output]
    code, out, err = run(*argv, f"--run-id={value or 'r'}")
    assert code in {0, 2}, err
    assert (code == 2) is (has_lone_surrogate(value) or (in_label and not is_label_value(value)))
    for line in _stderr_lines(err, "k8s-workloads render task: "):
        assert "Traceback" not in line
    if code == 2:
        assert out == ""
        return
    out.encode("utf-8")
    pod = json.loads(out) if output == "json" else yaml.safe_load(out)
    # Nothing lost: each value reads back as given (YAML reads a character outside the
    # BMP, which it writes escaped, back as its two surrogates: the same UTF-16).
    for shown_value in (pod["metadata"]["annotations"]["a"], _env(pod)):
        assert _utf16(shown_value) == _utf16(value)


def _env(pod: dict[str, Any]) -> str:
    value: str = pod["spec"]["containers"][0]["env"][0]["value"]
    return value


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-le", "surrogatepass")


def _hostile_event(value: str) -> dict[str, Any]:
    status = {
        "phase": "Failed",
        "reason": value,
        "message": value,
        "containerStatuses": [
            {
                "name": value,
                "state": {"terminated": {"exitCode": 1, "reason": value, "message": value}},
            }
        ],
    }
    pod = task_pod(status, name=value, namespace=value, resourceVersion=value)
    pod["metadata"]["annotations"]["dag_id"] = value
    return event("MODIFIED", pod)


@given(values=st.lists(wild_text, min_size=1, max_size=3), explain=st.booleans())
def test_resolve_text_is_one_line_per_event_and_json_one_object(
    values: list[str], *, explain: bool
) -> None:
    stream = "".join(json.dumps(_hostile_event(value)) + "\n" for value in values)
    extra = ("--explain",) if explain else ()
    code, out, err = run("resolve", *V, *extra, stdin=stream)
    assert code == 0
    lines = clean_lines(out)
    errors = _stderr_lines(err, "k8s-workloads resolve: line ")
    records = [line for line in lines if not line.startswith("    ")]
    assert len(records) + len(errors) == len(values)
    assert all(line.startswith("    ") for line in lines if line not in records) or not explain
    if not explain:
        assert len(lines) == len(records)
    code, out, err = run("resolve", *V, "--json", *extra, stdin=stream)
    assert code == 0
    objects = [json.loads(line) for line in clean_lines(out)]
    assert len(objects) + len(_stderr_lines(err, "k8s-workloads resolve: line ")) == len(values)
    for record in objects:
        # As JSON reads it back (an escaped surrogate pair is one character).
        value = json.loads(json.dumps(values[record["line"] - 1]))
        assert record["pod"] in {value, None}


@per_example_files
@given(
    dag_id=wild_text,
    reason=wild_text,
    message=wild_text,
    workload=wild_text,
    output=st.sampled_from(["text", "json"]),
)
def test_simulate_output_is_clean_whatever_the_scenario_says(  # noqa: PLR0917
    tmp_path: Path, dag_id: str, reason: str, message: str, workload: str, output: str
) -> None:
    scenario = {
        "workloads": [
            {
                "id": workload or "w",
                "kind": "task",
                "dag_id": dag_id or "d",
                "task_id": message or "t",
                "pod": {"steps": [{"phase": "Failed", "reason": reason, "message": message}]},
            }
        ]
    }
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario), encoding="utf-8")
    code, out, err = run("simulate", str(path), "-o", output)
    assert code in {0, 1, 2}
    if code == 2:
        assert out == ""
        assert len(_stderr_lines(err, "k8s-workloads simulate: ")) == 1
        return
    assert err == ""
    if output == "json":
        out.encode("utf-8")
        assert json.loads(out)["workloads"][0]["id"] == (workload or "w")
        return
    lines = clean_lines(out)
    result = simulate(parse_scenario(path.read_text(encoding="utf-8"), source=str(path)))
    timeline = lines[1 : 1 + len(result.timeline)]
    assert all(line.startswith("t=") for line in timeline)
    assert lines[1 + len(result.timeline)] == ""
    table = lines[2 + len(result.timeline) :]
    assert len(table) >= 1 + len(result.workloads)  # the header and one row per workload


@given(value=wild_text)
def test_usage_errors_are_one_clean_line(value: str) -> None:
    for argv, stdin in (
        (["resolve", *V, "--pending-policy", f"--now={value}"], ""),
        (["resolve", f"--airflow-version={value}x"], ""),
        (["decode", "-", *V, f"--labels={value}"], "{}"),
        (["decode", "-", *V], value),
        (["render", "task", *V, "--workload=-"], value),
    ):
        code, out, err = run(*argv, stdin=stdin)
        if code == 0:
            continue  # the value happened to be valid
        assert out == ""
        (line,) = clean_lines(err)
        assert line.startswith("k8s-workloads ")
