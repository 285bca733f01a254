//! The one door to type-directed strict decoding for the Tool machines.
//!
//! Replies, args and MCP results are decoded here and nowhere else, by the
//! decoder of `flow::decode` (§ Decoding); a failure is its JSON path and
//! reason, which becomes the reason of a BadReply or a NotRun.

use crate::flow::types::{Type, TypeEnv};
use crate::flow::value::Value;

/// The bounds every decoded value is held to.
pub use crate::flow::decode::Limits as DecodeLimits;

/// Decodes `bytes` at `ty` (named types in `env`), each generic type
/// parameter bound as `params` says, under `limits`.
pub(crate) fn decode_at(
    bytes: &[u8],
    ty: &Type,
    env: &TypeEnv,
    params: &[(String, Type)],
    limits: &DecodeLimits,
) -> Result<Value, String> {
    crate::flow::decode::decode_with_params(bytes, ty, env, params, limits)
        .map_err(|e| e.to_string())
}
