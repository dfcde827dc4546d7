"""``render task`` and ``render callback`` (:mod:`k8s_workloads.cli._render`): the pod an
executor would create, valid for the API server, its token redacted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from k8s_workloads import compat
from k8s_workloads.cli import main
from k8s_workloads.display import REDACTED
from k8s_workloads.keys import CallbackKey, TaskInstanceKey, WorkloadKey
from k8s_workloads.pods.codec import annotations_to_key
from k8s_workloads.pods.validation import validate_manifest
from tests.support.cli import CALLBACK_ID, run

EXAMPLES = resources.files("k8s_workloads").joinpath("examples")


TEMPLATE = str(EXAMPLES.joinpath("pod_template.yaml"))


OVERRIDE = str(EXAMPLES.joinpath("pod_override.yaml"))


TASK_WORKLOAD = json.loads(EXAMPLES.joinpath("task_workload.json").read_text("utf-8"))


CALLBACK_WORKLOAD = json.loads(EXAMPLES.joinpath("callback_workload.json").read_text("utf-8"))


TASK_TOKEN = TASK_WORKLOAD["token"]


CALLBACK_TOKEN = CALLBACK_WORKLOAD["token"]


EXAMPLE_RUN_ID = "manual__2026-06-07T01:50:23+00:00"


V = ("--airflow-version", "3.3.2")


def render(*argv: str, stdin: str = "") -> tuple[list[dict[str, Any]], str]:
    """Run ``render``, expecting success; the documents printed and stderr."""
    code, out, err = run("render", *argv, stdin=stdin)
    assert code == 0, err
    if "json" in argv:
        loaded = json.loads(out)
        return (loaded if isinstance(loaded, list) else [loaded]), err
    return list(yaml.safe_load_all(out)), err


def _valid(manifest: dict[str, Any]) -> None:
    assert validate_manifest(manifest) == [] or manifest["kind"] == "Secret"
    kubernetes_validate.validate(manifest, "1.37", strict=True)


def _base(pod: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = pod["spec"]["containers"][0]
    assert container["name"] == "base"
    return container


def _key(pod: dict[str, Any]) -> WorkloadKey:
    metadata = pod["metadata"]
    return annotations_to_key(metadata["annotations"], metadata["labels"], airflow_version="3.3.2")


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


RENDER_ERRORS: list[tuple[list[str], str]] = [
    (["task", "--workload", "/no/such/w.json"], "--workload: cannot read /no/such/w.json"),
    (["task", "--workload", "{bad}"], "not JSON"),
    (["task", "--workload", "[1]"], "expected a JSON object, got list"),
    (["task", "--workload", '{"type": "ExecuteCallback"}'], "render task needs 'ExecuteTask'"),
    (["callback", "--callback-id", CALLBACK_ID, "--workload", '{"type": "ExecuteTask"}'],
     "render callback needs 'ExecuteCallback'"),
    (["task", "--workload", "{}"], "--dag-id is required: the workload has no ti.dag_id"),
    (["task", "--workload", '{"ti": {"dag_id": "d"}}'], "--task-id is required"),
    (["task", "--template", "/no/such/t.yaml"], "--template: cannot read /no/such/t.yaml"),
    (["task", "--template", "a: [1"], "not YAML or JSON: while parsing a flow sequence"),
    (["task", "--template", "- 1"], "expected a pod manifest (a mapping), got list"),
    (["task", "--template", ""], "expected a pod manifest (a mapping), got nothing"),
    (["task", "--template", "a: 1\n---\nb: 2\n"], "but found another document (line 2, column 1)"),
    (["task", "--template", "\x00"], "not YAML or JSON"),
    (["task", "--override", "spec: {containers: {a: 1}}"],
     "InvalidPod: pod_override: spec.containers: must be a list, got dict"),
    (["task", "--override", "metadata: {annotations: {dag_id: other}}"],
     "PodReconciliationError: the template or pod_override changed the identity"),
    (["task", "--template", "metadata: {annotations: {created: 2024-01-01}}"],
     "InvalidPod: base_worker_pod: metadata.annotations['created']: must be a string, got date"),
    (["task", "--template", "kind: Deployment"], "base_worker_pod: kind: must be 'Pod'"),
    (["task", "--secure", "--template", "spec: {volumes: [{name: airflow-workload}]}"],
     "PayloadConflict: spec.volumes already has a volume named 'airflow-workload'"),
    (["task", "--namespace", "Bad_NS"],
     "InvalidPod: the API server would refuse the pod: metadata.namespace"),
    (["task", "--pod-id", "Bad.Pod"], "metadata.name: 'Bad.Pod' must consist of lower-case"),
    (["task", "--dag-id", ""], "InvalidKey: TaskInstanceKey.dag_id must be a non-empty string"),
    (["task", "--try-number", "-1"], "InvalidKey: TaskInstanceKey.try_number must be an int >= 0"),
    (["task", "--map-index", "-2"], "InvalidKey: TaskInstanceKey.map_index"),
    (["callback", "--callback-id", "nope"], "InvalidKey: CallbackKey.id must be a UUID string"),
    (["callback", "--callback-id", CALLBACK_ID.upper()], "must be a canonical"),
    (["callback", "--callback-id", CALLBACK_ID, "--log-path", "logs/x.log"],
     "--log-path 'logs/x.log': not a callback log path"),
]  # fmt: skip


def test_render_task_from_the_bundled_examples() -> None:
    (pod,), err = render(
        "task", *V, "--template", TEMPLATE, "--override", OVERRIDE, "--pod-id", "etl-load-x1"
    )
    assert err == ""
    assert (pod["apiVersion"], pod["kind"]) == ("v1", "Pod")
    _valid(pod)
    assert _key(pod) == TaskInstanceKey("etl", "load", EXAMPLE_RUN_ID, 1, -1)
    metadata = pod["metadata"]
    assert metadata["name"] == "etl-load-x1"
    assert metadata["namespace"] == "default"
    assert metadata["labels"]["team"] == "data-platform"  # override
    assert metadata["labels"]["app.kubernetes.io/part-of"] == "airflow"  # template
    assert metadata["labels"]["airflow-worker"] == "1"
    assert metadata["labels"]["airflow_version"] == "3.3.2"
    base = _base(pod)
    assert base["image"] == "apache/airflow:3.3.2"  # the template's
    assert base["resources"]["limits"] == {"memory": "2Gi"}  # the override's
    assert pod["spec"]["serviceAccountName"] == "airflow-worker"
    assert base["args"][:4] == [
        "python", "-m", "airflow.sdk.execution_time.execute_workload", "--json-string",
    ]  # fmt: skip
    assert json.loads(base["args"][4]) == {**TASK_WORKLOAD, "token": REDACTED}


def test_render_task_takes_the_ids_from_the_workload() -> None:
    (pod,), _ = render("task", *V)
    _valid(pod)
    assert _key(pod) == TaskInstanceKey("etl", "load", EXAMPLE_RUN_ID, 1, -1)
    assert pod["metadata"]["name"].startswith("etl-load-")
    assert len(pod["metadata"]["name"]) == len("etl-load-") + 8
    assert "image" not in _base(pod)


def test_render_task_with_every_option(tmp_path: Path) -> None:
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps({"token": "t0k3n-value", "type": "ExecuteTask"}))
    (pod,), err = render(
        "task", "--workload", str(workload), "--dag-id", "Etl", "--task-id", "Load",
        "--run-id", "r1", "--try-number", "3", "--map-index", "2", "--pod-id", "my-pod",
        "--namespace", "airflow", "--scheduler-job-id", "42", "--image", "my/image:1",
        "--airflow-version", "3.1.0", "-o", "json",
    )  # fmt: skip
    assert err == ""
    _valid(pod)
    assert _key(pod) == TaskInstanceKey("Etl", "Load", "r1", 3, 2)
    assert pod["metadata"]["name"] == "my-pod"
    assert pod["metadata"]["namespace"] == "airflow"
    assert pod["metadata"]["labels"]["airflow-worker"] == "42"
    assert pod["metadata"]["labels"]["airflow_version"] == "3.1.0"
    assert _base(pod)["image"] == "my/image:1"
    assert json.loads(_base(pod)["args"][4]) == {"token": REDACTED, "type": "ExecuteTask"}


def test_render_task_warns_when_options_contradict_the_workload() -> None:
    (pod,), err = render("task", *V, "--dag-id", "other", "--try-number", "2")
    assert _key(pod) == TaskInstanceKey("other", "load", EXAMPLE_RUN_ID, 2, -1)
    assert "warning: --dag-id 'other' differs from the workload's ti.dag_id 'etl'" in err
    assert "--try-number 2 differs from the workload's ti.try_number 1" in err
    assert err.count("\n") == 2


def test_render_task_defaults_without_ti_in_the_workload(tmp_path: Path) -> None:
    workload = tmp_path / "w.json"
    workload.write_text("{}")
    (pod,), _ = render("task", *V, "--workload", str(workload), "--dag-id", "d", "--task-id", "t")
    assert _key(pod) == TaskInstanceKey("d", "t", None, 1, -1)


def test_render_task_workload_from_stdin() -> None:
    workload = {**TASK_WORKLOAD, "ti": {**TASK_WORKLOAD["ti"], "map_index": 4}}
    (pod,), _ = render("task", *V, "--workload", "-", stdin=json.dumps(workload))
    assert _key(pod) == TaskInstanceKey("etl", "load", EXAMPLE_RUN_ID, 1, 4)


def test_render_no_redact_prints_the_token() -> None:
    code, out, _ = run("render", "task", *V, "--no-redact")
    assert code == 0
    assert TASK_TOKEN in out
    assert REDACTED not in out
    (pod,) = yaml.safe_load_all(out)
    assert json.loads(_base(pod)["args"][4]) == TASK_WORKLOAD


def test_render_redacts_by_default() -> None:
    for argv in (("task",), ("task", "--secure"), ("task", "-o", "json")):
        code, out, _ = run("render", *argv, *V)
        assert code == 0
        assert TASK_TOKEN not in out
        assert REDACTED in out


@pytest.mark.parametrize("output", ["yaml", "json"])
def test_render_task_secure_prints_the_secret_then_the_pod(output: str) -> None:
    code, out, err = run(
        "render", "task", *V, "--secure", "--template", TEMPLATE, "--namespace", "airflow",
        "-o", output,
    )  # fmt: skip
    assert (code, err) == (0, "")
    if output == "yaml":
        assert "\n---\n" in out
        secret, pod = yaml.safe_load_all(out)
    else:
        secret, pod = json.loads(out)
    assert secret["kind"] == "Secret"
    _valid(secret)
    _valid(pod)
    name = pod["metadata"]["name"]
    assert secret["metadata"]["name"] == f"{name}-workload"
    assert secret["metadata"]["namespace"] == pod["metadata"]["namespace"] == "airflow"
    assert secret["metadata"]["labels"] == pod["metadata"]["labels"]
    assert json.loads(secret["stringData"]["workload.json"]) == {**TASK_WORKLOAD, "token": REDACTED}
    base = _base(pod)
    assert base["args"][3:] == ["--json-path", "/run/secrets/airflow-workload/workload.json"]
    assert base["volumeMounts"][-1] == {
        "name": "airflow-workload", "mountPath": "/run/secrets/airflow-workload", "readOnly": True,
    }  # fmt: skip
    assert pod["spec"]["volumes"][-1] == {
        "name": "airflow-workload",
        "secret": {"secretName": f"{name}-workload", "defaultMode": 0o440},
    }
    assert "--json-string" not in json.dumps(pod)
    assert _key(pod) == TaskInstanceKey("etl", "load", EXAMPLE_RUN_ID, 1, -1)


def test_render_secure_no_redact_keeps_the_token_in_the_secret_only() -> None:
    (secret, pod), _ = render("task", *V, "--secure", "--no-redact", "-o", "json")
    assert json.loads(secret["stringData"]["workload.json"]) == TASK_WORKLOAD
    assert TASK_TOKEN not in json.dumps(pod)
    assert REDACTED not in json.dumps(pod)


def test_render_callback_from_the_bundled_examples() -> None:
    (pod,), err = render("callback", *V, "--callback-id", CALLBACK_ID, "--template", TEMPLATE)
    assert err == ""
    _valid(pod)
    assert _key(pod) == CallbackKey(CALLBACK_ID)
    metadata = pod["metadata"]
    # dag and run ids from the workload's log_path
    assert metadata["annotations"] == {
        "callback_id": CALLBACK_ID, "dag_id": "etl",
        "run_id": "scheduled__2026-06-07T00:00:00+00:00",
    }  # fmt: skip
    assert metadata["labels"]["airflow-workload-type"] == "callback"
    assert metadata["name"].startswith("callback-019e9fc6-")
    assert json.loads(_base(pod)["args"][4]) == {**CALLBACK_WORKLOAD, "token": REDACTED}
    assert CALLBACK_TOKEN not in json.dumps(pod)


def test_render_callback_options(tmp_path: Path) -> None:
    workload = tmp_path / "cb.json"
    workload.write_text(json.dumps({"token": "secret-cb-token", "type": "ExecuteCallback"}))
    (pod,), err = render(
        "callback", "--callback-id", CALLBACK_ID, "--workload", str(workload),
        "--log-path", f"logs/executor_callbacks/d1/r1/{CALLBACK_ID}.log", "--namespace", "ns",
        "--scheduler-job-id", "9", "--image", "img:2", "--airflow-version", "3.4.0",
        "-o", "json",
    )  # fmt: skip
    assert err == ""
    _valid(pod)
    assert _key(pod) == CallbackKey(CALLBACK_ID)
    assert pod["metadata"]["annotations"] == {
        "callback_id": CALLBACK_ID, "dag_id": "d1", "run_id": "r1",
    }  # fmt: skip
    assert pod["metadata"]["namespace"] == "ns"
    assert pod["metadata"]["labels"]["airflow-worker"] == "9"
    assert pod["metadata"]["labels"]["airflow_version"] == "3.4.0"
    assert _base(pod)["image"] == "img:2"
    assert "secret-cb-token" not in json.dumps(pod)


def test_render_callback_explicit_ids_win_over_the_log_path() -> None:
    (pod,), _ = render(
        "callback", *V, "--callback-id", CALLBACK_ID, "--dag-id", "mine", "--run-id", "run-9"
    )
    annotations = pod["metadata"]["annotations"]
    assert (annotations["dag_id"], annotations["run_id"]) == ("mine", "run-9")


def test_render_callback_without_a_log_path_has_no_dag_or_run(tmp_path: Path) -> None:
    workload = tmp_path / "cb.json"
    workload.write_text(json.dumps({"token": "x", "log_path": None}))
    (pod,), _ = render("callback", *V, "--callback-id", CALLBACK_ID, "--workload", str(workload))
    assert pod["metadata"]["annotations"] == {"callback_id": CALLBACK_ID}


def test_render_callback_warns_about_another_callback_id() -> None:
    other = "019e9fc6-0000-7000-8000-000000000000"
    (pod,), err = render("callback", *V, "--callback-id", other)
    assert _key(pod) == CallbackKey(other)
    assert f"--callback-id '{other}' differs from the workload's callback.id" in err
    assert f"the log path names callback '{CALLBACK_ID}', not '{other}'" in err


def test_render_callback_secure() -> None:
    (secret, pod), err = render("callback", *V, "--callback-id", CALLBACK_ID, "--secure")
    assert err == ""
    _valid(secret)
    _valid(pod)
    assert secret["metadata"]["name"] == pod["metadata"]["name"] + "-workload"
    assert _key(pod) == CallbackKey(CALLBACK_ID)
    assert "--json-path" in _base(pod)["args"]
    assert CALLBACK_TOKEN not in json.dumps([secret, pod])


def test_render_long_pod_id_is_cut_with_a_warning() -> None:
    (pod,), err = render("task", *V, "--pod-id", "x" * 80)
    assert len(pod["metadata"]["name"]) == 63
    assert "k8s-workloads render task: warning: pod_id supplied is longer than 63" in err


def test_render_template_and_override_as_json(tmp_path: Path) -> None:
    template = tmp_path / "t.json"
    template.write_text(json.dumps({"spec": {"containers": [{"name": "x", "image": "i:1"}]}}))
    override = tmp_path / "o.json"
    override.write_text(json.dumps({"spec": {"priorityClassName": "high"}}))
    (pod,), _ = render("task", *V, "--template", str(template), "--override", str(override))
    assert _base(pod)["image"] == "i:1"
    assert pod["spec"]["priorityClassName"] == "high"


def test_render_uses_the_installed_airflow_version(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compat, "installed_airflow_version", lambda: "3.3.1")
    (pod,), _ = render("callback", "--callback-id", CALLBACK_ID)
    assert pod["metadata"]["labels"]["airflow_version"] == "3.3.1"


def test_render_without_airflow_needs_a_version(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compat, "installed_airflow_version", lambda: None)
    code, out, err = run("render", "task")
    assert (code, out) == (2, "")
    assert err == (
        "k8s-workloads render task: Airflow is not installed here, so its version is "
        "unknown: pass --airflow-version\n"
    )


@pytest.mark.parametrize(("argv", "message"), RENDER_ERRORS)
def test_render_input_errors_exit_2_without_a_traceback(
    tmp_path: Path, argv: list[str], message: str
) -> None:
    # Option values that are not paths are written to files first.
    files = {"--workload", "--template", "--override"}
    argv = [
        _write(tmp_path, f"f{index}", value)
        if index and argv[index - 1] in files and not value.startswith("/no/")
        else value
        for index, value in enumerate(argv)
    ]
    code, out, err = run("render", *argv, *V)
    assert (code, out) == (2, "")
    assert err.startswith(f"k8s-workloads render {argv[0]}: ")
    assert message in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["task", "--airflow-version", "three"], "not a PEP 440 version: 'three'"),
        (["task", "--airflow-version", "2.10.5"], "need Airflow 3.0+"),
        (["callback", "--callback-id", CALLBACK_ID, "--airflow-version", "3.2.0"],
         "CallbackWorkloadsUnsupported: callback workloads need Airflow 3.3.0 or newer"),
    ],
)  # fmt: skip
def test_render_version_errors(argv: list[str], message: str) -> None:
    code, out, err = run("render", *argv)
    assert (code, out) == (2, "")
    assert message in err


def test_render_reports_mutation_hook_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    from k8s_workloads.pods import build  # noqa: PLC0415
    from k8s_workloads.pods.errors import PodMutationHookError  # noqa: PLC0415

    def failing(*_: object, **__: object) -> dict[str, Any]:
        raise PodMutationHookError("the pod mutation hook raised RuntimeError()")

    monkeypatch.setattr(build, "construct_pod", failing)
    code, _, err = run("render", "task", *V)
    assert code == 2
    assert err == (
        "k8s-workloads render task: PodMutationHookError: the pod mutation hook raised "
        "RuntimeError()\n"
    )


def test_render_non_utf8_files_are_usage_errors(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_bytes(b"\xff\xfe")
    code, _, err = run("render", "task", *V, "--template", str(path))
    assert code == 2
    assert "is not UTF-8 text" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["render"],
        ["render", "callback", *V, "--callback-id"],  # the option without its value
        ["render", "task", "--try-number", "two"],
        ["render", "task", "-o", "xml"],
        ["render", "task", "--override", "o.yaml", "--log-path", "x"],
    ],
)
def test_render_argparse_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    assert "usage: k8s-workloads" in capsys.readouterr().err


def test_callback_render_has_no_override_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["render", "callback", "--callback-id", CALLBACK_ID, "--override", OVERRIDE])
    assert "unrecognized arguments: --override" in capsys.readouterr().err


def test_render_runs_as_a_console_script() -> None:
    completed = subprocess.run(
        [sys.executable, "-c", "from k8s_workloads.cli import main; raise SystemExit(main())",
         "render", "task", "--secure", "--airflow-version", "3.3.2"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    secret, pod = yaml.safe_load_all(completed.stdout)
    assert (secret["kind"], pod["kind"]) == ("Secret", "Pod")
    assert TASK_TOKEN not in completed.stdout


def test_render_reports_warnings_even_when_it_fails() -> None:
    code, out, err = run("render", "task", *V, "--pod-id", "x" * 80, "--namespace", "Bad_NS")
    assert (code, out) == (2, "")
    lines = err.splitlines()
    assert lines[0].startswith("k8s-workloads render task: warning: pod_id supplied is longer")
    assert lines[1].startswith("k8s-workloads render task: InvalidPod: the API server would refuse")


def test_render_callback_takes_its_ids_from_the_workload() -> None:
    # Issue 21: the README's "the ids default without --workload" held for tasks only.
    code, out, err = run("render", "callback", "--airflow-version", "3.3.2", "--secure")
    assert (code, err) == (0, "")
    secret, pod = yaml.safe_load_all(out)
    assert secret["kind"] == "Secret"
    assert pod["metadata"]["annotations"]["callback_id"] == CALLBACK_ID
    code, out, err = run(
        "render", "callback", "--airflow-version", "3.3.2", "--workload", "-", stdin="{}"
    )
    assert (code, out) == (2, "")
    assert "--callback-id is required: the workload has no callback.id" in err
