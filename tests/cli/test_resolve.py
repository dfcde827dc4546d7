"""``k8s-workloads resolve``: a pod watch stream in, one line per event out."""

from __future__ import annotations

import io
import json
import selectors
import subprocess
import sys
from pathlib import Path
from typing import Any, TextIO, cast

import pytest

from k8s_workloads import compat
from k8s_workloads.cli import key_to_text, main
from k8s_workloads.keys import CallbackKey, TaskInstanceKey
from k8s_workloads.watch.failures import PROVIDER_FATAL_PENDING_REASONS
from tests.support.json_errors import not_json

DATA = Path(__file__).parents[1] / "data"
SAMPLE = str(DATA / "sample.jsonl")
FAILURES = str(DATA / "task_failures.jsonl")
CALLBACKS = str(DATA / "callbacks.jsonl")
CONTROL = str(DATA / "watch_control.jsonl")
V = ("--airflow-version", "3.3.2")
RUN = "manual__2026-06-07T01:50:23+00:00"


def run(*argv: str, stdin: str | TextIO = "") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    source = io.StringIO(stdin) if isinstance(stdin, str) else stdin
    code = main(["resolve", *argv], stdout=out, stderr=err, stdin=source)
    return code, out.getvalue(), err.getvalue()


def records(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


def lines_for(out: str, pod_prefix: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(f"airflow/{pod_prefix}")]


@pytest.fixture(autouse=True)
def _no_installed_airflow(monkeypatch: pytest.MonkeyPatch) -> None:
    # The same results in both environments: Airflow is "not installed" unless a test
    # says otherwise.
    monkeypatch.setattr(compat, "installed_airflow_version", lambda: None)


def test_key_to_text() -> None:
    assert (
        key_to_text(TaskInstanceKey("etl", "load", "r1", 2, 3))
        == "task etl.load run=r1 try=2 map=3"
    )
    assert key_to_text(TaskInstanceKey("etl", "load", None, 1, -1)) == "task etl.load try=1"
    uuid = "019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e"
    assert key_to_text(CallbackKey(uuid)) == f"callback {uuid}"
    assert key_to_text(None) == "-"


# --- text ---------------------------------------------------------------------------------


def test_text_one_line_per_event() -> None:
    code, out, err = run(SAMPLE, *V)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert len(lines) == 20
    pod = lines[0].split(" ", 1)[0]
    assert pod.startswith("airflow/etl-extract-")
    assert lines[0] == f"{pod} task etl.extract run={RUN} try=1 pending - pending"
    assert lines[2] == f"{pod} task etl.extract run={RUN} try=1 running - running"
    assert lines[3] == f"{pod} task etl.extract run={RUN} try=1 succeeded lookup succeeded"
    oom = [line for line in lines if "OOMKilled" in line]
    assert len(oom) == 2
    assert oom[0].endswith(
        f"task etl.load run={RUN} try=2 failed failed "
        "Pod failed because of OOMKilled (container base, exit code 137)"
    )
    callback_lines = [line for line in lines if " callback 019e9fc6-" in line]
    assert {line.split(" ")[3:5][0] for line in callback_lines} == {
        "pending", "running", "succeeded", "failed",
    }  # fmt: skip
    assert any(" succeeded success succeeded" in line for line in callback_lines)


def test_text_for_watch_control_events() -> None:
    code, out, _ = run(CONTROL, *V)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("- - bookmark - bookmark at resource version ")
    assert any(line.startswith("- - resync - watch expired (410 Expired)") for line in lines)
    assert any(
        line.startswith("- - watch_error - Kubernetes failure for InternalError with code 500")
        for line in lines
    )
    assert any(
        line.startswith("airflow/run-dbt-")
        and line.endswith(" - foreign - not a KubernetesExecutor pod: ignored")
        for line in lines
    )
    assert any(" - undecodable - undecodable pod: try_number: missing" in line for line in lines)


def test_explain_adds_indented_details() -> None:
    code, out, _ = run(SAMPLE, *V, "--explain")
    assert code == 0
    lines = out.splitlines()
    assert lines[1].startswith("    line 1, ADDED event, resource version ")
    index = next(i for i, line in enumerate(lines) if "OOMKilled (container" in line)
    assert lines[index + 1].startswith("    line 19, MODIFIED event, resource version ")
    assert lines[index + 2] == (
        "    failure details: pod_status=Failed, container_state=terminated, "
        "container_reason=OOMKilled, exit_code=137, container_type=main, container_name=base"
    )
    assert lines[index + 3] == (
        "    classification: application, not retryable, reason OOMKilled "
        "(evidence: container base)"
    )


def test_explain_quotes_messages_and_shows_infrastructure_failures() -> None:
    code, out, _ = run(FAILURES, *V, "--explain")
    assert code == 0
    assert (
        '    failure details: pod_status=Failed, pod_reason=Evicted, pod_message="The node was '
        "low on resource: memory. Threshold quantity: 100Mi"
    ) in out
    assert (
        "    classification: infrastructure, retryable, reason TerminationByKubelet "
        "(evidence: DisruptionTarget condition)"
    ) in out


# --- JSON ---------------------------------------------------------------------------------


def test_json_one_object_per_event() -> None:
    code, out, err = run(SAMPLE, *V, "--json")
    assert (code, err) == (0, "")
    rows = records(out)
    assert len(rows) == 20
    first = rows[0]
    assert set(first) == {
        "line", "event", "outcome", "state", "key", "pod", "namespace", "resource_version",
        "reason",
    }  # fmt: skip
    assert first["line"] == 1
    assert first["event"] == "ADDED"
    assert (first["outcome"], first["state"], first["reason"]) == ("pending", None, "pending")
    assert first["key"] == {
        "kind": "task", "dag_id": "etl", "task_id": "extract", "run_id": RUN,
        "try_number": 1, "map_index": -1,
    }  # fmt: skip
    assert first["namespace"] == "airflow"
    assert first["pod"].startswith("etl-extract-")
    assert first["resource_version"].isdigit()
    states = {(row["outcome"], row["state"]) for row in rows}
    assert ("succeeded", "lookup") in states
    assert ("succeeded", "success") in states
    assert ("running", "running") in states
    assert {row["key"]["kind"] for row in rows} == {"task", "callback"}


def test_json_explain_adds_details_and_classification() -> None:
    code, out, _ = run(SAMPLE, *V, "--json", "--explain")
    assert code == 0
    rows = records(out)
    assert all({"failure_details", "classification", "error_code"} <= set(row) for row in rows)
    failed = [row for row in rows if row["outcome"] == "failed"]
    assert len(failed) == 4
    oom = next(row for row in failed if row["key"]["kind"] == "task")
    assert oom["failure_details"]["container_reason"] == "OOMKilled"
    assert oom["failure_details"]["exit_code"] == 137
    assert oom["classification"] == {
        "kind": "application", "retryable": False, "reason": "OOMKilled",
        "evidence": "container base",
    }  # fmt: skip
    assert rows[0]["failure_details"] is None
    assert rows[0]["classification"] is None


def test_json_error_events() -> None:
    code, out, _ = run(CONTROL, *V, "--json", "--explain")
    assert code == 0
    errors = [row for row in records(out) if row["event"] == "ERROR"]
    assert [(row["outcome"], row["error_code"]) for row in errors] == [
        ("resync", 410), ("watch_error", 500),
    ]  # fmt: skip
    assert all(row["pod"] is None and row["key"] is None for row in errors)


# --- summary ------------------------------------------------------------------------------


def test_summary_counts_outcomes() -> None:
    code, out, _ = run(SAMPLE, *V, "--summary")
    assert code == 0
    tail = out.splitlines()[-5:]
    assert tail[0] == "summary: 20 inputs"
    counts = {line.split()[0]: int(line.split()[1]) for line in tail[1:]}
    assert counts == {"failed": 4, "succeeded": 4, "running": 4, "pending": 8}


def test_summary_json_and_malformed_counts() -> None:
    stream = (DATA / "sample.jsonl").read_text("utf-8").splitlines()
    text = "\n".join([stream[0], "garbage", "[1, 2]", stream[1]]) + "\n"
    code, out, err = run(*V, "--json", "--summary", stdin=text)
    assert code == 0
    *events, summary = records(out)
    assert len(events) == 2
    assert summary == {"summary": {"inputs": 4, "outcomes": {"pending": 2, "malformed": 2}}}
    assert err.splitlines() == [
        f"k8s-workloads resolve: line 2: {not_json('garbage', line=2)}",
        "k8s-workloads resolve: line 3: not a watch event: list",
    ]


def test_summary_of_every_stream() -> None:
    for path in sorted(DATA.glob("*.expected.jsonl")):
        name = path.name.removesuffix(".expected.jsonl")
        stream = next(DATA.glob(f"{name}.json*"))
        expected: dict[str, int] = {}
        for line in path.read_text("utf-8").splitlines():
            outcome = json.loads(line)["outcome"]
            expected[outcome] = expected.get(outcome, 0) + 1
        code, out, err = run(str(stream), *V, "--json", "--summary")
        assert (code, err) == (0, ""), name
        assert records(out)[-1]["summary"]["outcomes"] == expected, name


# --- input --------------------------------------------------------------------------------


def test_reads_stdin_by_default_and_with_dash() -> None:
    text = (DATA / "sample.jsonl").read_text("utf-8")
    assert run(*V, stdin=text)[1] == run(SAMPLE, *V)[1]
    assert run("-", *V, stdin=text)[1] == run(SAMPLE, *V)[1]


def test_kubectl_format() -> None:
    code, out, err = run(str(DATA / "kubectl_watch.json"), *V, "--json")
    assert (code, err) == (0, "")
    rows = records(out)
    assert len(rows) == 21
    assert rows[0]["line"] == 1
    assert {row["outcome"] for row in rows} == {"pending", "running", "succeeded", "failed"}


def test_example_is_the_bundled_sample() -> None:
    code, out, err = run("--example")
    assert (code, err) == (0, "")
    # Airflow is not installed here, and the example still decodes callbacks: it runs
    # as the demo does, for Airflow 3.3.2.
    assert out == run(SAMPLE, *V)[1]


def test_malformed_input_is_reported_and_skipped(tmp_path: Path) -> None:
    good = (DATA / "sample.jsonl").read_text("utf-8").splitlines()
    path = tmp_path / "watch.jsonl"
    path.write_text("\n".join([good[0], '{"type": "ADDED", "object": {', "", good[1], "{}"]) + "\n")
    code, out, err = run(str(path), *V)
    assert code == 0
    assert len(out.splitlines()) == 2
    rest = "\n".join(['{"type": "ADDED", "object": {', "", good[1], "{}"]) + "\n"
    assert err.splitlines() == [
        f"k8s-workloads resolve: line 2: {not_json(rest, line=2)}",
        "k8s-workloads resolve: line 5: watch event without a type",
    ]
    assert err.splitlines()[0].endswith(" at line 4, column 1")


def test_bytes_that_are_not_utf8_are_malformed_lines(tmp_path: Path) -> None:
    good = (DATA / "sample.jsonl").read_bytes().splitlines()
    path = tmp_path / "watch.jsonl"
    path.write_bytes(b"\n".join([good[0], b"\xff\xfe garbage", good[1]]) + b"\n")
    code, out, err = run(str(path), *V)
    assert code == 0
    assert len(out.splitlines()) == 2
    assert err.startswith("k8s-workloads resolve: line 2: not JSON")
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["/no/such/watch.jsonl"], "cannot read /no/such/watch.jsonl: No such file or directory"),
        (["tests"], "cannot read tests: Is a directory"),
        (["--example", SAMPLE], "give a FILE or --example, not both"),
        (["--airflow-version", "three", SAMPLE], "not a PEP 440 version: 'three'"),
        (["--pending-policy", "--now", "yesterday", SAMPLE], "--now 'yesterday': not an ISO 8601"),
        (["--now", "2026-06-07T10:00:00Z", SAMPLE], "--now only applies to grace periods"),
        (["--pending-policy", "--fatal-reasons", "ErrImagePull", SAMPLE],
         "--fatal-reasons and --pending-policy exclude each other"),
    ],
)  # fmt: skip
def test_usage_errors_exit_2_without_output(argv: list[str], message: str) -> None:
    code, out, err = run(*argv)
    assert (code, out) == (2, "")
    assert err.startswith("k8s-workloads resolve: ")
    assert message in err
    assert err.count("\n") == 1


class _FirstLineOnly:
    """A standard input that gives one line, then raises ``failure``."""

    def __init__(self, text: str, failure: BaseException) -> None:
        self.lines = text.splitlines(keepends=True)[:1]
        self.failure = failure

    def readline(self, size: int = -1, /) -> str:
        del size
        if self.lines:
            return self.lines.pop()
        raise self.failure

    def isatty(self) -> bool:
        return False


def test_a_read_error_midway_exits_2() -> None:
    text = (DATA / "sample.jsonl").read_text("utf-8")
    stdin = _FirstLineOnly(text, OSError(5, "Input/output error"))
    code, out, err = run(*V, stdin=cast("TextIO", stdin))
    assert code == 2
    assert len(out.splitlines()) == 1  # what was read before is printed
    assert err == "k8s-workloads resolve: cannot read standard input: Input/output error\n"


def test_an_interrupt_ends_the_watch_with_the_summary() -> None:
    text = (DATA / "sample.jsonl").read_text("utf-8")
    stdin = _FirstLineOnly(text, KeyboardInterrupt())
    code, out, _ = run(*V, "--summary", stdin=cast("TextIO", stdin))
    assert code == 130
    assert out.splitlines()[-2:] == ["summary: 1 input", "  pending                     1"]


# --- options ------------------------------------------------------------------------------


def test_callbacks_need_an_airflow_version_that_runs_them(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = run(CALLBACKS)  # Airflow not installed: no version
    assert code == 0
    callback_lines = lines_for(out, "callback-")
    assert callback_lines
    assert all(
        " - undecodable - undecodable callback pod: callback_id: this is a callback pod, and "
        "callback workloads need Airflow 3.3+ (no Airflow version)" in line
        for line in callback_lines
    )
    assert all(" task " in line for line in lines_for(out, "etl-load-"))

    _, out, _ = run(CALLBACKS, "--airflow-version", "3.2.0")
    assert all("(Airflow 3.2.0)" in line for line in lines_for(out, "callback-"))

    monkeypatch.setattr(compat, "installed_airflow_version", lambda: "3.3.1")
    _, out, _ = run(CALLBACKS)
    assert all(" callback 019e9f" in line for line in lines_for(out, "callback-"))


def _row(out: str, pod_prefix: str, index: int) -> dict[str, Any]:
    rows = [row for row in records(out) if row["pod"] and row["pod"].startswith(pod_prefix)]
    return rows[index]


def test_fatal_reasons() -> None:
    # etl-publish: ErrImagePull (event 4 of the pod), then ImagePullBackOff (event 5): both
    # fatal by default (the back-off unlike the provider's list).
    _, default, _ = run(FAILURES, *V, "--json")
    assert _row(default, "etl-publish-", 3)["outcome"] == "failed"
    assert _row(default, "etl-publish-", 4)["outcome"] == "failed"
    _, provider, _ = run(
        FAILURES, *V, "--json", "--fatal-reasons", ",".join(sorted(PROVIDER_FATAL_PENDING_REASONS))
    )
    assert _row(provider, "etl-publish-", 3)["outcome"] == "failed"
    assert _row(provider, "etl-publish-", 4)["outcome"] == "pending"
    _, disabled, _ = run(FAILURES, *V, "--json", "--fatal-reasons", "")
    assert _row(disabled, "etl-publish-", 3)["outcome"] == "pending"
    assert _row(disabled, "warehouse-sync-", 3)["outcome"] == "pending"
    _, backoff, _ = run(FAILURES, *V, "--json", "--fatal-reasons", " ImagePullBackOff , Other")
    assert _row(backoff, "etl-publish-", 3)["outcome"] == "pending"
    assert _row(backoff, "etl-publish-", 4)["outcome"] == "failed"
    assert "ImagePullBackOff" in _row(backoff, "etl-publish-", 4)["reason"]


def test_pending_policy_without_now_expires_no_grace_period() -> None:
    code, out, _ = run(FAILURES, *V, "--json", "--pending-policy")
    assert code == 0
    pulling = _row(out, "etl-publish-", 3)
    assert pulling["outcome"] == "pending"
    assert pulling["reason"].startswith("ErrImagePull: rpc error: code = NotFound")
    assert pulling["reason"].endswith("(container base)")
    # A missing Secret fails at once (no grace period for a bad container config).
    config = _row(out, "warehouse-sync-", 3)
    assert config["outcome"] == "failed"
    assert config["reason"].startswith("Pod failed while pending: CreateContainerConfigError")
    # The sidecar's bad image: the provider's rule reads only the first container.
    assert _row(out, "etl-enrich-", 3)["reason"].startswith("ErrImagePull: ")


def test_pending_policy_with_now_fails_pods_stuck_past_their_grace() -> None:
    argv = (FAILURES, *V, "--json", "--explain", "--pending-policy")
    _, soon, _ = run(*argv, "--now", "2026-06-07T01:51:30Z")
    assert _row(soon, "etl-publish-", 3)["outcome"] == "pending"
    _, late, _ = run(*argv, "--now", "2026-06-07T03:00:00+00:00")
    stuck = _row(late, "etl-publish-", 3)
    assert (stuck["outcome"], stuck["state"]) == ("failed", "failed")
    assert stuck["reason"].endswith("(container base) after a 180s grace period")
    assert stuck["classification"]["kind"] == "application"
    sidecar = _row(late, "etl-enrich-", 3)
    assert sidecar["outcome"] == "failed"
    assert "(container log-shipper)" in sidecar["reason"]
    # A naive time is UTC.
    _, naive, _ = run(*argv, "--now", "2026-06-07T03:00:00")
    assert naive == late


# --- streaming ----------------------------------------------------------------------------

_SCRIPT = "from k8s_workloads.cli import main; raise SystemExit(main())"


def test_each_event_is_printed_as_soon_as_it_is_read() -> None:
    lines = (DATA / "sample.jsonl").read_text("utf-8").splitlines(keepends=True)
    with subprocess.Popen(
        [sys.executable, "-c", _SCRIPT, "resolve", *V],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    ) as process:  # fmt: skip
        assert process.stdin is not None
        assert process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            for line in lines[:3]:
                process.stdin.write(line)
                process.stdin.flush()
                assert selector.select(timeout=30), "no output while the input stays open"
                assert process.stdout.readline().startswith("airflow/etl-extract-")
        process.stdin.close()
        assert process.wait(timeout=30) == 0


def test_a_closed_output_pipe_ends_quietly(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    text = (DATA / "task_success.jsonl").read_text("utf-8")
    path.write_text(text * 20)
    with subprocess.Popen(
        [sys.executable, "-c", _SCRIPT, "resolve", str(path), *V],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    ) as process:  # fmt: skip
        assert process.stdout is not None
        assert process.stderr is not None
        assert process.stdout.readline()
        process.stdout.close()
        code = process.wait(timeout=60)
        err = process.stderr.read()
    assert err == ""
    assert code == 141  # as if SIGPIPE ended it, like every command


def test_help_describes_the_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["resolve", "--help"])
    shown = capsys.readouterr().out
    for option in ("--json", "--explain", "--airflow-version", "--fatal-reasons",
                   "--pending-policy", "--now", "--summary", "--example"):  # fmt: skip
        assert option in shown


def _event_with(**metadata: str) -> str:
    import json as json_module  # noqa: PLC0415

    from tests.support.event_factory import event, task_pod  # noqa: PLC0415

    pod = task_pod({"phase": "Failed", "reason": "Evicted", "message": metadata.pop("message", "")})
    pod["metadata"].update(metadata)
    return json_module.dumps(event("MODIFIED", pod)) + "\n"


@pytest.mark.parametrize("explain", [False, True])
def test_resolve_text_output_escapes_control_characters_and_lone_surrogates(
    explain: bool,
) -> None:
    # Issue 11, items 2 and 10: a lone surrogate used to end the stream with a
    # UnicodeEncodeError; a newline in a value could forge an output line.
    import io  # noqa: PLC0415

    from k8s_workloads.cli import main  # noqa: PLC0415

    text = _event_with(name="pod-\ud800\nforged 1 2 3 succeeded", message="m\n\x1b[2Jx")
    out, err = io.StringIO(), io.StringIO()
    argv = ["resolve", "-", "--airflow-version", "3.3.2", *(["--explain"] if explain else [])]
    assert main(argv, stdout=out, stderr=err, stdin=io.StringIO(text)) == 0
    shown = out.getvalue()
    shown.encode("utf-8")  # writable as UTF-8: no lone surrogate left
    assert "\\ud800" in shown
    assert "\x1b" not in shown
    first, *rest = shown.splitlines()
    assert "pod-\\ud800\\nforged" in first
    assert len(rest) == (3 if explain else 0)
