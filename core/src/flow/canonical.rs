//! The canonical text of a value (§ The canonical form).
//!
//! One text for every value: no whitespace, object keys in ascending
//! code-point order, minimal string escapes, plain decimal numbers, instants
//! in UTC with the fewest exact fractional digits, durations as `PT…S`.
//! Every hash over a value is taken over this text.

use base64::Engine as _;

use crate::json::write_string;

use super::number::Decimal;
use super::time::{Duration, Instant};
use super::value::{EnumPayload, JsonValue, Value};

// The constructors of the two values held in canonical order live here, with
// the text that order is by, so that `value` (the data) does not reach up to
// its own writer.
impl Value {
    /// A set of `items`, put in canonical order with duplicates removed.
    pub fn set(items: Vec<Value>) -> Value {
        let mut keyed: Vec<(Vec<u8>, Value)> = items
            .into_iter()
            .map(|v| (to_canonical_vec(&v), v))
            .collect();
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        keyed.dedup_by(|a, b| a.0 == b.0);
        Value::Set(keyed.into_iter().map(|(_, v)| v).collect())
    }

    /// A dict of `entries`, put in canonical key order. A key given twice
    /// keeps its last value, as a dict built by insertion does.
    pub fn dict(entries: Vec<(Value, Value)>) -> Value {
        let mut keyed: Vec<(Vec<u8>, (Value, Value))> = entries
            .into_iter()
            .map(|e| (to_canonical_vec(&e.0), e))
            .collect();
        // Stable sort keeps insertion order among equal keys; keep the last.
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out: Vec<(Vec<u8>, (Value, Value))> = Vec::with_capacity(keyed.len());
        for item in keyed {
            match out.last_mut() {
                Some(last) if last.0 == item.0 => *last = item,
                _ => out.push(item),
            }
        }
        Value::Dict(out.into_iter().map(|(_, e)| e).collect())
    }
}

/// The canonical text of `value`, as bytes.
pub fn to_canonical_vec(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    out
}

/// The canonical text of `value`.
pub fn to_canonical_string(value: &Value) -> String {
    // The writer emits only UTF-8: strings are copied from `String`s and
    // everything else is ASCII.
    String::from_utf8(to_canonical_vec(value)).expect("canonical text is UTF-8")
}

/// Appends the canonical text of `value` to `out`.
pub fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Int(i) => out.extend_from_slice(i.to_string().as_bytes()),
        Value::Decimal(d) => write_decimal(d, out),
        Value::Text(s) => write_string(s, out),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Bytes(b) => {
            out.push(b'"');
            out.extend_from_slice(
                base64::engine::general_purpose::STANDARD
                    .encode(b)
                    .as_bytes(),
            );
            out.push(b'"');
        }
        Value::Instant(t) => {
            out.push(b'"');
            write_instant(*t, out);
            out.push(b'"');
        }
        Value::Duration(d) => {
            out.push(b'"');
            write_duration(*d, out);
            out.push(b'"');
        }
        Value::List(items) | Value::Tuple(items) => write_array(items.iter(), out),
        Value::Set(items) => write_sorted_array(items.iter().map(to_canonical_vec), out),
        Value::Dict(entries) => write_sorted_array(
            entries.iter().map(|(k, v)| {
                let mut pair = vec![b'['];
                write_canonical(k, &mut pair);
                pair.push(b',');
                write_canonical(v, &mut pair);
                pair.push(b']');
                pair
            }),
            out,
        ),
        Value::TextDict(entries) => write_object(entries.iter().map(|(k, v)| (k.as_str(), v)), out),
        Value::Option(None) => out.extend_from_slice(b"\"None\""),
        Value::Option(Some(v)) => write_tagged("Some", v, out),
        Value::Result(Ok(v)) => write_tagged("Ok", v, out),
        Value::Result(Err(e)) => write_tagged("Err", e, out),
        Value::Record(fields) => write_record(fields, out),
        Value::Enum {
            constructor,
            payload,
        } => match payload {
            EnumPayload::Unit => write_string(constructor, out),
            EnumPayload::Value(v) => write_tagged(constructor, v, out),
            EnumPayload::Fields(fields) => {
                out.push(b'{');
                write_string(constructor, out);
                out.push(b':');
                write_record(fields, out);
                out.push(b'}');
            }
        },
        Value::Json(j) | Value::HostToken(j) => write_json(j, out),
    }
}

/// Appends the canonical text of a raw JSON value to `out`.
pub fn write_json(value: &JsonValue, out: &mut Vec<u8>) {
    match value {
        JsonValue::Null => out.extend_from_slice(b"null"),
        JsonValue::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        JsonValue::Number(d) => d.write_to(out),
        JsonValue::String(s) => write_string(s, out),
        JsonValue::Array(items) => {
            out.push(b'[');
            if let Some((first, rest)) = items.split_first() {
                write_json(first, out);
                for item in rest {
                    out.push(b',');
                    write_json(item, out);
                }
            }
            out.push(b']');
        }
        JsonValue::Object(members) => {
            // Objects are built sorted; sort anyway if one was built by hand.
            if members.windows(2).all(|w| w[0].0 <= w[1].0) {
                write_json_members(members.iter().map(|(k, v)| (&**k, v)), out);
            } else {
                let mut refs: Vec<(&str, &JsonValue)> =
                    members.iter().map(|(k, v)| (&**k, v)).collect();
                refs.sort_by(|a, b| a.0.cmp(b.0));
                write_json_members(refs.into_iter(), out);
            }
        }
    }
}

/// The canonical text of a raw JSON value.
pub fn json_to_canonical_vec(value: &JsonValue) -> Vec<u8> {
    let mut out = Vec::new();
    write_json(value, &mut out);
    out
}

fn write_json_members<'a>(
    mut members: impl Iterator<Item = (&'a str, &'a JsonValue)>,
    out: &mut Vec<u8>,
) {
    out.push(b'{');
    if let Some((k, v)) = members.next() {
        write_string(k, out);
        out.push(b':');
        write_json(v, out);
        for (k, v) in members {
            out.push(b',');
            write_string(k, out);
            out.push(b':');
            write_json(v, out);
        }
    }
    out.push(b'}');
}

/// A record's fields as an object: keys sorted, an `Option` field left out
/// when `None` and written bare when `Some`.
fn write_record(fields: &[(String, Value)], out: &mut Vec<u8>) {
    write_object(
        fields.iter().filter_map(|(k, v)| match v {
            Value::Option(None) => None,
            Value::Option(Some(inner)) => Some((k.as_str(), &**inner)),
            other => Some((k.as_str(), other)),
        }),
        out,
    )
}

fn write_object<'a>(members: impl Iterator<Item = (&'a str, &'a Value)>, out: &mut Vec<u8>) {
    let mut refs: Vec<(&str, &Value)> = members.collect();
    if !refs.windows(2).all(|w| w[0].0 <= w[1].0) {
        refs.sort_by(|a, b| a.0.cmp(b.0));
    }
    out.push(b'{');
    for (i, (k, v)) in refs.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_string(k, out);
        out.push(b':');
        write_canonical(v, out);
    }
    out.push(b'}');
}

fn write_tagged(tag: &str, v: &Value, out: &mut Vec<u8>) {
    out.push(b'{');
    write_string(tag, out);
    out.push(b':');
    write_canonical(v, out);
    out.push(b'}');
}

fn write_array<'a>(items: impl Iterator<Item = &'a Value>, out: &mut Vec<u8>) {
    out.push(b'[');
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_canonical(item, out);
    }
    out.push(b']');
}

/// An array of already-written elements, in ascending byte order without
/// duplicates: the one fixed order of sets and non-text dicts.
fn write_sorted_array(texts: impl Iterator<Item = Vec<u8>>, out: &mut Vec<u8>) {
    let mut texts: Vec<Vec<u8>> = texts.collect();
    texts.sort();
    texts.dedup();
    out.push(b'[');
    for (i, t) in texts.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(t);
    }
    out.push(b']');
}

fn write_decimal(d: &Decimal, out: &mut Vec<u8>) {
    d.write_to(out);
}

const NANOS_PER_SECOND: i128 = 1_000_000_000;

/// Appends `.fffffffff` with trailing zeros removed, or nothing when whole.
fn write_fraction(nanos: u32, out: &mut Vec<u8>) {
    if nanos == 0 {
        return;
    }
    let mut digits = format!("{nanos:09}");
    while digits.ends_with('0') {
        digits.pop();
    }
    out.push(b'.');
    out.extend_from_slice(digits.as_bytes());
}

/// The civil date of a day count since 1970-01-01 (proleptic Gregorian).
pub(crate) fn civil_from_days(days: i128) -> (i128, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i128::from(month <= 2);
    (year, month, day)
}

/// Appends an instant as `YYYY-MM-DDTHH:MM:SS[.f]Z`; a year outside
/// 0000..=9999 is written with a sign and at least four digits.
pub fn write_instant(t: Instant, out: &mut Vec<u8>) {
    use std::io::Write as _;
    let secs = t.nanos.div_euclid(NANOS_PER_SECOND);
    let nanos = t.nanos.rem_euclid(NANOS_PER_SECOND) as u32;
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let _ = if (0..=9999).contains(&year) {
        write!(out, "{year:04}")
    } else if year < 0 {
        write!(out, "-{:04}", -year)
    } else {
        write!(out, "+{year:04}")
    };
    let _ = write!(
        out,
        "-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    );
    write_fraction(nanos, out);
    out.push(b'Z');
}

/// Appends a duration as `PT<seconds>S`: `PT90S`, `PT0.25S`, `PT-5S`.
pub fn write_duration(d: Duration, out: &mut Vec<u8>) {
    use std::io::Write as _;
    let negative = d.nanos < 0;
    let magnitude = d.nanos.unsigned_abs();
    let whole = magnitude / NANOS_PER_SECOND as u128;
    let nanos = (magnitude % NANOS_PER_SECOND as u128) as u32;
    out.extend_from_slice(b"PT");
    if negative {
        out.push(b'-');
    }
    let _ = write!(out, "{whole}");
    write_fraction(nanos, out);
    out.push(b'S');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::number::Int;

    fn text(v: &Value) -> String {
        to_canonical_string(v)
    }

    #[test]
    fn option_in_a_record_field_is_omitted_or_bare() {
        let v = Value::record(vec![
            ("b", Value::none()),
            ("a", Value::some(Value::int(1))),
            ("c", Value::some(Value::none())),
        ]);
        assert_eq!(text(&v), r#"{"a":1,"c":"None"}"#);
    }

    #[test]
    fn option_elsewhere_is_an_enum() {
        let v = Value::List(vec![Value::none(), Value::some(Value::int(2))]);
        assert_eq!(text(&v), r#"["None",{"Some":2}]"#);
    }

    #[test]
    fn enums_are_a_name_or_a_single_member_object() {
        assert_eq!(text(&Value::unit_enum("Red")), r#""Red""#);
        assert_eq!(
            text(&Value::enum_value("Rgb", Value::text("ff0000"))),
            r#"{"Rgb":"ff0000"}"#
        );
        let fields = Value::Enum {
            constructor: "Point".into(),
            payload: EnumPayload::Fields(vec![
                ("y".into(), Value::int(2)),
                ("x".into(), Value::int(1)),
            ]),
        };
        assert_eq!(text(&fields), r#"{"Point":{"x":1,"y":2}}"#);
    }

    #[test]
    fn strings_escape_only_what_they_must() {
        let v = Value::text("a\"b\\c\n\u{1}\u{1f}é\u{7f}/");
        assert_eq!(text(&v), "\"a\\\"b\\\\c\\n\\u0001\\u001fé\u{7f}/\"");
    }

    #[test]
    fn instants_are_utc_with_the_fewest_exact_digits() {
        let t = |nanos: i128| {
            let mut out = Vec::new();
            write_instant(Instant::from_unix_nanos(nanos), &mut out);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(t(0), "1970-01-01T00:00:00Z");
        assert_eq!(t(1_500_000_000), "1970-01-01T00:00:01.5Z");
        assert_eq!(t(-1), "1969-12-31T23:59:59.999999999Z");
        // 10000-01-01T00:00:00Z is 253402300800 seconds after the epoch.
        assert_eq!(
            t(253_402_300_800 * NANOS_PER_SECOND),
            "+10000-01-01T00:00:00Z"
        );
        // 0000-01-01 is 719528 days before the epoch; a day earlier is year -1.
        assert_eq!(
            t(-719_528 * 86_400 * NANOS_PER_SECOND),
            "0000-01-01T00:00:00Z"
        );
        assert_eq!(
            t(-719_529 * 86_400 * NANOS_PER_SECOND),
            "-0001-12-31T00:00:00Z"
        );
    }

    #[test]
    fn durations_are_pt_seconds_s() {
        let d = |nanos: i128| {
            let mut out = Vec::new();
            write_duration(Duration::from_nanos(nanos), &mut out);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(d(90 * NANOS_PER_SECOND), "PT90S");
        assert_eq!(d(250_000_000), "PT0.25S");
        assert_eq!(d(-5 * NANOS_PER_SECOND), "PT-5S");
        assert_eq!(d(-500_000_000), "PT-0.5S");
        assert_eq!(d(0), "PT0S");
    }

    #[test]
    fn dicts_with_text_keys_are_objects_and_others_pair_arrays() {
        let text_keys = Value::text_dict(vec![
            ("b".into(), Value::int(2)),
            ("a".into(), Value::int(1)),
        ]);
        assert_eq!(text(&text_keys), r#"{"a":1,"b":2}"#);
        assert_eq!(text(&Value::text_dict(vec![])), "{}");
        let int_keys = Value::dict(vec![
            (Value::int(10), Value::Bool(true)),
            (Value::int(2), Value::Bool(false)),
        ]);
        assert_eq!(text(&int_keys), "[[10,true],[2,false]]");
        assert_eq!(text(&Value::dict(vec![])), "[]");
    }

    #[test]
    fn sets_have_one_order() {
        let a = Value::set(vec![Value::int(3), Value::int(1), Value::int(3)]);
        let b = Value::set(vec![Value::int(1), Value::int(3)]);
        assert_eq!(a, b);
        assert_eq!(text(&a), "[1,3]");
        // Even a set built by hand out of order is written in the one order.
        let by_hand = Value::Set(vec![Value::int(3), Value::int(1)]);
        assert_eq!(text(&by_hand), "[1,3]");
    }

    #[test]
    fn numbers_are_plain() {
        let big = Int(dashu_int::IBig::from(10u8).pow(30));
        assert_eq!(text(&Value::Int(big)), format!("1{}", "0".repeat(30)));
    }
}
