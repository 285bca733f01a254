//! The Flow host boundary (`flow-host-boundary.txt`).
//!
//! - [`types`]: the data-type category ([`Type`], named declarations in a
//!   [`TypeEnv`]) and [`identity`] (`repository@version/file.Name`).
//! - [`value`]: values ([`Value`], [`JsonValue`]) over exact [`number`]s and
//!   [`time`]s.
//! - [`canonical`]: the one canonical text of every value.
//! - [`mod@decode`]: type-directed strict decoding of that text, under
//!   [`Limits`].

pub mod canonical;
pub mod decode;
pub mod identity;
pub mod number;
pub mod time;
pub mod types;
pub mod value;

pub use decode::{decode, decode_with_params, parse_json_value, DecodeError, Limits};
pub use identity::{Identity, Origin};
pub use number::{Decimal, Int};
pub use time::{Duration, Instant};
pub use types::{Constructor, Field, Payload, Type, TypeBody, TypeDecl, TypeEnv};
pub use value::{EnumPayload, JsonValue, Value};
