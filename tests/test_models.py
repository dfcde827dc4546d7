"""Model objects read by the core without the core importing the adapter
(:mod:`k8s_workloads._models`): a reader registered per model package, and the
kubernetes package's reader loaded only when one of its objects is met."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from k8s_workloads import _models


class _Model:
    """An object of this test module's package (``tests``)."""


def _read(obj: object) -> Mapping[str, Any]:
    return {"read": type(obj).__name__}


def test_an_object_of_a_registered_package_gets_its_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_models, "_READERS", {})
    assert _models.reader_for(_Model()) is None
    _models.register("tests", _read)
    reader = _models.reader_for(_Model())
    assert reader is not None
    assert reader(_Model()) == {"read": "_Model"}
    assert _models.reader_for({"a": 1}) is None  # a dict is no model


def test_a_kubernetes_object_loads_the_adapters_reader() -> None:
    kubernetes = pytest.importorskip("kubernetes")
    pod = kubernetes.client.V1Pod(metadata=kubernetes.client.V1ObjectMeta(name="p"))
    reader = _models.reader_for(pod)
    assert reader is not None
    assert reader(pod)["metadata"] == {"name": "p"}
