"""``decode`` and ``demo``: pod annotations to the workload key they describe."""

from __future__ import annotations

import json
from importlib import resources
from typing import TYPE_CHECKING, TextIO

from k8s_workloads import compat
from k8s_workloads.cli._args import Command, option
from k8s_workloads.cli._io import UsageError, parse_json, read_text
from k8s_workloads.display import one_line
from k8s_workloads.pods.codec import InvalidAnnotations, annotations_to_key

if TYPE_CHECKING:
    import argparse

DEMO_AIRFLOW_VERSION = "3.3.2"
"""The Airflow version the bundled demo pretends to run (callbacks on)."""


def run_decode(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO) -> int:
    annotations = parse_json(read_text(args.file, stdin), args.file)
    if not isinstance(annotations, dict):
        raise UsageError(f"{args.file}: expected a JSON object of annotations")
    labels = parse_json(args.labels, "--labels") if args.labels is not None else None
    if labels is not None and not isinstance(labels, dict):
        raise UsageError("--labels: expected a JSON object")
    text = args.airflow_version or compat.installed_airflow_version()
    # Parsed here, once: a bad --airflow-version is a usage error, whatever the pod.
    version = None if text is None else compat.AirflowVersion.parse(text)
    try:
        key = annotations_to_key(annotations, labels, airflow_version=version)
    except InvalidAnnotations as error:
        print(one_line(f"k8s-workloads decode: {type(error).__name__}: {error}"), file=err)
        return 1
    print(json.dumps(key.to_json(), sort_keys=True), file=out)
    return 0


def run_demo(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO) -> int:  # noqa: ARG001
    examples = json.loads(
        resources.files("k8s_workloads").joinpath("examples/pods.json").read_text("utf-8")
    )
    print(
        f"Decoding the bundled example pods (Airflow {DEMO_AIRFLOW_VERSION} unless noted):",
        file=out,
    )
    for example in examples:
        version = example.get("airflow_version", DEMO_AIRFLOW_VERSION)
        try:
            key = annotations_to_key(
                example["annotations"], example.get("labels"), airflow_version=version
            )
            shown = json.dumps(key.to_json(), sort_keys=True)
        except InvalidAnnotations as error:
            shown = f"{type(error).__name__}: {error}"
        print(f"\n  {example['name']} (Airflow {version})\n    -> {shown}", file=out)
    return 0


COMMANDS = (
    Command(
        name="decode",
        help="pod annotations (JSON) to the workload key they describe (JSON)",
        run=run_decode,
        options=(
            option("file", nargs="?", default="-", help="annotations JSON file, or - (stdin)"),
            option("--labels", help="the pod's labels as a JSON object"),
            option(
                "--airflow-version",
                help="the Airflow version to decode for (callbacks need 3.3+); "
                "default: the installed Airflow's, else none",
            ),
        ),
    ),
    Command(name="demo", help="decode the bundled example pods", run=run_demo),
)
"""``decode`` and ``demo``."""
