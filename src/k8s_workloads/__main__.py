"""``python -m k8s_workloads``: the ``k8s-workloads`` command, for when the console script
is not on ``PATH``."""

from __future__ import annotations

import sys

from k8s_workloads.cli import main

if __name__ == "__main__":
    sys.exit(main())
