"""The scenario simulator's former home: every name now lives in :mod:`k8s_workloads.sim`.

Kept so that ``from k8s_workloads.simulate import simulate`` goes on working.
"""

from __future__ import annotations

from k8s_workloads import sim as _sim
from k8s_workloads.sim import *  # noqa: F403 - the same public names, listed once in sim

__all__ = _sim.__all__
