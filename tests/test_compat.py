from __future__ import annotations

from importlib import metadata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from k8s_workloads.compat import (
    CallbackWorkloadsUnsupported,
    InvalidVersion,
    installed_airflow_version,
    release_tuple,
    require_callback_support,
    supports_callbacks,
)


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("3.3.0", True),
        ("3.3", True),
        ("3.3.0.dev0", True),  # dev and rc builds of 3.3.0 count, as upstream
        ("3.3.0rc1", True),
        ("3.3.0b2", True),
        ("3.3.0+astro.1", True),
        ("3.3.2", True),
        ("3.4.0", True),
        ("4.0.0", True),
        ("v3.3.1", True),
        ("3.2.2", False),
        ("3.2.99.post1", False),
        ("2.11.0", False),
        ("3", False),
        (None, False),
    ],
)
def test_supports_callbacks(version: str | None, *, expected: bool) -> None:
    assert supports_callbacks(version) is expected


@pytest.mark.parametrize("bad", ["", "three", "3.3.x", "1!3.3.0", "3..3"])
def test_invalid_versions_are_typed_errors(bad: str) -> None:
    with pytest.raises(InvalidVersion):
        supports_callbacks(bad)


def test_require_callback_support_names_the_version_found() -> None:
    require_callback_support("3.3.0")
    with pytest.raises(CallbackWorkloadsUnsupported, match=r"found Airflow 3\.2\.1"):
        require_callback_support("3.2.1")
    with pytest.raises(CallbackWorkloadsUnsupported, match="found no Airflow version"):
        require_callback_support(None)


@given(
    st.integers(0, 50), st.integers(0, 50), st.integers(0, 50),
    st.sampled_from(["", ".dev0", "rc1", "a1", ".post2", "+local.7"]),
)  # fmt: skip
def test_release_tuple_ignores_pre_post_dev_local(
    major: int, minor: int, micro: int, tail: str
) -> None:
    assert release_tuple(f"{major}.{minor}.{micro}{tail}") == (major, minor, micro)
    assert supports_callbacks(f"{major}.{minor}.{micro}{tail}") is (
        (major, minor, micro) >= (3, 3, 0)
    )


def test_installed_airflow_version_reads_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    def fake_version(name: str) -> str:
        seen.append(name)
        if name == "apache-airflow":
            return "2.11.0"
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", fake_version)
    assert installed_airflow_version() == "2.11.0"
    assert seen == ["apache-airflow-core", "apache-airflow"]


def test_installed_airflow_version_none_when_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    assert installed_airflow_version() is None
