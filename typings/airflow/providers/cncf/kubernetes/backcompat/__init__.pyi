# airflow.providers.cncf.kubernetes.backcompat (provider 10.25.0): the annotation key of
# the run's date ("logical_date" on Airflow 3, "execution_date" on 2).

def get_logical_date_key() -> str: ...
