//! The host's side of the Tool protocol (`core/src/flow/tool/host.rs`) and
//! the MCP adapter (`core/src/flow/tool/mcp.rs`), each with calls in flight
//! and fed arbitrary process output (the host's after a describe answer
//! naming its Tools), then the end of the process's output.
//!
//! The first input byte picks the machine (even: the Tool host, odd: the
//! MCP adapter) and whether the calls' reply deadline passes before the
//! process's output ends (bit 1); the rest is what the process writes. Checks: the same
//! events and the same bytes written whether the output comes whole, byte
//! by byte or in arbitrary pieces (the output taken a few bytes at a time,
//! as short writes take it); every call sent is closed exactly once once
//! the process has ended, and none is closed that was not sent; the
//! host reading replies in the writer's exact form in place yields what it
//! yields reading every line the general way; at the deadline every call
//! then due is closed, and the next deadline is a later one. The host mode also runs the
//! core's own `fuzz_host_replies`.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use limen_core::flow::tool::listing::describe_result;
use limen_core::flow::tool::{
    fuzz_host_replies, Call, CallKey, HostConn, HostEvent, Limits, McpConn, ToolConn,
};
use limen_core::flow::{Type, Value};
use limen_core::json::jsonrpc;
use limen_fuzz::tool::tools;
use limen_fuzz::{feeds, hex};

const CALLS: usize = 6;

fn limits() -> Limits {
    Limits {
        max_line: 4096,
        ..Limits::default()
    }
}

fn keys() -> Vec<CallKey> {
    (0..CALLS)
        .map(|i| CallKey::new("r", &i.to_string()))
        .collect()
}

/// Runs one machine over `feed`: its events and every byte it wrote.
fn run(
    conn: &mut dyn ToolConn,
    host: bool,
    timed: bool,
    feed: &[&[u8]],
) -> (Vec<HostEvent>, Vec<u8>) {
    let tools = tools();
    let mut events = Vec::new();
    let mut out = Vec::new();
    let mut drain = |conn: &mut dyn ToolConn, events: &mut Vec<HostEvent>| {
        events.extend(std::iter::from_fn(|| conn.poll_event()));
        // Written in short pieces, as a pipe with little room takes them.
        loop {
            let pending = conn.pending_output();
            if pending.is_empty() {
                break;
            }
            let n = pending.len().min(61);
            out.extend_from_slice(&pending[..n]);
            conn.consume_output(0, n);
        }
    };
    for (i, key) in keys().into_iter().enumerate() {
        let call = if i % 2 == 0 {
            Call {
                key,
                tool: tools[0].clone(),
                args: vec![Value::text("x")],
                type_args: Vec::new(),
            }
        } else {
            Call {
                key,
                tool: tools[1].clone(),
                args: vec![Value::List(vec![Value::int(1)])],
                type_args: vec![Type::Int],
            }
        };
        conn.send_call(0, call)
            .expect("distinct keys, the right arity");
    }
    conn.handle_started(0);
    drain(conn, &mut events);
    if host {
        // The process answers describe first, with the Tools it serves.
        let result = serde_json::to_vec(&describe_result(&tools)).unwrap_or_default();
        let mut line = Vec::new();
        jsonrpc::encode_response(b"1", &result, &mut line);
        line.push(b'\n');
        conn.handle_data(0, &line);
        drain(conn, &mut events);
    }
    for piece in feed {
        conn.handle_data(0, piece);
        drain(conn, &mut events);
    }
    if timed {
        // Every call written at 0 is due now; one sent on (an MCP call
        // whose id was taken) has a deadline of its own, later.
        let at = limits().call_timeout;
        assert!(conn.poll_timeout().is_some_and(|t| t <= at) || conn.open_calls() == 0);
        conn.handle_timeout(at);
        drain(conn, &mut events);
        assert!(
            conn.poll_timeout().is_none_or(|t| t > at),
            "a deadline already due is left"
        );
    }
    conn.handle_eof(at_end(timed));
    drain(conn, &mut events);
    (events, out)
}

/// When the process's output ends: after the deadline when it passed.
fn at_end(timed: bool) -> u64 {
    if timed {
        limits().call_timeout
    } else {
        0
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let fresh = || -> Box<dyn ToolConn> {
        if mode % 2 == 0 {
            Box::new(HostConn::new(limits()))
        } else {
            Box::new(McpConn::new(tools(), limits()))
        }
    };
    if mode % 2 == 0 {
        fuzz_host_replies(rest);
    }
    let all = feeds(rest);
    let timed = mode & 2 != 0;
    let first = run(fresh().as_mut(), mode % 2 == 0, timed, &all[0]);
    for feed in &all[1..] {
        let other = run(fresh().as_mut(), mode % 2 == 0, timed, feed);
        assert_eq!(
            first,
            other,
            "whole and split differ; pieces: {:?}",
            feed.iter().map(|p| hex(p)).collect::<Vec<_>>()
        );
    }
    if mode % 2 == 0 {
        let mut general = HostConn::new(limits());
        general.set_exact_reading(false);
        assert_eq!(
            first,
            run(&mut general, true, timed, &all[0]),
            "the exact reading and the general one differ"
        );
    }
    let mut closed: BTreeMap<CallKey, usize> = BTreeMap::new();
    for e in &first.0 {
        if let HostEvent::Closed { key, .. } = e {
            *closed.entry(key.clone()).or_default() += 1;
        }
    }
    for key in keys() {
        assert_eq!(closed.remove(&key), Some(1), "{key} is closed once");
    }
    assert!(
        closed.is_empty(),
        "calls never sent were closed: {closed:?}"
    );
});
