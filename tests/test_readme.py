"""Every Python block of the README runs, in order, and passes ``mypy --strict``."""

from __future__ import annotations

import linecache
import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def readme_code() -> str:
    blocks = _BLOCK.findall(README.read_text(encoding="utf-8"))
    assert len(blocks) >= 5, "the README's Python examples were not found"
    return "\n\n".join(blocks)


def test_the_readme_examples_run() -> None:
    # The blocks, joined, are their own source file: registered in linecache (as attrs does
    # for the code it generates), tracebacks show their lines and inspect.getsource (which
    # hypothesis reads of a test function) finds them, not the Markdown around them.
    code = readme_code()
    filename = "<README.md: the Python blocks>"
    linecache.cache[filename] = (len(code), None, code.splitlines(keepends=True), filename)
    namespace: dict[str, object] = {"__name__": "readme"}
    exec(compile(code, filename, "exec"), namespace)  # noqa: S102 - our own README
    assert "core" in namespace  # the wiring example ran to its end


def test_the_readme_examples_pass_mypy_strict(tmp_path: pathlib.Path) -> None:
    api = pytest.importorskip("mypy.api", reason="mypy is installed in the main environment")
    source = tmp_path / "readme_examples.py"
    source.write_text(readme_code(), encoding="utf-8")
    root = README.parent
    stdout, stderr, status = api.run(
        [
            "--strict",
            "--no-incremental",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--config-file",
            str(root / "pyproject.toml"),
            str(source),
        ]
    )
    assert status == 0, stdout + stderr
