"""The bounds on what users hand the CLI and the simulator, in one place.

Imports nothing, so the CLI can show them in its help without loading YAML. Each is
re-exported where it applies: :mod:`k8s_workloads.cli` (files read, YAML nodes) and
:mod:`k8s_workloads.sim` (scenarios). A watch stream's bound is
:data:`k8s_workloads.watch.streams.MAX_OBJECT_SIZE`.
"""

from __future__ import annotations

__all__ = [
    "MAX_INPUT_BYTES",
    "MAX_SCENARIO_BYTES",
    "MAX_SCENARIO_ENTRIES",
    "MAX_YAML_DEPTH",
    "MAX_YAML_NODES",
]

MAX_INPUT_BYTES = 4 * 1024 * 1024
"""The largest file ``decode`` and ``render`` read: annotations, workload, template, override.

The API server refuses a request over 3 MiB, so no pod comes of a larger one. Reading
stops one byte past the limit, so ``--template /dev/zero`` is refused at once.
"""

MAX_YAML_NODES = 100_000
"""The most nodes (mappings, lists, scalars) a pod template or override may stand for.

Counted with every YAML alias written out: a 500-byte document of nested aliases stands
for billions. 100,000 is some 30 times a large production template; ``render
--max-yaml-nodes`` raises it.
"""

MAX_YAML_DEPTH = 100
"""The deepest YAML nesting read (a pod manifest is about 12 deep); PyYAML recurses per level."""

MAX_SCENARIO_BYTES = 64 * 1024 * 1024
"""The largest scenario file read (a million entries written out take about 40 MiB)."""

MAX_SCENARIO_ENTRIES = 100_000
"""The most entries a scenario may expand to, YAML aliases written out.

Entries are its workloads, pod scripts, steps, creation errors, restarts and watch
errors, all counted: a 3 KB file of nested aliases made 8 million steps (75 s, 1.5 GB
before it was refused). 100,000 entries read in under a second; ``simulate
--max-entries`` (``max_entries=`` in the library) raises it.
"""
