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

This package replaces the module ``k8s_workloads.decisions`` and offers its public names.
The names it re-exported from other modules (``EmitEvent``, ``Attempts``,
``DecisionConfig`` …) are deprecated here: each access warns; import them from their own
modules.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from k8s_workloads.decisions import results, rules, tables
from k8s_workloads.decisions.creation_errors import _renamed
from k8s_workloads.decisions.results import *  # noqa: F403
from k8s_workloads.decisions.rules import *  # noqa: F403
from k8s_workloads.decisions.tables import *  # noqa: F403

__all__: list[str] = []
__all__ += results.__all__
__all__ += rules.__all__
__all__ += tables.__all__

_MOVED = {
    "k8s_workloads.decisions.actions": "Action Decision DeletePod EmitEvent FreeSlot Ignore "
    "LookUpState PatchLabels RequeueJob RetryLater describe_action",
    "k8s_workloads.decisions.attempts": "Attempt Attempts",
    "k8s_workloads.config": "DecisionConfig",
    "k8s_workloads.decisions.creation_errors": "CreateErrorVerdict classify_create_error "
    "decide_create_error requeue_after_create_error",
}
"""The deprecated aliases: each owner's names."""

_OWNERS = {name: module for module, names in _MOVED.items() for name in names.split()}

if TYPE_CHECKING:
    from k8s_workloads.config import DecisionConfig as DecisionConfig
    from k8s_workloads.decisions.actions import Action as Action
    from k8s_workloads.decisions.actions import Decision as Decision
    from k8s_workloads.decisions.actions import DeletePod as DeletePod
    from k8s_workloads.decisions.actions import EmitEvent as EmitEvent
    from k8s_workloads.decisions.actions import FreeSlot as FreeSlot
    from k8s_workloads.decisions.actions import Ignore as Ignore
    from k8s_workloads.decisions.actions import LookUpState as LookUpState
    from k8s_workloads.decisions.actions import PatchLabels as PatchLabels
    from k8s_workloads.decisions.actions import RequeueJob as RequeueJob
    from k8s_workloads.decisions.actions import RetryLater as RetryLater
    from k8s_workloads.decisions.actions import describe_action as describe_action
    from k8s_workloads.decisions.attempts import Attempt as Attempt
    from k8s_workloads.decisions.attempts import Attempts as Attempts
    from k8s_workloads.decisions.creation_errors import CreateErrorVerdict as CreateErrorVerdict
    from k8s_workloads.decisions.creation_errors import (
        classify_create_error as classify_create_error,
    )
    from k8s_workloads.decisions.creation_errors import (
        decide_create_error as decide_create_error,
    )
    from k8s_workloads.decisions.creation_errors import (
        requeue_after_create_error as requeue_after_create_error,
    )

    CreateErrorDecision = CreateErrorVerdict
else:

    def __getattr__(name: str) -> object:
        from importlib import import_module  # noqa: PLC0415 - on a deprecated access only

        owner = _OWNERS.get(name)
        if owner is None:
            return _renamed(__name__, name)
        warnings.warn(
            f"k8s_workloads.decisions.{name} is deprecated: import it from {owner}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(import_module(owner), name)
