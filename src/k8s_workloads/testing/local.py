"""``python -m k8s_workloads.testing serve``: a local cluster for trying an executor.

The kit's :class:`FakeApiServer` on 127.0.0.1 with the :class:`ProcessKubelet`, so the
pods an executor creates run as local processes (``python`` in their commands is this
interpreter, or ``--python``). It writes a kubeconfig (``--kubeconfig``, else a file in a
temporary directory removed on exit) and prints, after the server's URL on the first
line, the ``[kubernetes_executor]`` lines (and their environment-variable form) that point
Airflow at it. It serves until Ctrl-C, SIGTERM or ``--lifetime`` seconds; then the
kubelet stops every pod's processes and it exits 0. A bad flag is one line on stderr and
exit status 2.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from k8s_workloads.config_checks import InvalidConfig
from k8s_workloads.testing._process import _Parser, _serve
from k8s_workloads.testing.cluster import FakeCluster
from k8s_workloads.testing.errors import ApiError
from k8s_workloads.testing.process_kubelet import ProcessKubelet
from k8s_workloads.testing.server import FakeApiServer

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["kubeconfig", "main", "new_token", "write_private"]

_NAME = "k8s-workloads-kit"
_PROG = "python -m k8s_workloads.testing"
_FLAGS = {"port": "--port", "lifetime": "--lifetime", "max_lifetime": "--max-pod-seconds"}


def kubeconfig(url: str, namespace: str, token: str) -> dict[str, object]:
    """A kubeconfig whose current context is the kit's server at ``url``, with the bearer
    ``token`` the server requires (:func:`new_token`)."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": _NAME, "cluster": {"server": url}}],
        "users": [{"name": _NAME, "user": {"token": token}}],
        "contexts": [
            {"name": _NAME, "context": {"cluster": _NAME, "user": _NAME, "namespace": namespace}}
        ],
        "current-context": _NAME,
    }


def new_token() -> str:
    """A bearer token for a server that runs pods as local processes: without it, anyone
    who reaches 127.0.0.1 (another user, a web page's request) could run commands as the
    user who started it."""
    return secrets.token_urlsafe(32)


def write_private(path: Path, text: str) -> None:
    """``text`` into ``path``, readable by its owner only (it holds the token)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(text)
    path.chmod(0o600)  # an existing file keeps its mode through O_CREAT


def _parser() -> _Parser:
    parser = _Parser(prog=_PROG, description="The test kit's commands.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser(
        "serve",
        help="a local cluster: the kit's API server and a kubelet running pods as processes",
        description=(
            "Serve the kit's API server on 127.0.0.1 with a kubelet that runs each pod's "
            "containers as local processes; write a kubeconfig and print the Airflow settings."
        ),
    )
    serve.add_argument("--port", type=int, default=0, help="TCP port (0: any free one)")
    serve.add_argument("--kubeconfig", default=None, help="where to write the kubeconfig")
    serve.add_argument(
        "--namespace", default="default", help="the namespace to use (created; default: default)"
    )
    serve.add_argument(
        "--lifetime", type=float, default=3600.0, help="seconds to serve at most (default 3600)"
    )
    serve.add_argument(
        "--max-pod-seconds",
        type=float,
        default=600.0,
        help="seconds a pod may run before it is killed (default 600)",
    )
    serve.add_argument(
        "--python", default=sys.executable, help="the interpreter that runs `python` in pods"
    )
    return parser


def _settings(config: Path, namespace: str) -> str:
    lines = [
        "[kubernetes_executor]",
        "in_cluster = False",
        f"config_file = {config}",
        f"namespace = {namespace}",
        "",
        "# or as environment variables:",
        "AIRFLOW__KUBERNETES_EXECUTOR__IN_CLUSTER=False",
        f"AIRFLOW__KUBERNETES_EXECUTOR__CONFIG_FILE={config}",
        f"AIRFLOW__KUBERNETES_EXECUTOR__NAMESPACE={namespace}",
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m k8s_workloads.testing``: see the module's description."""
    parser = _parser()
    arguments = parser.parse_args(argv)
    if not arguments.namespace:
        parser.error("argument --namespace: must not be empty")
    try:
        cluster = FakeCluster(namespaces=[arguments.namespace])
        token = new_token()
        server = FakeApiServer(
            cluster, port=arguments.port, lifetime=arguments.lifetime, token=token
        )
        kubelet = ProcessKubelet(
            cluster,
            max_lifetime=arguments.max_pod_seconds,
            executables={"python": arguments.python, "python3": arguments.python},
        )
    except InvalidConfig as error:
        flag = _FLAGS.get(error.field, error.field)
        parser.error(f"argument {flag}: {str(error).partition(': ')[2]}")
    except ApiError as error:  # a namespace name that is not a DNS-1123 label
        parser.error(f"argument --namespace: {error}")
    except OSError as error:  # the port is taken
        parser.exit(2, f"{parser.prog}: error: argument --port: {error}\n")
    made = None if arguments.kubeconfig else Path(tempfile.mkdtemp(prefix="k8s-workloads-"))
    config = Path(arguments.kubeconfig) if made is None else made / "kubeconfig"
    try:
        write_private(
            config, json.dumps(kubeconfig(server.url, arguments.namespace, token), indent=2)
        )
    except OSError as error:
        server.stop()
        parser.exit(2, f"{parser.prog}: error: argument --kubeconfig: {error.strerror}\n")

    def announce() -> None:
        sys.stdout.write(f"{server.url}\n")
        sys.stdout.write(
            f"# the kit's cluster: pods run as local processes; stops on Ctrl-C or after "
            f"{arguments.lifetime:g} s\n"
            f"# kubeconfig: {config}\n"
        )
        sys.stdout.write(_settings(config, arguments.namespace))
        sys.stdout.flush()

    try:
        _serve(server, kubelet, announce, stdin=False)
    finally:
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)
    return 0
