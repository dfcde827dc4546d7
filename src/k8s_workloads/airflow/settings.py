"""The executor's settings read and checked before it starts: the library's own
``[kubernetes_executor]`` options with their types and ranges, and the provider's settings
without which no pod can run (how to reach the cluster, which image the pods run).

Without these checks a scheduler with nothing set exits at start with the client's
``ConfigException: Service host/port is not set``, and every pod is built without an
image (the provider does both). Here each problem is one line naming the setting.

The functions take the configuration as a ``get(option) -> text or None`` callable over
``[kubernetes_executor]`` and the environment as arguments: they are used by the
executor's ``start()`` and by ``k8s-workloads airflow-config --check``, and do not import
Airflow.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from k8s_workloads.airflow.provider import OPTIONS, SECTION, Option

__all__ = [
    "InvalidExecutorSetting",
    "LibraryOptions",
    "RequestTimeout",
    "cluster_access_problem",
    "image_problem",
    "read_options",
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


def _boolean(option: Option, text: str) -> bool:
    word = text.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise InvalidExecutorSetting(option.name, f"{option.name} = {text!r}: must be True or False")


def _integer(option: Option, text: str, lowest: int) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        value = None
    if value is None or value < lowest:
        wanted = "-1 (always) or a count from 0" if lowest == -1 else f"a count from {lowest}"
        raise InvalidExecutorSetting(option.name, f"{option.name} = {text!r}: must be {wanted}")
    return value


def _seconds(option: Option, text: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise InvalidExecutorSetting(
            option.name, f"{option.name} = {text!r}: must be a number of seconds from 0"
        )
    return value


def _request_timeout(option: Option, text: str) -> RequestTimeout:
    # Above 0: urllib3 takes a timeout of 0 as "do not block", which fails every call.
    try:
        values = [float(part) for part in text.split(",")]
    except ValueError:
        values = []
    if len(values) == 1:
        values *= 2
    if len(values) != 2 or not all(math.isfinite(v) and v > 0 for v in values):
        raise InvalidExecutorSetting(
            option.name,
            f"{option.name} = {text!r}: must be CONNECT, READ seconds above 0 "
            "(or one number for both)",
        )
    return RequestTimeout(*values)


# The lowest value of each integer option: -1 is "always" for the retry budgets.
_LOWEST = {
    "callback_launch_failure_retries": -1,
    "max_handling_retries": -1,
    "pod_cleanup_max_concurrency": 1,
}


def read_options(get: Getter) -> LibraryOptions:
    """The library's options from ``get``; an option not set has its declared default.

    Raises :class:`InvalidExecutorSetting` naming the first option of the wrong type or
    out of range, with its value.
    """
    values: dict[str, Any] = {}
    for option in OPTIONS:
        text = get(option.name)
        if text is None:
            text = option.default
        if option.type == "boolean":
            values[option.name] = _boolean(option, text)
        elif option.type == "integer":
            values[option.name] = _integer(option, text, _LOWEST[option.name])
        elif option.type == "string":  # the one string option: a pair of timeouts
            values[option.name] = _request_timeout(option, text)
        else:
            values[option.name] = _seconds(option, text)
    return LibraryOptions(**values)


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
