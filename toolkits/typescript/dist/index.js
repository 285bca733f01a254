/**
 * limen-toolkit: write a Flow Tool's implementation in TypeScript.
 *
 * - Values ({@link Decimal}, {@link Instant}, {@link Duration},
 *   {@link FlowSet}, {@link FlowDict}, {@link HostToken}, {@link Some},
 *   {@link JsonValue}): the one runtime representation of Flow values.
 * - Types and the codec ({@link typeFromSchema}, {@link decode},
 *   {@link encode}): strict, type-directed conversions held to core's.
 * - The serve loop ({@link serve}, {@link Context}, {@link Failed},
 *   {@link Unknown}, {@link NotRun}, {@link Handler}).
 */
export { Decimal, Duration, FlowDict, FlowSet, HostToken, Instant, some, numberText, instantText, durationText, } from "./values.js";
export { BOOL, BYTES, DECIMAL, DURATION, HOST_TOKEN, INSTANT, INT, JSON_VALUE, NEVER, TEXT, SchemaError, close, dictOf, listOf, named, optionOf, readDecl, readType, resultOf, setOf, tupleOf, typeFromSchema, written, } from "./types.js";
export { Refused, pathText, stringText } from "./json.js";
export { DEFAULT_LIMITS, compareCodePoints, decode, decodeRaw, encode, jsonText, parse, parseJsonValue, } from "./codec.js";
export { SignatureError, canonicalSignature, fingerprintOfSignature, withoutVersion } from "./fingerprint.js";
export { CANCELLED_BEFORE, CANCELLED_BY_HOST, Failed, NotRun, STDOUT_TAKEN, Unknown, compact, serve, } from "./serve.js";
