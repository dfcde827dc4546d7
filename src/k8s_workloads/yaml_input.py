"""YAML from users, read within bounds: its nesting, and its size once aliases are expanded.

PyYAML keeps an alias as a reference to the anchored node, so loading a 500-byte
"billion laughs" document is quick, but it stands for billions of nodes, and everything
that walks the result (the pod builders' merge, ``json.dumps``, ``yaml.safe_dump``) writes
every one of them out. :class:`BoundedSafeLoader` counts the nodes a document stands for,
aliases expanded, and refuses it past ``max_nodes``; it also refuses nesting past
``max_depth``, where PyYAML's recursive composer would raise ``RecursionError``.

The CLI reads templates and overrides with it, the simulator its scenarios, the Airflow
executor its pod template file.
"""

from __future__ import annotations

from typing import Any

import yaml

from k8s_workloads.limits import MAX_INPUT_BYTES, MAX_YAML_DEPTH, MAX_YAML_NODES

__all__ = [
    "BoundedSafeLoader",
    "YAMLLimitExceeded",
    "compose_bounded",
    "load_bounded",
    "load_bounded_file",
]


class YAMLLimitExceeded(ValueError):
    """A YAML document past a limit: too many nodes once aliases are expanded, or too deep."""

    def __init__(self, limit: str, message: str) -> None:
        self.limit = limit
        """``max_nodes``, ``max_depth``, ``max_bytes`` (a file), or ``recursion`` (an alias
        inside the node it names)."""
        super().__init__(message)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _check_expansion(root: yaml.Node, max_nodes: int) -> None:
    """Raise :class:`YAMLLimitExceeded` if ``root`` stands for more than ``max_nodes`` nodes.

    Each distinct node is visited once (its expanded size is kept), so this costs the
    document's size, not its expansion; an alias inside the node it names is an endless
    expansion.
    """
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, closing = stack.pop()
        key = id(node)
        if closing:
            open_nodes.discard(key)
            size = 1 + sum(sizes[id(child)] for child in _children(node))
            if size > max_nodes:
                raise YAMLLimitExceeded(
                    "max_nodes",
                    f"more than {max_nodes:,} YAML nodes once its aliases are expanded "
                    f"(line {node.start_mark.line + 1})",
                )
            sizes[key] = size
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise YAMLLimitExceeded(
                "recursion",
                f"an alias refers to a node that holds it (line {node.start_mark.line + 1}): "
                "it expands without end",
            )
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(_children(node)))


class BoundedSafeLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses documents past ``max_nodes`` (expanded) or ``max_depth``.

    ``max_nodes=None`` counts nothing (a scenario's own schema bounds what it expands to).
    """

    def __init__(
        self,
        stream: str | bytes,
        *,
        max_nodes: int | None = MAX_YAML_NODES,
        max_depth: int = MAX_YAML_DEPTH,
    ) -> None:
        super().__init__(stream)
        self.max_nodes = max_nodes
        self.max_depth = max_depth
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        self._depth += 1
        try:
            if self._depth > self.max_depth:
                line = parent.start_mark.line + 1 if parent is not None else 1
                raise YAMLLimitExceeded(
                    "max_depth", f"nested more than {self.max_depth} deep (from line {line})"
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def compose_document(self) -> yaml.Node | None:
        node: yaml.Node | None = super().compose_document()
        if node is not None and self.max_nodes is not None:
            _check_expansion(node, self.max_nodes)
        return node


def compose_bounded(
    text: str, *, max_nodes: int | None = MAX_YAML_NODES, max_depth: int = MAX_YAML_DEPTH
) -> yaml.Node | None:
    """``yaml.compose(text)`` within the bounds: :class:`YAMLLimitExceeded` past them."""
    loader = BoundedSafeLoader(text, max_nodes=max_nodes, max_depth=max_depth)
    try:
        node: yaml.Node | None = loader.get_single_node()
    finally:
        loader.dispose()
    return node


def load_bounded(
    text: str | bytes, *, max_nodes: int | None = MAX_YAML_NODES, max_depth: int = MAX_YAML_DEPTH
) -> Any:  # noqa: ANN401 - whatever the document holds, as yaml.safe_load
    """``yaml.safe_load(text)`` within the bounds: :class:`YAMLLimitExceeded` past them."""
    loader = BoundedSafeLoader(text, max_nodes=max_nodes, max_depth=max_depth)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def load_bounded_file(
    path: str,
    *,
    max_bytes: int = MAX_INPUT_BYTES,
    max_nodes: int | None = MAX_YAML_NODES,
    max_depth: int = MAX_YAML_DEPTH,
) -> Any:  # noqa: ANN401 - as load_bounded
    """:func:`load_bounded` of a file's bytes, refused past ``max_bytes`` (read one byte past).

    The encoding is YAML's own: UTF-8, or UTF-16 or -32 with a byte order mark. Raises
    ``OSError`` for a file that cannot be read.
    """
    with open(path, "rb") as handle:  # noqa: PTH123
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise YAMLLimitExceeded("max_bytes", f"the file is over {max_bytes:,} bytes")
    return load_bounded(data, max_nodes=max_nodes, max_depth=max_depth)
