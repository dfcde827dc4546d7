"""The secure payload (:mod:`k8s_workloads.pods.payload`): the workload JSON, token and all,
moved out of the pod spec into a Secret the pod mounts."""

from __future__ import annotations

import base64
import copy
import json
from importlib import resources
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from k8s_workloads.display import REDACTED
from k8s_workloads.keys import CallbackKey, TaskInstanceKey
from k8s_workloads.pods import (
    EXECUTE_WORKLOAD_MODULE,
    construct_callback_pod,
    workload_command_args,
)
from k8s_workloads.pods import payload as payload_module
from k8s_workloads.pods.codec import annotations_to_key
from k8s_workloads.pods.payload import (
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
    secure_workload_payload,
    workload_secret_name,
)
from k8s_workloads.pods.redaction import redact_manifest, redact_manifests
from k8s_workloads.pods.validation import validate_manifest
from tests.support.payloads import (
    CALLBACK_ID,
    TOKEN,
    Parsed,
    example,
    payload_task_pod,
    schema_valid,
    spellings,
    strings,
    task_workload,
)
from tests.support.strategies import wild_text

# --- secure_workload_payload ------------------------------------------------------------


def test_secure_payload_from_a_json_string_keeps_it_byte_for_byte() -> None:
    text = json.dumps(task_workload(), indent=2)
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
    schema_valid(payload.secret)


def test_secure_payload_from_a_mapping_is_compact_json() -> None:
    payload = secure_workload_payload(task_workload(), pod_name="p", namespace="ns")
    text = payload.secret["stringData"]["workload.json"]
    assert json.loads(text) == task_workload()
    assert text == workload_command_args(task_workload())[-1]
    assert "labels" not in payload.secret["metadata"]


def test_secure_payload_repr_never_shows_the_token() -> None:
    payload = secure_workload_payload(task_workload(), pod_name="p", namespace="ns")
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

    code = "import sys, k8s_workloads.pods.payload; print('kubernetes' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"


# --- attach_secure_payload --------------------------------------------------------------


def test_attach_to_a_task_pod_moves_the_token_out_of_the_spec() -> None:
    workload = task_workload()
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
    pod = payload_task_pod(workload_command_args(workload), base_worker_pod=template)
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
    schema_valid(secure)
    schema_valid(payload.secret)
    assert json.loads(payload.secret["stringData"]["workload.json"]) == workload


def test_pod_built_with_json_path_args_never_holds_the_token() -> None:
    workload = task_workload()
    pod = payload_task_pod(json_path_command_args())
    payload = secure_workload_payload(workload, pod_name="etl-load-a1b2c3d4", namespace="airflow")
    secure = attach_secure_payload(pod, payload)
    assert TOKEN not in json.dumps(pod)
    assert TOKEN not in json.dumps(secure)
    assert secure["spec"]["containers"][0]["args"] == json_path_command_args()
    assert validate_manifest(secure) == []
    schema_valid(secure)


def test_attach_to_a_callback_pod_keeps_its_identity() -> None:
    workload = example("callback_workload.json")
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
    schema_valid(secure)


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
    pod = payload_task_pod(json_path_command_args(), namespace="ns")
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
        attach_secure_payload(payload_task_pod(json_path_command_args()), payload)
    broken = copy.deepcopy(pod)
    broken["spec"]["volumes"] = {"name": "x"}
    with pytest.raises(PayloadConflict, match=r"spec\.volumes must be a list"):
        attach_secure_payload(broken, payload)
    with pytest.raises(TypeError, match="must be a mapping"):
        attach_secure_payload([], payload)  # type: ignore[arg-type]


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
    workload = task_workload(token, nested=nested)
    pod = payload_task_pod(workload_command_args(workload))
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
                    return Parsed(decode(json.loads(text)))
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
    texts += list(strings(_decoded(skeleton)))
    return any(s in text for t in (token, nested) for s in spellings(t) for text in texts)


@given(token=tokens, nested=tokens)
def test_no_token_survives_redaction(token: str, nested: str) -> None:
    manifests = _manifests(token, nested)
    redacted = redact_manifests(manifests)
    # Wherever the tokens were, every value decoded from the output is free of them.
    for text in strings(_decoded(redacted)):
        assert token not in text
        assert nested not in text
    if not _occurs_elsewhere(token, nested):
        dumped = json.dumps(redacted)
        for spelling in spellings(token) | spellings(nested):
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
        workload = task_workload(each)
        pod = payload_task_pod(workload_command_args(workload))
        payload = secure_workload_payload(workload, pod_name="p", namespace="airflow")
        assert json.loads(payload.secret["stringData"]["workload.json"])["token"] == each
        secure.append(attach_secure_payload(pod, payload))
    assert secure[0] == secure[1]
    assert TOKEN not in json.dumps(secure[0])


@given(token=tokens)
def test_secure_payload_is_a_valid_secret_for_any_token(token: str) -> None:
    payload = secure_workload_payload(
        task_workload(token), pod_name="etl-load-x", namespace="airflow"
    )
    assert isinstance(payload, SecurePayload)
    kubernetes_validate.validate(payload.secret, "1.37", strict=True)
    assert json.loads(payload.secret["stringData"]["workload.json"]) == task_workload(token)
    assert REDACTED in json.dumps(redact_manifest(payload.secret))


def test_task_key_round_trips_through_a_secure_pod() -> None:
    payload = secure_workload_payload(
        task_workload(), pod_name="etl-load-a1b2c3d4", namespace="airflow"
    )
    secure = attach_secure_payload(payload_task_pod(json_path_command_args()), payload)
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
