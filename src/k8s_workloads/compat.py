"""Airflow version gating.

Callback workloads (``ExecuteCallback`` pods) exist only from Airflow 3.3. Every callback
entry point of this library asks :func:`supports_callbacks` / :func:`require_callback_support`
with the Airflow version the caller runs; below 3.3 everything behaves as the provider
does today (task pods only). The version is always passed in: the core never looks at
what is installed. :func:`installed_airflow_version` is the one helper that does, for
callers that want it.
"""

from __future__ import annotations

import re

from k8s_workloads._display import shown

__all__ = [
    "CALLBACKS_MIN_VERSION",
    "CallbackWorkloadsUnsupported",
    "InvalidVersion",
    "installed_airflow_version",
    "release_tuple",
    "require_callback_support",
    "supports_callbacks",
]

CALLBACKS_MIN_VERSION = (3, 3, 0)
"""The first Airflow release with callback workloads on executors."""


class InvalidVersion(ValueError):
    """A version string is not a PEP 440 version."""


class CallbackWorkloadsUnsupported(ValueError):
    """Callback workloads were asked for with an Airflow older than 3.3 (or none)."""


# PEP 440 public version with optional local segment, case-insensitive
# (https://peps.python.org/pep-0440/#appendix-b-parsing-version-strings-with-regular-expressions).
# Only the release segment decides the gate; like the provider's
# ``Version(v).major/minor/micro`` comparison, 3.3.0.dev0, 3.3.0rc1 and 3.3.0+local count as 3.3.0.
_PEP440_VERSION = re.compile(
    r"""
    ^\s*v?
    (?:(?P<epoch>[0-9]+)!)?
    (?P<release>[0-9]+(?:\.[0-9]+)*)
    (?:[-_.]?(?:a|b|c|rc|alpha|beta|pre|preview)[-_.]?[0-9]*)?
    (?:-[0-9]+|[-_.]?(?:post|rev|r)[-_.]?[0-9]*)?
    (?:[-_.]?dev[-_.]?[0-9]*)?
    (?:\+[a-z0-9]+(?:[-_.][a-z0-9]+)*)?
    \s*$
    """,
    re.VERBOSE | re.IGNORECASE,
)


_MAX_PART_DIGITS = 18


def release_tuple(version: str) -> tuple[int, int, int]:
    """(major, minor, micro) of a PEP 440 version; missing parts count as 0.

    Raises :class:`InvalidVersion` for text that is not a version.
    """
    match = _PEP440_VERSION.match(version)
    if match is None:
        raise InvalidVersion(f"not a PEP 440 version: {shown(version)}")
    if match.group("epoch") not in (None, "0"):
        # An epoch resets ordering; Airflow has never used one, so refuse to guess.
        raise InvalidVersion(f"versions with an epoch are not Airflow versions: {shown(version)}")
    release = match.group("release").split(".")[:3]
    if any(len(part) > _MAX_PART_DIGITS for part in release):
        # int() refuses (ValueError) past 4,300 digits; no version has such a part.
        raise InvalidVersion(
            f"a version part longer than {_MAX_PART_DIGITS} digits: {shown(version)}"
        )
    parts = [int(part) for part in release]
    parts += [0] * (3 - len(parts))
    return (parts[0], parts[1], parts[2])


def supports_callbacks(airflow_version: str | None) -> bool:
    """Whether an Airflow of this version runs callback workloads on executors (3.3+).

    ``None`` (no Airflow, or unknown) is False: older behaviour is the safe default.
    """
    if airflow_version is None:
        return False
    return release_tuple(airflow_version) >= CALLBACKS_MIN_VERSION


def require_callback_support(airflow_version: str | None) -> None:
    """Raise :class:`CallbackWorkloadsUnsupported` unless callbacks are supported."""
    if not supports_callbacks(airflow_version):
        found = "no Airflow version" if airflow_version is None else f"Airflow {airflow_version}"
        raise CallbackWorkloadsUnsupported(
            f"callback workloads need Airflow 3.3.0 or newer; found {found}"
        )


def installed_airflow_version() -> str | None:
    """The installed Airflow's version from package metadata, without importing Airflow.

    Looks at ``apache-airflow-core`` (Airflow 3) and then ``apache-airflow``; None when
    neither is installed.
    """
    # Deferred: importlib.metadata costs ~40 ms to import, and only this helper needs it.
    from importlib import metadata  # noqa: PLC0415

    for distribution in ("apache-airflow-core", "apache-airflow"):
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:  # noqa: PERF203 - two tries at most
            continue
    return None
