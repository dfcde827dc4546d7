"""Watch-event JSON decoded only as far as resolution reads it.

A pod watch event is mostly ``spec`` and ``managedFields`` (10-20 KB), none of which
:func:`~k8s_workloads.watch.events.resolve_event` reads. ``msgspec`` decodes the parts it does
read — the event type; the object's ``kind``, Status fields (``code``, ``reason``,
``message``), the whole ``status``; eight ``metadata`` fields — and skips the rest, about
five times faster than ``json.loads``. Any text that does not fit that shape (an object
that is not a JSON object, metadata that is not one, broken JSON) is decoded in full by
``json.loads`` instead, so every input resolves exactly as its full decoding does.
"""

from __future__ import annotations

import json
from typing import Any, TypeAlias

import msgspec
import msgspec.structs

from k8s_workloads.pods.codec import ANNOTATIONS_READ
from k8s_workloads.pods.labels import (
    KUBERNETES_EXECUTOR_LABEL,
    POD_REVOKED_LABEL,
    WORKLOAD_TYPE_LABEL,
)
from k8s_workloads.watch._podstatus import Condition, PodStatus

__all__ = ["PodEvent", "SpecPodEvent", "decode_event", "decode_pod_event", "decode_spec_pod_event"]


class _Metadata(msgspec.Struct):
    name: Any = None
    namespace: Any = None
    labels: Any = None
    annotations: Any = None
    resourceVersion: Any = None  # noqa: N815 - the API's field name
    deletionTimestamp: Any = None  # noqa: N815
    creationTimestamp: Any = None  # noqa: N815
    uid: Any = None


class _Object(msgspec.Struct):
    kind: Any = None
    metadata: _Metadata | None = None
    status: Any = None
    code: Any = None
    reason: Any = None
    message: Any = None


class _Event(msgspec.Struct):
    type: Any = None
    object: _Object | None = None


_DECODER = msgspec.json.Decoder(_Event)
_METADATA_FIELDS = _Metadata.__struct_fields__
_OBJECT_FIELDS = ("kind", "status", "code", "reason", "message")


def _present(struct: msgspec.Struct, fields: tuple[str, ...]) -> dict[str, Any]:
    # A field the text leaves out (or sets to null) is left out: every reader uses .get().
    values = {}
    for field in fields:
        value = getattr(struct, field)
        if value is not None:
            values[field] = value
    return values


def decode_event(text: str | bytes) -> object:
    """The event's JSON as ``json.loads`` gives it, less what resolution never reads.

    Raises ``ValueError`` (``json.JSONDecodeError``) for text that is not JSON, and
    ``RecursionError`` for JSON nested deeper than Python's parser goes, as
    ``json.loads`` does.
    """
    try:
        event = _DECODER.decode(text)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeError):
        return json.loads(text)
    decoded: dict[str, Any] = {}
    if event.type is not None:
        decoded["type"] = event.type
    obj = event.object
    if obj is not None:
        manifest = _present(obj, _OBJECT_FIELDS)
        if obj.metadata is not None:
            manifest["metadata"] = _present(obj.metadata, _METADATA_FIELDS)
        decoded["object"] = manifest
    return decoded


# --- typed: a pod event as resolution reads it ----------------------------------------
#
# Every field has the one type the API server sends (strings, an integer exit code,
# string maps). A text holding anything else in one of these fields (a number for a
# reason, a list for a state, a float exit code), or any text ``msgspec`` refuses where
# ``json.loads`` would not (a lone surrogate, a byte-order mark, UTF-16), is not decoded
# here: ``decode_pod_event`` returns None and the caller takes the total path. JSON null
# reads as absent, as it does for every reader of the full decoding (they use ``.get()``
# and check types). Duplicate keys keep the last value, as ``json.loads`` does. Labels and
# annotations are read only by name: those the rules read must be strings (a null one is
# not absent there: ``in`` finds it), the others are skipped unread, whatever they hold.


_Label: TypeAlias = str | msgspec.UnsetType


class PodLabels(msgspec.Struct, gc=False):
    """The labels resolution reads (any other is skipped); one left out is ``UNSET``."""

    revoked: _Label = msgspec.field(default=msgspec.UNSET, name=POD_REVOKED_LABEL)
    executor: _Label = msgspec.field(default=msgspec.UNSET, name=KUBERNETES_EXECUTOR_LABEL)
    workload_type: _Label = msgspec.field(default=msgspec.UNSET, name=WORKLOAD_TYPE_LABEL)

    def as_map(self) -> dict[str, str]:
        """The labels read, by their names, as the full decoding holds them."""
        return _present_labels(self, _LABEL_NAMES)


class PodAnnotations(msgspec.Struct, gc=False):
    """The annotations :func:`~k8s_workloads.pods.codec.annotations_to_key` reads; others
    skipped."""

    dag_id: _Label = msgspec.UNSET
    task_id: _Label = msgspec.UNSET
    try_number: _Label = msgspec.UNSET
    map_index: _Label = msgspec.UNSET
    run_id: _Label = msgspec.UNSET
    callback_id: _Label = msgspec.UNSET
    workload_id: _Label = msgspec.UNSET
    logical_date: _Label = msgspec.UNSET
    execution_date: _Label = msgspec.UNSET

    def as_map(self) -> dict[str, str]:
        """The annotations read, by their names, as the full decoding holds them."""
        return _present_labels(self, _ANNOTATION_NAMES)


def _present_labels(
    struct: PodLabels | PodAnnotations, names: tuple[tuple[str, str], ...]
) -> dict[str, str]:
    values = {}
    for field, name in names:
        value = getattr(struct, field)
        if value is not msgspec.UNSET:
            values[name] = value
    return values


_LABEL_NAMES = tuple((f.name, f.encode_name) for f in msgspec.structs.fields(PodLabels))
_ANNOTATION_NAMES = tuple((f.name, f.encode_name) for f in msgspec.structs.fields(PodAnnotations))
if {name for _, name in _ANNOTATION_NAMES} != ANNOTATIONS_READ:  # pragma: no cover
    raise AssertionError("PodAnnotations must hold every annotation the codec reads")


class PodMetadata(msgspec.Struct, gc=False):
    """The pod's ``metadata`` fields resolution reads."""

    name: str | None = None
    namespace: str | None = None
    labels: PodLabels | None = None
    annotations: PodAnnotations | None = None
    resourceVersion: str | None = None  # noqa: N815
    deletionTimestamp: str | None = None  # noqa: N815
    uid: str | None = None


class PodObject(msgspec.Struct, gc=False):
    """A watch event's pod: its metadata and status (spec and managedFields skipped)."""

    metadata: PodMetadata | None = None
    status: PodStatus | None = None


class PodEvent(msgspec.Struct, gc=False):
    """A watch event as :func:`decode_pod_event` gives it."""

    type: str | None = None
    object: PodObject | None = None


_POD_DECODER = msgspec.json.Decoder(PodEvent)
_CONDITIONS_DECODER = msgspec.json.Decoder(list[Condition] | None)


class UntypedFieldError(Exception):
    """A field decoded on demand (:func:`decode_conditions`) does not have its API type:
    the event must be resolved from its full decoding instead (private)."""


def decode_conditions(status: PodStatus) -> list[Condition]:
    """The status's conditions, typed; raises :class:`UntypedFieldError` when they are not
    a list of conditions of the API's types (or null)."""
    raw = status.conditions
    if not raw:
        return []
    try:
        return _CONDITIONS_DECODER.decode(raw) or []
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        raise UntypedFieldError("status.conditions") from None


def status_as_builtins(status: PodStatus) -> dict[str, Any]:
    """The status as ``msgspec.to_builtins`` gives a struct, its conditions decoded."""
    built = {
        name: msgspec.to_builtins(getattr(status, name))
        for name in status.__struct_fields__
        if name != "conditions"
    }
    raw = status.conditions
    built["conditions"] = None
    if raw:
        try:
            built["conditions"] = msgspec.to_builtins(_CONDITIONS_DECODER.decode(raw))
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            raise UntypedFieldError("status.conditions") from None
    return built


def decode_pod_event(text: str | bytes) -> PodEvent | None:
    """The pod event ``text`` holds, typed; None for any text the typed shape cannot take.

    None means: decode ``text`` in full (``json.loads``) and resolve that instead. A
    text taken here reads, field by field, as its full decoding reads.
    """
    try:
        return _POD_DECODER.decode(text)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeError, RecursionError):
        return None


# --- typed, with the args the command line's masking reads ----------------------------


class SpecContainer(msgspec.Struct, gc=False):
    """A container's ``args`` and ``command``: where a workload's token can be."""

    args: list[Any] | None = None
    command: list[Any] | None = None


class PodSpec(msgspec.Struct, gc=False):
    """The pod's containers, for :func:`~k8s_workloads.pods.redaction.pod_args_tokens`."""

    containers: list[SpecContainer] | None = None
    initContainers: list[SpecContainer] | None = None  # noqa: N815


class SpecPodObject(PodObject, gc=False):
    """A pod as :class:`PodObject`, and its containers' args."""

    spec: PodSpec | None = None


class SpecPodEvent(msgspec.Struct, gc=False):
    """A watch event as :func:`decode_spec_pod_event` gives it."""

    type: str | None = None
    object: SpecPodObject | None = None

    def masking_view(self) -> dict[str, Any]:
        """The event as far as masking reads it: its pod's containers' args and command."""
        obj = self.object
        spec = None if obj is None else obj.spec
        if spec is None:
            return {"type": self.type, "object": {}}
        return {
            "type": self.type,
            "object": {"spec": msgspec.to_builtins(spec)},
        }


_SPEC_POD_DECODER = msgspec.json.Decoder(SpecPodEvent)


def decode_spec_pod_event(text: str | bytes) -> SpecPodEvent | None:
    """:func:`decode_pod_event`, with the containers' args; None where it gives None."""
    try:
        return _SPEC_POD_DECODER.decode(text)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeError, RecursionError):
        return None
