from __future__ import annotations

import copy
from importlib import metadata

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.version import Version

from k8s_workloads.compat import (
    AirflowVersion,
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


# --- AirflowVersion -------------------------------------------------------------------

_PRE = st.sampled_from(["", "a1", "b2", "rc1", "rc", ".alpha3", "-beta", "c4", "pre2", "preview"])
_POST = st.sampled_from(["", ".post1", "-3", "post", ".rev2", "r5"])
_DEV = st.sampled_from(["", ".dev0", "dev3", ".dev"])
_LOCAL = st.sampled_from(["", "+astro.1", "+local", "+1.b", "+ab-12", "+7"])
versions = st.builds(
    lambda release, pre, post, dev, local: ".".join(map(str, release)) + pre + post + dev + local,
    st.lists(st.integers(0, 12), min_size=1, max_size=4),
    _PRE, _POST, _DEV, _LOCAL,
)  # fmt: skip


@given(versions)
def test_a_version_keeps_its_text_and_reads_as_packaging_does(text: str) -> None:
    version = AirflowVersion.parse(text)
    reference = Version(text)
    assert str(version) == text  # the label is made from the text as written
    assert version.release == reference.release
    assert version.pre == reference.pre
    assert version.post == reference.post
    assert version.dev == reference.dev
    assert version.local == reference.local
    assert version.is_prerelease == reference.is_prerelease
    assert version.release_tuple == release_tuple(text) == (
        reference.major, reference.minor, reference.micro
    )  # fmt: skip
    assert AirflowVersion.parse(version) is version  # parsed once: a value passes through


@given(versions, versions)
def test_versions_order_and_compare_as_pep_440_says(left: str, right: str) -> None:
    ours, theirs = AirflowVersion.parse(left), AirflowVersion.parse(right)
    reference_left, reference_right = Version(left), Version(right)
    assert (ours < theirs) is (reference_left < reference_right)
    assert (ours <= theirs) is (reference_left <= reference_right)
    assert (ours > theirs) is (reference_left > reference_right)
    assert (ours >= theirs) is (reference_left >= reference_right)
    assert (ours == theirs) is (reference_left == reference_right)
    if ours == theirs:
        assert hash(ours) == hash(theirs)


def test_examples_of_the_order() -> None:
    ordered = ["3.3.0.dev0", "3.3.0a1", "3.3.0b1", "3.3.0rc1", "3.3", "3.3.0+local", "3.3.0.post1"]
    parsed = [AirflowVersion.parse(text) for text in ordered]
    assert parsed == sorted(parsed)
    assert AirflowVersion.parse("3.3") == AirflowVersion.parse("3.3.0")
    assert AirflowVersion.parse("3.3.0") != "3.3.0"
    assert {AirflowVersion.parse("3.3"), AirflowVersion.parse("3.3.0.0")} == {parsed[4]}


@pytest.mark.parametrize("bad", ["", "three", "3.3.x", "1!3.3.0", "3..3", "3." + "9" * 40])
def test_parse_names_the_field_it_was_given(bad: str) -> None:
    with pytest.raises(InvalidVersion) as raised:
        AirflowVersion.parse(bad, field="airflow_version")
    assert raised.value.field == "airflow_version"
    assert str(raised.value).startswith("airflow_version: ")
    with pytest.raises(InvalidVersion) as unnamed:
        AirflowVersion.parse(bad)
    assert unnamed.value.field is None
    assert str(raised.value) == f"airflow_version: {unnamed.value}"


@pytest.mark.parametrize("bad", [3.3, None, b"3.3.0", ["3", "3"]])
def test_parse_refuses_what_is_not_text(bad: object) -> None:
    with pytest.raises(InvalidVersion, match="must be a version string"):
        AirflowVersion.parse(bad)  # type: ignore[arg-type]


def test_a_version_is_an_immutable_value() -> None:
    version = AirflowVersion.parse("3.3.2+astro.1")
    with pytest.raises(AttributeError):
        version.text = "4.0.0"
    copied = copy.deepcopy(version)  # through __reduce__, as pickle goes
    assert copied == version
    assert str(copied) == "3.3.2+astro.1"
    assert repr(version) == "AirflowVersion('3.3.2+astro.1')"


@pytest.mark.parametrize("text", ["3.3.0", "3.2.2", "3.3.0rc1", "2.11.0"])
def test_the_gates_read_a_parsed_version_as_its_text(text: str) -> None:
    assert supports_callbacks(AirflowVersion.parse(text)) is supports_callbacks(text)
