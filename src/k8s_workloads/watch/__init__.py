"""Watch reading: pod watch events to workload results.

:mod:`~k8s_workloads.watch.events` resolves one event (the provider's watcher, row by
row); :mod:`~k8s_workloads.watch.failures` says what a failed pod's containers mean;
:mod:`~k8s_workloads.watch.streams` reads recorded streams;
:mod:`~k8s_workloads.watch.decoding` decodes a watch line only as far as resolution reads
it (the Airflow executor's watcher decodes its lines with it); the pod view
(``_podstatus``) is private.
"""
