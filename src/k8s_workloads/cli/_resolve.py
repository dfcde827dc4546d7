"""``resolve``: what each event of a pod watch stream means for its workload, printed as
the event arrives."""

from __future__ import annotations

import contextlib
import json
from importlib import resources
from typing import TYPE_CHECKING, TextIO, cast

from k8s_workloads import compat
from k8s_workloads.cli._args import Command, option
from k8s_workloads.cli._decode import DEMO_AIRFLOW_VERSION
from k8s_workloads.cli._io import UsageError
from k8s_workloads.display import one_line, printable, shown

if TYPE_CHECKING:
    import argparse
    import datetime
    from collections.abc import Iterator

    from k8s_workloads.pods.redaction import Masker
    from k8s_workloads.watch.resolution import Resolution, ResolverConfig
    from k8s_workloads.watch.streams import WatchInput

WATCH_EXAMPLE = "examples/watch_events.jsonl"
"""The bundled watch stream ``resolve --example`` reads."""
_READ_SIZE = 1 << 16
"""``resolve`` reads at most this many characters at a time (a line, if shorter)."""


def _parse_now(text: str) -> datetime.datetime:
    import datetime  # noqa: PLC0415

    try:
        parsed = datetime.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"--now {shown(text)}: not an ISO 8601 date and time (e.g. 2026-06-07T10:15:00Z)"
        ) from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=datetime.timezone.utc)


def _resolve_config(args: argparse.Namespace) -> ResolverConfig:
    from k8s_workloads.watch.failures import PendingPolicy  # noqa: PLC0415
    from k8s_workloads.watch.resolution import ResolverConfig  # noqa: PLC0415

    if args.now is not None and not args.pending_policy:
        raise UsageError("--now only applies to grace periods: add --pending-policy")
    if args.fatal_reasons is not None and args.pending_policy:
        raise UsageError(
            "--fatal-reasons and --pending-policy exclude each other: "
            "the pending policy replaces the fatal reasons"
        )
    if args.airflow_version is not None:
        text: str | None = args.airflow_version
    elif args.example:
        text = DEMO_AIRFLOW_VERSION
    else:
        text = compat.installed_airflow_version()
    # Parsed here, once: a bad --airflow-version is a usage error, whatever the pods.
    version = None if text is None else compat.AirflowVersion.parse(text)
    if args.pending_policy:
        return ResolverConfig(airflow_version=version, pending=PendingPolicy())
    if args.fatal_reasons is not None:
        return ResolverConfig(airflow_version=version, fatal_pending_reasons=args.fatal_reasons)
    return ResolverConfig(airflow_version=version)


def _chunks(handle: TextIO, where: str) -> Iterator[str]:
    """The stream's text as it arrives: a line at a time, never more than _READ_SIZE."""
    while True:
        try:
            chunk = handle.readline(_READ_SIZE)
        except OSError as error:
            raise UsageError(f"cannot read {where}: {error.strerror or error}") from None
        if not chunk:
            return
        yield chunk


def _detail_value(value: object) -> str:
    if isinstance(value, str) and value and not any(c in value for c in " ,=\"'"):
        return value
    return json.dumps(value)


def _explain_lines(item: WatchInput, resolution: Resolution) -> list[str]:
    where = [f"line {item.line}"]
    if resolution.event_type is not None:
        where.append(f"{resolution.event_type} event")
    if resolution.resource_version is not None:
        where.append(f"resource version {resolution.resource_version}")
    if resolution.error_code is not None:
        where.append(f"error code {resolution.error_code}")
    lines = [", ".join(where)]
    details = resolution.failure_details
    if details:
        shown = ", ".join(
            f"{name}={_detail_value(value)}" for name, value in details.items() if value is not None
        )
        lines.append(f"failure details: {shown}")
    classification = resolution.classification
    if classification is not None:
        retry = "retryable" if classification.retryable else "not retryable"
        lines.append(
            f"classification: {classification.kind.value}, {retry}, "
            f"reason {classification.reason or '-'} (evidence: {classification.evidence})"
        )
    return [f"    {line}" for line in lines]


def _resolution_json(
    item: WatchInput, resolution: Resolution, *, explain: bool
) -> dict[str, object]:
    return {"line": item.line, **resolution.to_json(explain=explain)}


def _resolution_text(
    item: WatchInput, resolution: Resolution, *, explain: bool, masker: Masker
) -> str:
    pod = "-"
    if resolution.pod_name is not None:
        pod = f"{resolution.namespace or '-'}/{resolution.pod_name}"
    state = "-" if resolution.state is None else resolution.state.value
    key = "-" if resolution.key is None else resolution.key.to_text()
    summary = f"{pod} {key} {resolution.outcome.value} {state} {resolution.reason}"
    lines = [summary]
    if explain:
        lines += _explain_lines(item, resolution)
    # Each line escaped on its own: no value can add a line or move the cursor.
    return "\n".join(printable(masker.text(line)) for line in lines)


def _event_masker(item: WatchInput) -> Masker:
    """Masks the event's pod's own token (from its args) and anything token-shaped."""
    from k8s_workloads.pods.redaction import message_masker, pod_args_tokens  # noqa: PLC0415

    event = getattr(item, "event", None)
    pod = event.get("object") if isinstance(event, dict) else None
    return message_masker(pod_args_tokens(pod))


def _print_summary(counts: dict[str, int], out: TextIO, *, as_json: bool) -> None:
    from k8s_workloads.watch.resolution import Outcome  # noqa: PLC0415

    total = sum(counts.values())
    ordered = {o.value: counts[o.value] for o in Outcome if counts.get(o.value)}
    if as_json:
        print(json.dumps({"summary": {"inputs": total, "outcomes": ordered}}), file=out)
    else:
        print(f"summary: {total} input{'' if total == 1 else 's'}", file=out)
        for outcome, count in ordered.items():
            print(f"  {outcome:<22}{count:>7}", file=out)
    out.flush()


def _open_stream(args: argparse.Namespace, stdin: TextIO, err: TextIO) -> tuple[TextIO, str]:
    if args.example:
        if args.file is not None:
            raise UsageError("give a FILE or --example, not both")
        handle = (
            resources.files("k8s_workloads").joinpath(WATCH_EXAMPLE).open("r", encoding="utf-8")
        )
        return cast("TextIO", handle), f"the bundled {WATCH_EXAMPLE}"
    if args.file is None or args.file == "-":
        reconfigure = getattr(stdin, "reconfigure", None)
        if reconfigure is not None:
            # JSON is UTF-8 (RFC 8259), whatever the locale; bad bytes become U+FFFD and
            # then a malformed line, never a traceback.
            with contextlib.suppress(OSError, ValueError):  # already read from, or not a file
                reconfigure(encoding="utf-8", errors="replace")
        if stdin.isatty():
            print("k8s-workloads resolve: reading watch events from standard input", file=err)
        return stdin, "standard input"
    try:
        handle = open(args.file, encoding="utf-8", errors="replace")  # noqa: PTH123, SIM115
    except OSError as error:
        raise UsageError(f"cannot read {args.file}: {error.strerror or error}") from None
    return handle, args.file


def run_resolve(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO) -> int:
    from k8s_workloads.watch.resolution import Outcome  # noqa: PLC0415
    from k8s_workloads.watch.streams import MalformedInput, resolve_watch_stream  # noqa: PLC0415

    config = _resolve_config(args)
    now = _parse_now(args.now) if args.now is not None else None
    handle, where = _open_stream(args, stdin, err)
    counts: dict[str, int] = {}
    malformed = Outcome.MALFORMED.value
    try:
        inputs = _chunks(handle, where)
        for item, resolution in resolve_watch_stream(inputs, config=config, now=now):
            if isinstance(item, MalformedInput) or resolution is None:
                error = item.error if isinstance(item, MalformedInput) else "unreadable"
                counts[malformed] = counts.get(malformed, 0) + 1
                print(f"k8s-workloads resolve: line {item.line}: {one_line(error)}", file=err)
                err.flush()
                continue
            counts[resolution.outcome.value] = counts.get(resolution.outcome.value, 0) + 1
            masker = _event_masker(item)
            if resolution.outcome is Outcome.MALFORMED:
                reason = printable(masker.text(resolution.reason))
                print(f"k8s-workloads resolve: line {item.line}: {reason}", file=err)
                err.flush()
                continue
            if args.json:
                record = _resolution_json(item, resolution, explain=args.explain)
                text = json.dumps(masker.json_value(record))
            else:
                text = _resolution_text(item, resolution, explain=args.explain, masker=masker)
            print(text, file=out)
            out.flush()
    except KeyboardInterrupt:  # the usual end of watching a live stream
        if args.summary:
            _print_summary(counts, out, as_json=args.json)
        return 130
    finally:
        if handle is not stdin:
            handle.close()
    if args.summary:
        _print_summary(counts, out, as_json=args.json)
    return 0


COMMAND = Command(
    name="resolve",
    help="what each event of a pod watch stream means for its workload",
    description="Read a pod watch stream (JSON lines as the API server sends them, or "
    "kubectl get pods --watch --output-watch-events -o json) and print, for each event "
    "as it arrives, the pod, its workload, the outcome, the state to report and why. "
    "Input that is not a watch event is reported on stderr and skipped.",
    run=run_resolve,
    options=(
        option("file", nargs="?", metavar="FILE", help="the watch stream, or - (default: stdin)"),
        option("--example", action="store_true", help="read the bundled example stream instead"),
        option("--json", action="store_true", help="print one JSON object per event"),
        option(
            "--explain",
            action="store_true",
            help="add the event type, resource version, failure details and classification",
        ),
        option(
            "--airflow-version",
            help="the Airflow version to resolve for (callback pods need 3.3+); default: the "
            f"installed Airflow's, else none ({DEMO_AIRFLOW_VERSION} with --example)",
        ),
        option(
            "--fatal-reasons",
            metavar="A,B,C",
            help="container waiting reasons that fail a Pending pod at once (the provider's "
            "worker_pod_pending_fatal_container_state_reasons; empty disables); default: the "
            "provider's",
        ),
        option(
            "--pending-policy",
            action="store_true",
            help="read Pending pods with grace periods per waiting reason (PendingPolicy "
            "defaults) instead of the fatal reasons",
        ),
        option(
            "--now",
            metavar="ISO8601",
            help="the time grace periods are measured to (with --pending-policy); without it "
            "none expire",
        ),
        option("--summary", action="store_true", help="print the count of each outcome at the end"),
    ),
)
