"""Validation of the configuration values (``DecisionConfig``, ``ResolverConfig``,
``ExecutorConfig``) at construction: a wrong value is an :class:`InvalidConfig` naming its
field, never a misreading later (a retry count of -7, a version every callback event then
fails on)."""

from __future__ import annotations

import math
from typing import Any

from k8s_workloads._display import shown

__all__ = ["InvalidConfig"]


class InvalidConfig(ValueError):
    """A configuration value that cannot be used; ``field`` names it."""

    def __init__(self, owner: str, field: str, message: str) -> None:
        super().__init__(f"{owner}.{field}: {message}")
        self.field = field


def _owner(instance: object) -> str:
    return type(instance).__name__


def boolean(instance: object, attribute: Any, value: object) -> None:  # noqa: ANN401 - attrs'
    if not isinstance(value, bool):
        raise InvalidConfig(
            _owner(instance), attribute.name, f"must be True or False, got {shown(value)}"
        )


def retries(instance: object, attribute: Any, value: object) -> None:  # noqa: ANN401
    """A retry budget: -1 (unlimited) or a count from 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value < -1:
        raise InvalidConfig(
            _owner(instance),
            attribute.name,
            f"must be -1 (unlimited) or a count from 0, got {shown(value)}",
        )


def count(instance: object, attribute: Any, value: object) -> None:  # noqa: ANN401
    """A count from 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidConfig(
            _owner(instance), attribute.name, f"must be a count from 0, got {shown(value)}"
        )


def positive(instance: object, attribute: Any, value: object) -> None:  # noqa: ANN401
    """A count from 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidConfig(
            _owner(instance), attribute.name, f"must be a count from 1, got {shown(value)}"
        )


def seconds(instance: object, attribute: Any, value: object) -> None:  # noqa: ANN401
    """A finite, positive number of seconds."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise InvalidConfig(
            _owner(instance),
            attribute.name,
            f"must be a finite number of seconds above 0, got {shown(value)}",
        )


def text_set(instance: object, attribute: Any, value: object) -> None:  # noqa: ANN401
    if not isinstance(value, frozenset) or not all(isinstance(item, str) for item in value):
        raise InvalidConfig(
            _owner(instance), attribute.name, f"must be a frozenset of str, got {shown(value)}"
        )


def airflow_version(instance: object, attribute: Any, value: object) -> None:  # noqa: ANN401
    """None, or a version text parsed once, here (so a bad one fails now, not per event)."""
    if value is None:
        return
    from k8s_workloads.compat import InvalidVersion, release_tuple  # noqa: PLC0415

    if not isinstance(value, str):
        raise InvalidConfig(
            _owner(instance), attribute.name, f"must be a version string, got {shown(value)}"
        )
    try:
        release_tuple(value)
    except InvalidVersion as error:
        raise InvalidConfig(_owner(instance), attribute.name, str(error)) from None
