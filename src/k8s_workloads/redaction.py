"""Old path of :mod:`k8s_workloads.pods.redaction`, kept for existing code."""

from __future__ import annotations

from k8s_workloads.pods import redaction as _owner
from k8s_workloads.pods.redaction import *  # noqa: F403 - the public names, listed in the owner
from k8s_workloads.pods.redaction import _Masker, _message_masker, _pod_args_tokens, _tokens_in_json  # noqa: F401 - private names code still takes from here

__all__ = _owner.__all__
