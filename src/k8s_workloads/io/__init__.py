"""The I/O layer: the core's requests performed against a real client, many at a time.

The core (:mod:`k8s_workloads.executor`) decides; this layer performs. One module per
client, each the only place that maps :data:`~k8s_workloads.executor.Request` values to
that client's calls, and one policy for what an answer means, written once
(:mod:`k8s_workloads.io.policy`):

* :mod:`k8s_workloads.io.kube`: the ``kubernetes`` client, requests performed on a
  bounded thread pool (:class:`~k8s_workloads.io.kube.KubeCalls`,
  :class:`~k8s_workloads.io.pool.PoolDriver`);
* :mod:`k8s_workloads.io.aio`: ``kubernetes_asyncio``, with an ``async`` driver (the
  ``[asyncio]`` extra);
* the test kit's in-memory cluster (:class:`~k8s_workloads.testing.FakeCluster`), which
  the simulator, the stateful test and :class:`~k8s_workloads.testing.CoreDriver` use,
  has its module in the kit: :mod:`k8s_workloads.testing.cluster_calls` (this layer
  imports nothing of the kit).

Written once for every client, without I/O: which calls a request makes
(:mod:`k8s_workloads.io.calls`) and a driver's bookkeeping of the calls in flight
(:mod:`k8s_workloads.io._inflight`); each client module keeps only its I/O.

Every response is read to its end and released, so connections go back to the client's
pool and are reused. Lists are read in pages (``limit`` + ``continue``; an expired token
starts the list again).
"""

from __future__ import annotations

__all__: list[str] = []
