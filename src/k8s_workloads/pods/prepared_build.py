"""The prepared path: a template's merge worked out once, each pod filling in its values.

See the comment below for how a plan is made. :func:`fast_path` switches the prepared path
off (and counts the pods it built), so tests and benchmarks can hold it against the
general build of :mod:`k8s_workloads.pods.general_build`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeAlias, TypeVar, cast

import attrs
import msgspec

from k8s_workloads.compat import AirflowVersion
from k8s_workloads.json_values import as_map
from k8s_workloads.pods.errors import InvalidPod, _masked
from k8s_workloads.pods.general_build import (
    MutationHook,
    _dynamic_layer,
    _finish,
    _hooked,
    _incomplete,
    _Layer,
    _merged,
    _override_image,
    _OwnValues,
    _TaskPodValues,
    _violations,
)
from k8s_workloads.pods.identity import (
    _TASK_ANNOTATION_KEY_CHARS,
    _TASK_IDENTITY_ANNOTATIONS,
    _TASK_IDENTITY_LABELS,
    _Identity,
    _task_annotations,
    _task_identity,
)
from k8s_workloads.pods.labels import (
    _safe_label_of_str,
    _task_labels,
    _version_label_of_str,
    datetime_to_label_safe_datestring,
)
from k8s_workloads.pods.manifest import Manifest, PodReconciliationError, clean_manifest
from k8s_workloads.pods.schema import (
    is_pod_schema_valid,
)
from k8s_workloads.pods.validation import (
    _DNS1123_SUBDOMAIN,
    TOTAL_ANNOTATION_SIZE_LIMIT_BYTES,
    is_dns1123_label,
    is_label_value,
    is_valid_manifest,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence


_T = TypeVar("_T")


# --- prepared layers: the merge worked out once per template and override ----------------
#
# The executor's own layer always has the same shape (a name, a namespace, labels,
# annotations and one ``base`` container with args, env and maybe an image); only its
# values change from pod to pod. So the merge chain template -> dynamic -> override is run
# once, on a probe layer whose values are unique marker objects. The plan keeps that pod
# encoded (msgpack) and the places where the markers landed: a pod is the plan decoded,
# which is a new tree of dicts and lists each time, with this pod's values put in those
# places. Labels and annotations are the merge's unions, ``{**template's, **the pod's,
# **override's}``, exactly what the two merge steps give. Nothing in a pod is shared with
# another pod, the template, or the caller's inputs. (The plan was once Python source
# compiled per pair: as fast, but a third path to read, invisible in a traceback.)
#
# The probe pod is checked against the schema and the naming rules once: a pod of the
# same shape, with values of the same types, passes the schema whenever the probe does,
# and of the naming rules only those on the values that change are checked per pod
# (name, namespace, labels, annotations, and that their strings encode as UTF-8).
# The plan is only for probe values that are all truthy (the merge keeps a template's
# value over a falsy one): an empty args list, image or name takes the general build.


@dataclasses.dataclass
class FastPathUse:
    """How many pods the prepared path built inside a :func:`fast_path` block."""

    planned_pods: int = 0
    """Pods built from a plan by :meth:`_Prepared.build` (callback pods, and task pods the
    fast task path handed on)."""
    fast_task_pods: int = 0
    """Task pods the fast task path built (with only their own values checked)."""


class _Switch:
    """What :func:`fast_path` sets: one state for the whole process."""

    enabled: ClassVar[bool] = True
    uses: ClassVar[tuple[FastPathUse, ...]] = ()


@contextlib.contextmanager
def fast_path(*, enabled: bool = True) -> Iterator[FastPathUse]:
    """Switch the prepared path on or off inside a ``with`` block, and count its pods.

    The prepared path (plans, and the fast task path) is on by default. Inside
    ``with fast_path(enabled=False):`` every pod takes the general build (the merge chain
    and every check, :mod:`k8s_workloads.pods.general_build`): the same pods and the same errors,
    only slower; that is what the tests hold the prepared path against. The
    :class:`FastPathUse` yielded counts the pods the prepared path built in the block.
    The switch is process-wide (every thread's builds see it) and the previous state comes
    back when the block ends: it is for tests and benchmarks, not for production use.
    """
    use = FastPathUse()
    was = _Switch.enabled, _Switch.uses
    _Switch.enabled = enabled
    _Switch.uses = (*was[1], use)
    try:
        yield use
    finally:
        _Switch.enabled, _Switch.uses = was


_PLAN_AFTER_USES = 2
"""A layer pair is planned on its second pod: a one-off override is merged directly."""
_CACHED_TEMPLATES = 16
_CACHED_OVERRIDES = 64
_PLAN_PARAMETERS = ("namespace", "name", "annotations", "labels", "args", "image")
"""The pod's own values (the fields of ``_OwnValues``) in the order :meth:`_Plan.pod` puts
them in its ``values``: a slot names its value by its place here."""
_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder().decode
_NOT_PLANNED = (TypeError, ValueError, OverflowError, RecursionError, MemoryError)

_Slot: TypeAlias = "tuple[tuple[str | int, ...], str | int, int]"
"""Where one of a pod's values goes: the path to a dict or list, the key or index in it,
and the value's place in :data:`_PLAN_PARAMETERS`."""


@dataclasses.dataclass(frozen=True)
class _Plan:
    encoded: bytes
    """The merged probe pod, msgpack-encoded: each decoding is a new tree."""
    slots: tuple[_Slot, ...]
    """Where the probe's values landed, so where each pod's own go."""
    template_labels: Mapping[str, str]
    override_labels: Mapping[str, str]
    template_annotations: Mapping[str, str]
    override_annotations: Mapping[str, str]
    layer_label_keys: frozenset[str]
    layer_annotation_keys: frozenset[str]
    layer_annotation_chars: int
    """The characters of the layers' annotation keys and values, an upper bound of what
    they add to a pod's annotations."""
    keeps_task_identity: bool
    """No layer sets a label or annotation a task pod's identity holds or must not hold."""

    def pod(self, own: _OwnValues, *, fresh: bool) -> Manifest:
        """The planned pod of the pod's own values (the pod holds them, not copies), the
        layers' labels and annotations joined to its own. ``fresh``: the two dicts are the
        caller's to give away (nothing else holds them), so the pod may hold them when no
        layer adds to them."""
        annotations, labels = own.annotations, own.labels
        if not fresh or self.template_annotations or self.override_annotations:
            annotations = {**self.template_annotations, **annotations, **self.override_annotations}
        if not fresh or self.template_labels or self.override_labels:
            labels = {**self.template_labels, **labels, **self.override_labels}
        pod: Manifest = _decode(self.encoded)
        # In the order of _PLAN_PARAMETERS.
        values = (own.namespace, own.name, annotations, labels, list(own.args), own.image)
        for path, key, parameter in self.slots:
            parent: Any = pod
            for step in path:
                parent = parent[step]
            parent[key] = values[parameter]
        return pod


def _find_slots(
    value: object, slots: Mapping[int, int], path: tuple[str | int, ...], out: list[_Slot]
) -> bool:
    """Record in ``out`` where the probe's values sit in ``value``; False if ``value``
    holds anything a msgpack round trip would not give back as it is (a tuple, a str
    subclass, a key that is not a str, a NaN ...): such a pair takes the general build."""
    if type(value) is dict:
        mapping = cast("dict[object, object]", value)
        if not all(type(key) is str for key in mapping):
            return False
        items: Iterable[tuple[object, object]] = mapping.items()
    elif type(value) is list:
        items = enumerate(cast("list[object]", value))
    else:
        return (
            value is None
            or type(value) in _PLAIN
            or (type(value) is float and math.isfinite(value))
        )
    for key, item in items:
        step = cast("str | int", key)
        slot = slots.get(id(item))
        if slot is not None:
            out.append((path, step, slot))
        elif not _find_slots(item, slots, (*path, step), out):
            return False
    return True


_PLAIN = frozenset((str, bool, int))


def _marker(what: str) -> str:
    # A new string object (made at run time, never interned), found again by identity.
    return f"\x00k8s-workloads-probe-{what}"


def _labels_of(layer: _Layer | None, field: str) -> dict[str, str]:
    manifest = {} if layer is None else layer.manifest
    return cast("dict[str, str]", dict(as_map(as_map(manifest.get("metadata")).get(field))))


def _make_plan(template: _Layer, override: _Layer | None, *, image: bool) -> _Plan | None:
    """The plan of this layer pair, or None where the general build must run."""
    probe_image = _marker("image") if image else None
    probe = {
        "namespace": _marker("namespace"),
        "name": _marker("name"),
        "annotations": {_marker("annotation"): "v"},
        "labels": {_marker("label"): "v"},
        "args": [_marker("args")],
    }
    dynamic = _dynamic_layer(_OwnValues(**probe, image=probe_image))  # type: ignore[arg-type]
    try:
        merged = _merged(template, dynamic, override)
    except (TypeError, ValueError, KeyError, AttributeError):  # the general build reports it
        return None
    plan_maps = {
        field: (_labels_of(template, field), _labels_of(override, field))
        for field in ("labels", "annotations")
    }
    metadata = as_map(merged.get("metadata"))
    slots = {id(value): _PLAN_PARAMETERS.index(name) for name, value in probe.items()}
    if probe_image is not None:
        slots[id(probe_image)] = _PLAN_PARAMETERS.index("image")
    for field, (base, client) in plan_maps.items():
        found = metadata.get(field)
        expected = {**base, **probe[field], **client}  # type: ignore[dict-item]
        if type(found) is not dict or list(found.items()) != list(expected.items()):
            return None
        slots[id(found)] = _PLAN_PARAMETERS.index(field)
    found_slots: list[_Slot] = []
    try:
        if not _find_slots(merged, slots, (), found_slots):
            return None
        encoded = _encode(merged)
    except _NOT_PLANNED:
        return None
    layer_label_keys = frozenset(plan_maps["labels"][0]) | frozenset(plan_maps["labels"][1])
    layer_annotation_keys = frozenset(plan_maps["annotations"][0]) | frozenset(
        plan_maps["annotations"][1]
    )
    plan = _Plan(
        encoded,
        tuple(found_slots),
        template_labels=plan_maps["labels"][0],
        override_labels=plan_maps["labels"][1],
        template_annotations=plan_maps["annotations"][0],
        override_annotations=plan_maps["annotations"][1],
        layer_label_keys=layer_label_keys,
        layer_annotation_keys=layer_annotation_keys,
        layer_annotation_chars=sum(
            len(key) + len(value)
            for annotations in plan_maps["annotations"]
            for key, value in annotations.items()
        ),
        keeps_task_identity=layer_label_keys.isdisjoint(_TASK_IDENTITY_LABELS)
        and layer_annotation_keys.isdisjoint(_TASK_IDENTITY_ANNOTATIONS),
    )
    sample_image = "image" if image else None
    sample = plan.pod(_OwnValues("default", "pod", {}, {}, ["true"], sample_image), fresh=False)
    incomplete = _incomplete(template, override)
    if not is_valid_manifest(sample) or (incomplete and not is_pod_schema_valid(sample)):
        return None  # every pod of this pair would be refused: the general build says why
    return plan


def _private(layer: _Layer) -> _Layer:
    return _Layer(clean_manifest(layer.manifest), layer.complete)


class _Prepared:
    """A template and maybe an override, checked, with their plans made on demand."""

    def __init__(self, template: _Layer, override: _Layer | None) -> None:
        self.template = template
        self.override = override
        self.override_image = None if override is None else _override_image(override.manifest)
        self._uses = 0
        self._plans: dict[bool, _Plan | None] = {}

    def plan(self, *, image: bool) -> _Plan | None:
        plan = self._plans.get(image, _UNPLANNED)
        if plan is not _UNPLANNED:
            return plan  # type: ignore[return-value]
        self._uses += 1
        if self._uses < _PLAN_AFTER_USES:
            return None
        made = _make_plan(self.template, self.override, image=image)
        self._plans[image] = made
        return made

    def build(
        self,
        own: _OwnValues,
        *,
        hook: MutationHook | None,
        identity: _Identity,
        secrets: Sequence[object],
    ) -> Manifest:
        plan = (
            self.plan(image=own.image is not None)
            if _Switch.enabled
            and own.namespace
            and own.name
            and own.args
            and own.labels
            and own.annotations
            and own.image != ""
            else None
        )
        if plan is None:
            # The layers are kept for many pods: the merge shares their values, so each
            # pod merges its own copies.
            copies = attrs.evolve(
                own, annotations=dict(own.annotations), labels=dict(own.labels), args=list(own.args)
            )
            return _finish(
                _private(self.template),
                _dynamic_layer(copies),
                None if self.override is None else _private(self.override),
                hook=hook,
                identity=identity,
                secrets=secrets,
            )
        for use in _Switch.uses:
            use.planned_pods += 1
        merged = plan.pod(own, fresh=False)
        if not identity.kept_by(
            layer_annotations=plan.layer_annotation_keys,
            layer_labels=plan.layer_label_keys,
            annotations=own.annotations,
            labels=own.labels,
        ):
            identity.check(
                merged, stage="the template or pod_override", error=PodReconciliationError
            )
        strings = (own.namespace, own.name, own.image, own.args, own.labels, own.annotations)
        if not is_valid_manifest(merged, strings_of=strings, containers=False):
            violations = _violations(merged, whole=_incomplete(self.template, self.override))
            source = "the API server would refuse the pod"
            raise InvalidPod(source, _masked(violations, [merged, *secrets]))
        return _hooked(merged, hook, identity, secrets)


_UNPLANNED = object()
_content = msgspec.msgpack.Encoder().encode
_snapshot = msgspec.msgpack.Decoder().decode
_NOT_ENCODABLE = (TypeError, ValueError, OverflowError, RecursionError, msgspec.MsgspecError)


class _ByContent(Generic[_T]):
    """A small bounded cache of values made from a manifest, found by its content.

    The key is the manifest's msgpack encoding (which tells ``True`` from ``1`` and
    ``1.0``, and string keys from others), and a hit also needs the manifest to equal the
    plain copy kept (a tuple, a set or a NaN is never equal to it): so a value whose
    build could differ from the cached one is never served from it. Manifests msgpack
    cannot encode are not cached.
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: OrderedDict[bytes, tuple[object, _T]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, manifest: object, make: Callable[[], _T]) -> _T:
        try:
            key = _content(manifest)
        except _NOT_ENCODABLE:
            return make()
        entry = self._entries.get(key)
        if entry is not None and entry[0] == manifest:
            return entry[1]
        made = make()  # raises for a refused manifest, which is not cached
        snapshot = _snapshot(key)
        if snapshot == manifest:
            with self._lock:
                self._entries[key] = (snapshot, made)
                while len(self._entries) > self._size:
                    self._entries.popitem(last=False)
        return made


_is_namespace = functools.lru_cache(maxsize=16)(is_dns1123_label)
"""A scheduler builds its pods in one namespace or a few: checked once each. Called with
exact ``str`` values only."""


_ARGS_TYPES = (list, tuple)
_VERSION_TYPES = (str, AirflowVersion)
_STR_TYPE = frozenset((str,))
_JOB_ID_TYPES = (str, int)


def _fast_task_pod(
    prepared: _Prepared, task: _TaskPodValues, secrets: Sequence[object]
) -> Manifest | _Prepared:
    """A planned task pod with only the checks its own values need, else ``prepared``.

    Called for values of exact types that pass the key and argument checks. The pod is
    the one :meth:`_Prepared.build` makes from the same values; what that build checks on
    the finished pod holds here by construction or by a check of the value itself:

    * the labels are valid: the layers' were checked with the plan, and the pod's own are
      :func:`make_safe_label_value`'s, a number's digits, ``True``, or a date label
      checked here; every key is a constant or the plan's;
    * the annotations' keys are constants or the plan's, their values strings, and their
      size is bounded by the characters of both (else: general path);
    * the identity is kept: no layer sets a key an identity holds or forbids
      (:attr:`_Plan.keeps_task_identity`), and the pod's own carry exactly the identity;
    * every string of the pod's own values is ASCII, so encodes (else: general path);
    * the name and namespace are checked here.

    Anything else (no plan yet, a name or namespace the rules refuse, a non-ASCII value,
    huge annotations) returns ``prepared`` and the general path builds, checks and
    reports as it always does.
    """
    image = prepared.override_image or task.kube_image
    plan = prepared._plans.get(image is not None)  # noqa: SLF001 - planned by build only
    # The label is made from the version's text, as airflow_version_label makes it.
    version = task.airflow_version
    if type(version) is not str:
        version = str(version)
    dag_id, task_id, run_id, args = task.dag_id, task.task_id, task.run_id, task.args
    if (
        plan is None
        or type(version) is not str
        or not plan.keeps_task_identity
        or not args
        or image == ""
        or _DNS1123_SUBDOMAIN.fullmatch(task.pod_id) is None  # at most 63 long (the caller's)
        or not _is_namespace(task.namespace)
        or not "".join(args).isascii()
        or not (image is None or image.isascii())
        or not (dag_id.isascii() and task_id.isascii())
        or not (run_id is None or run_id.isascii())
    ):
        return prepared
    try_text = str(task.try_number)
    iso = date_label = None
    date = task.date
    if date:
        iso = date.isoformat()
        date_label = datetime_to_label_safe_datestring(date)
        if not (type(iso) is str and iso.isascii() and is_label_value(date_label)):
            return prepared
    map_index, logical_date_key = task.map_index, task.logical_date_key
    annotations = _task_annotations(
        dag_id, task_id, try_text, map_index, iso, run_id, logical_date_key
    )
    labels = _task_labels(
        dag_id=dag_id,
        task_id=task_id,
        try_number=try_text,
        version=_version_label_of_str(version),
        worker=str(task.scheduler_job_id),
        map_index=map_index,
        date_label=date_label,
        run_id=run_id,
        logical_date_key=logical_date_key,
        safe=_safe_label_of_str,
    )
    own_characters = sum(map(len, annotations.values())) + _TASK_ANNOTATION_KEY_CHARS
    if (own_characters + plan.layer_annotation_chars) * 4 > TOTAL_ANNOTATION_SIZE_LIMIT_BYTES:
        return prepared
    for use in _Switch.uses:
        use.fast_task_pods += 1
    own = _OwnValues(task.namespace, task.pod_id, annotations, labels, args, image)
    if task.mutation_hook is None:  # the two dicts are this call's own: the pod may hold them
        return plan.pod(own, fresh=True)
    identity = _task_identity(annotations, labels, map_index=map_index, run_id=run_id, date=date)
    merged = plan.pod(own, fresh=False)
    return _hooked(merged, task.mutation_hook, identity, secrets)
