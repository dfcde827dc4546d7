"""``airflow-config``: the Airflow settings that run this library's executor, and
``--check``: what the running Airflow configuration is missing."""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any, TextIO

from k8s_workloads.airflow.provider import EXECUTOR, OPTIONS, SECTION
from k8s_workloads.airflow.settings import (
    InvalidExecutorSetting,
    cluster_access_problem,
    image_problem,
    read_options,
)
from k8s_workloads.cli._args import Command, option
from k8s_workloads.cli._io import UsageError

if TYPE_CHECKING:
    import argparse


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
    if args.check:
        problems = check_running_configuration()
        err.writelines(f"k8s-workloads airflow-config: {problem}\n" for problem in problems)
        if not problems:
            out.write("airflow-config: the executor's settings are complete\n")
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


def check_running_configuration() -> list[str]:
    """One line per problem of the running Airflow configuration (``AIRFLOW_HOME``'s
    ``airflow.cfg`` and ``AIRFLOW__*`` variables), as the executor's ``start()`` sees it."""
    try:
        conf = importlib.import_module("airflow.configuration").conf
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
    try:
        read_options(get)
    except InvalidExecutorSetting as error:
        problems.append(str(error))
    try:
        factory_read = hasattr(
            importlib.import_module("airflow.providers.cncf.kubernetes.kube_client"),
            "_get_executor_kube_client",
        )
    except ImportError:
        factory_read = False
    access = cluster_access_problem(get, environ=os.environ, client_factory_read=factory_read)
    image = image_problem(get, _template(get("pod_template_file")))
    problems.extend(str(problem) for problem in (access, image) if problem is not None)
    return problems


def _template(path: str | None) -> dict[str, Any] | None:
    """The pod template file's content as far as the image check reads it (None: none)."""
    if not path or not os.path.exists(path):  # noqa: PTH110 - a configured path, as text
        return None
    from k8s_workloads.yaml_input import load_bounded_file  # noqa: PLC0415

    try:
        loaded = load_bounded_file(path)
    except (OSError, ValueError) as error:
        raise UsageError(f"[{SECTION}] pod_template_file = {path!r}: {error}") from None
    return loaded if isinstance(loaded, dict) else None


COMMAND = Command(
    name="airflow-config",
    help="print the Airflow settings that run this library's executor",
    description="Print a ready airflow.cfg fragment (or, with --env, the environment "
    "lines) that runs k8s_workloads.airflow.KubernetesExecutor with callbacks: the "
    "executor line, the choices of cluster access and of worker image (commented: "
    "pick one of each), and the library's own [kubernetes_executor] options at their "
    "defaults. With --check, read the running Airflow configuration instead and print "
    "one line per setting it is missing (exit 1 if any).",
    run=run_airflow_config,
    options=(
        option("--env", action="store_true", help="AIRFLOW__SECTION__KEY=value lines instead"),
        option(
            "--check",
            action="store_true",
            help="check the running Airflow configuration (needs Airflow installed)",
        ),
    ),
)
