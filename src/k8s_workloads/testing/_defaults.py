"""What the API server fills in on a pod it decodes, as pure code.

A Kubernetes 1.37 API server applies the generated defaulter (``SetObjectDefaults_Pod`` in
``pkg/apis/core/v1/zz_generated.defaults.go``) to every pod it decodes, on create and on
update, so a client reads the defaulted object in every answer and watch event, and a
patch that removes a defaulted field gets it back. The rules are those of
``pkg/apis/core/v1/defaults.go`` (verified against kubernetes/kubernetes):

* ``SetDefaults_PodSpec``: ``dnsPolicy`` ``ClusterFirst``, ``restartPolicy`` ``Always``,
  ``securityContext`` ``{}``, ``terminationGracePeriodSeconds`` 30, ``schedulerName``
  ``default-scheduler``;
* ``SetDefaults_Pod``: ``enableServiceLinks`` true; a container's ``resources.requests``
  take each of its ``limits`` it does not name; with ``hostNetwork``, each container
  port's ``hostPort`` is its ``containerPort``;
* ``SetDefaults_Container`` for every container, init container and ephemeral container:
  ``terminationMessagePath`` ``/dev/termination-log``, ``terminationMessagePolicy``
  ``File``, ``imagePullPolicy`` ``Always`` when the image's tag is ``latest`` (no tag and
  no digest counts as ``latest``, ``ParseImageName``), else ``IfNotPresent``; with the
  generated parts: a port's ``protocol`` ``TCP``, an env ``fieldRef``'s ``apiVersion``
  ``v1``, a probe's ``timeoutSeconds`` 1, ``periodSeconds`` 10, ``successThreshold`` 1,
  ``failureThreshold`` 3, an ``httpGet``'s ``path`` ``/`` and ``scheme`` ``HTTP``;
* volumes: one with no source is an ``emptyDir``; ``secret``, ``configMap``,
  ``downwardAPI`` and ``projected`` get ``defaultMode`` 420 (0644), a projected service
  account token ``expirationSeconds`` 3600, a ``hostPath`` ``type`` ``""``, an
  ephemeral volume's claim ``volumeMode`` ``Filesystem``.

Besides defaulting, the ``Priority`` admission plugin (``plugin/pkg/admission/priority``)
sets ``spec.priority`` on create: 0 for a pod naming no ``priorityClassName``, when no
PriorityClass is the global default (the kit has none) — :func:`admit_priority`.

Not modelled: quantities are not rounded up to milli-units (``SetDefaults_ResourceList``),
pod-level resources, ``preemptionPolicy`` (set by the same plugin from a PriorityClass),
the ``ServiceAccount`` and ``DefaultTolerationSeconds`` admission plugins.

Defaulting never overwrites a value the body gives.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from k8s_workloads.pods.manifest import Manifest

__all__ = ["admit_priority", "default_pod", "image_pull_policy"]

# k8s.io/api/core/v1 constants (types.go).
_TERMINATION_MESSAGE_PATH = "/dev/termination-log"
_DEFAULT_GRACE_SECONDS = 30  # DefaultTerminationGracePeriodSeconds
_DEFAULT_MODE = 0o644  # SecretVolumeSourceDefaultMode and the other volume sources'
_TOKEN_SECONDS = 3600  # SetDefaults_ServiceAccountTokenProjection: one hour

_POD_SPEC_DEFAULTS: tuple[tuple[str, object], ...] = (
    ("dnsPolicy", "ClusterFirst"),
    ("restartPolicy", "Always"),
    ("securityContext", {}),
    ("terminationGracePeriodSeconds", _DEFAULT_GRACE_SECONDS),
    ("schedulerName", "default-scheduler"),
)
_PROBE_DEFAULTS: tuple[tuple[str, object], ...] = (
    ("timeoutSeconds", 1),
    ("periodSeconds", 10),
    ("successThreshold", 1),
    ("failureThreshold", 3),
)
_HTTP_GET_DEFAULTS: tuple[tuple[str, object], ...] = (("path", "/"), ("scheme", "HTTP"))
_CONTAINER_KINDS = ("initContainers", "containers", "ephemeralContainers")
_MODE_SOURCES = ("secret", "configMap", "downwardAPI", "projected")
# A volume's source fields: a volume naming none of them is an emptyDir (SetDefaults_Volume).
_VOLUME_FIELDS = frozenset({"name"})

# The image reference grammar of github.com/distribution/reference (regexp.go), which
# ParseImageName (pkg/util/parsers) parses with ParseNormalizedNamed: an optional domain
# (with a port), lowercase path components, then an optional tag and an optional digest.
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
_IMAGE_REFERENCE = re.compile(
    rf"(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
    r"(?::(?P<tag>\w[\w.-]{0,127}))?"
    r"(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9A-Fa-f]{32,}))?",
    re.ASCII,
)


def image_pull_policy(image: object) -> str:
    """The ``imagePullPolicy`` a container with ``image`` and none given gets.

    ``Always`` when the tag is ``latest``, or when the reference has neither tag nor digest
    (``ParseImageName`` then answers ``latest``); ``IfNotPresent`` otherwise, also for a
    reference that does not parse (``SetDefaults_Container`` ignores the error, the tag
    is then empty).
    """
    found = _IMAGE_REFERENCE.fullmatch(image) if isinstance(image, str) else None
    if found is None:
        return "IfNotPresent"
    tag, digest = found.group("tag"), found.group("digest")
    if tag == "latest" or (tag is None and digest is None):
        return "Always"
    return "IfNotPresent"


def _set(target: Manifest, defaults: tuple[tuple[str, object], ...], *, zero: bool = False) -> None:
    # Go's defaulters test a string for "", a pointer for nil; ``zero``: an int for 0 too
    # (a probe's fields are plain int32).
    for key, value in defaults:
        given = target.get(key)
        if given is None or given == "" or (zero and given == 0):
            target[key] = value.copy() if isinstance(value, dict) else value


def _objects(value: object) -> list[Manifest]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _field_ref(holder: object) -> None:
    # SetDefaults_ObjectFieldSelector: a fieldRef's apiVersion is v1.
    if isinstance(holder, dict) and isinstance(holder.get("fieldRef"), dict):
        holder["fieldRef"].setdefault("apiVersion", "v1")


def _http_get(handler: object) -> None:
    if isinstance(handler, dict) and isinstance(handler.get("httpGet"), dict):
        _set(handler["httpGet"], _HTTP_GET_DEFAULTS)


def _container(container: Manifest) -> None:
    # SetDefaults_Container, then what the generated defaulter adds for a container.
    if not container.get("imagePullPolicy"):
        container["imagePullPolicy"] = image_pull_policy(container.get("image"))
    if not container.get("terminationMessagePath"):
        container["terminationMessagePath"] = _TERMINATION_MESSAGE_PATH
    if not container.get("terminationMessagePolicy"):
        container["terminationMessagePolicy"] = "File"
    for port in _objects(container.get("ports")):
        if not port.get("protocol"):
            port["protocol"] = "TCP"
    for variable in _objects(container.get("env")):
        _field_ref(variable.get("valueFrom"))
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = container.get(key)
        if isinstance(probe, dict):
            _set(probe, _PROBE_DEFAULTS, zero=True)
            _http_get(probe)
    lifecycle = container.get("lifecycle")
    if isinstance(lifecycle, dict):
        _http_get(lifecycle.get("postStart"))
        _http_get(lifecycle.get("preStop"))


def _requests_from_limits(container: Manifest) -> None:
    # SetDefaults_Pod: requests default to limits, resource by resource (regular and init
    # containers only: a Pod, not a PodTemplate).
    resources = container.get("resources")
    if not isinstance(resources, dict) or not isinstance(resources.get("limits"), dict):
        return
    requests = resources.get("requests")
    if not isinstance(requests, dict):
        requests = resources["requests"] = {}
    for name, value in resources["limits"].items():
        requests.setdefault(name, value)


def _volume(volume: Manifest) -> None:
    if not set(volume) - _VOLUME_FIELDS:
        volume["emptyDir"] = {}
    for key in _MODE_SOURCES:
        source = volume.get(key)
        if isinstance(source, dict) and source.get("defaultMode") is None:
            source["defaultMode"] = _DEFAULT_MODE
    host_path = volume.get("hostPath")
    if isinstance(host_path, dict) and host_path.get("type") is None:
        host_path["type"] = ""  # HostPathUnset
    downward = volume.get("downwardAPI")
    if isinstance(downward, dict):
        for item in _objects(downward.get("items")):
            _field_ref(item)
    projected = volume.get("projected")
    if isinstance(projected, dict):
        for source in _objects(projected.get("sources")):
            if isinstance(source.get("downwardAPI"), dict):
                for item in _objects(source["downwardAPI"].get("items")):
                    _field_ref(item)
            token = source.get("serviceAccountToken")
            if isinstance(token, dict) and token.get("expirationSeconds") is None:
                token["expirationSeconds"] = _TOKEN_SECONDS
    ephemeral = volume.get("ephemeral")
    template = ephemeral.get("volumeClaimTemplate") if isinstance(ephemeral, dict) else None
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        template["spec"].setdefault("volumeMode", "Filesystem")


def default_pod(pod: Manifest) -> Manifest:
    """Fill in ``pod``'s defaults in place (see the module's description); returns it."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        spec = pod["spec"] = {}
    for container in _objects(spec.get("containers")) + _objects(spec.get("initContainers")):
        _requests_from_limits(container)
    if spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True  # DefaultEnableServiceLinks
    if spec.get("hostNetwork") is True:
        for kind in ("containers", "initContainers"):
            for container in _objects(spec.get(kind)):
                for port in _objects(container.get("ports")):
                    if not port.get("hostPort"):
                        port["hostPort"] = port.get("containerPort")
    _set(spec, _POD_SPEC_DEFAULTS)
    for volume in _objects(spec.get("volumes")):
        _volume(volume)
    for kind in _CONTAINER_KINDS:
        for container in _objects(spec.get(kind)):
            _container(container)
    return pod


def admit_priority(pod: Manifest) -> None:
    """The ``Priority`` admission plugin on create: ``spec.priority`` 0 for a pod that names
    no ``priorityClassName`` (``DefaultPriorityWhenNoDefaultClassExists``); a pod that names
    one, or gives a priority itself, is left as it is."""
    spec = pod.get("spec")
    if isinstance(spec, dict) and not spec.get("priorityClassName"):
        spec.setdefault("priority", 0)
