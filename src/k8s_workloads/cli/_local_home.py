"""The home of ``k8s-workloads local``: Airflow's ``AIRFLOW_HOME`` and the stack's files.

:func:`prepare` writes what stays from one start to the next, each file only when it is
missing (a second start keeps the user's edits and the secrets): ``airflow.cfg``, the
bundled example DAG in ``example_dags/``, the default DAGs folder ``dags/`` and the
``logs/`` folder. :func:`run_settings` is the Airflow processes' environment: what makes
the stack (the executor, the SQLite database, the DAG bundles, the cluster's access),
set at each start over whatever ``airflow.cfg`` says, and the api-server's address.
:func:`write_run_files` writes the kubeconfig of the kit's API server and the worker pods'
template, whose ``base`` container's env gives each pod ``AIRFLOW_HOME``, the DAGs folder
and the execution API's address, as a worker pod gets them on a cluster."""

from __future__ import annotations

import base64
import json
import os
import secrets
import textwrap
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import yaml

from k8s_workloads.airflow.provider import EXECUTOR, SECTION
from k8s_workloads.testing.local import write_private

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "EXAMPLE_BUNDLE",
    "EXAMPLE_DAG_ID",
    "EXAMPLE_FILES",
    "NAMESPACE",
    "LocalHome",
    "default_home",
    "prepare",
    "run_settings",
    "write_run_files",
]

NAMESPACE = "default"
"""The namespace of the worker pods in the kit's cluster."""

EXAMPLE_DAG_ID = "deadline_example"
EXAMPLE_FILES = ("deadline_example.py", "deadline_example_alerts.py")
"""The bundled example: the DAG and, next to it, the module of its deadline callback."""

EXAMPLE_BUNDLE = "k8s-workloads-example"
# What a worker pod needs of this start's settings (its template's env).
_POD_SETTINGS = (
    "AIRFLOW_HOME",
    "AIRFLOW__CORE__DAGS_FOLDER",
    "AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST",
    "AIRFLOW__CORE__EXECUTION_API_SERVER_URL",
)
_LOCAL_BUNDLE = "airflow.dag_processing.bundles.local.LocalDagBundle"


@attrs.frozen
class LocalHome:
    """Where the local stack keeps its files: ``root`` is its ``AIRFLOW_HOME``; ``dags``
    the DAGs folder (``--dags``, else ``root/dags``)."""

    root: Path
    dags: Path

    @property
    def config(self) -> Path:
        return self.root / "airflow.cfg"

    @property
    def database(self) -> Path:
        return self.root / "airflow.db"

    @property
    def example_dags(self) -> Path:
        return self.root / "example_dags"

    @property
    def logs(self) -> Path:
        """Airflow's log folder; each process of the stack logs to a file in it too."""
        return self.root / "logs"

    @property
    def pod_logs(self) -> Path:
        """One file per worker pod: what its containers wrote."""
        return self.logs / "pods"

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    @property
    def pod_template(self) -> Path:
        return self.root / "pod_template.yaml"

    def log(self, process: str) -> Path:
        """The log file of one of the stack's processes (``scheduler``, ...)."""
        return self.logs / f"{process}.log"


def default_home(environ: Mapping[str, str]) -> Path:
    """``$XDG_CACHE_HOME/k8s-workloads/local``, else ``~/.cache/k8s-workloads/local``."""
    cache = environ.get("XDG_CACHE_HOME")
    base = Path(cache) if cache and Path(cache).is_absolute() else Path.home() / ".cache"
    return base / "k8s-workloads" / "local"


def _escaped(value: str) -> str:
    # airflow.cfg is read with configparser's interpolation: a literal % is written %%.
    return value.replace("%", "%%")


def _fernet_key() -> str:
    # What cryptography's Fernet.generate_key() returns: 32 random bytes, URL-safe base64.
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()


def _variable(section: str, key: str) -> str:
    return f"AIRFLOW__{section.upper()}__{key.upper()}"


def _stack_settings(home: LocalHome) -> dict[tuple[str, str], str]:
    """What the stack is, whatever ``airflow.cfg`` says (an older home's, or one edited):
    set at each start over the file, and written in it."""
    bundles = [
        {"name": "dags-folder", "classpath": _LOCAL_BUNDLE, "kwargs": {}},
        {
            "name": EXAMPLE_BUNDLE,
            "classpath": _LOCAL_BUNDLE,
            "kwargs": {"path": str(home.example_dags)},
        },
    ]
    return {
        ("core", "executor"): EXECUTOR,
        ("core", "dags_folder"): str(home.dags),
        ("database", "sql_alchemy_conn"): f"sqlite:///{home.database}",
        ("dag_processor", "dag_bundle_config_list"): json.dumps(bundles),
        (SECTION, "in_cluster"): "False",
        (SECTION, "config_file"): str(home.kubeconfig),
        (SECTION, "namespace"): NAMESPACE,
        (SECTION, "pod_template_file"): str(home.pod_template),
    }


def _config_text(home: LocalHome) -> str:
    settings: dict[tuple[str, str], str] = {
        **_stack_settings(home),
        ("core", "load_examples"): "False",
        # Triggered from the UI or by --trigger, a DAG runs at once.
        ("core", "dags_are_paused_at_creation"): "False",
        ("core", "fernet_key"): _fernet_key(),
        # The simple auth manager: its generated password is written next to this file.
        ("core", "simple_auth_manager_users"): "admin:admin",
        ("api", "workers"): "1",
        # One secret for every process: the api-server checks what the scheduler signs.
        ("api", "secret_key"): secrets.token_hex(16),
        ("api_auth", "jwt_secret"): secrets.token_hex(32),
        # A new DAG file is seen within 5 seconds.
        ("dag_processor", "refresh_interval"): "5",
    }
    sections: dict[str, list[str]] = {}
    for (section, key), value in settings.items():
        sections.setdefault(section, []).append(f"{key} = {_escaped(value)}")
    fixed = ", ".join(f"[{section}] {key}" for section, key in _stack_settings(home))
    lines = [
        "# The Airflow settings of `k8s-workloads local`, written on first use.",
        *textwrap.wrap(
            f"Set by the command at each start, over what this file says: {fixed}; "
            "[core] execution_api_server_url, [api] host and port. Edit the rest freely.",
            width=88,
            initial_indent="# ",
            subsequent_indent="# ",
        ),
    ]
    for section, options in sections.items():
        lines.extend(["", f"[{section}]", *options])
    return "\n".join(lines) + "\n"


def _write_new(path: Path, text: str, *, private: bool = False) -> None:
    """Write ``text`` to ``path`` unless it exists (``private``: readable by the owner)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    try:
        descriptor = os.open(path, flags, 0o600 if private else 0o644)
    except FileExistsError:
        return
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(text)


def prepare(root: Path, dags: Path | None = None) -> LocalHome:
    """Make the home at ``root`` (``dags``: the user's DAGs folder, else ``root/dags``);
    files that exist are kept. An :class:`OSError` if a folder cannot be made."""
    root = root.expanduser().absolute()
    home = LocalHome(root=root, dags=(dags.expanduser().absolute() if dags else root / "dags"))
    for folder in (root, home.example_dags, home.logs, home.pod_logs, home.dags):
        folder.mkdir(parents=True, exist_ok=True)
    # The secrets in it (the Fernet key, the API's JWT secret) are the owner's alone.
    _write_new(home.config, _config_text(home), private=True)
    example = resources.files("k8s_workloads") / "examples" / "_local_dags"
    for name in EXAMPLE_FILES:
        _write_new(home.example_dags / name, (example / name).read_text(encoding="utf-8"))
    return home


def run_settings(home: LocalHome, api_port: int) -> dict[str, str]:
    """The environment of this start's Airflow processes (over ``airflow.cfg``): the home,
    what the stack is, and the api-server's address."""
    api = f"http://127.0.0.1:{api_port}"
    return {
        "AIRFLOW_HOME": str(home.root),
        **{_variable(*name): value for name, value in _stack_settings(home).items()},
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{api}/execution/",
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(api_port),
    }


def write_run_files(
    home: LocalHome,
    settings: Mapping[str, str],
    kubeconfig: Mapping[str, object],
    environ: Mapping[str, str],
) -> None:
    """The kubeconfig and the worker pods' template of this start.

    The template's ``base`` container carries the settings a pod needs: ``AIRFLOW_HOME``
    (its ``airflow.cfg``), the DAGs folder and bundles, the execution API's address; from
    ``environ``, ``HOME`` and ``PYTHONPATH``, so that a pod imports what the scheduler does.
    """
    write_private(home.kubeconfig, json.dumps(kubeconfig, indent=2) + "\n")  # its token
    env = [{"name": name, "value": settings[name]} for name in _POD_SETTINGS]
    env.extend(
        {"name": name, "value": value}
        for name in ("HOME", "PYTHONPATH")
        if (value := environ.get(name))
    )
    template = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "worker"},
        "spec": {
            # No image is pulled (the kit's kubelet runs the command as a local process),
            # but the executor wants one, as on a cluster.
            "containers": [
                {"name": "base", "image": f"apache/airflow:{_airflow_version()}", "env": env}
            ]
        },
    }
    header = "# The worker pods' template of `k8s-workloads local`, written at each start.\n"
    home.pod_template.write_text(header + yaml.safe_dump(template, sort_keys=False))


def _airflow_version() -> str:
    from importlib import metadata  # noqa: PLC0415 - read at a start only

    try:
        return metadata.version("apache-airflow")
    except metadata.PackageNotFoundError:
        return "latest"
