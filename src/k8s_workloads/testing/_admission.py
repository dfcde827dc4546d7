"""What the API server checks before it stores a pod or a Secret, as pure code.

The order is the apiserver's: the body is decoded first (``handlers/create.go``: a body of
another ``kind``, or a value of the wrong type, cannot be decoded: 400 ``BadRequest``,
"... cannot be handled as a Pod"; unknown fields are dropped, warned about or refused
per ``fieldValidation``; the decoder fills in the defaults,
:mod:`k8s_workloads.testing._defaults`), then validated (``pkg/apis/core/validation``:
names, labels, annotations, finalizer names, required fields: 422 ``Invalid`` with one
cause per field), and on update the pod strategy's ``ValidatePodUpdate`` refuses a change
to an immutable field, and ``ValidateObjectMetaUpdate`` a finalizer added to a pod being
deleted.

The rules themselves are the library's: :mod:`k8s_workloads.pods.validation` (names, labels,
annotations, container names) and :mod:`k8s_workloads.pods.schema` with the 1.37 Pod table in
:mod:`k8s_workloads.pods.schema_definitions`; this module only decides which answer each
violation gets.
"""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Any

import attrs

from k8s_workloads.pods import validation
from k8s_workloads.pods.schema import pod_schema_errors
from k8s_workloads.pods.schema_definitions import DEFINITIONS
from k8s_workloads.testing import _defaults

if TYPE_CHECKING:
    from k8s_workloads.pods.manifest import Manifest

__all__ = [
    "FIELD_VALIDATION",
    "Cause",
    "Rejected",
    "decode_pod",
    "decode_secret",
    "namespace_causes",
    "pod_causes",
    "pod_update_causes",
]

FIELD_VALIDATION = ("Ignore", "Warn", "Strict")
"""The ``fieldValidation`` directives (the default, unset, drops unknown fields)."""

# ValidatePodSpecificFieldsUpdate: what an update may change in a pod's spec.
_MUTABLE_SPEC_MESSAGE = (
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
    "set to 1 if it was previously negative)"
)
_IMMUTABLE_METADATA = ("name", "namespace", "uid")
# BeforeUpdate keeps these from the stored object whatever the update says.
_SYSTEM_METADATA = (
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
)
_SECRET_FIELDS = frozenset(
    {"apiVersion", "kind", "metadata", "data", "stringData", "type", "immutable"}
)


@attrs.frozen
class Cause:
    """One ``details.causes`` entry of a 422: where, the reason constant, and why."""

    field: str
    reason: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.message, "field": self.field}


class Rejected(ValueError):
    """The API server refuses the body: ``code`` 400 (cannot decode) or 422 (invalid)."""

    def __init__(self, code: int, message: str, causes: tuple[Cause, ...] = ()) -> None:
        super().__init__(message)
        self.code = code
        self.causes = causes


def _prune(value: object, spec: str, path: str, dropped: list[str]) -> Any:  # noqa: ANN401
    # Unknown fields, as the decoder drops them: walk the Pod table, keep what it names.
    spec = spec.removeprefix("?")
    if spec.startswith("[]") and isinstance(value, list):
        return [_prune(item, spec[2:], f"{path}[{i}]", dropped) for i, item in enumerate(value)]
    if spec.startswith("{}") and isinstance(value, dict):
        return {
            key: _prune(item, spec[2:], f"{path}[{key}]", dropped) for key, item in value.items()
        }
    if spec in DEFINITIONS and isinstance(value, dict):
        properties = DEFINITIONS[spec][0]
        kept: Manifest = {}
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if key in properties:
                kept[key] = _prune(item, properties[key], where, dropped)
            else:
                dropped.append(where)
        return kept
    return value


def _decoded_kind(body: Manifest, kind: str) -> None:
    given_kind = body.get("kind", kind)
    version = body.get("apiVersion", "v1")
    if given_kind != kind or version != "v1":
        raise Rejected(
            400,
            f"{given_kind} in version {version!r} cannot be handled as a {kind}: "
            f"the object provided is not a v1 {kind}",
        )


def _unknown(dropped: list[str], field_validation: str | None, kind: str) -> list[str]:
    if field_validation not in {None, "", *FIELD_VALIDATION}:
        raise Rejected(
            400,
            f"fieldValidation: Unsupported value: {field_validation!r}: supported values: "
            '"Ignore", "Strict", "Warn"',
        )
    if field_validation == "Strict" and dropped:
        listed = ", ".join(f'unknown field "{where}"' for where in dropped)
        raise Rejected(
            400,
            f'{kind} in version "v1" cannot be handled as a {kind}: '
            f"strict decoding error: {listed}",
        )
    if field_validation == "Warn":
        return [f'unknown field "{where}"' for where in dropped]
    return []


def decode_pod(
    body: Manifest, *, field_validation: str | None = None
) -> tuple[Manifest, list[str]]:
    """The pod the server would store, unknown fields dropped and defaults filled in
    (:mod:`k8s_workloads.testing._defaults`, as the decoder applies them), and the
    warnings to send.

    :class:`Rejected` (400) for another ``kind``, a value of the wrong type, or an unknown
    field under ``Strict``.
    """
    _decoded_kind(body, "Pod")
    dropped: list[str] = []
    pod: Manifest = _prune(body, "Pod", "", dropped)
    warnings = _unknown(dropped, field_validation, "Pod")
    wrong = [
        violation
        for violation in pod_schema_errors(pod)
        if not str(violation).endswith(": is required")
    ]
    if wrong:
        raise Rejected(400, f'Pod in version "v1" cannot be handled as a Pod: {wrong[0]}')
    pod["apiVersion"], pod["kind"] = "v1", "Pod"
    return _defaults.default_pod(pod), warnings


def _violation_causes(found: list[validation.NamingRuleViolation]) -> list[Cause]:
    causes = []
    for violation in found:
        message = str(violation).removeprefix(f"{violation.field}: ")
        if isinstance(violation, validation.AnnotationsTooLarge):
            causes.append(Cause(violation.field, "FieldValueTooLong", f"Too long: {message}"))
        elif isinstance(violation, validation.DuplicateContainerName):
            causes.append(
                Cause(violation.field, "FieldValueDuplicate", f"Duplicate value: {message}")
            )
        else:
            causes.append(Cause(violation.field, "FieldValueInvalid", f"Invalid value: {message}"))
    return causes


def _required(field: str) -> Cause:
    return Cause(field, "FieldValueRequired", "Required value")


def _metadata_causes(metadata: Manifest, *, namespaced: bool = True) -> list[Cause]:
    causes: list[Cause] = []
    name = metadata.get("name")
    if not name:
        causes.append(_required("metadata.name"))
    else:
        found = validation.dns1123_subdomain_errors(name, field="metadata.name")
        causes += _violation_causes(found)
    if namespaced and metadata.get("namespace"):
        causes += _violation_causes(
            validation.dns1123_label_errors(metadata["namespace"], field="metadata.namespace")
        )
    causes += _violation_causes(validation.label_errors(metadata.get("labels")))
    causes += _violation_causes(validation.annotation_errors(metadata.get("annotations")))
    return causes + _finalizer_causes(metadata.get("finalizers"))


# apimachinery's ValidateFinalizerName: a qualified name, and one without a "/" prefix must
# be a standard finalizer (IsStandardFinalizerName: "kubernetes", metav1's "orphan" and
# "foregroundDeletion").
_STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})


def _finalizer_causes(finalizers: object) -> list[Cause]:
    causes: list[Cause] = []
    for index, name in enumerate(finalizers if isinstance(finalizers, list) else ()):
        field = f"metadata.finalizers[{index}]"
        found = _violation_causes(validation.label_key_errors(name, field=field))
        if not found and "/" not in name and name not in _STANDARD_FINALIZERS:
            message = "name is neither a standard finalizer name nor is it fully qualified"
            found = [Cause(field, "FieldValueInvalid", f"Invalid value: {name!r}: {message}")]
        causes += found
    return causes


def _new_finalizer_causes(old_meta: Manifest, new_meta: Manifest) -> list[Cause]:
    # ValidateObjectMetaUpdate -> ValidateNoNewFinalizers, once deletionTimestamp is set.
    if not old_meta.get("deletionTimestamp"):
        return []
    extra = sorted(set(new_meta.get("finalizers") or ()) - set(old_meta.get("finalizers") or ()))
    if not extra:
        return []
    listed = ", ".join(f'"{name}"' for name in extra)
    return [
        Cause(
            "metadata.finalizers",
            "FieldValueForbidden",
            "Forbidden: no new finalizers can be added if the object is being deleted, found "
            f"new finalizers []string{{{listed}}}",
        )
    ]


def pod_causes(pod: Manifest) -> list[Cause]:
    """Why ``pod`` (decoded) is invalid: empty when it may be stored."""
    causes = _metadata_causes(pod.get("metadata") or {})
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return [*causes, _required("spec.containers")]
    containers = spec.get("containers")
    if not containers:
        causes.append(_required("spec.containers"))
    for kind in ("containers", "initContainers", "ephemeralContainers"):
        for index, container in enumerate(spec.get(kind) or ()):
            where = f"spec.{kind}[{index}]"
            if not container.get("name"):
                causes.append(_required(f"{where}.name"))
            if not container.get("image"):
                causes.append(_required(f"{where}.image"))
    names = [
        (f"spec.{kind}[{index}].name", container.get("name"))
        for kind in ("containers", "initContainers", "ephemeralContainers")
        for index, container in enumerate(spec.get(kind) or ())
        if container.get("name")
    ]
    seen: set[object] = set()
    for field, name in names:
        causes += _violation_causes(validation.dns1123_label_errors(name, field=field))
        if name in seen:
            causes.append(Cause(field, "FieldValueDuplicate", f"Duplicate value: {name!r}"))
        seen.add(name)
    return causes


def namespace_causes(name: object) -> list[Cause]:
    """Why ``name`` cannot name a namespace (a DNS-1123 label): empty when it can."""
    if not name:
        return [_required("metadata.name")]
    return _violation_causes(validation.dns1123_label_errors(name, field="metadata.name"))


def _masked_spec(spec: Manifest) -> Manifest:
    # The spec with what an update may change taken out (ValidatePodSpecificFieldsUpdate).
    masked = {
        key: value
        for key, value in spec.items()
        if key not in {"activeDeadlineSeconds", "terminationGracePeriodSeconds", "tolerations"}
    }
    for kind in ("containers", "initContainers"):
        if isinstance(masked.get(kind), list):
            masked[kind] = [
                {key: value for key, value in container.items() if key != "image"}
                for container in masked[kind]
                if isinstance(container, dict)
            ]
    return masked


def pod_update_causes(old: Manifest, new: Manifest) -> list[Cause]:
    """Why ``new`` may not replace ``old``: immutable fields, a finalizer added to a pod
    being deleted, then :func:`pod_causes`.

    ``new`` gets the stored system fields (creation and deletion timestamps) back first, as
    ``rest.BeforeUpdate`` does.
    """
    old_meta, new_meta = old["metadata"], new.setdefault("metadata", {})
    for key in _SYSTEM_METADATA:
        if key in old_meta:
            new_meta[key] = old_meta[key]
        else:
            new_meta.pop(key, None)
    causes = [
        Cause(
            f"metadata.{key}",
            "FieldValueInvalid",
            f"Invalid value: {new_meta.get(key)!r}: field is immutable",
        )
        for key in _IMMUTABLE_METADATA
        if new_meta.get(key) != old_meta.get(key)
    ]
    causes += _new_finalizer_causes(old_meta, new_meta)
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    if _masked_spec(old_spec) != _masked_spec(new_spec):
        causes.append(Cause("spec", "FieldValueForbidden", _MUTABLE_SPEC_MESSAGE))
    old_tolerations = old_spec.get("tolerations") or []
    new_tolerations = new_spec.get("tolerations") or []
    if any(toleration not in new_tolerations for toleration in old_tolerations):
        causes.append(Cause("spec.tolerations", "FieldValueForbidden", _MUTABLE_SPEC_MESSAGE))
    return causes + pod_causes(new)


def decode_secret(
    body: Manifest, *, field_validation: str | None = None
) -> tuple[Manifest, list[str]]:
    """The Secret as the API server stores it, and the warnings to send.

    ``stringData`` is merged into ``data`` (base64; ``stringData`` wins, and is never
    stored), ``type`` defaults to ``Opaque``; :class:`Rejected` for another kind (400), a
    ``data`` value that is not base64 (400, as the decoder reads ``[]byte``) or an invalid
    name, key or label (422).
    """
    _decoded_kind(body, "Secret")
    dropped = [key for key in body if key not in _SECRET_FIELDS]
    warnings = _unknown(dropped, field_validation, "Secret")
    given = body.get("metadata")
    metadata: Manifest = given if isinstance(given, dict) else {}
    data = body.get("data") or {}
    string_data = body.get("stringData") or {}
    if not isinstance(data, dict) or not isinstance(string_data, dict):
        raise Rejected(
            400,
            'Secret in version "v1" cannot be handled as a Secret: data and '
            "stringData must be objects",
        )
    stored: dict[str, str] = {}
    for key, value in data.items():
        try:
            base64.b64decode(value if isinstance(value, str) else "?", validate=True)
        except binascii.Error:
            raise Rejected(
                400,
                f'Secret in version "v1" cannot be handled as a Secret: data[{key}]: illegal '
                "base64 data",
            ) from None
        stored[key] = value
    causes = _metadata_causes(dict(metadata))
    for key, value in string_data.items():
        if not isinstance(value, str):
            raise Rejected(
                400,
                f'Secret in version "v1" cannot be handled as a Secret: '
                f"stringData[{key}] must be a string",
            )
        stored[key] = base64.b64encode(value.encode()).decode()
    for key in stored:
        if not key or len(key) > 253 or not all(c.isalnum() or c in "-._" for c in key):
            causes.append(
                Cause(
                    f"data[{key}]",
                    "FieldValueInvalid",
                    f"Invalid value: {key!r}: a valid config key must consist of "
                    "alphanumeric characters, '-', '_' or '.'",
                )
            )
    if causes:
        raise Rejected(422, "Secret is invalid", tuple(causes))
    secret: Manifest = {
        "kind": "Secret",
        "apiVersion": "v1",
        "metadata": dict(metadata),
        "type": body.get("type") or "Opaque",
    }
    if stored:
        secret["data"] = stored
    if "immutable" in body:
        secret["immutable"] = body["immutable"]
    return secret, warnings
