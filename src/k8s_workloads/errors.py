"""The one shape of the errors that name the field at fault.

Bad input raises a typed error naming where it sits (``metadata.labels['dag_id']``,
``try_number``, ``spec.containers[0].ports[0].containerPort``): the annotation codec,
the naming rules and the Pod schema each subclass :class:`FieldError` with their own
meaning, so the message reads ``field: message`` and ``field`` is the same attribute
everywhere.
"""

from __future__ import annotations

__all__ = ["FieldError"]


class FieldError(ValueError):
    """A value breaks a rule; ``field`` names where it sits, the message says why."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        """Where the bad value sits, e.g. ``metadata.labels['dag_id']`` or ``try_number``."""
