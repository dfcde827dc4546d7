"""The Kubernetes naming and size rules the API server enforces, as plain functions.

Schema validators (``kubernetes-validate``, kubeconform) check types only: a pod named
``Bad_Name!`` with a 100-character label value passes them. These are the rules from
``k8s.io/apimachinery/pkg/util/validation/validation.go`` and
``pkg/api/validation/objectmeta.go`` that they miss.

Each ``*_errors`` function returns the violations it finds (empty when the value is
valid); each violation is a typed :class:`NamingRuleViolation` that names the field.
The ``is_*`` predicates are the fast boolean forms used on hot paths.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import TypeAlias, cast

import attrs

from k8s_workloads.display import SHOWN_LENGTH, path_part, shown
from k8s_workloads.errors import FieldError
from k8s_workloads.json_values import as_list, as_map

__all__ = [
    "DNS1123_LABEL_MAX_LENGTH",
    "DNS1123_SUBDOMAIN_MAX_LENGTH",
    "LABEL_VALUE_MAX_LENGTH",
    "POD_NAME_MAX_LENGTH",
    "TOTAL_ANNOTATION_SIZE_LIMIT_BYTES",
    "AnnotationsTooLarge",
    "DuplicateContainerName",
    "InvalidAnnotationKey",
    "InvalidDNS1123Label",
    "InvalidDNS1123Subdomain",
    "InvalidLabelKey",
    "InvalidLabelValue",
    "InvalidPodName",
    "NamingRuleViolation",
    "UnencodableString",
    "annotation_errors",
    "container_name_errors",
    "dns1123_label_errors",
    "dns1123_subdomain_errors",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_label_value",
    "is_valid_manifest",
    "label_errors",
    "label_key_errors",
    "label_value_errors",
    "pod_name_errors",
    "validate_manifest",
]

DNS1123_LABEL_MAX_LENGTH = 63
"""``validation.DNS1123LabelMaxLength``."""
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
"""``validation.DNS1123SubdomainMaxLength``."""
LABEL_VALUE_MAX_LENGTH = 63
"""``validation.LabelValueMaxLength``; also the limit of a label key's name part."""
POD_NAME_MAX_LENGTH = 63
"""Pod names may be 253 long, but the kubelet cuts the hostname to 63 and Airflow looks
pods up by it (apache/airflow#10292, #28237), so executor pods stay within 63."""
TOTAL_ANNOTATION_SIZE_LIMIT_BYTES = 256 * 1024
"""``TotalAnnotationSizeLimitB``: sum of key and value lengths in UTF-8 bytes."""

# validation.go: dns1123LabelFmt.
_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
# validation.go: dns1123SubdomainFmt (labels joined by dots).
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
# validation.go: qualifiedNameFmt, the name part of a label or annotation key.
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
# validation.go: labelValueFmt, (([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?, checked as
# "allowed characters only" plus "alphanumeric at both ends": the same language without
# the backtracking that makes the one-regex form slow to reject a long invalid value.
_LABEL_VALUE_CHARS = re.compile(r"[-A-Za-z0-9_.]+")
_NOT_ALNUM_ENDS = frozenset("-_.")


class NamingRuleViolation(FieldError):
    """A name, label or annotation breaks a Kubernetes validation rule; ``field`` is
    where the bad value sits, e.g. ``metadata.labels['dag_id']``."""


class InvalidDNS1123Label(NamingRuleViolation):
    """Not a DNS-1123 label (lower-case alphanumerics and '-', at most 63)."""


class InvalidDNS1123Subdomain(NamingRuleViolation):
    """Not a DNS-1123 subdomain (dot-separated DNS-1123 labels, at most 253)."""


class InvalidPodName(NamingRuleViolation):
    """Not a usable executor pod name (DNS-1123 subdomain of at most 63 characters)."""


class InvalidLabelKey(NamingRuleViolation):
    """Not a label key ([prefix/]name)."""


class InvalidLabelValue(NamingRuleViolation):
    """Not a label value (at most 63; alphanumerics at both ends, '-_.' between)."""


class InvalidAnnotationKey(NamingRuleViolation):
    """Not an annotation key (a label key once lower-cased)."""


class AnnotationsTooLarge(NamingRuleViolation):
    """Annotations exceed 256 KiB in total (keys plus values, UTF-8 bytes)."""


class DuplicateContainerName(NamingRuleViolation):
    """Two containers of one pod share a name."""


class UnencodableString(NamingRuleViolation):
    """A string holds a lone surrogate (U+D800 to U+DFFF), which UTF-8 cannot encode.

    JSON and YAML can spell one (``"\\ud800"``) and Python reads it, but the API server
    would store U+FFFD in its place: an annotation would no longer read back as written.
    A high surrogate followed by a low one (a pair, as YAML reads ``"\\ud83d\\ude80"``)
    reaches the API server as the one character it spells, so it is not reported.
    """


def is_dns1123_label(value: str) -> bool:
    """Whether ``value`` is a DNS-1123 label."""
    return len(value) <= DNS1123_LABEL_MAX_LENGTH and _DNS1123_LABEL.fullmatch(value) is not None


def is_dns1123_subdomain(value: str) -> bool:
    """Whether ``value`` is a DNS-1123 subdomain."""
    return (
        len(value) <= DNS1123_SUBDOMAIN_MAX_LENGTH
        and _DNS1123_SUBDOMAIN.fullmatch(value) is not None
    )


def is_label_value(value: str) -> bool:
    """Whether ``value`` is a valid label value (the empty string is)."""
    if not value:
        return True
    return (
        len(value) <= LABEL_VALUE_MAX_LENGTH
        and _LABEL_VALUE_CHARS.fullmatch(value) is not None
        and value[0] not in _NOT_ALNUM_ENDS
        and value[-1] not in _NOT_ALNUM_ENDS
    )


def _utf8_size(text: str) -> int:
    # Go's len() counts bytes, not code points. A lone surrogate (which Python strings may
    # hold) reaches the API server as U+FFFD, three bytes, as surrogatepass counts it.
    return len(text.encode("utf-8", "surrogatepass"))


def _not_a_string(
    field: str, value: object, error: type[NamingRuleViolation]
) -> list[NamingRuleViolation]:
    return [error(field, f"must be a string, got {type(value).__name__}")]


@attrs.frozen
class _StringRule:
    """A string rule of validation.go: a length bound, then the characters."""

    error: type[NamingRuleViolation]
    valid: Callable[[str], bool]
    max_length: int
    must: str
    """What the characters must be, for the message."""
    shown_limit: int = SHOWN_LENGTH

    def errors(self, value: object, field: str) -> list[NamingRuleViolation]:
        if not isinstance(value, str):
            return _not_a_string(field, value, self.error)
        if self.valid(value):
            return []
        if len(value) > self.max_length:
            long = shown(value, limit=self.shown_limit)
            return [self.error(field, f"{long} is longer than {self.max_length} characters")]
        must = f"must {self.must} and start and end with an alphanumeric"
        return [self.error(field, f"{shown(value)} {must}")]


def _is_pod_name(value: str) -> bool:
    return len(value) <= POD_NAME_MAX_LENGTH and _DNS1123_SUBDOMAIN.fullmatch(value) is not None


_SUBDOMAIN_CHARS = "consist of lower-case alphanumerics, '-' or '.'"
_DNS1123_LABEL_RULE = _StringRule(
    InvalidDNS1123Label,
    is_dns1123_label,
    DNS1123_LABEL_MAX_LENGTH,
    "consist of lower-case alphanumerics or '-'",
)
_DNS1123_SUBDOMAIN_RULE = _StringRule(
    InvalidDNS1123Subdomain,
    is_dns1123_subdomain,
    DNS1123_SUBDOMAIN_MAX_LENGTH,
    _SUBDOMAIN_CHARS,
    shown_limit=40,
)
_POD_NAME_RULE = _StringRule(InvalidPodName, _is_pod_name, POD_NAME_MAX_LENGTH, _SUBDOMAIN_CHARS)
_LABEL_VALUE_RULE = _StringRule(
    InvalidLabelValue,
    is_label_value,
    LABEL_VALUE_MAX_LENGTH,
    "be empty or consist of alphanumerics, '-', '_' or '.'",
)


def dns1123_label_errors(value: object, *, field: str) -> list[NamingRuleViolation]:
    """Violations of the DNS-1123 label rule (namespaces, container names)."""
    return _DNS1123_LABEL_RULE.errors(value, field)


def dns1123_subdomain_errors(value: object, *, field: str) -> list[NamingRuleViolation]:
    """Violations of the DNS-1123 subdomain rule."""
    return _DNS1123_SUBDOMAIN_RULE.errors(value, field)


def pod_name_errors(value: object, *, field: str = "metadata.name") -> list[NamingRuleViolation]:
    """Violations of the executor pod-name rule: DNS-1123 subdomain and at most 63 long."""
    return _POD_NAME_RULE.errors(value, field)


def _key_errors(
    key: str, *, field: str, error: type[NamingRuleViolation]
) -> list[NamingRuleViolation]:
    # validation.go IsQualifiedName: [prefix/]name, prefix a DNS-1123 subdomain.
    parts = key.split("/")
    if len(parts) == 1:
        prefix, name = None, parts[0]
    elif len(parts) == 2:
        prefix, name = parts
    else:
        return [error(field, f"{shown(key)} may contain at most one '/'")]
    found: list[NamingRuleViolation] = []
    if prefix is not None:
        if not prefix:
            found.append(error(field, f"{shown(key)} has an empty prefix before '/'"))
        elif not is_dns1123_subdomain(prefix):
            found.append(error(field, f"the prefix of {shown(key)} must be a DNS-1123 subdomain"))
    if not name:
        found.append(error(field, f"{shown(key)} has an empty name part"))
    elif len(name) > LABEL_VALUE_MAX_LENGTH:
        found.append(error(field, f"the name part of {shown(key)} is longer than 63 characters"))
    elif _QUALIFIED_NAME.fullmatch(name) is None:
        found.append(
            error(
                field,
                f"the name part of {shown(key)} must consist of alphanumerics, '-', '_' or '.' "
                "and start and end with an alphanumeric",
            )
        )
    return found


def label_key_errors(key: object, *, field: str) -> list[NamingRuleViolation]:
    """Violations of the label-key rule."""
    if not isinstance(key, str):
        return _not_a_string(field, key, InvalidLabelKey)
    return _key_errors(key, field=field, error=InvalidLabelKey)


def label_value_errors(value: object, *, field: str) -> list[NamingRuleViolation]:
    """Violations of the label-value rule."""
    return _LABEL_VALUE_RULE.errors(value, field)


def label_errors(labels: object, *, field: str = "metadata.labels") -> list[NamingRuleViolation]:
    """Violations in a whole label mapping (keys and values)."""
    if labels is None:
        return []
    if not isinstance(labels, Mapping):
        return [InvalidLabelKey(field, f"must be a mapping, got {type(labels).__name__}")]
    found: list[NamingRuleViolation] = []
    for key, value in labels.items():
        entry = f"{field}[{shown(key)}]"
        found += label_key_errors(key, field=entry)
        found += label_value_errors(value, field=entry)
    return found


def annotation_errors(
    annotations: object, *, field: str = "metadata.annotations"
) -> list[NamingRuleViolation]:
    """Violations in an annotation mapping: key syntax, string values, total size."""
    if annotations is None:
        return []
    if not isinstance(annotations, Mapping):
        return [InvalidAnnotationKey(field, f"must be a mapping, got {type(annotations).__name__}")]
    found: list[NamingRuleViolation] = []
    total = 0
    for key, value in annotations.items():
        entry = f"{field}[{shown(key)}]"
        if not isinstance(key, str):
            found += _not_a_string(entry, key, InvalidAnnotationKey)
            continue
        # objectmeta.go ValidateAnnotations checks the lower-cased key.
        found += _key_errors(key.lower(), field=entry, error=InvalidAnnotationKey)
        if not isinstance(value, str):
            found += _not_a_string(entry, value, InvalidAnnotationKey)
            continue
        total += _utf8_size(key) + _utf8_size(value)
    if total > TOTAL_ANNOTATION_SIZE_LIMIT_BYTES:
        found.append(
            AnnotationsTooLarge(
                field,
                f"total size {total} bytes exceeds {TOTAL_ANNOTATION_SIZE_LIMIT_BYTES} bytes",
            )
        )
    return found


def container_name_errors(
    names: Iterable[object], *, field: str = "spec.containers"
) -> list[NamingRuleViolation]:
    """Violations among a pod's container names: each a DNS-1123 label, all distinct.

    Pass the names of containers, init containers and ephemeral containers together: the
    API server requires uniqueness across all of them.
    """
    return _container_name_errors(
        (f"{field}[{index}].name", name) for index, name in enumerate(names)
    )


def _container_name_errors(named: Iterable[tuple[str, object]]) -> list[NamingRuleViolation]:
    found: list[NamingRuleViolation] = []
    seen: set[str] = set()
    for field, name in named:
        found += dns1123_label_errors(name, field=field)
        if isinstance(name, str):
            if name in seen:
                found.append(DuplicateContainerName(field, f"{shown(name)} is used twice"))
            seen.add(name)
    return found


# Lone surrogates: what Python strings may hold and UTF-8 (RFC 3629) may not. A high one
# followed by a low one is a pair (YAML reads "\ud83d\ude80" so, one half at a time):
# the JSON the client sends spells it the same way, and the API server reads one
# character back, so only a half without its partner is lost.
_LONE_SURROGATE = re.compile(
    "[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]"
)
# Mappings whose keys validate_manifest names as field[key], as the label rules do.
_KEYED_FIELDS = (("metadata", "labels"), ("metadata", "annotations"))

# A path as a chain (parent, key), built in O(1) a step and written out only when
# reported: most manifests have no lone surrogate, and then no path is ever written.
_Path: TypeAlias = "tuple[_Path, object] | None"


def _path_keys(path: _Path) -> list[object]:
    keys: list[object] = []
    while path is not None:
        path, key = path
        keys.append(key)
    keys.reverse()
    return keys


def _charset_checked(path: _Path, *, is_key: bool) -> bool:
    """Whether a naming rule of validate_manifest already rejects any lone surrogate here:
    the pod name and namespace, label keys and values, annotation keys, container names."""
    keys = _path_keys(path)
    if len(keys) == 2 and keys[0] == "metadata":
        return keys[1] in {"name", "namespace"} and not is_key
    if len(keys) == 3 and tuple(keys[:2]) in _KEYED_FIELDS:
        return is_key or keys[1] == "labels"
    return (
        len(keys) == 4
        and keys[0] == "spec"
        and keys[1] in {"containers", "initContainers", "ephemeralContainers"}
        and keys[3] == "name"
        and not is_key
    )


def _path_text(path: _Path) -> str:
    keys = _path_keys(path)
    text = ""
    for depth, key in enumerate(keys):
        if depth == 2 and tuple(keys[:2]) in _KEYED_FIELDS:
            text += f"[{shown(key)}]"
        else:
            text += path_part(key)
    return text.lstrip(".") or "pod"


def _surrogate_at(text: str) -> int:
    """The index of ``text``'s first lone surrogate, or -1."""
    if text.isascii():
        return -1
    found = _LONE_SURROGATE.search(text)
    return -1 if found is None else found.start()


def _unencodable(text: str, path: _Path, *, what: str) -> UnencodableString:
    index = _surrogate_at(text)
    return UnencodableString(
        _path_text(path),
        f"{what}{shown(text)} holds a lone surrogate (\\u{ord(text[index]):04x} at index "
        f"{index}), which UTF-8 cannot encode",
    )


def _unencodable_strings(manifest: object) -> list[UnencodableString]:
    """A violation for each key or string value anywhere in ``manifest`` that UTF-8 cannot
    encode; iterative (any depth), visiting each container once (aliases, cycles)."""
    found: list[UnencodableString] = []
    pending: list[tuple[_Path, object]] = [(None, manifest)]
    seen: set[int] = set()
    while pending:
        path, value = pending.pop()
        if isinstance(value, str):
            if _surrogate_at(value) >= 0 and not _charset_checked(path, is_key=False):
                found.append(_unencodable(value, path, what=""))
            continue
        if isinstance(value, Mapping):
            items: list[tuple[object, object]] = list(value.items())
        elif isinstance(value, (list, tuple)):
            items = list(enumerate(value))
        else:
            continue
        if id(value) in seen:
            continue
        seen.add(id(value))
        for key, item in reversed(items):
            child = (path, key)
            if (
                isinstance(key, str)
                and _surrogate_at(key) >= 0
                and not _charset_checked(child, is_key=True)
            ):
                found.append(_unencodable(key, child, what="the key "))
            pending.append((child, item))
    return found


def validate_manifest(manifest: object, *, layer: bool = False) -> list[NamingRuleViolation]:
    """Every naming and size violation in a pod manifest (empty when it passes).

    Checks the pod name (DNS-1123 subdomain within 63), namespace (DNS-1123 label),
    label keys and values, annotation keys and total size, and the names of all
    containers, init containers and ephemeral containers (DNS-1123 labels, unique); and
    that every string, anywhere, can be encoded as UTF-8 (:class:`UnencodableString`
    for a lone surrogate where no rule above already rejects it). Never raises.
    Types and unknown fields are the schema's business (``kubernetes-validate``).

    With ``layer``, ``manifest`` is a template or ``pod_override`` rather than a pod: a
    name it leaves out (the pod's, a container's) is another layer's to give, not a
    violation (nor is a null one); what it sets is checked as on a pod.
    """
    pod = as_map(manifest)
    metadata = as_map(pod.get("metadata"))
    spec = as_map(pod.get("spec"))
    found: list[NamingRuleViolation] = []
    if not isinstance(manifest, Mapping):
        found.append(InvalidPodName("pod", f"must be an object, got {type(manifest).__name__}"))
    if not layer or metadata.get("name") is not None:
        found += pod_name_errors(metadata.get("name"), field="metadata.name")
    if metadata.get("namespace") is not None:
        found += dns1123_label_errors(metadata.get("namespace"), field="metadata.namespace")
    found += label_errors(metadata.get("labels"))
    found += annotation_errors(metadata.get("annotations"))
    named = [
        (f"spec.{kind}[{index}].name", as_map(container).get("name"))
        for kind in ("containers", "initContainers", "ephemeralContainers")
        for index, container in enumerate(as_list(spec.get(kind)))
        if not layer or as_map(container).get("name") is not None
    ]
    found += _container_name_errors(named)
    return found + _unencodable_strings(manifest)


# Keys seen valid, so that the keys every pod of an executor carries cost one set lookup.
# Bounded: keys repeat from pod to pod, and once full the sets simply stop growing.
_VALID_LABEL_KEYS: set[str] = set()
_VALID_ANNOTATION_KEYS: set[str] = set()
_KNOWN_KEYS_MAX = 1024


def _is_key(key: str, known: set[str], *, lower: bool) -> bool:
    if key in known:
        return True
    if _key_errors(key.lower() if lower else key, field="", error=InvalidLabelKey):
        return False
    if len(known) < _KNOWN_KEYS_MAX:
        known.add(key)
    return True


# Every label value of a pod at once, joined by NUL (which no valid value holds; the caller
# checks that no value brought one in): labelValueFmt with its 63-character limit.
_JOINED_LABEL_VALUES = re.compile(
    r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?"
    r"(?:\x00(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?)*"
)


def _keys_pass(keys: dict[object, object], known: set[str], *, lower: bool) -> bool:
    if known.issuperset(keys):
        return True
    return all(type(key) is str and _is_key(key, known, lower=lower) for key in keys)


def _joined_values(
    mapping: dict[object, object], known: set[str], *, lower: bool, separator: str
) -> str | None:
    """The values joined, if every key passes and every value is a string; else None."""
    if not _keys_pass(mapping, known, lower=lower):
        return None
    try:
        return separator.join(mapping.values())  # type: ignore[arg-type]
    except TypeError:  # a value that is not a string
        return None


def _labels_pass(labels: dict[object, object]) -> bool:
    if not labels:
        return True
    joined = _joined_values(labels, _VALID_LABEL_KEYS, lower=False, separator="\x00")
    return (
        joined is not None
        and joined.count("\x00") == len(labels) - 1
        and _JOINED_LABEL_VALUES.fullmatch(joined) is not None
    )


def _annotations_pass(annotations: dict[object, object]) -> bool:
    values = _joined_values(annotations, _VALID_ANNOTATION_KEYS, lower=True, separator="")
    if values is None:
        return False
    characters = len(values) + len("".join(annotations))  # type: ignore[arg-type]
    # A character is at most 4 UTF-8 bytes: count bytes only when that could matter.
    if characters * 4 <= TOTAL_ANNOTATION_SIZE_LIMIT_BYTES:
        return True
    checked = cast("dict[str, str]", annotations)  # every key and value is a str (above)
    total = sum(_utf8_size(key) + _utf8_size(value) for key, value in checked.items())
    return total <= TOTAL_ANNOTATION_SIZE_LIMIT_BYTES


def _containers_pass(spec: dict[str, object]) -> bool:
    seen: set[str] = set()
    for kind in ("containers", "initContainers", "ephemeralContainers"):
        containers = spec.get(kind)
        if containers is None:
            continue
        if type(containers) is not list:
            return False
        for container in containers:
            if type(container) is not dict:
                return False
            name = container.get("name")
            if type(name) is not str or name in seen or not is_dns1123_label(name):
                return False
            seen.add(name)
    return True


def _passes(manifest: dict[str, object], *, containers: bool = True) -> bool:
    metadata = manifest.get("metadata")
    spec = manifest.get("spec", {})
    if type(metadata) is not dict or type(spec) is not dict:
        return False
    name = metadata.get("name")
    if type(name) is not str or len(name) > POD_NAME_MAX_LENGTH:
        return False
    if _DNS1123_SUBDOMAIN.fullmatch(name) is None:
        return False
    namespace = metadata.get("namespace")
    if namespace is not None and (type(namespace) is not str or not is_dns1123_label(namespace)):
        return False
    labels = metadata.get("labels")
    if labels is not None and (type(labels) is not dict or not _labels_pass(labels)):
        return False
    annotations = metadata.get("annotations")
    if annotations is not None and (
        type(annotations) is not dict or not _annotations_pass(annotations)
    ):
        return False
    return not containers or _containers_pass(spec)


_ENCODERS: list[Callable[[object], bytes]] = []


def _encodable(manifest: object) -> bool:
    # Every string UTF-8 can encode (no lone surrogate): msgspec's encoder checks in C.
    if not _ENCODERS:
        import msgspec  # noqa: PLC0415 - only the builders' fast path needs it

        _ENCODERS.append(msgspec.json.Encoder().encode)
    try:
        _ENCODERS[0](manifest)
    except (UnicodeEncodeError, TypeError, ValueError, OverflowError, RecursionError):
        return False
    return True


def is_valid_manifest(
    manifest: object, *, strings_of: object = None, containers: bool = True
) -> bool:
    """Whether :func:`validate_manifest` finds nothing: its fast boolean form.

    The pod builders run it on every pod they return; it builds no message and, for the
    label and annotation keys an executor's pods share, does no regex work after the first.
    With ``strings_of`` (a JSON-like value), only the strings in it are checked to encode
    as UTF-8 on the fast path: the caller vouches for the pod's other strings (the pod
    builders do, for what a prepared template fixed and they checked once). With
    ``containers=False`` the fast path leaves out the container names, which the caller
    vouches for in the same way.
    """
    if (
        type(manifest) is dict
        and _passes(manifest, containers=containers)
        and _encodable(manifest if strings_of is None else strings_of)
    ):
        return True
    # Anything the fast path does not clear (an odd type, or a violation): the full rules.
    return not validate_manifest(manifest)
