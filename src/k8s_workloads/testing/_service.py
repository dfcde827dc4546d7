"""A kit part that runs in the background between ``start()`` and ``stop()``: the API
server, the kubelets. ``with part:`` starts it and stops it on the way out, whatever
happens inside."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["Service"]

S = TypeVar("S", bound="Service")


class Service:
    """``start()`` (answers the part itself), ``stop()`` (safe to call twice), and the
    context manager that runs between them."""

    def start(self) -> object:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self: S) -> S:  # noqa: PYI019 - no typing.Self on Python 3.10
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
