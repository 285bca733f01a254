//! JSON Schemas of Flow data types (§ Schemas), draft 2020-12.
//!
//! Every data type has one schema, generated from its declaration
//! ([`schema_of`]), and the schema rebuilds the type ([`type_from_schema`]):
//! a toolkit or a host reads declarations from a listing that carries only
//! schemas, so schema → type → schema is the identity on every shape we
//! write, and a schema we did not write is refused naming the JSON pointer
//! of its offending part.
//!
//! A schema is a root document: `$schema` names draft 2020-12, the named
//! types it reaches sit under `$defs` keyed by identity, and `$ref`s point at
//! them (`#/$defs/` and the key as a JSON pointer token inside a URI
//! fragment). Where JSON Schema has no keyword for what a Flow type is, the
//! schema carries one of ours, each starting with `$` as the specification's
//! own `{"$param": "T"}` does; validators ignore them, the reader needs them:
//!
//! | keyword | where | what it says |
//! |---|---|---|
//! | `$param` | any schema | a generic type parameter (the specification's) |
//! | `$generic` | a `$defs` entry | the type's parameter names, in order |
//! | `$args` | beside `$ref` | the type arguments of a generic named type |
//! | `$required` | a record | fields whose type is a bare parameter |
//! | `$dict` | an array | a dict whose keys are not `Text` |
//! | `$hostToken` | any schema | a host token |
//!
//! `docs/decisions.md` (§ Flow values: schemas and fingerprints) gives each
//! choice its reason and names the test that holds it.

mod generate;
mod read;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod plain_tests;

use std::fmt;

pub use generate::schema_of;
pub(crate) use generate::{unique, Form, Generator, Scope};
pub(crate) use read::Reader;
pub use read::{type_from_plain_schema, type_from_schema, ANONYMOUS};

/// The `$schema` of every root schema: JSON Schema draft 2020-12.
pub const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// A type model that has no schema: it refers to something it does not
/// declare, or declares something twice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenerateError {
    /// Where in the model: a type's identity, a field, a parameter.
    pub at: String,
    /// What is wrong there.
    pub reason: String,
}

impl fmt::Display for GenerateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.at, self.reason)
    }
}

impl std::error::Error for GenerateError {}

/// A schema (or a listed signature) that is not one we write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaError {
    /// The JSON pointer (RFC 6901) of the offending part, `""` for the
    /// whole document.
    pub pointer: String,
    /// What is wrong there.
    pub reason: String,
}

impl SchemaError {
    pub(crate) fn at(pointer: &str, reason: impl Into<String>) -> SchemaError {
        SchemaError {
            pointer: pointer.to_owned(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.pointer.is_empty() {
            write!(f, "at the document's root: {}", self.reason)
        } else {
            write!(f, "at {}: {}", self.pointer, self.reason)
        }
    }
}

impl std::error::Error for SchemaError {}

/// `token` as one JSON pointer reference token: `~` is written `~0` and
/// `/` is written `~1` (RFC 6901 § 3).
pub fn pointer_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// The JSON pointer `base` extended by one reference token.
pub(crate) fn child(base: &str, token: &str) -> String {
    format!("{base}/{}", pointer_token(token))
}

/// The `$ref` that names the `$defs` entry keyed `key`:
/// `#/$defs/github.com~1acme~1tools@1.4.0~1search.flow.Hit`.
///
/// The pointer token sits in a URI fragment, so a character a fragment may
/// not hold (a space, `%`, `#`, a non-ASCII letter in a path identity) is
/// percent-encoded as UTF-8 (RFC 6901 § 6, RFC 3986 § 3.5); every character
/// of an ordinary identity (letters, digits, `.`, `@`, `-`, `~`, `+`, `:`) is
/// written as itself.
pub fn def_ref(key: &str) -> String {
    let mut out = String::from("#/$defs/");
    for &b in pointer_token(key).as_bytes() {
        let plain = b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/?".contains(&b);
        if plain {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The `$defs` key a `$ref` names, if it is `#/$defs/` and one pointer
/// token: percent-decoded, then `~1` and `~0` unescaped.
pub(crate) fn def_key_of_ref(reference: &str) -> Option<String> {
    let token = crate::percent::decode(reference.strip_prefix("#/$defs/")?)?;
    if token.contains('/') {
        return None;
    }
    // `~` must be followed by `0` or `1`.
    let mut chars = token.chars().peekable();
    let mut out = String::with_capacity(token.len());
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.next() {
                Some('0') => out.push('~'),
                Some('1') => out.push('/'),
                _ => return None,
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

#[cfg(test)]
mod ref_tests {
    use super::{def_key_of_ref, def_ref};

    #[test]
    fn a_ref_escape_is_two_hex_digits() {
        // Found with fuzz/fuzz_targets/http1_conn.rs's RFC 3986 check on the
        // same pattern in the HTTP framing: `%+1` read as U+0001, a second
        // spelling of the `$ref` we write as `%01`.
        assert_eq!(def_ref("a\u{1}b"), "#/$defs/a%01b");
        assert_eq!(def_key_of_ref("#/$defs/a%01b").as_deref(), Some("a\u{1}b"));
        for bad in [
            "#/$defs/a%+1b",
            "#/$defs/a%-1b",
            "#/$defs/a%1",
            "#/$defs/a%zzb",
        ] {
            assert_eq!(def_key_of_ref(bad), None, "{bad}");
        }
    }
}
