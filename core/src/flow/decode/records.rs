//! Records, enums, and the enums with a fixed shape (Option outside a
//! record field, Result): objects read by field or by their one member.

use std::borrow::Cow;

use super::error::{DecodeError, DecodeErrorKind, Quoted, TypeName};
use super::{fail, resolve, syntax, Decoder, Scope, Shape};
use crate::flow::identity::Identity;
use crate::flow::types::{Constructor, Field, Payload, Type, TypeBody};
use crate::flow::value::{EnumPayload, Value};
use crate::json::{DuplicateKeys, Event};

impl<'a> Decoder<'a, '_> {
    #[inline(never)]
    pub(super) fn option(
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
    pub(super) fn result(
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
    pub(super) fn named(
        &mut self,
        ty: &Type,
        identity: &Identity,
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
    pub(super) fn member_value(
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
    pub(super) fn tagged(
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
    pub(super) fn close_tagged(&mut self, ty: &Type, what: &str) -> Result<(), DecodeError> {
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

    /// A record's fields (or an enum constructor's named fields): an object
    /// with every non-Option field; an Option field absent is None, present
    /// is Some of its value. Members no field names are read and ignored.
    pub(super) fn fields(
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
    pub(super) fn field(
        &mut self,
        ty: &Type,
        scope: &Scope<'_>,
        key: &str,
    ) -> Result<Value, DecodeError> {
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
    pub(super) fn ignore(
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

    pub(super) fn enumeration(
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
