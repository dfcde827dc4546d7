"""The executor's settings read and checked before it starts: the library's own
``[kubernetes_executor]`` options with their types and ranges, the provider's options the
executor reads (types, ranges, namespace names, the pod template file), and the settings
without which no pod can run (how to reach the cluster, which image the pods run).

Without these checks a scheduler with nothing set exits at start with the client's
``ConfigException: Service host/port is not set``, every pod is built without an image,
and a namespace that is no namespace name or a pod template file that is not there
fails every workload once the scheduler runs (the provider does all of these). Here each
problem is one line naming the setting, its value and the fix: :func:`setting_problems`
lists them all (``k8s-workloads airflow-config --check``), the executor's ``start()``
refuses the first.

The functions take the configuration as a ``get(option) -> text or None`` callable over
``[kubernetes_executor]`` and the environment as arguments: they are used by the
executor's ``start()`` and by ``k8s-workloads airflow-config --check``, and do not import
Airflow.
"""

from __future__ import annotations

import importlib
import json
import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from k8s_workloads.airflow.provider import OPTIONS, SECTION, Option
from k8s_workloads.pods.validation import is_dns1123_label

__all__ = [
    "PROVIDER_OPTIONS",
    "InvalidExecutorSetting",
    "LibraryOptions",
    "RequestTimeout",
    "cluster_access_problem",
    "image_problem",
    "pod_template_problem",
    "read_options",
    "setting_problems",
    "watched_namespaces",
]

Getter = Callable[[str], "str | None"]
"""``[kubernetes_executor]``'s value of an option, as text (None: not set)."""

CLIENT_FACTORY_SINCE = "10.24.0"
"""The first provider release that reads ``client_factory``."""

# Airflow's own boolean spellings (AirflowConfigParser.getboolean).
_TRUE = frozenset({"t", "true", "1"})
_FALSE = frozenset({"f", "false", "0"})


class InvalidExecutorSetting(ValueError):
    """A ``[kubernetes_executor]`` setting the executor cannot start with; ``option`` names it."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(f"[{SECTION}] {message}")
        self.option = option


@attrs.frozen
class RequestTimeout:
    """Client-side timeouts of one API call, in seconds: to connect, and between two reads
    of its answer (``api_request_timeout``)."""

    connect: float
    read: float

    @property
    def pair(self) -> tuple[float, float]:
        """As the ``kubernetes`` client's ``_request_timeout`` takes it (a tuple: one
        number would be a total, and a list is ignored)."""
        return (self.connect, self.read)

    def __str__(self) -> str:
        return f"{self.connect:g}, {self.read:g}"


@attrs.frozen
class LibraryOptions:
    """The library's own ``[kubernetes_executor]`` options, read and checked."""

    api_request_timeout: RequestTimeout
    callback_launch_failure_retries: int
    callback_queued_timeout: float
    mark_kept_failed_pods_done: bool
    max_handling_retries: int
    pending_policy: bool
    pod_cleanup_max_concurrency: int
    secure_workload_payload: bool
    sync_max_seconds: float


def _boolean(name: str, text: str) -> bool:
    word = text.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise InvalidExecutorSetting(name, f"{name} = {text!r}: must be True or False")


def _integer(name: str, text: str, lowest: int) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        value = None
    if value is None or value < lowest:
        wanted = "-1 (always) or a count from 0" if lowest == -1 else f"a count from {lowest}"
        raise InvalidExecutorSetting(name, f"{name} = {text!r}: must be {wanted}")
    return value


def _seconds(name: str, text: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise InvalidExecutorSetting(name, f"{name} = {text!r}: must be a number of seconds from 0")
    return value


def _request_timeout(name: str, text: str) -> RequestTimeout:
    # Above 0: urllib3 takes a timeout of 0 as "do not block", which fails every call.
    try:
        values = [float(part) for part in text.split(",")]
    except ValueError:
        values = []
    if len(values) == 1:
        values *= 2
    if len(values) != 2 or not all(math.isfinite(v) and v > 0 for v in values):
        raise InvalidExecutorSetting(
            name,
            f"{name} = {text!r}: must be CONNECT, READ seconds above 0 (or one number for both)",
        )
    return RequestTimeout(*values)


# The lowest value of each integer option: -1 is "always" for the retry budgets.
_LOWEST = {
    "callback_launch_failure_retries": -1,
    "max_handling_retries": -1,
    "pod_cleanup_max_concurrency": 1,
}


def _library_value(option: Option, text: str) -> object:
    if option.type == "boolean":
        return _boolean(option.name, text)
    if option.type == "integer":
        return _integer(option.name, text, _LOWEST[option.name])
    if option.type == "string":  # the one string option: a pair of timeouts
        return _request_timeout(option.name, text)
    return _seconds(option.name, text)


def _library_options(get: Getter) -> tuple[dict[str, Any], list[InvalidExecutorSetting]]:
    values: dict[str, Any] = {}
    problems: list[InvalidExecutorSetting] = []
    for option in OPTIONS:
        text = get(option.name)
        try:
            values[option.name] = _library_value(option, option.default if text is None else text)
        except InvalidExecutorSetting as problem:
            problems.append(problem)
    return values, problems


def read_options(get: Getter) -> LibraryOptions:
    """The library's options from ``get``; an option not set has its declared default.

    Raises :class:`InvalidExecutorSetting` naming the first option of the wrong type or
    out of range, with its value.
    """
    values, problems = _library_options(get)
    if problems:
        raise problems[0]
    return LibraryOptions(**values)


# --- the provider's options ------------------------------------------------------------

# validation.go's dns1123LabelFmt, which a namespace name must match (at most 63).
_NAMESPACE_RULE = (
    "must be a namespace name: at most 63 lower-case letters, digits and '-', "
    "starting and ending with a letter or digit (a DNS-1123 label)"
)

# The snake_case fields of kubernetes.client.V1DeleteOptions: the executor makes the body
# of every pod deletion from delete_option_kwargs with V1DeleteOptions(**kwargs).
_DELETE_OPTION_FIELDS = frozenset({
    "api_version", "dry_run", "grace_period_seconds",
    "ignore_store_read_error_with_cluster_breaking_potential", "kind", "orphan_dependents",
    "preconditions", "propagation_policy",
})  # fmt: skip

PROVIDER_OPTIONS: tuple[tuple[str, str, int | None], ...] = (
    # (option, how the executor reads it, the lowest integer): the provider's KubeConfig,
    # its executor's __init__ and kube_client.get_kube_client read these with Airflow's
    # getboolean / getint / getjson / getimport, which refuse another value at start.
    ("delete_worker_pods", "boolean", None),
    ("delete_worker_pods_on_failure", "boolean", None),
    ("multi_namespace_mode", "boolean", None),
    ("in_cluster", "boolean", None),
    ("async_pod_creation", "boolean", None),
    ("logs_task_metadata", "boolean", None),
    ("enable_tcp_keepalive", "boolean", None),
    ("verify_ssl", "boolean", None),
    # range(0) creation calls a loop: no pod would ever be created.
    ("worker_pods_creation_batch_size", "integer", 1),
    ("pod_creation_max_concurrency", "integer", 0),  # 0: the batch size
    ("task_publish_max_retries", "integer", -1),  # -1: always
    ("pod_launch_failure_retries", "integer", -1),  # -1: always
    ("running_pod_log_lines", "integer", 1),  # the provider's executor refuses 0
    # Socket options: the kernel refuses 0 (EINVAL), every connection would fail.
    ("tcp_keep_idle", "integer", 1),
    ("tcp_keep_intvl", "integer", 1),
    ("tcp_keep_cnt", "integer", 1),
    # Pods are created in this namespace: an invalid name is a 404 or 422 for each.
    ("namespace", "namespace", None),
    ("multi_namespace_mode_namespace_list", "namespaces", None),
    ("kube_client_request_args", "request arguments", None),
    ("delete_option_kwargs", "delete options", None),
    ("api_client_retry_configuration", "retry arguments", None),
    ("client_factory", "import path", None),
    ("async_client_factory", "import path", None),
    ("ssl_ca_cert", "file", None),
)
"""The provider's ``[kubernetes_executor]`` options :func:`setting_problems` checks, with
how each is read (``pod_template_file``, ``config_file`` and the image have their own
checks; the lists of reasons are free text)."""


def _namespace(name: str, text: str) -> None:
    if not is_dns1123_label(text):
        raise InvalidExecutorSetting(name, f"{name} = {text!r}: {_NAMESPACE_RULE}")


def _namespace_list(name: str, text: str) -> list[str]:
    # The executor watches each name of the comma-separated list, stripped (empty ones
    # are skipped).
    listed = [part.strip() for part in text.split(",") if part.strip()]
    wrong = [part for part in listed if not is_dns1123_label(part)]
    if wrong:
        raise InvalidExecutorSetting(
            name,
            f"{name} = {text!r}: {wrong[0]!r} {_NAMESPACE_RULE}; separate the names by commas",
        )
    return listed


def _json_object(name: str, text: str, example: str) -> dict[str, Any]:
    # The value is not shown: request arguments may hold headers.
    try:
        value = json.loads(text)
    except ValueError as error:
        value, why = None, f"not JSON ({error})"
    else:
        why = f"a JSON {type(value).__name__}, not an object"
    if not isinstance(value, dict):
        raise InvalidExecutorSetting(
            name, f"{name} is {why}: write one JSON object on one line, such as {example}"
        )
    return value


def _request_arguments(name: str, text: str) -> None:
    arguments = _json_object(name, text, '{"_request_timeout": [10, 60]}')
    timeout = arguments.get("_request_timeout")
    if timeout is None:
        return
    parts = timeout if isinstance(timeout, list) else [timeout]
    numbers = [p for p in parts if isinstance(p, (int, float)) and not isinstance(p, bool)]
    if len(parts) not in {1, 2} or len(numbers) != len(parts) or min(numbers) <= 0:
        raise InvalidExecutorSetting(
            name,
            f"{name}: _request_timeout = {json.dumps(timeout)}: must be seconds above 0, "
            "or [CONNECT, READ] seconds above 0",
        )


def _delete_options(name: str, text: str) -> None:
    unknown = sorted(
        set(_json_object(name, text, '{"grace_period_seconds": 0}')) - _DELETE_OPTION_FIELDS
    )
    if unknown:
        raise InvalidExecutorSetting(
            name,
            f"{name}: {unknown[0]!r} is no field of V1DeleteOptions: use the client's "
            f"snake_case names ({', '.join(sorted(_DELETE_OPTION_FIELDS))})",
        )


def _retry_arguments(name: str, text: str) -> None:
    arguments = _json_object(name, text, '{"total": 3, "backoff_factor": 0.5}')
    from urllib3.util import Retry  # noqa: PLC0415 - the client's dependency

    try:
        Retry(**arguments)
    except (TypeError, ValueError) as error:
        raise InvalidExecutorSetting(
            name, f"{name}: not the arguments of urllib3's Retry ({error})"
        ) from None


def _import_failure(path: str) -> str | None:
    """Why ``path`` (``package.module.function``) cannot be imported as the provider's
    ``getimport`` would (None: it can)."""
    module_name, _, attribute = path.rpartition(".")
    if not module_name:
        return "not a dotted path"
    try:
        value = getattr(importlib.import_module(module_name), attribute)
    except Exception as error:  # noqa: BLE001 - the user's module may raise anything
        return f"{type(error).__name__}: {error}"
    return None if callable(value) else "not callable"


def _import_path(name: str, text: str) -> None:
    failure = _import_failure(text.strip())
    if failure is not None:
        raise InvalidExecutorSetting(
            name,
            f"{name} = {text!r}: cannot be imported ({failure}): name a function that "
            "returns the client, as package.module.function, importable by the scheduler",
        )


def _provider_problem(
    name: str, how: str, lowest: int | None, text: str, exists: Callable[[Path], bool]
) -> None:
    if how == "boolean":
        _boolean(name, text)
    elif how == "integer":
        _integer(name, text, -1 if lowest is None else lowest)
    elif how == "namespace":  # as it is: the pods' namespace is the text, unstripped
        _namespace(name, text)
    elif how == "namespaces":
        _namespace_list(name, text)
    elif how == "request arguments":
        _request_arguments(name, text)
    elif how == "delete options":
        _delete_options(name, text)
    elif how == "retry arguments":
        _retry_arguments(name, text)
    elif how == "import path":
        _import_path(name, text)
    elif not exists(Path(text.strip()).expanduser()):  # a file
        raise InvalidExecutorSetting(
            name, f"{name} = {text!r}: no such file: name the file, or leave it unset"
        )


def _provider_problems(get: Getter, exists: Callable[[Path], bool]) -> list[InvalidExecutorSetting]:
    problems: list[InvalidExecutorSetting] = []
    for name, how, lowest in PROVIDER_OPTIONS:
        text = get(name)
        # Not set (or empty: Airflow's fallback for the lists and JSON) is the default.
        if text is None or (not text.strip() and how not in {"namespace", "boolean", "integer"}):
            continue
        try:
            _provider_problem(name, how, lowest, text, exists)
        except InvalidExecutorSetting as problem:
            problems.append(problem)
    return problems


def watched_namespaces(get: Getter) -> list[str | None]:
    """Where the executor watches and lists pods, as the provider does: ``namespace``; in
    multi-namespace mode each of ``multi_namespace_mode_namespace_list`` (stripped, once
    each), or every namespace (None) when there is no list. The options are valid
    (:func:`setting_problems`)."""
    namespace = get("namespace")
    namespace = "default" if namespace is None else namespace
    if not _boolean("multi_namespace_mode", get("multi_namespace_mode") or "False"):
        return [namespace]
    listed = _namespace_list(
        "multi_namespace_mode_namespace_list", get("multi_namespace_mode_namespace_list") or ""
    )
    return list(dict.fromkeys(listed)) or [None]


def cluster_access_problem(
    get: Getter,
    *,
    environ: Mapping[str, str],
    exists: Callable[[Path], bool] = Path.exists,
    client_factory_read: bool = True,
) -> InvalidExecutorSetting | None:
    """What keeps the executor from reaching the cluster (None: nothing seen); the
    error names the setting to change.

    The provider reaches it, in order, through ``client_factory`` (provider 10.24+, so
    ``client_factory_read``), the pod's service account (``in_cluster = True``, the
    default, needs ``KUBERNETES_SERVICE_HOST`` and ``_PORT`` in the environment), or a
    kubeconfig (``in_cluster = False``: ``config_file``, else ``KUBECONFIG`` or
    ``~/.kube/config``).
    """
    factory = (get("client_factory") or "").strip()
    if factory and client_factory_read:
        return None
    unread = (
        f" (client_factory is set, but the installed provider reads it only from "
        f"{CLIENT_FACTORY_SINCE})"
        if factory
        else ""
    )
    in_cluster = (get("in_cluster") or "True").strip().lower() not in _FALSE
    if in_cluster:
        if environ.get("KUBERNETES_SERVICE_HOST") and environ.get("KUBERNETES_SERVICE_PORT"):
            return None
        return InvalidExecutorSetting(
            "in_cluster",
            "in_cluster = True, but this process is not in a Kubernetes pod "
            "(KUBERNETES_SERVICE_HOST/PORT are not set): set in_cluster = False and "
            f"config_file, or client_factory{unread}",
        )
    config_file = (get("config_file") or "").strip()
    if config_file:
        if exists(Path(config_file).expanduser()):
            return None
        return InvalidExecutorSetting(
            "config_file", f"config_file = {config_file!r}: no such file{unread}"
        )
    candidates = environ.get("KUBECONFIG", "~/.kube/config").split(os.pathsep)
    if any(path and exists(Path(path).expanduser()) for path in candidates):
        return None
    return InvalidExecutorSetting(
        "config_file",
        "in_cluster = False and config_file is not set, and there is no kubeconfig "
        f"(KUBECONFIG, ~/.kube/config): set config_file, or client_factory{unread}",
    )


def _template_image(template: Mapping[str, Any] | None) -> str | None:
    """The image of a pod template's ``base`` container (the worker's), if it names one."""
    spec = (template or {}).get("spec") or {}
    for container in spec.get("containers") or ():
        if isinstance(container, Mapping) and container.get("name") == "base":
            image = container.get("image")
            return image if isinstance(image, str) and image else None
    return None


def image_problem(get: Getter, template: Mapping[str, Any] | None) -> InvalidExecutorSetting | None:
    """What leaves the worker pods without an image (None: they have one).

    The image is ``worker_container_repository:worker_container_tag`` when both are set,
    else the ``base`` container's of the ``pod_template_file`` (``template``, loaded).
    """
    repository = (get("worker_container_repository") or "").strip()
    tag = (get("worker_container_tag") or "").strip()
    if (repository and tag) or _template_image(template):
        return None
    if repository or tag:
        missing = "worker_container_tag" if repository else "worker_container_repository"
        return InvalidExecutorSetting(
            missing, f"{missing} is not set: the worker pods would have no image"
        )
    where = (get("pod_template_file") or "").strip()
    template_text = (
        f"the pod_template_file {where!r} has no 'base' container with an image"
        if where
        else "no pod_template_file"
    )
    return InvalidExecutorSetting(
        "worker_container_repository",
        "worker_container_repository and worker_container_tag are not set, "
        f"and {template_text}: the worker pods would have no image",
    )


def _base_position(template: Mapping[str, Any]) -> int | None:
    """Where the container named ``base`` is in ``spec.containers`` (None: nowhere)."""
    spec = template.get("spec")
    containers = spec.get("containers") if isinstance(spec, Mapping) else None
    for position, container in enumerate(containers if isinstance(containers, list) else ()):
        if isinstance(container, Mapping) and container.get("name") == "base":
            return position
    return None


def pod_template_problem(
    path: str,
    *,
    load: Callable[[str], Mapping[str, Any]],
    exists: Callable[[Path], bool] = Path.is_file,
) -> tuple[InvalidExecutorSetting | None, Mapping[str, Any] | None]:
    """What is wrong with ``pod_template_file = path`` (None: nothing), and the template
    as ``load`` read it (None: not read).

    The file must be there (the provider would log a warning and build every pod from an
    empty template), be read by ``load`` as the executor reads it (YAML within bounds, a
    pod: ``load`` raises ``OSError``, ``ValueError`` or ``TypeError`` otherwise), be a
    ``Pod`` if it names its kind, and have the container named ``base`` that the worker
    runs in (the provider's rule for templates), first (the layers are merged container by
    container in their order).
    """
    name = "pod_template_file"
    shown = f"{name} = {path!r}"
    if not exists(Path(path).expanduser()):
        return InvalidExecutorSetting(
            name, f"{shown}: no such file: name a pod template file, or leave it unset"
        ), None
    try:
        template = load(path)
    except (OSError, ValueError, TypeError) as error:
        return InvalidExecutorSetting(
            name, f"{shown}: cannot be read as a pod ({error}): write a Pod manifest in YAML"
        ), None
    kind = template.get("kind")
    if kind not in {None, "Pod"}:
        return InvalidExecutorSetting(
            name, f"{shown}: is a {kind!r}, not a Pod: write a Pod manifest (kind: Pod)"
        ), template
    position = _base_position(template)
    if position is None:
        return InvalidExecutorSetting(
            name,
            f"{shown}: has no container named 'base': name the worker's container "
            "'base' in spec.containers",
        ), template
    if position:
        # The layers are merged container by container in their order (the provider's
        # rule): the worker's own container is the first, whatever its name there.
        return InvalidExecutorSetting(
            name,
            f"{shown}: its container 'base' is spec.containers[{position}], not the first: "
            "put the worker's container first (sidecars after it)",
        ), template
    return None, template


def setting_problems(
    get: Getter,
    *,
    environ: Mapping[str, str],
    load_template: Callable[[str], Mapping[str, Any]],
    exists: Callable[[Path], bool] = Path.exists,
    client_factory_read: bool = True,
) -> list[InvalidExecutorSetting]:
    """Every problem of the executor's settings, one each, in the order of the options:
    the library's options, the provider's (:data:`PROVIDER_OPTIONS`), the pod template
    file (read with ``load_template``), cluster access and the worker image. What the
    executor's ``start()`` refuses (the first of them), and what ``k8s-workloads
    airflow-config --check`` prints (all of them)."""
    problems = _library_options(get)[1] + _provider_problems(get, exists)
    path = (get("pod_template_file") or "").strip()
    template: Mapping[str, Any] | None = None
    if path:
        template_error, template = pod_template_problem(
            path, load=load_template, exists=lambda p: exists(p) and p.is_file()
        )
        if template_error is not None:
            problems.append(template_error)
    if not any(problem.option == "in_cluster" for problem in problems):
        access = cluster_access_problem(
            get, environ=environ, exists=exists, client_factory_read=client_factory_read
        )
        if access is not None:
            problems.append(access)
    if not path or template is not None:
        image = image_problem(get, template)
        if image is not None:
            problems.append(image)
    return problems
