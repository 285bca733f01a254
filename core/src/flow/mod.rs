//! The Flow host boundary (`flow-host-boundary.txt`).
//!
//! - [`types`]: the data-type category ([`Type`], named declarations in a
//!   [`TypeEnv`]) and [`identity`] (`repository@version/file.Name`).
//! - [`value`]: values ([`Value`], [`JsonValue`]) over exact [`number`]s and
//!   [`time`]s.
//! - [`canonical`]: the one canonical text of every value.
//! - [`mod@decode`]: type-directed strict decoding of that text, under
//!   [`Limits`].
//! - [`schema`]: the JSON Schema of every data type, and the type it reads
//!   back as.
//! - [`fingerprint`]: @tool declarations, their described and canonical
//!   signatures and their fingerprints; [`canonical_json_text`] is the
//!   canonical text of any `serde_json` document.
//! - [`tool`]: the Tool process protocol, binding, `flow-tool.toml`, the
//!   toolkit's side and the MCP adapter, as pure machines.

pub mod canonical;
pub mod decode;
pub mod fingerprint;
pub mod identity;
pub mod number;
pub mod schema;
pub mod time;
pub mod tool;
pub mod types;
pub mod value;

pub use decode::{decode, decode_with_params, parse_json_value, DecodeError, Limits};
pub use fingerprint::{
    canonical_json_text, canonical_signature, check_listed_entry, fingerprint_of_signature,
    Declaration, Fingerprint, ListedEntry, Param,
};
pub use identity::{Identity, Origin};
pub use number::{Decimal, Int};
pub use schema::{schema_of, type_from_plain_schema, type_from_schema, GenerateError, SchemaError};
pub use time::{Duration, Instant};
pub use types::{Constructor, Field, Payload, Type, TypeBody, TypeDecl, TypeEnv};
pub use value::{EnumPayload, JsonValue, Value};
