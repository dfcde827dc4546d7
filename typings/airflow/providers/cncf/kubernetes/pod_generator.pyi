# airflow.providers.cncf.kubernetes.pod_generator (provider 10.25.0): only the label
# helpers, the pod builder and the merge tests/compat calls. The provider leaves the
# builders' parameters unannotated; the types here are the ones its executor passes.

import datetime
from collections.abc import Mapping, Sequence

from kubernetes.client import V1Pod

from airflow.providers.cncf.kubernetes.exceptions import (
    PodMutationHookException as PodMutationHookException,
    PodReconciliationError as PodReconciliationError,
)

def make_safe_label_value(string: str) -> str: ...
def datetime_to_label_safe_datestring(datetime_obj: datetime.datetime) -> str: ...
def label_safe_datestring_to_datetime(string: str) -> datetime.datetime: ...

class PodGenerator:
    @classmethod
    def build_selector_for_k8s_executor_pod(
        cls,
        *,
        dag_id: str,
        task_id: str,
        try_number: int,
        map_index: int | None = None,
        logical_date: datetime.datetime | None = None,
        run_id: str | None = None,
        airflow_worker: str | int | None = None,
        include_version: bool = False,
    ) -> str: ...
    @classmethod
    def build_labels_for_k8s_executor_pod(
        cls,
        *,
        dag_id: str,
        task_id: str,
        try_number: int,
        airflow_worker: str | int | None = None,
        map_index: int | None = None,
        logical_date: datetime.datetime | None = None,
        run_id: str | None = None,
        include_version: bool = True,
    ) -> dict[str, str]: ...

    # Pod construction and merging. Pods are the kubernetes client's V1Pod (36.x at run
    # time in .venv-airflow; mypy sees the 37.x class, which stands in here).
    @staticmethod
    def reconcile_pods(base_pod: V1Pod, client_pod: V1Pod | None) -> V1Pod: ...
    @classmethod
    def construct_pod(
        cls,
        dag_id: str,
        task_id: str,
        pod_id: str,
        try_number: int,
        kube_image: str | None,
        date: datetime.datetime | None,
        args: Sequence[str],
        pod_override_object: V1Pod | None,
        base_worker_pod: V1Pod,
        namespace: str,
        scheduler_job_id: str | int,
        run_id: str | None = None,
        map_index: int = -1,
        *,
        with_mutation_hook: bool = False,
    ) -> V1Pod: ...
    @staticmethod
    def serialize_pod(pod: V1Pod) -> dict[str, object]: ...
    @staticmethod
    def deserialize_model_dict(pod_dict: Mapping[str, object] | None) -> V1Pod: ...
