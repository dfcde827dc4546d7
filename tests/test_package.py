from __future__ import annotations

import subprocess
import sys

import pytest

import k8s_workloads


def test_every_public_name_resolves() -> None:
    from importlib import import_module  # noqa: PLC0415

    lazy: dict[str, str] = k8s_workloads._LAZY
    for name in k8s_workloads.__all__:
        value = getattr(k8s_workloads, name)
        if name in lazy:  # the defining module's own object, not a copy or a stand-in
            assert value is getattr(import_module(f"k8s_workloads.{lazy[name]}"), name)
    assert sorted(dir(k8s_workloads)) == sorted(k8s_workloads.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = k8s_workloads.nope  # type: ignore[attr-defined]


def test_public_names_are_the_modules_own_objects() -> None:
    from k8s_workloads import codec, keys  # noqa: PLC0415

    assert k8s_workloads.TaskInstanceKey is keys.TaskInstanceKey
    assert k8s_workloads.annotations_to_key is codec.annotations_to_key


def test_import_loads_neither_kubernetes_nor_heavy_modules() -> None:
    code = (
        "import sys, k8s_workloads; "
        "print(sorted(m for m in ('kubernetes', 'attrs', 'slugify', 'importlib.metadata', "
        "'yaml') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_core_use_never_imports_kubernetes() -> None:
    code = (
        "import sys, k8s_workloads as k; "
        "k.annotations_to_key({'dag_id': 'd', 'task_id': 't', 'try_number': '1'}); "
        "k.create_unique_id('d', 't'); "
        "print('kubernetes' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"
