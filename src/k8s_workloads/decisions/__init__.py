"""Decisions: what an executor does with each result, as tables of rules.

The part below the executor's loop, pure (each function takes what the executor knows and
answers with a :class:`~k8s_workloads.decisions.actions.Decision`):
:mod:`~k8s_workloads.decisions.actions` (what a decision asks for),
:mod:`~k8s_workloads.decisions.attempts` (the launch bookkeeping),
:mod:`~k8s_workloads.decisions.rules` (how a table is written),
:mod:`~k8s_workloads.decisions.tables` (the result tables),
:mod:`~k8s_workloads.decisions.results` (:func:`decide`, :func:`handling_failed`),
:mod:`~k8s_workloads.decisions.creation_errors` (a failed pod creation) and
:mod:`~k8s_workloads.decisions.adoption` (taking pods over after a restart).

The package offers the names of :mod:`~k8s_workloads.decisions.results`,
:mod:`~k8s_workloads.decisions.rules` and :mod:`~k8s_workloads.decisions.tables`; every
other name is imported from its own module.
"""

from __future__ import annotations

from k8s_workloads.decisions import results, rules, tables
from k8s_workloads.decisions.results import *  # noqa: F403
from k8s_workloads.decisions.rules import *  # noqa: F403
from k8s_workloads.decisions.tables import *  # noqa: F403

__all__: list[str] = []
__all__ += results.__all__
__all__ += rules.__all__
__all__ += tables.__all__
