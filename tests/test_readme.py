"""Every Python block of the README runs, in order, and passes ``mypy --strict``."""

from __future__ import annotations

import linecache
import pathlib
import re

import pytest

from k8s_workloads import limits

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
    assert_mypy_strict(readme_code(), tmp_path)


def assert_mypy_strict(code: str, tmp_path: pathlib.Path) -> None:
    """``code`` (a document's Python, as one module) passes ``mypy --strict`` with the
    project's configuration."""
    api = pytest.importorskip("mypy.api", reason="mypy is installed in the main environment")
    source = tmp_path / "document_examples.py"
    source.write_text(code, encoding="utf-8")
    stdout, stderr, status = api.run(
        [
            "--strict",
            "--no-incremental",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--config-file",
            str(README.parent / "pyproject.toml"),
            str(source),
        ]
    )
    assert status == 0, stdout + stderr


def _mib(value: int) -> str:
    assert value % (1024 * 1024) == 0
    return f"{value // (1024 * 1024)} MiB"


def test_the_readme_states_the_input_limits_the_code_enforces() -> None:
    # The README promises these bounds to users: a limit changed in the code must change
    # the sentence that states it.
    text = " ".join(README.read_text(encoding="utf-8").split())  # lines joined
    stated = [
        f"over {_mib(limits.MAX_INPUT_BYTES)} is refused",
        f"more than {limits.MAX_YAML_NODES:,} YAML nodes",
        f"nests more than {limits.MAX_YAML_DEPTH} deep",
        f"at most {limits.MAX_SCENARIO_ENTRIES:,} entries",
        f"may hold at most {_mib(limits.MAX_SCENARIO_BYTES)}",
    ]
    assert [sentence for sentence in stated if sentence not in text] == []
