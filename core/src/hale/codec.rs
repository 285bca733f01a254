//! The JSON codec (§ Codecs): strict decoding of a payload by the request's
//! shape.
//!
//! A [`Shape`] is what the codec sees of a type: `Int`, `Float`, `Bool`,
//! `String` and structs of them, a `json:"key"` tag renaming a key, a range
//! narrowing an integer. Decoding never coerces: a value of the wrong JSON
//! kind is `wrong_type: <field>`, a field absent without a literal default
//! is `missing_field: <field>` (a nested field by its path, `ship.city`),
//! and a payload that is one scalar must be that scalar's complete JSON
//! token. The result is a JSON value holding exactly what the shape names,
//! defaults filled in, keys under their declared names' JSON keys.

use crate::json::plain::Plain;
use crate::json::{DuplicateKeys, Event, Tokenizer};

/// What the JSON codec carries.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    /// An integer with no fraction or exponent that fits 64 bits, within
    /// `min..=max` when the type is a range.
    Int {
        /// The smallest value, for a range.
        min: Option<i64>,
        /// The largest value, for a range.
        max: Option<i64>,
    },
    /// Any JSON number.
    Float,
    /// `true` or `false`.
    Bool,
    /// A string.
    String,
    /// A struct: its fields in declaration order.
    Struct(Vec<FieldShape>),
}

impl Shape {
    /// An integer of the full 64-bit range.
    pub const INT: Shape = Shape::Int {
        min: None,
        max: None,
    };
}

/// A struct's field as the codec reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldShape {
    /// The field's declared name.
    pub name: String,
    /// Its JSON key (the `json:"key"` tag, else the name).
    pub key: String,
    /// Its shape.
    pub shape: Shape,
    /// Its literal default, when it has one: an absent field takes it.
    pub default: Option<serde_json::Value>,
}

impl FieldShape {
    /// A field keyed by its name, without default.
    pub fn new(name: &str, shape: Shape) -> FieldShape {
        FieldShape {
            name: name.to_owned(),
            key: name.to_owned(),
            shape,
            default: None,
        }
    }
}

/// The deepest nesting a payload may have (structs within structs).
pub const MAX_DEPTH: usize = 64;

/// Decodes `payload` by `shape`; the error is the malformed reason.
pub fn decode(shape: &Shape, payload: &[u8]) -> Result<serde_json::Value, String> {
    if let Shape::Struct(fields) = shape {
        if let Some(value) = fast_struct(fields, payload) {
            return Ok(value);
        }
    }
    decode_tokenized(shape, payload)
}

/// The most fields [`fast_struct`] reads (and [`read_struct`] keeps in
/// place).
const FEW: usize = 8;

/// A struct of a few scalar fields sent as plain JSON (the usual request
/// payload), each known key once and every field given or defaulted, read
/// in one pass; `None` for anything else — a nested struct, an unknown key,
/// any error — which [`decode_tokenized`] reads and judges. What it reads,
/// it decodes as [`decode_tokenized`] does (a differential test and the
/// `hale_codec` fuzz target hold the two equal).
fn fast_struct(fields: &[FieldShape], payload: &[u8]) -> Option<serde_json::Value> {
    if fields.len() > FEW {
        return None;
    }
    let mut values: [Option<serde_json::Value>; FEW] = Default::default();
    let mut p = Plain::new(payload);
    p.ws();
    p.eat(b'{')?;
    p.ws();
    if p.eat(b'}').is_none() {
        loop {
            let key = p.key()?;
            let i = fields.iter().position(|f| f.key.as_bytes() == key)?;
            if values[i].is_some() {
                return None;
            }
            values[i] = Some(fast_scalar(&mut p, &fields[i].shape)?);
            if !p.more_members()? {
                break;
            }
        }
    }
    if !p.at_end() {
        return None;
    }
    let mut object = serde_json::Map::with_capacity(fields.len());
    for (f, v) in fields.iter().zip(values.iter_mut()) {
        object.insert(f.key.clone(), v.take().or_else(|| f.default.clone())?);
    }
    Some(serde_json::Value::Object(object))
}

/// A scalar field's value in plain JSON, decoded as [`read`] decodes it.
fn fast_scalar(p: &mut Plain<'_>, shape: &Shape) -> Option<serde_json::Value> {
    match shape {
        Shape::Int { min, max } => {
            let v = plain_i64(p.number_bytes()?)?;
            if min.is_some_and(|m| v < m) || max.is_some_and(|m| v > m) {
                return None;
            }
            Some(v.into())
        }
        Shape::Float => {
            let v: f64 = p.number()?.parse().ok()?;
            serde_json::Number::from_f64(v).map(serde_json::Value::Number)
        }
        Shape::Bool => match p.literal()? {
            "true" => Some(true.into()),
            "false" => Some(false.into()),
            _ => None,
        },
        Shape::String => Some(p.string()?.to_owned().into()),
        Shape::Struct(_) => None,
    }
}

/// A number token that is a plain integer (no fraction, no exponent) in
/// 64 bits, as `str::parse::<i64>` reads it; `None` for any other token.
fn plain_i64(token: &[u8]) -> Option<i64> {
    let (negative, digits) = match token.split_first()? {
        (b'-', rest) => (true, rest),
        _ => (false, token),
    };
    if digits.is_empty() {
        return None;
    }
    // Accumulated negative, so i64::MIN is read as itself.
    let mut v: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_sub(i64::from(d - b'0'))?;
    }
    if negative {
        Some(v)
    } else {
        v.checked_neg()
    }
}

/// [`decode`]'s general reader, through the tokenizer: every payload the
/// fast path does not take is decoded here, and every one it takes is
/// decoded here alike.
pub fn decode_tokenized(shape: &Shape, payload: &[u8]) -> Result<serde_json::Value, String> {
    let mut t = Tokenizer::with_max_depth(payload, MAX_DEPTH);
    let first = match t.next_event() {
        Ok(Some(e)) => e,
        _ => return Err("wrong_type: payload".into()),
    };
    let value = read(&mut t, first, shape, &Path::Payload)?;
    t.finish().map_err(|_| "wrong_type: payload".to_owned())?;
    Ok(value)
}

/// `wrong_type: <path>`. Shared with the protobuf codec, which speaks the
/// same words.
pub(super) fn wrong(path: &Path<'_>) -> String {
    format!("wrong_type: {path}")
}

/// Where a value sits in the payload: `payload`, a top-level field's name,
/// or a nested field's dotted path. Written out only for an error, so a
/// payload that decodes builds no path text. Shared with the protobuf
/// codec.
#[derive(Clone, Copy)]
pub(super) enum Path<'p> {
    /// The payload itself.
    Payload,
    /// A field of the struct at the parent path.
    Field(&'p Path<'p>, &'p str),
}

impl std::fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Path::Payload => f.write_str("payload"),
            // A top-level field is named alone, a nested one after its
            // parent's path.
            Path::Field(Path::Payload, name) => f.write_str(name),
            Path::Field(parent, name) => write!(f, "{parent}.{name}"),
        }
    }
}

fn read<'a>(
    t: &mut Tokenizer<'a>,
    first: Event<'a>,
    shape: &Shape,
    path: &Path<'_>,
) -> Result<serde_json::Value, String> {
    match (shape, first) {
        (Shape::Int { min, max }, Event::Number(n)) => {
            if !n.is_plain_integer() {
                return Err(wrong(path));
            }
            let v: i64 = n.raw().parse().map_err(|_| wrong(path))?;
            if min.is_some_and(|m| v < m) || max.is_some_and(|m| v > m) {
                return Err(wrong(path));
            }
            Ok(v.into())
        }
        (Shape::Float, Event::Number(n)) => {
            let v: f64 = n.raw().parse().map_err(|_| wrong(path))?;
            serde_json::Number::from_f64(v)
                .map(serde_json::Value::Number)
                .ok_or_else(|| wrong(path))
        }
        (Shape::Bool, Event::Bool(b)) => Ok(b.into()),
        (Shape::String, Event::String(s)) => Ok(s.into_owned().into()),
        (Shape::Struct(fields), Event::BeginObject) => read_struct(t, fields, path),
        (_, other) => {
            // Pass over the rest of the value so the error is the type's,
            // not a later syntax error's.
            let _ = t.skip_value(&other);
            Err(wrong(path))
        }
    }
}

fn read_struct<'a>(
    t: &mut Tokenizer<'a>,
    fields: &[FieldShape],
    path: &Path<'_>,
) -> Result<serde_json::Value, String> {
    let child = |f: &FieldShape| Path::Field(path, &f.name).to_string();
    // The fields' values, in place for a struct of a few fields (most are):
    // a list for them would cost an allocation a struct.
    let mut few: [Option<serde_json::Value>; FEW] = Default::default();
    let mut many: Vec<Option<serde_json::Value>> = Vec::new();
    let values: &mut [Option<serde_json::Value>] = if fields.len() <= FEW {
        &mut few[..fields.len()]
    } else {
        many.resize(fields.len(), None);
        &mut many
    };
    // A known field's repeat shows in `values`; the keys the shape does not
    // name (rare) are kept to find theirs.
    let mut unknown = DuplicateKeys::new();
    loop {
        let key = match t.next_event() {
            Ok(Some(Event::EndObject)) => break,
            Ok(Some(Event::Key(k))) => k,
            _ => return Err(wrong(path)),
        };
        let field = fields.iter().position(|f| f.key == *key);
        let repeated = match field {
            Some(i) => values[i].is_some(),
            None => !unknown.insert(&key),
        };
        if repeated {
            let name = field.map_or_else(|| format!("{path}.{key}"), |i| child(&fields[i]));
            return Err(format!("duplicate_key: {name}"));
        }
        let first = match t.next_event() {
            Ok(Some(e)) => e,
            _ => return Err(wrong(path)),
        };
        match field {
            Some(i) => {
                let at = Path::Field(path, &fields[i].name);
                values[i] = Some(read(t, first, &fields[i].shape, &at)?)
            }
            // A key the shape does not name is passed over.
            None => {
                t.skip_value(&first).map_err(|_| wrong(path))?;
            }
        }
    }
    let mut object = serde_json::Map::with_capacity(fields.len());
    for (f, v) in fields.iter().zip(values.iter_mut()) {
        let v = match v.take().or_else(|| f.default.clone()) {
            Some(v) => v,
            None => return Err(format!("missing_field: {}", child(f))),
        };
        object.insert(f.key.clone(), v);
    }
    Ok(serde_json::Value::Object(object))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place() -> Shape {
        Shape::Struct(vec![
            FieldShape::new("symbol", Shape::String),
            FieldShape::new("qty", Shape::INT),
            FieldShape::new("limit", Shape::INT),
        ])
    }

    #[test]
    fn a_struct_decodes_in_declaration_order() {
        let v = decode(
            &place(),
            br#"{"limit": 12500, "qty": 10, "symbol": "ACME"}"#,
        )
        .unwrap();
        assert_eq!(v.to_string(), r#"{"symbol":"ACME","qty":10,"limit":12500}"#);
    }

    #[test]
    fn the_witness_reasons() {
        let cancel = Shape::Struct(vec![FieldShape::new("order", Shape::INT)]);
        assert_eq!(
            decode(&cancel, br#"{"order": "41"}"#).unwrap_err(),
            "wrong_type: order"
        );
        assert_eq!(
            decode(&place(), br#"{"symbol": "ACME", "limit": 12500}"#).unwrap_err(),
            "missing_field: qty"
        );
    }

    #[test]
    fn no_coercion() {
        let cancel = Shape::Struct(vec![FieldShape::new("order", Shape::INT)]);
        for bad in [
            &br#"{"order": 41.0}"#[..],
            br#"{"order": 4.1e1}"#,
            br#"{"order": 99999999999999999999}"#,
            br#"{"order": true}"#,
            br#"{"order": null}"#,
            br#"[41]"#,
            br#""41""#,
        ] {
            assert!(
                decode(&cancel, bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        assert_eq!(
            decode(&Shape::Bool, b"1").unwrap_err(),
            "wrong_type: payload"
        );
        assert_eq!(decode(&Shape::INT, b"41").unwrap(), serde_json::json!(41));
        assert!(decode(&Shape::String, b"\"a\" \"b\"").is_err());
    }

    #[test]
    fn nested_fields_are_named_by_path_and_defaults_fill_in() {
        let ship = Shape::Struct(vec![
            FieldShape::new("city", Shape::String),
            FieldShape {
                default: Some(serde_json::json!(1)),
                ..FieldShape::new("floor", Shape::INT)
            },
        ]);
        let order = Shape::Struct(vec![FieldShape {
            key: "to".into(),
            ..FieldShape::new("ship", ship)
        }]);
        assert_eq!(
            decode(&order, br#"{"to": {}}"#).unwrap_err(),
            "missing_field: ship.city"
        );
        assert_eq!(
            decode(&order, br#"{"to": {"city": 3}}"#).unwrap_err(),
            "wrong_type: ship.city"
        );
        assert_eq!(
            decode(&order, br#"{"to": {"city": "Oslo"}, "extra": [1]}"#).unwrap(),
            serde_json::json!({"to": {"city": "Oslo", "floor": 1}})
        );
        assert_eq!(
            decode(&order, br#"{"to": {"city": "a", "city": "b"}}"#).unwrap_err(),
            "duplicate_key: ship.city"
        );
    }

    #[test]
    fn the_fast_reader_decodes_every_payload_it_takes_as_the_tokenizer_does() {
        let shapes = [
            place(),
            Shape::Struct(vec![
                FieldShape::new("on", Shape::Bool),
                FieldShape::new("at", Shape::Float),
                FieldShape {
                    key: "pct".into(),
                    default: Some(serde_json::json!(7)),
                    ..FieldShape::new(
                        "percent",
                        Shape::Int {
                            min: Some(0),
                            max: Some(100),
                        },
                    )
                },
            ]),
            Shape::Struct(vec![FieldShape::new("book", Shape::String)]),
            Shape::Struct(Vec::new()),
            Shape::Struct(vec![FieldShape::new(
                "to",
                Shape::Struct(vec![FieldShape::new("city", Shape::String)]),
            )]),
            Shape::Struct(
                (0..9)
                    .map(|i| FieldShape::new(&format!("f{i}"), Shape::INT))
                    .collect(),
            ),
            Shape::INT,
        ];
        let bases: [&[u8]; 6] = [
            br#"{"symbol":"ACME","qty":10,"limit":12500}"#,
            br#" { "limit" : -0 , "symbol" : "A\u0042" , "qty" : 9223372036854775807 } "#,
            br#"{"on":true,"at":-1.5e-3,"pct":100}"#,
            br#"{"on":false,"at":1E400}"#,
            br#"{"book":"main","x":[1]}"#,
            br#"{"to":{"city":"Oslo"},"f0":1,"f8":2}"#,
        ];
        let alphabet = b"{}[]\":,019-.eE+ \t\\tfnrulx\x00\x7f\xc3\xa9";
        let mut payloads = vec![b"{}".to_vec(), b"null".to_vec(), b"".to_vec()];
        for base in bases {
            payloads.push(base.to_vec());
            payloads.extend(crate::mutations::one_byte_changes(base, alphabet));
        }
        let mut taken = 0;
        for shape in &shapes {
            for payload in &payloads {
                let fast = match shape {
                    Shape::Struct(fields) => fast_struct(fields, payload),
                    _ => None,
                };
                let general = decode_tokenized(shape, payload);
                if let Some(fast) = fast {
                    taken += 1;
                    // Equal as values and in key order.
                    let general = general
                        .clone()
                        .expect("the fast path took a refused payload");
                    assert_eq!(
                        fast.to_string(),
                        general.to_string(),
                        "{}",
                        String::from_utf8_lossy(payload)
                    );
                }
                assert_eq!(decode(shape, payload), general);
            }
        }
        assert!(taken > 200, "{taken} taken");
        assert!(fast_struct(
            match &place() {
                Shape::Struct(f) => f,
                _ => unreachable!(),
            },
            br#"{"symbol":"ACME","qty":10,"limit":12500}"#
        )
        .is_some());
    }

    #[test]
    fn a_plain_integer_is_read_as_str_parse_reads_it() {
        for token in [
            "0",
            "-0",
            "7",
            "-7",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "-9223372036854775809",
            "99999999999999999999",
            "00",
            "1.5",
            "1e3",
            "-",
            "",
            "+1",
            "12a",
        ] {
            assert_eq!(
                plain_i64(token.as_bytes()),
                token
                    .parse::<i64>()
                    .ok()
                    .filter(|_| !token.starts_with('+')),
                "{token}"
            );
        }
    }

    #[test]
    fn a_range_narrows() {
        let pct = Shape::Int {
            min: Some(0),
            max: Some(100),
        };
        assert!(decode(&pct, b"100").is_ok());
        assert_eq!(decode(&pct, b"101").unwrap_err(), "wrong_type: payload");
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        let deep = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(decode(&Shape::INT, deep.as_bytes()).is_err());
    }
}
