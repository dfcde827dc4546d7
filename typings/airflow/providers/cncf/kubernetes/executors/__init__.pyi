# Package marker (see typings/airflow/__init__.pyi).
