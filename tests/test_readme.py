"""The README: short, with the two set-up commands and the executor line, a link to each
page of the docs, and every Python block running, in order, and passing ``mypy --strict``.

The pages' own blocks are run by ``tests/test_doc_pages.py``."""

from __future__ import annotations

import linecache
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)
MAX_LINES = 200  # issue 32, item 7: the details live in docs/


def readme_code() -> str:
    blocks = _BLOCK.findall(README.read_text(encoding="utf-8"))
    assert blocks, "the README's Python example was not found"
    return "\n\n".join(blocks)


def run_document_code(code: str, filename: str) -> dict[str, object]:
    """``code`` (a document's Python blocks, joined) run as its own module."""
    # Registered in linecache (as attrs does for the code it generates), tracebacks show
    # the blocks' lines and inspect.getsource (which hypothesis reads of a test function)
    # finds them, not the Markdown around them.
    linecache.cache[filename] = (len(code), None, code.splitlines(keepends=True), filename)
    namespace: dict[str, object] = {"__name__": "document"}
    exec(compile(code, filename, "exec"), namespace)  # noqa: S102 - our own documents
    return namespace


def test_the_readme_example_runs() -> None:
    namespace = run_document_code(readme_code(), "<README.md: the Python blocks>")
    assert "core" in namespace  # the example ran to its end


def test_the_readme_examples_pass_mypy_strict(tmp_path: pathlib.Path) -> None:
    assert_mypy_strict({"readme_examples": readme_code()}, tmp_path)


def assert_mypy_strict(modules: dict[str, str], tmp_path: pathlib.Path) -> None:
    """Each of ``modules`` (name -> a document's Python, as one module) passes ``mypy
    --strict`` with the project's configuration, in one run."""
    api = pytest.importorskip("mypy.api", reason="mypy is installed in the main environment")
    sources = []
    for name, code in modules.items():
        source = tmp_path / f"{name}.py"
        source.write_text(code, encoding="utf-8")
        sources.append(str(source))
    stdout, stderr, status = api.run(
        [
            "--strict",
            "--no-incremental",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--config-file",
            str(ROOT / "pyproject.toml"),
            *sources,
        ]
    )
    assert status == 0, stdout + stderr


def test_the_readme_is_short_and_keeps_the_set_up_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_LINES
    # The two set-up commands, verbatim: CI (.ci/run) runs the second.
    assert "python3 scripts/dev.py demo    # the main job" in text
    assert "python3 scripts/dev.py test    # the whole test suite" in text
    assert "[core]\nexecutor = k8s_workloads.airflow.KubernetesExecutor\n" in text
    assert "python3 scripts/dev.py test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_the_readme_links_every_page_of_the_docs() -> None:
    text = README.read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(docs/([\w-]+\.md)(?:#[\w-]+)?\)", text))
    pages = {path.name for path in (ROOT / "docs").glob("*.md")} - {"index.md"}
    assert pages - linked == set()
    assert linked - pages == set()
