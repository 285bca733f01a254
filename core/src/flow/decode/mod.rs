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

mod error;
mod json;
mod limits;
mod number;
mod time;

#[cfg(test)]
mod tests;

use std::borrow::Cow;

use base64::Engine as _;

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

use self::error::{Found, Quoted, TypeName};
use super::canonical;
use super::number::{Decimal, Int};
use super::types::{Constructor, Field, Payload, Type, TypeBody, TypeEnv};
use super::value::{EnumPayload, JsonValue, Value};
use crate::json::{DuplicateKeys, ErrorKind, Event, Number, Tokenizer};

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
            tok: Tokenizer::with_max_depth(bytes, limits.depth()),
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

    /// A string's text, held to the string limit.
    fn string(&self, ty: &Type, what: &str, ev: Event<'a>) -> Result<Cow<'a, str>, DecodeError> {
        match ev {
            Event::String(s) => {
                self.check_string(&s)?;
                Ok(s)
            }
            other => Err(DecodeError::mismatch(Shape(ty, what), &other)),
        }
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

    /// A value of a type that holds no other value.
    #[inline(never)]
    fn scalar(&mut self, ty: &Type, ev: Event<'a>) -> Result<Value, DecodeError> {
        match ty {
            Type::Int => match ev {
                Event::Number(n) => self.int(&n).map(Value::Int),
                other => Err(DecodeError::mismatch("Int", &other)),
            },
            Type::Decimal => match ev {
                Event::Number(n) => self.decimal(&n).map(Value::Decimal),
                other => Err(DecodeError::mismatch("Decimal", &other)),
            },
            Type::Bool => match ev {
                Event::Bool(b) => Ok(Value::Bool(b)),
                other => Err(DecodeError::mismatch("Bool", &other)),
            },
            Type::Text => match ev {
                Event::String(s) => {
                    self.check_string(&s)?;
                    Ok(Value::Text(s.into_owned()))
                }
                other => Err(DecodeError::mismatch("Text", &other)),
            },
            Type::Bytes => {
                let s = self.string(ty, "a base64 string", ev)?;
                base64::engine::general_purpose::STANDARD
                    .decode(s.as_bytes())
                    .map(Value::Bytes)
                    .map_err(|_| {
                        DecodeError::new(
                            DecodeErrorKind::Invalid,
                            format!(
                                "expected Bytes, found {}, which is not canonical base64 \
                                 (standard alphabet, padded)",
                                Quoted(&s)
                            ),
                        )
                    })
            }
            Type::Instant => {
                let s = self.string(ty, "an RFC 3339 date-time string", ev)?;
                time::instant(&s).map(Value::Instant).map_err(|why| {
                    DecodeError::new(
                        DecodeErrorKind::Invalid,
                        format!("expected Instant, found {}: {why}", Quoted(&s)),
                    )
                })
            }
            Type::Duration => {
                let s = self.string(ty, "a \"PT<seconds>S\" string", ev)?;
                time::duration(&s).map(Value::Duration).map_err(|why| {
                    DecodeError::new(
                        DecodeErrorKind::Invalid,
                        format!("expected Duration, found {}: {why}", Quoted(&s)),
                    )
                })
            }
            Type::Never => Err(DecodeError::new(
                DecodeErrorKind::Mismatch,
                format!("Never has no values, found {}", Found(&ev)),
            )),
            _ => Err(DecodeError::new(
                DecodeErrorKind::Type,
                "a type parameter was left unresolved",
            )),
        }
    }

    #[inline(never)]
    fn option(
        &mut self,
        ty: &Type,
        inner: &Type,
        scope: &Scope<'_>,
        ev: Event<'a>,
    ) -> Result<Value, DecodeError> {
        if let Event::String(s) = &ev {
            if s == "None" {
                return Ok(Value::Option(None));
            }
        }
        let what = "\"None\" or {\"Some\": …}";
        self.tagged(ty, what, &["Some"], ev)?;
        let v = self.member_value(inner, scope, "Some")?;
        self.close_tagged(ty, what)?;
        Ok(Value::Option(Some(Box::new(v))))
    }

    #[inline(never)]
    fn result(
        &mut self,
        ty: &Type,
        ok: &Type,
        err: &Type,
        scope: &Scope<'_>,
        ev: Event<'a>,
    ) -> Result<Value, DecodeError> {
        let what = "{\"Ok\": …} or {\"Err\": …}";
        let is_ok = self.tagged(ty, what, &["Ok", "Err"], ev)? == 0;
        let (tag, t) = if is_ok { ("Ok", ok) } else { ("Err", err) };
        let v = Box::new(self.member_value(t, scope, tag)?);
        self.close_tagged(ty, what)?;
        Ok(Value::Result(if is_ok { Ok(v) } else { Err(v) }))
    }

    /// A record or enum, its type arguments bound in a new scope.
    fn named(
        &mut self,
        ty: &Type,
        identity: &super::identity::Identity,
        args: &[Type],
        scope: &Scope<'_>,
        ev: Event<'a>,
    ) -> Result<Value, DecodeError> {
        let env = self.env;
        let Some(decl) = env.get(identity) else {
            return Err(fail::undeclared(identity));
        };
        if decl.params.len() != args.len() {
            return Err(fail::arity(identity, decl.params.len(), args.len()));
        }
        let inner = Scope::Named {
            params: &decl.params,
            args,
            outer: scope,
        };
        match &decl.body {
            TypeBody::Record(fields) => self
                .fields(fields, &inner, &Shape(ty, "an object"), ev)
                .map(Value::Record),
            TypeBody::Enum(ctors) => self.enumeration(ty, ctors, &inner, ev),
        }
    }

    /// The value of member `key` of an object whose key was just read.
    fn member_value(
        &mut self,
        ty: &Type,
        scope: &Scope<'_>,
        key: &str,
    ) -> Result<Value, DecodeError> {
        let first = self.next().map_err(|e| e.in_key(key))?;
        self.value(ty, scope, first).map_err(|e| e.in_key(key))
    }

    /// Reads `{` and the one key of a tagged object, which must be one of
    /// `tags`; returns which.
    fn tagged(
        &mut self,
        ty: &Type,
        what: &str,
        tags: &[&str],
        ev: Event<'a>,
    ) -> Result<usize, DecodeError> {
        if ev != Event::BeginObject {
            return Err(DecodeError::mismatch(Shape(ty, what), &ev));
        }
        match self.next()? {
            Event::Key(k) => tags.iter().position(|t| *t == k).ok_or_else(|| {
                DecodeError::new(
                    DecodeErrorKind::Mismatch,
                    format!(
                        "expected {}, found an object with key {}",
                        Shape(ty, what),
                        Quoted(&k)
                    ),
                )
            }),
            _ => Err(DecodeError::new(
                DecodeErrorKind::Mismatch,
                format!("expected {}, found an empty object", Shape(ty, what)),
            )),
        }
    }

    /// Reads the `}` of a tagged object: it has exactly one member.
    fn close_tagged(&mut self, ty: &Type, what: &str) -> Result<(), DecodeError> {
        match self.next()? {
            Event::EndObject => Ok(()),
            Event::Key(k) => Err(DecodeError::new(
                DecodeErrorKind::Mismatch,
                format!(
                    "expected {}, found a second member {}",
                    Shape(ty, what),
                    Quoted(&k)
                ),
            )),
            other => Err(DecodeError::mismatch(Shape(ty, what), &other)),
        }
    }

    /// The elements of an array of `item`s.
    fn list(
        &mut self,
        ty: &Type,
        item: &Type,
        scope: &Scope<'_>,
        ev: Event<'a>,
    ) -> Result<Vec<Value>, DecodeError> {
        if ev != Event::BeginArray {
            return Err(DecodeError::mismatch(Shape(ty, "an array"), &ev));
        }
        let mut items = Vec::new();
        loop {
            let i = items.len();
            let ev = self.next().map_err(|e| e.in_index(i))?;
            if ev == Event::EndArray {
                return Ok(items);
            }
            if i >= self.limits.max_collection_len {
                return Err(self.too_long().in_index(i));
            }
            items.push(self.value(item, scope, ev).map_err(|e| e.in_index(i))?);
        }
    }

    /// A set: an array in any order, without duplicates, put in canonical
    /// order.
    fn set(
        &mut self,
        ty: &Type,
        item: &Type,
        scope: &Scope<'_>,
        ev: Event<'a>,
    ) -> Result<Value, DecodeError> {
        let items = self.list(ty, item, scope, ev)?;
        let mut keyed: Vec<(Vec<u8>, usize, Value)> = items
            .into_iter()
            .enumerate()
            .map(|(i, v)| (canonical::to_canonical_vec(&v), i, v))
            .collect();
        keyed.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
        if let Some(w) = keyed.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(DecodeError::new(
                DecodeErrorKind::Duplicate,
                format!(
                    "a set holds each element once; this one equals [{}]",
                    w[0].1
                ),
            )
            .in_index(w[1].1));
        }
        Ok(Value::Set(keyed.into_iter().map(|(_, _, v)| v).collect()))
    }

    fn tuple(
        &mut self,
        ty: &Type,
        items: &[Type],
        scope: &Scope<'_>,
        ev: Event<'a>,
    ) -> Result<Value, DecodeError> {
        let what = format!("an array of {}", items.len());
        if ev != Event::BeginArray {
            return Err(DecodeError::mismatch(Shape(ty, &what), &ev));
        }
        let mut out = Vec::with_capacity(items.len());
        for (i, t) in items.iter().enumerate() {
            let ev = self.next().map_err(|e| e.in_index(i))?;
            if ev == Event::EndArray {
                return Err(DecodeError::new(
                    DecodeErrorKind::Mismatch,
                    format!("expected {}, found an array of {i}", Shape(ty, &what)),
                ));
            }
            out.push(self.value(t, scope, ev).map_err(|e| e.in_index(i))?);
        }
        match self.next().map_err(|e| e.in_index(items.len()))? {
            Event::EndArray => Ok(Value::Tuple(out)),
            _ => Err(DecodeError::new(
                DecodeErrorKind::Mismatch,
                format!("expected {}, found a longer array", Shape(ty, &what)),
            )),
        }
    }

    fn dict(
        &mut self,
        ty: &Type,
        key: &Type,
        value: &Type,
        scope: &Scope<'_>,
        ev: Event<'a>,
    ) -> Result<Value, DecodeError> {
        let (key_ty, key_scope) = resolve(key, scope)?;
        if *key_ty == Type::Text {
            return self.text_dict(ty, value, scope, ev);
        }
        let what = "an array of [key, value] pairs";
        if ev != Event::BeginArray {
            return Err(DecodeError::mismatch(Shape(ty, what), &ev));
        }
        let mut entries: Vec<(Vec<u8>, usize, Value, Value)> = Vec::new();
        loop {
            let i = entries.len();
            let ev = self.next().map_err(|e| e.in_index(i))?;
            if ev == Event::EndArray {
                break;
            }
            if i >= self.limits.max_collection_len {
                return Err(self.too_long().in_index(i));
            }
            let (k, v) = self
                .pair(key_ty, key_scope, value, scope, ev)
                .map_err(|e| e.in_index(i))?;
            entries.push((canonical::to_canonical_vec(&k), i, k, v));
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
        if let Some(w) = entries.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(DecodeError::new(
                DecodeErrorKind::Duplicate,
                format!(
                    "a dict holds each key once; this key equals the key of [{}]",
                    w[0].1
                ),
            )
            .in_index(w[1].1));
        }
        Ok(Value::Dict(
            entries.into_iter().map(|(_, _, k, v)| (k, v)).collect(),
        ))
    }

    /// One `[key, value]` entry of a dict whose keys are not Text.
    fn pair(
        &mut self,
        key: &Type,
        key_scope: &Scope<'_>,
        value: &Type,
        scope: &Scope<'_>,
        ev: Event<'a>,
    ) -> Result<(Value, Value), DecodeError> {
        let what = "a [key, value] pair";
        if ev != Event::BeginArray {
            return Err(DecodeError::mismatch(what, &ev));
        }
        let short = || {
            DecodeError::new(
                DecodeErrorKind::Mismatch,
                format!("expected {what}, found a shorter array"),
            )
        };
        let ev = self.next()?;
        if ev == Event::EndArray {
            return Err(short());
        }
        let k = self.value(key, key_scope, ev).map_err(|e| e.in_index(0))?;
        let ev = self.next().map_err(|e| e.in_index(1))?;
        if ev == Event::EndArray {
            return Err(short());
        }
        let v = self.value(value, scope, ev).map_err(|e| e.in_index(1))?;
        match self.next()? {
            Event::EndArray => Ok((k, v)),
            _ => Err(DecodeError::new(
                DecodeErrorKind::Mismatch,
                format!("expected {what}, found a longer array"),
            )),
        }
    }

    fn text_dict(
        &mut self,
        ty: &Type,
        value: &Type,
        scope: &Scope<'_>,
        ev: Event<'a>,
    ) -> Result<Value, DecodeError> {
        if ev != Event::BeginObject {
            return Err(DecodeError::mismatch(Shape(ty, "an object"), &ev));
        }
        let mut entries: Vec<(String, Value)> = Vec::new();
        while let Event::Key(key) = self.next()? {
            self.check_string(&key).map_err(|e| e.in_key(&key))?;
            if entries.len() >= self.limits.max_collection_len {
                return Err(self.too_long().in_key(&key));
            }
            let v = self.member_value(value, scope, &key)?;
            entries.push((key.into_owned(), v));
        }
        if !entries.windows(2).all(|w| w[0].0 < w[1].0) {
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            if let Some(w) = entries.windows(2).find(|w| w[0].0 == w[1].0) {
                return Err(DecodeError::new(
                    DecodeErrorKind::Duplicate,
                    format!("the key {} is given twice", Quoted(&w[0].0)),
                ));
            }
        }
        Ok(Value::TextDict(entries))
    }

    /// A record's fields (or an enum constructor's named fields): an object
    /// with every non-Option field; an Option field absent is None, present
    /// is Some of its value. Members no field names are read and ignored.
    fn fields(
        &mut self,
        fields: &[Field],
        scope: &Scope<'_>,
        what: &dyn std::fmt::Display,
        ev: Event<'a>,
    ) -> Result<Vec<(String, Value)>, DecodeError> {
        if ev != Event::BeginObject {
            return Err(DecodeError::mismatch(what, &ev));
        }
        let mut slots: Vec<Option<Value>> = (0..fields.len()).map(|_| None).collect();
        let mut others = DuplicateKeys::new();
        let mut members = 0;
        while let Event::Key(key) = self.next()? {
            self.check_string(&key).map_err(|e| e.in_key(&key))?;
            if members >= self.limits.max_collection_len {
                return Err(self.too_long().in_key(&key));
            }
            members += 1;
            match fields.iter().position(|f| f.name == *key) {
                Some(i) if slots[i].is_some() => return Err(fail::duplicate_key(&key)),
                Some(i) => slots[i] = Some(self.field(&fields[i].ty, scope, &key)?),
                None => self.ignore(&mut others, &key)?,
            }
        }
        fields
            .iter()
            .zip(slots)
            .map(|(field, slot)| match slot {
                Some(v) => Ok((field.name.clone(), v)),
                None => match resolve(&field.ty, scope)?.0 {
                    Type::Option(_) => Ok((field.name.clone(), Value::Option(None))),
                    _ => Err(fail::missing_field(&field.name)),
                },
            })
            .collect()
    }

    /// The value of a present record field: bare `v` for an Option field.
    fn field(&mut self, ty: &Type, scope: &Scope<'_>, key: &str) -> Result<Value, DecodeError> {
        let (ty, scope) = resolve(ty, scope).map_err(|e| e.in_key(key))?;
        match ty {
            Type::Option(inner) => Ok(Value::Option(Some(Box::new(
                self.member_value(inner, scope, key)?,
            )))),
            _ => self.member_value(ty, scope, key),
        }
    }

    /// Reads and drops the value of a member no field names.
    #[inline(never)]
    #[allow(clippy::ptr_arg)] // the Cow is kept borrowed in `others`
    fn ignore(
        &mut self,
        others: &mut DuplicateKeys<'a>,
        key: &Cow<'a, str>,
    ) -> Result<(), DecodeError> {
        if !others.insert(key) {
            return Err(fail::duplicate_key(key));
        }
        let first = self.next().map_err(|e| e.in_key(key))?;
        self.tok
            .skip_value(&first)
            .map_err(|e| syntax(e).in_key(key))?;
        Ok(())
    }

    fn enumeration(
        &mut self,
        ty: &Type,
        ctors: &[Constructor],
        scope: &Scope<'_>,
        ev: Event<'a>,
    ) -> Result<Value, DecodeError> {
        let what = "a constructor name or an object of one member";
        let find = |name: &str| {
            ctors.iter().find(|c| c.name == name).ok_or_else(|| {
                let names: Vec<&str> = ctors.iter().map(|c| c.name.as_str()).collect();
                DecodeError::new(
                    DecodeErrorKind::Invalid,
                    format!(
                        "{} has no constructor {}; it has {}",
                        TypeName(ty),
                        Quoted(name),
                        names.join(", ")
                    ),
                )
            })
        };
        match ev {
            Event::String(name) => {
                let c = find(&name)?;
                match c.payload {
                    Payload::Unit => Ok(Value::Enum {
                        constructor: c.name.clone(),
                        payload: EnumPayload::Unit,
                    }),
                    _ => Err(DecodeError::new(
                        DecodeErrorKind::Mismatch,
                        format!(
                            "constructor {} carries a payload: expected {{{}: …}}",
                            Quoted(&c.name),
                            Quoted(&c.name)
                        ),
                    )),
                }
            }
            Event::BeginObject => {
                let key = match self.next()? {
                    Event::Key(k) => k,
                    _ => {
                        return Err(DecodeError::new(
                            DecodeErrorKind::Mismatch,
                            format!("expected {}, found an empty object", Shape(ty, what)),
                        ))
                    }
                };
                let c = find(&key)?;
                let payload = match &c.payload {
                    Payload::Unit => {
                        return Err(DecodeError::new(
                            DecodeErrorKind::Mismatch,
                            format!(
                                "constructor {} carries no payload: expected {}",
                                Quoted(&c.name),
                                Quoted(&c.name)
                            ),
                        ))
                    }
                    Payload::Value(t) => {
                        EnumPayload::Value(Box::new(self.member_value(t, scope, &key)?))
                    }
                    Payload::Fields(fs) => {
                        let first = self.next().map_err(|e| e.in_key(&key))?;
                        let what = format!("an object of the fields of {}", Quoted(&c.name));
                        let fields = self
                            .fields(fs, scope, &what, first)
                            .map_err(|e| e.in_key(&key))?;
                        EnumPayload::Fields(fields)
                    }
                };
                self.close_tagged(ty, what)?;
                Ok(Value::Enum {
                    constructor: c.name.clone(),
                    payload,
                })
            }
            other => Err(DecodeError::mismatch(Shape(ty, what), &other)),
        }
    }
}
