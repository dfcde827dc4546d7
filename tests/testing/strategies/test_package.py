"""The strategies package (:mod:`k8s_workloads.testing.strategies`): every part's public
names in one place, and without hypothesis an import error naming the extra to install."""

from __future__ import annotations

import os
import subprocess
import sys

from k8s_workloads.testing import strategies
from k8s_workloads.testing.strategies import _cluster, _hostile, _ids, _manifests


def test_every_parts_public_names_are_the_packages() -> None:
    parts = [_cluster, _hostile, _ids, _manifests]
    offered = [name for part in parts for name in part.__all__]
    assert sorted(strategies.__all__) == sorted(offered)
    assert all(
        getattr(strategies, name) is getattr(part, name) for part in parts for name in part.__all__
    )


def test_without_hypothesis_the_module_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['hypothesis'] = None\n"
        "try:\n"
        "    import k8s_workloads.testing.strategies\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert "pip install 'k8s-workloads[hypothesis]'" in done.stdout
