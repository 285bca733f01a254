//! Lines in exactly the form this crate's writers give them, read byte by
//! byte.
//!
//! Nearly every line a host or a toolkit reads was written by the other
//! side's [`protocol`](super::protocol) writer: the envelope's members in
//! one order, no whitespace, ids and texts without escapes. Such a line is
//! matched here against that form directly — fixed bytes compared, strings
//! scanned eight bytes at a time, a scalar argument or outcome read in
//! place — with no tokenizer events, no copies and no key set.
//!
//! Anything else, or anything this reading is not sure of (an escape, a
//! number with a fraction, a value of a compound type that does not
//! decode), is `None`, and the caller reads the line the general way, which
//! alone judges it and says what is wrong. So this path accepts only lines
//! the general path accepts and yields what that path yields; the tests
//! hold the two side by side (`exact_reading_agrees_with_the_general_one`),
//! and so does the fuzz target of each machine.

use super::decoding::DecodeLimits;
use crate::flow::number::Int;
use crate::flow::types::Type;
use crate::flow::value::Value;
use crate::json::scan_plain;

/// How a reply written by [`write_reply`](super::protocol::write_reply)
/// begins, up to its run id's text.
const REPLY_HEAD: &[u8] = b"{\"jsonrpc\":\"2.0\",\"method\":\"reply\",\"params\":{\"runId\":\"";
/// How a call written by [`write_call`](super::protocol::write_call)
/// begins, up to its run id's text.
const CALL_HEAD: &[u8] = b"{\"jsonrpc\":\"2.0\",\"method\":\"call\",\"params\":{\"runId\":\"";

/// A position in a line being matched.
struct Cursor<'a> {
    line: &'a [u8],
    /// The line as text: validated once, so each string in it is only
    /// sliced (a string's bounds are at its quotes, ASCII bytes).
    text: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `line`, which must be UTF-8 throughout (the
    /// general path refuses it otherwise).
    fn new(line: &'a [u8]) -> Option<Cursor<'a>> {
        std::str::from_utf8(line).ok().map(Cursor::of)
    }

    /// A cursor at the start of `text`.
    fn of(text: &'a str) -> Cursor<'a> {
        Cursor {
            line: text.as_bytes(),
            text,
            pos: 0,
        }
    }

    /// Steps over `lit` if the line holds it here.
    #[inline]
    fn lit(&mut self, lit: &[u8]) -> Option<()> {
        let rest = self.line.get(self.pos..)?;
        if rest.starts_with(lit) {
            self.pos += lit.len();
            Some(())
        } else {
            None
        }
    }

    /// The text of a string whose opening quote is behind the cursor, when
    /// it holds no escape and no control character; the cursor ends after
    /// its closing quote.
    #[inline]
    fn plain_string(&mut self) -> Option<&'a str> {
        let start = self.pos;
        let end = scan_plain(self.line, start);
        if self.line.get(end) != Some(&b'"') {
            return None;
        }
        let text = self.text.get(start..end)?;
        self.pos = end + 1;
        Some(text)
    }

    /// Everything from the cursor to `end`, when that is not empty.
    fn until(&self, end: usize) -> Option<&'a str> {
        self.text.get(self.pos..end).filter(|s| !s.is_empty())
    }
}

/// A reply's outcome as its line holds it, its value not yet decoded.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ExactOutcome<'a> {
    /// The success value's text.
    Ok(&'a str),
    /// The error value's text.
    Failed(&'a str),
    /// NotRun's reason.
    NotRun(&'a str),
    /// Unknown's reason.
    Unknown(&'a str),
}

/// A reply line in exactly the writer's form: its run id, its call id and
/// its outcome. An `Ok` or `Failed` value is the text between the tag and
/// the line's closing `}}}`; whether it is one JSON value is for its
/// decoding to find (`None` there sends the line down the general path).
pub(crate) fn reply(line: &[u8]) -> Option<(&str, &str, ExactOutcome<'_>)> {
    let mut c = Cursor::new(line)?;
    c.lit(REPLY_HEAD)?;
    let run = c.plain_string()?;
    c.lit(b",\"callId\":\"")?;
    let call = c.plain_string()?;
    c.lit(b",\"outcome\":{\"")?;
    let end = line.len().checked_sub(3)?;
    if &line[end..] != b"}}}" {
        return None;
    }
    let outcome = if c.lit(b"Ok\":").is_some() {
        ExactOutcome::Ok(c.until(end)?)
    } else if c.lit(b"Failed\":").is_some() {
        ExactOutcome::Failed(c.until(end)?)
    } else if c.lit(b"NotRun\":\"").is_some() {
        ExactOutcome::NotRun(reason_to(&mut c, end)?)
    } else if c.lit(b"Unknown\":\"").is_some() {
        ExactOutcome::Unknown(reason_to(&mut c, end)?)
    } else {
        return None;
    };
    Some((run, call, outcome))
}

/// A reason's text, which must end exactly at `end`.
fn reason_to<'a>(c: &mut Cursor<'a>, end: usize) -> Option<&'a str> {
    let text = c.plain_string()?;
    (c.pos == end).then_some(text)
}

/// A call line in exactly the writer's form, for a Tool that is not
/// generic (a generic one's call carries `expects` after its args, which
/// this form does not have).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ExactCall<'a> {
    pub run: &'a str,
    pub call: &'a str,
    pub tool: &'a str,
    /// The args object's text: what lies between `"args":` and the line's
    /// closing `}}`, which [`ArgsPlan::decode`] holds to one object.
    pub args: &'a str,
}

/// See [`ExactCall`].
pub(crate) fn call(line: &[u8]) -> Option<ExactCall<'_>> {
    let mut c = Cursor::new(line)?;
    c.lit(CALL_HEAD)?;
    let run = c.plain_string()?;
    c.lit(b",\"callId\":\"")?;
    let call = c.plain_string()?;
    c.lit(b",\"tool\":\"")?;
    let tool = c.plain_string()?;
    c.lit(b",\"args\":")?;
    let end = line.len().checked_sub(2)?;
    if &line[end..] != b"}}" {
        return None;
    }
    Some(ExactCall {
        run,
        call,
        tool,
        args: c.until(end)?,
    })
}

/// A type whose values this reading decodes in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scalar {
    Text,
    Int,
    Bool,
}

impl Scalar {
    /// The kind of `ty`, if it is one of them.
    pub(crate) fn of(ty: &Type) -> Option<Scalar> {
        match ty {
            Type::Text => Some(Scalar::Text),
            Type::Int => Some(Scalar::Int),
            Type::Bool => Some(Scalar::Bool),
            _ => None,
        }
    }

    /// The value `text` holds, whole, if it is written as this reading
    /// reads it: a string without escapes, an integer of at most 18 digits
    /// without fraction or exponent, `true` or `false`.
    pub(crate) fn decode(self, text: &str, limits: &DecodeLimits) -> Option<Value> {
        let mut c = Cursor::of(text);
        let value = self.read(&mut c, limits)?;
        (c.pos == text.len()).then_some(value)
    }

    /// Reads a value at the cursor, held to `limits` as the decoder holds
    /// it; `None` for anything the decoder would have to judge.
    fn read(self, c: &mut Cursor<'_>, limits: &DecodeLimits) -> Option<Value> {
        let start = c.pos;
        let value = match self {
            Scalar::Text => {
                c.lit(b"\"")?;
                let text = c.plain_string()?;
                if text.len() > limits.max_string_bytes {
                    return None;
                }
                Value::Text(text.to_owned())
            }
            Scalar::Bool => {
                if c.lit(b"true").is_some() {
                    Value::Bool(true)
                } else {
                    c.lit(b"false")?;
                    Value::Bool(false)
                }
            }
            Scalar::Int => Value::Int(Int::from(small_int(c, limits)?)),
        };
        (c.pos - start <= limits.max_bytes).then_some(value)
    }
}

/// An integer of at most 18 digits, written plainly (`-?(0|[1-9][0-9]*)`
/// and no fraction or exponent after it).
fn small_int(c: &mut Cursor<'_>, limits: &DecodeLimits) -> Option<i64> {
    let negative = c.lit(b"-").is_some();
    let start = c.pos;
    let digits = c.line[start..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    if digits == 0 || digits > 18 || digits > limits.max_int_digits {
        return None;
    }
    if digits > 1 && c.line[start] == b'0' {
        return None;
    }
    if matches!(
        c.line.get(start + digits),
        Some(b'.' | b'e' | b'E' | b'0'..=b'9')
    ) {
        return None;
    }
    let magnitude = c.line[start..start + digits]
        .iter()
        .fold(0i64, |n, &d| n * 10 + i64::from(d - b'0'));
    c.pos = start + digits;
    Some(if negative { -magnitude } else { magnitude })
}

/// How a Tool's args object is read in place: its parameters in the order
/// the host writes them (by name, in code-point order), each with the text
/// that opens it (`"name":`) and its scalar kind. A Tool with a parameter
/// of any other type has no plan: its args are decoded by the decoder.
#[derive(Clone, Debug)]
pub(crate) struct ArgsPlan {
    members: Vec<PlannedArg>,
}

#[derive(Clone, Debug)]
struct PlannedArg {
    /// `"name":`, as the writer writes it.
    opening: Vec<u8>,
    /// The parameter's index in the declaration.
    index: usize,
    kind: Scalar,
}

impl ArgsPlan {
    /// The plan for a declaration's parameters, if every one is a scalar
    /// this reading decodes and no name needs an escape.
    pub(crate) fn of(params: &[crate::flow::Param]) -> Option<ArgsPlan> {
        let mut order: Vec<usize> = (0..params.len()).collect();
        // The writer's order: by name, in code-point order.
        order.sort_by(|&a, &b| params[a].name.cmp(&params[b].name));
        let members = order
            .into_iter()
            .map(|index| (index, &params[index]))
            .map(|(index, p)| {
                let kind = Scalar::of(&p.ty)?;
                let mut opening = Vec::with_capacity(p.name.len() + 3);
                crate::json::write_string(&p.name, &mut opening);
                if opening.len() != p.name.len() + 2 {
                    return None;
                }
                opening.push(b':');
                Some(PlannedArg {
                    opening,
                    index,
                    kind,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(ArgsPlan { members })
    }

    /// The args `text` holds, in declaration order, if it is exactly one
    /// object of every parameter once, in the writer's order, each value
    /// decoded in place.
    pub(crate) fn decode(&self, text: &str, limits: &DecodeLimits) -> Option<Vec<Value>> {
        let mut c = Cursor::of(text);
        c.lit(b"{")?;
        let mut values = vec![Value::Bool(false); self.members.len()];
        for (n, member) in self.members.iter().enumerate() {
            if n > 0 {
                c.lit(b",")?;
            }
            c.lit(&member.opening)?;
            values[member.index] = member.kind.read(&mut c, limits)?;
        }
        c.lit(b"}")?;
        (c.pos == text.len()).then_some(values)
    }
}

#[cfg(test)]
mod tests;
