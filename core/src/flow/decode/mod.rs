//! Type-directed strict decoding (§ Decoding).
//!
//! The declared type directs every step, and the text is read once, as a
//! stream of [`json`](crate::json) events, straight into a [`Value`]: no
//! intermediate tree. Decoding never coerces between types, guesses a
//! constructor, fills a default or repairs a value; every value is held to
//! the [`Limits`] by its value, not its spelling, before it is built. A
//! failure names the JSON path of the offending value and why.
//!
//! The choices the specification leaves open (extra record fields, whole
//! numbers spelled with a fraction or exponent at Int, which instant
//! spellings, strict base64, sets with duplicates) are recorded in
//! `docs/decisions.md`, "Flow values: canonical text and decoding".
//!
//! ```
//! use limen_core::flow::canonical::to_canonical_string;
//! use limen_core::flow::decode::{decode, Limits};
//! use limen_core::flow::{Field, Identity, Type, TypeDecl, TypeEnv};
//!
//! let hit = Identity::in_repository("github.com/acme/tools", "1.0.0", "search.flow", "Hit");
//! let mut env = TypeEnv::new();
//! env.declare(TypeDecl::record(hit.clone(), vec![
//!     Field::new("score", Type::Int),
//!     Field::new("note", Type::option(Type::Text)),
//! ]));
//! let ty = Type::list(Type::named(hit));
//!
//! let v = decode(br#"[{"score": 1e2, "extra": true}]"#, &ty, &env, &Limits::default())?;
//! assert_eq!(to_canonical_string(&v), r#"[{"score":100}]"#);
//!
//! let e = decode(br#"[{"score": 1}, {"score": "x"}]"#, &ty, &env, &Limits::default())
//!     .unwrap_err();
//! assert_eq!(e.to_string(), r#"$[1].score: expected Int, found "x""#);
//! # Ok::<(), limen_core::flow::decode::DecodeError>(())
//! ```

mod collections;
mod error;
mod json;
mod limits;
mod number;
mod records;
mod scalar;
mod time;

#[cfg(test)]
mod tests;

pub use error::{DecodeError, DecodeErrorKind, JsonPath, Segment};
pub use limits::Limits;

/// Failures built out of line, off the recursive path.
mod fail {
    use super::error::{DecodeError, DecodeErrorKind, Quoted};
    use crate::flow::identity::Identity;

    #[cold]
    #[inline(never)]
    pub(super) fn duplicate_key(key: &str) -> DecodeError {
        DecodeError::new(
            DecodeErrorKind::Duplicate,
            format!("the key {} is given twice", Quoted(key)),
        )
    }

    #[cold]
    #[inline(never)]
    pub(super) fn missing_field(name: &str) -> DecodeError {
        DecodeError::new(
            DecodeErrorKind::MissingField,
            format!("missing required field {}", Quoted(name)),
        )
    }

    #[cold]
    #[inline(never)]
    pub(super) fn undeclared(identity: &Identity) -> DecodeError {
        DecodeError::new(
            DecodeErrorKind::Type,
            format!("the type {identity} is not declared"),
        )
    }

    #[cold]
    #[inline(never)]
    pub(super) fn arity(identity: &Identity, want: usize, given: usize) -> DecodeError {
        DecodeError::new(
            DecodeErrorKind::Type,
            format!("the type {identity} takes {want} type arguments, given {given}"),
        )
    }
}

use self::error::TypeName;
use super::canonical;
use super::number::{Decimal, Int};
use super::types::{Type, TypeEnv};
use super::value::{JsonValue, Value};
use crate::json::{ErrorKind, Event, Number, Tokenizer};

impl Type {
    /// The type as Flow writes it in a message: `List<Int>`, `(Int, Text)`,
    /// `json.Value`, a named type by its name.
    pub fn written(&self) -> String {
        TypeName(self).to_string()
    }
}

/// Decodes `bytes` at the declared type `ty`, whose named types are in
/// `env`, under `limits`.
pub fn decode(
    bytes: &[u8],
    ty: &Type,
    env: &TypeEnv,
    limits: &Limits,
) -> Result<Value, DecodeError> {
    decode_with_params(bytes, ty, env, &[], limits)
}

/// Decodes `bytes` at `ty`, its generic type parameters bound by `params`
/// (each `(name, type)`; the bound types are closed: a parameter inside
/// one is not looked up again).
pub fn decode_with_params(
    bytes: &[u8],
    ty: &Type,
    env: &TypeEnv,
    params: &[(String, Type)],
    limits: &Limits,
) -> Result<Value, DecodeError> {
    let mut d = Decoder::new(bytes, env, limits)?;
    let first = d.next()?;
    let value = d.value(ty, &Scope::Root(params), first)?;
    d.finish()?;
    Ok(value)
}

/// Decodes the object `bytes` holds in one pass, member `name` at the type
/// `fields` pairs with it, each member's value held to `limits` as
/// [`decode_with_params`] holds a value of its own (a value nested `d`
/// deep inside the object is refused past the limit as it would be alone;
/// the canonical growth of all members together stays within the budget
/// of the object's text, which no member alone could exceed). Returns the
/// values in `fields`' order, or `None` when anything is amiss — a
/// member missing, unknown or given twice, a value that does not decode,
/// text that is not JSON — so that the caller reads the object again the
/// slow way and says exactly what. `outer_depth` is the deepest the
/// caller's own tokenizer lets the object nest its members, so this reads
/// no more than that one did.
pub(crate) fn decode_members_fast(
    bytes: &[u8],
    fields: &[(&str, &Type)],
    env: &TypeEnv,
    params: &[(String, Type)],
    limits: &Limits,
    outer_depth: usize,
) -> Option<Vec<Value>> {
    let depth = limits.depth().saturating_add(1).min(outer_depth);
    let mut d = Decoder::with_depth(bytes, env, limits, depth).ok()?;
    if !matches!(d.next().ok()?, Event::BeginObject) {
        return None;
    }
    let mut values: Vec<Option<Value>> = Vec::with_capacity(fields.len());
    values.resize_with(fields.len(), || None);
    let scope = Scope::Root(params);
    loop {
        let key = match d.next().ok()? {
            Event::EndObject => break,
            Event::Key(key) => key,
            _ => return None,
        };
        let i = fields.iter().position(|(name, _)| *name == key)?;
        if values[i].is_some() {
            return None;
        }
        let first = d.next().ok()?;
        let start = d.tok.event_offset();
        let value = d.value(fields[i].1, &scope, first).ok()?;
        if d.tok.offset() - start > limits.max_bytes {
            return None;
        }
        values[i] = Some(value);
    }
    d.finish().ok()?;
    values.into_iter().collect()
}

/// Parses `bytes` as a `json.Value` under `limits`: any JSON, numbers
/// exact, an object repeating a key refused.
pub fn parse_json_value(bytes: &[u8], limits: &Limits) -> Result<JsonValue, DecodeError> {
    let env = TypeEnv::new();
    let mut d = Decoder::new(bytes, &env, limits)?;
    let first = d.next()?;
    let value = d.json(first)?;
    d.finish()?;
    Ok(value)
}

/// The canonical text of the `json.Value` that `bytes` hold: parsed as
/// [`parse_json_value`] does, then written canonically into a buffer sized
/// up front (the canonical text is never longer than the input plus the
/// growth of its numbers, which decoding has already counted).
pub fn canonicalize_json(bytes: &[u8], limits: &Limits) -> Result<Vec<u8>, DecodeError> {
    let env = TypeEnv::new();
    let mut d = Decoder::new(bytes, &env, limits)?;
    let first = d.next()?;
    let value = d.json(first)?;
    d.finish()?;
    let mut out = Vec::with_capacity(bytes.len() + d.grown as usize);
    canonical::write_json(&value, &mut out);
    Ok(out)
}

/// Where type parameters are bound: the caller's binding at the root, then
/// one frame per generic named type entered.
enum Scope<'s> {
    Root(&'s [(String, Type)]),
    Named {
        params: &'s [String],
        args: &'s [Type],
        outer: &'s Scope<'s>,
    },
}

/// The scope a root binding's types are read in: nothing is bound there.
static CLOSED: Scope<'static> = Scope::Root(&[]);

/// `ty` with type parameters looked up until it is not one.
fn resolve<'s>(
    mut ty: &'s Type,
    mut scope: &'s Scope<'s>,
) -> Result<(&'s Type, &'s Scope<'s>), DecodeError> {
    while let Type::Param(name) = ty {
        let found = match scope {
            Scope::Root(binding) => binding
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, t)| (t, &CLOSED)),
            Scope::Named {
                params,
                args,
                outer,
            } => params
                .iter()
                .position(|p| p == name)
                .and_then(|i| args.get(i))
                .map(|t| (t, *outer)),
        };
        (ty, scope) = found.ok_or_else(|| {
            DecodeError::new(
                DecodeErrorKind::Type,
                format!("the type parameter {name} is not bound"),
            )
        })?;
    }
    Ok((ty, scope))
}

/// One decoding: the tokenizer, the types and the limits.
pub(crate) struct Decoder<'a, 'e> {
    tok: Tokenizer<'a>,
    env: &'e TypeEnv,
    limits: &'e Limits,
    /// How far the canonical text may still outgrow the input.
    budget: u64,
    /// How far it has outgrown it so far.
    grown: u64,
}

/// A tokenizer refusal as a decoding failure.
fn syntax(e: crate::json::Error) -> DecodeError {
    match e.kind {
        ErrorKind::TooDeep { limit } => DecodeError::new(
            DecodeErrorKind::Limit,
            format!("arrays and objects nest deeper than the limit of {limit}"),
        ),
        kind => DecodeError::new(
            DecodeErrorKind::Syntax,
            format!("invalid JSON at {}:{}: {kind}", e.line, e.column),
        ),
    }
}

/// The expected shape, for a mismatch message.
struct Shape<'t>(&'t Type, &'t str);

impl std::fmt::Display for Shape<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", TypeName(self.0), self.1)
    }
}

impl<'a, 'e> Decoder<'a, 'e> {
    fn new(bytes: &'a [u8], env: &'e TypeEnv, limits: &'e Limits) -> Result<Self, DecodeError> {
        Decoder::with_depth(bytes, env, limits, limits.depth())
    }

    /// [`Decoder::new`] with arrays and objects nesting at most
    /// `max_depth` deep.
    fn with_depth(
        bytes: &'a [u8],
        env: &'e TypeEnv,
        limits: &'e Limits,
        max_depth: usize,
    ) -> Result<Self, DecodeError> {
        if bytes.len() > limits.max_bytes {
            return Err(DecodeError::new(
                DecodeErrorKind::Limit,
                format!(
                    "the text is {} bytes, past the limit of {}",
                    bytes.len(),
                    limits.max_bytes
                ),
            ));
        }
        Ok(Decoder {
            tok: Tokenizer::with_max_depth(bytes, max_depth),
            env,
            limits,
            budget: (limits.max_bytes - bytes.len()) as u64,
            grown: 0,
        })
    }

    /// The next event of a value not yet complete. Kept out of line so the
    /// tokenizer's frame is not part of every level of typed recursion.
    #[inline(never)]
    fn next(&mut self) -> Result<Event<'a>, DecodeError> {
        self.next_inline()
    }

    /// [`Decoder::next`], inlined into the non-recursive json.Value loop.
    #[inline(always)]
    fn next_inline(&mut self) -> Result<Event<'a>, DecodeError> {
        match self.tok.next_event() {
            Ok(Some(e)) => Ok(e),
            Ok(None) => Err(DecodeError::new(
                DecodeErrorKind::Syntax,
                "the text ends before the value does",
            )),
            Err(e) => Err(syntax(e)),
        }
    }

    /// Checks that only whitespace follows the value.
    fn finish(&mut self) -> Result<(), DecodeError> {
        self.tok.finish().map_err(syntax)
    }

    fn too_long(&self) -> DecodeError {
        DecodeError::new(
            DecodeErrorKind::Limit,
            format!(
                "past the limit of {} elements in one array or object",
                self.limits.max_collection_len
            ),
        )
    }

    #[inline]
    fn check_string(&self, s: &str) -> Result<(), DecodeError> {
        if s.len() > self.limits.max_string_bytes {
            return Err(DecodeError::new(
                DecodeErrorKind::Limit,
                format!(
                    "the string is {} bytes, past the limit of {}",
                    s.len(),
                    self.limits.max_string_bytes
                ),
            ));
        }
        Ok(())
    }

    /// Counts how much longer a number's canonical text is than its token.
    #[inline]
    fn grow(&mut self, s: &crate::json::Scientific<'_>, raw: &str) -> Result<(), DecodeError> {
        let written = number::canonical_len(s);
        let token = raw.len() as u64;
        if written > token {
            let more = written - token;
            if more > self.budget {
                return Err(DecodeError::new(
                    DecodeErrorKind::Limit,
                    format!(
                        "written out, the value's canonical text would pass the limit of {} bytes",
                        self.limits.max_bytes
                    ),
                ));
            }
            self.budget -= more;
            self.grown += more;
        }
        Ok(())
    }

    #[inline]
    fn decimal(&mut self, n: &Number<'_>) -> Result<Decimal, DecodeError> {
        let s = n.scientific();
        let d = number::decimal(&s, self.limits)?;
        self.grow(&s, n.raw())?;
        Ok(d)
    }

    fn int(&mut self, n: &Number<'_>) -> Result<Int, DecodeError> {
        let s = n.scientific();
        let i = number::int(&s, n.raw(), self.limits)?;
        self.grow(&s, n.raw())?;
        Ok(i)
    }

    /// The value of type `ty` whose first event is `ev`.
    ///
    /// This, [`Decoder::named`], [`Decoder::fields`] and
    /// [`Decoder::member_value`] recurse once per level of the text, so they
    /// stay lean: every case that does not recurse, and every failure, is
    /// built out of line, keeping each level's stack frame small.
    fn value(&mut self, ty: &Type, scope: &Scope<'_>, ev: Event<'a>) -> Result<Value, DecodeError> {
        let (ty, scope) = resolve(ty, scope)?;
        match ty {
            Type::List(item) => self.list(ty, item, scope, ev).map(Value::List),
            Type::Set(item) => self.set(ty, item, scope, ev),
            Type::Tuple(items) => self.tuple(ty, items, scope, ev),
            Type::Dict(k, v) => self.dict(ty, k, v, scope, ev),
            Type::Option(inner) => self.option(ty, inner, scope, ev),
            Type::Result(ok, err) => self.result(ty, ok, err, scope, ev),
            Type::Json => self.json(ev).map(Value::Json),
            Type::HostToken => self.json(ev).map(Value::HostToken),
            Type::Named { identity, args } => self.named(ty, identity, args, scope, ev),
            _ => self.scalar(ty, ev),
        }
    }
}
