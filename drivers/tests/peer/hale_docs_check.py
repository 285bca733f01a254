"""Checks limen's Hale documents with validators nobody here wrote.

Reads a job on stdin:

  {"description_schema": <api-description.schema.json> or null,
   "described": [{"name", "doc"}],       # descriptions and inventories
   "fixture_transport": [{"name", "doc"}], # the same, listener "test"
   "openapi": [{"name", "doc"}],
   "json_schema": [{"name", "doc"}]}

Every "described" document validates against the description schema
(draft 2020-12). A "fixture_transport" document validates against the same
schema with "test" added to its listener's transport enum (the schema
predates the fixture transport's description). Every "openapi" document
passes openapi-spec-validator (OpenAPI 3.1). Every "json_schema" document
is valid against the 2020-12 meta-schema, and every $ref in it resolves.
Prints one line per failure and exits 1 if any; 77 when a validator is not
installed.
"""

import copy
import json
import sys

try:
    from jsonschema import Draft202012Validator
    from openapi_spec_validator import validate as validate_openapi
    from openapi_spec_validator.validation.validators import OpenAPIV31SpecValidator
except ImportError as e:
    print(f"a validator is not installed: {e}", file=sys.stderr)
    sys.exit(77)

job = json.load(sys.stdin)
failures = []
checked = 0


def fail(msg):
    failures.append(msg)
    print(msg, file=sys.stderr)


def against(schema, items, what):
    global checked
    Draft202012Validator.check_schema(schema)
    v = Draft202012Validator(schema)
    for item in items:
        checked += 1
        errors = sorted(v.iter_errors(item["doc"]), key=lambda e: list(e.path))
        for e in errors[:5]:
            fail(f"{item['name']}: {what}: {list(e.absolute_path)}: {e.message[:300]}")
        out = []
        refs(item["doc"], out)
        for r in out:
            if not resolve(item["doc"], r):
                fail(f"{item['name']}: $ref {r} does not resolve")


def refs(node, out):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                out.append(v)
            else:
                refs(v, out)
    elif isinstance(node, list):
        for v in node:
            refs(v, out)


def resolve(doc, ref):
    if not ref.startswith("#"):
        return False
    node = doc
    for part in [p for p in ref[1:].split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


schema = job.get("description_schema")
if schema is not None:
    against(schema, job.get("described", []), "api-description.schema.json")
    patched = copy.deepcopy(schema)
    patched["$defs"]["listener"]["properties"]["transport"]["enum"].append("test")
    against(patched, job.get("fixture_transport", []), "the schema, listener test")

for item in job.get("openapi", []):
    checked += 1
    try:
        OpenAPIV31SpecValidator(item["doc"]).validate()
        validate_openapi(item["doc"])
    except Exception as e:  # the validator's own error types
        fail(f"{item['name']}: openapi-spec-validator: {str(e)[:500]}")

for item in job.get("json_schema", []):
    checked += 1
    doc = item["doc"]
    try:
        Draft202012Validator.check_schema(doc)
    except Exception as e:
        fail(f"{item['name']}: not a 2020-12 schema: {str(e)[:500]}")
    out = []
    refs(doc, out)
    for r in out:
        if not resolve(doc, r):
            fail(f"{item['name']}: $ref {r} does not resolve")

if failures:
    sys.exit(1)
print(f"hale documents: {checked} checked by jsonschema and openapi-spec-validator")
