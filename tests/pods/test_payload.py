from __future__ import annotations

import base64
import copy
import dataclasses
import json
from collections.abc import Iterator
from importlib import resources
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from k8s_workloads import payload as payload_module
from k8s_workloads.codec import annotations_to_key
from k8s_workloads.keys import CallbackKey, TaskInstanceKey
from k8s_workloads.payload import (
    REDACTED,
    WORKLOAD_JSON_PATH,
    WORKLOAD_MOUNT_PATH,
    InvalidWorkloadJSON,
    InvalidWorkloadSecret,
    MissingBaseContainer,
    PayloadConflict,
    PayloadError,
    SecurePayload,
    attach_secure_payload,
    json_path_command_args,
    redact_manifest,
    redact_manifests,
    secure_workload_payload,
    workload_secret_name,
)
from k8s_workloads.pods import (
    EXECUTE_WORKLOAD_MODULE,
    construct_callback_pod,
    construct_task_pod,
    workload_command_args,
)
from k8s_workloads.validation import validate_manifest
from tests.support.strategies import wild_text

# A made-up JWT: header, claims, signature.
TOKEN = (
    "eyJhbGciOiJIUzUxMiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ0aS0xIiwic2NvcGUiOiJ3b3JrbG9hZCJ9"  # noqa: S105
    ".c2lnbmF0dXJlLW5vdC1yZWFs"
)
CALLBACK_ID = "019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e"


def _example(name: str) -> dict[str, Any]:
    text = resources.files("k8s_workloads").joinpath(f"examples/{name}").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def _workload(token: str = TOKEN, nested: str | None = None) -> dict[str, Any]:
    workload = _example("task_workload.json")
    workload["token"] = token
    if nested is not None:
        workload["ti"]["context_carrier"] = {"auth": {"token": nested}}
    return workload


def _task_pod(args: list[str], **overrides: Any) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "namespace": "airflow",
        "scheduler_job_id": 7,
        "pod_id": "etl-load-a1b2c3d4",
        "dag_id": "etl",
        "task_id": "load",
        "run_id": "manual__2026-06-07T01:50:23+00:00",
        "kube_image": "apache/airflow:3.3.2",
        "try_number": 1,
        "args": args,
        "airflow_version": "3.3.2",
    }
    kwargs.update(overrides)
    return construct_task_pod(**kwargs)


def _schema_valid(manifest: dict[str, Any]) -> None:
    """kubernetes-validate's strict schema check; a pod may lack apiVersion/kind."""
    kubernetes_validate.validate(
        {"apiVersion": "v1", "kind": "Pod", **manifest}, "1.37", strict=True
    )


@dataclasses.dataclass(frozen=True)
class _Parsed:
    """JSON text, decoded (so that comparisons ignore its layout)."""

    value: Any


def _strings(value: object) -> Iterator[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(value, _Parsed):
        yield from _strings(value.value)
    elif isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _spellings(token: str) -> set[str]:
    once = json.dumps(token)[1:-1]
    return {token, once, json.dumps(token, ensure_ascii=False)[1:-1], json.dumps(once)[1:-1]}


# --- secure_workload_payload ------------------------------------------------------------


def test_secure_payload_from_a_json_string_keeps_it_byte_for_byte() -> None:
    text = json.dumps(_workload(), indent=2)
    payload = secure_workload_payload(
        text, pod_name="etl-load-a1b2c3d4", namespace="airflow", labels={"airflow-worker": "7"}
    )
    assert payload.secret == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "etl-load-a1b2c3d4-workload",
            "namespace": "airflow",
            "labels": {"airflow-worker": "7"},
        },
        "type": "Opaque",
        "immutable": True,
        "stringData": {"workload.json": text},
    }
    assert payload.args == [
        "python", "-m", EXECUTE_WORKLOAD_MODULE,
        "--json-path", "/run/secrets/airflow-workload/workload.json",
    ]  # fmt: skip
    assert payload.args == json_path_command_args()
    assert payload.volume == {
        "name": "airflow-workload",
        "secret": {"secretName": "etl-load-a1b2c3d4-workload", "defaultMode": 0o440},
    }
    assert payload.volume_mount == {
        "name": "airflow-workload",
        "mountPath": WORKLOAD_MOUNT_PATH,
        "readOnly": True,
    }
    assert f"{WORKLOAD_MOUNT_PATH}/workload.json" == WORKLOAD_JSON_PATH
    assert payload.secret_name == "etl-load-a1b2c3d4-workload"  # noqa: S105
    assert payload.namespace == "airflow"
    _schema_valid(payload.secret)


def test_secure_payload_from_a_mapping_is_compact_json() -> None:
    payload = secure_workload_payload(_workload(), pod_name="p", namespace="ns")
    text = payload.secret["stringData"]["workload.json"]
    assert json.loads(text) == _workload()
    assert text == workload_command_args(_workload())[-1]
    assert "labels" not in payload.secret["metadata"]


def test_secure_payload_repr_never_shows_the_token() -> None:
    payload = secure_workload_payload(_workload(), pod_name="p", namespace="ns")
    assert TOKEN not in repr(payload)
    assert "secret=" not in repr(payload)
    with pytest.raises(AttributeError):
        payload.args = []  # type: ignore[misc]


def test_secure_payload_options() -> None:
    name = "custom.name"
    payload = secure_workload_payload(
        "{}", pod_name="p", namespace="ns", secret_name=name, default_mode=0o400
    )
    assert payload.secret_name == name
    assert payload.volume["secret"] == {"secretName": "custom.name", "defaultMode": 256}


@pytest.mark.parametrize(
    ("pod_name", "expected"),
    [
        ("etl-load-x", "etl-load-x-workload"),
        ("a" * 300, "a" * 244 + "-workload"),
        ("a" * 243 + "-b", "a" * 243 + "-workload"),
        ("a" * 243 + ".b", "a" * 243 + "-workload"),
    ],
)
def test_secret_name_is_cut_to_fit_253(pod_name: str, expected: str) -> None:
    assert workload_secret_name(pod_name) == expected
    assert len(expected) <= 253
    payload = secure_workload_payload("{}", pod_name=pod_name, namespace="ns")
    assert payload.secret_name == expected


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"pod_name": "Bad_Pod"}, "metadata.name"),
        ({"pod_name": "p", "secret_name": "-x"}, "metadata.name"),
        ({"pod_name": "p", "secret_name": "a" * 254}, "metadata.name"),
        ({"pod_name": "p", "namespace": "Not.A.Label"}, "metadata.namespace"),
        ({"pod_name": "p", "labels": {"bad key!": "v"}}, "metadata.labels['bad key!']"),
        ({"pod_name": "p", "labels": {"k": "-bad-"}}, "metadata.labels['k']"),
    ],
)
def test_secure_payload_rejects_what_the_api_server_would(
    kwargs: dict[str, Any], field: str
) -> None:
    kwargs.setdefault("namespace", "ns")
    with pytest.raises(InvalidWorkloadSecret) as caught:
        secure_workload_payload("{}", **kwargs)
    assert [violation.field for violation in caught.value.violations] == [field]
    assert field in str(caught.value)


@pytest.mark.parametrize(
    ("workload", "message"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "must be a JSON object, got list"),
        ('"a string"', "must be a JSON object, got str"),
        ({"token": float("nan")}, "cannot be written as JSON"),
        ({"blob": "x" * (1024 * 1024)}, "a Secret holds at most 1048576"),
    ],
)
def test_secure_payload_rejects_bad_workloads(workload: Any, message: str) -> None:
    with pytest.raises(InvalidWorkloadJSON, match=message):
        secure_workload_payload(workload, pod_name="p", namespace="ns")


def test_secure_payload_rejects_bad_argument_types() -> None:
    with pytest.raises(TypeError, match="JSON string or a mapping"):
        secure_workload_payload(b"{}", pod_name="p", namespace="ns")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="default_mode must be an int"):
        secure_workload_payload("{}", pod_name="p", namespace="ns", default_mode=True)
    with pytest.raises(ValueError, match="between 0 and 0o777"):
        secure_workload_payload("{}", pod_name="p", namespace="ns", default_mode=0o1000)


def test_errors_are_typed_value_errors_with_one_line_docstrings() -> None:
    for error in (
        PayloadError,
        InvalidWorkloadJSON,
        InvalidWorkloadSecret,
        MissingBaseContainer,
        PayloadConflict,
    ):
        assert issubclass(error, ValueError)
        assert issubclass(error, PayloadError)
        assert error.__doc__ is not None
        assert "\n" not in error.__doc__.strip()
    assert set(payload_module.__all__) <= set(dir(payload_module))


def test_payload_module_never_imports_kubernetes() -> None:
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    code = "import sys, k8s_workloads.payload; print('kubernetes' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"


# --- attach_secure_payload --------------------------------------------------------------


def test_attach_to_a_task_pod_moves_the_token_out_of_the_spec() -> None:
    workload = _workload()
    template = {
        "spec": {
            "containers": [
                {
                    "name": "base",
                    "volumeMounts": [{"name": "logs", "mountPath": "/opt/airflow/logs"}],
                },
                {"name": "sidecar", "image": "busybox"},
            ],
            "volumes": [{"name": "logs", "emptyDir": {}}],
        }
    }
    pod = _task_pod(workload_command_args(workload), base_worker_pod=template)
    assert TOKEN in json.dumps(pod)  # the insecure default
    before = copy.deepcopy(pod)
    payload = secure_workload_payload(
        workload,
        pod_name=pod["metadata"]["name"],
        namespace=pod["metadata"]["namespace"],
        labels=pod["metadata"]["labels"],
    )
    secure = attach_secure_payload(pod, payload)
    assert pod == before  # not mutated
    assert TOKEN not in json.dumps(secure)
    base = secure["spec"]["containers"][0]
    assert base["args"] == payload.args
    assert base["volumeMounts"] == [
        {"name": "logs", "mountPath": "/opt/airflow/logs"},
        payload.volume_mount,
    ]
    assert secure["spec"]["volumes"] == [{"name": "logs", "emptyDir": {}}, payload.volume]
    assert secure["spec"]["containers"][1] == {"name": "sidecar", "image": "busybox"}
    # The copies are the manifest's own: changing them leaves the payload alone.
    base["volumeMounts"][-1]["readOnly"] = False
    assert payload.volume_mount["readOnly"] is True
    assert validate_manifest(secure) == []
    _schema_valid(secure)
    _schema_valid(payload.secret)
    assert json.loads(payload.secret["stringData"]["workload.json"]) == workload


def test_pod_built_with_json_path_args_never_holds_the_token() -> None:
    workload = _workload()
    pod = _task_pod(json_path_command_args())
    payload = secure_workload_payload(workload, pod_name="etl-load-a1b2c3d4", namespace="airflow")
    secure = attach_secure_payload(pod, payload)
    assert TOKEN not in json.dumps(pod)
    assert TOKEN not in json.dumps(secure)
    assert secure["spec"]["containers"][0]["args"] == json_path_command_args()
    assert validate_manifest(secure) == []
    _schema_valid(secure)


def test_attach_to_a_callback_pod_keeps_its_identity() -> None:
    workload = _example("callback_workload.json")
    pod = construct_callback_pod(
        callback_id=CALLBACK_ID,
        namespace="airflow",
        scheduler_job_id=7,
        kube_image="apache/airflow:3.3.2",
        args=json_path_command_args(),
        airflow_version="3.3.2",
    )
    payload = secure_workload_payload(
        workload, pod_name=pod["metadata"]["name"], namespace="airflow"
    )
    secure = attach_secure_payload(pod, payload)
    assert workload["token"] not in json.dumps(secure)
    metadata = secure["metadata"]
    key = annotations_to_key(metadata["annotations"], metadata["labels"], airflow_version="3.3.2")
    assert key == CallbackKey(CALLBACK_ID)
    assert validate_manifest(secure) == []
    _schema_valid(secure)


def test_attach_finds_base_by_name_and_accepts_a_pod_without_namespace() -> None:
    pod = {"spec": {"containers": [{"name": "init"}, {"name": "base", "args": ["x"]}]}}
    payload = secure_workload_payload("{}", pod_name="p", namespace="ns")
    secure = attach_secure_payload(pod, payload)
    assert secure["spec"]["containers"][1]["args"] == payload.args
    assert secure["spec"]["containers"][0] == {"name": "init"}


@pytest.mark.parametrize(
    "pod",
    [
        {},
        {"spec": {}},
        {"spec": {"containers": []}},
        {"spec": {"containers": [{"name": "main"}]}},
        {"spec": {"containers": "base"}},
        {"spec": {"containers": ["base"]}},
    ],
)
def test_attach_needs_a_base_container(pod: dict[str, Any]) -> None:
    payload = secure_workload_payload("{}", pod_name="p", namespace="ns")
    with pytest.raises(MissingBaseContainer, match="no 'base' container"):
        attach_secure_payload(pod, payload)


def test_attach_refuses_conflicts() -> None:
    payload = secure_workload_payload("{}", pod_name="p", namespace="ns")
    pod = _task_pod(json_path_command_args(), namespace="ns")
    secure = attach_secure_payload(pod, payload)
    with pytest.raises(PayloadConflict, match="already has a volume named 'airflow-workload'"):
        attach_secure_payload(secure, payload)
    mounted = copy.deepcopy(pod)
    mounted["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "other", "mountPath": WORKLOAD_MOUNT_PATH}
    ]
    with pytest.raises(PayloadConflict, match="already mounts 'other'"):
        attach_secure_payload(mounted, payload)
    with pytest.raises(PayloadConflict, match="namespace 'airflow' but the Secret in 'ns'"):
        attach_secure_payload(_task_pod(json_path_command_args()), payload)
    broken = copy.deepcopy(pod)
    broken["spec"]["volumes"] = {"name": "x"}
    with pytest.raises(PayloadConflict, match=r"spec\.volumes must be a list"):
        attach_secure_payload(broken, payload)
    with pytest.raises(TypeError, match="must be a mapping"):
        attach_secure_payload([], payload)  # type: ignore[arg-type]


# --- redact_manifest: examples ----------------------------------------------------------


def test_redacts_the_workload_token_in_args_and_everywhere_else() -> None:
    workload = _workload(nested="nested-secret-token")
    pod = _task_pod(workload_command_args(workload))
    pod["metadata"]["annotations"]["debug"] = f"Authorization: Bearer {TOKEN}"
    pod["spec"]["containers"][0]["env"].append({"name": "AIRFLOW_TOKEN", "value": TOKEN})
    pod["spec"]["containers"][0]["command"] = ["sh", "-c", f"echo nested-secret-token {TOKEN}"]
    before = copy.deepcopy(pod)
    redacted = redact_manifest(pod)
    assert pod == before
    text = json.dumps(redacted)
    assert TOKEN not in text
    assert "nested-secret-token" not in text
    args = redacted["spec"]["containers"][0]["args"]
    assert args[:4] == ["python", "-m", EXECUTE_WORKLOAD_MODULE, "--json-string"]
    assert json.loads(args[4]) == _workload(REDACTED, nested=REDACTED)
    assert redacted["metadata"]["annotations"]["debug"] == f"Authorization: Bearer {REDACTED}"
    assert redacted["spec"]["containers"][0]["env"][-1]["value"] == REDACTED
    assert redacted["spec"]["containers"][0]["command"][2] == f"echo {REDACTED} {REDACTED}"
    # Nothing else changed.
    redacted["spec"]["containers"][0]["args"] = before["spec"]["containers"][0]["args"]
    redacted["spec"]["containers"][0]["command"] = before["spec"]["containers"][0]["command"]
    redacted["spec"]["containers"][0]["env"] = before["spec"]["containers"][0]["env"]
    redacted["metadata"]["annotations"]["debug"] = before["metadata"]["annotations"]["debug"]
    assert redacted == before


def test_redacts_the_equals_form_and_init_containers_and_command() -> None:
    text = json.dumps({"token": TOKEN})
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "spec": {
            "initContainers": [{"name": "i", "command": ["run", f"--json-string={text}"]}],
            "containers": [{"name": "base", "command": ["run", "--json-string", text]}],
        },
    }
    redacted = redact_manifest(pod)
    assert redacted["spec"]["initContainers"][0]["command"][1] == (
        "--json-string=" + json.dumps({"token": REDACTED})
    )
    assert redacted["spec"]["containers"][0]["command"][2] == json.dumps({"token": REDACTED})


def test_abbreviated_flags_that_argparse_accepts_are_recognised() -> None:
    text = json.dumps({"token": "abc-token"})
    args = ["--json-str", text, f"--json-s={text}", "--json-", "not json", "--json-path", "{x"]
    redacted = redact_manifest({"spec": {"containers": [{"name": "b", "args": args}]}})
    assert redacted["spec"]["containers"][0]["args"] == [
        "--json-str", json.dumps({"token": REDACTED}),
        "--json-s=" + json.dumps({"token": REDACTED}),
        "--json-", "not json", "--json-path", "{x",
    ]  # fmt: skip


def test_a_json_string_that_is_not_json_is_redacted_whole() -> None:
    pod = {
        "spec": {
            "containers": [
                {"name": "a", "args": ["--json-string", '{"token": "abc", oops']},
                {"name": "b", "args": ["--json-string=not json at all"]},
            ]
        }
    }
    redacted = redact_manifest(pod)
    assert redacted["spec"]["containers"][0]["args"] == ["--json-string", REDACTED]
    assert redacted["spec"]["containers"][1]["args"] == [f"--json-string={REDACTED}"]


def test_a_trailing_json_string_flag_and_non_string_items_are_left_alone() -> None:
    pod = {"spec": {"containers": [{"name": "a", "args": ["x", "--json-string"]}], "n": [1, None]}}
    assert redact_manifest(pod) == pod
    odd = {"spec": {"containers": [{"name": "a", "args": ["--json-string", 5]}]}}
    assert redact_manifest(odd) == odd


def test_tokens_with_json_escapes_are_found_in_json_text_and_in_raw_strings() -> None:
    token = 'tok"en\\with\n"escapes"/é💥'  # noqa: S105 - made up
    workload = {"token": token, "ti": {"dag_id": "etl"}}
    args = workload_command_args(workload)
    last_applied = json.dumps({"spec": {"containers": [{"args": args}]}})
    container = {"name": "base", "args": args, "env": [{"name": "T", "value": token}]}
    pod = {
        "metadata": {"annotations": {"last-applied": last_applied}},
        "spec": {"containers": [container]},
    }
    redacted = redact_manifest(pod)
    assert token not in json.dumps(redacted, ensure_ascii=False)
    for spelling in _spellings(token):
        assert spelling not in json.dumps(redacted)
    args = redacted["spec"]["containers"][0]["args"]
    assert json.loads(args[4]) == {"token": REDACTED, "ti": {"dag_id": "etl"}}
    annotation = redacted["metadata"]["annotations"]["last-applied"]
    assert json.loads(json.loads(annotation)["spec"]["containers"][0]["args"][4]) == {
        "token": REDACTED,
        "ti": {"dag_id": "etl"},
    }
    assert redacted["spec"]["containers"][0]["env"][0]["value"] == REDACTED


# 'a","b' masked as text would turn ["a","b"] into ["***REDACTED***"]: valid, but wrong.
@pytest.mark.parametrize("token", ['","', '":"', ", ", "etl", "1", 'a","b'])
def test_a_token_that_is_also_json_syntax_keeps_the_json_valid(token: str) -> None:
    workload = {"token": token, "ti": {"dag_id": "x", "list": ["a", "b"]}, "n": 1}
    pod = {"spec": {"containers": [{"name": "base", "args": workload_command_args(workload)}]}}
    args = redact_manifest(pod)["spec"]["containers"][0]["args"]
    assert json.loads(args[4]) == {
        "token": REDACTED, "ti": {"dag_id": "x", "list": ["a", "b"]}, "n": 1,
    }  # fmt: skip


def test_a_token_spelt_with_other_escapes_is_still_redacted() -> None:
    text = '{"token": "\\u0061bc\\u002fdef", "x": "keep"}'  # abc/def, written with \u escapes
    pod = {"spec": {"containers": [{"name": "b", "args": ["--json-string", text]}]}}
    redacted = redact_manifest(pod)
    assert json.loads(redacted["spec"]["containers"][0]["args"][1]) == {
        "token": REDACTED,
        "x": "keep",
    }


def test_a_rewritten_json_text_with_a_lone_surrogate_stays_encodable() -> None:
    # Issue 11, item 2: rewriting (a token spelt with escapes) with ensure_ascii=False put
    # the raw surrogate of "\\ud800" back, and encoding the Secret's data raised.
    text = '{"token": "\\u0061bc", "x": "\\ud800"}'
    secret = {"kind": "Secret", "data": {"w": base64.b64encode(text.encode()).decode()}}
    pod = {"spec": {"containers": [{"name": "b", "args": ["--json-string", text]}]}}
    redacted_secret, redacted_pod = redact_manifests([secret, pod])
    data = base64.b64decode(redacted_secret["data"]["w"]).decode("utf-8")
    assert json.loads(data) == {"token": REDACTED, "x": "\ud800"}
    args = redacted_pod["spec"]["containers"][0]["args"]
    args[1].encode("utf-8")
    assert json.loads(args[1]) == {"token": REDACTED, "x": "\ud800"}


def test_redacts_secrets_string_data_and_data() -> None:
    workload_text = json.dumps(_workload())
    secret: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "annotations": {"note": f"holds {TOKEN}"}},
        "stringData": {"workload.json": workload_text, "plain": "not json", "token": "bare-one"},
        "data": {
            "encoded.json": base64.b64encode(workload_text.encode()).decode(),
            "token": base64.b64encode(b"bare-two").decode(),
            "other": base64.b64encode(b"unrelated").decode(),
            "binary": base64.b64encode(b"\xff\xfe").decode(),
            "broken": "%%% not base64",
        },
    }
    before = copy.deepcopy(secret)
    redacted = redact_manifest(secret)
    assert secret == before
    assert json.loads(redacted["stringData"]["workload.json"]) == _workload(REDACTED)
    assert redacted["stringData"]["workload.json"] == workload_text.replace(TOKEN, REDACTED)
    assert redacted["stringData"]["plain"] == "not json"
    assert redacted["stringData"]["token"] == REDACTED
    data = redacted["data"]
    assert json.loads(base64.b64decode(data["encoded.json"])) == _workload(REDACTED)
    assert base64.b64decode(data["token"]) == REDACTED.encode()
    assert data["other"] == before["data"]["other"]
    assert data["binary"] == before["data"]["binary"]
    assert data["broken"] == "%%% not base64"
    assert redacted["metadata"]["annotations"]["note"] == f"holds {REDACTED}"
    assert "bare-one" not in json.dumps(redacted)
    kubernetes_validate.validate(redacted, "1.37", strict=True)


def test_tokens_found_in_one_manifest_are_masked_in_all() -> None:
    secret = secure_workload_payload(_workload(), pod_name="p", namespace="ns").secret
    pod = _task_pod(json_path_command_args())
    pod["spec"]["containers"][0]["env"].append({"name": "LEAK", "value": TOKEN})
    redacted_secret, redacted_pod = redact_manifests([secret, pod])
    assert redacted_pod["spec"]["containers"][0]["env"][-1]["value"] == REDACTED
    assert TOKEN not in json.dumps(redacted_secret)
    # Alone, the pod carries nothing that says its env value is a token.
    assert redact_manifest(pod) == pod


def test_lists_of_manifests_are_redacted_as_one() -> None:
    secret = secure_workload_payload(_workload(), pod_name="p", namespace="ns").secret
    pod = _task_pod(json_path_command_args())
    pod["metadata"]["annotations"]["leak"] = TOKEN
    listed = {"apiVersion": "v1", "kind": "List", "items": [secret, pod]}
    redacted = redact_manifest(listed)
    assert TOKEN not in json.dumps(redacted)
    assert redacted["items"][1]["metadata"]["annotations"]["leak"] == REDACTED


def test_redaction_without_tokens_is_an_equal_copy() -> None:
    pod = _task_pod(workload_command_args(_workload(token="")))
    pod["spec"]["extra"] = ({"a": (1, 2.5, True)},)  # tuples become lists
    redacted = redact_manifest(pod)
    assert redacted is not pod
    assert redacted["spec"]["containers"] is not pod["spec"]["containers"]
    assert redacted["spec"]["extra"] == [{"a": [1, 2.5, True]}]
    del pod["spec"]["extra"], redacted["spec"]["extra"]
    assert redacted == pod


def test_redaction_is_idempotent_and_accepts_any_iterable() -> None:
    pod = _task_pod(workload_command_args(_workload()))
    once = redact_manifests(iter([pod]))
    assert redact_manifests(once) == once
    assert redact_manifests([]) == []


def test_redaction_rejects_non_mappings() -> None:
    with pytest.raises(TypeError, match="must be a mapping, got list"):
        redact_manifest([])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got str"):
        redact_manifests(["pod"])  # type: ignore[list-item]


def test_a_token_reformed_across_the_mask_masks_the_whole_string() -> None:
    # "*x" reappears when "a*xx" becomes "a***REDACTED***x"; nothing of it is kept.
    pod = {"spec": {"containers": [{"name": "b", "args": ["--json-string", '{"token":"*x"}']}],
                    "note": "a*xx"}}  # fmt: skip
    redacted = redact_manifest(pod)
    assert redacted["spec"]["note"] == REDACTED


# --- properties -------------------------------------------------------------------------

_METACHARACTERS = [*'.^$*+?{}[]\\|()"/\n\t\r\b\f\x00\x1f\u2028é💥-_=,:;', "\\u0041"]
tokens = st.one_of(
    st.from_regex(
        r"[A-Za-z0-9_-]{10,40}\.[A-Za-z0-9_-]{10,60}\.[A-Za-z0-9_-]{10,40}", fullmatch=True
    ),
    st.lists(st.sampled_from(_METACHARACTERS) | st.characters(), min_size=1, max_size=24).map(
        "".join
    ),
    st.text(min_size=1, max_size=30),
).filter(lambda token: token not in REDACTED)


def _manifests(token: str, nested: str) -> list[dict[str, Any]]:
    """A Secret and a Pod as an executor (or a careless user) might leak the tokens."""
    workload = _workload(token, nested=nested)
    pod = _task_pod(workload_command_args(workload))
    pod["metadata"]["annotations"]["seen-token"] = token
    pod["spec"]["containers"][0]["env"].append({"name": "TOKEN", "value": token})
    pod["spec"]["initContainers"] = [
        {"name": "init", "image": "busybox", "args": [f"--json-string={json.dumps(workload)}"]}
    ]
    secret = secure_workload_payload(workload, pod_name="p", namespace="airflow").secret
    secret["data"] = {"copy.json": base64.b64encode(json.dumps(workload).encode()).decode()}
    return [secret, pod]


def _decoded(manifests: list[dict[str, Any]]) -> list[Any]:
    """The manifests with every JSON text and base64 value they carry decoded in place."""

    def decode(value: object) -> Any:
        if isinstance(value, dict):
            return {key: decode(item) for key, item in value.items()}
        if isinstance(value, list):
            return [decode(item) for item in value]
        if isinstance(value, str):
            # JSON text, or --json-string=<JSON> (a short token may have masked the flag).
            for text in (value, value.partition("=")[2]):
                try:
                    return _Parsed(decode(json.loads(text)))
                except ValueError:  # noqa: PERF203 - two tries
                    continue
            return value
        return value

    decoded = decode(manifests)
    # "data" is the Secret's last field; found by place, as a token may mask its name.
    data = list(decoded[0].values())[-1]
    for key, value in data.items():
        data[key] = decode(base64.b64decode(value).decode())
    return list(decoded)


def _occurs_elsewhere(token: str, nested: str) -> bool:
    """Whether a spelling of either token is part of the manifests' other text."""
    skeleton = _manifests(REDACTED, REDACTED)
    texts = [json.dumps(skeleton), json.dumps(skeleton, ensure_ascii=False)]
    texts += list(_strings(_decoded(skeleton)))
    return any(s in text for t in (token, nested) for s in _spellings(t) for text in texts)


@given(token=tokens, nested=tokens)
def test_no_token_survives_redaction(token: str, nested: str) -> None:
    manifests = _manifests(token, nested)
    redacted = redact_manifests(manifests)
    # Wherever the tokens were, every value decoded from the output is free of them.
    for text in _strings(_decoded(redacted)):
        assert token not in text
        assert nested not in text
    if not _occurs_elsewhere(token, nested):
        dumped = json.dumps(redacted)
        for spelling in _spellings(token) | _spellings(nested):
            assert spelling not in dumped
        assert token not in json.dumps(redacted, ensure_ascii=False)


@given(token=tokens, nested=tokens)
def test_redaction_changes_nothing_but_the_tokens(token: str, nested: str) -> None:
    assume(not _occurs_elsewhere(token, nested))
    manifests = _manifests(token, nested)
    before = copy.deepcopy(manifests)
    redacted = redact_manifests(manifests)
    assert manifests == before
    assert _decoded(redacted) == _decoded(_manifests(REDACTED, REDACTED))
    # JSON text is kept as written wherever masking changed only the tokens.
    assert redacted[1]["metadata"] == _manifests(REDACTED, REDACTED)[1]["metadata"]


@given(token=tokens)
def test_secure_pods_do_not_depend_on_the_token(token: str) -> None:
    secure = []
    for each in (token, TOKEN):
        workload = _workload(each)
        pod = _task_pod(workload_command_args(workload))
        payload = secure_workload_payload(workload, pod_name="p", namespace="airflow")
        assert json.loads(payload.secret["stringData"]["workload.json"])["token"] == each
        secure.append(attach_secure_payload(pod, payload))
    assert secure[0] == secure[1]
    assert TOKEN not in json.dumps(secure[0])


@given(token=tokens)
def test_secure_payload_is_a_valid_secret_for_any_token(token: str) -> None:
    payload = secure_workload_payload(_workload(token), pod_name="etl-load-x", namespace="airflow")
    assert isinstance(payload, SecurePayload)
    kubernetes_validate.validate(payload.secret, "1.37", strict=True)
    assert json.loads(payload.secret["stringData"]["workload.json"]) == _workload(token)
    assert REDACTED in json.dumps(redact_manifest(payload.secret))


def test_task_key_round_trips_through_a_secure_pod() -> None:
    payload = secure_workload_payload(
        _workload(), pod_name="etl-load-a1b2c3d4", namespace="airflow"
    )
    secure = attach_secure_payload(_task_pod(json_path_command_args()), payload)
    metadata = secure["metadata"]
    assert annotations_to_key(metadata["annotations"], metadata["labels"]) == TaskInstanceKey(
        "etl", "load", "manual__2026-06-07T01:50:23+00:00", 1
    )


@pytest.mark.parametrize("name", ["task_workload.json", "callback_workload.json"])
def test_bundled_workloads_are_what_airflow_reads(name: str) -> None:
    """In the Airflow environment: the examples, and the Secret's copy, parse as workloads."""
    workloads = pytest.importorskip("airflow.executors.workloads")
    pydantic = pytest.importorskip("pydantic")
    adapter = pydantic.TypeAdapter(workloads.All)
    text = resources.files("k8s_workloads").joinpath(f"examples/{name}").read_text("utf-8")
    workload = adapter.validate_json(text)
    assert json.loads(workload.model_dump_json()) == json.loads(text)
    secret = secure_workload_payload(text, pod_name="p", namespace="ns").secret
    assert adapter.validate_json(secret["stringData"]["workload.json"]) == workload


@given(token=tokens, value=wild_text)
def test_redaction_never_raises_on_any_text(token: str, value: str) -> None:
    workload = {"token": token, "ti": {"dag_id": value}, value: [value]}
    text = json.dumps(workload)
    secret = {"kind": "Secret", "stringData": {value: text}, "data": {"w": value}}
    pod = {"spec": {"containers": [{"name": value, "args": ["--json-string", text, value]}]}}
    for redacted in redact_manifests([secret, pod]):
        json.dumps(redacted).encode("utf-8")
