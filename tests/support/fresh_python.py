"""A fresh interpreter for the tests of what an import loads: this Python, the same
environment, the code given."""

from __future__ import annotations

import ast
import subprocess
import sys


def run_python(code: str) -> str:
    """What ``code`` prints, run by a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout


def loaded_after(statement: str, *modules: str) -> list[str]:
    """Which of ``modules`` a fresh interpreter has loaded after running ``statement``."""
    code = f"import sys\n{statement}\nprint(sorted(m for m in {modules!r} if m in sys.modules))"
    found = ast.literal_eval(run_python(code).strip())
    assert isinstance(found, list)
    return [str(name) for name in found]
