"""Between manifests and the ``kubernetes`` client's model objects (``V1Pod``).

The only module of the library that imports ``kubernetes``; nothing else imports it, so
``import k8s_workloads`` never loads the client. It works the same with ``kubernetes``
36.x (the provider's pin: plain generated classes, no validation) and 37.x (pydantic
models that validate), because it never relies on what differs between them:

* :func:`to_manifest` turns a ``V1Pod`` into the camelCase, null-free JSON dict that
  ``ApiClient.sanitize_for_serialization`` gives (datetimes as ``isoformat()`` strings),
  as the provider does before it sends a pod;
* :func:`to_v1pod` builds a ``V1Pod`` from a manifest with the client's own deserializer,
  as the provider's ``PodGenerator.deserialize_model_dict`` does, after checking the
  manifest against the models' ``openapi_types`` itself: fields the model does not know
  are dropped (or, with ``strict=True``, reported), and a value of the wrong type is a
  typed error naming its path on both versions, where 36 alone would quietly coerce it
  (``"false"`` to ``True``) and 37 alone would raise pydantic's error without the path;
* :func:`v1pod_mutation_hook` lets an Airflow-style ``pod_mutation_hook(pod: V1Pod)``
  serve as the manifest hook of :func:`k8s_workloads.pods.construct_task_pod`.

One ``ApiClient`` is made on first use and kept: making one is costly. It gets a fresh
``Configuration``, as the provider's ``deserialize_model_dict`` does, so that neither it
nor the models it builds capture the process-global (in-cluster) configuration, which
cannot be pickled.

What the two versions' schemas hold differs a little (37 adds, for example,
``volumeMounts[].bindMountOptions``, ``emptyDir.mode`` and ``spec.evictionResponders``);
such a field is kept where the installed model knows it and is unknown where it does not.
"""

from __future__ import annotations

import dataclasses
import datetime
import difflib
import functools
import json
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, cast

import kubernetes.client.models
from kubernetes.client import ApiClient, Configuration, V1Pod
from kubernetes.client.exceptions import ApiException

from k8s_workloads import model_readers
from k8s_workloads.pods.manifest import clean_manifest

if TYPE_CHECKING:
    from k8s_workloads.pods.general import MutationHook
    from k8s_workloads.pods.manifest import Manifest

__all__ = [
    "InvalidManifest",
    "NotAModel",
    "NotAPod",
    "to_manifest",
    "to_manifest_object",
    "to_v1pod",
    "v1pod_mutation_hook",
]


class NotAModel(TypeError, ValueError):
    """A value is neither a kubernetes model object nor a manifest mapping."""


class NotAPod(NotAModel):
    """A value is neither a kubernetes ``V1Pod`` nor a pod manifest mapping."""


class InvalidManifest(ValueError):
    """A manifest does not fit the kubernetes model: an unknown field or a wrong value."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        """Where in the manifest, e.g. ``spec.containers[0].imagee`` (``""``: the pod)."""


class _ApiClientCalls(Protocol):
    """The two ``ApiClient`` methods used here, typed.

    kubernetes 37 ships inline types, but leaves these two unannotated, so mypy --strict
    reports every call to them (no-untyped-call); 36 has no types at all. The client is
    cast to this protocol once, where it is made, instead of silencing each call.
    """

    def sanitize_for_serialization(self, obj: object) -> object: ...

    # ApiClient.__deserialize_model, private and name-mangled: the only entry point that
    # builds a model from a dict on both versions (the provider uses it too; see
    # https://github.com/kubernetes-client/python/issues/977).
    def _ApiClient__deserialize_model(self, data: object, klass: object) -> object: ...  # noqa: N802


@functools.cache
def _api_client() -> _ApiClientCalls:
    return cast("_ApiClientCalls", ApiClient(configuration=Configuration()))


def _is_model(obj: object) -> bool:
    module = type(obj).__module__
    return module.startswith("kubernetes.client.models.") and hasattr(obj, "openapi_types")


def _serialize(obj: object) -> Manifest:
    # sanitize_for_serialization already drops None model fields; clean_manifest also
    # drops None dict entries (36 keeps them) and turns tuples into lists.
    manifest: Manifest = clean_manifest(_api_client().sanitize_for_serialization(obj))
    return manifest


def to_manifest(pod: V1Pod | Mapping[str, Any]) -> Manifest:
    """A pod as a manifest: a new camelCase dict without nulls.

    A ``V1Pod`` gives what ``ApiClient.sanitize_for_serialization`` gives (datetimes as
    ISO 8601 strings); a mapping gives a cleaned deep copy
    (:func:`k8s_workloads.pods.manifest.clean_manifest`). Raises :class:`NotAPod` for
    anything else (other kubernetes objects: :func:`to_manifest_object`), and
    :class:`~k8s_workloads.pods.reconcile.PodReconciliationError` for a value that is not JSON.
    """
    if isinstance(pod, V1Pod):
        return _serialize(pod)
    if isinstance(pod, Mapping):
        manifest: Manifest = clean_manifest(pod)
        return manifest
    raise _not_a_pod(pod)


def _not_a_pod(pod: object) -> NotAPod:
    hint = " (use to_manifest_object for other kubernetes objects)" if _is_model(pod) else ""
    return NotAPod(f"expected a V1Pod or a manifest mapping, got {type(pod).__name__}{hint}")


def to_manifest_object(obj: object) -> Manifest:
    """Any kubernetes model object (``V1Container``, ``V1Toleration``, ...) as a manifest.

    As :func:`to_manifest`, for every model class; a mapping gives a cleaned deep copy.
    Raises :class:`NotAModel` for anything else.
    """
    if _is_model(obj):
        return _serialize(obj)
    if isinstance(obj, Mapping):
        manifest: Manifest = clean_manifest(obj)
        return manifest
    raise NotAModel(f"expected a kubernetes model object or a mapping, got {type(obj).__name__}")


model_readers.register("kubernetes", to_manifest_object)  # how the core reads a V1Pod it is given


# --- checking a manifest against the models' openapi_types --------------------------------


@dataclasses.dataclass(frozen=True)
class _Mode:
    strict: bool
    """Refuse unknown fields and numbers for strings, rather than drop and convert them."""
    python_names: bool = False
    """Take Python attribute names (``run_as_user``) for JSON keys (``runAsUser``)."""


_LENIENT = _Mode(strict=False)
_STRICT = _Mode(strict=True)
# What a V1Pod hook produced: on 37 a dict assigned to a model field is validated and its
# Python names taken; on 36 it is kept verbatim. Checking the result this way makes both
# versions accept and refuse the same hooks.
_HOOK_OUTPUT = _Mode(strict=True, python_names=True)


@dataclasses.dataclass(frozen=True)
class _Type:
    """A parsed ``openapi_types`` entry: a model, ``list[item]``, ``dict[str, item]`` or a leaf."""

    kind: str
    model: type[Any] | None = None
    item: _Type | None = None


# 36 writes list[X] and dict[str, X], 37 List[X] and Dict[str, X].
_LIST_TYPE = re.compile(r"list\[(?P<item>.+)\]", re.IGNORECASE)
_DICT_TYPE = re.compile(r"dict\[\s*str\s*,\s*(?P<item>.+)\]", re.IGNORECASE)
_OPTIONAL_TYPE = re.compile(r"Optional\[(?P<item>.+)\]")
_LEAVES = frozenset({"str", "int", "float", "bool", "datetime", "date", "object", "json"})


@functools.cache
def _parse_type(name: str) -> _Type:
    name = name.strip()
    if match := _OPTIONAL_TYPE.fullmatch(name):
        return _parse_type(match["item"])
    if match := _LIST_TYPE.fullmatch(name):
        return _Type("list", item=_parse_type(match["item"]))
    if match := _DICT_TYPE.fullmatch(name):
        return _Type("dict", item=_parse_type(match["item"]))
    if name in _LEAVES:
        return _Type(name)
    model = getattr(kubernetes.client.models, name, None)
    if isinstance(model, type) and hasattr(model, "openapi_types"):
        return _Type("model", model=model)
    return _Type("json")  # a type this module does not know: any JSON value


_FIELDS: dict[type[Any], dict[str, str]] = {}


def _fields(model: type[Any]) -> dict[str, str]:
    """JSON key -> openapi type, e.g. ``imagePullPolicy`` -> ``str``."""
    fields = _FIELDS.get(model)
    if fields is None:
        fields = {model.attribute_map[attr]: kind for attr, kind in model.openapi_types.items()}
        _FIELDS[model] = fields
    return fields


def _json_key(model: type[Any], name: str) -> str | None:
    """The JSON key of a Python attribute name (``image_pull_policy``), if it is one."""
    key = model.attribute_map.get(name)
    return key if isinstance(key, str) else None


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _join(path: str, key: str) -> str:
    if _PLAIN_KEY.fullmatch(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"


_JSON_SCALARS = {bool: "boolean", int: "integer", float: "number", str: "string"}


def _got(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "an array"
    kind = _JSON_SCALARS.get(type(value))
    if kind is None:
        return type(value).__name__
    shown = repr(value)
    return f"{kind} {shown}" if len(shown) <= 40 else kind


# RFC 3339 as the API server writes it (seconds, or microseconds for MicroTime); the zone
# may be left out, which both clients accept and keep naive.
_DATETIME = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})T(?P<h>\d{2}):(?P<m>\d{2}):(?P<s>\d{2})(?:\.\d{1,6})?"
    r"(?:Z|[+-]\d{2}:\d{2})?"
)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _is_date(text: str) -> bool:
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _is_datetime(text: str) -> bool:
    match = _DATETIME.fullmatch(text)
    return (
        match is not None
        and _is_date(match["date"])
        and int(match["h"]) < 24
        and int(match["m"]) < 60
        and int(match["s"]) < 60
    )


def _check_json(value: object, path: str) -> object:
    if isinstance(value, Mapping):
        copied: Manifest = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidManifest(path, f"keys must be strings, got {key!r}")
            if item is not None:
                copied[key] = _check_json(item, _join(path, key))
        return copied
    if isinstance(value, (list, tuple)):
        return [_check_json(item, f"{path}[{index}]") for index, item in enumerate(value)]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise InvalidManifest(path, f"{type(value).__name__} is not a JSON value")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# leaf type -> (what it must be, test)
_LEAF_CHECKS: dict[str, tuple[str, Callable[[object], bool]]] = {
    "str": ("a string", lambda value: isinstance(value, str)),
    "int": ("an integer", _is_int),
    "float": ("a number", _is_number),
    "bool": ("a boolean", lambda value: isinstance(value, bool)),
    "datetime": (
        "an RFC 3339 date-time string",
        lambda value: isinstance(value, str) and _is_datetime(value),
    ),
    "date": (
        "a date string (YYYY-MM-DD)",
        lambda value: (
            isinstance(value, str) and _DATE.fullmatch(value) is not None and _is_date(value)
        ),
    ),
    # "object" is, in a pod, an IntOrString (probe ports) or free JSON (managedFields'
    # fieldsV1): 37 refuses other scalars for the ports, where 36 would keep them.
    "object": (
        "an integer, a string, or a JSON object or array",
        lambda value: isinstance(value, (Mapping, list, tuple, str)) or _is_int(value),
    ),
    "json": ("a JSON value", lambda _value: True),
}


def _check_leaf(value: object, kind: str, path: str, mode: _Mode) -> object:
    expected, fits = _LEAF_CHECKS[kind]
    if fits(value):
        return _check_json(value, path) if kind in {"object", "json"} else value
    # The provider, on kubernetes 36, reads `cpu: 1` in a YAML template as "1"; 37 refuses
    # it. Lenient mode gives 36's result on both versions, strict mode refuses on both.
    if kind == "str" and not mode.strict and _is_number(value):
        return str(value)
    raise InvalidManifest(path, f"expected {expected}, got {_got(value)}")


def _unknown_field(model: type[Any], key: str, path: str) -> InvalidManifest:
    known = _fields(model)
    suggestion = _json_key(model, key)
    if suggestion is None:
        close = difflib.get_close_matches(key, list(known), n=1)
        suggestion = close[0] if close else None
    hint = f"; did you mean {suggestion!r}?" if suggestion else ""
    return InvalidManifest(path, f"unknown field: {model.__name__} has no {key!r}{hint}")


def _check_model(value: object, model: type[Any], path: str, mode: _Mode) -> Manifest:
    if not isinstance(value, Mapping):
        raise InvalidManifest(path, f"expected an object ({model.__name__}), got {_got(value)}")
    fields = _fields(model)
    checked: Manifest = {}
    for name, item in value.items():
        if not isinstance(name, str):
            raise InvalidManifest(path, f"keys must be strings, got {name!r}")
        key = name
        if key not in fields and mode.python_names:
            key = _json_key(model, name) or name
            if key in value:
                raise InvalidManifest(_join(path, name), f"given twice, also as {key!r}")
        field_type = fields.get(key)
        if field_type is None:
            if mode.strict:
                raise _unknown_field(model, name, _join(path, name))
            continue  # as the client's deserializer does: a field it does not know is dropped
        if item is not None:  # a null is an absent field
            checked[key] = _check(item, _parse_type(field_type), _join(path, key), mode)
    return checked


def _check(value: object, expected: _Type, path: str, mode: _Mode) -> object:
    """A copy of ``value`` that fits ``expected``, or InvalidManifest naming where it does not."""
    if expected.model is not None:
        return _check_model(value, expected.model, path, mode)
    if expected.item is not None and expected.kind == "list":
        if not isinstance(value, (list, tuple)):
            raise InvalidManifest(path, f"expected an array, got {_got(value)}")
        item_type = expected.item
        return [
            _check(item, item_type, f"{path}[{index}]", mode) for index, item in enumerate(value)
        ]
    if expected.item is not None and expected.kind == "dict":
        if not isinstance(value, Mapping):
            raise InvalidManifest(path, f"expected an object, got {_got(value)}")
        item_type = expected.item
        checked: Manifest = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidManifest(path, f"keys must be strings, got {key!r}")
            if item is not None:
                checked[key] = _check(item, item_type, _join(path, key), mode)
        return checked
    return _check_leaf(value, expected.kind, path, mode)


# --- building models -----------------------------------------------------------------------

# 36's models raise ValueError from their setters ("Invalid value for `name`, must not be
# `None`"), 37's pydantic.ValidationError (a ValueError); both raise ApiException for a
# value their parsers refuse.
_BUILD_ERRORS = (ValueError, TypeError, ApiException)
_SETTER_ERROR = re.compile(r"Invalid value for `(?P<attr>\w+)`")


def _build(data: Manifest, model: type[Any]) -> object:
    return _api_client()._ApiClient__deserialize_model(data, model)  # noqa: SLF001 - see _ApiClientCalls


def _first_failure(
    value: object, expected: _Type, path: str
) -> tuple[str, Manifest, type[Any], Exception] | None:
    """The innermost model in checked ``value`` the client cannot build, with its error."""
    if expected.item is not None:
        items = (
            [(f"{path}[{index}]", item) for index, item in enumerate(cast("list[object]", value))]
            if expected.kind == "list"
            else [(_join(path, k), v) for k, v in cast("Manifest", value).items()]
        )
        for item_path, item in items:
            failure = _first_failure(item, expected.item, item_path)
            if failure is not None:
                return failure
        return None
    if expected.model is None:
        return None
    data = cast("Manifest", value)
    fields = _fields(expected.model)
    for key, item in data.items():
        failure = _first_failure(item, _parse_type(fields[key]), _join(path, key))
        if failure is not None:
            return failure
    try:
        _build(data, expected.model)
    except _BUILD_ERRORS as error:
        return path, data, expected.model, error
    return None


def _build_error(path: str, data: Manifest, model: type[Any], error: Exception) -> InvalidManifest:
    # Name the field from either client's error: pydantic's first location, or the
    # attribute in 36's setter message; a field that is absent is a missing required one.
    key: str | None = None
    message = str(error).splitlines()[0] if str(error) else type(error).__name__
    errors = getattr(error, "errors", None)
    if callable(errors):
        first = errors()[0]
        location, message = first.get("loc", ()), str(first.get("msg", message))
        key = location[0] if location and isinstance(location[0], str) else None
    elif match := _SETTER_ERROR.match(message):
        key = match["attr"]
    if key is not None:
        key = _json_key(model, key) or key
        if key not in data:
            return InvalidManifest(_join(path, key), f"{model.__name__} requires this field")
        return InvalidManifest(_join(path, key), message)
    return InvalidManifest(path, f"not a valid {model.__name__}: {message}")


def to_v1pod(manifest: Mapping[str, Any], *, strict: bool = False) -> V1Pod:
    """A ``V1Pod`` built from a manifest with the client's deserializer, as the provider does.

    Fields the model does not know (typos, snake_case names, fields of a newer Kubernetes)
    are dropped, as by the provider's ``PodGenerator.deserialize_model_dict``; with
    ``strict=True`` the first is an :class:`InvalidManifest` naming its path, e.g.
    ``spec.containers[0].imagee``. In both modes a value of the wrong type, or a missing
    required field, is an :class:`InvalidManifest` naming its path; only lenient mode takes
    a number where a string belongs (``cpu: 1``), as ``"1"``. A null is an absent field.
    Raises :class:`NotAPod` for something that is not a mapping.
    """
    if not isinstance(manifest, Mapping):
        raise NotAPod(f"expected a manifest mapping, got {type(manifest).__name__}")
    pod_type = _parse_type("V1Pod")
    data = _check_model(manifest, V1Pod, "", _STRICT if strict else _LENIENT)
    try:
        pod = _build(data, V1Pod)
    except _BUILD_ERRORS as error:
        failure = _first_failure(data, pod_type, "") or ("", data, V1Pod, error)
        raise _build_error(*failure) from error
    if not isinstance(pod, V1Pod):  # pragma: no cover - the deserializer returns its class
        raise TypeError(f"the kubernetes client returned {type(pod).__name__}, not V1Pod")
    return pod


def v1pod_mutation_hook(hook: Callable[[V1Pod], object], *, strict: bool = False) -> MutationHook:
    """An Airflow-style ``pod_mutation_hook(pod: V1Pod)`` as a manifest mutation hook.

    For :func:`k8s_workloads.pods.construct_task_pod` and ``construct_callback_pod``: the
    manifest becomes a ``V1Pod`` (:func:`to_v1pod`, ``strict`` as given), ``hook`` mutates
    it in place (what it returns is ignored, as Airflow ignores it), and the pod becomes a
    new manifest again (:func:`to_manifest`). That manifest is checked strictly, so that a
    hook which puts a plain dict with an unknown key or a wrongly typed value into the pod
    fails on 36 as on 37 (where the model refuses it at assignment); the construct function
    reports any failure as ``PodMutationHookError``.
    """

    def manifest_hook(manifest: Manifest) -> Manifest:
        pod = to_v1pod(manifest, strict=strict)
        hook(pod)
        return _check_model(to_manifest(pod), V1Pod, "", _HOOK_OUTPUT)

    return manifest_hook
