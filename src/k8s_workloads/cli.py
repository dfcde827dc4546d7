"""The ``k8s-workloads`` console script.

The face of the library: it reads files and standard input, prints, and sets exit
codes; every decision it shows is made by the pure core.
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib import resources
from typing import TYPE_CHECKING, Any, TextIO

from k8s_workloads import __version__
from k8s_workloads.codec import InvalidAnnotations, annotations_to_key
from k8s_workloads.compat import InvalidVersion, installed_airflow_version, release_tuple
from k8s_workloads.keys import CallbackKey, WorkloadKey

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["key_to_json", "main"]

DEMO_AIRFLOW_VERSION = "3.3.2"
"""The Airflow version the bundled demo pretends to run (callbacks on)."""


class UsageError(Exception):
    """Bad command-line input: reported on stderr with exit status 2."""


def key_to_json(key: WorkloadKey) -> dict[str, Any]:
    """A key as a JSON object with a ``kind`` discriminator."""
    if isinstance(key, CallbackKey):
        return {"kind": "callback", "id": key.id}
    return {
        "kind": "task",
        "dag_id": key.dag_id,
        "task_id": key.task_id,
        "run_id": key.run_id,
        "try_number": key.try_number,
        "map_index": key.map_index,
    }


def _read_json(path: str, stdin: TextIO) -> object:
    try:
        if path == "-":
            return json.load(stdin)
        with open(path, encoding="utf-8") as handle:  # noqa: PTH123
            return json.load(handle)
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise UsageError(f"{path}: not JSON: {error}") from None


def _parse_object(text: str, what: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise UsageError(f"{what}: not JSON: {error}") from None


def _decode(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO) -> int:
    annotations = _read_json(args.file, stdin)
    if not isinstance(annotations, dict):
        raise UsageError(f"{args.file}: expected a JSON object of annotations")
    labels = _parse_object(args.labels, "--labels") if args.labels is not None else None
    if labels is not None and not isinstance(labels, dict):
        raise UsageError("--labels: expected a JSON object")
    version = args.airflow_version or installed_airflow_version()
    if version is not None:
        release_tuple(version)  # a bad --airflow-version is a usage error, whatever the pod
    try:
        key = annotations_to_key(annotations, labels, airflow_version=version)
    except InvalidAnnotations as error:
        print(f"k8s-workloads decode: {type(error).__name__}: {error}", file=err)
        return 1
    print(json.dumps(key_to_json(key), sort_keys=True), file=out)
    return 0


def _demo(out: TextIO) -> int:
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
            shown = json.dumps(key_to_json(key), sort_keys=True)
        except InvalidAnnotations as error:
            shown = f"{type(error).__name__}: {error}"
        print(f"\n  {example['name']} (Airflow {version})\n    -> {shown}", file=out)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="k8s-workloads",
        description="Build, read and reason about the pods of Kubernetes executors.",
    )
    parser.add_argument("--version", action="version", version=f"k8s-workloads {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    decode = sub.add_parser(
        "decode", help="pod annotations (JSON) to the workload key they describe (JSON)"
    )
    decode.add_argument("file", nargs="?", default="-", help="annotations JSON file, or - (stdin)")
    decode.add_argument("--labels", help="the pod's labels as a JSON object")
    decode.add_argument(
        "--airflow-version",
        help="the Airflow version to decode for (callbacks need 3.3+); "
        "default: the installed Airflow's, else none",
    )
    sub.add_parser("demo", help="decode the bundled example pods")
    return parser


def main(
    argv: Sequence[str] | None = None,
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    stdin: TextIO | None = None,
) -> int:
    """Run the console script; returns the exit status."""
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    inp = stdin if stdin is not None else sys.stdin
    args = _parser().parse_args(argv)
    try:
        if args.command == "decode":
            return _decode(args, out, err, inp)
        return _demo(out)
    except (UsageError, InvalidVersion) as error:
        print(f"k8s-workloads {args.command}: {error}", file=err)
        return 2
