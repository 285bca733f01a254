/**
 * A listed signature's fingerprint (§ Identity and fingerprints), as core's
 * `fingerprint_of_signature` computes it from the JSON as listed: the
 * canonical signature (`params`, `ok`, `err`, `generic`; every schema
 * stripped of `description` keywords and of the versions in `$defs` keys
 * and `$ref`s), its canonical JSON text, SHA-256. The serve loop checks each
 * listed fingerprint with it, as core's `Listing::parse` does, so a listing
 * edited by hand is refused rather than served under a fingerprint its
 * declarations do not have.
 */

import { createHash } from "node:crypto";

import { stringText } from "./json.js";
import { compareCodePoints } from "./codec.js";
import { Decimal } from "./values.js";

type Obj = { [key: string]: unknown };
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** A signature core does not read, and where (a JSON pointer into it). */
export class SignatureError extends Error {
  override name = "SignatureError";
}

function fail(at: string, why: string): never {
  throw new SignatureError(`${at || "/"}: ${why}`);
}

const pointerToken = (t: string): string => t.replaceAll("~", "~0").replaceAll("/", "~1");
const child = (at: string, t: string): string => `${at}/${pointerToken(t)}`;

/** An identity without its version: `repository/file.Name` (a path identity unchanged); core's `Identity::parse` rules. */
export function withoutVersion(text: string): string {
  const dot = text.lastIndexOf(".");
  if (dot < 0) throw new SignatureError(`\`${text}\` is not an identity: it has no \`.Name\``);
  const place = text.slice(0, dot);
  const name = text.slice(dot + 1);
  if (name.length === 0 || name.includes("/")) {
    throw new SignatureError(`\`${text}\` is not an identity: the name after the last \`.\` is empty or holds a \`/\``);
  }
  if (place.startsWith("/")) return text;
  const at = place.indexOf("@");
  if (at < 0) {
    throw new SignatureError(`\`${text}\` is not an identity: it is neither \`repository@version/file.Name\` nor an absolute path`);
  }
  const repository = place.slice(0, at);
  const rest = place.slice(at + 1);
  const slash = rest.indexOf("/");
  if (slash < 0) throw new SignatureError(`\`${text}\` is not an identity: the version is not followed by \`/file\``);
  const version = rest.slice(0, slash);
  const file = rest.slice(slash + 1);
  if (repository.length === 0 || version.length === 0 || file.length === 0) {
    throw new SignatureError(`\`${text}\` is not an identity: its repository, version or file is empty`);
  }
  return `${repository}/${file}.${name}`;
}

const PLAIN = /^[A-Za-z0-9\-._~!$&'()*+,;=:@/?]$/;

/** The `$ref` naming the `$defs` entry `key` (core's `def_ref`). */
function defRef(key: string): string {
  let out = "#/$defs/";
  for (const b of Buffer.from(pointerToken(key), "utf8")) {
    const c = String.fromCharCode(b);
    out += b < 0x80 && PLAIN.test(c) ? c : "%" + b.toString(16).toUpperCase().padStart(2, "0");
  }
  return out;
}

/** The `$defs` key a `$ref` names (core's `def_key_of_ref`), or `null`. */
function defKeyOfRef(ref: string): string | null {
  if (!ref.startsWith("#/$defs/")) return null;
  const raw = ref.slice("#/$defs/".length);
  const bytes: number[] = [];
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] === "%") {
      const hex = raw.slice(i + 1, i + 3);
      if (!/^[0-9A-Fa-f]{2}$/.test(hex)) return null;
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else {
      for (const b of Buffer.from(raw[i], "utf8")) bytes.push(b);
    }
  }
  const token = Buffer.from(bytes).toString("utf8");
  if (token.includes("/")) return null;
  let out = "";
  for (let i = 0; i < token.length; i++) {
    if (token[i] !== "~") {
      out += token[i];
      continue;
    }
    const n = token[++i];
    if (n === "0") out += "~";
    else if (n === "1") out += "/";
    else return null;
  }
  return out;
}

const ONE = new Set([
  "additionalProperties",
  "items",
  "not",
  "if",
  "then",
  "else",
  "contains",
  "propertyNames",
  "unevaluatedItems",
  "unevaluatedProperties",
  "contentSchema",
]);
const MANY = new Set(["allOf", "anyOf", "oneOf", "prefixItems", "$args"]);
const NAMED = new Set(["properties", "patternProperties", "dependentSchemas"]);

/** `schema` (at pointer `at`) without descriptions or versions (core's `strip`). */
function strip(schema: unknown, at: string): unknown {
  if (typeof schema === "boolean") return schema;
  if (!isObj(schema)) return fail(at, "a schema is a JSON object or a boolean");
  const out: Obj = {};
  for (const [key, value] of Object.entries(schema)) {
    const here = child(at, key);
    if (key === "description") continue;
    if (key === "$ref") {
      const k = typeof value === "string" ? defKeyOfRef(value) : null;
      if (k === null) {
        fail(here, "a `$ref` names a `$defs` entry by identity (`#/$defs/…`); no other can be written without its version");
      }
      out[key] = defRef(withoutVersion(k));
    } else if (key === "$defs") {
      if (!isObj(value)) fail(here, "`$defs` is an object");
      const entries: Obj = {};
      for (const [k, entry] of Object.entries(value)) {
        const unversioned = withoutVersion(k);
        if (Object.prototype.hasOwnProperty.call(entries, unversioned)) {
          fail(child(here, k), `a second \`$defs\` entry for \`${unversioned}\` at another version`);
        }
        entries[unversioned] = strip(entry, child(here, k));
      }
      out[key] = entries;
    } else if (ONE.has(key)) {
      out[key] = strip(value, here);
    } else if (MANY.has(key)) {
      if (!Array.isArray(value)) fail(here, `\`${key}\` is an array of schemas`);
      out[key] = value.map((s: unknown, i: number) => strip(s, child(here, String(i))));
    } else if (NAMED.has(key)) {
      if (!isObj(value)) fail(here, `\`${key}\` maps names to schemas`);
      const named: Obj = {};
      for (const [name, s] of Object.entries(value)) named[name] = strip(s, child(here, name));
      out[key] = named;
    } else {
      out[key] = value;
    }
  }
  return out;
}

/** The canonical signature of a listed signature (core's `canonical_signature`). */
export function canonicalSignature(listed: unknown): unknown {
  if (!isObj(listed)) fail("", 'a signature is an object: {"params", "ok", "err", "generic"}');
  for (const k of Object.keys(listed)) {
    if (!["description", "params", "ok", "err", "generic"].includes(k)) fail(child("", k), `\`${k}\` is not a member of a signature`);
  }
  for (const k of ["params", "ok", "err", "generic"]) {
    if (!(k in listed)) fail("", `a signature has \`${k}\``);
  }
  if (listed["description"] !== undefined && typeof listed["description"] !== "string") {
    fail("/description", "a Tool's description is a string");
  }
  const params = listed["params"];
  if (!Array.isArray(params)) fail("/params", "`params` is an array of [name, schema] pairs");
  const generic = listed["generic"];
  if (!Array.isArray(generic)) fail("/generic", "`generic` is an array of type parameter names");
  generic.forEach((g: unknown, i: number) => {
    if (typeof g !== "string" || generic.indexOf(g) !== i) fail(`/generic/${i}`, "a type parameter name is a string, listed once");
  });
  return {
    params: params.map((p: unknown, i: number) => {
      if (!Array.isArray(p) || p.length !== 2 || typeof p[0] !== "string") fail(`/params/${i}`, "a parameter is a [name, schema] pair");
      return [p[0], strip(p[1], `/params/${i}/1`)];
    }),
    ok: strip(listed["ok"], "/ok"),
    err: strip(listed["err"], "/err"),
    generic,
  };
}

/** Canonical JSON text of JSON as `JSON.parse` makes it (numbers plain, keys in code-point order). */
function canonicalText(v: unknown): string {
  if (v === null) return "null";
  if (v === true) return "true";
  if (v === false) return "false";
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw new SignatureError(`a number that is not finite: ${v}`);
    return Number.isInteger(v) && Number.isSafeInteger(v) ? String(v) : Decimal.parse(String(v)).toString();
  }
  if (typeof v === "string") return stringText(v);
  if (Array.isArray(v)) return "[" + v.map(canonicalText).join(",") + "]";
  if (isObj(v)) {
    return (
      "{" +
      Object.keys(v)
        .sort(compareCodePoints)
        .map((k) => stringText(k) + ":" + canonicalText(v[k]))
        .join(",") +
      "}"
    );
  }
  throw new SignatureError(`not JSON: ${typeof v}`);
}

/** The fingerprint of a listed signature: `sha256:` and 64 lowercase hex digits. */
export function fingerprintOfSignature(listed: unknown): string {
  return "sha256:" + createHash("sha256").update(canonicalText(canonicalSignature(listed)), "utf8").digest("hex");
}
