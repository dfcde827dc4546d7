"""A throw-away PostgreSQL server for the tests that need a database several processes share.

:class:`PostgresServer` runs the Debian package's ``initdb`` and ``postgres`` (the newest
``/usr/lib/postgresql/<version>/bin``, else the ones on ``PATH``) in a temporary directory,
listening on 127.0.0.1 at a free port with its socket in that directory; the cluster's one
user, ``airflow``, is trusted without a password (no other user can reach the port's
socket directory, and nothing but this machine reaches 127.0.0.1). PostgreSQL refuses to run
as root: as root the server runs as ``nobody`` (``setpriv``), the directory handed over to
that user. ``fsync`` is off: a test's data need not survive a power cut.

:meth:`PostgresServer.close` stops it (``pg_ctl stop -m fast``, then SIGKILL of its process
group) and removes the directory. :func:`postgres_bin` says where the programs are, or why
there are none: ``scripts/dev.py test`` installs the package where it can, and a test
module skips with that reason where it could not.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

_NOBODY = 65534
_START_SECONDS = 60.0
_STOP_SECONDS = 20.0
_LIFETIME = 3600.0  # the server stops by itself if the test's process never stops it
USER = "airflow"


def postgres_bin() -> Path | str:
    """The folder holding ``initdb``, ``postgres`` and ``pg_ctl``, or why there is none."""
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda path: int(path.parent.parent.name) if path.parent.parent.name.isdigit() else 0,
    )
    if found:
        return found[-1].parent
    on_path = shutil.which("initdb")
    if on_path is not None:
        return Path(on_path).parent
    return (
        "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb, no initdb on PATH);"
        " `scripts/dev.py test` installs it as root where apt-get exists"
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class PostgresServer:
    """A PostgreSQL server on 127.0.0.1 (see the module's description); ``url``: the
    SQLAlchemy URL of its ``postgres`` database for ``psycopg2``."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="k8s-workloads-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.url = f"postgresql+psycopg2://{USER}@127.0.0.1:{self.port}/postgres"
        self.process: subprocess.Popen[bytes] | None = None
        self.log = self.root / "postgres.log"
        as_root = os.geteuid() == 0
        # setpriv drops root for every program below; the files become that user's.
        self._as_user = (
            ["setpriv", f"--reuid={_NOBODY}", f"--regid={_NOBODY}", "--clear-groups"]
            if as_root
            else []
        )
        if as_root:
            os.chown(self.root, _NOBODY, _NOBODY)
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    def _run(self, *command: str) -> None:
        done = subprocess.run(
            [*self._as_user, *command],
            cwd=self.root,
            capture_output=True,
            text=True,
            check=False,
            timeout=_START_SECONDS,
        )
        if done.returncode != 0:
            message = f"{command[0]} failed ({done.returncode}): {done.stdout}{done.stderr}"
            raise RuntimeError(message)

    def _start(self) -> None:
        self._run(
            str(self.bin_dir / "initdb"),
            "--pgdata",
            str(self.data),
            "--username",
            USER,
            "--auth",
            "trust",
            "--encoding",
            "UTF8",
            "--no-sync",
        )
        bounded = shutil.which("timeout")
        lifetime = [bounded, "--kill-after=10", f"{_LIFETIME:.0f}"] if bounded else []
        with self.log.open("ab") as output:
            self.process = subprocess.Popen(
                [
                    *lifetime,
                    *self._as_user,
                    str(self.bin_dir / "postgres"),
                    "-D",
                    str(self.data),
                    "-h",
                    "127.0.0.1",
                    "-p",
                    str(self.port),
                    "-k",
                    str(self.root),
                    "-c",
                    "fsync=off",
                    "-c",
                    "full_page_writes=off",
                    "-c",
                    "synchronous_commit=off",
                    "-c",
                    "max_connections=300",
                ],
                cwd=self.root,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + _START_SECONDS
        while not self._accepts():
            if self.process.poll() is not None:
                raise RuntimeError(f"postgres exited: {self.log.read_text(errors='replace')}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"postgres not ready: {self.log.read_text(errors='replace')}")
            time.sleep(0.1)

    def _accepts(self) -> bool:
        done = subprocess.run(
            [str(self.bin_dir / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)],
            capture_output=True,
            check=False,
        )
        return done.returncode == 0

    def close(self) -> None:
        """Stop the server (a fast shutdown, then SIGKILL) and remove its directory."""
        try:
            if self.process is not None and self.process.poll() is None:
                with contextlib.suppress(subprocess.TimeoutExpired, RuntimeError):
                    self._run(
                        str(self.bin_dir / "pg_ctl"),
                        "stop",
                        "-D",
                        str(self.data),
                        "-m",
                        "fast",
                        "-w",
                        "-t",
                        f"{_STOP_SECONDS:.0f}",
                    )
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=_STOP_SECONDS)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PostgresServer:  # noqa: PYI034 - no typing.Self on Python 3.10
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
