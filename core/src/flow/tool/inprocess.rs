//! The pure half of an in-process implementation: a function the host
//! registered in code instead of a process. The specification's top
//! (`flow-host-boundary.txt`) lets one satisfy the protocol "by exchanging
//! the same fields as values", so this module is those fields and their
//! rules, nothing more:
//!
//! - [`described`]: what the implementation declares, read by the same
//!   reader as a process's describe, so binding holds it to the same
//!   fingerprints ([`BindingReport::check`](super::BindingReport::check)).
//! - [`call_fields`]: a call's fields as values: its key, the Tool's
//!   identity, the args keyed by parameter name, the type arguments bound
//!   by name and, for a generic Tool, the schema the caller expects.
//! - [`admit`]: the function's answer admitted at the declared types by
//!   the very decoder a process's reply goes through (its value written as
//!   canonical text, then decoded), so a value that would be BadReply on
//!   the wire is BadReply here too.
//!
//! Running the function (a thread, a panic caught as Unknown) is the
//! driver's.

use std::sync::Arc;

use super::conn::{bindings, check_call, decode_outcome, Open, RawOutcome};
use super::decoding::DecodeLimits;
use super::listing::{describe_result, Described, Tool};
use super::protocol::{substitute, Reply};
use super::{Call, CallKey, Outcome, SendError};
use crate::flow::canonical::write_canonical;
use crate::flow::identity::Identity;
use crate::flow::schema::schema_of;
use crate::flow::types::Type;
use crate::flow::value::Value;

/// One call, as an in-process implementation receives it: the fields a
/// call message carries, as values.
#[derive(Clone, Debug, PartialEq)]
pub struct InProcessCall {
    /// Its correlation key, `(runId, callId)`.
    pub key: CallKey,
    /// The identity of the declaration called (the message's `tool`).
    pub tool: Identity,
    /// The arguments keyed by parameter name, in declaration order (the
    /// message's `args`).
    pub args: Vec<(String, Value)>,
    /// For a generic Tool, each type parameter and the type it stands for
    /// at this call; empty otherwise.
    pub type_args: Vec<(String, Type)>,
    /// For a generic Tool, the schema of the success type the caller
    /// expects (the message's `expects`).
    pub expects: Option<serde_json::Value>,
}

impl InProcessCall {
    /// The argument of parameter `name`.
    pub fn arg(&self, name: &str) -> Option<&Value> {
        self.args.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}

/// What an implementation serving `tools` answers describe with: the
/// describe result a toolkit would send, read back as a process's is, so
/// the fingerprints binding compares are the declarations' own.
pub fn described(tools: &[Arc<Tool>]) -> Result<Described, String> {
    Described::from_json(describe_result(tools)).map_err(|e| e.to_string())
}

/// The fields of `call`, checked as
/// [`ToolConn::send_call`](super::ToolConn::send_call) checks them (one argument per parameter,
/// one type argument per type parameter).
pub fn call_fields(call: Call) -> Result<InProcessCall, SendError> {
    check_call(&call)?;
    let decl = &call.tool.declaration;
    let type_args = bindings(&call.tool, &call.type_args);
    let expects = if decl.generic.is_empty() {
        None
    } else {
        let ty = substitute(&decl.ok, &type_args);
        Some(schema_of(&ty, &call.tool.env).map_err(|e| SendError::Unwritable(e.to_string()))?)
    };
    let args = decl
        .params
        .iter()
        .map(|p| p.name.clone())
        .zip(call.args)
        .collect();
    Ok(InProcessCall {
        key: call.key,
        tool: decl.identity.clone(),
        args,
        type_args,
        expects,
    })
}

/// Admits an in-process implementation's answer to a call of `tool` with
/// `type_args`: NotRun and Unknown as they are; an Ok or Failed value
/// decoded from its canonical text at the declared success or error type
/// (type parameters bound to `type_args`) under `limits`, BadReply with
/// the decoder's path and reason when it does not decode.
pub fn admit(tool: &Arc<Tool>, type_args: &[Type], reply: Reply, limits: &DecodeLimits) -> Outcome {
    let open = Open {
        tool: tool.clone(),
        type_args: type_args.to_vec(),
        end: 0,
        seq: 0,
    };
    let mut text = Vec::new();
    let raw = match &reply {
        Reply::Ok(v) => {
            write_canonical(v, &mut text);
            RawOutcome::Ok(&text)
        }
        Reply::Failed(v) => {
            write_canonical(v, &mut text);
            RawOutcome::Failed(&text)
        }
        Reply::NotRun(r) => RawOutcome::NotRun(r.clone()),
        Reply::Unknown(r) => RawOutcome::Unknown(r.clone()),
    };
    decode_outcome(raw, &open, limits)
}
