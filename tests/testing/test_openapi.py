"""The OpenAPI documents kubectl downloads (:mod:`k8s_workloads.testing._openapi`): they
describe exactly the paths the kit serves, with the library's Pod schema."""

from __future__ import annotations

from k8s_workloads.testing._openapi import DOCUMENTS


def test_v2_describes_the_served_paths_and_the_three_kinds() -> None:
    v2 = DOCUMENTS["/openapi/v2"]()
    assert "/api/v1/namespaces/{namespace}/pods/{name}/status" in v2["paths"]
    assert "/api/v1/namespaces/{namespace}/secrets" in v2["paths"]
    assert not any("configmaps" in path for path in v2["paths"])  # not served: not described
    kinds = {name.rsplit(".", 1)[-1] for name in v2["definitions"]}
    assert {"Pod", "Secret", "Namespace"} <= kinds


def test_v3_root_points_at_the_core_document_by_its_hash() -> None:
    root = DOCUMENTS["/openapi/v3"]()
    url = root["paths"]["api/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/api/v1?hash=")
    core = DOCUMENTS["/openapi/v3/api/v1"]()
    assert "/api/v1/namespaces/{namespace}/pods" in core["paths"]
    assert DOCUMENTS["/openapi/v3"]() == root  # the same document each time
