# Package marker for airflow.utils.state (see typings/airflow/__init__.pyi).
