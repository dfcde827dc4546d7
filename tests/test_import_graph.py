"""The import graph of ``src/k8s_workloads``: no cycle at run time, no private name across
packages, each name taken from the module that owns it, and the cycles that
``TYPE_CHECKING`` imports close counted so that none is added.

Read from the source (nothing is imported to draw the graph), so the tests also catch an
import that only runs on a rare path: every import counts, function-level ones too.

* At run time, a cycle means two modules each need the other: one of them has to import
  late, and a reader cannot tell which part sits above the other. Imports under
  ``if TYPE_CHECKING:`` never run and are left out there.
* Where packages meet, the names are public: no module imports a private module
  (``_name``) or a private name of another subpackage (``airflow``, ``cli``, ...; the
  top-level modules together are one more), ``TYPE_CHECKING`` imports included. Inside
  one subpackage, its private modules are its own business.
* Counted with the ``TYPE_CHECKING`` imports, the cycles show the parts that know each
  other only for their types; :data:`KNOWN_CYCLES` may only shrink.
"""

from __future__ import annotations

import ast
import functools
import pathlib
import textwrap

SRC = pathlib.Path(__file__).resolve().parent.parent / "src"
PACKAGE = "k8s_workloads"

KNOWN_CYCLES = 0
"""The elementary import cycles, ``TYPE_CHECKING`` imports included: none (issue 31). The
Airflow executor's parts are given what they use (its watcher a client, a selector, a
queue and a logger), not the executor; the pods identity check takes the layers' key sets,
not the prepared build's plan; the simulator's parts take what they read as arguments, not
the ``world``'s ``Simulation``. The test fails when one is added."""


def _module_name(path: pathlib.Path, src: pathlib.Path = SRC) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(src: pathlib.Path = SRC, package: str = PACKAGE) -> dict[str, pathlib.Path]:
    return {_module_name(path, src): path for path in sorted((src / package).rglob("*.py"))}


@functools.cache
def _parse(text: str) -> ast.Module:
    return ast.parse(text)


def _parsed(path: pathlib.Path) -> ast.Module:
    """The module's tree, parsed once per text (the tests read the package many times)."""
    return _parse(path.read_text(encoding="utf-8"))


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _is_main(node: ast.If) -> bool:
    """``if __name__ == "__main__":``: runs only in the module run as a script, which is
    ``__main__``, another module than its import."""
    test = node.test
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
    )


def _imports(
    tree: ast.AST, *, type_checking: bool = False, main: bool = False
) -> list[ast.Import | ast.ImportFrom]:
    """The import statements that run when the module is imported; with ``type_checking``,
    those under ``if TYPE_CHECKING:`` too, with ``main`` those under
    ``if __name__ == "__main__":``."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and (
                (not type_checking and _is_type_checking(child)) or (not main and _is_main(child))
            ):
                for other in child.orelse:
                    visit(other)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append(child)
            visit(child)

    visit(tree)
    return found


def _source(importer: str, path: pathlib.Path, node: ast.ImportFrom) -> str:
    """The absolute module a ``from`` import names (relative ones resolved)."""
    if node.level == 0:
        return node.module or ""
    # A package's __init__ is the package itself: ``.`` is the package, not its parent.
    base = importer.split(".")
    if path.name != "__init__.py":
        base.pop()
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _targets(
    importer: str, path: pathlib.Path, node: ast.Import | ast.ImportFrom, files: set[str]
) -> list[tuple[str, str | None]]:
    """What ``node`` imports: ``(module, name)`` pairs, name None for a module itself
    (``from package import submodule`` imports the submodule)."""
    if isinstance(node, ast.Import):
        return [(alias.name, None) for alias in node.names]
    source = _source(importer, path, node)
    found: list[tuple[str, str | None]] = []
    for alias in node.names:
        submodule = f"{source}.{alias.name}"
        found.append((submodule, None) if submodule in files else (source, alias.name))
    return found


def import_graph(
    src: pathlib.Path = SRC, package: str = PACKAGE, *, type_checking: bool = False
) -> dict[str, set[str]]:
    """Each module of the package and the package modules its imports name: those that run
    when it is imported, with ``type_checking`` those for the type checker too."""
    files = _modules(src, package)
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        tree = _parsed(path)
        for node in _imports(tree, type_checking=type_checking):
            for module, _ in _targets(name, path, node, set(files)):
                if module in files and module != name:
                    graph[name].add(module)
    return graph


def _is_private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def private_imports(src: pathlib.Path = SRC, package: str = PACKAGE) -> list[str]:
    """``file:line: import`` for each import of a private module or a private name from
    another subpackage (the top-level modules being one), every import counted."""
    files = _modules(src, package)
    packages = {name for name, path in files.items() if path.name == "__init__.py"}

    def part(module: str) -> str:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 and ".".join(parts[:2]) in packages else ""

    found = []
    for name, path in files.items():
        tree = _parsed(path)
        for node in _imports(tree, type_checking=True, main=True):
            for module, imported in _targets(name, path, node, set(files)):
                if module.partition(".")[0] != package or part(module) == part(name):
                    continue
                private_module = any(_is_private(p) for p in module.split(".")[1:])
                if private_module or (imported is not None and _is_private(imported)):
                    shown = module if imported is None else f"{imported} from {module}"
                    where = path.relative_to(src).as_posix()
                    found.append(f"{where}:{node.lineno}: {shown}")
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def _cycles_through(graph: dict[str, set[str]], start: str, allowed: set[str]) -> list[list[str]]:
    """The elementary cycles from ``start`` back to it through ``allowed`` modules only."""
    found: list[list[str]] = []
    path = [start]

    def walk(node: str) -> None:
        for target in sorted(graph[node]):
            if target == start:
                found.append(list(path))
            elif target in allowed and target not in path:
                path.append(target)
                walk(target)
                path.pop()

    walk(start)
    return found


def simple_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every elementary cycle (no module twice), each once, from its first module in sorted
    order; looked for inside the strongly connected components, the only places they are."""
    found: list[list[str]] = []
    for component in cycles(graph):
        for at, start in enumerate(component):  # sorted: each cycle from its first module
            found += _cycles_through(graph, start, set(component[at:]))
    return found


def test_the_package_has_no_import_cycle() -> None:
    assert cycles(import_graph()) == []


def test_a_cycle_is_found_where_there_is_one() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_each_elementary_cycle_is_counted_once() -> None:
    # One component, three cycles: a-b, a-c and a-b-c; d only reaches it.
    graph = {"a": {"b", "c"}, "b": {"a", "c"}, "c": {"a"}, "d": {"a"}}
    assert simple_cycles(graph) == [["a", "b"], ["a", "b", "c"], ["a", "c"]]
    assert simple_cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_function_level_imports_and_skips_type_checking_ones() -> None:
    graph = import_graph()
    # pods' errors mask tokens with redaction's masker; creation_errors reads config's options.
    assert "k8s_workloads.pods.redaction" in graph["k8s_workloads.pods.errors"]
    assert "k8s_workloads.config" in graph["k8s_workloads.decisions.creation_errors"]
    # The CLI imports its commands' modules inside functions.
    assert "k8s_workloads.pods.payload" in graph["k8s_workloads.cli._render"]
    # The requests name Manifest for their types only: an edge of the full graph alone.
    requests = "k8s_workloads.executor.requests"
    assert "k8s_workloads.pods.manifest" not in graph[requests]
    assert "k8s_workloads.pods.manifest" in import_graph(type_checking=True)[requests]


def test_no_private_module_or_name_is_imported_from_another_subpackage() -> None:
    assert private_imports() == []


def test_import_cycles_with_the_type_checking_ones_are_not_added() -> None:
    found = simple_cycles(import_graph(type_checking=True))
    shown = "\n".join(" -> ".join(cycle) for cycle in found)
    assert len(found) <= KNOWN_CYCLES, f"a new import cycle:\n{shown}"


def test_pods_and_the_simulator_have_no_import_cycle_even_for_types() -> None:
    # Composed, not split: the identity check takes two key sets, the simulator's parts
    # take what they read; neither package's modules know each other for types alone.
    composed = ("k8s_workloads.pods.", "k8s_workloads.sim.")
    found = simple_cycles(import_graph(type_checking=True))
    assert [cycle for cycle in found if any(m.startswith(composed) for m in cycle)] == []


def _write_tree(root: pathlib.Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def test_the_checks_report_what_a_small_tree_breaks(tmp_path: pathlib.Path) -> None:
    _write_tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/_shared.py": "def shared() -> None: ...\n",
            "pkg/top.py": "from pkg._shared import shared\nfrom pkg.b.user import late\n",
            "pkg/a/__init__.py": "from pkg.a._inner import helper\n",
            "pkg/a/_inner.py": "def helper() -> None: ...\ndef _hidden() -> None: ...\n",
            "pkg/a/mod.py": """\
                from pkg.a._inner import helper
                from ._inner import _hidden
                _private = 1
                """,
            "pkg/b/__init__.py": "",
            "pkg/b/user.py": """\
                from __future__ import annotations
                from typing import TYPE_CHECKING
                from pkg.a import mod
                from pkg import _shared
                if TYPE_CHECKING:
                    from pkg.a._inner import helper
                def late() -> None:
                    from ..a.mod import _private
                    import pkg.a._inner
                    from pkg.a.mod import __doc__
                """,
            "pkg/b/cycle.py": """\
                from typing import TYPE_CHECKING
                if TYPE_CHECKING:
                    from pkg.b.user import late
                if __name__ == "__main__":
                    from pkg._shared import shared
                """,
        },
    )
    # Inside one subpackage (and among the top-level modules) private names are fine; a
    # dunder is no private name.
    assert private_imports(tmp_path, "pkg") == [
        "pkg/b/cycle.py:5: shared from pkg._shared",
        "pkg/b/user.py:4: pkg._shared",
        "pkg/b/user.py:6: helper from pkg.a._inner",
        "pkg/b/user.py:8: _private from pkg.a.mod",
        "pkg/b/user.py:9: pkg.a._inner",
    ]
    # user imports cycle, cycle imports user only under TYPE_CHECKING: a cycle of the full
    # graph alone.
    _write_tree(tmp_path, {"pkg/b/user.py": "import pkg.b.cycle\n"})
    assert cycles(import_graph(tmp_path, "pkg")) == []
    assert simple_cycles(import_graph(tmp_path, "pkg", type_checking=True)) == [
        ["pkg.b.cycle", "pkg.b.user"]
    ]


def _defined(tree: ast.Module) -> set[str]:
    """The names a module defines at its top level (not those it imports)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_the_package_takes_each_name_from_its_owner() -> None:
    """``from k8s_workloads.m import Name`` in the package's own code names the module that
    defines ``Name`` (a package's ``__init__`` re-exports for users)."""
    files = _modules()
    trees = {name: _parsed(path) for name, path in files.items()}
    defined = {name: _defined(tree) for name, tree in trees.items()}
    allowed = {
        # ``python -m k8s_workloads`` runs the console script's entry point, named as
        # pyproject.toml names it (``k8s_workloads.cli:main``).
        ("main", "k8s_workloads.cli"),
    }
    borrowed = []
    for name, tree in sorted(trees.items()):
        if files[name].name == "__init__.py":
            continue  # a package's __init__ re-exports by design
        for node in _imports(tree):
            if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                continue
            source = node.module
            if source not in files:
                continue  # not ours
            # A package's ``__init__`` re-exports for users; the package's own code names
            # the module that defines the name, as for any other module.
            for alias in node.names:
                if alias.name == "*":  # a re-export, which only a package's __init__ makes
                    borrowed.append(f"{name}: * from {source}")
                elif (
                    f"{source}.{alias.name}" not in files
                    and alias.name not in defined[source]
                    and (alias.name, source) not in allowed
                ):
                    borrowed.append(f"{name}: {alias.name} from {source}")
    assert borrowed == []
