# airflow.models.callback (apache-airflow-core 3.3.2): the executor's callback key, a
# frozen dataclass holding the callback's UUID as text.

from dataclasses import dataclass

@dataclass(frozen=True, slots=True)
class CallbackKey:
    id: str
