//! The canonical JSON text of a `serde_json::Value`.
//!
//! Schemas and signatures are `serde_json` documents; their canonical text
//! is the one § The canonical form gives every value, written by the one
//! canonical writer ([`write_json`]):
//! no whitespace, keys in code-point order, minimal escapes, plain numbers.

use dashu_int::IBig;
use serde_json::{Number, Value};

use crate::flow::canonical::write_json;
use crate::flow::number::Decimal;
use crate::flow::value::JsonValue;

/// The canonical JSON text of `value`: the text a fingerprint is taken
/// over.
///
/// A number is written as the exact decimal `serde_json` holds: an integer
/// as itself, a binary fraction as the shortest decimal that reads back as
/// it (a number past 64 bits in the source text has already been rounded
/// by `serde_json`; the schemas we write hold none).
pub fn canonical_json_text(value: &Value) -> String {
    let mut out = Vec::new();
    write_json(&to_json_value(value), &mut out);
    // The writer emits only UTF-8: strings are copied from `String`s and
    // everything else is ASCII.
    String::from_utf8(out).unwrap_or_default()
}

fn to_json_value(value: &Value) -> JsonValue {
    match value {
        Value::Null => JsonValue::Null,
        Value::Bool(b) => JsonValue::Bool(*b),
        Value::Number(n) => JsonValue::Number(decimal(n)),
        Value::String(s) => JsonValue::String(s.as_str().into()),
        Value::Array(items) => JsonValue::Array(items.iter().map(to_json_value).collect()),
        Value::Object(map) => {
            let mut members: Vec<(Box<str>, JsonValue)> = map
                .iter()
                .map(|(k, v)| (k.as_str().into(), to_json_value(v)))
                .collect();
            // A `serde_json` map holds each key once; sorted, it is the
            // object `JsonValue` holds.
            members.sort_by(|a, b| a.0.cmp(&b.0));
            JsonValue::Object(members.into())
        }
    }
}

fn decimal(n: &Number) -> Decimal {
    if let Some(u) = n.as_u64() {
        return Decimal::new(IBig::from(u), 0);
    }
    if let Some(i) = n.as_i64() {
        return Decimal::new(IBig::from(i), 0);
    }
    // `Display` of an f64 is positional (never an exponent) with the
    // shortest digits that read back as it.
    let text = n.as_f64().map_or_else(|| "0".to_owned(), |f| f.to_string());
    let (negative, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.as_str()),
    };
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = format!("{whole}{fraction}");
    let magnitude = IBig::from_str_radix(&digits, 10).unwrap_or(IBig::ZERO);
    let coefficient = if negative { -magnitude } else { magnitude };
    let exponent = -i64::try_from(fraction.len()).unwrap_or(0);
    Decimal::new(coefficient, exponent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_sorted_by_code_point_no_whitespace() {
        let v = json!({"b": [1, {"z": null, "a": true}], "a": "x", "é": 1, "Z": 2});
        assert_eq!(
            canonical_json_text(&v),
            r#"{"Z":2,"a":"x","b":[1,{"a":true,"z":null}],"é":1}"#
        );
    }

    #[test]
    fn strings_escape_only_what_they_must() {
        let v = json!("a\"b\\c\n\u{1}\u{7f}é/");
        assert_eq!(canonical_json_text(&v), "\"a\\\"b\\\\c\\n\\u0001\u{7f}é/\"");
    }

    #[test]
    fn numbers_are_plain_decimals() {
        let v: Value =
            serde_json::from_str("[56.0, 1E3, -0.0, 0.25, -7, 18446744073709551615, 1e-7]")
                .unwrap();
        assert_eq!(
            canonical_json_text(&v),
            "[56,1000,0,0.25,-7,18446744073709551615,0.0000001]"
        );
    }
}
