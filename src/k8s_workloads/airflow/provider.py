"""The package as an Airflow provider: what ``airflow providers list`` and ``airflow config``
learn about it through its ``apache_airflow_provider`` entry point.

Airflow calls :func:`get_provider_info` for every installed package that declares the
entry point; from it Airflow takes the package's name, version and executor, and the
``config`` sections whose options then have defaults (``airflow config get-value``) and
descriptions (``airflow config list --defaults``).

The library's options live in ``[kubernetes_executor]``, where the provider's own options
are and where the executor's users already set them. Airflow 3.3 merges the providers'
``config`` declarations one *section* at a time in the order of the package names
(``ProvidersManager().provider_configs``, then a ``dict.update`` per provider), so a
second provider declaring ``[kubernetes_executor]`` replaces the provider's whole section:
its options would lose their descriptions, and those missing from Airflow's
``provider_config_fallback_defaults.cfg`` their defaults. ``k8s-workloads`` sorts after
``apache-airflow-providers-cncf-kubernetes``, so the section declared here is the
provider's own declaration (read from the installed provider) with the library's options
added: every option keeps its default and its description.

This module does not import Airflow; it reads the installed provider's
``get_provider_info`` only when it is there.
"""

from __future__ import annotations

import copy
import importlib
from typing import Any, NamedTuple

from k8s_workloads import __version__

__all__ = ["OPTIONS", "SECTION", "Option", "get_provider_info"]

SECTION = "kubernetes_executor"
"""The Airflow configuration section of the executor's options (the provider's too)."""

PACKAGE = "k8s-workloads"
EXECUTOR = "k8s_workloads.airflow.KubernetesExecutor"
_PROVIDER_INFO = "airflow.providers.cncf.kubernetes.get_provider_info"


class Option(NamedTuple):
    """One of the library's own ``[kubernetes_executor]`` options."""

    name: str
    type: str
    """Airflow's option type: ``boolean``, ``integer``, ``float`` or ``string`` (here a
    pair of timeouts, the only one)."""
    default: str
    """The default as Airflow's configuration holds it: text."""
    description: str
    version_added: str


OPTIONS: tuple[Option, ...] = (
    Option("api_request_timeout", "string", "10, 60",
           "Client-side timeouts of each of the executor's API calls, in seconds: CONNECT, "
           "READ (one number: both). A call with no answer fails then instead of waiting for "
           "ever; kube-apiserver ends a request after its own --request-timeout (60 s). A "
           "_request_timeout in kube_client_request_args wins. The pod watch connects within "
           "CONNECT and is replaced after 90 s without a line (the server sends a bookmark "
           "about every minute).", "0.1.0"),
    Option("callback_launch_failure_retries", "integer", "0",
           "Times a callback whose pod failed before it ran is queued again "
           "(-1: always, 0: never).", "0.1.0"),
    Option("callback_queued_timeout", "float", "600",
           "Seconds a callback may wait for its pod while the API server cannot be reached "
           "(its creations refused, or never connected) before it fails (0: no limit). A "
           "task's wait is bounded by [scheduler] task_queued_timeout.", "0.1.0"),
    Option("mark_kept_failed_pods_done", "boolean", "True",
           "Label failed pods that are kept (delete_worker_pods_on_failure = False) as done, "
           "so a restarted scheduler does not read them again.", "0.1.0"),
    Option("max_handling_retries", "integer", "3",
           "Times a result whose handling failed (a database error) is handled again on a "
           "later sync (-1: always).", "0.1.0"),
    Option("pending_policy", "boolean", "False",
           "Read Pending pods with grace periods (image pulls, scheduling) instead of "
           "failing them at the first fatal-looking reason.", "0.1.0"),
    Option("pod_cleanup_max_concurrency", "integer", "16",
           "Pod deletions and label patches in flight at once (from 1).", "0.1.0"),
    Option("secure_workload_payload", "boolean", "False",
           "Put the workload JSON (and its Execution API token) in a Secret mounted by the "
           "pod instead of the pod's arguments.", "0.1.0"),
    Option("sync_max_seconds", "float", "1.0",
           "The longest one sync() performs API calls, in seconds (from 0); what is left "
           "goes on in the background and is reported by the next sync().", "0.1.0"),
)  # fmt: skip


def _option_entry(option: Option) -> dict[str, Any]:
    return {
        "description": option.description,
        "version_added": option.version_added,
        "type": option.type,
        "example": None,
        "default": option.default,
    }


def _installed_provider_info() -> dict[str, Any]:
    """The installed provider's own provider information (empty without the provider)."""
    try:
        module = importlib.import_module(_PROVIDER_INFO)
    except ImportError:
        return {}
    info: dict[str, Any] = module.get_provider_info()
    return info


def config_section(provider_info: dict[str, Any]) -> dict[str, Any]:
    """``[kubernetes_executor]`` as declared here: the provider's options (from its
    ``provider_info``) and the library's."""
    section: dict[str, Any] = copy.deepcopy(provider_info.get("config", {}).get(SECTION, {}))
    section.setdefault("description", None)
    options: dict[str, Any] = section.setdefault("options", {})
    for option in OPTIONS:
        options[option.name] = _option_entry(option)
    return section


def get_provider_info() -> dict[str, Any]:
    """The provider information Airflow reads through the ``apache_airflow_provider`` entry
    point (``airflow/provider_info.schema.json``)."""
    provider = _installed_provider_info()
    return {
        "package-name": PACKAGE,
        "name": "k8s_workloads",
        "description": "A Kubernetes executor that also runs Airflow 3.3's callback "
        "workloads as pods, on the k8s-workloads executor core.",
        "versions": [__version__],
        "executors": [EXECUTOR],
        "config": {SECTION: config_section(provider)},
        # The executor's commands are the provider's (``airflow kubernetes ...``); naming
        # the same function keeps Airflow from loading them a second time from the
        # executor class, with a warning (Airflow keeps each function once).
        "cli": list(provider.get("cli", ())),
    }
