"""Hypothesis profiles shared by the whole suite.

``ci`` (the default) is derandomised and bounded so the suite's run time is stable on
the 2-core CI machines; ``thorough`` is for local bug hunting. Choose with the
``HYPOTHESIS_PROFILE`` environment variable (``scripts/dev.py test --thorough``).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=150,
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "thorough",
    max_examples=3000,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
