"""``airflow-config``: the Airflow settings that run this library's executor; ``--check``:
every problem of the running Airflow configuration, found by the executor's own start-up
checks (``settings.setting_problems``); ``--check --connect``: and whether the cluster lets
the executor work, asked with the executor's own client (``cluster_check``)."""

from __future__ import annotations

import importlib
import json
import os
from typing import TYPE_CHECKING, Any, TextIO

from k8s_workloads.airflow.provider import EXECUTOR, OPTIONS, SECTION
from k8s_workloads.airflow.settings import read_options, setting_problems, watched_namespaces
from k8s_workloads.cli._args import Command, option
from k8s_workloads.cli._io import UsageError

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from k8s_workloads.airflow.cluster_check import ClusterCheck


# (section, key, value, why): the executor line and the library's options, at their defaults.
AIRFLOW_SETTINGS: tuple[tuple[str, str, str, str], ...] = (
    ("core", "executor", EXECUTOR,
     "the one line that matters (several executors: LocalExecutor,k8s:" + EXECUTOR + ")"),
    *((SECTION, option.name, option.default, option.description) for option in OPTIONS),
)  # fmt: skip

# The executor's import paths (either may appear in [core] executor, after an alias).
_EXECUTOR_PATHS = (EXECUTOR, "k8s_workloads.airflow.executor.KubernetesExecutor")

# Commented choices printed before the library's options: every user sets one of each.
CHOICES: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("How the scheduler reaches the cluster; one of: the pod's service account (the default)",
     (("in_cluster", "True"),)),
    ("... or a kubeconfig file",
     (("in_cluster", "False"), ("config_file", "/home/airflow/.kube/config"))),
    ("... or a function returning a kubernetes.client.CoreV1Api (provider 10.24+)",
     (("client_factory", "my_company.kube.make_client"),)),
    ("Which image the worker pods run; one of: a repository and a tag",
     (("worker_container_repository", "apache/airflow"), ("worker_container_tag", "3.3.2"))),
    ("... or a pod template whose 'base' container names the image",
     (("pod_template_file", "/opt/airflow/pod_templates/worker.yaml"),)),
)  # fmt: skip


def run_airflow_config(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO) -> int:  # noqa: ARG001
    if args.connect and not args.check:
        raise UsageError("--connect goes with --check")
    if args.check:
        problems, summary = check_running_configuration(connect=args.connect)
        err.writelines(f"k8s-workloads airflow-config: {problem}\n" for problem in problems)
        if not problems:
            out.write(
                "airflow-config: the executor's settings are complete"
                + (f"; {summary}" if summary else "")
                + "\n"
            )
        return 1 if problems else 0
    if args.env:
        _write_env(out)
        return 0
    section_now = None
    for section, key, value, why in AIRFLOW_SETTINGS:
        if section != section_now:
            out.write(("\n" if section_now else "") + f"[{section}]\n")
            section_now = section
            if section == SECTION:
                for text, lines in CHOICES:
                    out.write(f"# {text}:\n")
                    out.writelines(f"#   {name} = {choice}\n" for name, choice in lines)
        out.write(f"# {why}\n{key} = {value}\n")
    return 0


def _write_env(out: TextIO) -> None:
    def variable(section: str, key: str) -> str:
        return f"AIRFLOW__{section.upper()}__{key.upper()}"

    section, key, value, _ = AIRFLOW_SETTINGS[0]
    out.write(f"{variable(section, key)}={value}\n")
    for text, lines in CHOICES:
        out.write(f"# {text}:\n")
        out.writelines(f"#   {variable(SECTION, name)}={choice}\n" for name, choice in lines)
    out.writelines(
        f"{variable(section, key)}={value}\n" for section, key, value, _ in AIRFLOW_SETTINGS[1:]
    )


def check_running_configuration(*, connect: bool = False) -> tuple[list[str], str]:
    """One line per problem of the running Airflow configuration (``AIRFLOW_HOME``'s
    ``airflow.cfg`` and ``AIRFLOW__*`` variables), as the executor's ``start()`` sees it,
    and with ``connect`` of the cluster it reaches; and a summary of what was checked."""
    try:
        conf = importlib.import_module("airflow.configuration").conf
        lifecycle = importlib.import_module("k8s_workloads.airflow._lifecycle")
        kube_client = importlib.import_module("airflow.providers.cncf.kubernetes.kube_client")
    except ImportError as error:
        raise UsageError(
            f"--check reads Airflow's configuration: pip install 'k8s-workloads[airflow]' ({error})"
        ) from None

    def get(name: str) -> str | None:
        value: str | None = conf.get(SECTION, name, fallback=None)
        return value

    problems: list[str] = []
    executor = conf.get("core", "executor", fallback="") or ""
    if not any(path in executor for path in _EXECUTOR_PATHS):
        problems.append(f"[core] executor = {executor!r} does not name {EXECUTOR}")
    settings = setting_problems(
        get,
        environ=os.environ,
        load_template=lifecycle.load_pod_template,
        client_factory_read=hasattr(kube_client, "_get_executor_kube_client"),
    )
    problems.extend(str(problem) for problem in settings)
    if not connect:
        return problems, ""
    if settings:  # the client is made from these settings: fix them first
        problems.append("--connect: not tried, the settings above come first")
        return problems, ""
    found = _cluster(get, lifecycle, kube_client)
    return problems + list(found.problems), found.summary


def _cluster(get: Callable[[str], str | None], lifecycle: Any, kube_client: Any) -> ClusterCheck:  # noqa: ANN401
    """The cluster checked with the executor's client, made as ``start()`` makes it."""
    from k8s_workloads.airflow.cluster_check import ClusterCheck, check_cluster  # noqa: PLC0415

    options = read_options(get)
    request_args: dict[str, Any] = {
        "_request_timeout": options.api_request_timeout.pair,
        **json.loads(get("kube_client_request_args") or "{}"),
    }
    timeout = request_args["_request_timeout"]
    try:
        api = lifecycle.executor_kube_client(kube_client, None)
    except Exception as error:  # noqa: BLE001 - the client loaders raise anything
        why = f"{type(error).__name__}: {error}".splitlines()[0][:300]
        return ClusterCheck("", (f"cannot make the executor's API client ({why})",), "")
    namespace = get("namespace")
    return check_cluster(
        api.api_client,
        namespace="default" if namespace is None else namespace,
        watched=watched_namespaces(get),
        secrets=options.secure_workload_payload,
        request_timeout=tuple(timeout) if isinstance(timeout, list) else timeout,
    )


COMMAND = Command(
    name="airflow-config",
    help="print the Airflow settings that run this library's executor",
    description="Print a ready airflow.cfg fragment (or, with --env, the environment "
    "lines) that runs k8s_workloads.airflow.KubernetesExecutor with callbacks: the "
    "executor line, the choices of cluster access and of worker image (commented: "
    "pick one of each), and the library's own [kubernetes_executor] options at their "
    "defaults. With --check, read the running Airflow configuration instead and print "
    "one line per problem the executor would start with or refuse to start on: each "
    "option's type and range, namespace names, the pod template file, cluster access, "
    "the image (exit 1 if any). With --connect too, try the cluster with the executor's "
    "client: reachable, credentials accepted, namespaces there, RBAC allowing each verb "
    "the executor uses.",
    run=run_airflow_config,
    options=(
        option("--env", action="store_true", help="AIRFLOW__SECTION__KEY=value lines instead"),
        option(
            "--check",
            action="store_true",
            help="check the running Airflow configuration (needs Airflow installed)",
        ),
        option(
            "--connect",
            action="store_true",
            help="with --check: also try the cluster (reachable, credentials, namespaces, RBAC)",
        ),
    ),
)
