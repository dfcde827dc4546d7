# airflow.providers.cncf.kubernetes.pod_generator (provider 10.25.0): only the label
# helpers tests/compat calls. The provider leaves the builders' parameters unannotated;
# the types here are the ones its executor passes.

import datetime

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
