"""Checks limen's Flow schemas and fingerprints with the jsonschema package.

Reads a job on stdin:

  {"cases": [{"name", "schema", "valid": [text, ...], "invalid": [text, ...]}],
   "signatures": [{"name", "signature", "fingerprint"}]}

For every case: the schema is valid against the draft 2020-12 meta-schema,
every $ref in it resolves, every "valid" canonical text validates and every
"invalid" text does not. For every signature: each of its schemas passes the
same meta-schema check, and the fingerprint recomputed here from the listed
signature, by § Identity and fingerprints alone (descriptions stripped,
versions taken out of $defs keys and $refs, canonical JSON, SHA-256), equals
the one limen computed. Prints one line per failure and exits 1 if any;
exits 77 when jsonschema is not installed.
"""

import hashlib
import json
import sys
import urllib.parse

try:
    import jsonschema
    from jsonschema import Draft202012Validator
    from referencing import Registry
    from referencing.jsonschema import DRAFT202012
except ImportError as e:  # the peer is missing
    print(f"jsonschema is not installed: {e}", file=sys.stderr)
    sys.exit(77)

failures = []


def fail(msg):
    failures.append(msg)
    print(msg, file=sys.stderr)


def refs(schema):
    """Every $ref string in a schema document."""
    if isinstance(schema, dict):
        for k, v in schema.items():
            if k == "$ref" and isinstance(v, str):
                yield v
            yield from refs(v)
    elif isinstance(schema, list):
        for v in schema:
            yield from refs(v)


def check_schema(name, schema):
    try:
        Draft202012Validator.check_schema(schema)
    except jsonschema.exceptions.SchemaError as e:
        fail(f"{name}: not a valid 2020-12 schema: {e.message} at {list(e.absolute_path)}")
        return None
    uri = "urn:limen:check"
    resolver = Registry().with_resource(uri, DRAFT202012.create_resource(schema)).resolver(
        base_uri=uri
    )
    for ref in refs(schema):
        try:
            resolver.lookup(ref)
        except Exception as e:  # referencing raises several kinds
            fail(f"{name}: $ref {ref!r} does not resolve: {e}")
    return Draft202012Validator(schema)


def check_case(case):
    validator = check_schema(case["name"], case["schema"])
    if validator is None:
        return
    for text in case["valid"]:
        errors = list(validator.iter_errors(json.loads(text)))
        if errors:
            e = errors[0]
            fail(f"{case['name']}: {text} is refused: {e.message} at {list(e.absolute_path)}")
    for text in case["invalid"]:
        if validator.is_valid(json.loads(text)):
            fail(f"{case['name']}: {text} is accepted")


# --- § Identity and fingerprints, written again from the specification ---

ONE = {"additionalProperties", "items", "not", "if", "then", "else", "contains",
       "propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema"}
MANY = {"allOf", "anyOf", "oneOf", "prefixItems", "$args"}
NAMED = {"properties", "patternProperties", "dependentSchemas"}
FRAGMENT_SAFE = "!$&'()*+,;=:@/?"


def unversioned(key):
    """repository@version/file.Name -> repository/file.Name; a path is kept."""
    if key.startswith("/"):
        return key
    repository, rest = key.split("@", 1)
    _version, file_and_name = rest.split("/", 1)
    return f"{repository}/{file_and_name}"


def ref_of(key):
    token = key.replace("~", "~0").replace("/", "~1")
    return "#/$defs/" + urllib.parse.quote(token, safe=FRAGMENT_SAFE)


def key_of(ref):
    assert ref.startswith("#/$defs/"), ref
    token = urllib.parse.unquote(ref[len("#/$defs/"):])
    return token.replace("~1", "/").replace("~0", "~")


def strip(schema):
    if not isinstance(schema, dict):
        return schema
    out = {}
    for k, v in schema.items():
        if k == "description":
            continue
        if k == "$ref":
            out[k] = ref_of(unversioned(key_of(v)))
        elif k == "$defs":
            out[k] = {unversioned(key): strip(s) for key, s in v.items()}
        elif k in ONE:
            out[k] = strip(v)
        elif k in MANY:
            out[k] = [strip(s) for s in v]
        elif k in NAMED:
            out[k] = {name: strip(s) for name, s in v.items()}
        else:
            out[k] = v
    return out


def fingerprint(signature):
    canonical = {
        "params": [[name, strip(schema)] for name, schema in signature["params"]],
        "ok": strip(signature["ok"]),
        "err": strip(signature["err"]),
        "generic": signature["generic"],
    }
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_signature(entry):
    sig = entry["signature"]
    for i, (name, schema) in enumerate(sig["params"]):
        check_schema(f"{entry['name']} /params/{i} ({name})", schema)
    check_schema(f"{entry['name']} /ok", sig["ok"])
    check_schema(f"{entry['name']} /err", sig["err"])
    ours = fingerprint(sig)
    if ours != entry["fingerprint"]:
        fail(f"{entry['name']}: fingerprint {entry['fingerprint']}, recomputed {ours}")


job = json.load(sys.stdin)
for case in job["cases"]:
    check_case(case)
for entry in job["signatures"]:
    check_signature(entry)
checked = len(job["cases"]) + len(job["signatures"])
print(f"checked {checked}, {len(failures)} failed")
sys.exit(1 if failures else 0)
