"""What a container sees, prepared on the host for the process kubelet.

A container's ``env`` (``value`` with ``$(VAR)`` references expanded as the kubelet
expands them; ``secretKeyRef``; ``fieldRef`` for the pod's name, namespace, uid, node,
service account, IPs, labels and annotations), its ``envFrom`` Secrets (with ``prefix``),
its volumes, and its command line.

A process cannot mount at ``/opt/airflow/...``, so each container gets a root directory
on the host (``K8S_WORKLOADS_POD_ROOT`` in its environment) and every ``volumeMounts``
path ``M`` is found at that root plus ``M``: a symlink to the volume's directory (Secret
volumes hold one file per key, or per ``items`` path, with ``defaultMode``/``mode``;
``emptyDir`` and every other kind are empty directories shared by the pod's containers).
The container's ``terminationMessagePath`` (``/dev/termination-log`` by default) is an
empty file there too, made anew for each run: what the process writes to it is the
message of its ``terminated`` state (:mod:`k8s_workloads.testing._termination`).
Wherever a mount path starts the command's words, the args, an env value or
``workingDir`` (or follows a ``=`` or ``:`` in them), it is rewritten to the host path,
so ``--json-path /run/secrets/airflow-workload/workload.json`` reads the Secret's file.
A missing Secret or key (not ``optional``), a ConfigMap (the kit keeps none) or an
unsupported ``fieldRef`` is a :class:`ConfigError`: the kubelet shows the container
waiting ``CreateContainerConfigError`` (for a volume, ``ContainerCreating``) and tries
again on its next look.
"""

from __future__ import annotations

import base64
import binascii
import re
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from k8s_workloads.pods.manifest import Manifest

__all__ = ["POD_ROOT_VARIABLE", "ConfigError", "Prepared", "prepare", "prepare_volumes"]

POD_ROOT_VARIABLE = "K8S_WORKLOADS_POD_ROOT"
"""The environment variable naming a container's root on the host (mounts are under it)."""

# The kubelet's expansion: $(VAR) is replaced when VAR is defined, $$ is a literal $
# (k8s.io/kubernetes third_party/forked/golang/expansion).
_REFERENCE = re.compile(r"\$\$|\$\(([-._A-Za-z0-9]+)\)")
_FIELD_LABEL = re.compile(r"^metadata\.(labels|annotations)\['([^']+)'\]$")
_DEFAULT_SECRET_MODE = 0o644


class ConfigError(Exception):
    """The container cannot start yet: ``reason`` is the waiting reason to show."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@attrs.frozen
class Prepared:
    """A container ready to start: its argv, environment and working directory, and the
    host file standing for its ``terminationMessagePath`` (None: it has none)."""

    argv: list[str]
    env: dict[str, str]
    cwd: str
    termination_file: Path | None = None


def _expand(text: str, env: Mapping[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return env.get(match.group(1), match.group(0))

    return _REFERENCE.sub(replace, text)


def _base64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return text.encode()  # not base64: the store kept it as sent


def _decoded(secret: Manifest) -> dict[str, bytes]:
    """A Secret's keys and values: ``data`` is base64, ``stringData`` (if the store kept
    it as sent) is text."""
    values = {str(key): _base64(str(value)) for key, value in (secret.get("data") or {}).items()}
    for key, value in (secret.get("stringData") or {}).items():
        values[str(key)] = str(value).encode()
    return values


def _secret(
    lookup: Callable[[str], Manifest | None], name: object, *, optional: bool
) -> dict[str, bytes] | None:
    found = lookup(str(name)) if isinstance(name, str) and name else None
    if found is None:
        if optional:
            return None
        raise ConfigError("CreateContainerConfigError", f'secret "{name}" not found')
    return _decoded(found)


def _field(pod: Manifest, path: object) -> str:
    metadata = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    simple = {
        "metadata.name": metadata.get("name"),
        "metadata.namespace": metadata.get("namespace"),
        "metadata.uid": metadata.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName", "default"),
        "status.podIP": status.get("podIP"),
        "status.hostIP": status.get("hostIP"),
    }
    if isinstance(path, str) and path in simple:
        return str(simple[path] or "")
    found = _FIELD_LABEL.match(path) if isinstance(path, str) else None
    if found is not None:
        return str((metadata.get(found.group(1)) or {}).get(found.group(2), ""))
    raise ConfigError(
        "CreateContainerConfigError", f"fieldRef {path!r} is not supported by the kit's kubelet"
    )


def _value_from(
    pod: Manifest, source: Manifest, lookup: Callable[[str], Manifest | None]
) -> str | None:
    if isinstance(source.get("secretKeyRef"), dict):
        ref = source["secretKeyRef"]
        optional = bool(ref.get("optional"))
        values = _secret(lookup, ref.get("name"), optional=optional)
        if values is None:
            return None
        if ref.get("key") not in values:
            if optional:
                return None
            raise ConfigError(
                "CreateContainerConfigError",
                f"couldn't find key {ref.get('key')} in Secret {pod['metadata']['namespace']}"
                f"/{ref.get('name')}",
            )
        return values[ref["key"]].decode(errors="replace")
    if isinstance(source.get("fieldRef"), dict):
        return _field(pod, source["fieldRef"].get("fieldPath"))
    if isinstance(source.get("configMapKeyRef"), dict):
        ref = source["configMapKeyRef"]
        if ref.get("optional"):
            return None
        raise ConfigError("CreateContainerConfigError", f'configmap "{ref.get("name")}" not found')
    raise ConfigError(
        "CreateContainerConfigError", "this valueFrom is not supported by the kit's kubelet"
    )


def _environment(
    pod: Manifest, container: Manifest, lookup: Callable[[str], Manifest | None]
) -> dict[str, str]:
    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        prefix = str(source.get("prefix") or "")
        if isinstance(source.get("secretRef"), dict):
            ref = source["secretRef"]
            values = _secret(lookup, ref.get("name"), optional=bool(ref.get("optional")))
            for key, value in (values or {}).items():
                env[prefix + key] = value.decode(errors="replace")
        elif isinstance(source.get("configMapRef"), dict):
            ref = source["configMapRef"]
            if not ref.get("optional"):
                raise ConfigError(
                    "CreateContainerConfigError", f'configmap "{ref.get("name")}" not found'
                )
    for item in container.get("env") or []:
        name = item.get("name")
        if not isinstance(name, str):
            continue
        if isinstance(item.get("valueFrom"), dict):
            found = _value_from(pod, item["valueFrom"], lookup)
            if found is not None:
                env[name] = found
        else:
            env[name] = _expand(str(item.get("value") or ""), env)
    return env


def prepare_volumes(
    pod: Manifest, root: Path, lookup: Callable[[str], Manifest | None]
) -> dict[str, Path]:
    """Each pod volume as a directory under ``root/volumes`` (Secret volumes filled),
    by volume name."""
    made: dict[str, Path] = {}
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        name = volume.get("name")
        if not isinstance(name, str):
            continue
        where = root / "volumes" / name
        where.mkdir(parents=True, exist_ok=True)
        made[name] = where
        source = volume.get("secret")
        if not isinstance(source, dict):
            continue
        values = _secret(lookup, source.get("secretName"), optional=bool(source.get("optional")))
        if values is None:
            continue
        mode = source.get("defaultMode", _DEFAULT_SECRET_MODE)
        items = source.get("items") or [{"key": key, "path": key} for key in sorted(values)]
        for item in items:
            key = item.get("key")
            if key not in values:
                raise ConfigError(
                    "ContainerCreating", f"secret {source.get('secretName')!r} has no key {key!r}"
                )
            path = where / str(item.get("path") or key)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(values[key])
            path.chmod(int(item.get("mode", mode)))
    return made


def _rewriter(mounts: Mapping[str, str]) -> Callable[[str], str]:
    if not mounts:
        return lambda text: text
    paths = sorted(mounts, key=len, reverse=True)
    pattern = re.compile(r"(^|[=:])(" + "|".join(re.escape(path) for path in paths) + r")(?=/|$|:)")
    return lambda text: pattern.sub(lambda found: found.group(1) + mounts[found.group(2)], text)


def prepare(
    pod: Manifest,
    container: Manifest,
    *,
    root: Path,
    volumes: Mapping[str, Path],
    lookup: Callable[[str], Manifest | None],
    base_env: Mapping[str, str],
    executables: Mapping[str, str],
) -> Prepared:
    """The container's argv, env and working directory on the host (its mounts made
    under ``root/containers/<name>``)."""
    home = root / "containers" / str(container.get("name", ""))
    home.mkdir(parents=True, exist_ok=True)
    mounts: dict[str, str] = {}
    for mount in container.get("volumeMounts") or []:
        path, name = mount.get("mountPath"), mount.get("name")
        if not isinstance(path, str) or not path.startswith("/") or name not in volumes:
            continue
        target = volumes[name] / str(mount.get("subPath") or "")
        link = home / path.strip("/")
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.exists() and not link.is_symlink():
            link.symlink_to(target)
        mounts[path.rstrip("/") or "/"] = str(link)
    termination_file = _termination_file(container, home)
    if termination_file is not None:
        mounts[str(container["terminationMessagePath"]).rstrip("/")] = str(termination_file)
    rewrite = _rewriter(mounts)
    own = {key: rewrite(value) for key, value in _environment(pod, container, lookup).items()}
    env = {**base_env, **own, POD_ROOT_VARIABLE: str(home)}
    words = [str(word) for word in (container.get("command") or [])]
    words += [str(word) for word in (container.get("args") or [])]
    argv = [rewrite(_expand(word, own)) for word in words]
    if argv:
        argv[0] = executables.get(argv[0], argv[0])
    working = container.get("workingDir")
    cwd = rewrite(working) if isinstance(working, str) else ""
    return Prepared(argv, env, cwd if cwd and Path(cwd).is_dir() else str(home), termination_file)


def _termination_file(container: Manifest, home: Path) -> Path | None:
    """A new empty file for this run of the container at its ``terminationMessagePath``
    under ``home`` (the kubelet mounts a new file over the path for each container it
    starts); None for a container without a path."""
    path = container.get("terminationMessagePath")
    if not isinstance(path, str) or not path.startswith("/") or not path.strip("/"):
        return None
    file = home / path.strip("/")
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(b"")
    except OSError:  # a mount's file of that name, a directory there: no message file
        return None
    return file
