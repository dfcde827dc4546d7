"""Running the console script in-process for the CLI's tests."""

from __future__ import annotations

import io

from k8s_workloads.cli import main

CALLBACK_ID = "019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e"
"""The callback id of the bundled callback workload."""


def run(*argv: str, stdin: str = "") -> tuple[int, str, str]:
    """``k8s-workloads *argv`` with ``stdin``: the exit status, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err, stdin=io.StringIO(stdin))
    return code, out.getvalue(), err.getvalue()
