# airflow.exceptions (apache-airflow-core 3.3.2): only the base class the provider's
# exceptions derive from.

class AirflowException(Exception): ...
