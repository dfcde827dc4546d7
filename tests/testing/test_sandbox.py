"""What a container sees on the host (:mod:`k8s_workloads.testing._sandbox`): its
environment as the kubelet builds it, its Secret volumes as files, its mount paths rewritten
to where they are on the host, and a :class:`ConfigError` with the waiting reason when it
cannot start yet."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from k8s_workloads.testing._sandbox import (
    POD_ROOT_VARIABLE,
    ConfigError,
    Prepared,
    prepare,
    prepare_volumes,
)

if TYPE_CHECKING:
    from k8s_workloads.pods.manifest import Manifest

_SECRETS: dict[str, Manifest] = {
    "creds": {"data": {"token": base64.b64encode(b"s3cret").decode(), "user": "not base64!"}},
    "plain": {"stringData": {"a": "1", "b": "2"}},
}


def _lookup(name: str) -> Manifest | None:
    return _SECRETS.get(name)


def _pod(*containers: Manifest, **spec: Any) -> Manifest:
    return {
        "metadata": {
            "name": "p",
            "namespace": "ns",
            "uid": "u-1",
            "labels": {"app": "x"},
            "annotations": {"note": "hi"},
        },
        "spec": {"nodeName": "node-a", "containers": list(containers), **spec},
        "status": {"podIP": "10.0.0.7"},
    }


def _prepare(pod: Manifest, root: Path, **base_env: str) -> Prepared:
    volumes = prepare_volumes(pod, root, _lookup)
    return prepare(
        pod,
        pod["spec"]["containers"][0],
        root=root,
        volumes=volumes,
        lookup=_lookup,
        base_env=base_env,
        executables={"python": "/usr/bin/python-for-pods"},
    )


def test_env_values_expand_earlier_ones_and_double_dollars_are_literal(tmp_path: Path) -> None:
    container = {
        "name": "base",
        "env": [
            {"name": "A", "value": "one"},
            {"name": "B", "value": "$(A)-$(UNDEFINED)-$$(A)"},
            {"name": "C", "value": "$(D)"},  # D comes later: left as written
            {"name": "D", "value": "four"},
        ],
    }
    env = _prepare(_pod(container), tmp_path).env
    assert (env["B"], env["C"]) == ("one-$(UNDEFINED)-$(A)", "$(D)")


def test_secret_and_field_references_are_resolved(tmp_path: Path) -> None:
    def field(path: str) -> Manifest:
        return {"valueFrom": {"fieldRef": {"fieldPath": path}}}

    container = {
        "name": "base",
        "env": [
            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
            {"name": "USER", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "user"}}},
            {"name": "NAME", **field("metadata.name")},
            {"name": "NODE", **field("spec.nodeName")},
            {"name": "ACCOUNT", **field("spec.serviceAccountName")},
            {"name": "IP", **field("status.podIP")},
            {"name": "APP", **field("metadata.labels['app']")},
            {"name": "NOTE", **field("metadata.annotations['note']")},
            {"name": "NONE", **field("metadata.labels['absent']")},
        ],
    }
    env = _prepare(_pod(container), tmp_path).env
    assert {name: env[name] for name in ("TOKEN", "USER", "NAME", "NODE", "ACCOUNT")} == {
        "TOKEN": "s3cret",
        "USER": "not base64!",  # kept as the store has it when it is not base64
        "NAME": "p",
        "NODE": "node-a",
        "ACCOUNT": "default",
    }
    assert (env["IP"], env["APP"], env["NOTE"], env["NONE"]) == ("10.0.0.7", "x", "hi", "")


def test_env_from_a_secret_takes_every_key_with_the_prefix(tmp_path: Path) -> None:
    container = {
        "name": "base",
        "envFrom": [
            {"secretRef": {"name": "plain"}, "prefix": "P_"},
            {"secretRef": {"name": "gone", "optional": True}},
            {"configMapRef": {"name": "cm", "optional": True}},
        ],
        "env": [{"name": "P_b", "value": "own"}],  # env wins over envFrom
    }
    env = _prepare(_pod(container), tmp_path, HOME="/home/x").env
    assert (env["P_a"], env["P_b"], env["HOME"]) == ("1", "own", "/home/x")
    assert env[POD_ROOT_VARIABLE] == str(tmp_path / "containers" / "base")


def test_optional_references_that_are_missing_leave_the_variable_unset(tmp_path: Path) -> None:
    container = {
        "name": "base",
        "env": [
            {
                "name": "A",
                "valueFrom": {"secretKeyRef": {"name": "gone", "key": "k", "optional": True}},
            },
            {
                "name": "B",
                "valueFrom": {"secretKeyRef": {"name": "creds", "key": "k", "optional": True}},
            },
            {
                "name": "C",
                "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k", "optional": True}},
            },
        ],
    }
    env = _prepare(_pod(container), tmp_path).env
    assert not {"A", "B", "C"} & set(env)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "gone", "key": "k"}}}],
            'secret "gone" not found',
        ),
        (
            [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "k"}}}],
            "couldn't find key k in Secret ns/creds",
        ),
        (
            [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}],
            'configmap "cm" not found',
        ),
        (
            [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "spec.hostname"}}}],
            "fieldRef 'spec.hostname'",
        ),
        (
            [{"name": "A", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}],
            "this valueFrom",
        ),
    ],
)
def test_a_reference_that_cannot_be_met_is_a_config_error(
    tmp_path: Path, env: list[Manifest], message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        _prepare(_pod({"name": "base", "env": env}), tmp_path)
    assert raised.value.reason == "CreateContainerConfigError"
    assert message in raised.value.message


def test_secret_volumes_hold_one_file_per_key_with_its_mode(tmp_path: Path) -> None:
    pod = _pod(
        {"name": "base"},
        volumes=[
            {"name": "all", "secret": {"secretName": "plain", "defaultMode": 0o400}},
            {
                "name": "some",
                "secret": {
                    "secretName": "creds",
                    "items": [{"key": "token", "path": "dir/t", "mode": 0o600}],
                },
            },
            {"name": "scratch", "emptyDir": {}},
            {"name": "maybe", "secret": {"secretName": "gone", "optional": True}},
        ],
    )
    made = prepare_volumes(pod, tmp_path, _lookup)
    assert set(made) == {"all", "some", "scratch", "maybe"}
    assert sorted(path.name for path in made["all"].iterdir()) == ["a", "b"]
    assert (made["all"] / "a").read_text() == "1"
    assert (made["all"] / "a").stat().st_mode & 0o777 == 0o400
    assert (made["some"] / "dir" / "t").read_bytes() == b"s3cret"
    assert (made["some"] / "dir" / "t").stat().st_mode & 0o777 == 0o600
    assert list(made["scratch"].iterdir()) == list(made["maybe"].iterdir()) == []


def test_a_secret_volume_naming_a_missing_key_waits_as_container_creating(tmp_path: Path) -> None:
    pod = _pod(
        {"name": "base"},
        volumes=[{"name": "v", "secret": {"secretName": "creds", "items": [{"key": "nope"}]}}],
    )
    with pytest.raises(ConfigError) as raised:
        prepare_volumes(pod, tmp_path, _lookup)
    assert raised.value.reason == "ContainerCreating"
    assert "'nope'" in raised.value.message


def test_mount_paths_in_the_command_env_and_working_dir_point_at_the_host(tmp_path: Path) -> None:
    container = {
        "name": "base",
        "command": ["python", "-m", "run"],
        "args": [
            "--json-path",
            "/run/secrets/w/token",
            "--opt=/run/secrets/w",
            "/run/secretsX",
            "$(WHERE)",
        ],
        "env": [{"name": "WHERE", "value": "/data:/run/secrets/w/token"}],
        "workingDir": "/data",
        "volumeMounts": [
            {"name": "secret", "mountPath": "/run/secrets/w"},
            {"name": "scratch", "mountPath": "/data/"},
        ],
    }
    pod = _pod(
        container,
        volumes=[
            {
                "name": "secret",
                "secret": {"secretName": "creds", "items": [{"key": "token", "path": "token"}]},
            },
            {"name": "scratch", "emptyDir": {}},
        ],
    )
    prepared = _prepare(pod, tmp_path)
    home = tmp_path / "containers" / "base"
    secret, data = str(home / "run/secrets/w"), str(home / "data")
    assert prepared.argv == [
        "/usr/bin/python-for-pods",  # the executables table picks the interpreter
        "-m",
        "run",
        "--json-path",
        f"{secret}/token",
        f"--opt={secret}",
        "/run/secretsX",  # a longer word is not the mount
        f"{data}:{secret}/token",
    ]
    assert prepared.env["WHERE"] == f"{data}:{secret}/token"
    assert prepared.cwd == data
    assert Path(f"{secret}/token").read_bytes() == b"s3cret"  # the link reaches the volume
    assert Path(secret).is_symlink()


def test_a_working_dir_that_does_not_exist_falls_back_to_the_containers_root(
    tmp_path: Path,
) -> None:
    prepared = _prepare(
        _pod({"name": "base", "args": ["true"], "workingDir": "/nowhere"}), tmp_path
    )
    assert prepared.cwd == str(tmp_path / "containers" / "base")
    assert prepared.argv == ["true"]
