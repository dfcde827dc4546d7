"""Keeping the Execution API token out of pod specs, and out of what you print.

Airflow 3 hands a worker its workload as JSON, and that JSON carries, at its top level,
``token``: the JWT the worker uses to call the Execution API as that task or callback.
The provider puts the whole JSON in the container's ``args``
(``... execute_workload --json-string <json>``, see
:func:`k8s_workloads.pods.workload_command_args`), so anyone who can *read pods* (``get``
/ ``list`` / ``watch`` on pods, which many dashboards, operators and log shippers have)
can read the token; ``kubectl get pod -o yaml`` shows it.

Secure mode
    :func:`secure_workload_payload` puts the workload JSON in a ``Secret`` and gives the
    pod a read-only secret volume and ``--json-path`` args instead (the workload module
    reads either flag). Reading the token then needs ``get`` on secrets. Build the pod
    with :func:`json_path_command_args`, so the token never enters the pod manifest (nor
    a mutation hook), then :func:`attach_secure_payload`.

    The executor owns the Secret's lifecycle: it must **create the Secret before the
    pod** (a pod whose secret volume is missing stays ``ContainerCreating``) and **delete
    it with the pod**, when it deletes the pod or marks it done. No ``ownerReference`` is
    set here, because the pod's UID is unknown until the API server has created the pod;
    an executor may patch one onto the Secret afterwards (``apiVersion: v1, kind: Pod,
    name, uid``), so that the garbage collector removes the Secret should the executor
    die before it does. The Secret is labelled as the caller asks (the CLI copies the
    pod's labels), so that the executor's selectors also find orphans.

Redaction
    lives in :mod:`k8s_workloads.pods.redaction`
    (:func:`~k8s_workloads.pods.redaction.redact_manifest`,
    :func:`~k8s_workloads.pods.redaction.redact_manifests`).

Everything here is pure: no Kubernetes client, no I/O.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

import attrs

from k8s_workloads.display import shown
from k8s_workloads.json_values import as_list, as_map
from k8s_workloads.pods.validation import (
    DNS1123_SUBDOMAIN_MAX_LENGTH,
    NamingRuleViolation,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_errors,
)
from k8s_workloads.pods.workload import BASE_CONTAINER_NAME, EXECUTE_WORKLOAD_MODULE

__all__ = [
    "SECRET_SIZE_LIMIT_BYTES",
    "WORKLOAD_FILE_KEY",
    "WORKLOAD_JSON_PATH",
    "WORKLOAD_MOUNT_PATH",
    "WORKLOAD_SECRET_FILE_MODE",
    "WORKLOAD_VOLUME_NAME",
    "InvalidWorkloadJSON",
    "InvalidWorkloadSecret",
    "MissingBaseContainer",
    "PayloadConflict",
    "PayloadError",
    "SecurePayload",
    "attach_secure_payload",
    "json_path_command_args",
    "secure_workload_payload",
    "workload_secret_name",
]

WORKLOAD_VOLUME_NAME = "airflow-workload"
"""The name of the secret volume (and of its mount) in the pod."""
WORKLOAD_MOUNT_PATH = "/run/secrets/airflow-workload"
"""Where the secret volume is mounted in the ``base`` container."""
WORKLOAD_FILE_KEY = "workload.json"
"""The Secret's key holding the workload JSON, and so the file name in the volume."""
WORKLOAD_JSON_PATH = f"{WORKLOAD_MOUNT_PATH}/{WORKLOAD_FILE_KEY}"
"""The file the worker reads (``--json-path``)."""
WORKLOAD_SECRET_FILE_MODE = 0o440
"""The file's mode: read for owner and group, nothing for others.

Secret files are owned by root unless the pod sets ``fsGroup`` (then the kubelet gives
that group read access). Airflow's images run as uid 50000 with gid 0, so ``0o440`` is
readable there with or without ``fsGroup``, where ``0o400`` is readable only with it.
"""
SECRET_SIZE_LIMIT_BYTES = 1024 * 1024
"""The API server refuses Secrets whose data exceeds 1 MiB."""

_SECRET_NAME_SUFFIX = "-workload"  # noqa: S105 - a name, not a password


class PayloadError(ValueError):
    """A workload payload cannot be built or attached as asked."""


class InvalidWorkloadJSON(PayloadError):
    """The workload is not a JSON object, or is too large for a Secret."""


class InvalidWorkloadSecret(PayloadError):
    """The workload Secret would break the API server's naming rules."""

    def __init__(self, violations: list[NamingRuleViolation]) -> None:
        super().__init__(
            "the workload Secret would be rejected: " + "; ".join(str(v) for v in violations)
        )
        self.violations = violations
        """Each broken rule, naming its field."""


class MissingBaseContainer(PayloadError):
    """The pod has no ``base`` container to give the workload to."""


class PayloadConflict(PayloadError):
    """The pod already has the payload's volume or mount, or lives in another namespace."""


def json_path_command_args(path: str = WORKLOAD_JSON_PATH) -> list[str]:
    """The container ``args`` that run the workload read from a file (no token in them)."""
    return ["python", "-m", EXECUTE_WORKLOAD_MODULE, "--json-path", path]


def workload_secret_name(pod_name: str) -> str:
    """``<pod_name>-workload``, the pod name cut so that the whole fits 253 characters.

    Not validated: :func:`secure_workload_payload` checks the name it uses.
    """
    room = DNS1123_SUBDOMAIN_MAX_LENGTH - len(_SECRET_NAME_SUFFIX)
    return pod_name[:room].rstrip("-.") + _SECRET_NAME_SUFFIX


@attrs.frozen
class SecurePayload:
    """A workload delivered through a Secret: the Secret and the pod's side of it.

    ``secret`` holds the token, so it is left out of ``repr``; treat it as a secret.
    The dicts are the caller's to serialise; :func:`attach_secure_payload` copies them.
    """

    secret: dict[str, Any] = attrs.field(repr=False)
    """The ``v1`` Secret manifest holding the workload JSON under :data:`WORKLOAD_FILE_KEY`."""
    args: list[str]
    """The ``base`` container's args: the workload module with ``--json-path``."""
    volume: dict[str, Any]
    """The pod volume projecting the Secret (read-only files)."""
    volume_mount: dict[str, Any]
    """The ``base`` container's mount of :attr:`volume`."""

    @property
    def secret_name(self) -> str:
        """The Secret's ``metadata.name``."""
        name: str = self.secret["metadata"]["name"]
        return name

    @property
    def namespace(self) -> str:
        """The Secret's (and so the pod's) namespace."""
        namespace: str = self.secret["metadata"]["namespace"]
        return namespace


def _workload_text(workload_json: str | Mapping[str, Any]) -> str:
    if isinstance(workload_json, Mapping):
        try:
            text = json.dumps(workload_json, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as error:
            raise InvalidWorkloadJSON(f"the workload cannot be written as JSON: {error}") from None
    elif isinstance(workload_json, str):
        text = workload_json
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError) as error:
            raise InvalidWorkloadJSON(f"the workload is not JSON: {error}") from None
        if not isinstance(parsed, dict):
            raise InvalidWorkloadJSON(
                f"the workload must be a JSON object, got {type(parsed).__name__}"
            )
    else:
        raise TypeError(
            f"workload_json must be a JSON string or a mapping, got {type(workload_json).__name__}"
        )
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > SECRET_SIZE_LIMIT_BYTES:
        raise InvalidWorkloadJSON(
            f"the workload is {size} bytes; a Secret holds at most {SECRET_SIZE_LIMIT_BYTES}"
        )
    return text


def secure_workload_payload(
    workload_json: str | Mapping[str, Any],
    *,
    pod_name: str,
    namespace: str,
    secret_name: str | None = None,
    labels: Mapping[str, str] | None = None,
    default_mode: int = WORKLOAD_SECRET_FILE_MODE,
) -> SecurePayload:
    """The Secret, volume, mount and args that hand a pod its workload out of its spec.

    ``workload_json`` is the workload's JSON (kept byte for byte) or a mapping to
    serialise. ``secret_name`` defaults to :func:`workload_secret_name` of ``pod_name``
    (the pod's final ``metadata.name``). ``labels`` go on the Secret. ``default_mode`` is
    the file's mode (see :data:`WORKLOAD_SECRET_FILE_MODE`).

    Raises :class:`InvalidWorkloadJSON` for a workload that is not a JSON object (or over
    1 MiB) and :class:`InvalidWorkloadSecret` when the Secret's name (a DNS-1123
    subdomain), namespace (a DNS-1123 label) or labels would be rejected. The executor
    must create the Secret before the pod and delete it with the pod (see the module
    documentation).
    """
    text = _workload_text(workload_json)
    if isinstance(default_mode, bool) or not isinstance(default_mode, int):
        raise TypeError(f"default_mode must be an int, got {type(default_mode).__name__}")
    if not 0 <= default_mode <= 0o777:
        raise ValueError(f"default_mode must be between 0 and 0o777, got {default_mode:#o}")
    name = workload_secret_name(pod_name) if secret_name is None else secret_name
    violations = dns1123_subdomain_errors(name, field="metadata.name")
    violations += dns1123_label_errors(namespace, field="metadata.namespace")
    violations += label_errors(labels)
    if violations:
        raise InvalidWorkloadSecret(violations)
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(labels)
    secret: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata,
        "type": "Opaque",
        # The workload never changes; immutable Secrets are not watched by kubelets.
        "immutable": True,
        "stringData": {WORKLOAD_FILE_KEY: text},
    }
    return SecurePayload(
        secret=secret,
        args=json_path_command_args(),
        volume={
            "name": WORKLOAD_VOLUME_NAME,
            "secret": {"secretName": name, "defaultMode": default_mode},
        },
        volume_mount={
            "name": WORKLOAD_VOLUME_NAME,
            "mountPath": WORKLOAD_MOUNT_PATH,
            "readOnly": True,
        },
    )


def _plain_copy(value: object) -> Any:  # noqa: ANN401 - a JSON value
    if isinstance(value, Mapping):
        return {key: _plain_copy(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain_copy(item) for item in value]
    return copy.deepcopy(value)


def _list_at(owner: dict[str, Any], field: str, where: str) -> list[Any]:
    value = owner.get(field)
    if value is None:
        value = owner[field] = []
    if not isinstance(value, list):
        raise PayloadConflict(f"{where}.{field} must be a list, got {type(value).__name__}")
    return value


def attach_secure_payload(manifest: Mapping[str, Any], payload: SecurePayload) -> dict[str, Any]:
    """A copy of a pod manifest that reads its workload from ``payload``'s Secret.

    Appends the volume to ``spec.volumes`` and the mount to the ``base`` container's
    ``volumeMounts``, and replaces that container's ``args`` with ``payload.args``. The
    input is not changed. Raises :class:`MissingBaseContainer` when there is no
    ``base`` container, and :class:`PayloadConflict` when the pod already has a volume
    or mount of that name or path (a payload attached twice) or names another namespace
    than the Secret's.
    """
    pod = _plain_copy(manifest)
    if not isinstance(pod, dict):
        raise TypeError(f"manifest must be a mapping, got {type(manifest).__name__}")
    pod_namespace = as_map(pod.get("metadata")).get("namespace")
    if pod_namespace is not None and pod_namespace != payload.namespace:
        raise PayloadConflict(
            f"the pod is in namespace {shown(pod_namespace)} but the Secret in "
            f"{shown(payload.namespace)}; a pod can mount Secrets of its own namespace only"
        )
    spec = pod.get("spec")
    base = next(
        (
            container
            for container in as_list(as_map(spec).get("containers"))
            if isinstance(container, dict) and container.get("name") == BASE_CONTAINER_NAME
        ),
        None,
    )
    if base is None or not isinstance(spec, dict):
        raise MissingBaseContainer(
            f"the pod has no {BASE_CONTAINER_NAME!r} container in spec.containers"
        )
    volumes = _list_at(spec, "volumes", "spec")
    if any(isinstance(v, dict) and v.get("name") == WORKLOAD_VOLUME_NAME for v in volumes):
        raise PayloadConflict(f"spec.volumes already has a volume named {WORKLOAD_VOLUME_NAME!r}")
    mounts = _list_at(base, "volumeMounts", f"the {BASE_CONTAINER_NAME!r} container")
    for mount in mounts:
        if isinstance(mount, dict) and (
            mount.get("name") == WORKLOAD_VOLUME_NAME
            or mount.get("mountPath") == WORKLOAD_MOUNT_PATH
        ):
            raise PayloadConflict(
                f"the {BASE_CONTAINER_NAME!r} container already mounts "
                f"{shown(mount.get('name'))} at {shown(mount.get('mountPath'))}"
            )
    volumes.append(_plain_copy(payload.volume))
    mounts.append(_plain_copy(payload.volume_mount))
    base["args"] = list(payload.args)
    return pod
