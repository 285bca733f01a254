//! The implementation's side of the Tool protocol
//! (`core/src/flow/tool/toolkit.rs`) fed an arbitrary host's lines.
//!
//! Checks: the same events and the same bytes written whether the input
//! comes whole, byte by byte or in arbitrary pieces (then ends), and whether calls in
//! the writer's exact form are read in place or the general way; a call is
//! yielded with
//! as many args as its Tool takes, at most once per key while open, and a
//! reply to it closes it (a second reply is refused); every line written
//! is one JSON-RPC message.
#![no_main]

use libfuzzer_sys::fuzz_target;
use limen_core::flow::tool::toolkit::ToolkitLimits;
use limen_core::flow::tool::{Reply, ToolkitConn, ToolkitEvent};
use limen_core::flow::Value;
use limen_core::json::jsonrpc;
use limen_fuzz::tool::tools;
use limen_fuzz::{feeds, hex};

fn limits() -> ToolkitLimits {
    ToolkitLimits {
        max_line: 4096,
        ..ToolkitLimits::default()
    }
}

fn run(feed: &[&[u8]]) -> (Vec<ToolkitEvent>, Vec<u8>) {
    run_with(feed, true)
}

fn run_with(feed: &[&[u8]], exact: bool) -> (Vec<ToolkitEvent>, Vec<u8>) {
    let mut conn = ToolkitConn::new(tools(), limits());
    conn.set_exact_reading(exact);
    let mut events = Vec::new();
    let mut out = Vec::new();
    let mut take = |conn: &mut ToolkitConn, events: &mut Vec<ToolkitEvent>| {
        events.extend(std::iter::from_fn(|| conn.poll_event()));
        out.extend_from_slice(conn.pending_output());
        let n = conn.pending_output().len();
        conn.consume_output(0, n);
    };
    for piece in feed {
        conn.handle_data(0, piece);
        take(&mut conn, &mut events);
    }
    conn.handle_eof(0);
    take(&mut conn, &mut events);
    (events, out)
}

fuzz_target!(|data: &[u8]| {
    let all = feeds(data);
    let first = run(&all[0]);
    for feed in &all[1..] {
        assert_eq!(
            first,
            run(feed),
            "whole and split differ; pieces: {:?}",
            feed.iter().map(|p| hex(p)).collect::<Vec<_>>()
        );
    }
    assert_eq!(
        first,
        run_with(&all[0], false),
        "the exact reading and the general one differ"
    );
    for line in first.1.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        assert!(
            jsonrpc::parse(line).is_ok(),
            "wrote a line that is not JSON-RPC: {}",
            String::from_utf8_lossy(line)
        );
    }

    // Replies close calls, once.
    let tools = tools();
    let mut conn = ToolkitConn::new(tools.clone(), limits());
    conn.handle_data(0, data);
    let calls: Vec<_> = std::iter::from_fn(|| conn.poll_event())
        .filter_map(|e| match e {
            ToolkitEvent::Call(c) => Some(c),
            _ => None,
        })
        .collect();
    for c in &calls {
        let want = tools[c.tool].declaration.params.len();
        assert_eq!(c.args.len(), want, "a call with the wrong number of args");
    }
    let open = conn.open_calls();
    assert!(open <= calls.len());
    for (i, c) in calls.iter().enumerate() {
        let reply = match i % 3 {
            0 => Reply::Failed(Value::text("no")),
            1 => Reply::NotRun("not today".into()),
            _ => Reply::Unknown("lost".into()),
        };
        let took = conn.reply(0, &c.key, &reply);
        if took {
            assert!(
                !conn.reply(0, &c.key, &reply),
                "a second reply to {}",
                c.key
            );
        }
    }
    assert_eq!(conn.open_calls(), 0, "calls still open after every reply");
});
