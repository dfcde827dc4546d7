"""``airflow-config``: the Airflow settings that run this library's executor."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    import argparse


def add_parser(sub: Any) -> None:  # noqa: ANN401 - argparse's private subparsers action
    airflow_config = sub.add_parser(
        "airflow-config",
        help="print the Airflow settings that run this library's executor",
        description="Print a ready airflow.cfg fragment (or, with --env, the environment "
        "lines) that runs k8s_workloads.airflow.KubernetesExecutor with callbacks, with the "
        "library's own [kubernetes_executor] options at their defaults.",
    )
    airflow_config.add_argument(
        "--env", action="store_true", help="AIRFLOW__SECTION__KEY=value lines instead"
    )


# The executor and the library's own [kubernetes_executor] options, at their defaults.
AIRFLOW_SETTINGS: tuple[tuple[str, str, str, str], ...] = (
    ("core", "executor", "k8s_workloads.airflow.KubernetesExecutor", "the one line that matters"),
    ("kubernetes_executor", "callback_launch_failure_retries", "0",
     "requeue a callback whose pod failed before it ran (-1: always)"),
    ("kubernetes_executor", "mark_kept_failed_pods_done", "True",
     "label kept failed pods done, so restarts stop re-reading them"),
    ("kubernetes_executor", "max_handling_retries", "3",
     "retries of a result whose handling failed, on later syncs"),
    ("kubernetes_executor", "pending_policy", "False",
     "read Pending pods with grace periods (image pulls, scheduling) instead of failing at once"),
    ("kubernetes_executor", "pod_cleanup_max_concurrency", "16",
     "pod deletions and label patches in flight at once"),
    ("kubernetes_executor", "secure_workload_payload", "False",
     "the workload JSON (and its token) in a Secret, not in the pod's args"),
    ("kubernetes_executor", "sync_max_seconds", "1.0",
     "the longest a sync() performs API calls; the rest goes on in the background"),
)  # fmt: skip


def run_airflow_config(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO) -> int:  # noqa: ARG001
    if args.env:
        out.writelines(
            f"AIRFLOW__{section.upper()}__{key.upper()}={value}\n"
            for section, key, value, _ in AIRFLOW_SETTINGS
        )
        return 0
    section_now = None
    for section, key, value, why in AIRFLOW_SETTINGS:
        if section != section_now:
            out.write(("\n" if section_now else "") + f"[{section}]\n")
            section_now = section
        out.write(f"# {why}\n{key} = {value}\n")
    return 0
