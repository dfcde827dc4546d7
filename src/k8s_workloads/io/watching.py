"""How a pod watch keeps going, written once for the Airflow executor's watcher thread
(:mod:`k8s_workloads.airflow._watcher`) and the event loop's
(:class:`~k8s_workloads.io.aio.AsyncWatch`): the timeouts it asks for, the backoff after
a failure and what an outage logs.

* it asks for bookmarks (``allowWatchBookmarks``): the API server's watch cache sends an
  idle watch a ``BOOKMARK`` about every minute, which moves the version it resumes from;
* the server ends it after a time picked at random in 5-10 minutes
  (:func:`watch_seconds`), as client-go's reflector does, so the watches of many
  schedulers do not all restart at once;
* a connection on which no line came for :data:`WATCH_READ_TIMEOUT_SECONDS` (longer than
  the bookmark interval) is given up and replaced: a load balancer that dropped it
  silently cannot hang the watch, and a healthy idle one is never torn down;
* a failed watch is tried again after 1 s, doubling to 30 s, each with up to a quarter
  more at random (:func:`watch_backoff`); back to 1 s once a stream delivers a line. Each
  failure is one warning naming the API server and the error (its traceback at debug
  level), and the watch established again after failures is one info line
  (:class:`WatchRestarts`).
"""

from __future__ import annotations

import contextlib
import json
import random
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import logging

__all__ = [
    "BACKOFF_FIRST_SECONDS",
    "BACKOFF_MOST_SECONDS",
    "RELIST_WAIT_SECONDS",
    "WATCH_READ_TIMEOUT_SECONDS",
    "WATCH_SECONDS_LEAST",
    "PodWatch",
    "WatchRestarts",
    "describe_failure",
    "expired_event",
    "server_address",
    "watch_backoff",
    "watch_seconds",
]

WATCH_SECONDS_LEAST = 300
"""The shortest server-side timeout of a watch (``timeoutSeconds``); each watch asks for
between this and twice this, at random (client-go's reflector: ``minWatchTimeout``)."""

WATCH_READ_TIMEOUT_SECONDS = 90.0
"""How long a watch connection may stay silent before it is replaced. Longer than the
interval of the API server's bookmarks to an idle watch (about a minute: the watch
cache's), so only a dead connection reaches it; short enough that one is replaced within
two minutes."""

BACKOFF_FIRST_SECONDS = 1.0
BACKOFF_MOST_SECONDS = 30.0
RELIST_WAIT_SECONDS = 30.0
"""The longest a watch waits for the core's re-list under way before it watches from now
(then from its list's version once the re-list ends): one namespace whose lists keep
failing does not blind every watch."""
_JITTER = 0.25
"""A restart waits up to this share more, at random: schedulers that lost one API
server at once do not come back to it at once."""


def watch_seconds(rng: random.Random) -> int:
    """The ``timeoutSeconds`` of one watch: 5-10 minutes, at random."""
    return int(WATCH_SECONDS_LEAST * (1.0 + rng.random()))


def watch_backoff(
    failures: int,
    rng: random.Random,
    *,
    first: float = BACKOFF_FIRST_SECONDS,
    most: float = BACKOFF_MOST_SECONDS,
) -> float:
    """Seconds to wait before watching again after ``failures`` failures in a row (from
    1): ``first``, doubling up to ``most``, each with up to a quarter more at random."""
    base = min(most, first * 2.0 ** min(failures - 1, 62))
    return base * (1.0 + _JITTER * rng.random())


def describe_failure(error: BaseException) -> str:
    """A failed call in one line: the type and the message (an ``ApiException``'s status,
    reason and the ``Status`` message, not its headers and body over several lines)."""
    status = getattr(error, "status", None)
    if isinstance(status, int) and not isinstance(status, bool):
        text = f"HTTP {status} {getattr(error, 'reason', '') or ''}".rstrip()
        body = getattr(error, "body", None)
        with contextlib.suppress(ValueError, TypeError, AttributeError):
            message = json.loads(body or "").get("message")
            if isinstance(message, str) and message:
                text += f": {message}"
    else:
        text = str(error)
    first_line = " ".join(text.split())
    return f"{type(error).__name__}: {first_line}" if first_line else type(error).__name__


def expired_event(body: str | bytes | None) -> bytes:
    """The ``ERROR`` event a 410 answer to the watch call itself stands for (the version
    is gone), as a watch line, for the core to re-list: the answer's ``Status`` if
    ``body`` holds one, else a plain ``Expired`` one."""
    try:
        status = json.loads(body or "")
    except (ValueError, TypeError):
        status = None
    if not isinstance(status, dict):
        status = {"kind": "Status", "code": 410, "reason": "Expired"}
    return json.dumps({"type": "ERROR", "object": status}).encode()


def server_address(api: Any) -> str:  # noqa: ANN401 - a CoreV1Api of either client
    """The API server ``api`` calls (its client configuration's host)."""
    host = getattr(getattr(getattr(api, "api_client", None), "configuration", None), "host", None)
    return host if isinstance(host, str) and host else "the API server"


class WatchRestarts:
    """A watch loop's failures in a row and what it logged of them: when to watch again
    after a stream ended, and the few lines an outage is."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.failures = 0
        """Failed watches since a stream last delivered a line (the backoff's count)."""
        self.warned = 0
        """Failures warned of since the watch was last established."""

    def established(self, log: logging.Logger | logging.LoggerAdapter[Any], where: str) -> None:
        """A watch call answered: one info line if failures were warned of before it."""
        if self.warned:
            log.info("%s is established again after %d failed attempts", where, self.warned)
            self.warned = 0

    def ended(
        self,
        log: logging.Logger | logging.LoggerAdapter[Any],
        where: str,
        *,
        delivered: bool,
        error: BaseException | None,
        first: float = BACKOFF_FIRST_SECONDS,
        most: float = BACKOFF_MOST_SECONDS,
    ) -> float | None:
        """A stream ended (``error``: it failed; ``delivered``: it gave a line first):
        seconds to wait before watching again, or None to watch again at once (a stream
        that delivered and was ended by the server: its timeout, an ``ERROR``)."""
        if delivered:
            self.failures = 0
            if error is None:
                return None
        self.failures += 1
        delay = watch_backoff(self.failures, self.rng, first=first, most=most)
        if error is None:  # ended at once with nothing: not a failure to shout about
            log.debug("%s ended without a line; watching again in %.1f s", where, delay)
        else:
            self.warned += 1
            log.warning(
                "%s failed: %s; watching again in %.1f s", where, describe_failure(error), delay
            )
            log.debug("The pod watch's failure", exc_info=error)
        return delay


class PodWatch:
    """What the two pod watches (the Airflow executor's thread, the event loop's
    :class:`~k8s_workloads.io.aio.AsyncWatch`) share: the API client, the namespace
    (None: every namespace), the log, the timeouts, the randomness and the restarts; the
    arguments of each watch call, and what a stream's end or start logs.

    ``read_timeout``, ``first_backoff``, ``most_backoff`` and ``relist_wait`` are class
    attributes: set them lower on an instance in tests.
    """

    read_timeout: float = WATCH_READ_TIMEOUT_SECONDS
    """Seconds without a byte before the connection is replaced."""
    first_backoff: float = BACKOFF_FIRST_SECONDS
    most_backoff: float = BACKOFF_MOST_SECONDS
    relist_wait: float = RELIST_WAIT_SECONDS
    """Seconds a watch waits for a re-list under way before it watches from now."""

    def __init__(
        self,
        api: Any,  # noqa: ANN401 - a CoreV1Api of either client
        namespace: str | None,
        *,
        log: logging.Logger | logging.LoggerAdapter[Any],
        connect_timeout: float,
        rng: random.Random | None,
    ) -> None:
        self.api = api
        self.namespace = namespace
        """The namespace watched (None: every namespace)."""
        self.log = log
        self.connect_timeout = connect_timeout
        self.rng = rng or random.Random()  # noqa: S311 - spreading restarts, not secrets
        self.restarts = WatchRestarts(self.rng)

    @property
    def where(self) -> str:
        """The watch, as its log lines name it."""
        scope = "every namespace" if self.namespace is None else f"namespace {self.namespace}"
        return f"The pod watch of {scope} at {server_address(self.api)}"

    def watch_arguments(
        self, label_selector: str, field_selector: str | None, resource_version: str | None
    ) -> dict[str, Any]:
        """The keyword arguments of a watch call (``list_namespaced_pod`` or
        ``list_pod_for_all_namespaces``) from ``resource_version`` (None: from now)."""
        arguments: dict[str, Any] = {
            "label_selector": label_selector,
            "watch": True,
            "allow_watch_bookmarks": True,
            "timeout_seconds": watch_seconds(self.rng),
            "_request_timeout": (self.connect_timeout, self.read_timeout),
            "_preload_content": False,
        }
        if field_selector:
            arguments["field_selector"] = field_selector
        if resource_version:
            arguments["resource_version"] = resource_version
        return arguments

    def established(self) -> None:
        """A watch call answered (:meth:`WatchRestarts.established`)."""
        self.restarts.established(self.log, self.where)

    def ended(self, *, delivered: bool, error: BaseException | None) -> float | None:
        """A stream ended: seconds to wait before the next (:meth:`WatchRestarts.ended`)."""
        return self.restarts.ended(
            self.log,
            self.where,
            delivered=delivered,
            error=error,
            first=self.first_backoff,
            most=self.most_backoff,
        )
