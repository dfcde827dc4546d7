"""The tests mirror the source tree: every module of ``src/k8s_workloads`` that holds code
has its test file at the mirrored path, so a reader finds a module's tests from its name.

``k8s_workloads/<part>/<module>.py`` is tested in ``tests/<part>/test_<module>.py``; a
private module ``_name`` in ``test_name.py`` (``test__name.py`` when a public ``name``
sits beside it); a package's ``__init__`` that holds code of its own (a function or
class, an import guard) in ``test_package.py`` of its folder. Modules of nothing but
imports and ``__all__``, lazy re-exports (``__getattr__``, ``__dir__``) and tables of
constants (``limits``, the generated ``pods/schema_definitions``: their values are tested where
they are used) hold no code to test.
Read from the source, nothing imported.
"""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "k8s_workloads"
TESTS = ROOT / "tests"

# Modules with code but no test file of their own, each with the reason; nothing else may
# be missing.
EXEMPT = {
    # ``python -m`` entry points of two lines: run as a process by tests/cli/test_main.py
    # and tests/testing/test_local.py.
    "__main__.py",
    "testing/__main__.py",
    # Package data: the example DAG ``k8s-workloads local`` copies into its home, written as
    # a user writes one (it imports airflow.sdk); tests/cli/test_local_home.py and
    # tests/airflow/test_local.py run it.
    "examples/_local_dags/deadline_example.py",
    "examples/_local_dags/deadline_example_alerts.py",
}

# Modules still without a test file of their own (issue 20): each is tested through
# another module's tests today. Remove an entry when its file exists; the test below
# fails while an entry here has a test file, so the list only shrinks.
NOT_YET: set[str] = set()

_LAZY = {"__getattr__", "__dir__"}


def _about_type_checking(node: ast.If) -> bool:
    """``if TYPE_CHECKING:`` or ``if not TYPE_CHECKING:`` (imports, lazy loaders)."""
    test = node.test
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"


def _holds_code(tree: ast.Module) -> bool:
    """Whether a module does more than re-export or name constants: a lazy ``__init__``
    or a table of constants does not."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name not in _LAZY:
            return True
        if isinstance(node, (ast.Try, ast.For, ast.While, ast.With)):
            return True
        if isinstance(node, ast.If) and not _about_type_checking(node):
            return True
        if isinstance(node, ast.Expr) and not isinstance(node.value, ast.Constant):
            return True  # a call run at import
    return False


def expected_test(
    module: pathlib.Path, package: pathlib.Path = PACKAGE, tests: pathlib.Path = TESTS
) -> pathlib.Path | None:
    """The test file ``module`` (a path under ``package``) must have in ``tests``; None if
    it holds no code to test."""
    relative = module.relative_to(package)
    tree = ast.parse(module.read_text(encoding="utf-8"))
    folder = tests.joinpath(*relative.parts[:-1])
    if not _holds_code(tree):
        return None
    if module.name == "__init__.py":
        return folder / "test_package.py"
    stem = module.stem
    if stem.startswith("_") and not stem.startswith("__"):
        public = module.with_name(stem[1:] + ".py")
        name = stem if public.exists() else stem[1:]
    else:
        name = stem
    return folder / f"test_{name}.py"


def _modules() -> dict[str, pathlib.Path]:
    return {path.relative_to(PACKAGE).as_posix(): path for path in sorted(PACKAGE.rglob("*.py"))}


def test_every_module_that_holds_code_has_its_mirrored_test_file() -> None:
    missing = []
    for name, path in _modules().items():
        if name in EXEMPT or name in NOT_YET:
            continue
        expected = expected_test(path)
        if expected is not None and not expected.exists():
            missing.append(f"{name}: {expected.relative_to(ROOT)}")
    assert missing == []


def test_the_lists_of_exceptions_name_modules_that_exist_and_still_need_them() -> None:
    modules = _modules()
    assert sorted((EXEMPT | NOT_YET) - set(modules)) == []
    done = []
    for name in sorted(NOT_YET):
        expected = expected_test(modules[name])
        if expected is None or expected.exists():
            done.append(name)
    assert done == []  # these now have their file: remove them from NOT_YET


def test_the_mirrored_path_follows_the_naming_rules(tmp_path: pathlib.Path) -> None:
    modules = _modules()
    assert expected_test(modules["sim/_airflow.py"]) == TESTS / "sim" / "test_airflow.py"
    assert expected_test(modules["testing/strategies/_ids.py"]) == (
        TESTS / "testing" / "strategies" / "test_ids.py"
    )
    assert expected_test(modules["config.py"]) == TESTS / "test_config.py"
    # A private module beside a public one of its name keeps its underscore.
    package = tmp_path / "package"
    package.mkdir()
    for name in ("_config.py", "config.py"):
        (package / name).write_text("def f() -> None: ...\n", encoding="utf-8")
    assert expected_test(package / "_config.py", package, tmp_path) == tmp_path / "test__config.py"
    assert expected_test(package / "config.py", package, tmp_path) == tmp_path / "test_config.py"
    assert expected_test(modules["pods/__init__.py"]) is None  # lazy re-exports
    assert expected_test(modules["sim/__init__.py"]) == TESTS / "sim" / "test_package.py"
    assert expected_test(modules["pods/schema_definitions.py"]) is None  # generated constants
