"""The ``k8s-workloads`` console script.

The face of the library: it reads files and standard input, prints, and sets exit
codes; every decision it shows is made by the pure core.

``decode`` and ``demo`` read pods; ``render task`` and ``render callback`` write the pod
(and, with ``--secure``, the Secret) an executor would create, with the Execution API
token redacted unless ``--no-redact``; ``resolve`` reads a pod watch stream and prints
what each event means for its workload; ``simulate`` runs an executor scenario;
``airflow-config`` prints the settings that run the Airflow executor; ``cleanup-pods``
deletes its finished pods; ``local`` runs Airflow with it on this machine, pods as local
processes. Each subcommand is a module of this package (``_decode``, ``_render``,
``_resolve``, ``_simulate``, ``_airflow_config``, ``_cleanup``, ``_local``);
``_main`` holds the argument tree and :func:`main`. Everything
beyond ``decode``'s needs (YAML, the pod builders, the resolver) is imported only by the
command that needs it.
"""

from __future__ import annotations

from k8s_workloads.cli._airflow_config import AIRFLOW_SETTINGS
from k8s_workloads.cli._decode import DEMO_AIRFLOW_VERSION
from k8s_workloads.cli._io import EXIT_CLOSED_PIPE, UsageError
from k8s_workloads.cli._keys import key_to_json, key_to_text
from k8s_workloads.cli._main import main
from k8s_workloads.cli._render import WORKLOADS_MIN_VERSION
from k8s_workloads.cli._resolve import WATCH_EXAMPLE
from k8s_workloads.limits import MAX_INPUT_BYTES, MAX_YAML_NODES

__all__ = [
    "AIRFLOW_SETTINGS",
    "DEMO_AIRFLOW_VERSION",
    "EXIT_CLOSED_PIPE",
    "MAX_INPUT_BYTES",
    "MAX_YAML_NODES",
    "WATCH_EXAMPLE",
    "WORKLOADS_MIN_VERSION",
    "UsageError",
    "key_to_json",
    "key_to_text",
    "main",
]
