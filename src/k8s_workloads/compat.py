"""Airflow version gating.

Callback workloads (``ExecuteCallback`` pods) exist only from Airflow 3.3. Every callback
entry point of this library asks :func:`supports_callbacks` / :func:`require_callback_support`
with the Airflow version the caller runs; below 3.3 everything behaves as the provider
does today (task pods only). The version is always passed in: the core never looks at
what is installed. :func:`installed_airflow_version` is the one helper that does, for
callers that want it. :class:`AirflowVersion` is the version parsed: configs hold one, and
every function taking a version takes one or text (parsed where it is taken).
"""

from __future__ import annotations

import re
from typing import TypeAlias

from k8s_workloads.display import shown

__all__ = [
    "CALLBACKS_MIN_VERSION",
    "AirflowVersion",
    "CallbackWorkloadsUnsupported",
    "InvalidVersion",
    "VersionLike",
    "installed_airflow_version",
    "release_tuple",
    "require_callback_support",
    "supports_callbacks",
]

CALLBACKS_MIN_VERSION = (3, 3, 0)
"""The first Airflow release with callback workloads on executors."""


class InvalidVersion(ValueError):
    """A version string is not a PEP 440 version; ``field`` names where it came from."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message if field is None else f"{field}: {message}")
        self.field = field


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
    (?:[-_.]?(?P<pre_letter>a|b|c|rc|alpha|beta|pre|preview)[-_.]?(?P<pre>[0-9]+)?)?
    (?:-(?P<post_implicit>[0-9]+)|[-_.]?(?P<post_letter>post|rev|r)[-_.]?(?P<post>[0-9]+)?)?
    (?:[-_.]?(?P<dev_letter>dev)[-_.]?(?P<dev>[0-9]+)?)?
    (?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?
    \s*$
    """,
    re.VERBOSE | re.IGNORECASE,
)

# PEP 440's normal spellings of the pre-release letters, in their order.
_PRE_LETTERS = {"a": "a", "alpha": "a", "b": "b", "beta": "b"} | dict.fromkeys(
    ("c", "rc", "pre", "preview"), "rc"
)
_PRE_ORDER = {"a": 0, "b": 1, "rc": 2}

_MAX_PART_DIGITS = 18

VersionLike: TypeAlias = "str | AirflowVersion"
"""What the functions taking an Airflow version accept: text is parsed once, on entry."""

_LocalPart: TypeAlias = tuple[int, int, str]


class AirflowVersion:
    """A parsed PEP 440 version of Airflow: compare, order and gate without parsing again.

    ``AirflowVersion.parse("3.3.0rc1")``; ``str()`` gives back the text as written (the
    ``airflow_version`` label is made from it, as the provider makes it from Airflow's own
    text). Equality, hashing and ordering follow PEP 440, so ``3.3`` equals ``3.3.0`` and
    ``3.3.0.dev0 < 3.3.0rc1 < 3.3.0 < 3.3.0.post1``. The callback gate reads only
    :attr:`release_tuple`, as :func:`release_tuple` always did.
    """

    __slots__ = ("_key", "_release_tuple", "dev", "local", "post", "pre", "release", "text")

    text: str
    release: tuple[int, ...]
    pre: tuple[str, int] | None
    post: int | None
    dev: int | None
    local: str | None

    def __init__(
        self,
        text: str,
        release: tuple[int, ...],
        *,
        pre: tuple[str, int] | None = None,
        post: int | None = None,
        dev: int | None = None,
        local: str | None = None,
    ) -> None:
        """Made by :meth:`parse`; build one by hand only from parts already checked."""
        self.text = text
        self.release = release
        self.pre = pre
        self.post = post
        self.dev = dev
        self.local = local
        parts = (*release[:3], 0, 0)
        self._release_tuple = (parts[0], parts[1], parts[2])
        self._key = _sort_key(release, pre, post, dev, local)

    @classmethod
    def parse(cls, value: VersionLike, *, field: str | None = None) -> AirflowVersion:
        """``value`` parsed (an :class:`AirflowVersion` is returned as it is).

        Raises :class:`InvalidVersion`, naming ``field`` when given, for anything that is
        not a PEP 440 version without an epoch (Airflow has never used one).
        """
        if isinstance(value, AirflowVersion):
            return value
        if not isinstance(value, str):
            raise InvalidVersion(f"must be a version string, got {shown(value)}", field)
        match = _PEP440_VERSION.match(value)
        if match is None:
            raise InvalidVersion(f"not a PEP 440 version: {shown(value)}", field)
        if match.group("epoch") not in (None, "0"):
            # An epoch resets ordering; Airflow has never used one, so refuse to guess.
            raise InvalidVersion(
                f"versions with an epoch are not Airflow versions: {shown(value)}", field
            )
        numbers = [*match.group("release").split(".")]
        numbers += [n for n in match.group("pre", "post_implicit", "post", "dev") if n]
        if any(len(number) > _MAX_PART_DIGITS for number in numbers):
            # int() refuses (ValueError) past 4,300 digits; no version has such a part.
            raise InvalidVersion(
                f"a version part longer than {_MAX_PART_DIGITS} digits: {shown(value)}", field
            )
        pre_letter, post_implicit, post_letter, dev_letter, local = match.group(
            "pre_letter", "post_implicit", "post_letter", "dev_letter", "local"
        )
        pre = None
        if pre_letter is not None:
            pre = (_PRE_LETTERS[pre_letter.lower()], int(match.group("pre") or 0))
        post = None
        if post_implicit is not None:
            post = int(post_implicit)
        elif post_letter is not None:
            post = int(match.group("post") or 0)
        return cls(
            value,
            tuple(int(part) for part in match.group("release").split(".")),
            pre=pre,
            post=post,
            dev=None if dev_letter is None else int(match.group("dev") or 0),
            local=None if local is None else re.sub(r"[-_]", ".", local.lower()),
        )

    @property
    def release_tuple(self) -> tuple[int, int, int]:
        """(major, minor, micro); missing parts count as 0, parts after the third are cut."""
        return self._release_tuple

    @property
    def major(self) -> int:
        return self.release_tuple[0]

    @property
    def minor(self) -> int:
        return self.release_tuple[1]

    @property
    def micro(self) -> int:
        return self.release_tuple[2]

    @property
    def is_prerelease(self) -> bool:
        """A pre-release or a development build (``3.3.0rc1``, ``3.3.0.dev0``)."""
        return self.pre is not None or self.dev is not None

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"AirflowVersion({self.text!r})"

    def __hash__(self) -> int:
        return hash(self._key)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AirflowVersion):
            return NotImplemented
        return self._key == other._key

    def __lt__(self, other: AirflowVersion) -> bool:
        if not isinstance(other, AirflowVersion):
            return NotImplemented
        return self._key < other._key

    def __le__(self, other: AirflowVersion) -> bool:
        if not isinstance(other, AirflowVersion):
            return NotImplemented
        return self._key <= other._key

    def __gt__(self, other: AirflowVersion) -> bool:
        if not isinstance(other, AirflowVersion):
            return NotImplemented
        return self._key > other._key

    def __ge__(self, other: AirflowVersion) -> bool:
        if not isinstance(other, AirflowVersion):
            return NotImplemented
        return self._key >= other._key

    def __setattr__(self, name: str, value: object) -> None:
        if hasattr(self, "_key"):
            raise AttributeError(f"AirflowVersion is immutable; cannot set {name}")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"AirflowVersion is immutable; cannot delete {name}")

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (AirflowVersion.parse, (self.text,))


_SortKey: TypeAlias = tuple[
    tuple[int, ...], tuple[int, int, int], tuple[int, int], tuple[int, int], tuple[_LocalPart, ...]
]


def _sort_key(
    release: tuple[int, ...],
    pre: tuple[str, int] | None,
    post: int | None,
    dev: int | None,
    local: str | None,
) -> _SortKey:
    """PEP 440's order: trailing zeros of the release do not count; a dev build of a
    release sorts before its pre-releases, which sort before it, which sorts before its
    post-releases; a local version after the public one, numeric parts above letters."""
    trimmed = list(release)
    while len(trimmed) > 1 and trimmed[-1] == 0:
        trimmed.pop()
    if pre is not None:
        pre_key = (1, _PRE_ORDER[pre[0]], pre[1])
    elif post is None and dev is not None:
        pre_key = (0, 0, 0)
    else:
        pre_key = (2, 0, 0)
    post_key = (0, 0) if post is None else (1, post)
    dev_key = (1, 0) if dev is None else (0, dev)
    local_key: tuple[_LocalPart, ...] = ()
    if local is not None:
        local_key = tuple(
            (1, int(part), "") if part.isdigit() else (0, 0, part) for part in local.split(".")
        )
    return (tuple(trimmed), pre_key, post_key, dev_key, local_key)


def release_tuple(version: VersionLike) -> tuple[int, int, int]:
    """(major, minor, micro) of a PEP 440 version; missing parts count as 0.

    Raises :class:`InvalidVersion` for text that is not a version.
    """
    return AirflowVersion.parse(version).release_tuple


def _parsed(version: VersionLike | None) -> AirflowVersion | None:
    return None if version is None else AirflowVersion.parse(version)


def supports_callbacks(airflow_version: VersionLike | None) -> bool:
    """Whether an Airflow of this version runs callback workloads on executors (3.3+).

    ``None`` (no Airflow, or unknown) is False: older behaviour is the safe default.
    """
    version = _parsed(airflow_version)
    return version is not None and version.release_tuple >= CALLBACKS_MIN_VERSION


def require_callback_support(airflow_version: VersionLike | None) -> None:
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
