"""The bounded YAML loader: alias bombs, deep nesting and recursive aliases are refused."""

from __future__ import annotations

import tracemalloc
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from k8s_workloads import limits
from k8s_workloads.yaml_input import (
    BoundedSafeLoader,
    YAMLLimitExceeded,
    compose_bounded,
    load_bounded,
    load_bounded_file,
)


def expanded(value: object) -> int:
    """The nodes ``value`` stands for once every shared part is written out again."""
    if isinstance(value, dict):
        return 1 + sum(expanded(key) + expanded(item) for key, item in value.items())
    if isinstance(value, list):
        return 1 + sum(expanded(item) for item in value)
    return 1


def bomb(levels: int, width: int = 9) -> str:
    """The billion laughs: each level a list of ``width`` aliases of the one below."""
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    lines += [
        f"l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * width)}]"
        for level in range(1, levels + 1)
    ]
    return "\n".join(lines) + "\n"


def test_a_billion_laughs_is_refused_before_anything_is_expanded() -> None:
    text = bomb(9)  # 9**10 nodes in its last list alone, from 540 bytes
    assert len(text) < 600
    tracemalloc.start()
    try:
        with pytest.raises(YAMLLimitExceeded, match=r"more than 100,000 YAML nodes") as caught:
            load_bounded(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert caught.value.limit == "max_nodes"
    assert peak < 1 << 20  # nothing was written out


def test_the_limit_is_the_expanded_count_exactly() -> None:
    text = bomb(3)
    size = expanded(yaml.safe_load(text))
    assert size > 9**4
    assert load_bounded(text, max_nodes=size) == yaml.safe_load(text)
    with pytest.raises(YAMLLimitExceeded):
        load_bounded(text, max_nodes=size - 1)


def test_a_recursive_alias_is_refused() -> None:
    with pytest.raises(YAMLLimitExceeded, match="refers to a node that holds it") as caught:
        load_bounded("a: &a [1, {b: *a}]\n")
    assert caught.value.limit == "recursion"


@pytest.mark.parametrize(
    "text", ["[" * 200 + "]" * 200, "a:\n" + "".join(f"{' ' * n}- \n" for n in range(150))]
)
def test_nesting_past_the_depth_limit_is_refused_not_a_recursion_error(text: str) -> None:
    with pytest.raises(YAMLLimitExceeded, match="nested more than 100 deep") as caught:
        load_bounded(text)
    assert caught.value.limit == "max_depth"
    nested = "[" * 100 + "]" * 100  # the limit itself is read
    assert compose_bounded(nested) is not None


def test_ten_thousand_levels_are_refused_where_pyyaml_would_overflow_the_stack() -> None:
    deep = "[" * 10_000 + "]" * 10_000
    with pytest.raises(RecursionError):
        yaml.safe_load(deep)
    with pytest.raises(YAMLLimitExceeded):
        load_bounded(deep)


def test_the_bundled_templates_load_as_safe_load_loads_them() -> None:
    examples = resources.files("k8s_workloads").joinpath("examples")
    for name in ("pod_template.yaml", "pod_override.yaml", "scenario.yaml"):
        text = examples.joinpath(name).read_text("utf-8")
        assert load_bounded(text) == yaml.safe_load(text)


def test_merge_keys_and_shared_mappings_still_load() -> None:
    text = "base: &b {image: x, env: [{name: A}]}\nc1: {<<: *b, name: one}\nc2: *b\n"
    assert load_bounded(text) == yaml.safe_load(text)


def test_the_loader_is_a_safe_loader() -> None:
    assert issubclass(BoundedSafeLoader, yaml.SafeLoader)
    with pytest.raises(yaml.constructor.ConstructorError):
        load_bounded("!!python/object/apply:os.system ['true']")


def test_the_default_bounds_are_the_limits_module_names() -> None:
    # At the default depth bound a document loads; one level deeper it is refused.
    depth = limits.MAX_YAML_DEPTH
    assert load_bounded("[" * depth + "]" * depth) is not None
    with pytest.raises(YAMLLimitExceeded) as caught:
        load_bounded("[" * (depth + 1) + "]" * (depth + 1))
    assert caught.value.limit == "max_depth"
    # Past the default node bound (aliases written out) it is refused too.
    fanout = 10
    levels = ["a0: &a0 [x]"] + [
        f"a{i}: &a{i} [{', '.join(['*a' + str(i - 1)] * fanout)}]"
        for i in range(1, 7)  # 10**6 nodes written out
    ]
    with pytest.raises(YAMLLimitExceeded) as caught:
        load_bounded("\n".join(levels))
    assert caught.value.limit == "max_nodes"


@st.composite
def _shared_documents(draw: st.DrawFn) -> dict[str, Any]:
    """A document whose parts are shared (so dumped with anchors and aliases) at random."""
    pool: list[Any] = draw(st.lists(st.integers() | st.text(max_size=3), min_size=1, max_size=4))
    for _ in range(draw(st.integers(1, 12))):
        parts = draw(st.lists(st.sampled_from(pool), max_size=5))
        if draw(st.booleans()):
            pool.append(parts)
        else:
            pool.append({f"k{index}": part for index, part in enumerate(parts)})
    return {"root": draw(st.lists(st.sampled_from(pool), min_size=1, max_size=5))}


@given(_shared_documents())
def test_documents_at_the_limit_load_and_one_node_less_refuses(document: dict[str, Any]) -> None:
    text = yaml.safe_dump(document)  # shared lists and mappings become anchors and aliases
    size = expanded(document)
    assert load_bounded(text, max_nodes=size) == document
    with pytest.raises(YAMLLimitExceeded):
        load_bounded(text, max_nodes=size - 1)


def test_a_file_is_read_to_its_limit_and_no_further(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_bytes("a: é\n".encode("utf-16"))  # YAML's own encodings, by byte order mark
    size = path.stat().st_size
    assert load_bounded_file(str(path), max_bytes=size) == {"a": "é"}
    with pytest.raises(YAMLLimitExceeded, match=f"over {size - 1} bytes") as caught:
        load_bounded_file(str(path), max_bytes=size - 1)
    assert caught.value.limit == "max_bytes"
    if Path("/dev/zero").exists():
        with pytest.raises(YAMLLimitExceeded, match="over 4,194,304 bytes"):
            load_bounded_file("/dev/zero")
