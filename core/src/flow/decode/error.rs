//! Why a text did not decode, and where: a JSON path and a reason.

use std::fmt;

use crate::flow::types::Type;
use crate::json::Event;

/// One step of a [`JsonPath`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment {
    /// An object member, by key.
    Key(String),
    /// An array element, by index.
    Index(usize),
}

/// Where in a JSON text a value sits: `$` is the whole text, `.key` or
/// `["key"]` a member, `[i]` an element (`$.hits[3].score`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JsonPath(pub Vec<Segment>);

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("$")?;
        for segment in &self.0 {
            match segment {
                Segment::Index(i) => write!(f, "[{i}]")?,
                Segment::Key(k) if is_identifier(k) => write!(f, ".{k}")?,
                Segment::Key(k) => {
                    let mut quoted = Vec::new();
                    crate::json::write_string(k, &mut quoted);
                    write!(f, "[{}]", String::from_utf8_lossy(&quoted))?;
                }
            }
        }
        Ok(())
    }
}

/// Whether a key can be written `.key`: an ASCII identifier.
fn is_identifier(k: &str) -> bool {
    let mut bytes = k.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z' | b'A'..=b'Z' | b'_'))
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// What kind of failure to decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeErrorKind {
    /// Not JSON, or JSON the tokenizer's strict rules refuse.
    Syntax,
    /// A text or value past one of the [`Limits`](super::Limits).
    Limit,
    /// A JSON value of the wrong shape for the declared type.
    Mismatch,
    /// A required record field is absent.
    MissingField,
    /// An object key, dict key or set element given twice.
    Duplicate,
    /// A string that is no spelling of the type (Bytes, Instant, Duration),
    /// or a constructor the enum does not have.
    Invalid,
    /// The type cannot direct decoding: an undeclared named type, a wrong
    /// number of type arguments, an unbound type parameter.
    Type,
}

/// A failure to decode: the JSON path of the offending value and why.
///
/// Displayed as `$.hits[3].score: expected Int, found "x"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// Where the offending value is.
    pub path: JsonPath,
    /// What kind of failure.
    pub kind: DecodeErrorKind,
    /// Why, in words.
    pub message: String,
}

impl DecodeError {
    /// A failure at the root, to be placed by the callers it passes through.
    pub(crate) fn new(kind: DecodeErrorKind, message: impl Into<String>) -> DecodeError {
        DecodeError {
            path: JsonPath::default(),
            kind,
            message: message.into(),
        }
    }

    /// The same failure inside member `key` of the value it was in.
    pub(crate) fn in_key(mut self, key: &str) -> DecodeError {
        self.path.0.insert(0, Segment::Key(key.to_owned()));
        self
    }

    /// The same failure inside element `index` of the value it was in.
    pub(crate) fn in_index(mut self, index: usize) -> DecodeError {
        self.path.0.insert(0, Segment::Index(index));
        self
    }

    /// A shape mismatch: `expected <what>, found <the event>`.
    pub(crate) fn mismatch(expected: impl fmt::Display, found: &Event<'_>) -> DecodeError {
        DecodeError::new(
            DecodeErrorKind::Mismatch,
            format!("expected {expected}, found {}", Found(found)),
        )
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

impl std::error::Error for DecodeError {}

/// How an error shows the value it found: a string quoted (shortened past
/// 40 characters), a number as written, `an object`, `an array`.
pub(crate) struct Found<'e, 'a>(pub &'e Event<'a>);

impl fmt::Display for Found<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Event::BeginObject => f.write_str("an object"),
            Event::BeginArray => f.write_str("an array"),
            Event::EndObject | Event::EndArray => f.write_str("the end of the container"),
            Event::Key(s) => write!(f, "key {}", Quoted(s)),
            Event::String(s) => write!(f, "{}", Quoted(s)),
            Event::Number(n) => f.write_str(&shorten(n.raw())),
            Event::Bool(b) => write!(f, "{b}"),
            Event::Null => f.write_str("null"),
        }
    }
}

/// A string as JSON, shortened to 40 characters with `…`.
pub(crate) struct Quoted<'s>(pub &'s str);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let short = shorten(self.0);
        let mut out = Vec::new();
        crate::json::write_string(&short, &mut out);
        f.write_str(&String::from_utf8_lossy(&out))
    }
}

fn shorten(s: &str) -> String {
    match s.char_indices().nth(40) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}

/// A type as Flow writes it: `List<Int>`, `(Int, Text)`, `json.Value`,
/// a named type by its name.
pub(crate) struct TypeName<'t>(pub &'t Type);

impl fmt::Display for TypeName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let one =
            |f: &mut fmt::Formatter<'_>, name: &str, t: &Type| write!(f, "{name}<{}>", TypeName(t));
        match self.0 {
            Type::Int => f.write_str("Int"),
            Type::Decimal => f.write_str("Decimal"),
            Type::Text => f.write_str("Text"),
            Type::Bool => f.write_str("Bool"),
            Type::Bytes => f.write_str("Bytes"),
            Type::Instant => f.write_str("Instant"),
            Type::Duration => f.write_str("Duration"),
            Type::List(t) => one(f, "List", t),
            Type::Set(t) => one(f, "Set", t),
            Type::Option(t) => one(f, "Option", t),
            Type::Dict(k, v) => write!(f, "Dict<{}, {}>", TypeName(k), TypeName(v)),
            Type::Result(t, e) => write!(f, "Result<{}, {}>", TypeName(t), TypeName(e)),
            Type::Tuple(ts) => {
                f.write_str("(")?;
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}", TypeName(t))?;
                }
                f.write_str(")")
            }
            Type::Json => f.write_str("json.Value"),
            Type::HostToken => f.write_str("a host token"),
            Type::Never => f.write_str("Never"),
            Type::Named { identity, args } => {
                f.write_str(&identity.name)?;
                if !args.is_empty() {
                    f.write_str("<")?;
                    for (i, t) in args.iter().enumerate() {
                        if i > 0 {
                            f.write_str(", ")?;
                        }
                        write!(f, "{}", TypeName(t))?;
                    }
                    f.write_str(">")?;
                }
                Ok(())
            }
            Type::Param(p) => f.write_str(p),
        }
    }
}
