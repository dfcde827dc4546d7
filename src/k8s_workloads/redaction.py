"""Old path of :mod:`k8s_workloads.pods.redaction`, kept for existing code."""

from __future__ import annotations

from k8s_workloads.pods import redaction as _owner
from k8s_workloads.pods.redaction import *  # noqa: F403 - the public names, listed in the owner

# Names code still takes from here until it imports them from the owner: explicit
# re-exports (``as``), which mypy's strict mode needs.
from k8s_workloads.pods.redaction import _Masker as _Masker  # noqa: PLC0414
from k8s_workloads.pods.redaction import _message_masker as _message_masker  # noqa: PLC0414
from k8s_workloads.pods.redaction import _pod_args_tokens as _pod_args_tokens  # noqa: PLC0414
from k8s_workloads.pods.redaction import _tokens_in_json as _tokens_in_json  # noqa: PLC0414

__all__ = _owner.__all__
