"""The errors the pod builders raise for a pod Kubernetes or the executor would refuse.

Each names the first offending field and keeps every violation found; none shows the
Execution API token (:func:`_masked` masks it with :mod:`k8s_workloads.pods.redaction`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from k8s_workloads.errors import FieldError
from k8s_workloads.pods.manifest import PodReconciliationError
from k8s_workloads.pods.redaction import token_masker

if TYPE_CHECKING:
    from collections.abc import Sequence

    from k8s_workloads.pods.schema import (
        SchemaViolation,
    )
    from k8s_workloads.pods.validation import (
        NamingRuleViolation,
    )


class InvalidJob(FieldError):
    """A job no pod can be built from, whatever the template: ``field`` names the job's
    field at fault (``pod_override``, ``pod_template_file``, ``kube_image``, ``command``)
    or the setting it needs (``airflow_version``). The executor core refuses such a job at
    ``submit``; a ``pod_override`` that breaks a Kubernetes rule is an :class:`InvalidPod`
    there."""


class PodMutationHookError(ValueError):
    """The mutation hook raised, or removed or changed the pod's identity."""


_Violation: TypeAlias = "NamingRuleViolation | SchemaViolation"
_SHOWN_VIOLATIONS = 5


def _refusal(source: str, violations: Sequence[_Violation]) -> str:
    shown = "; ".join(
        str(violation)[len("pod: ") :] if violation.field == "pod" else str(violation)
        for violation in violations[:_SHOWN_VIOLATIONS]
    )
    more = len(violations) - _SHOWN_VIOLATIONS
    suffix = f" (and {more} more)" if more > 0 else ""
    return f"{source}: {shown}{suffix}"


class InvalidPod(PodReconciliationError):
    """The pod would break a Kubernetes naming rule or the Kubernetes 1.37 Pod schema.

    Raised for what the template, the ``pod_override`` or the builder's arguments
    (``namespace``, ``pod_id``, ``args`` ...) put in the pod. ``field`` names the first
    offending field (``metadata.name``, ``spec.initContainers[0].name``,
    ``metadata.annotations``); ``violations`` holds every one found, each a
    :class:`~k8s_workloads.pods.validation.NamingRuleViolation` or
    :class:`~k8s_workloads.pods.schema.SchemaViolation`. Values are shown cut short, and
    never with the Execution API token.
    """

    def __init__(self, source: str, violations: Sequence[_Violation]) -> None:
        super().__init__(_refusal(source, violations))
        self.field = violations[0].field
        """The first offending field."""
        self.violations = tuple(violations)
        """Every violation found."""


class InvalidMutatedPod(PodMutationHookError):
    """The mutation hook returned a pod the API server would refuse.

    ``field`` and ``violations`` as for :class:`InvalidPod`.
    """

    def __init__(self, violations: Sequence[_Violation]) -> None:
        super().__init__(
            _refusal("the pod mutation hook returned a pod the API server refuses", violations)
        )
        self.field = violations[0].field
        """The first offending field."""
        self.violations = tuple(violations)
        """Every violation found."""


def _masked(violations: Sequence[_Violation], where: Sequence[object]) -> list[_Violation]:
    """The violations, with every Execution API token found in ``where`` masked."""
    mask = token_masker(where)
    return [
        type(violation)(mask(violation.field), mask(str(violation)[len(violation.field) + 2 :]))
        for violation in violations
    ]
