/**
 * The writing direction is strict too: a value that is not of the declared
 * type is refused with its path; and the values' own arithmetic and texts.
 * Run by toolkit/tests/typescript_toolkit.rs; exits non-zero on the first
 * surprise.
 */

import assert from "node:assert/strict";

import {
  BOOL,
  DECIMAL,
  DURATION,
  Decimal,
  Duration,
  FlowSet,
  INSTANT,
  INT,
  Instant,
  JSON_VALUE,
  NEVER,
  Refused,
  TEXT,
  Type,
  decode,
  dictOf,
  encode,
  listOf,
  optionOf,
  setOf,
  some,
} from "../src/index.js";

function refused(value: unknown, ty: Type, path: string): void {
  let text: string;
  try {
    text = encode(value, ty, new Map());
  } catch (e) {
    assert.ok(e instanceof Refused, String(e));
    assert.ok(e.message.startsWith(path + ":"), `${e.message} is not at ${path}`);
    return;
  }
  assert.fail(`${String(value)} written as ${text}`);
}

refused(1.5, DECIMAL, "$"); // a number is never a Decimal
refused(1, DECIMAL, "$");
refused(true, INT, "$");
refused(1, INT, "$"); // nor an Int
refused("\ud800", TEXT, "$");
refused([1n, "x"], listOf(INT), "$[1]");
refused(new Map<string, unknown>([["a", 1n], ["b", 1.5]]), dictOf(TEXT, INT), "$.b");
refused({ a: 1n }, dictOf(TEXT, INT), "$"); // a Dict<Text, V> is a Map
refused(3n, optionOf(INT), "$");
refused(some(1.5), optionOf(DECIMAL), "$.some");
refused(1.5, JSON_VALUE, "$");
refused(1n, NEVER, "$");
refused(1, BOOL, "$");
refused(10n ** 5000n, INT, "$");
refused(new FlowSet([1n, 1n]), setOf(INT), "$.items[1]");
refused(new Instant(1n << 127n), INSTANT, "$");

assert.equal(encode(2n ** 64n + 1n, INT, new Map()), "18446744073709551617");
assert.equal(encode(Decimal.parse("-0.00"), DECIMAL, new Map()), "0");
assert.equal(
  encode(Decimal.parse("1.2345678901234567890123456789012345678901E+3"), DECIMAL, new Map()),
  "1234.5678901234567890123456789012345678901",
);
const obj = Object.assign(Object.create(null) as Record<string, unknown>, { b: [1n, Decimal.parse("1.50")], a: null });
assert.equal(encode(obj, JSON_VALUE, new Map()), '{"a":null,"b":[1,1.5]}');
assert.equal(encode({ "\u{1F600}": 1n, "\uffff": 2n }, JSON_VALUE, new Map()), '{"\uffff":2,"\u{1F600}":1}');
assert.equal(encode(new Instant(-1n), INSTANT, new Map()), '"1969-12-31T23:59:59.999999999Z"');
assert.equal(encode(new Duration(-1_500_000_000n), DURATION, new Map()), '"PT-1.5S"');
assert.equal(encode(new FlowSet([3n, 1n, 2n]), setOf(INT), new Map()), "[1,2,3]");

// The Decimal's arithmetic is exact, and its text canonical.
const a = Decimal.parse("0.1");
const b = Decimal.parse("0.2");
assert.ok(a.add(b).equals(Decimal.parse("0.3")));
assert.equal(a.mul(b).toString(), "0.02");
assert.equal(b.sub(a).neg().toString(), "-0.1");
assert.equal(a.compare(b), -1);
assert.equal(Decimal.parse("1e3").toString(), "1000");
assert.equal(new Decimal(150n, -2).toString(), "1.5");
assert.throws(() => Decimal.parse("1.5x"), SyntaxError);

// A decoded json.Value keeps every digit, and an object has no prototype.
const j = decode('{"n": 123456789012345678901234567890, "d": 0.10000000000000000000001}', JSON_VALUE, new Map()) as Record<string, unknown>;
assert.equal(Object.getPrototypeOf(j), null);
assert.equal(j["n"], 123456789012345678901234567890n);
assert.equal(String(j["d"]), "0.10000000000000000000001");
console.error("ok");
