from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

import k8s_workloads
from tests.support.fresh_python import loaded_after

ROOT = Path(__file__).resolve().parent.parent


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
    from k8s_workloads import keys  # noqa: PLC0415
    from k8s_workloads.watch import events  # noqa: PLC0415

    assert k8s_workloads.TaskInstanceKey is keys.TaskInstanceKey
    assert k8s_workloads.resolve_event is events.resolve_event


def test_the_top_level_is_a_surface_a_reader_can_hold() -> None:
    # What a newcomer needs first; the specialist names are imported from their modules.
    assert len(k8s_workloads.__all__) <= 70
    assert "make_safe_label_value" not in k8s_workloads.__all__
    with pytest.raises(AttributeError, match="no attribute 'make_safe_label_value'"):
        _ = k8s_workloads.make_safe_label_value  # type: ignore[attr-defined]


def test_import_loads_neither_kubernetes_nor_heavy_modules() -> None:
    heavy = ("kubernetes", "attrs", "slugify", "importlib.metadata", "yaml")
    assert loaded_after("import k8s_workloads", *heavy) == []


def test_core_use_never_imports_kubernetes() -> None:
    use = (
        "import k8s_workloads as k; "
        "k.TaskInstanceKey('d', 't', 'r'); "
        "from k8s_workloads.pods.codec import annotations_to_key; "
        "annotations_to_key({'dag_id': 'd', 'task_id': 't', 'try_number': '1'}); "
        "from k8s_workloads.pods.labels import create_unique_id; "
        "create_unique_id('d', 't')"
    )
    assert loaded_after(use, "kubernetes") == []


def _gen_init() -> Any:
    spec = importlib.util.spec_from_file_location("gen_init", ROOT / "scripts" / "gen_init.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_type_checking_imports_are_made_from_the_table() -> None:
    # mypy reads the generated imports, the run time the table: they must name the same.
    gen = _gen_init()
    source = (ROOT / "src" / "k8s_workloads" / "__init__.py").read_text(encoding="utf-8")
    assert gen.updated(source) == source, "run scripts/gen_init.py"
    table = gen.public_table(source)
    assert {name: mod for mod, names in table.items() for name in names} == k8s_workloads._LAZY
    assert sorted(k8s_workloads.__all__) == sorted(["__version__", *k8s_workloads._LAZY])


def test_the_check_fails_when_the_table_and_the_imports_diverge() -> None:
    gen = _gen_init()
    source = (ROOT / "src" / "k8s_workloads" / "__init__.py").read_text(encoding="utf-8")
    added = source.replace(
        '    "InvalidKey": "keys",',
        '    "InvalidKey": "keys",\n    "key_to_nothing": "keys",',
        1,
    )
    assert added != source
    assert "key_to_nothing as key_to_nothing" in gen.updated(added)
    twice = source.replace(
        '    "InvalidKey": "keys",',
        '    "InvalidKey": "keys",\n    "InvalidKey": "pods.codec",',
        1,
    )
    with pytest.raises(SystemExit, match="twice"):
        gen.updated(twice)
    # An import edited by hand, not in the table, is undone as well.
    by_hand = source.replace(
        "    from k8s_workloads.keys import InvalidKey as InvalidKey\n",
        "    from k8s_workloads.keys import InvalidKey as InvalidKey\n"
        "    from k8s_workloads.keys import AIRFLOW_INT_MAX as AIRFLOW_INT_MAX\n",
    )
    assert by_hand != source
    assert gen.updated(by_hand) == source
