"""Workload identities: which task instance, callback or generic workload a pod runs.

Keys are frozen value objects validated at construction, so an invalid key never exists.
Unlike Airflow's ``TaskInstanceKey`` (a named tuple) a key here equals only a key of the
same kind with the same fields: never a plain tuple, never a string, and a task key never
equals a callback key. That is what lets executors keep every kind in one ``running`` set
without "if it is not a task it must be a callback" reasoning (apache/airflow#66973).

:class:`TaskInstanceKey` and :class:`CallbackKey` are Airflow's two kinds;
:class:`GenericKey` is any other executor's: an id of its choosing, with no Airflow in it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

import attrs

from k8s_workloads.display import has_unprintable, shown

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    _Validator = Callable[[object, attrs.Attribute[Any], object], None]

__all__ = [
    "AIRFLOW_INT_MAX",
    "GENERIC_ID_MAX_LENGTH",
    "RUN_ONCE_KEYS",
    "CallbackKey",
    "GenericKey",
    "InvalidKey",
    "TaskInstanceKey",
    "WorkloadKey",
    "checked_task_key",
    "key_from_json",
]


AIRFLOW_INT_MAX = 2**31 - 1
"""The largest ``try_number`` and ``map_index``: Airflow stores both in 32-bit INTEGER
columns. A larger one could not come from Airflow, and its pod would not decode (a
``try_number`` label longer than 63 characters is refused by the API server)."""


class InvalidKey(ValueError):
    """A workload key field has a value no workload can have; ``field`` names it."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field
        """The offending field (``dag_id``, ``try_number``, ``id`` …), None for a whole key."""


def _non_empty_str(owner: str) -> _Validator:
    def check(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if not isinstance(value, str) or not value:
            msg = f"{owner}.{attribute.name} must be a non-empty string, got {shown(value)}"
            raise InvalidKey(msg, field=attribute.name)

    return check


def _optional_run_id(_instance: object, _attribute: attrs.Attribute[Any], value: object) -> None:
    # The provider writes no run_id annotation for an empty run id, so "" could never
    # round-trip through a pod; None is the one spelling of "no run id".
    if value is not None and (not isinstance(value, str) or not value):
        raise InvalidKey(
            f"TaskInstanceKey.run_id must be a non-empty string or None, got {shown(value)}",
            field="run_id",
        )


def _int_at_least(owner: str, minimum: int) -> _Validator:
    def check(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not minimum <= value <= AIRFLOW_INT_MAX
        ):
            msg = (
                f"{owner}.{attribute.name} must be an int >= {minimum} and <= "
                f"{AIRFLOW_INT_MAX} (a 32-bit integer, as Airflow stores it), got {shown(value)}"
            )
            raise InvalidKey(msg, field=attribute.name)

    return check


@attrs.frozen(repr=True, cache_hash=True)
class TaskInstanceKey:
    """Identity of one try of one (possibly mapped) task instance.

    ``map_index`` is -1 for an unmapped task, as in Airflow. ``run_id`` is None only for
    keys of pods that carried no run id (Airflow 2 pods decoded without a database).
    """

    dag_id: str = attrs.field(validator=_non_empty_str("TaskInstanceKey"))
    task_id: str = attrs.field(validator=_non_empty_str("TaskInstanceKey"))
    run_id: str | None = attrs.field(validator=_optional_run_id)
    try_number: int = attrs.field(default=1, validator=_int_at_least("TaskInstanceKey", 0))
    map_index: int = attrs.field(default=-1, validator=_int_at_least("TaskInstanceKey", -1))

    @property
    def primary(self) -> tuple[str, str, str | None, int]:
        """The key without its try number, as Airflow's ``primary``: (dag, task, run, map)."""
        return (self.dag_id, self.task_id, self.run_id, self.map_index)

    def with_try_number(self, try_number: int) -> TaskInstanceKey:
        """A copy of this key for another try."""
        return attrs.evolve(self, try_number=try_number)

    def as_tuple(self) -> tuple[str, str, str | None, int, int]:
        """The five fields in Airflow's positional order, for interop with its named tuple."""
        return (self.dag_id, self.task_id, self.run_id, self.try_number, self.map_index)

    @classmethod
    def from_tuple(cls, fields: Sequence[Any]) -> TaskInstanceKey:
        """Build from Airflow's positional ``(dag_id, task_id, run_id, try_number, map_index)``."""
        if isinstance(fields, (str, bytes)) or len(fields) != 5:
            raise InvalidKey(
                "a task instance key tuple has five fields "
                f"(dag_id, task_id, run_id, try_number, map_index), got {shown(fields)}"
            )
        dag_id, task_id, run_id, try_number, map_index = fields
        return cls(dag_id, task_id, run_id, try_number, map_index)

    def to_json(self) -> dict[str, Any]:
        """The key as a JSON object: ``kind`` ``"task"`` and the five fields by name.

        :func:`key_from_json` reads it back to an equal key.
        """
        return {
            "kind": "task",
            "dag_id": self.dag_id,
            "task_id": self.task_id,
            "run_id": self.run_id,
            "try_number": self.try_number,
            "map_index": self.map_index,
        }

    def to_text(self, *, run_id: bool = True) -> str:
        """The key on one line: ``task etl.load run=r1 try=2 map=3``.

        ``run=`` is left out when the key has no run id or ``run_id`` is False (a
        timeline of one run); ``map=`` when the task is not mapped.
        """
        parts = [f"task {self.dag_id}.{self.task_id}"]
        if run_id and self.run_id is not None:
            parts.append(f"run={self.run_id}")
        parts.append(f"try={self.try_number}")
        if self.map_index >= 0:
            parts.append(f"map={self.map_index}")
        return " ".join(parts)


_set_field = object.__setattr__


def checked_task_key(
    dag_id: str, task_id: str, run_id: str, try_number: int, map_index: int
) -> TaskInstanceKey:
    """``TaskInstanceKey(...)`` of string fields, for decoders on the hot path.

    The validators' checks, inline: about half the cost of the constructor, which runs
    five validator calls. Anything they would refuse goes to the constructor, which
    raises its :class:`InvalidKey`.
    """
    if (
        type(dag_id) is str
        and type(task_id) is str
        and type(run_id) is str
        and type(try_number) is int
        and type(map_index) is int
        and dag_id
        and task_id
        and run_id
        and 0 <= try_number <= AIRFLOW_INT_MAX
        and -1 <= map_index <= AIRFLOW_INT_MAX
    ):
        key = object.__new__(TaskInstanceKey)
        _set_field(key, "dag_id", dag_id)
        _set_field(key, "task_id", task_id)
        _set_field(key, "run_id", run_id)
        _set_field(key, "try_number", try_number)
        _set_field(key, "map_index", map_index)
        _set_field(key, "_attrs_cached_hash", None)
        return key
    return TaskInstanceKey(dag_id, task_id, run_id, try_number, map_index)


def _canonical_uuid(_instance: object, _attribute: attrs.Attribute[Any], value: object) -> None:
    # Airflow coerces callback ids to ``str(uuid)``; anything else would make pod names,
    # annotations and equality depend on how the id happened to be spelled.
    if not isinstance(value, str):
        raise InvalidKey(f"CallbackKey.id must be a UUID string, got {shown(value)}", field="id")
    try:
        canonical = str(uuid.UUID(value))
    except ValueError:
        msg = f"CallbackKey.id must be a UUID string, got {shown(value)}"
        raise InvalidKey(msg, field="id") from None
    if canonical != value:
        raise InvalidKey(
            f"CallbackKey.id must be a canonical (lower-case, hyphenated) UUID: "
            f"got {shown(value)}, expected {canonical!r}",
            field="id",
        )


@attrs.frozen(repr=True, cache_hash=True)
class CallbackKey:
    """Identity of one callback workload (an Airflow ``ExecuteCallback``), by its UUID."""

    id: str = attrs.field(validator=_canonical_uuid)

    def __str__(self) -> str:
        return self.id

    def to_json(self) -> dict[str, Any]:
        """The key as a JSON object: ``{"kind": "callback", "id": ...}``.

        :func:`key_from_json` reads it back to an equal key.
        """
        return {"kind": "callback", "id": self.id}

    def to_text(self, *, run_id: bool = True) -> str:  # noqa: ARG002 - TaskInstanceKey's signature
        """The key on one line: ``callback <id>`` (``run_id`` is accepted for symmetry with
        :meth:`TaskInstanceKey.to_text`; a callback key has no run id)."""
        return f"callback {self.id}"


GENERIC_ID_MAX_LENGTH = 253
"""The longest :class:`GenericKey` id: the longest Kubernetes object name. The id is
carried in an annotation (any text fits one) and must leave the pod's 256 KiB of
annotations to the template and override: an id names a workload, it is no payload."""


def _generic_id(_instance: object, _attribute: attrs.Attribute[Any], value: object) -> None:
    # What a pod needs of the id: an annotation value is any UTF-8 text (a lone surrogate
    # is not), and the pod's label and name are made from it (always valid, see
    # pods.labels.build_labels_for_generic_pod). Controls, line separators and
    # bidirectional overrides are refused too: the id is shown in logs and on one line.
    if not isinstance(value, str) or not value:
        msg = f"GenericKey.id must be a non-empty string, got {shown(value)}"
        raise InvalidKey(msg, field="id")
    if len(value) > GENERIC_ID_MAX_LENGTH:
        msg = (
            f"GenericKey.id must be at most {GENERIC_ID_MAX_LENGTH} characters, got "
            f"{len(value)}: {shown(value)}"
        )
        raise InvalidKey(msg, field="id")
    if has_unprintable(value):
        msg = (
            "GenericKey.id must not hold control characters, line separators, "
            f"bidirectional overrides or lone surrogates, got {shown(value)}"
        )
        raise InvalidKey(msg, field="id")


@attrs.frozen(repr=True, cache_hash=True)
class GenericKey:
    """Identity of one workload of any executor, by an id the executor chooses.

    Any text of 1 to :data:`GENERIC_ID_MAX_LENGTH` characters on one line (``job-1``,
    ``nightly/report 2026-06-07``, a UUID, a database row id): the pod carries it in its
    ``workload_id`` annotation and is found by a label made from it. No Airflow version is
    needed to build, watch or adopt its pod. A generic workload runs once and ends in
    :data:`~k8s_workloads.states.GenericState` ``SUCCESS`` or ``FAILED``, decided by the
    callback rules (:data:`~k8s_workloads.decisions.CALLBACK_RULES`). It never equals a
    callback key with the same id.
    """

    id: str = attrs.field(validator=_generic_id)

    def __str__(self) -> str:
        return self.id

    def to_json(self) -> dict[str, Any]:
        """The key as a JSON object: ``{"kind": "generic", "id": ...}``.

        :func:`key_from_json` reads it back to an equal key.
        """
        return {"kind": "generic", "id": self.id}

    def to_text(self, *, run_id: bool = True) -> str:  # noqa: ARG002 - TaskInstanceKey's signature
        """The key on one line: ``generic <id>`` (``run_id`` as for
        :meth:`CallbackKey.to_text`)."""
        return f"generic {self.id}"


WorkloadKey: TypeAlias = TaskInstanceKey | CallbackKey | GenericKey
"""Any kind of workload key; narrow with ``isinstance``."""

RUN_ONCE_KEYS = (CallbackKey, GenericKey)
"""The kinds of workload that run once, decided by the callback rules: for ``isinstance``
(a generic workload is decided as a callback is, with no Airflow row)."""

_TASK_FIELDS = ("dag_id", "task_id", "run_id", "try_number", "map_index")


def key_from_json(data: object) -> WorkloadKey:
    """The key a ``to_json()`` object describes.

    Raises:
        InvalidKey: ``data`` is not such an object: not a mapping, an unknown ``kind``, a
            missing or extra field, or a field value no key can have; ``field`` names it.
    """
    if not isinstance(data, Mapping):
        raise InvalidKey(f"a key's JSON is an object, got {shown(data)}")
    kind = data.get("kind")
    if kind in {"callback", "generic"}:
        expected: tuple[str, ...] = ("id",)
    elif kind == "task":
        expected = _TASK_FIELDS
    else:
        msg = f"a key's JSON has kind 'task', 'callback' or 'generic', got {shown(kind)}"
        raise InvalidKey(msg, field="kind")
    for name in expected:
        if name not in data:
            raise InvalidKey(f"a {kind} key's JSON has no {name!r}", field=name)
    for name in data:
        if name != "kind" and name not in expected:
            raise InvalidKey(f"a {kind} key's JSON has no field {shown(name)}", field=str(name))
    if kind == "callback":
        return CallbackKey(data["id"])
    if kind == "generic":
        return GenericKey(data["id"])
    return TaskInstanceKey(*(data[name] for name in _TASK_FIELDS))
