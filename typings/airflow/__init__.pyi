# Typing stand-in for the parts of Apache Airflow that tests/compat calls, so that
# mypy --strict passes in .venv, where Airflow is not installed. Only what the parity
# tests use is declared; the signatures follow apache-airflow-core 3.3.2.

__version__: str
