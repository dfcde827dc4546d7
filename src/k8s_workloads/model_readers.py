"""Model objects (a ``V1Pod``) read by the core without the core importing the adapter.

The core takes plain manifests; a caller may still hand it the kubernetes client's model
objects (``Watch.stream`` yields ``V1Pod`` events). The adapter, the one module that
imports ``kubernetes``, registers its reader here when it is imported, for the top-level
package whose objects it reads. A core module that meets such an object asks
:func:`reader_for`; an object of a package with no reader yet names, in
:data:`_PLUGINS`, the module that registers one, loaded then: the package itself is
already imported, since its object exists, so nothing is imported that the caller has
not paid for. Nothing here imports ``kubernetes`` or the adapter by itself.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    Reader = Callable[[object], Mapping[str, Any]]

__all__ = ["reader_for", "register"]

_READERS: dict[str, Reader] = {}

_PLUGINS = {"kubernetes": "k8s_workloads.adapters"}
"""A model package's top-level name, to the module that registers its reader on import."""


def register(package: str, reader: Reader) -> None:
    """Read the model objects of ``package`` (a top-level name) with ``reader``."""
    _READERS[package] = reader


def reader_for(obj: object) -> Reader | None:
    """The registered reader for ``obj``'s package, or None if it is no known model."""
    package = type(obj).__module__.partition(".")[0]
    reader = _READERS.get(package)
    if reader is None and package in _PLUGINS:
        importlib.import_module(_PLUGINS[package])
        reader = _READERS.get(package)
    return reader
