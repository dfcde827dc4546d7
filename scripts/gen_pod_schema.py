"""Write src/k8s_workloads/pods/schema_definitions.py: the Kubernetes Pod schema as
k8s_workloads reads it.

    .venv/bin/python scripts/gen_pod_schema.py           # rewrite the module
    .venv/bin/python scripts/gen_pod_schema.py --check   # exit 1 if it is out of date

The source is the strict schema of kubernetes-validate (a test dependency, pinned in
pyproject.toml), which is the Kubernetes OpenAPI with unknown fields forbidden: the Pod and
every definition it reaches. Each property becomes a short type spec (the grammar is in
``k8s_workloads.pods.schema``); descriptions and the ``x-kubernetes-*`` hints are dropped. Any
schema construct the grammar has no word for stops the script, so a new Kubernetes release
cannot be read half right.
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

KUBERNETES_VERSION = "1.37"
SCHEMA_DIR = f"kubernetes-json-schema/v{KUBERNETES_VERSION}.0-local-strict"
TARGET = Path(__file__).resolve().parent.parent / "src/k8s_workloads/pods/schema_definitions.py"

_IGNORED = frozenset({"description", "$schema", "$id"})
# Definitions that are not objects: written inline where they are used. A value of
# IntOrString or Quantity may not be null: null matches both branches of their oneOf.
_SCALARS = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "int-or-string",
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "quantity",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": "?time",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": "?object",
}
_SCALAR_SHAPES = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
        "oneOf": [{"type": ["string", "null"]}, {"type": ["integer", "null"]}]
    },
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {
        "oneOf": [{"type": ["string", "null"]}, {"type": ["number", "null"]}]
    },
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": {
        "format": "date-time",
        "type": ["string", "null"],
    },
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": {"type": ["object", "null"]},
}


class UnknownSchema(Exception):
    """The schema uses a construct this generator does not translate."""


def _strip(schema: dict[str, Any]) -> dict[str, Any]:
    return {
        key: value
        for key, value in schema.items()
        if key not in _IGNORED and not key.startswith("x-kubernetes-")
    }


def _short(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


class _Reader:
    def __init__(self, definitions: dict[str, Any]) -> None:
        self.definitions = definitions
        self.pending: list[str] = []
        self.names: dict[str, str] = {}

    def name(self, full: str) -> str:
        if full not in self.names:
            short = full.rsplit(".", 1)[-1]
            if short in self.names.values():
                raise UnknownSchema(f"two definitions are called {short}")
            self.names[full] = short
            self.pending.append(full)
        return self.names[full]

    def ref(self, full: str) -> str:
        if full in _SCALARS:
            shape = _strip(self.definitions[full])
            if shape != _SCALAR_SHAPES[full]:
                raise UnknownSchema(f"{full} changed: {shape}")
            return _SCALARS[full]
        definition = _strip(self.definitions[full])
        if definition.get("type") != ["object", "null"] or "properties" not in definition:
            raise UnknownSchema(f"{full} is not a nullable object: {definition}")
        return "?" + self.name(full)

    def spec(self, schema: dict[str, Any], where: str) -> str:
        schema = _strip(schema)
        if "$ref" in schema:
            if set(schema) != {"$ref"}:
                raise UnknownSchema(f"{where}: $ref with {sorted(schema)}")
            return self.ref(_short(schema["$ref"]))
        kind: object = schema.get("type")
        nullable = isinstance(kind, list) and kind[-1:] == ["null"] and len(kind) == 2
        base = kind[0] if isinstance(kind, list) and nullable else kind
        prefix = "?" if nullable else ""
        rest = {key: value for key, value in schema.items() if key != "type"}
        if "enum" in rest:
            if base != "string" or set(rest) != {"enum"} or len(rest["enum"]) != 1:
                raise UnknownSchema(f"{where}: enum {schema}")
            # The enum applies to null too: a null allowed by the type is still refused.
            return f"enum:{rest['enum'][0]}"
        if base == "string" and not rest:
            return prefix + "string"
        if base == "boolean" and not rest:
            return prefix + "boolean"
        if base == "number" and not rest:
            return prefix + "number"
        integer_format = str(rest.get("format"))
        if base == "integer" and set(rest) == {"format"} and integer_format in ("int32", "int64"):
            return prefix + integer_format
        if base == "array" and set(rest) == {"items"}:
            return prefix + "[]" + self.spec(rest["items"], f"{where}[]")
        if base == "object" and set(rest) == {"additionalProperties"}:
            return prefix + "{}" + self.spec(rest["additionalProperties"], f"{where}{{}}")
        raise UnknownSchema(f"{where}: {schema}")

    def definition(self, full: str, schema: dict[str, Any]) -> tuple[dict[str, str], list[str]]:
        schema = _strip(schema)
        allowed = {"type", "properties", "required", "additionalProperties"}
        if not set(schema) <= allowed or schema.get("additionalProperties") is not False:
            raise UnknownSchema(f"{full}: {sorted(schema)}")
        properties = {
            name: self.spec(value, f"{full}.{name}")
            for name, value in sorted(schema["properties"].items())
        }
        required = sorted(schema.get("required", []))
        if not set(required) <= set(properties):
            raise UnknownSchema(f"{full}: required fields without a schema")
        return properties, required


def read_schema(folder: Path | None = None) -> dict[str, tuple[dict[str, str], list[str]]]:
    """Every definition the Pod reaches: name -> (property -> spec, required names)."""
    if folder is None:
        folder = Path(str(resources.files("kubernetes_validate").joinpath(SCHEMA_DIR)))
    definitions = json.loads((folder / "_definitions.json").read_text())["$defs"]
    pod = json.loads((folder / "pod-v1.json").read_text())
    reader = _Reader(definitions)
    table: dict[str, tuple[dict[str, str], list[str]]] = {}
    root = dict(pod)
    root.pop("x-kubernetes-group-version-kind", None)
    root["type"] = ["object", "null"]
    table["Pod"] = reader.definition("Pod", root)
    while reader.pending:
        full = reader.pending.pop(0)
        table[reader.names[full]] = reader.definition(full, definitions[full])
    return dict(sorted(table.items()))


_HEADER = '''"""The Kubernetes {version} Pod schema, as :mod:`k8s_workloads.pods.schema` reads it.

Generated by ``scripts/gen_pod_schema.py`` from kubernetes-validate's strict {version}
schema (the Kubernetes OpenAPI, unknown fields forbidden); do not edit. Each entry is
a definition the Pod reaches: its properties' type specs and its required properties.
"""

from __future__ import annotations

KUBERNETES_VERSION = "{version}"

DEFINITIONS: dict[str, tuple[dict[str, str], tuple[str, ...]]] = {{'''


def render(table: dict[str, tuple[dict[str, str], list[str]]]) -> str:
    lines = _HEADER.format(version=KUBERNETES_VERSION).splitlines()
    for name, (properties, required) in table.items():
        lines.append(f'    "{name}": (')
        lines.append("        {")
        lines.extend(f'            "{prop}": "{spec}",' for prop, spec in properties.items())
        lines.append("        },")
        if required:
            names = ", ".join(f'"{field}"' for field in required)
            comma = "," if len(required) == 1 else ""
            lines.append(f"        ({names}{comma}),")
        else:
            lines.append("        (),")
        lines.append("    ),")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check the module is current")
    args = parser.parse_args()
    text = render(read_schema())
    if args.check:
        current = TARGET.read_text() if TARGET.exists() else ""
        if current != text:
            print(f"{TARGET} is out of date: run scripts/gen_pod_schema.py")
            return 1
        return 0
    TARGET.write_text(text)
    print(f"wrote {TARGET} ({len(text):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
