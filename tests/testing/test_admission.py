"""What the kit's API server admits (:mod:`k8s_workloads.testing._admission`): bodies
decoded as the server decodes them (unknown fields dropped, or refused under
``Strict``), and the causes of an invalid pod, namespace or update."""

from __future__ import annotations

import pytest

from k8s_workloads.testing._admission import (
    Rejected,
    decode_pod,
    decode_secret,
    namespace_causes,
    pod_causes,
    pod_update_causes,
)

POD = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "base", "image": "x"}]}}


def test_unknown_fields_are_dropped_warned_of_or_refused_by_field_validation() -> None:
    body = {**POD, "bogus": 1}
    pod, warnings = decode_pod(dict(body))
    assert "bogus" not in pod
    assert warnings == []
    _, warned = decode_pod(dict(body), field_validation="Warn")
    assert any("bogus" in warning for warning in warned)
    with pytest.raises(Rejected) as caught:
        decode_pod(dict(body), field_validation="Strict")
    assert caught.value.code == 400


def test_a_body_of_another_kind_is_refused() -> None:
    with pytest.raises(Rejected) as caught:
        decode_pod({**POD, "kind": "Secret"})
    assert caught.value.code == 400


def test_an_invalid_pod_has_a_cause_per_field() -> None:
    assert pod_causes(decode_pod(dict(POD))[0]) == []
    bad = {"metadata": {"name": "Bad_Name"}, "spec": {"containers": []}}
    fields = {cause.field for cause in pod_causes(bad)}
    assert "metadata.name" in fields
    assert "spec.containers" in fields


def test_a_namespace_name_is_a_dns_label() -> None:
    assert namespace_causes("airflow") == []
    assert [cause.field for cause in namespace_causes("")] == ["metadata.name"]
    assert namespace_causes("Not.A.Label")


def test_an_update_may_change_an_image_but_not_the_containers() -> None:
    old = decode_pod(dict(POD))[0]
    # The new object is decoded as the old one was: its defaults are the same.
    new_image = decode_pod({**old, "spec": {"containers": [{"name": "base", "image": "y"}]}})[0]
    assert pod_update_causes(old, new_image) == []
    renamed = decode_pod({**old, "spec": {"containers": [{"name": "other", "image": "x"}]}})[0]
    assert pod_update_causes(old, renamed)


def test_a_secret_takes_only_secret_fields() -> None:
    secret, _ = decode_secret({"metadata": {"name": "s"}, "stringData": {"a": "b"}})
    assert secret["metadata"]["name"] == "s"
    with pytest.raises(Rejected):
        decode_secret({"metadata": {"name": "s"}, "spec": {}}, field_validation="Strict")
