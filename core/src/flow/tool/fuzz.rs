//! The host machine fed arbitrary output, for a fuzz target.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::host::HostConn;
use super::listing::{describe_result, Tool};
use super::{Call, CallKey, HostEvent, Limits, ToolConn};
use crate::flow::fingerprint::{Declaration, Param};
use crate::flow::identity::Identity;
use crate::flow::types::{Field, Type, TypeDecl, TypeEnv};
use crate::flow::value::Value;
use crate::json::jsonrpc;

/// Runs a [`HostConn`] with eight calls out through `data` as the
/// process's output (split where `data`'s first byte says), then ends the
/// process. Panics only if the machine breaks a rule: no call may be closed
/// twice, every call must be closed once the process has ended, nothing
/// may panic inside, and the events must be the same whether replies in
/// the writer's exact form are read in place or not. A fuzz target calls
/// this with its input.
pub fn fuzz_host_replies(data: &[u8]) {
    let exact = host_replies(data, true);
    let general = host_replies(data, false);
    assert_eq!(
        exact, general,
        "the exact reading and the general one differ"
    );
}

/// The events of one run of [`fuzz_host_replies`].
fn host_replies(data: &[u8], exact: bool) -> Vec<HostEvent> {
    let tool = fuzz_echo_tool();
    let limits = Limits {
        max_line: 4096,
        ..Limits::default()
    };
    let mut conn = HostConn::new(limits);
    conn.set_exact_reading(exact);
    let keys: Vec<CallKey> = (0..8).map(|i| CallKey::new("r", &i.to_string())).collect();
    for key in &keys {
        let call = Call {
            key: key.clone(),
            tool: tool.clone(),
            args: vec![Value::text("x")],
            type_args: Vec::new(),
        };
        // Eight distinct keys with the right arity are always taken.
        let _ = conn.send_call(0, call);
    }
    let mut closed: BTreeMap<CallKey, usize> = BTreeMap::new();
    let mut events = Vec::new();
    let mut drain = |conn: &mut HostConn| {
        while let Some(event) = conn.poll_event() {
            if let HostEvent::Closed { key, .. } = &event {
                *closed.entry(key.clone()).or_default() += 1;
            }
            events.push(event);
        }
        let n = conn.pending_output().len();
        conn.consume_output(0, n);
    };
    conn.handle_started(0);
    let mut describe = Vec::new();
    let result = serde_json::to_string(&describe_result([&tool])).unwrap_or_default();
    jsonrpc::encode_response(b"1", result.as_bytes(), &mut describe);
    describe.push(b'\n');
    conn.handle_data(0, &describe);
    drain(&mut conn);
    let split = data.first().map_or(1, |&b| usize::from(b % 17) + 1);
    for piece in data.get(1..).unwrap_or_default().chunks(split) {
        conn.handle_data(0, piece);
        drain(&mut conn);
    }
    conn.handle_eof(0);
    drain(&mut conn);
    for key in &keys {
        assert_eq!(closed.get(key), Some(&1), "{key} is closed once");
    }
    assert_eq!(closed.len(), keys.len(), "only calls sent are closed");
    assert_eq!(conn.open_calls(), 0);
    events
}

/// `fuzz@1/f.flow.Echo(text: Text) -> Result<fuzz@1/f.flow.Out, Text>`,
/// `Out` a record of an Int and an optional list of Text: the Tool
/// [`fuzz_host_replies`] calls, and one the fuzz targets serve.
pub fn fuzz_echo_tool() -> Arc<Tool> {
    let out = Identity::in_repository("fuzz", "1", "f.flow", "Out");
    let mut env = TypeEnv::new();
    env.declare(TypeDecl::record(
        out.clone(),
        vec![
            Field::new("n", Type::Int),
            Field::new("tags", Type::option(Type::list(Type::Text))),
        ],
    ));
    let decl = Declaration::new(
        Identity::in_repository("fuzz", "1", "f.flow", "Echo"),
        vec![Param::new("text", Type::Text)],
        Type::named(out),
        Type::Text,
    );
    // The declaration is well formed, so it has a signature.
    Arc::new(Tool::new(decl, env).unwrap_or_else(|e| panic!("the fuzz Tool: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_few_inputs_break_no_rule() {
        for input in [
            &b""[..],
            b"\x00{\"jsonrpc\":\"2.0\",\"method\":\"reply\",\"params\":{\"runId\":\"r\",\"callId\":\"1\",\"outcome\":{\"Ok\":{\"n\":1}}}}\n",
            b"\x03{\"jsonrpc\":\"2.0\",\"method\":\"reply\",\"params\":{\"runId\":\"r\",\"callId\":\"2\",\"outcome\":{\"Ok\":1}}}\n{\"jsonrpc\":\"2.0\",\"method\":\"reply\",\"params\":{\"runId\":\"r\",\"callId\":\"2\",\"outcome\":{\"Ok\":1}}}\n",
            b"\x05garbage\n\n\r\n{\"\n[[[[[[\n",
        ] {
            fuzz_host_replies(input);
        }
    }
}
