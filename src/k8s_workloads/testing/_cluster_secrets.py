"""The kit cluster's Secrets: created, read, listed and deleted as the API server does."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from k8s_workloads.testing import _admission
from k8s_workloads.testing._cluster_store import (
    ClusterStore,
    locked,
    not_found,
    same_namespace,
)
from k8s_workloads.testing.errors import ApiError, invalid
from k8s_workloads.testing.watch import _copy

if TYPE_CHECKING:
    from collections.abc import Mapping

    from k8s_workloads.pods.manifest import Manifest

__all__ = ["ClusterSecrets"]


class ClusterSecrets(ClusterStore):
    """The Secret calls of :class:`~k8s_workloads.testing.FakeCluster`."""

    @locked
    def create_secret(
        self,
        namespace: str,
        body: Mapping[str, Any],
        *,
        dry_run: bool = False,
        field_validation: str | None = None,
    ) -> Manifest:
        """``create_namespaced_secret``: stored as the API server stores it (``stringData``
        merged into base64 ``data`` and never answered, ``type`` defaulted to ``Opaque``,
        ``uid``, ``resourceVersion``, ``creationTimestamp``); 400/422 for a bad body, 404
        without the namespace, 409 for a name in use."""
        name = self._create_call("create_secret", namespace, body)
        try:
            secret, _ = _admission.decode_secret(
                _copy(dict(body)), field_validation=field_validation
            )
        except _admission.Rejected as error:
            if error.code == 422:
                raise invalid("Secret", name, error.causes) from None
            raise ApiError(400, "BadRequest", str(error)) from None
        metadata = secret["metadata"]
        same_namespace(metadata, namespace)
        self._stamp_new(self._secrets, "secrets", namespace, name, metadata)
        metadata["resourceVersion"] = self._bump() if not dry_run else self.resource_version
        if not dry_run:
            self._secrets[namespace, str(name)] = secret
        return _copy(secret)

    @locked
    def read_secret(self, namespace: str, name: str) -> Manifest:
        """``read_namespaced_secret``: the Secret, or a 404 :class:`ApiError`."""
        secret = self._secrets.get((namespace, name))
        if secret is None:
            raise not_found("secrets", name)
        return _copy(secret)

    @locked
    def list_secrets(self, namespace: str | None = None) -> Manifest:
        """``list_namespaced_secret`` / ``list_secret_for_all_namespaces``: a
        ``SecretList``."""
        return {
            "kind": "SecretList",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": self.resource_version},
            "items": [
                _copy(secret)
                for (where, _), secret in sorted(self._secrets.items())
                if namespace is None or where == namespace
            ],
        }

    @locked
    def delete_secret(self, namespace: str, name: str, *, dry_run: bool = False) -> Manifest:
        """``delete_namespaced_secret``: the deleted Secret, or a 404."""
        self._call("delete_secret", namespace, name)
        secret = self._secrets.get((namespace, name))
        if secret is None:
            raise not_found("secrets", name)
        if not dry_run:
            del self._secrets[namespace, name]
        return _copy(secret)
