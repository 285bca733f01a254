//! A call's reply deadline ([`Limits::call_timeout`]): a call with no reply
//! in time is cancelled and closed Unknown, one the process never read is
//! NotRun and the process stopped, a late reply is dropped, and what the
//! machine holds for its deadlines stays bounded.

use super::*;
use crate::SECOND;

fn limits(timeout: crate::Timestamp) -> Limits {
    Limits {
        call_timeout: timeout,
        ..Limits::default()
    }
}

/// [`super::ready`] under `limits`.
fn ready_with(limits: Limits, tools: &[&Arc<Tool>]) -> HostConn {
    let mut conn = HostConn::new(limits);
    conn.describe(0);
    assert_eq!(events(&mut conn), [HostEvent::Start]);
    conn.handle_started(0);
    transmit(&mut conn);
    conn.handle_data(0, &describe_line(1, tools, DATA_VERSION));
    assert!(matches!(
        events(&mut conn).as_slice(),
        [HostEvent::Described(Ok(_))]
    ));
    conn
}

#[test]
fn a_call_past_its_deadline_is_cancelled_and_unknown() {
    let search = search_tool();
    let mut conn = ready_with(limits(2 * SECOND), &[&search]);
    let t0 = 5 * SECOND;
    conn.send_call(t0, search_call("1")).unwrap();
    transmit(&mut conn);
    assert_eq!(conn.poll_timeout(), Some(t0 + 2 * SECOND));
    // Before the deadline: nothing.
    conn.handle_timeout(t0 + 2 * SECOND - 1);
    assert_eq!(events(&mut conn), []);
    conn.handle_timeout(t0 + 2 * SECOND);
    let got = closed(&events(&mut conn));
    assert_eq!(
        got,
        [(
            "1".into(),
            Outcome::Unknown(format!(
                "{} did not reply to `call` within 2 s (the call deadline): a cancel was sent, \
                 and whether the call happened is not known",
                search.identity()
            ))
        )]
    );
    assert_eq!(
        transmit(&mut conn),
        "{\"jsonrpc\":\"2.0\",\"method\":\"cancel\",\"params\":{\"runId\":\"run-1\",\"callId\":\"1\"}}\n"
    );
    assert_eq!(conn.poll_timeout(), None, "no call is out");
    assert_eq!(conn.open_calls(), 0);
    // A reply that comes later is dropped.
    conn.handle_data(t0 + 3 * SECOND, &reply_line("1", hit_list()));
    assert!(matches!(
        events(&mut conn).as_slice(),
        [HostEvent::Dropped(_)]
    ));
    // The key is free again, and the process still serves.
    conn.send_call(t0 + 4 * SECOND, search_call("1")).unwrap();
    transmit(&mut conn);
    conn.handle_data(t0 + 4 * SECOND, &reply_line("1", hit_list()));
    assert!(matches!(closed(&events(&mut conn))[0].1, Outcome::Ok(_)));
}

/// The cancel line above is the protocol's own.
#[test]
fn the_cancel_sent_at_the_deadline_is_the_protocols() {
    let mut line = Vec::new();
    protocol::write_cancel(&CallKey::new("run-1", "1"), &mut line);
    assert_eq!(
        String::from_utf8(line).unwrap(),
        "{\"jsonrpc\":\"2.0\",\"method\":\"cancel\",\"params\":{\"runId\":\"run-1\",\"callId\":\"1\"}}"
    );
}

#[test]
fn a_call_the_process_never_read_is_not_run_and_the_process_stopped() {
    let search = search_tool();
    let mut conn = ready_with(limits(SECOND), &[&search]);
    conn.send_call(0, search_call("1")).unwrap();
    conn.send_call(0, search_call("2")).unwrap();
    // Nothing written: the process does not read its input.
    conn.handle_timeout(SECOND);
    let evs = events(&mut conn);
    let got = closed(&evs);
    assert_eq!(got.len(), 2, "{evs:?}");
    for (_, outcome) in &got {
        let Outcome::NotRun(why) = outcome else {
            panic!("{outcome:?}")
        };
        assert!(why.contains("did not read its `call` within 1 s"), "{why}");
    }
    let stops = evs.iter().filter(|e| **e == HostEvent::Stop).count();
    assert_eq!(stops, 1, "the process is stopped once: {evs:?}");
    conn.handle_eof(SECOND);
    assert_eq!(closed(&events(&mut conn)), [], "nothing closes twice");
}

/// Many calls answered behind one that is held: the deadlines kept stay
/// about the calls open, and the held one still times out.
#[test]
fn the_deadlines_kept_are_bounded_by_the_calls_open() {
    let search = search_tool();
    let mut conn = ready_with(limits(60 * SECOND), &[&search]);
    conn.send_call(0, search_call("held")).unwrap();
    transmit(&mut conn);
    let mut most = 0;
    for i in 0..20_000u64 {
        let id = i.to_string();
        conn.send_call(i, search_call(&id)).unwrap();
        transmit(&mut conn);
        conn.handle_data(i, &reply_line(&id, hit_list()));
        events(&mut conn);
        most = most.max(conn.deadlines_held());
    }
    assert!(
        most <= 2 * 2 + 32 + 1,
        "{most} deadlines held for 2 calls open"
    );
    assert_eq!(conn.open_calls(), 1);
    assert_eq!(conn.poll_timeout(), Some(60 * SECOND));
    conn.handle_timeout(60 * SECOND);
    let got = closed(&events(&mut conn));
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, "held");
    assert_eq!(conn.deadlines_held(), 0);
}

/// A call's deadline counts from when it is written: a call answered in
/// time leaves no deadline behind, and each call has its own.
#[test]
fn each_call_has_its_own_deadline() {
    let search = search_tool();
    let mut conn = ready_with(limits(10 * SECOND), &[&search]);
    conn.send_call(0, search_call("a")).unwrap();
    conn.send_call(4 * SECOND, search_call("b")).unwrap();
    transmit(&mut conn);
    assert_eq!(conn.poll_timeout(), Some(10 * SECOND));
    conn.handle_data(5 * SECOND, &reply_line("a", hit_list()));
    events(&mut conn);
    assert_eq!(
        conn.poll_timeout(),
        Some(14 * SECOND),
        "b's deadline is next"
    );
    conn.handle_timeout(10 * SECOND);
    assert_eq!(events(&mut conn), []);
    conn.handle_timeout(14 * SECOND);
    assert_eq!(closed(&events(&mut conn))[0].0, "b");
}

#[test]
fn an_mcp_call_past_its_deadline_is_cancelled_and_unknown() {
    let search = search_tool();
    let mut conn = McpConn::new(vec![search.clone()], limits(3 * SECOND));
    conn.send_call(0, search_call("1")).unwrap();
    events(&mut conn);
    conn.handle_started(0);
    transmit(&mut conn);
    conn.handle_data(0, &mcp_line(r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}"#));
    transmit(&mut conn);
    let t = SECOND;
    conn.handle_data(
        t,
        &mcp_line(
            r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"search","inputSchema":{}}]}}"#,
        ),
    );
    events(&mut conn);
    assert!(transmit(&mut conn).contains("tools/call"));
    assert_eq!(conn.poll_timeout(), Some(t + 3 * SECOND));
    conn.handle_timeout(t + 3 * SECOND);
    assert_eq!(
        closed(&events(&mut conn)),
        [(
            "1".into(),
            Outcome::Unknown(format!(
                "{} did not reply to `tools/call` within 3 s (the call deadline): a cancel was \
                 sent, and whether the call happened is not known",
                search.identity()
            ))
        )]
    );
    assert_eq!(
        transmit(&mut conn),
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"1\",\"reason\":\"no reply within the host's call deadline\"}}\n"
    );
    assert_eq!(conn.poll_timeout(), None);
}
