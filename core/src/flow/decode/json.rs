//! Building a `json.Value` (or a host token) from events, without recursion.
//!
//! Completed values wait on one shared stack; when a container closes, its
//! elements are moved off that stack into a slice of exactly their number,
//! so every array and object is allocated once, at its final size. The path
//! of a failure is read off the open containers, so the success path keeps
//! no path at all.

use std::borrow::Cow;

use super::error::{DecodeError, DecodeErrorKind, Quoted, Segment};
use super::Decoder;
use crate::flow::value::JsonValue;
use crate::json::Event;

struct Frame {
    object: bool,
    values_start: usize,
    keys_start: usize,
}

impl<'a> Decoder<'a, '_> {
    /// The JSON value whose first event is `first`.
    pub(super) fn json(&mut self, first: Event<'a>) -> Result<JsonValue, DecodeError> {
        let mut values: Vec<JsonValue> = Vec::new();
        let mut keys: Vec<Box<str>> = Vec::new();
        let mut frames: Vec<Frame> = Vec::new();
        let mut event = first;
        loop {
            let value = match event {
                Event::BeginArray | Event::BeginObject => {
                    frames.push(Frame {
                        object: matches!(event, Event::BeginObject),
                        values_start: values.len(),
                        keys_start: keys.len(),
                    });
                    event = self.pull(&frames, &values, &keys)?;
                    continue;
                }
                Event::Key(k) => {
                    self.check_string(&k)
                        .map_err(|e| place(e, &frames, &values, &keys))?;
                    keys.push(boxed(k));
                    event = self.pull(&frames, &values, &keys)?;
                    continue;
                }
                Event::EndArray => {
                    let frame = frames.pop().unwrap_or(Frame {
                        object: false,
                        values_start: 0,
                        keys_start: 0,
                    });
                    JsonValue::Array(values.drain(frame.values_start..).collect())
                }
                Event::EndObject => {
                    let frame = frames.pop().unwrap_or(Frame {
                        object: true,
                        values_start: 0,
                        keys_start: 0,
                    });
                    let members: Vec<(Box<str>, JsonValue)> = keys
                        .drain(frame.keys_start..)
                        .zip(values.drain(frame.values_start..))
                        .collect();
                    match JsonValue::object_from_boxed(members) {
                        Ok(object) => object,
                        Err(dup) => {
                            let e = DecodeError::new(
                                DecodeErrorKind::Duplicate,
                                format!("the key {} is given twice", Quoted(&dup.0)),
                            );
                            return Err(place(e, &frames, &values, &keys));
                        }
                    }
                }
                Event::String(s) => {
                    self.check_string(&s)
                        .map_err(|e| place(e, &frames, &values, &keys))?;
                    JsonValue::String(boxed(s))
                }
                Event::Number(n) => JsonValue::Number(
                    self.decimal(&n)
                        .map_err(|e| place(e, &frames, &values, &keys))?,
                ),
                Event::Bool(b) => JsonValue::Bool(b),
                Event::Null => JsonValue::Null,
            };
            let Some(top) = frames.last() else {
                return Ok(value);
            };
            if values.len() - top.values_start >= self.limits.max_collection_len {
                let e = self.too_long();
                return Err(place(e, &frames, &values, &keys));
            }
            values.push(value);
            event = self.pull(&frames, &values, &keys)?;
        }
    }

    /// The next event, a failure placed at the value being read.
    #[inline(always)]
    fn pull(
        &mut self,
        frames: &[Frame],
        values: &[JsonValue],
        keys: &[Box<str>],
    ) -> Result<Event<'a>, DecodeError> {
        self.next_inline()
            .map_err(|e| place(e, frames, values, keys))
    }
}

fn boxed(s: Cow<'_, str>) -> Box<str> {
    match s {
        Cow::Borrowed(s) => s.into(),
        Cow::Owned(s) => s.into_boxed_str(),
    }
}

/// Places a failure at the value being read: each open array contributes
/// the index of its next element, each open object the key just read (when
/// its value is what is being read).
fn place(
    mut e: DecodeError,
    frames: &[Frame],
    values: &[JsonValue],
    keys: &[Box<str>],
) -> DecodeError {
    let mut path = Vec::with_capacity(frames.len());
    for (j, f) in frames.iter().enumerate() {
        let (values_end, keys_end) = match frames.get(j + 1) {
            Some(inner) => (inner.values_start, inner.keys_start),
            None => (values.len(), keys.len()),
        };
        let done = values_end - f.values_start;
        if f.object {
            if keys_end - f.keys_start > done {
                path.push(Segment::Key(keys[keys_end - 1].to_string()));
            }
        } else {
            path.push(Segment::Index(done));
        }
    }
    path.append(&mut e.path.0);
    e.path.0 = path;
    e
}
