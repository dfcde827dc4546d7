# Package marker for airflow.models.taskinstancekey (see typings/airflow/__init__.pyi).
