"""Label values, pod names, label and selector builders, and the label/annotation keys.

Everything here reproduces the Airflow provider's output (``make_safe_label_value``,
``create_unique_id``, ``PodGenerator.build_labels_for_k8s_executor_pod`` …) wherever that
output is valid Kubernetes, and returns a valid value where the provider's is not (see
CHANGELOG). Label values are never decoded: identity is read back from annotations.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import re
import secrets
import string
from typing import TYPE_CHECKING

import attrs

from k8s_workloads.display import shown
from k8s_workloads.pods.validation import (
    DNS1123_SUBDOMAIN_MAX_LENGTH,
    LABEL_VALUE_MAX_LENGTH,
    POD_NAME_MAX_LENGTH,
    is_label_value,
)

if TYPE_CHECKING:
    import random
    from collections.abc import Callable, Iterable

    from k8s_workloads.compat import VersionLike

__all__ = [
    "AIRFLOW_VERSION_LABEL",
    "AIRFLOW_WORKER_LABEL",
    "ALL_NAMESPACES",
    "CALLBACK_ID_ANNOTATION",
    "CALLBACK_WORKLOAD_TYPE",
    "DAG_ID_KEY",
    "EXECUTION_DATE_KEY",
    "GENERIC_WORKLOAD_TYPE",
    "KUBERNETES_EXECUTOR_LABEL",
    "LOGICAL_DATE_KEY",
    "MAP_INDEX_KEY",
    "POD_EXECUTOR_DONE_LABEL",
    "POD_REVOKED_LABEL",
    "RUN_ID_KEY",
    "TASK_ID_KEY",
    "TRUE_LABEL_VALUE",
    "TRY_NUMBER_KEY",
    "WORKLOAD_ID_KEY",
    "WORKLOAD_TYPE_LABEL",
    "InvalidDateLabel",
    "PodSelector",
    "add_unique_suffix",
    "airflow_version_label",
    "build_labels_for_callback_pod",
    "build_labels_for_generic_pod",
    "build_labels_for_k8s_executor_pod",
    "build_selector_for_k8s_executor_pod",
    "callback_pods_selector",
    "completed_pods_adoption_selector",
    "create_unique_id",
    "datetime_to_label_safe_datestring",
    "label_safe_datestring_to_datetime",
    "live_pods_adoption_selector",
    "make_safe_label_value",
    "orphaned_callback_pods_selector",
    "own_completed_pods_selector",
    "scheduler_pods_selector",
    "watcher_selector",
]

# Keys persisted on live pods: changing any of them orphans pods created by older
# versions, so they are the provider's exact spellings.
DAG_ID_KEY = "dag_id"
TASK_ID_KEY = "task_id"
TRY_NUMBER_KEY = "try_number"
MAP_INDEX_KEY = "map_index"
RUN_ID_KEY = "run_id"
LOGICAL_DATE_KEY = "logical_date"
"""Airflow 3's date annotation/label key."""
EXECUTION_DATE_KEY = "execution_date"
"""Airflow 2's date annotation/label key."""
AIRFLOW_WORKER_LABEL = "airflow-worker"
"""The scheduler job id that owns the pod."""
KUBERNETES_EXECUTOR_LABEL = "kubernetes_executor"
AIRFLOW_VERSION_LABEL = "airflow_version"
POD_EXECUTOR_DONE_LABEL = "airflow_executor_done"
"""Set to ``True`` on pods the executor has finished with, so watch and adoption skip them."""
POD_REVOKED_LABEL = "airflow_pod_revoked"
"""Set to ``True`` before the executor deletes a pod on purpose, so the deletion is ignored."""
WORKLOAD_TYPE_LABEL = "airflow-workload-type"
CALLBACK_WORKLOAD_TYPE = "callback"
"""The value of :data:`WORKLOAD_TYPE_LABEL` on callback pods."""
CALLBACK_ID_ANNOTATION = "callback_id"
GENERIC_WORKLOAD_TYPE = "generic"
"""The value of :data:`WORKLOAD_TYPE_LABEL` on a generic workload's pod."""
WORKLOAD_ID_KEY = "workload_id"
"""A generic workload's id: the annotation holds it as given (the codec reads it back),
the label :func:`make_safe_label_value` of it (for selectors; never decoded)."""
TRUE_LABEL_VALUE = "True"
ALL_NAMESPACES = "ALL_NAMESPACES"

_HASH_LENGTH = 9
_SUFFIX_ALPHABET = string.ascii_lowercase + string.digits

# The provider's clean-up drops the leading and trailing runs of non-alphanumerics and
# every character a label value may not hold. Dropping the disallowed characters first and
# then stripping '-', '_' and '.' from the ends keeps exactly the same characters (those
# between the first and last ASCII alphanumeric), in one cheap pass each.
_NOT_LABEL_VALUE_CHARS = re.compile(r"[^-A-Za-z0-9_.]+")


class InvalidDateLabel(ValueError):
    """A label value is not a date written by :func:`datetime_to_label_safe_datestring`."""


def _short_hash(value: str) -> str:
    # The provider's value.encode(); "surrogatepass" gives the same bytes for every string
    # UTF-8 can encode, and bytes still distinct for one with a lone surrogate (on which
    # the provider raises).
    data = value.encode("utf-8", "surrogatepass")
    return hashlib.md5(data, usedforsecurity=False).hexdigest()[:_HASH_LENGTH]


def make_safe_label_value(value: str) -> str:
    """A valid label value for any string, identical to the provider's where that is valid.

    A valid value of at most 63 characters is returned unchanged. Anything else is cleaned
    (invalid characters and non-alphanumeric ends dropped), cut to 53 characters and given
    ``-`` plus the first 9 hex digits of the MD5 of the *original*, so distinct inputs stay
    distinct. Where nothing alphanumeric is left the provider returns ``-<hash>``, which
    Kubernetes rejects; this returns ``<hash>`` alone.
    """
    if is_label_value(value):
        return value
    cleaned = _NOT_LABEL_VALUE_CHARS.sub("", value).strip("-_.")
    digest = _short_hash(value)
    if not cleaned:
        return digest
    return f"{cleaned[: LABEL_VALUE_MAX_LENGTH - _HASH_LENGTH - 1]}-{digest}"


@functools.lru_cache(maxsize=128)
def _safe_label_of_str(value: str) -> str:
    # For the pod builders' fast path, which calls it with exact ``str`` values only (a
    # subclass could hash equal to a plain string and get the plain result back). A
    # scheduler labels many pods with the same dag id, task id and run id, and the run id's
    # label costs an MD5; kept small so the cache stays a few dozen KiB.
    return make_safe_label_value(value)


@functools.lru_cache(maxsize=8)
def _version_label_of_str(airflow_version: str) -> str:
    # The same, for the one or two Airflow versions a scheduler labels its pods with.
    return airflow_version_label(airflow_version)


def _random_suffix(length: int, rng: random.Random | None) -> str:
    if rng is not None:
        return "".join(rng.choice(_SUFFIX_ALPHABET) for _ in range(length))
    # One draw from the OS's CSPRNG for the whole suffix, uniform over the alphabet's
    # length-character strings, written out in base 36: the same distribution as one
    # secrets.choice per character, for a fraction of the calls.
    number = secrets.randbelow(len(_SUFFIX_ALPHABET) ** length)
    digits = []
    for _ in range(length):
        number, digit = divmod(number, len(_SUFFIX_ALPHABET))
        digits.append(_SUFFIX_ALPHABET[digit])
    return "".join(digits)


def add_unique_suffix(
    *,
    name: str,
    rand_len: int = 8,
    max_len: int = POD_NAME_MAX_LENGTH,
    rng: random.Random | None = None,
) -> str:
    """``name`` cut to fit, plus ``-`` and ``rand_len`` random ``[a-z0-9]``, within ``max_len``.

    ``rng`` makes the suffix reproducible in tests; by default it comes from
    :mod:`secrets`. Where nothing of ``name`` is left the provider returns ``-<random>``,
    an invalid name; this returns ``<random>`` alone.
    """
    if rand_len < 1 or max_len < rand_len + 1:
        raise ValueError(
            f"max_len ({max_len}) must leave room for '-' and rand_len ({rand_len}) characters"
        )
    suffix = _random_suffix(rand_len, rng)
    base = name[: max_len - rand_len - 1].strip("-.")
    return f"{base}-{suffix}" if base else suffix


@functools.lru_cache(maxsize=4096)
def _slug(text: str) -> str:
    # A scheduler names pods for the same dag and task ids again and again (each try, map
    # index and run): slugify, the cost of a name, runs once per pair of ids.
    # Deferred: python-slugify costs ~20 ms to import and most users never build a name.
    from slugify import slugify  # noqa: PLC0415

    slug: str = slugify(text, lowercase=True)
    return slug


def create_unique_id(
    dag_id: str | None = None,
    task_id: str | None = None,
    *,
    max_length: int = POD_NAME_MAX_LENGTH,
    unique: bool = True,
    rng: random.Random | None = None,
) -> str:
    """A DNS-1123 pod name from a dag id and/or task id, as the provider makes it.

    The parts are joined by ``-`` and slugified (Unicode transliterated, lower-cased,
    runs of anything else made one ``-``), cut to ``max_length`` and, if ``unique``, given
    an 8-character random suffix within ``max_length``. Where the slug is empty (ids of
    punctuation only) the provider returns an invalid name; this uses the first 9 hex
    digits of the MD5 of the joined ids instead. Names never exceed 253 characters.
    """
    if not (dag_id or task_id):
        raise ValueError("Must supply either dag_id or task_id.")
    if max_length < 1 or (unique and max_length < 10):
        raise ValueError(f"max_length {max_length} leaves no room for a name")
    joined = "-".join(part for part in (dag_id, task_id) if part)
    limit = min(max_length, DNS1123_SUBDOMAIN_MAX_LENGTH)
    base = _slug(joined)[:limit].strip(".-")
    if not base:
        base = _short_hash(joined)[:limit]
    if unique:
        return add_unique_suffix(name=base, rand_len=8, max_len=limit, rng=rng)
    return base


def datetime_to_label_safe_datestring(value: datetime.datetime) -> str:
    """An ISO date as a label value: ``:`` becomes ``_`` and ``+`` becomes ``_plus_``."""
    return value.isoformat().replace(":", "_").replace("+", "_plus_")


def label_safe_datestring_to_datetime(value: str) -> datetime.datetime:
    """The inverse of :func:`datetime_to_label_safe_datestring`."""
    text = value.replace("_plus_", "+").replace("_", ":")
    try:
        parsed = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise InvalidDateLabel(f"not a label-safe date string: {shown(value)}") from None
    # fromisoformat rounds some offsets (sub-second ones on 3.11); never return a date
    # that would not write the same label back.
    if datetime_to_label_safe_datestring(parsed) != value:
        raise InvalidDateLabel(f"{shown(value)} does not read back to the same date")
    return parsed


def build_labels_for_k8s_executor_pod(
    *,
    dag_id: str,
    task_id: str,
    try_number: int,
    airflow_worker: str | int | None = None,
    map_index: int | None = None,
    logical_date: datetime.datetime | None = None,
    run_id: str | None = None,
    include_version: bool = True,
    airflow_version: VersionLike | None = None,
    logical_date_key: str = LOGICAL_DATE_KEY,
) -> dict[str, str]:
    """The labels of a task pod, as the provider's builder of the same name.

    ``airflow_version`` is required when ``include_version`` (the provider reads the
    installed version; here it is always passed in). ``logical_date_key`` is
    ``execution_date`` for Airflow 2 pods.
    """
    return _task_labels(
        dag_id=dag_id,
        task_id=task_id,
        try_number=str(try_number),
        version=airflow_version_label(airflow_version) if include_version else None,
        worker=None if airflow_worker is None else str(airflow_worker),
        map_index=map_index,
        date_label=datetime_to_label_safe_datestring(logical_date) if logical_date else None,
        run_id=run_id,
        logical_date_key=logical_date_key,
        safe=make_safe_label_value,
    )


def _task_labels(
    *,
    dag_id: str,
    task_id: str,
    try_number: str,
    version: str | None,
    worker: str | None,
    map_index: int | None,
    date_label: str | None,
    run_id: str | None,
    logical_date_key: str,
    safe: Callable[[str], str],
) -> dict[str, str]:
    """The labels naming a task pod, in their order: the one place that says which (the
    public builder above and both of the pod builders' paths make them here). ``safe`` is
    :func:`make_safe_label_value` or its cached twin, for the builders' fast path."""
    labels = {
        DAG_ID_KEY: safe(dag_id),
        TASK_ID_KEY: safe(task_id),
        TRY_NUMBER_KEY: try_number,
        KUBERNETES_EXECUTOR_LABEL: TRUE_LABEL_VALUE,
    }
    if version is not None:
        labels[AIRFLOW_VERSION_LABEL] = version
    if worker is not None:
        labels[AIRFLOW_WORKER_LABEL] = safe(worker)
    if map_index is not None and map_index >= 0:
        labels[MAP_INDEX_KEY] = str(map_index)
    if date_label:
        labels[logical_date_key] = date_label
    if run_id:
        labels[RUN_ID_KEY] = safe(run_id)
    return labels


def airflow_version_label(airflow_version: VersionLike | None) -> str:
    """The ``airflow_version`` label value: the provider's ``+`` → ``-``, kept valid.

    Made from the version's text as written (``str()`` of an
    :class:`~k8s_workloads.compat.AirflowVersion`), as the provider makes it from Airflow's.
    """
    if airflow_version is None:
        raise ValueError("airflow_version is required for the airflow_version label")
    return make_safe_label_value(str(airflow_version).replace("+", "-"))


def build_labels_for_callback_pod(
    *, scheduler_job_id: str | int, airflow_version: VersionLike
) -> dict[str, str]:
    """The labels of a callback pod: workload type, executor marker, owner and version.

    Callback pods carry no ``dag_id``/``task_id``/``try_number`` labels, so no task
    selector can ever match one.
    """
    labels = _run_once_labels(CALLBACK_WORKLOAD_TYPE, scheduler_job_id)
    labels[AIRFLOW_VERSION_LABEL] = airflow_version_label(airflow_version)
    return labels


def build_labels_for_generic_pod(
    *, scheduler_job_id: str | int, workload_id: str
) -> dict[str, str]:
    """The labels of a generic workload's pod: workload type, executor marker, owner and
    ``workload_id`` (the id itself where it is a valid label value, else
    :func:`make_safe_label_value` of it: select one workload's pods with
    ``workload_id=<that value>``).

    The owner and executor labels keep the provider's names: the watch, the re-list and
    adoption find every kind of pod by them. No ``airflow_version`` label: no Airflow runs
    the workload.
    """
    labels = _run_once_labels(GENERIC_WORKLOAD_TYPE, scheduler_job_id)
    labels[WORKLOAD_ID_KEY] = make_safe_label_value(workload_id)
    return labels


def _run_once_labels(workload_type: str, scheduler_job_id: str | int) -> dict[str, str]:
    """The labels a callback's and a generic workload's pod start with, in their order:
    workload type, executor marker, owner."""
    return {
        WORKLOAD_TYPE_LABEL: workload_type,
        KUBERNETES_EXECUTOR_LABEL: TRUE_LABEL_VALUE,
        AIRFLOW_WORKER_LABEL: make_safe_label_value(str(scheduler_job_id)),
    }


def build_selector_for_k8s_executor_pod(
    *,
    dag_id: str,
    task_id: str,
    try_number: int,
    map_index: int | None = None,
    logical_date: datetime.datetime | None = None,
    run_id: str | None = None,
    airflow_worker: str | int | None = None,
    logical_date_key: str = LOGICAL_DATE_KEY,
) -> str:
    """The label selector that finds one task pod (for its logs), as the provider's.

    Labels in sorted key order, without the version; when the owning scheduler is not
    known, ``,airflow-worker`` (an existence test) keeps KubernetesPodOperator pods out.
    """
    labels = build_labels_for_k8s_executor_pod(
        dag_id=dag_id,
        task_id=task_id,
        try_number=try_number,
        map_index=map_index,
        logical_date=logical_date,
        run_id=run_id,
        airflow_worker=airflow_worker,
        include_version=False,
        logical_date_key=logical_date_key,
    )
    selector = ",".join(f"{key}={value}" for key, value in sorted(labels.items()))
    if not airflow_worker:
        selector += f",{AIRFLOW_WORKER_LABEL}"
    return selector


@attrs.frozen
class PodSelector:
    """Arguments for a pod list or watch call."""

    label_selector: str
    field_selector: str | None = None


def watcher_selector(scheduler_job_id: str | int) -> PodSelector:
    """What a scheduler's watcher streams: its pods not yet marked done.

    The job id goes in as given, as the provider does (job ids are integers).
    """
    return PodSelector(
        f"{AIRFLOW_WORKER_LABEL}={scheduler_job_id},{POD_EXECUTOR_DONE_LABEL}!={TRUE_LABEL_VALUE}"
    )


def scheduler_pods_selector(scheduler_job_id: str | int) -> PodSelector:
    """Every pod a scheduler owns (for revoking a task)."""
    return PodSelector(f"{AIRFLOW_WORKER_LABEL}={make_safe_label_value(str(scheduler_job_id))}")


def _not_done(owned_by: str, *, phase: str) -> PodSelector:
    """Executor pods matching ``owned_by`` whose phase is ``phase`` (``=Succeeded``,
    ``!=Succeeded``) and that no executor has marked done."""
    return PodSelector(
        label_selector=(
            f"{KUBERNETES_EXECUTOR_LABEL}={TRUE_LABEL_VALUE},{owned_by},"
            f"{POD_EXECUTOR_DONE_LABEL}!={TRUE_LABEL_VALUE}"
        ),
        field_selector=f"status.phase{phase}",
    )


def _owners(me: str | int, alive_scheduler_job_ids: Iterable[str | int]) -> list[str]:
    """The label values of this scheduler's id and the live ones', sorted, once each."""
    return sorted(
        {make_safe_label_value(str(me))}
        | {make_safe_label_value(str(job_id)) for job_id in alive_scheduler_job_ids}
    )


def live_pods_adoption_selector(old_scheduler_job_id: str | int) -> PodSelector:
    """A dead scheduler's pods that have not Succeeded and are not done."""
    owner = make_safe_label_value(str(old_scheduler_job_id))
    return _not_done(f"{AIRFLOW_WORKER_LABEL}={owner}", phase="!=Succeeded")


def own_completed_pods_selector(scheduler_job_id: str | int) -> PodSelector:
    """Succeeded, not-done pods of one scheduler id: an executor restarted under the id
    it had takes over its earlier run's finished pods with these (the completed list
    leaves out the adopter's own)."""
    owner = make_safe_label_value(str(scheduler_job_id))
    return _not_done(f"{AIRFLOW_WORKER_LABEL}={owner}", phase="=Succeeded")


def completed_pods_adoption_selector(
    me: str | int, alive_scheduler_job_ids: Iterable[str | int] = ()
) -> PodSelector:
    """Succeeded, not-done pods owned by no live scheduler (apache/airflow#66400).

    With no other live scheduler this is the equality form ``airflow-worker!=<me>``;
    otherwise ``airflow-worker notin (<sorted ids, me included>)``.
    """
    excluded = _owners(me, alive_scheduler_job_ids)
    if len(excluded) == 1:
        worker_filter = f"{AIRFLOW_WORKER_LABEL}!={excluded[0]}"
    else:
        worker_filter = f"{AIRFLOW_WORKER_LABEL} notin ({','.join(excluded)})"
    return _not_done(worker_filter, phase="=Succeeded")


def orphaned_callback_pods_selector(
    me: str | int, alive_scheduler_job_ids: Iterable[str | int] = ()
) -> PodSelector:
    """Callback pods not Succeeded and not done, owned by no live scheduler.

    Airflow hands an executor only task instances to adopt, never callbacks, so the dead
    schedulers' callback pods are found by what they are, not by a known owner.
    """
    owners = _owners(me, alive_scheduler_job_ids)
    return _not_done(
        f"{WORKLOAD_TYPE_LABEL}={CALLBACK_WORKLOAD_TYPE},"
        f"{AIRFLOW_WORKER_LABEL} notin ({','.join(owners)})",
        phase="!=Succeeded",
    )


def callback_pods_selector(scheduler_job_id: str | int | None = None) -> PodSelector:
    """Callback pods, optionally only those one scheduler owns."""
    selector = f"{WORKLOAD_TYPE_LABEL}={CALLBACK_WORKLOAD_TYPE}"
    if scheduler_job_id is not None:
        selector += f",{AIRFLOW_WORKER_LABEL}={make_safe_label_value(str(scheduler_job_id))}"
    return PodSelector(selector)
