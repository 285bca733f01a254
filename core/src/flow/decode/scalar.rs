//! The types that hold no other value: Int, Decimal, Bool, Text, Bytes,
//! Instant, Duration (and Never, which holds none).

use std::borrow::Cow;

use base64::Engine as _;

use super::error::{DecodeError, DecodeErrorKind, Found, Quoted};
use super::{time, Decoder, Shape};
use crate::flow::types::Type;
use crate::flow::value::Value;
use crate::json::Event;

impl<'a> Decoder<'a, '_> {
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

    /// A value of a type that holds no other value.
    #[inline(never)]
    pub(super) fn scalar(&mut self, ty: &Type, ev: Event<'a>) -> Result<Value, DecodeError> {
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
}
