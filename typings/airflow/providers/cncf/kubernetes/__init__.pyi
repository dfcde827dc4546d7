# apache-airflow-providers-cncf-kubernetes (10.25.0); see typings/airflow/__init__.pyi.

__version__: str
