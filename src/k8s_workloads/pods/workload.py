"""What runs in a worker pod: the container args of an Airflow 3 workload.

:func:`workload_command_args` gives the ``base`` container's args for a workload's JSON;
:func:`parse_callback_log_path` reads a callback's dag and run ids back from the log path
Airflow 3.3 gives it, and :func:`_callback_ids` finds them in a pod's args.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

BASE_CONTAINER_NAME = "base"
"""The worker container's name; the provider reads logs from it."""
EXECUTOR_POD_ENV = {"name": "AIRFLOW_IS_K8S_EXECUTOR_POD", "value": "True"}
EXECUTE_WORKLOAD_MODULE = "airflow.sdk.execution_time.execute_workload"


def workload_command_args(workload_json: str | Mapping[str, Any]) -> list[str]:
    """The container ``args`` that run one Airflow 3 workload (task or callback).

    ``workload_json`` is the workload's JSON (``workload.model_dump_json()``), or a
    mapping to serialise. The JSON carries the Execution API token: see
    :mod:`k8s_workloads.pods.payload` to keep it out of the pod spec.
    """
    if isinstance(workload_json, Mapping):
        text = json.dumps(workload_json, separators=(",", ":"))
    elif isinstance(workload_json, str):
        text = workload_json
    else:
        raise TypeError(
            f"workload_json must be a JSON string or a mapping, got {type(workload_json).__name__}"
        )
    return ["python", "-m", EXECUTE_WORKLOAD_MODULE, "--json-string", text]


# executor_callbacks/<dag_id>/<run_id>/<callback uuid>, as Airflow 3.3 writes log paths of
# callbacks; run ids may hold '/' in theory, dag ids may not.
_CALLBACKS_FOLDER = "executor_callbacks/"
_LOG_SUFFIX = ".log"


def parse_callback_log_path(log_path: str | None) -> tuple[str, str, str] | None:
    """(dag_id, run_id, callback_id) from a callback's log path, or None if it is not one.

    The path is ``[<anything>/]executor_callbacks/<dag_id>/<run_id>/<callback_id>[.log]``:
    the dag id is one segment, the callback id the last (less ``.log``), the run id all
    between (it may hold ``/``). Where ``executor_callbacks/`` appears more than once,
    the last that fits wins. Neither the run id nor what precedes the folder holds a
    newline. Linear in the path's length (a regular expression took 49 s on
    ``"executor_callbacks/" * 8000``).
    """
    if not log_path:
        return None
    last_slash = log_path.rfind("/")
    callback = log_path[last_slash + 1 :]
    if last_slash < 0 or not callback:
        return None
    first_newline = log_path.find("\n")
    newline_in_run_from = log_path.rfind("\n", 0, last_slash)  # a run id after it has none
    found: tuple[int, int] | None = None
    at = log_path.find(_CALLBACKS_FOLDER)
    while at >= 0:
        starts_a_segment = at == 0 or (log_path[at - 1] == "/" and not 0 <= first_newline < at)
        dag_start = at + len(_CALLBACKS_FOLDER)
        if starts_a_segment:
            dag_end = log_path.find("/", dag_start)
            if dag_end > dag_start and last_slash > dag_end + 1 > newline_in_run_from:
                found = dag_start, dag_end
        at = log_path.find(_CALLBACKS_FOLDER, at + 1)
    if found is None:
        return None
    dag_start, dag_end = found
    if callback.endswith(_LOG_SUFFIX) and len(callback) > len(_LOG_SUFFIX):
        callback = callback[: -len(_LOG_SUFFIX)]
    return log_path[dag_start:dag_end], log_path[dag_end + 1 : last_slash], callback


def _workload_json(args: Sequence[str]) -> str | None:
    """The workload JSON in an Airflow 3 workload's container args, or None."""
    for index, arg in enumerate(args[:-1]):
        if arg == "--json-string":
            return args[index + 1]
    return None


def _callback_ids(args: Sequence[str]) -> tuple[str | None, str | None]:
    """(dag_id, run_id) from the log path of the callback workload in ``args``, or Nones.

    Airflow 3.3 writes a callback's log path as ``executor_callbacks/<dag>/<run>/<id>``
    (:func:`parse_callback_log_path`); anything unreadable gives ``(None, None)``.
    """
    text = _workload_json(args)
    if text is None:
        return None, None
    try:
        workload = json.loads(text)
    except (ValueError, RecursionError):
        return None, None
    log_path = workload.get("log_path") if isinstance(workload, dict) else None
    parsed = parse_callback_log_path(log_path if isinstance(log_path, str) else None)
    if parsed is None:
        return None, None
    dag_id, run_id, _ = parsed
    return dag_id, run_id
