"""The worker pod builders: task pods, callback pods, generic workloads' pods, and the
prepared template.

:func:`construct_task_pod` gives, for the same inputs, the manifest the provider's
``PodGenerator.construct_pod`` followed by ``sanitize_for_serialization`` gives: the same
name handling, image precedence, annotations, labels, ``base`` container and merge chain
(template → dynamic pod → ``pod_override``). :func:`construct_callback_pod` builds the
minimal pod for an Airflow 3.3 ``ExecuteCallback``, :func:`construct_generic_pod` the pod
of any other executor's workload (no Airflow in it). Each then applies an optional mutation
hook and checks that the identity the watcher decodes is still on the pod.
:class:`PodTemplate` prepares a template (and each override) once for many pods, and
:func:`construct_pod` builds a :class:`~k8s_workloads.states.KubernetesJob`'s pod with the
builder its key calls for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from k8s_workloads.compat import VersionLike, require_callback_support
from k8s_workloads.display import shown
from k8s_workloads.keys import AIRFLOW_INT_MAX, CallbackKey, GenericKey, TaskInstanceKey
from k8s_workloads.pods.errors import InvalidJob, InvalidPod
from k8s_workloads.pods.general_build import (
    MutationHook,
    _check_arguments,
    _fit_pod_name,
    _Layer,
    _layer,
    _OwnValues,
    _TaskPodValues,
)
from k8s_workloads.pods.identity import (
    _DATE_KEYS,
    _callback_identity,
    _callback_pod_name,
    _generic_identity,
    _generic_pod_name,
    _task_annotations,
    _task_identity,
)
from k8s_workloads.pods.labels import (
    LOGICAL_DATE_KEY,
    build_labels_for_callback_pod,
    build_labels_for_generic_pod,
    build_labels_for_k8s_executor_pod,
    create_unique_id,
)
from k8s_workloads.pods.prepared_build import (
    _ARGS_TYPES,
    _CACHED_OVERRIDES,
    _CACHED_TEMPLATES,
    _JOB_ID_TYPES,
    _STR_TYPE,
    _VERSION_TYPES,
    _ByContent,
    _fast_task_pod,
    _Prepared,
    _Switch,
)
from k8s_workloads.pods.validation import (
    POD_NAME_MAX_LENGTH,
    validate_manifest,
)
from k8s_workloads.pods.workload import _callback_ids

if TYPE_CHECKING:
    import datetime
    import random
    from collections.abc import Mapping, Sequence

    from k8s_workloads.pods.manifest import Manifest
    from k8s_workloads.states import KubernetesJob


class PodTemplate:
    """A worker pod template cleaned and checked once, for building many pods.

    ``base_worker_pod`` is the manifest every pod is merged over (the provider's
    ``pod_template_file``, loaded; None: no template). It is copied, cleaned and checked
    against the Kubernetes 1.37 Pod schema here, once (raising :class:`InvalidPod` naming
    the field, as :func:`construct_task_pod` does); later changes to the mapping passed
    do not reach it. Passed as ``base_worker_pod`` to :func:`construct_task_pod`,
    :func:`construct_callback_pod`, :func:`construct_generic_pod` or
    :func:`construct_pod`, it gives exactly the pods (and errors) the same template as a
    mapping gives, without even the lookup by content: the merge is worked out once per
    template and ``pod_override`` (overrides are kept by content, a few dozen at most),
    and each pod only fills in its own values.

    Every pod returned is a new tree of dicts and lists that shares nothing with another
    pod, the template or the arguments: it may be mutated freely. Safe to share between
    threads.
    """

    def __init__(self, base_worker_pod: Mapping[str, Any] | None = None) -> None:
        layer = _layer({} if base_worker_pod is None else base_worker_pod, "base_worker_pod", ())
        self._init(layer)

    def _init(self, layer: _Layer) -> None:
        self._bare = _Prepared(layer, None)
        self._overrides: _ByContent[_Prepared] = _ByContent(_CACHED_OVERRIDES)

    @classmethod
    def _of_layer(cls, layer: _Layer) -> PodTemplate:
        template = cls.__new__(cls)
        template._init(layer)  # noqa: SLF001 - its own class
        return template

    def _with_override(
        self, pod_override: Mapping[str, Any] | None, secrets: Sequence[object]
    ) -> _Prepared:
        if pod_override is None:
            return self._bare
        template = self._bare.template
        return self._overrides.get(
            pod_override,
            lambda: _Prepared(template, _layer(pod_override, "pod_override", secrets)),
        )


_TEMPLATES: _ByContent[PodTemplate] = _ByContent(_CACHED_TEMPLATES)
_NO_TEMPLATE: list[PodTemplate] = []


def _template_of(
    source: PodTemplate | Mapping[str, Any] | None, secrets: Sequence[object]
) -> PodTemplate:
    """The prepared template for a builder's ``base_worker_pod`` (kept by content)."""
    if isinstance(source, PodTemplate):
        return source
    if source is None:
        if not _NO_TEMPLATE:
            _NO_TEMPLATE.append(PodTemplate())
        return _NO_TEMPLATE[0]
    return _TEMPLATES.get(
        source,
        lambda: PodTemplate._of_layer(_layer(source, "base_worker_pod", secrets)),  # noqa: SLF001
    )


def construct_task_pod(
    *,
    namespace: str,
    scheduler_job_id: str | int,
    pod_id: str,
    dag_id: str,
    task_id: str,
    kube_image: str | None,
    try_number: int,
    args: Sequence[str],
    airflow_version: VersionLike,
    run_id: str | None = None,
    map_index: int = -1,
    date: datetime.datetime | None = None,
    pod_override: Mapping[str, Any] | None = None,
    base_worker_pod: PodTemplate | Mapping[str, Any] | None = None,
    mutation_hook: MutationHook | None = None,
    logical_date_key: str = LOGICAL_DATE_KEY,
    rng: random.Random | None = None,
) -> Manifest:
    """The manifest of a task instance's worker pod (a new dict, safe to mutate).

    A ``pod_id`` over 63 characters is cut and given a new random suffix (with a
    ``UserWarning``, as the provider). The image is the override's first container's, if
    set, else ``kube_image``.

    The pod returned always passes :func:`~k8s_workloads.pods.validation.validate_manifest`
    and the Kubernetes 1.37 Pod schema (:mod:`k8s_workloads.pods.schema`). Template and
    override values of the wrong type are coerced where the provider's loader coerces
    them unambiguously (an integer for a string field, ``"600"`` or ``600.0`` for an
    integer field) and refused otherwise (``hostNetwork: "False,"``, which the
    provider's loader reads as true). Its ``spec.restartPolicy`` is ``Never``, whatever
    the template, override or hook asks for (:mod:`k8s_workloads.pods.restart`); its
    ``base`` container's ``terminationMessagePolicy`` is ``FallbackToLogsOnError`` unless
    the template or override sets one (:mod:`k8s_workloads.pods.termination`).

    The template and override are prepared once (see :class:`PodTemplate`) and kept by
    content, so building many pods over the same ones costs little more than filling in
    each pod's values; build over a :class:`PodTemplate` to skip even the lookup.

    Raises :class:`~k8s_workloads.keys.InvalidKey` (naming the field) for ids, a
    ``try_number`` or a ``map_index`` no task instance key can hold; :class:`InvalidPod`
    (a :class:`PodReconciliationError`) when the pod would break a Kubernetes rule;
    :class:`PodReconciliationError` when the layers cannot be merged or the
    template/override overwrite the pod's identity; and :class:`PodMutationHookError`
    (:class:`InvalidMutatedPod` for an invalid pod) when the hook fails or does.
    """
    values = _TaskPodValues(  # in the record's order: the one place it is made
        namespace,
        scheduler_job_id,
        pod_id,
        dag_id,
        task_id,
        kube_image,
        try_number,
        args,
        airflow_version,
        run_id,
        map_index,
        date,
        pod_override,
        mutation_hook,
        logical_date_key,
        rng,
    )
    return _task_pod(base_worker_pod, values)


def _task_pod(
    template_source: PodTemplate | Mapping[str, Any] | None, task: _TaskPodValues
) -> Manifest:
    secrets = (task.args,)
    prepared: _Prepared | None = None
    if (
        _Switch.enabled
        and type(task.dag_id) is str
        and task.dag_id
        and type(task.task_id) is str
        and task.task_id
        and (task.run_id is None or type(task.run_id) is str)
        and type(task.try_number) is int
        and 0 <= task.try_number <= AIRFLOW_INT_MAX
        and type(task.map_index) is int
        and -1 <= task.map_index <= AIRFLOW_INT_MAX
        and type(task.namespace) is str
        and type(task.pod_id) is str
        and len(task.pod_id) <= POD_NAME_MAX_LENGTH
        and (task.kube_image is None or type(task.kube_image) is str)
        and type(task.args) in _ARGS_TYPES
        and set(map(type, task.args)) <= _STR_TYPE
        and type(task.airflow_version) in _VERSION_TYPES
        and type(task.scheduler_job_id) in _JOB_ID_TYPES
        and type(task.logical_date_key) is str
        and task.logical_date_key in _DATE_KEYS
    ):
        # Exactly the values every check below lets through: a valid key, the builder's
        # arguments of their types, a name that needs no cut. The fast path returns the
        # pod, or the prepared layers when the general path must build it.
        template = _template_of(template_source, secrets)
        prepared = template._with_override(task.pod_override, secrets)  # noqa: SLF001
        built = _fast_task_pod(prepared, task, secrets)
        if not isinstance(built, _Prepared):
            return built
    # The identity the watcher decodes must be a key: try_number 10**70 or -5, or
    # map_index -2, would give a pod it cannot read back (or reads as another task).
    TaskInstanceKey(task.dag_id, task.task_id, task.run_id or None, task.try_number, task.map_index)
    _check_arguments(
        namespace=task.namespace, name=task.pod_id, args=task.args, image=task.kube_image
    )
    pod_id = _fit_pod_name(task.pod_id, task.rng)
    if prepared is None:
        template = _template_of(template_source, secrets)
        prepared = template._with_override(task.pod_override, secrets)  # noqa: SLF001
    annotations = _task_annotations(
        task.dag_id,
        task.task_id,
        str(task.try_number),
        task.map_index,
        task.date.isoformat() if task.date else None,
        task.run_id,
        task.logical_date_key,
    )
    labels = build_labels_for_k8s_executor_pod(
        dag_id=task.dag_id,
        task_id=task.task_id,
        try_number=task.try_number,
        airflow_worker=task.scheduler_job_id,
        map_index=task.map_index,
        logical_date=task.date,
        run_id=task.run_id,
        airflow_version=task.airflow_version,
        logical_date_key=task.logical_date_key,
    )
    identity = _task_identity(
        annotations, labels, map_index=task.map_index, run_id=task.run_id, date=task.date
    )
    image = prepared.override_image or task.kube_image
    own = _OwnValues(task.namespace, pod_id, annotations, labels, task.args, image)
    return prepared.build(own, hook=task.mutation_hook, identity=identity, secrets=secrets)


def construct_callback_pod(
    *,
    callback_id: str,
    namespace: str,
    scheduler_job_id: str | int,
    kube_image: str | None,
    args: Sequence[str],
    airflow_version: VersionLike,
    base_worker_pod: PodTemplate | Mapping[str, Any] | None = None,
    dag_id: str | None = None,
    run_id: str | None = None,
    pod_id: str | None = None,
    mutation_hook: MutationHook | None = None,
    rng: random.Random | None = None,
) -> Manifest:
    """The manifest of a callback workload's pod (Airflow 3.3+; a new dict).

    Annotated ``callback_id=<id>`` (and ``dag_id`` / ``run_id`` when known; see
    :func:`parse_callback_log_path`), labelled ``airflow-workload-type=callback``,
    ``kubernetes_executor=True``, ``airflow-worker=<job id>`` and ``airflow_version``;
    never task annotations. Merged over the global pod template with the task rules; as
    for tasks, a configured ``kube_image`` wins over the template's image, and the pod
    returned always passes the naming rules and the 1.37 schema. The template (a manifest or
    a :class:`PodTemplate`) is prepared once and kept by content, as for
    :func:`construct_task_pod`. Raises
    :class:`~k8s_workloads.compat.CallbackWorkloadsUnsupported` below Airflow 3.3,
    :class:`~k8s_workloads.keys.InvalidKey` for an id that is not a UUID, and the errors
    of :func:`construct_task_pod` (:class:`InvalidPod` first among them).
    """
    require_callback_support(airflow_version)
    key = CallbackKey(callback_id)
    secrets = (args,)
    _check_arguments(namespace=namespace, name=pod_id or "", args=args, image=kube_image)
    name = _fit_pod_name(pod_id or _callback_pod_name(key, rng), rng)
    labels = build_labels_for_callback_pod(
        scheduler_job_id=scheduler_job_id, airflow_version=airflow_version
    )
    annotations, identity = _callback_identity(key, labels, dag_id=dag_id, run_id=run_id)
    prepared = _template_of(base_worker_pod, secrets)._bare  # noqa: SLF001
    own = _OwnValues(namespace, name, annotations, labels, args, kube_image)
    return prepared.build(own, hook=mutation_hook, identity=identity, secrets=secrets)


def check_pod_override(
    pod_override: Mapping[str, Any], base_worker_pod: PodTemplate | None = None
) -> None:
    """Refuse a ``pod_override`` no pod can be built with, before any pod is.

    Raises :class:`InvalidPod` (``field`` the first offending one, the message naming
    ``pod_override``) where the override breaks the Kubernetes 1.37 Pod schema or, in what
    it sets itself, a naming rule (a pod name, namespace, label, annotation or container
    name); what only the merge decides (the pod's own name, its identity labels and
    annotations, the hook's pod) is checked when the pod is built. Over a
    ``base_worker_pod`` the override is prepared for it here, once: the pods built over
    both find it prepared. An override passed is kept by content (as the builders keep
    theirs), so the many jobs of one override are checked once.
    """
    if base_worker_pod is not None:
        base_worker_pod._with_override(pod_override, ())  # noqa: SLF001 - kept by content
    _CHECKED_OVERRIDES.get(pod_override, lambda: _override_checked(pod_override, base_worker_pod))


_CHECKED_OVERRIDES: _ByContent[bool] = _ByContent(_CACHED_OVERRIDES)


def _override_checked(pod_override: Mapping[str, Any], template: PodTemplate | None) -> bool:
    if template is None:  # else prepared over it just now, which checked the layer
        _layer(pod_override, "pod_override", ())
    violations = validate_manifest(pod_override, layer=True)
    if violations:
        raise InvalidPod("pod_override", violations)
    return True


def construct_generic_pod(
    *,
    workload_id: str,
    namespace: str,
    scheduler_job_id: str | int,
    kube_image: str | None,
    args: Sequence[str],
    base_worker_pod: PodTemplate | Mapping[str, Any] | None = None,
    pod_override: Mapping[str, Any] | None = None,
    pod_id: str | None = None,
    mutation_hook: MutationHook | None = None,
    rng: random.Random | None = None,
) -> Manifest:
    """The manifest of a generic workload's pod (a :class:`~k8s_workloads.keys.GenericKey`;
    a new dict): no Airflow version, no Airflow workload.

    The template (``base_worker_pod``, a manifest or a :class:`PodTemplate`) with ``args``
    on its ``base`` container, then
    ``pod_override``, merged by the task rules; the image is the override's first
    container's, else ``kube_image``, else the template's. Annotated ``workload_id=<id>``,
    labelled ``airflow-workload-type=generic``, ``kubernetes_executor=True``,
    ``airflow-worker=<job id>`` and ``workload_id`` (the id as a label value, see
    :func:`~k8s_workloads.pods.labels.build_labels_for_generic_pod`); never a task's or a
    callback's annotations. ``pod_id`` defaults to :func:`generic_pod_name`. The pod
    returned passes the naming rules and the 1.37 schema, as every pod built here. Raises
    :class:`~k8s_workloads.keys.InvalidKey` (field ``id``) for an id no
    :class:`~k8s_workloads.keys.GenericKey` holds, and the errors of
    :func:`construct_task_pod`.
    """
    key = GenericKey(workload_id)
    secrets = (args,)
    _check_arguments(namespace=namespace, name=pod_id or "", args=args, image=kube_image)
    name = _fit_pod_name(pod_id or _generic_pod_name(key, rng), rng)
    labels = build_labels_for_generic_pod(scheduler_job_id=scheduler_job_id, workload_id=key.id)
    identity = _generic_identity(key, labels)
    prepared = _template_of(base_worker_pod, secrets)._with_override(pod_override, secrets)  # noqa: SLF001
    image = prepared.override_image or kube_image
    own = _OwnValues(namespace, name, dict(identity.annotations), labels, args, image)
    return prepared.build(own, hook=mutation_hook, identity=identity, secrets=secrets)


def construct_pod(
    job: KubernetesJob[Any],
    *,
    namespace: str,
    scheduler_job_id: str | int,
    airflow_version: VersionLike | None,
    kube_image: str | None = None,
    base_worker_pod: PodTemplate | Mapping[str, Any] | None = None,
    args: Sequence[str] | None = None,
    pod_id: str | None = None,
    dag_id: str | None = None,
    run_id: str | None = None,
    mutation_hook: MutationHook | None = None,
    rng: random.Random | None = None,
) -> Manifest:
    """The worker pod of a job, built by the builder its key calls for.

    A :class:`~k8s_workloads.keys.TaskInstanceKey` gets :func:`construct_task_pod` (with
    the job's ``pod_override``; ``pod_id`` defaults to
    :func:`~k8s_workloads.pods.labels.create_unique_id` of the dag and task ids), a
    :class:`~k8s_workloads.keys.CallbackKey` :func:`construct_callback_pod` (``pod_id``
    defaults to :func:`callback_pod_name`), a :class:`~k8s_workloads.keys.GenericKey`
    :func:`construct_generic_pod` (with the job's ``pod_override``; ``airflow_version``
    is not read and may be None). The image is the job's ``kube_image``, else
    ``kube_image``; the container args are ``args``, else the job's ``command``.
    ``base_worker_pod`` is a manifest or a :class:`PodTemplate`.

    ``dag_id`` and ``run_id`` annotate a callback's pod; when None they are read from the
    log path of the workload in the job's command (as the executor does). A task's come
    from its key: passing them for a task or generic job raises :class:`ValueError`, a
    ``pod_override`` on a callback job :class:`~k8s_workloads.pods.errors.InvalidJob`.
    Otherwise raises what the builder raises (a task or callback job with no
    ``airflow_version``: :class:`~k8s_workloads.pods.errors.InvalidJob` too).
    """
    key = job.key
    image = job.kube_image or kube_image
    built_args = job.command if args is None else args
    if isinstance(key, GenericKey):
        _no_dag_ids(dag_id, run_id, "a generic workload's pod has no {field}")
        return construct_generic_pod(
            workload_id=key.id,
            namespace=namespace,
            scheduler_job_id=scheduler_job_id,
            kube_image=image,
            args=built_args,
            base_worker_pod=base_worker_pod,
            pod_override=job.pod_override,
            pod_id=pod_id,
            mutation_hook=mutation_hook,
            rng=rng,
        )
    if not isinstance(key, (TaskInstanceKey, CallbackKey)):
        raise TypeError(
            "job.key must be a TaskInstanceKey, a CallbackKey or a GenericKey, got "
            f"{type(key).__name__}"
        )
    airflow_version = _required_airflow(key, airflow_version)
    if isinstance(key, CallbackKey):
        _no_callback_override(job)
        if dag_id is None and run_id is None:
            dag_id, run_id = _callback_ids(job.command)
        return construct_callback_pod(
            callback_id=key.id,
            namespace=namespace,
            scheduler_job_id=scheduler_job_id,
            kube_image=image,
            args=built_args,
            airflow_version=airflow_version,
            base_worker_pod=base_worker_pod,
            dag_id=dag_id,
            run_id=run_id,
            pod_id=pod_id,
            mutation_hook=mutation_hook,
            rng=rng,
        )
    _no_dag_ids(dag_id, run_id, "a task pod's {field} comes from its key")
    return construct_task_pod(
        namespace=namespace,
        scheduler_job_id=scheduler_job_id,
        pod_id=pod_id or create_unique_id(key.dag_id, key.task_id, rng=rng),
        dag_id=key.dag_id,
        task_id=key.task_id,
        kube_image=image,
        try_number=key.try_number,
        args=built_args,
        airflow_version=airflow_version,
        run_id=key.run_id,
        map_index=key.map_index,
        pod_override=job.pod_override,
        base_worker_pod=base_worker_pod,
        mutation_hook=mutation_hook,
        rng=rng,
    )


def check_job(
    job: KubernetesJob[Any],
    *,
    airflow_version: VersionLike | None,
    base_worker_pod: PodTemplate | None = None,
    loads_templates: bool = True,
) -> None:
    """Refuse a job no pod could be built from, whatever its template, naming the field:
    what :meth:`~k8s_workloads.executor.ExecutorCore.submit` checks.

    Raises :class:`InvalidJob` for a task or callback job with no ``airflow_version``
    (:class:`~k8s_workloads.compat.CallbackWorkloadsUnsupported` for a callback before
    Airflow 3.3), a ``command`` of anything but strings, a ``kube_image`` that is not a
    non-empty string, a ``pod_template_file`` that is not a non-empty path or that nothing
    loads (``loads_templates`` False), a ``pod_override`` on a callback job; and
    :func:`check_pod_override`'s :class:`InvalidPod` for the override (prepared over
    ``base_worker_pod`` when given). What only building decides — the template file's
    content, the merge, the pod's identity, the mutation hook — is left to the build.
    """
    key = job.key
    if not isinstance(key, GenericKey):
        _required_airflow(key, airflow_version)
    if not all(type(arg) is str for arg in job.command):
        raise InvalidJob("command", "the container args must all be strings")
    image = job.kube_image
    if image is not None and (type(image) is not str or not image):
        raise InvalidJob("kube_image", f"must be a non-empty image name, got {shown(image)}")
    template_file = job.pod_template_file
    if template_file is not None:
        if type(template_file) is not str or not template_file:
            raise InvalidJob("pod_template_file", f"must be a path, got {shown(template_file)}")
        if not loads_templates:
            raise InvalidJob(
                "pod_template_file",
                f"{shown(template_file)}: no load_template configured to read it",
            )
    if job.pod_override is None:
        return
    if isinstance(key, CallbackKey):
        _no_callback_override(job)
    check_pod_override(job.pod_override, base_worker_pod)


def _required_airflow(
    key: TaskInstanceKey | CallbackKey, airflow_version: VersionLike | None
) -> VersionLike:
    """The version an Airflow job's pod needs: refused where there is none (or, for a
    callback, one before 3.3)."""
    kind = "callback" if isinstance(key, CallbackKey) else "task"
    if airflow_version is None:
        raise InvalidJob(
            "airflow_version",
            f"a {kind} job runs Airflow: ExecutorConfig.airflow_version is not set (only "
            "generic jobs, keyed by GenericKey, run without it)",
        )
    if isinstance(key, CallbackKey):
        require_callback_support(airflow_version)
    return airflow_version


def _no_callback_override(job: KubernetesJob[Any]) -> None:
    if job.pod_override is not None:
        raise InvalidJob(
            "pod_override",
            "callback pods take no pod_override (their pod is the template's, with the "
            "callback's args): set it on the template",
        )


def _no_dag_ids(dag_id: str | None, run_id: str | None, why: str) -> None:
    for field, value in (("dag_id", dag_id), ("run_id", run_id)):
        if value is not None:
            raise ValueError(f"{field}: {why.format(field=field)}")
