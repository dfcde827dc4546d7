"""Watch reading: pod watch events to workload results.

:mod:`~k8s_workloads.watch.events` resolves one event (the provider's watcher, row by
row); :mod:`~k8s_workloads.watch.failures` says what a failed pod's containers mean;
:mod:`~k8s_workloads.watch.streams` reads recorded streams; the pod view
(``_podstatus``) and the typed decoder of a watch line (``_watchjson``) are private.
"""
