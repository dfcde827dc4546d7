"""``k8s-workloads cleanup-pods``: delete the executor's finished worker pods, callback
pods included, by the provider's ``cleanup-pods`` rules (:mod:`k8s_workloads.pods.cleanup`).

The cluster is reached with the ``kubernetes`` client: the kubeconfig (``--kubeconfig``,
else ``KUBECONFIG`` or ``~/.kube/config``; ``--context``) or, with ``--in-cluster``, the
pod's service account. One line per pod deleted (or, with ``--dry-run``, that would be),
then a count; a pod that cannot be deleted is one line on stderr and the exit status 1.
Every call waits at most ``--timeout`` seconds for an answer (a silent API server is an
error, never a hang).
"""

from __future__ import annotations

import datetime
import importlib
from typing import TYPE_CHECKING, Any

from k8s_workloads.cli._args import Command, option
from k8s_workloads.cli._io import UsageError, report
from k8s_workloads.decisions.actions import DeletePod
from k8s_workloads.pods.cleanup import EXECUTOR_PODS_SELECTOR, pods_to_clean_up
from k8s_workloads.pods.validation import is_dns1123_label

if TYPE_CHECKING:
    import argparse
    from typing import TextIO

__all__ = ["COMMAND"]


def _client(args: argparse.Namespace) -> Any:  # noqa: ANN401 - kubernetes.client.CoreV1Api
    # Imported here: only this command needs the client (untyped: taken as Any).
    client: Any = importlib.import_module("kubernetes.client")
    config: Any = importlib.import_module("kubernetes.config")
    try:
        if args.in_cluster:
            config.load_incluster_config()
            api_client = client.ApiClient()
        else:
            api_client = config.new_client_from_config(
                config_file=args.kubeconfig, context=args.context
            )
    except (config.ConfigException, OSError, ValueError, TypeError) as error:
        where = "--in-cluster" if args.in_cluster else f"--kubeconfig {args.kubeconfig or ''}"
        raise UsageError(f"cannot reach the cluster ({where.strip()}): {error}") from None
    api_client.configuration.retries = False
    return client.CoreV1Api(api_client)


def run_cleanup(args: argparse.Namespace, out: TextIO, err: TextIO, _inp: TextIO) -> int:
    namespace = args.namespace
    if not is_dns1123_label(namespace):
        raise UsageError(f"--namespace must be a namespace name, got {namespace!r}")
    min_pending = _minutes(args, "--min-pending-minutes", 1)
    min_completed = _minutes(args, "--min-completed-minutes", 0)
    timeout = _timeout(args.timeout)
    # The kubernetes client only here: the one mapping of requests to its calls (pages,
    # an expired continue token), and the executor's policy for what an answer means.
    from k8s_workloads.io.kube import FAILURES, KubeCalls  # noqa: PLC0415
    from k8s_workloads.io.policy import failure_is_done  # noqa: PLC0415

    calls = KubeCalls(_client(args), request_args={"_request_timeout": timeout})
    try:
        listed, _ = calls.list_pods(namespace, label_selector=EXECUTOR_PODS_SELECTOR)
    except FAILURES as error:
        report(err, f"k8s-workloads cleanup-pods: cannot list pods in {namespace}: {error}")
        return 1
    now = datetime.datetime.now(datetime.timezone.utc)
    chosen = sorted(
        pods_to_clean_up(
            listed,
            now=now,
            min_pending_minutes=min_pending,
            min_completed_minutes=min_completed,
        ),
        key=lambda pod: (pod.namespace, pod.pod_name),
    )
    failed = 0
    verb = "would delete" if args.dry_run else "deleted"
    for pod in chosen:
        if not args.dry_run:
            delete = DeletePod(pod.pod_name, pod.namespace)
            try:
                calls.perform(delete)
            except FAILURES as error:
                if failure_is_done(delete, error):  # gone already (404)
                    continue
                failed += 1
                reason = getattr(error, "reason", None) or error
                report(
                    err,
                    f"k8s-workloads cleanup-pods: pod {pod.namespace}/{pod.pod_name} "
                    f"not deleted: {reason}",
                )
                continue
        out.write(f"{verb} pod {pod.namespace}/{pod.pod_name}: {pod.why}\n")
    done = len(chosen) - failed
    summary = "would be deleted" if args.dry_run else "deleted"
    out.write(f"{done} of {len(listed)} executor pods in {namespace} {summary}\n")
    return 1 if failed else 0


def _timeout(text: object) -> tuple[float, float]:
    """``--timeout``: (connect, read) seconds, the connect at most 10."""
    try:
        seconds = float(text) if isinstance(text, str) else -1.0
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= 3600:  # an hour: a typo, not a wish
        raise UsageError(f"--timeout must be seconds in (0, 3600], got {text!r}")
    return (min(seconds, 10.0), seconds)


def _minutes(args: argparse.Namespace, name: str, minimum: int) -> int:
    text = getattr(args, name.removeprefix("--").replace("-", "_"))
    value = int(text) if isinstance(text, str) and text.strip().isdigit() else -1
    if value < minimum:
        raise UsageError(f"{name} must be a whole number >= {minimum}, got {text!r}")
    return value


COMMAND = Command(
    name="cleanup-pods",
    help="delete the executor's finished worker pods, callback pods included",
    description="Delete the pods a Kubernetes executor made (label kubernetes_executor=True: "
    "tasks and callbacks) that ended (Succeeded; Failed with restartPolicy Never; evicted) "
    "at least --min-completed-minutes ago, or are Pending for longer than "
    "--min-pending-minutes: the rules of the provider's 'airflow kubernetes cleanup-pods', "
    "which selects task pods only.",
    run=run_cleanup,
    options=(
        option("--namespace", default="default", help="the namespace (default: default)"),
        option(
            "--min-pending-minutes",
            default="30",
            metavar="N",
            help="Pending pods older than this are deleted (default 30; at least 5)",
        ),
        option(
            "--min-completed-minutes",
            default="1",
            metavar="N",
            help="ended pods are deleted this long after they ended (default 1; 0: at once)",
        ),
        option(
            "--dry-run", action="store_true", help="print what would be deleted, delete nothing"
        ),
        option(
            "--kubeconfig",
            metavar="FILE",
            help="the kubeconfig (default: KUBECONFIG, ~/.kube/config)",
        ),
        option("--context", help="the kubeconfig context (default: its current one)"),
        option("--in-cluster", action="store_true", help="use the pod's service account"),
        option(
            "--timeout",
            default="60",
            metavar="SECONDS",
            help="the longest wait for each answer of the API server (default 60)",
        ),
    ),
)
