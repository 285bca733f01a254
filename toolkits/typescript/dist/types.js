/**
 * The data-type category, as the listing's schemas write it.
 *
 * A {@link Type} is what a value is decoded at and written from. Named
 * types (records and enums) are declared once in an {@link Env} and referred
 * to by identity, so recursive types are finite. {@link typeFromSchema}
 * reads the schemas `flow tools` lists (core's `schema_of`), keyword for
 * keyword: a port of the Python toolkit's `types.py`.
 */
function prim(name) {
    return { k: "prim", name };
}
/** `Int`. */
export const INT = prim("Int");
/** `Decimal`. */
export const DECIMAL = prim("Decimal");
/** `Text`. */
export const TEXT = prim("Text");
/** `Bool`. */
export const BOOL = prim("Bool");
/** `Bytes`. */
export const BYTES = prim("Bytes");
/** `Instant`. */
export const INSTANT = prim("Instant");
/** `Duration`. */
export const DURATION = prim("Duration");
/** `json.Value`. */
export const JSON_VALUE = prim("json.Value");
/** A host token. */
export const HOST_TOKEN = prim("host token");
/** `Never`. */
export const NEVER = prim("Never");
/** `List<T>`. */
export const listOf = (item) => ({ k: "list", item });
/** `Set<T>`. */
export const setOf = (item) => ({ k: "set", item });
/** A tuple. */
export const tupleOf = (...items) => ({ k: "tuple", items });
/** `Dict<K, V>`. */
export const dictOf = (key, value) => ({ k: "dict", key, value });
/** `Option<T>`. */
export const optionOf = (inner) => ({ k: "option", inner });
/** `Result<T, E>`. */
export const resultOf = (ok, err) => ({ k: "result", ok, err });
/** A declared type by identity, with its type arguments. */
export const named = (identity, ...args) => ({ k: "named", identity, args });
/** A schema that is not one the listing's generator writes. */
export class SchemaError extends Error {
    name = "SchemaError";
}
const DEF_PREFIX = "#/$defs/";
function isObj(v) {
    return typeof v === "object" && v !== null && !Array.isArray(v);
}
function show(v) {
    return JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? x.toString() : x)) ?? String(v);
}
function unref(ref) {
    if (typeof ref !== "string" || !ref.startsWith(DEF_PREFIX)) {
        throw new SchemaError(`a $ref outside $defs: ${show(ref)}`);
    }
    return ref.slice(DEF_PREFIX.length).replaceAll("~1", "/").replaceAll("~0", "~");
}
function tagged(schema) {
    if (isObj(schema)) {
        const props = schema["properties"];
        if (schema["type"] === "object" && isObj(props) && schema["additionalProperties"] === false) {
            const names = Object.keys(props);
            const req = schema["required"];
            if (names.length === 1 && Array.isArray(req) && req.length === 1 && req[0] === names[0]) {
                const payload = props[names[0]];
                if (isObj(payload)) {
                    return [names[0], payload];
                }
            }
        }
    }
    throw new SchemaError(`not a tagged branch: ${show(schema)}`);
}
function sameJson(a, b) {
    return show(a) === show(b);
}
/** The type a schema written where a type is used describes. */
export function readType(schema) {
    if (!isObj(schema)) {
        throw new SchemaError(`a schema must be an object: ${show(schema)}`);
    }
    const s = {};
    for (const [k, v] of Object.entries(schema)) {
        if (k !== "$schema" && k !== "$defs" && k !== "description") {
            s[k] = v;
        }
    }
    if (Object.keys(s).length === 0) {
        return JSON_VALUE;
    }
    if ("$ref" in s) {
        const args = s["$args"];
        return named(unref(s["$ref"]), ...(Array.isArray(args) ? args.map(readType) : []));
    }
    if ("$param" in s) {
        return { k: "param", name: String(s["$param"]) };
    }
    if (s["$hostToken"] === true) {
        return HOST_TOKEN;
    }
    if (isObj(s["not"]) && Object.keys(s["not"]).length === 0) {
        return NEVER;
    }
    if ("oneOf" in s) {
        const branches = s["oneOf"];
        if (Array.isArray(branches) && branches.length === 2) {
            if (sameJson(branches[0], { const: "None" })) {
                const [name, inner] = tagged(branches[1]);
                if (name === "Some") {
                    return optionOf(readType(inner));
                }
            }
            const [ok, okp] = tagged(branches[0]);
            const [err, errp] = tagged(branches[1]);
            if (ok === "Ok" && err === "Err") {
                return resultOf(readType(okp), readType(errp));
            }
        }
        throw new SchemaError(`an inline oneOf that is neither Option nor Result: ${show(schema)}`);
    }
    const t = s["type"];
    switch (t) {
        case "integer":
            return INT;
        case "number":
            return DECIMAL;
        case "boolean":
            return BOOL;
        case "string":
            if (s["contentEncoding"] === "base64")
                return BYTES;
            if (s["format"] === "date-time")
                return INSTANT;
            if (s["format"] === "duration")
                return DURATION;
            return TEXT;
        case "object":
            return dictOf(TEXT, readType(s["additionalProperties"]));
    }
    if (t === "array" || sameJson(t, ["object", "array"])) {
        const items = s["items"];
        if (s["$dict"] === true) {
            const pair = isObj(items) ? items["prefixItems"] : undefined;
            if (!Array.isArray(pair) || pair.length !== 2) {
                throw new SchemaError(`a $dict without its pair: ${show(schema)}`);
            }
            return dictOf(readType(pair[0]), readType(pair[1]));
        }
        if (items === false) {
            const prefix = s["prefixItems"];
            return tupleOf(...(Array.isArray(prefix) ? prefix.map(readType) : []));
        }
        const item = readType(items);
        return s["uniqueItems"] === true ? setOf(item) : listOf(item);
    }
    throw new SchemaError(`a schema the listing's generator does not write: ${show(schema)}`);
}
function readFields(s) {
    const required = new Set([
        ...(Array.isArray(s["required"]) ? s["required"] : []),
        ...(Array.isArray(s["$required"]) ? s["$required"] : []),
    ]);
    const props = isObj(s["properties"]) ? s["properties"] : {};
    return Object.entries(props).map(([name, sub]) => {
        const ty = readType(sub);
        return [name, required.has(name) ? ty : optionOf(ty)];
    });
}
/** A `$defs` entry: a record's object or an enum's `oneOf`. */
export function readDecl(identity, s) {
    if (!isObj(s)) {
        throw new SchemaError(`a declaration must be an object: ${identity}`);
    }
    const generic = s["$generic"];
    const params = Array.isArray(generic) ? generic.map(String) : [];
    if (isObj(s["not"]) && Object.keys(s["not"]).length === 0) {
        return { k: "enum", identity, params, constructors: [] };
    }
    if (Array.isArray(s["oneOf"])) {
        const constructors = s["oneOf"].map((b) => {
            if (isObj(b) && "const" in b) {
                return { name: String(b["const"]), payload: null };
            }
            const [name, payload] = tagged(b);
            if (payload["type"] === "object" && "properties" in payload) {
                return { name, payload: { fields: readFields(payload) } };
            }
            return { name, payload: { value: readType(payload) } };
        });
        return { k: "enum", identity, params, constructors };
    }
    if (s["type"] === "object") {
        return { k: "record", identity, params, fields: readFields(s) };
    }
    throw new SchemaError(`a declaration the generator does not write: ${identity}`);
}
/**
 * The type a root schema describes, and the declarations under its
 * `$defs`. The schema is JSON as `JSON.parse` (or the toolkit's own
 * reader, {@link parseJsonValue}) makes it: key order is field order.
 */
export function typeFromSchema(schema) {
    const env = new Map();
    if (isObj(schema) && isObj(schema["$defs"])) {
        for (const [k, v] of Object.entries(schema["$defs"])) {
            env.set(k, readDecl(k, v));
        }
    }
    return [readType(schema), env];
}
/** The type as Flow writes it in a message. */
export function written(ty) {
    switch (ty.k) {
        case "prim":
            return ty.name === "host token" ? "a host token" : ty.name;
        case "list":
            return `List<${written(ty.item)}>`;
        case "set":
            return `Set<${written(ty.item)}>`;
        case "tuple":
            return "(" + ty.items.map(written).join(", ") + ")";
        case "dict":
            return `Dict<${written(ty.key)}, ${written(ty.value)}>`;
        case "option":
            return `Option<${written(ty.inner)}>`;
        case "result":
            return `Result<${written(ty.ok)}, ${written(ty.err)}>`;
        case "named": {
            const name = ty.identity.slice(ty.identity.lastIndexOf(".") + 1);
            return ty.args.length ? `${name}<${ty.args.map(written).join(", ")}>` : name;
        }
        case "param":
            return ty.name;
    }
}
/** `ty` with the type parameters of `scope` substituted. */
export function close(ty, scope) {
    if (scope.size === 0) {
        return ty;
    }
    switch (ty.k) {
        case "param":
            return scope.get(ty.name) ?? ty;
        case "list":
            return listOf(close(ty.item, scope));
        case "set":
            return setOf(close(ty.item, scope));
        case "tuple":
            return tupleOf(...ty.items.map((t) => close(t, scope)));
        case "dict":
            return dictOf(close(ty.key, scope), close(ty.value, scope));
        case "option":
            return optionOf(close(ty.inner, scope));
        case "result":
            return resultOf(close(ty.ok, scope), close(ty.err, scope));
        case "named":
            return named(ty.identity, ...ty.args.map((a) => close(a, scope)));
        case "prim":
            return ty;
    }
}
