"""Old path of :mod:`k8s_workloads.pods._pod_schema`, kept for existing code."""

from __future__ import annotations

from k8s_workloads.pods._pod_schema import DEFINITIONS, KUBERNETES_VERSION

__all__ = ["DEFINITIONS", "KUBERNETES_VERSION"]
