"""Exactly once across the network (issue 29): ours against the provider's async mode.

    .venv-airflow/bin/python benchmarks/bench_network.py            # N 300, both cases
    .venv-airflow/bin/python benchmarks/bench_network.py --quick    # N 60

The real Airflow 3.3.2 executors (``k8s_workloads.airflow.KubernetesExecutor``, ours, and
the provider's ``KubernetesExecutor`` with ``async_pod_creation``) run the same N task
workloads against the kit's API server in a process of its own, 20 ms a call, its kubelet
moving each pod to Running and Succeeded, with the options an operator has by default
(``task_publish_max_retries = 0``; batch 32, 16 creations in flight). The server
(``benchmarks/_kit_server.py``) makes the network fail as production does:

* **restart**: the answers of the first 3 creations are lost (the pods are stored, the
  connections reset); once N/5 pods exist, the API server restarts — every connection
  reset, new ones refused for 8 s, the cluster kept, as etcd keeps it; once N/2 pods have
  succeeded, a load balancer stalls every open connection for 15 s, then resets them.
* **stall for ever**: once N/2 pods have succeeded, every open connection stalls and is
  never released (a silent connection): only a client that gives up on it goes on.
* **no restartPolicy**: no network fault, but a pod template without ``restartPolicy``
  (the API server defaults it to ``Always``, and the kit's kubelet restarts a container
  that exits, as a real one does). The other cases give both executors a template with
  ``restartPolicy: Never``, so that they measure the network alone.

The harness (``bench_airflow_scale.py``'s: a migrated SQLite database with one run of N
queued task instances, a fake scheduler calling ``heartbeat()`` in a tight loop, fake task
processes marking a task instance's row success once its pod exists) counts, per task:
the pods created (the server's view), the states reported, and the pod's end state (always
Succeeded here). A workload is **right** when it got exactly one pod and was reported once,
``success``. Also: failed although no pod ever ran (the faults failed it), reported failed
although its pod ran, doubled (two pods), pods left at the end, when the last result came
after the stall ended, the longest heartbeat, exceptions out of ``heartbeat()`` and the
WARNING-or-worse lines Airflow's logging wrote for the executor's process (its stdout; the
provider's watcher runs in a process of its own: its lines are not counted).

Nothing asserts on timing: targets print PASS or MISS and the script exits 0.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from _harness import Mode, Outcome, header, summarize, verdict
from bench_airflow_scale import (
    ASYNC,
    BATCH,
    CONCURRENCY,
    DAG_ID,
    EXECUTORS,
    FAULT_SERVER_COMMAND,
    JOB_ID,
    KUBECONFIG,
    NS,
    OURS,
    POD_TEMPLATE,
    TaskProcesses,
    airflow,
    airflow_env,
    airflow_version,
    cache_folder,
    database,
)

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

LATENCY = 0.02
KUBELET = 2.0
RESTART_SECONDS = 8.0
STALL_SECONDS = 15.0
DROPPED_ANSWERS = 3
SETTLE_SECONDS = 3.0
CASES = ("restart", "stall for ever", "no restartPolicy")
# Airflow's structured log lines (stdout): "<time> [warning  ] <event> [<logger>] ...".
WARNING_LINE = re.compile(r"\[(warning|error|critical|exception)\s*\]", re.IGNORECASE)
TRACEBACK = "Traceback (most recent call last)"


def run_child(spec: dict[str, Any]) -> int:
    """One executor, N workloads, heartbeats until every workload is reported; JSON out."""
    count: int = spec["n"]
    faulthandler.dump_traceback_later(spec["timeout"] + 50, exit=True)
    create_session = airflow("airflow.utils.session").create_session
    select = airflow("sqlalchemy").select
    ti_model = airflow("airflow.models.taskinstance").TaskInstance
    execute_task = airflow("airflow.executors.workloads").ExecuteTask
    module, _, name = EXECUTORS[spec["executor"]].rpartition(".")
    executor = getattr(airflow(module), name)()
    executor.job_id = JOB_ID
    executor.start()
    with create_session() as session:
        tis = session.scalars(select(ti_model).where(ti_model.dag_id == DAG_ID)).all()
        workloads = [execute_task.make(ti) for ti in tis]
        session.expunge_all()
    for workload in workloads:
        executor.queue_workload(workload, session=None)
    reported: dict[str, list[str]] = {}
    last_report = 0.0
    raised: dict[str, int] = {}
    heartbeat_max = 0.0
    started = time.monotonic()
    done_at: float | None = None
    deadline = started + spec["timeout"]
    while True:
        before = time.perf_counter()
        try:
            executor.heartbeat()
        except Exception as error:  # noqa: BLE001 - it would end a real scheduler's loop
            raised[type(error).__name__] = raised.get(type(error).__name__, 0) + 1
        heartbeat_max = max(heartbeat_max, time.perf_counter() - before)
        for key, (state, _info) in executor.get_event_buffer().items():
            text = str(getattr(state, "value", state))
            if text in {"success", "failed"}:
                reported.setdefault(key.task_id, []).append(text)
                last_report = time.time()
        now = time.monotonic()
        if done_at is None and len(reported) >= count:
            done_at = now
        if (done_at is not None and now - done_at >= SETTLE_SECONDS) or now >= deadline:
            break
        time.sleep(0)
    document = {
        "reported": reported,
        "last_report": last_report,
        "raised": raised,
        "heartbeat_max_s": heartbeat_max,
        "all_reported_s": None if done_at is None else done_at - started,
    }
    # Written before end() too: a run whose end() never returns keeps its figures.
    sys.stdout.write(json.dumps(document) + "\n")
    sys.stdout.flush()
    ending = time.monotonic()
    executor.end()
    sys.stdout.write(json.dumps(document | {"end_s": time.monotonic() - ending}) + "\n")
    sys.stdout.flush()
    return 0


@dataclass(frozen=True)
class Case:
    executor: str
    n: int
    kind: str  # one of CASES

    @property
    def label(self) -> str:
        return f"{self.executor}, N={self.n:,}, {self.kind}"


@dataclass
class Result:
    case: Case
    child: dict[str, Any] = field(default_factory=dict)
    server: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    def figures(self) -> dict[str, Any]:
        """The table's figures, from what the executor reported and the server saw."""
        network = self.server.get("network", {})
        pods = {task: int(n) for task, n in network.get("created_per_task", {}).items()}
        reported: dict[str, list[str]] = self.child.get("reported", {})
        tasks = [f"t{number:05d}" for number in range(self.case.n)]
        right = sum(1 for t in tasks if pods.get(t, 0) == 1 and reported.get(t) == ["success"])
        failed = [t for t in tasks if "failed" in reported.get(t, [])]
        stall_end = network.get("stall_ended_at")
        last = self.child.get("last_report") or None
        return {
            "right": right,
            "failed_no_pod": sum(1 for t in failed if pods.get(t, 0) == 0),
            "failed_ran": sum(1 for t in failed if pods.get(t, 0) > 0),
            "doubled": sum(1 for t in tasks if pods.get(t, 0) > 1),
            "reported_twice": sum(1 for t in tasks if len(reported.get(t, [])) > 1),
            "unreported": sum(1 for t in tasks if t not in reported),
            "pods_left": network.get("pods_left"),
            "restarts": network.get("container_restarts"),
            "after_stall_s": None if stall_end is None or last is None else last - stall_end,
            "after_stall_start_s": None
            if last is None or "stall_at" not in network
            else last - network["stall_at"],
            "heartbeat_max_s": self.child.get("heartbeat_max_s"),
            "raised": sum(self.child.get("raised", {}).values()),
            "warnings": self.child.get("warnings"),
            "tracebacks": self.child.get("tracebacks"),
        }


@contextlib.contextmanager
def api_server(case: Case, lifetime: float) -> Iterator[str]:
    stall_seconds = -1.0 if case.kind == "stall for ever" else STALL_SECONDS
    command = [
        *FAULT_SERVER_COMMAND,
        *("--port", "0", "--latency", str(LATENCY), "--lifetime", str(lifetime)),
        *("--kubelet", str(KUBELET)),
    ]
    if case.kind == "no restartPolicy":
        command += ["--count-pods"]
    else:
        command += ["--stall-after-succeeded", str(case.n // 2)]
        command += ["--stall-seconds", str(stall_seconds)]
    if case.kind == "restart":
        command += [
            *("--drop-create-answers", str(DROPPED_ANSWERS)),
            *("--restart-after-creates", str(case.n // 5)),
            *("--restart-seconds", str(RESTART_SECONDS)),
        ]
    process = subprocess.Popen(  # noqa: S603 - our own command line
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=os.environ.copy()
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        if not url.startswith("http"):
            raise RuntimeError(f"the API server did not start: {url!r}")
        yield url
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def run_case(case: Case, *, timeout: float, keep: bool) -> Result:
    result = Result(case)
    home = Path(tempfile.mkdtemp(prefix="net-", dir=cache_folder()))
    (home / "dags").mkdir()
    shutil.copyfile(database(case.n), home / "airflow.db")
    with api_server(case, timeout + 600) as url:  # it outlives a hung run's kill
        (home / "kubeconfig").write_text(KUBECONFIG.format(url=url, ns=NS))
        template = POD_TEMPLATE
        if case.kind == "no restartPolicy":
            template = template.replace("  restartPolicy: Never\n", "")
        (home / "pod_template.yaml").write_text(template)
        watcher = TaskProcesses(url, home / "airflow.db")
        watcher.start()
        env = airflow_env(home) | {
            "AIRFLOW__CORE__EXECUTOR": EXECUTORS[case.executor],
            "AIRFLOW__CORE__PARALLELISM": str(max(case.n, 32)),
            "AIRFLOW__KUBERNETES_EXECUTOR__IN_CLUSTER": "False",
            "AIRFLOW__KUBERNETES_EXECUTOR__CONFIG_FILE": str(home / "kubeconfig"),
            "AIRFLOW__KUBERNETES_EXECUTOR__NAMESPACE": NS,
            "AIRFLOW__KUBERNETES_EXECUTOR__POD_TEMPLATE_FILE": str(home / "pod_template.yaml"),
            "AIRFLOW__KUBERNETES_EXECUTOR__WORKER_CONTAINER_REPOSITORY": "apache/airflow",
            "AIRFLOW__KUBERNETES_EXECUTOR__WORKER_CONTAINER_TAG": "3.3.2",
            "AIRFLOW__KUBERNETES_EXECUTOR__WORKER_PODS_CREATION_BATCH_SIZE": str(BATCH),
            "AIRFLOW__KUBERNETES_EXECUTOR__ASYNC_POD_CREATION": "True",
            "AIRFLOW__KUBERNETES_EXECUTOR__POD_CREATION_MAX_CONCURRENCY": str(CONCURRENCY),
            "AIRFLOW__KUBERNETES_EXECUTOR__DELETE_WORKER_PODS": "True",
        }
        spec = {"executor": case.executor, "n": case.n, "timeout": timeout}
        with (home / "executor.log").open("w") as log:
            child = subprocess.Popen(  # noqa: S603 - this script
                [sys.executable, str(Path(__file__).resolve()), "--run", json.dumps(spec)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                start_new_session=True,
            )
            try:
                stdout, _ = child.communicate(timeout=timeout + 60)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                stdout, _ = child.communicate()
                result.error = f"hung (killed); see {home / 'executor.log'}"
        with urllib.request.urlopen(f"{url}/_kit/stats", timeout=30) as answer:  # noqa: S310
            result.server = json.loads(answer.read())
        watcher.stop()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signal.SIGKILL)
    lines = stdout.strip().splitlines()
    documents = [line for line in lines if line.startswith('{"reported"')]
    if not documents:
        result.error = result.error or f"exit {child.returncode}; see {home / 'executor.log'}"
        return result
    if result.error is None and child.returncode != 0:
        result.error = f"exit {child.returncode}; see {home / 'executor.log'}"
    result.child = json.loads(documents[-1])
    # The executor process's log is its stdout (Airflow logs there), beside the JSON lines.
    logged = [line for line in lines if not line.startswith('{"reported"')]
    result.child["warnings"] = sum(1 for line in logged if WARNING_LINE.search(line))
    result.child["tracebacks"] = sum(1 for line in logged if TRACEBACK in line)
    (home / "executor.out").write_text("\n".join(logged) + "\n")
    if result.error is not None:
        result.error = result.error.replace("hung (killed)", "end() hung (killed)")
        return result
    if not keep:
        shutil.rmtree(home, ignore_errors=True)
    return result


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


ROWS = (
    ("right", "run once, reported with the pod's end state"),
    ("failed_no_pod", "failed by the faults (no pod ever ran)"),
    ("failed_ran", "reported failed although their pod ran"),
    ("doubled", "got two pods (ran twice)"),
    ("reported_twice", "reported twice"),
    ("unreported", "never reported"),
    ("pods_left", "pods left at the end"),
    ("restarts", "containers restarted by the kubelet"),
    ("after_stall_s", "last result after the stall ended (s)"),
    ("after_stall_start_s", "last result after the stall began (s)"),
    ("heartbeat_max_s", "longest heartbeat (s)"),
    ("raised", "exceptions out of heartbeat()"),
    ("warnings", "WARNING-or-worse log lines (executor process)"),
    ("tracebacks", "... of them with a traceback"),
)


def print_table(results: Sequence[Result], kind: str) -> None:
    chosen = [result for result in results if result.case.kind == kind]
    if not chosen:
        return
    header(f"{kind}: N={chosen[0].case.n:,}, 20 ms a call")
    print(f"  {'':<46}" + "".join(f"{r.case.executor:>16}" for r in chosen))
    figures = [r.figures() if r.child else {} for r in chosen]
    for name, text in ROWS:
        cells = []
        for result, figure in zip(chosen, figures, strict=True):
            if not result.child:
                cells.append("error")
                continue
            value = figure.get(name)
            cells.append(_s(value) if isinstance(value, float) else str(value))
        print(f"  {text:<46}" + "".join(f"{cell:>16}" for cell in cells))
    ends = [_s(r.child.get("end_s")) if "end_s" in r.child else "hung" for r in chosen]
    print(f"  {'end() (s)':<46}" + "".join(f"{cell:>16}" for cell in ends))
    for result in chosen:
        if result.error:
            print(f"  {result.case.label}: {result.error}")


def targets(results: Sequence[Result]) -> list[Outcome]:
    header("Targets (ours)")
    outcomes: list[Outcome] = []

    def check(name: str, passed: bool | None, shown: str) -> None:
        print(f"  {name}: {shown}  {verdict(passed)}")
        outcomes.append(Outcome.of(name, passed))

    for result in results:
        if result.case.executor != OURS:
            continue
        kind, n = result.case.kind, result.case.n
        if result.error:
            check(f"{kind}: every workload right", None, result.error)
            continue
        f = result.figures()
        check(
            f"{kind}: {n}/{n} right, 0 failed, 0 doubled, no pod left",
            f["right"] == n and f["doubled"] == 0 and f["pods_left"] == 0,
            f"{f['right']}/{n} right, {f['failed_no_pod'] + f['failed_ran']} failed,"
            f" {f['doubled']} doubled, {f['pods_left']} left",
        )
        hb = f["heartbeat_max_s"] or 0.0
        check(f"{kind}: heartbeats <= 3 s", hb <= 3.0, f"{hb:.2f} s")
        check(f"{kind}: no exception out of heartbeat()", f["raised"] == 0, str(f["raised"]))
        if kind == "no restartPolicy":
            continue
        if kind == "restart":
            after = f["after_stall_s"]
            check(
                "restart: results within 30 s after the stall",
                None if after is None else after <= 30.0,
                f"{_s(after)} s",
            )
        else:
            after = f["after_stall_start_s"]
            check(
                "stall for ever: recovered within 2 minutes",
                None if after is None else after <= 120.0,
                f"last result {_s(after)} s after the stall began",
            )
    return outcomes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="exactly once across the network")
    parser.add_argument("--quick", action="store_true", help="N=60")
    parser.add_argument("--n", type=int, help="workloads per run (default 300; --quick 60)")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--executors", default=f"{OURS},{ASYNC}")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per run at most")
    parser.add_argument("--keep", action="store_true", help="keep each run's AIRFLOW_HOME")
    parser.add_argument("--run", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run is not None:
        return run_child(json.loads(args.run))
    mode = Mode(quick=bool(args.quick))
    n = args.n or (60 if mode.quick else 300)
    kinds = [kind for kind in args.cases.split(",") if kind]
    executors = [name for name in args.executors.split(",") if name]
    print(f"python {sys.version.split()[0]}, apache-airflow {airflow_version()}, mode {mode.name}")
    cases = [Case(executor, n, kind) for kind in kinds for executor in executors]
    header("Runs")
    results = []
    for case in cases:
        began = time.monotonic()
        print(f"  {case.label} ...", end="", flush=True)
        # A pod that restarts for ever never ends, nor does a run that never gives up on a
        # silent connection: two and four minutes show it.
        timeout = {"no restartPolicy": 120.0, "stall for ever": 240.0}.get(case.kind, args.timeout)
        timeout = min(args.timeout, timeout)
        results.append(run_case(case, timeout=timeout, keep=args.keep))
        error = results[-1].error
        print(f" {time.monotonic() - began:.0f} s{' ' + error if error else ''}")
    for kind in CASES:
        print_table(results, kind)
    return summarize(targets(results))


if __name__ == "__main__":
    sys.exit(main())
