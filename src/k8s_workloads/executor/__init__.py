"""The executor core: the whole executor loop as one sans-I/O state machine.

:class:`~k8s_workloads.executor.core.ExecutorCore` takes what happened (jobs, watch
events, state answers, completions) and answers with requests
(:mod:`~k8s_workloads.executor.requests`); the executor performs them. It is configured
with an :class:`~k8s_workloads.executor.config.ExecutorConfig`. Its parts are private:
the state and the requests in flight (``_base``), results to decisions to requests
(``_handling``), the pod-creation queue (``_creation``) and adoption (``_adopting``).

This package replaces the module ``k8s_workloads.executor`` and offers its public names.
"""

from k8s_workloads.executor import config, core, requests
from k8s_workloads.executor.config import *  # noqa: F403
from k8s_workloads.executor.core import *  # noqa: F403
from k8s_workloads.executor.requests import *  # noqa: F403

__all__: list[str] = []
__all__ += config.__all__
__all__ += core.__all__
__all__ += requests.__all__
