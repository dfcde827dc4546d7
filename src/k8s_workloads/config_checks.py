"""Validation of the configuration values (``DecisionConfig``, ``ResolverConfig``,
``ExecutorConfig``, the simulator's scenario config, the test kit's and the Airflow
executor's options) at construction: a wrong value is an :class:`InvalidConfig` naming its
field, never a misreading later (a retry count of -7, a version every callback event then
fails on).

The checks are attrs validators (``attrs.field(validator=boolean)``), one per kind of
value, shared by every config of the package; :func:`check` runs one outside attrs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, NoReturn

from k8s_workloads.compat import AirflowVersion, InvalidVersion
from k8s_workloads.display import shown

__all__ = [
    "InvalidConfig",
    "InvalidVersionConfig",
    "Validator",
    "backoff",
    "boolean",
    "check",
    "count",
    "delay",
    "grace",
    "kind",
    "optional_callable",
    "optional_mapping",
    "optional_seconds",
    "optional_text",
    "optional_version",
    "port",
    "positive",
    "retries",
    "seconds",
    "text_set",
    "version",
]

Validator = Callable[[object, Any, Any], None]
"""attrs' validator shape: (instance, attribute with ``.name``, value)."""


class InvalidConfig(ValueError):
    """A configuration value that cannot be used; ``field`` names it."""

    def __init__(self, owner: str, field: str, message: str) -> None:
        super().__init__(f"{owner}.{field}: {message}")
        self.field = field


def _owner(instance: object) -> str:
    return type(instance).__name__


def _refuse(instance: object, attribute: Any, value: object, must: str) -> NoReturn:  # noqa: ANN401
    """Raise the :class:`InvalidConfig` of a validator: what the value must be, and was."""
    raise InvalidConfig(_owner(instance), attribute.name, f"must {must}, got {shown(value)}")


def boolean(instance: object, attribute: Any, value: object) -> None:  # noqa: ANN401 - attrs'
    """True or False (no other value, not even 0 or 1)."""
    if not isinstance(value, bool):
        _refuse(instance, attribute, value, "be True or False")


def retries(instance: object, attribute: Any, value: object) -> None:  # noqa: ANN401
    """A retry budget: -1 (unlimited) or a count from 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value < -1:
        _refuse(instance, attribute, value, "be -1 (unlimited) or a count from 0")


def count(instance: object, attribute: Any, value: object) -> None:  # noqa: ANN401
    """A count from 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        _refuse(instance, attribute, value, "be a count from 0")


def positive(instance: object, attribute: Any, value: object) -> None:  # noqa: ANN401
    """A count from 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        _refuse(instance, attribute, value, "be a count from 1")


def _is_seconds(value: object, *, above_zero: bool) -> bool:
    return (
        not isinstance(value, bool)
        and isinstance(value, (int, float))
        and math.isfinite(value)
        and (value > 0 if above_zero else value >= 0)
    )


def seconds(instance: object, attribute: Any, value: object) -> None:  # noqa: ANN401
    """A finite, positive number of seconds."""
    if not _is_seconds(value, above_zero=True):
        _refuse(instance, attribute, value, "be a finite number of seconds above 0")


def delay(instance: object, attribute: Any, value: object) -> None:  # noqa: ANN401
    """A finite number of seconds from 0 (0: none)."""
    if not _is_seconds(value, above_zero=False):
        _refuse(instance, attribute, value, "be a finite number of seconds from 0")


def grace(instance: object, attribute: Any, value: object) -> None:  # noqa: ANN401
    """None (never), or a finite number of seconds from 0."""
    if value is not None and not _is_seconds(value, above_zero=False):
        _refuse(instance, attribute, value, "be None or a finite number of seconds from 0")


def optional_seconds(instance: object, attribute: Any, value: object) -> None:  # noqa: ANN401
    """None, or :func:`seconds`."""
    if value is not None:
        seconds(instance, attribute, value)


def backoff(instance: object, attribute: Any, value: object) -> None:  # noqa: ANN401
    """A pair of seconds above 0, ``(first, most)``, the first no more than the most."""
    if (
        not isinstance(value, tuple)
        or len(value) != 2
        or not all(_is_seconds(part, above_zero=True) for part in value)
        or value[0] > value[1]
    ):
        _refuse(instance, attribute, value, "be a pair (first, most) of seconds, first <= most")


def optional_text(instance: object, attribute: Any, value: object) -> None:  # noqa: ANN401
    """None, or a string."""
    if value is not None and not isinstance(value, str):
        _refuse(instance, attribute, value, "be None or a str")


def optional_mapping(instance: object, attribute: Any, value: object) -> None:  # noqa: ANN401
    """None, or a mapping."""
    if value is not None and not isinstance(value, Mapping):
        _refuse(instance, attribute, value, "be None or a mapping")


def optional_callable(instance: object, attribute: Any, value: object) -> None:  # noqa: ANN401
    """None, or a callable."""
    if value is not None and not callable(value):
        _refuse(instance, attribute, value, "be None or callable")


def kind(cls: type, *, optional: bool = False) -> Validator:
    """A validator: an instance of ``cls`` (or None, when ``optional``)."""
    wanted = f"None or a {cls.__name__}" if optional else f"a {cls.__name__}"

    def check(instance: object, attribute: Any, value: object) -> None:  # noqa: ANN401
        if not (isinstance(value, cls) or (optional and value is None)):
            _refuse(instance, attribute, value, f"be {wanted}")

    return check


def port(instance: object, attribute: Any, value: object) -> None:  # noqa: ANN401
    """A TCP port, 0 (any free one) to 65535."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 65535:
        _refuse(instance, attribute, value, "be a port from 0 to 65535")


class _Field(NamedTuple):
    name: str


def check(instance: object, name: str, validator: Validator, value: object) -> None:
    """Run an attrs-style validator outside attrs (dataclasses, plain ``__init__``)."""
    validator(instance, _Field(name), value)


def text_set(instance: object, attribute: Any, value: object) -> None:  # noqa: ANN401
    """A frozenset of strings."""
    if not isinstance(value, frozenset) or not all(isinstance(item, str) for item in value):
        _refuse(instance, attribute, value, "be a frozenset of str")


class InvalidVersionConfig(InvalidConfig, InvalidVersion):  # type: ignore[misc]  # field: str
    """A configured Airflow version that is not a version: both an :class:`InvalidConfig`
    naming its field and an :class:`InvalidVersion`."""


def version(owner: str, field: str, value: object) -> AirflowVersion:
    """``value`` (text or an :class:`AirflowVersion`) parsed once, for a converter."""
    try:
        return AirflowVersion.parse(value)  # type: ignore[arg-type]  # checked inside
    except InvalidVersion as error:
        raise InvalidVersionConfig(owner, field, str(error)) from None


def optional_version(owner: str, field: str, value: object) -> AirflowVersion | None:
    """None, or :func:`version`."""
    return None if value is None else version(owner, field, value)
