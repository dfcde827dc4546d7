"""Redaction (:mod:`k8s_workloads.pods.redaction`, offered by :mod:`k8s_workloads.pods.payload`):
the Execution API token masked in manifests, wherever and however it is spelt."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest

from k8s_workloads.display import REDACTED
from k8s_workloads.pods import (
    EXECUTE_WORKLOAD_MODULE,
    workload_command_args,
)
from k8s_workloads.pods.payload import (
    json_path_command_args,
    secure_workload_payload,
)
from k8s_workloads.pods.redaction import redact_manifest, redact_manifests
from tests.support.payloads import (
    TOKEN,
    payload_task_pod,
    spellings,
    task_workload,
)

# --- redact_manifest: examples ----------------------------------------------------------


def test_redacts_the_workload_token_in_args_and_everywhere_else() -> None:
    workload = task_workload(nested="nested-secret-token")
    pod = payload_task_pod(workload_command_args(workload))
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
    assert json.loads(args[4]) == task_workload(REDACTED, nested=REDACTED)
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
    for spelling in spellings(token):
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
    workload_text = json.dumps(task_workload())
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
    assert json.loads(redacted["stringData"]["workload.json"]) == task_workload(REDACTED)
    assert redacted["stringData"]["workload.json"] == workload_text.replace(TOKEN, REDACTED)
    assert redacted["stringData"]["plain"] == "not json"
    assert redacted["stringData"]["token"] == REDACTED
    data = redacted["data"]
    assert json.loads(base64.b64decode(data["encoded.json"])) == task_workload(REDACTED)
    assert base64.b64decode(data["token"]) == REDACTED.encode()
    assert data["other"] == before["data"]["other"]
    assert data["binary"] == before["data"]["binary"]
    assert data["broken"] == "%%% not base64"
    assert redacted["metadata"]["annotations"]["note"] == f"holds {REDACTED}"
    assert "bare-one" not in json.dumps(redacted)
    kubernetes_validate.validate(redacted, "1.37", strict=True)


def test_tokens_found_in_one_manifest_are_masked_in_all() -> None:
    secret = secure_workload_payload(task_workload(), pod_name="p", namespace="ns").secret
    pod = payload_task_pod(json_path_command_args())
    pod["spec"]["containers"][0]["env"].append({"name": "LEAK", "value": TOKEN})
    redacted_secret, redacted_pod = redact_manifests([secret, pod])
    assert redacted_pod["spec"]["containers"][0]["env"][-1]["value"] == REDACTED
    assert TOKEN not in json.dumps(redacted_secret)
    # Alone, the pod carries nothing that says its env value is a token.
    assert redact_manifest(pod) == pod


def test_lists_of_manifests_are_redacted_as_one() -> None:
    secret = secure_workload_payload(task_workload(), pod_name="p", namespace="ns").secret
    pod = payload_task_pod(json_path_command_args())
    pod["metadata"]["annotations"]["leak"] = TOKEN
    listed = {"apiVersion": "v1", "kind": "List", "items": [secret, pod]}
    redacted = redact_manifest(listed)
    assert TOKEN not in json.dumps(redacted)
    assert redacted["items"][1]["metadata"]["annotations"]["leak"] == REDACTED


def test_redaction_without_tokens_is_an_equal_copy() -> None:
    pod = payload_task_pod(workload_command_args(task_workload(token="")))
    pod["spec"]["extra"] = ({"a": (1, 2.5, True)},)  # tuples become lists
    redacted = redact_manifest(pod)
    assert redacted is not pod
    assert redacted["spec"]["containers"] is not pod["spec"]["containers"]
    assert redacted["spec"]["extra"] == [{"a": [1, 2.5, True]}]
    del pod["spec"]["extra"], redacted["spec"]["extra"]
    assert redacted == pod


def test_redaction_is_idempotent_and_accepts_any_iterable() -> None:
    pod = payload_task_pod(workload_command_args(task_workload()))
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
