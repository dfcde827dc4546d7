"""Model objects read by the core without the core importing the adapter
(:mod:`k8s_workloads.model_readers`): a reader registered per model package, and the
kubernetes package's reader loaded only when one of its objects is met."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from k8s_workloads import model_readers


class _Model:
    """An object of this test module's package (``tests``)."""


def _read(obj: object) -> Mapping[str, Any]:
    return {"read": type(obj).__name__}


def test_an_object_of_a_registered_package_gets_its_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_readers, "_READERS", {})
    assert model_readers.reader_for(_Model()) is None
    model_readers.register("tests", _read)
    reader = model_readers.reader_for(_Model())
    assert reader is not None
    assert reader(_Model()) == {"read": "_Model"}
    assert model_readers.reader_for({"a": 1}) is None  # a dict is no model


def test_a_kubernetes_object_loads_the_adapters_reader() -> None:
    kubernetes = pytest.importorskip("kubernetes")
    pod = kubernetes.client.V1Pod(metadata=kubernetes.client.V1ObjectMeta(name="p"))
    reader = model_readers.reader_for(pod)
    assert reader is not None
    assert reader(pod)["metadata"] == {"name": "p"}
