//! The protobuf codec (§ gRPC, The protobuf codec; § Codecs): proto3's
//! wire format for the shapes the JSON codec carries, as strict as it.
//!
//! A struct is a message whose fields are numbered 1, 2, … in the order the
//! struct declares them; `Int` (and an identity, a range, a quantity) is an
//! `int64` varint, `Float` a `double` (eight bytes, little endian), `Bool` a
//! varint, `String` a length-delimited UTF-8 text, a nested struct a
//! length-delimited message. A request, response or error that is one
//! scalar travels in a one-field message (`value = 1`), and a row with no
//! request in the empty `HaleEmpty` ([`Shape::Struct`] of no field here).
//!
//! [`decode`] gives the value the JSON codec gives for the same call (keys
//! under their JSON names, defaults filled in), so the exposure and the
//! handlers see one value whatever the codec; its errors are the JSON
//! codec's, in its words: a field of the wrong wire type is `wrong_type:
//! <field>`, an absent field without a default `missing_field: <field>` (a
//! nested field by its dotted path), a message that is not protobuf (a cut
//! field, a varint of more than ten bytes, field number 0, wire type 6 or
//! 7, an unbalanced group) `wrong_type: payload`. An unknown field is
//! skipped by its wire type, and the last of a field sent twice wins (a
//! message too: the spec's rule, where protobuf would merge). [`encode`]
//! writes every field whether or not it equals its default, so a zero is a
//! value.
//!
//! The exposure holds a protobuf call as
//! [`Payload::Proto`](crate::hale::runtime::Payload::Proto), the message's
//! bytes as sent; a gRPC exposure's codec decodes it here by the member's
//! request shape.

use serde_json::Value;

use super::codec::{wrong, FieldShape, Path, Shape, MAX_DEPTH};

/// The field a one-scalar request, response or error travels in.
pub const SCALAR_FIELD: &str = "value";

/// Wire type 0: a varint.
pub const VARINT: u8 = 0;
const I64: u8 = 1;
/// Wire type 2: length-delimited.
pub const LEN: u8 = 2;
const START_GROUP: u8 = 3;
const END_GROUP: u8 = 4;
const I32: u8 = 5;

/// The malformed reason for a message that is not protobuf.
const NOT_PROTOBUF: &str = "wrong_type: payload";

/// Decodes `message` by `shape`; the error is the malformed reason.
pub fn decode(shape: &Shape, message: &[u8]) -> Result<Value, String> {
    match shape {
        Shape::Struct(fields) => read_message(message, fields, &Path::Payload, 0),
        scalar => {
            // A scalar rides in field 1 of a message of its own.
            let wrapper = [FieldShape::new(SCALAR_FIELD, scalar.clone())];
            let mut value = read_message(message, &wrapper, &Path::Payload, 0)?;
            Ok(value[SCALAR_FIELD].take())
        }
    }
}

/// Encodes `value`, a value of `shape` as the JSON codec holds it (the
/// JSON codec's decoding of a handler's response or error), as a message.
/// The error names the first field the value does not carry as the shape
/// says.
pub fn encode(shape: &Shape, value: &Value) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    match shape {
        Shape::Struct(fields) => write_message(&mut out, fields, value, &Path::Payload)?,
        scalar => write_field(&mut out, 1, scalar, value, &Path::Payload)?,
    }
    Ok(out)
}

/// A cursor over a message's bytes.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn done(&self) -> bool {
        self.at == self.bytes.len()
    }

    /// A base-128 varint of at most ten bytes whose value fits 64 bits.
    fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for i in 0..10 {
            let Some(&byte) = self.bytes.get(self.at) else {
                return Err(NOT_PROTOBUF.into());
            };
            self.at += 1;
            let low = u64::from(byte & 0x7f);
            // The tenth byte holds the 64th bit alone.
            if i == 9 && low > 1 {
                return Err(NOT_PROTOBUF.into());
            }
            value |= low << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(NOT_PROTOBUF.into())
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).ok_or(NOT_PROTOBUF)?;
        let bytes = self.bytes.get(self.at..end).ok_or(NOT_PROTOBUF)?;
        self.at = end;
        Ok(bytes)
    }

    fn len_delimited(&mut self) -> Result<&'a [u8], String> {
        let n = self.varint()?;
        let n = usize::try_from(n).map_err(|_| NOT_PROTOBUF.to_owned())?;
        self.take(n)
    }

    /// A tag: the field number (1 or more) and the wire type.
    fn tag(&mut self) -> Result<(u64, u8), String> {
        let tag = self.varint()?;
        let number = tag >> 3;
        let wire = (tag & 7) as u8;
        if number == 0 || number > u64::from(u32::MAX >> 3) || wire > I32 {
            return Err(NOT_PROTOBUF.into());
        }
        Ok((number, wire))
    }

    /// Passes over a field's value by its wire type (a group to its end).
    fn skip(&mut self, number: u64, wire: u8, depth: usize) -> Result<(), String> {
        match wire {
            VARINT => self.varint().map(drop),
            I64 => self.take(8).map(drop),
            LEN => self.len_delimited().map(drop),
            I32 => self.take(4).map(drop),
            START_GROUP => {
                if depth >= MAX_DEPTH {
                    return Err(NOT_PROTOBUF.into());
                }
                loop {
                    let (inner, inner_wire) = self.tag()?;
                    if inner_wire == END_GROUP {
                        return if inner == number {
                            Ok(())
                        } else {
                            Err(NOT_PROTOBUF.into())
                        };
                    }
                    self.skip(inner, inner_wire, depth + 1)?;
                }
            }
            // An end with no start.
            _ => Err(NOT_PROTOBUF.into()),
        }
    }
}

fn read_message(
    bytes: &[u8],
    fields: &[FieldShape],
    path: &Path<'_>,
    depth: usize,
) -> Result<Value, String> {
    if depth >= MAX_DEPTH {
        return Err(wrong(path));
    }
    let mut r = Reader { bytes, at: 0 };
    let mut values: Vec<Option<Value>> = vec![None; fields.len()];
    while !r.done() {
        let (number, wire) = r.tag()?;
        let index = usize::try_from(number - 1)
            .ok()
            .filter(|&i| i < fields.len());
        let Some(i) = index else {
            r.skip(number, wire, depth)?;
            continue;
        };
        let field = &fields[i];
        let at = Path::Field(path, &field.name);
        if wire != wire_type(&field.shape) {
            // Passed over first, so a message cut inside the value is not
            // protobuf rather than a field of the wrong type.
            r.skip(number, wire, depth)?;
            return Err(wrong(&at));
        }
        // The last of a field sent twice wins.
        values[i] = Some(read_value(&mut r, &field.shape, &at, depth)?);
    }
    let mut object = serde_json::Map::with_capacity(fields.len());
    for (field, value) in fields.iter().zip(values) {
        let value = match value.or_else(|| field.default.clone()) {
            Some(v) => v,
            None => return Err(format!("missing_field: {}", Path::Field(path, &field.name))),
        };
        object.insert(field.key.clone(), value);
    }
    Ok(Value::Object(object))
}

/// The wire type a field of `shape` is sent with.
fn wire_type(shape: &Shape) -> u8 {
    match shape {
        Shape::Int { .. } | Shape::Bool => VARINT,
        Shape::Float => I64,
        Shape::String | Shape::Struct(_) => LEN,
    }
}

fn read_value(
    r: &mut Reader<'_>,
    shape: &Shape,
    path: &Path<'_>,
    depth: usize,
) -> Result<Value, String> {
    match shape {
        Shape::Int { min, max } => {
            let v = r.varint()? as i64;
            if min.is_some_and(|m| v < m) || max.is_some_and(|m| v > m) {
                return Err(wrong(path));
            }
            Ok(v.into())
        }
        // Any non-zero varint is true, as every protobuf parser reads it.
        Shape::Bool => Ok((r.varint()? != 0).into()),
        Shape::Float => {
            let bytes: [u8; 8] = r.take(8)?.try_into().expect("eight bytes");
            // A NaN or an infinity has no JSON number: not a Float the
            // JSON codec could hold either.
            serde_json::Number::from_f64(f64::from_le_bytes(bytes))
                .map(Value::Number)
                .ok_or_else(|| wrong(path))
        }
        Shape::String => {
            let bytes = r.len_delimited()?;
            std::str::from_utf8(bytes)
                .map(|s| Value::String(s.to_owned()))
                .map_err(|_| wrong(path))
        }
        Shape::Struct(fields) => {
            let bytes = r.len_delimited()?;
            read_message(bytes, fields, path, depth + 1)
        }
    }
}

/// Writes `v` as a base-128 varint.
pub fn write_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Writes a field's tag: its number and wire type.
pub fn write_tag(out: &mut Vec<u8>, number: u64, wire: u8) {
    write_varint(out, (number << 3) | u64::from(wire));
}

/// Writes field `number` as length-delimited `bytes` (nothing when they
/// are empty: proto3's implicit presence, for the messages whose fields
/// are not `optional`).
pub fn write_bytes_field(out: &mut Vec<u8>, number: u64, bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    write_tag(out, number, LEN);
    write_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn write_message(
    out: &mut Vec<u8>,
    fields: &[FieldShape],
    value: &Value,
    path: &Path<'_>,
) -> Result<(), String> {
    let Value::Object(object) = value else {
        return Err(wrong(path));
    };
    for (i, field) in fields.iter().enumerate() {
        let at = Path::Field(path, &field.name);
        let Some(v) = object.get(&field.key).or(field.default.as_ref()) else {
            return Err(format!("missing_field: {at}"));
        };
        write_field(out, i as u64 + 1, &field.shape, v, &at)?;
    }
    Ok(())
}

fn write_field(
    out: &mut Vec<u8>,
    number: u64,
    shape: &Shape,
    value: &Value,
    path: &Path<'_>,
) -> Result<(), String> {
    match (shape, value) {
        (Shape::Int { .. }, Value::Number(n)) => {
            let v = n.as_i64().ok_or_else(|| wrong(path))?;
            write_tag(out, number, VARINT);
            write_varint(out, v as u64);
        }
        (Shape::Bool, Value::Bool(b)) => {
            write_tag(out, number, VARINT);
            out.push(u8::from(*b));
        }
        (Shape::Float, Value::Number(n)) => {
            let v = n.as_f64().ok_or_else(|| wrong(path))?;
            write_tag(out, number, I64);
            out.extend_from_slice(&v.to_le_bytes());
        }
        (Shape::String, Value::String(s)) => {
            write_tag(out, number, LEN);
            write_varint(out, s.len() as u64);
            out.extend_from_slice(s.as_bytes());
        }
        (Shape::Struct(fields), v) => {
            let mut inner = Vec::new();
            write_message(&mut inner, fields, v, path)?;
            write_tag(out, number, LEN);
            write_varint(out, inner.len() as u64);
            out.extend_from_slice(&inner);
        }
        _ => return Err(wrong(path)),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn place() -> Shape {
        Shape::Struct(vec![
            FieldShape::new("symbol", Shape::String),
            FieldShape::new("qty", Shape::INT),
            FieldShape::new("limit", Shape::INT),
        ])
    }

    fn ship() -> Shape {
        Shape::Struct(vec![
            FieldShape::new("id", Shape::INT),
            FieldShape::new(
                "to",
                Shape::Struct(vec![
                    FieldShape::new("city", Shape::String),
                    FieldShape::new("zip", Shape::INT),
                ]),
            ),
            FieldShape::new("open", Shape::Bool),
            FieldShape::new("rate", Shape::Float),
        ])
    }

    #[test]
    fn a_message_is_its_fields_in_declaration_order_every_scalar_written() {
        let v = json!({"symbol": "ACME", "qty": 0, "limit": -1});
        let bytes = encode(&place(), &v).unwrap();
        // symbol = 1 (LEN), qty = 2 (varint 0, written though zero),
        // limit = 3 (varint -1: ten bytes).
        let mut want = vec![0x0a, 4, b'A', b'C', b'M', b'E', 0x10, 0, 0x18];
        want.extend_from_slice(&[0xff; 9]);
        want.push(0x01);
        assert_eq!(bytes, want);
        assert_eq!(decode(&place(), &bytes).unwrap(), v);
    }

    #[test]
    fn len_fields_are_the_length_delimited_fields_of_one_number_in_order() {
        let mut m = Vec::new();
        write_bytes_field(&mut m, 1, b"a");
        write_varint(&mut m, 2 << 3); // field 2, a varint: not length-delimited
        write_varint(&mut m, 9);
        write_bytes_field(&mut m, 3, b"other");
        write_bytes_field(&mut m, 1, b"b");
        assert_eq!(len_fields(&m, 1).unwrap(), [&b"a"[..], b"b"]);
        assert!(len_fields(&m, 2).unwrap().is_empty());
        assert!(len_fields(&[0x0a, 5], 1).is_err(), "a length past the end");
    }

    #[test]
    fn nested_messages_floats_and_bools_round_trip() {
        let v = json!({"id": 7, "to": {"city": "Oslo", "zip": 150}, "open": true, "rate": 0.25});
        let bytes = encode(&ship(), &v).unwrap();
        assert_eq!(decode(&ship(), &bytes).unwrap(), v);
    }

    #[test]
    fn a_scalar_travels_in_field_one() {
        let bytes = encode(&Shape::INT, &json!(300)).unwrap();
        assert_eq!(bytes, [0x08, 0xac, 0x02]);
        assert_eq!(decode(&Shape::INT, &bytes).unwrap(), json!(300));
        assert_eq!(
            decode(&Shape::INT, &[]).unwrap_err(),
            "missing_field: value"
        );
    }

    #[test]
    fn strict_decoding_speaks_the_json_codecs_words() {
        // qty as a LEN field: the wrong wire type, named by the field.
        let bytes = [0x0a, 1, b'A', 0x12, 1, b'x', 0x18, 1];
        assert_eq!(decode(&place(), &bytes).unwrap_err(), "wrong_type: qty");
        // limit absent, no default.
        let bytes = [0x0a, 1, b'A', 0x10, 1];
        assert_eq!(
            decode(&place(), &bytes).unwrap_err(),
            "missing_field: limit"
        );
        // A nested field by its path.
        let inner = [0x0a, 1, b'X'];
        let mut bytes = vec![0x08, 1, 0x12, inner.len() as u8];
        bytes.extend_from_slice(&inner);
        bytes.extend_from_slice(&[0x18, 1, 0x21, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(
            decode(&ship(), &bytes).unwrap_err(),
            "missing_field: to.zip"
        );
        // Invalid UTF-8 in a string.
        let bytes = [0x0a, 1, 0xff, 0x10, 1, 0x18, 1];
        assert_eq!(decode(&place(), &bytes).unwrap_err(), "wrong_type: symbol");
        // Out of a range.
        let range = Shape::Int {
            min: Some(1),
            max: Some(9),
        };
        assert_eq!(
            decode(&range, &[0x08, 10]).unwrap_err(),
            "wrong_type: value"
        );
    }

    #[test]
    fn a_message_that_is_not_protobuf_is_wrong_type_payload() {
        for bytes in [
            &[0x0a, 5, b'A'][..], // cut field
            &[
                0x10, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01,
            ][..], // 11-byte varint
            &[0x10][..],          // tag with no value
            &[0x00, 0x01][..],    // field number 0
            &[0x0e, 0x01][..],    // wire type 6
            &[0x24][..],          // end of a group never started
            &[0x2b, 0x08, 0x01][..], // a group never ended
        ] {
            assert_eq!(
                decode(&place(), bytes).unwrap_err(),
                NOT_PROTOBUF,
                "{bytes:02x?}"
            );
        }
    }

    #[test]
    fn unknown_fields_are_skipped_by_wire_type_and_the_last_repeat_wins() {
        let mut bytes = vec![0x0a, 1, b'A', 0x10, 1, 0x18, 2];
        // Field 9 of each wire type, and a group holding a field.
        bytes.extend_from_slice(&[0x48, 0x96, 0x01]);
        bytes.extend_from_slice(&[0x49, 1, 2, 3, 4, 5, 6, 7, 8]);
        bytes.extend_from_slice(&[0x4a, 2, b'h', b'i']);
        bytes.extend_from_slice(&[0x4d, 1, 2, 3, 4]);
        bytes.extend_from_slice(&[0x4b, 0x08, 0x01, 0x4c]);
        // qty again: the last wins.
        bytes.extend_from_slice(&[0x10, 5]);
        assert_eq!(
            decode(&place(), &bytes).unwrap(),
            json!({"symbol": "A", "qty": 5, "limit": 2})
        );
    }

    #[test]
    fn a_default_fills_an_absent_field_and_keys_are_json_names() {
        let shape = Shape::Struct(vec![
            FieldShape {
                key: "sym".into(),
                ..FieldShape::new("symbol", Shape::String)
            },
            FieldShape {
                default: Some(json!(10)),
                ..FieldShape::new("qty", Shape::INT)
            },
        ]);
        assert_eq!(
            decode(&shape, &[0x0a, 1, b'Z']).unwrap(),
            json!({"sym": "Z", "qty": 10})
        );
        // An empty message is a valid one: its absent fields are reported.
        assert_eq!(decode(&shape, &[]).unwrap_err(), "missing_field: symbol");
        assert_eq!(decode(&Shape::Struct(vec![]), &[]).unwrap(), json!({}));
    }

    #[test]
    fn a_value_that_does_not_fit_its_shape_is_not_encoded() {
        assert_eq!(
            encode(&place(), &json!({"symbol": "A", "qty": 1})).unwrap_err(),
            "missing_field: limit"
        );
        assert_eq!(
            encode(&place(), &json!({"symbol": 1, "qty": 1, "limit": 1})).unwrap_err(),
            "wrong_type: symbol"
        );
    }
}

/// A field's value as the wire carries it, for a reader that walks a
/// message by field number (server reflection's requests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireValue<'a> {
    /// A varint.
    Varint(u64),
    /// A length-delimited value.
    Len(&'a [u8]),
    /// A fixed-width value or a group, passed over.
    Other,
}

/// The fields of `message` in the order sent, each by number; a message
/// that is not protobuf is `wrong_type: payload`.
pub fn fields(message: &[u8]) -> Result<Vec<(u64, WireValue<'_>)>, String> {
    let mut r = Reader {
        bytes: message,
        at: 0,
    };
    let mut out = Vec::new();
    while !r.done() {
        let (number, wire) = r.tag()?;
        let value = match wire {
            VARINT => WireValue::Varint(r.varint()?),
            LEN => WireValue::Len(r.len_delimited()?),
            _ => {
                r.skip(number, wire, 0)?;
                WireValue::Other
            }
        };
        out.push((number, value));
    }
    Ok(out)
}

/// Every length-delimited field `number` of `message`, in the order sent:
/// a repeated message or string field read whole, as the gRPC tests read
/// reflection's descriptors and answers; an error as [`fields`]'.
pub fn len_fields(message: &[u8], number: u64) -> Result<Vec<&[u8]>, String> {
    Ok(fields(message)?
        .into_iter()
        .filter_map(|(n, v)| match v {
            WireValue::Len(b) if n == number => Some(b),
            _ => None,
        })
        .collect())
}
