//! Lists, sets, tuples and dicts: arrays (and, for `Dict<Text, V>`,
//! objects) read element by element, each held to the collection limit.

use super::error::{DecodeError, DecodeErrorKind, Quoted};
use super::{resolve, Decoder, Scope, Shape};
use crate::flow::canonical;
use crate::flow::types::Type;
use crate::flow::value::Value;
use crate::json::Event;

impl<'a> Decoder<'a, '_> {
    /// The elements of an array of `item`s.
    pub(super) fn list(
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
    pub(super) fn set(
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

    pub(super) fn tuple(
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

    pub(super) fn dict(
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
    pub(super) fn pair(
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

    pub(super) fn text_dict(
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
}
