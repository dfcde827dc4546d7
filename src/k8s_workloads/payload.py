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
    :func:`redact_manifest` / :func:`redact_manifests` return deep copies with every
    token masked as ``***REDACTED***``, for logs, error messages and ``--dry-run``
    output; see :func:`redact_manifests` for exactly what is found. Messages and the
    CLI's text outputs also mask tokens they find by shape (JWTs, ``token`` fields), and
    ``resolve`` masks the tokens of each pod's ``--json-string`` args in what it prints.

Everything here is pure: no Kubernetes client, no I/O.
"""

from __future__ import annotations

import base64
import binascii
import copy
import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from k8s_workloads._display import REDACTED, mask_token_shaped, shown
from k8s_workloads._json import as_list, as_map
from k8s_workloads.pods import BASE_CONTAINER_NAME, EXECUTE_WORKLOAD_MODULE
from k8s_workloads.validation import (
    DNS1123_SUBDOMAIN_MAX_LENGTH,
    NamingRuleViolation,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_errors,
)

__all__ = [
    "REDACTED",
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
    "redact_manifest",
    "redact_manifests",
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
_WORKLOAD_ARG = "--json-string"
_SHORTEST_FLAG = len("--json-s")
_FLAG_START = _WORKLOAD_ARG[:_SHORTEST_FLAG]
_TOKEN_KEY = "token"  # noqa: S105 - the key that holds a token, not one


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


# Redaction ------------------------------------------------------------------------------


def _tokens_in_json(value: object, found: set[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == _TOKEN_KEY and isinstance(item, str) and item:
                found.add(item)
            _tokens_in_json(item, found)
    elif isinstance(value, list):
        for item in value:
            _tokens_in_json(item, found)


def _parse_json(text: str) -> tuple[bool, object]:
    try:
        return True, json.loads(text)
    except (ValueError, RecursionError):
        return False, None


def _decode_data(value: object) -> str | None:
    """A Secret ``data`` value as text, or None when it is not base64 of UTF-8."""
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None


def _collect_json_text(text: str, found: set[str]) -> None:
    ok, parsed = _parse_json(text)
    if ok:
        _tokens_in_json(parsed, found)


def _collect_secret_value(key: object, text: str, found: set[str]) -> None:
    if key == _TOKEN_KEY and text:
        found.add(text)
    _collect_json_text(text, found)


def _collect_secret(secret: Mapping[Any, Any], found: set[str]) -> None:
    string_data = secret.get("stringData")
    if isinstance(string_data, Mapping):
        for key, item in string_data.items():
            if isinstance(item, str):
                _collect_secret_value(key, item, found)
    data = secret.get("data")
    if isinstance(data, Mapping):
        for key, item in data.items():
            text = _decode_data(item)
            if text is not None:
                _collect_secret_value(key, text, found)


def _collect(value: object, found: set[str]) -> None:
    if isinstance(value, Mapping):
        if value.get("kind") == "Secret":
            _collect_secret(value, found)
        for item in value.values():
            _collect(item, found)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            payload = _json_string_payload(value, index)
            if payload is not None:
                _collect_json_text(payload, found)
            _collect(item, found)


def _is_workload_flag(flag: str) -> bool:
    # argparse takes any unambiguous prefix: --json-s ... --json-string (not --json-p…).
    return len(flag) >= _SHORTEST_FLAG and _WORKLOAD_ARG.startswith(flag)


def _json_string_payload(items: list[Any] | tuple[Any, ...], index: int) -> str | None:
    """The workload JSON that ``items[index]`` carries as a ``--json-string`` value."""
    item = items[index]
    if not isinstance(item, str):
        return None
    flag, equals, value = item.partition("=")
    if equals and _is_workload_flag(flag):
        return value
    previous = items[index - 1] if index > 0 else None
    if isinstance(previous, str) and _is_workload_flag(previous):
        return item
    return None


def _spellings(token: str) -> set[str]:
    # The token as it is, and as it appears inside JSON text, once or twice escaped (a pod
    # manifest serialised into an annotation holds its args' JSON escaped twice).
    found = {token}
    for ensure_ascii in (True, False):
        once = json.dumps(token, ensure_ascii=ensure_ascii)[1:-1]
        found.add(once)
        found.add(json.dumps(once, ensure_ascii=ensure_ascii)[1:-1])
    return found


class _Masker:
    def __init__(self, tokens: Iterable[str], *, token_shaped: bool = False) -> None:
        spellings = {spelling for token in tokens if token for spelling in _spellings(token)}
        # Longest first, so that an escaped spelling wins over a raw one it contains.
        ordered = sorted(spellings, key=lambda s: (-len(s), s))
        self.pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        self.token_shaped = token_shaped
        """Also mask what looks like a token (messages; never data, such as manifests)."""

    def text(self, value: str) -> str:
        masked = self._known(value)
        return mask_token_shaped(masked) if self.token_shaped else masked

    def _known(self, value: str) -> str:
        if self.pattern is None:
            return value
        masked = self.pattern.sub(REDACTED, value)
        # A token whose ends look like the mask's could re-form across a replacement;
        # then nothing of the string is worth keeping.
        if masked != value and self.pattern.search(masked):
            return REDACTED
        return masked

    def json_value(self, value: object) -> Any:  # noqa: ANN401 - a JSON value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(key): self.json_value(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.json_value(item) for item in value]
        return value

    def json_text(self, text: str, *, unparseable: str | None) -> str:
        """JSON text with its tokens masked, keeping its layout where that is exact.

        Text that is not JSON becomes ``unparseable``, or is masked as plain text when
        that is None.
        """
        ok, parsed = _parse_json(text)
        if not ok:
            return self.text(text) if unparseable is None else unparseable
        if self.pattern is None:
            return text
        wanted = self.json_value(parsed)
        masked = self.text(text)
        ok, reparsed = _parse_json(masked)
        if ok and reparsed == wanted:
            return masked
        # A token that is also JSON syntax (or spelt with other escapes): rewrite.
        rewritten = json.dumps(wanted, separators=(",", ":"), ensure_ascii=False)
        try:
            rewritten.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate ("\ud800" in the text): keep it escaped
            return json.dumps(wanted, separators=(",", ":"))
        return rewritten

    def secret_data(self, value: object) -> object:
        text = _decode_data(value)
        if text is None:
            return self.value(value)
        masked = self.json_text(text, unparseable=None)
        if masked == text:
            return value
        return base64.b64encode(masked.encode("utf-8")).decode("ascii")

    def value(self, value: object) -> Any:  # noqa: ANN401 - a JSON value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return self.mapping(value)
        if isinstance(value, (list, tuple)):
            return [self.item(value, index) for index in range(len(value))]
        if value is None or isinstance(value, (bool, int, float)):
            return value
        return copy.deepcopy(value)

    def item(self, items: list[Any] | tuple[Any, ...], index: int) -> Any:  # noqa: ANN401
        item = items[index]
        payload = _json_string_payload(items, index)
        if payload is None:
            return self.value(item)
        masked = self.json_text(payload, unparseable=REDACTED)
        if item == payload:
            return masked
        return self.text(item[: len(item) - len(payload)]) + masked

    def mapping(self, value: Mapping[Any, Any]) -> dict[Any, Any]:
        is_secret = value.get("kind") == "Secret"
        result: dict[Any, Any] = {}
        for key, item in value.items():
            new_key = self.text(key) if isinstance(key, str) else key
            if is_secret and key == "stringData" and isinstance(item, Mapping):
                result[new_key] = {
                    self.text(k) if isinstance(k, str) else k: (
                        self.json_text(v, unparseable=None) if isinstance(v, str) else self.value(v)
                    )
                    for k, v in item.items()
                }
            elif is_secret and key == "data" and isinstance(item, Mapping):
                result[new_key] = {
                    self.text(k) if isinstance(k, str) else k: self.secret_data(v)
                    for k, v in item.items()
                }
            else:
                result[new_key] = self.value(item)
        return result


def _pod_args_tokens(pod: object) -> frozenset[str]:
    """The tokens in a pod's ``--json-string`` container and init container args."""
    spec = as_map(as_map(pod).get("spec"))
    found: frozenset[str] = frozenset()
    for kind in ("containers", "initContainers"):
        for container in as_list(spec.get(kind)):
            for field in ("args", "command"):
                items = as_list(as_map(container).get(field))
                for index, item in enumerate(items):
                    # Cheap first: only a workload flag starts a payload, there or next.
                    if not (isinstance(item, str) and item.startswith(_FLAG_START)):
                        continue
                    for at in (index, index + 1):
                        payload = _json_string_payload(items, at) if at < len(items) else None
                        if payload is not None:
                            found |= _workload_tokens(payload)
    return found


@functools.lru_cache(maxsize=256)  # every event of a pod repeats its args: parse them once
def _workload_tokens(text: str) -> frozenset[str]:
    found: set[str] = set()
    _collect_json_text(text, found)
    return frozenset(found)


@functools.lru_cache(maxsize=64)  # a watch stream shows each pod (and its token) many times
def _message_masker(tokens: frozenset[str] = frozenset()) -> _Masker:
    """A masker for messages and text output: ``tokens``, and anything token-shaped."""
    return _Masker(tokens, token_shaped=True)


_SHORTEST_CUT = 8


def _mask_cut(text: str, token: str) -> str:
    # A message that shows a value cut short may hold a token's first characters only.
    start = token[: min(_SHORTEST_CUT, len(token))]
    pieces: list[str] = []
    position = 0
    while (found := text.find(start, position)) >= 0:
        end = found + len(start)
        while end < len(text) and end - found < len(token) and text[end] == token[end - found]:
            end += 1
        pieces += [text[position:found], REDACTED]
        position = end
    return "".join(pieces) + text[position:]


def token_masker(values: Iterable[object]) -> Callable[[str], str]:
    """A function masking, in any text, every token :func:`redact_manifests` would find
    in ``values`` (manifests, args lists), whole or cut short after its first eight
    characters (as an error message cuts a long value); for the builders' messages."""
    tokens: set[str] = set()
    for value in values:
        _collect(value, tokens)
    masker = _Masker(tokens)

    def mask(text: str) -> str:
        text = masker.text(text)
        for token in tokens:
            text = _mask_cut(text, token)
        return text

    return mask


def redact_manifests(manifests: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Deep copies of manifests with every Execution API token masked in all of them.

    Tokens are found in:

    * every ``--json-string <json>`` (or ``--json-string=<json>``, or an abbreviation
      argparse accepts, such as ``--json-str``) in any list of strings — container and
      init container ``args`` and ``command`` of Pods, but also of pod templates inside
      other objects and of ``kind: List`` items: the value of every ``"token"`` key of
      that JSON, at any depth;
    * Secrets (``kind: Secret``): the same in each ``stringData`` value and each
      base64-decoded ``data`` value that is JSON, and the whole value of a key named
      ``token``.

    Then every string anywhere in every manifest (env values, annotations, keys …) has
    each token masked as :data:`REDACTED`, as written and as escaped inside JSON text;
    ``data`` values are decoded, masked and encoded again. A ``--json-string`` value that
    is not JSON is masked whole. JSON text keeps its layout unless masking would change
    more than the tokens; then it is written again, compactly. Tokens found in one
    manifest are masked in all of them, so pass a Secret and its Pod together.

    Not found: a token only inside a shell string (``sh -c "... --json-string ..."``)
    and not elsewhere; and a token that is part of the mask text itself cannot be
    hidden by it (Airflow's tokens are JWTs, which never are). An empty token is
    nothing to hide.
    """
    items = list(manifests)
    for manifest in items:
        if not isinstance(manifest, Mapping):
            raise TypeError(f"a manifest must be a mapping, got {type(manifest).__name__}")
    tokens: set[str] = set()
    for manifest in items:
        _collect(manifest, tokens)
    masker = _Masker(tokens)
    return [masker.mapping(manifest) for manifest in items]


def redact_manifest(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of one manifest (a Pod, a Secret, a ``List`` …) with its tokens masked.

    See :func:`redact_manifests`, which masks the tokens of several manifests in all of
    them.
    """
    return redact_manifests([manifest])[0]
