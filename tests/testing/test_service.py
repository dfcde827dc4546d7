"""A kit part run between ``start()`` and ``stop()`` (:mod:`k8s_workloads.testing._service`):
``with`` stops it on the way out, also when the block raises."""

from __future__ import annotations

import pytest

from k8s_workloads.testing import FakeApiServer, FakeCluster, Kubelet


def test_the_server_and_the_kubelet_stop_when_the_block_raises() -> None:
    cluster = FakeCluster()
    server = FakeApiServer(cluster)
    kubelet = Kubelet(cluster, poll_seconds=0.01)

    def fails_inside() -> None:
        with server, kubelet:
            assert server.url.startswith("http://127.0.0.1:")
            assert kubelet._thread.is_alive()
            raise RuntimeError("inside")

    with pytest.raises(RuntimeError, match="inside"):
        fails_inside()
    assert server.stopped
    assert not kubelet._thread.is_alive()
