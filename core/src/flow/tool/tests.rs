//! The machines against each other and against scripted peers.

use std::sync::Arc;

use super::host::HostConn;
use super::listing::{describe_result, Tool};
use super::toolkit::{Incoming, Reply, ToolkitConn, ToolkitEvent, ToolkitLimits};
use super::*;
use crate::flow::fingerprint::{Declaration, Param};
use crate::flow::identity::Identity;
use crate::flow::types::{Field, Type, TypeDecl, TypeEnv};
use crate::flow::value::Value;

fn search_tool() -> Arc<Tool> {
    let hit = Identity::in_repository("example.com/acme", "1.2.0", "search.flow", "Hit");
    let mut env = TypeEnv::new();
    env.declare(TypeDecl::record(
        hit.clone(),
        vec![
            Field::new("title", Type::Text),
            Field::new("score", Type::Decimal),
        ],
    ));
    let decl = Declaration::new(
        Identity::in_repository("example.com/acme", "1.2.0", "search.flow", "search"),
        vec![
            Param::new("query", Type::Text),
            Param::new("limit", Type::Int),
        ],
        Type::list(Type::named(hit)),
        Type::Text,
    );
    Arc::new(Tool::new(decl, env).unwrap())
}

fn generic_tool() -> Arc<Tool> {
    let decl = Declaration::new(
        Identity::in_repository("example.com/acme", "1.2.0", "json.flow", "parse"),
        vec![Param::new("text", Type::Text)],
        Type::param("T"),
        Type::Text,
    )
    .generic(&["T"]);
    Arc::new(Tool::new(decl, TypeEnv::new()).unwrap())
}

fn call(tool: &Arc<Tool>, call_id: &str, args: Vec<Value>) -> Call {
    Call {
        key: CallKey::new("run-1", call_id),
        tool: tool.clone(),
        args,
        type_args: Vec::new(),
    }
}

fn search_call(id: &str) -> Call {
    call(&search_tool(), id, vec![Value::text("rust"), Value::int(2)])
}

fn describe_line(id: u64, tools: &[&Arc<Tool>], data: &str) -> Vec<u8> {
    let mut result = describe_result(tools.iter().copied());
    result["data"] = data.into();
    let mut line = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{}}}",
        serde_json::to_string(&result).unwrap()
    )
    .into_bytes();
    line.push(b'\n');
    line
}

fn reply_line(call_id: &str, outcome: &str) -> Vec<u8> {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"reply\",\"params\":{{\"runId\":\"run-1\",\"callId\":\"{call_id}\",\"outcome\":{outcome}}}}}\n"
    )
    .into_bytes()
}

fn events(conn: &mut impl ToolConn) -> Vec<HostEvent> {
    std::iter::from_fn(|| conn.poll_event()).collect()
}

fn closed(events: &[HostEvent]) -> Vec<(String, Outcome)> {
    events
        .iter()
        .filter_map(|e| match e {
            HostEvent::Closed { key, outcome } => Some((key.call.to_string(), outcome.clone())),
            _ => None,
        })
        .collect()
}

fn transmit(conn: &mut impl ToolConn) -> String {
    let out = conn.pending_output().to_vec();
    conn.consume_output(0, out.len());
    String::from_utf8(out).unwrap()
}

/// A host connection that has started and described `tools`.
fn ready(tools: &[&Arc<Tool>]) -> HostConn {
    let mut conn = HostConn::new(Limits::default());
    conn.describe(0);
    assert_eq!(events(&mut conn), [HostEvent::Start]);
    conn.handle_started(0);
    assert_eq!(
        transmit(&mut conn),
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"describe\"}\n"
    );
    conn.handle_data(0, &describe_line(1, tools, DATA_VERSION));
    assert!(matches!(
        events(&mut conn).as_slice(),
        [HostEvent::Described(Ok(_))]
    ));
    conn
}

fn hit_list() -> &'static str {
    r#"{"Ok":[{"score":0.5,"title":"a"},{"score":1,"title":"b"}]}"#
}

#[test]
fn a_call_is_the_documented_notification_and_its_reply_decodes() {
    let mut conn = ready(&[&search_tool()]);
    conn.send_call(0, search_call("7")).unwrap();
    assert_eq!(
        transmit(&mut conn),
        "{\"jsonrpc\":\"2.0\",\"method\":\"call\",\"params\":{\"runId\":\"run-1\",\"callId\":\"7\",\
         \"tool\":\"example.com/acme@1.2.0/search.flow.search\",\"args\":{\"limit\":2,\"query\":\"rust\"}}}\n"
    );
    conn.handle_data(0, &reply_line("7", hit_list()));
    let got = closed(&events(&mut conn));
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, "7");
    assert_eq!(
        got[0].1.to_json(),
        r#"{"Ok":[{"score":0.5,"title":"a"},{"score":1,"title":"b"}]}"#
    );
    assert_eq!(conn.open_calls(), 0);
}

#[test]
fn replies_in_any_order_close_their_own_calls_and_a_second_is_dropped() {
    let mut conn = ready(&[&search_tool()]);
    for id in ["1", "2", "3"] {
        conn.send_call(0, search_call(id)).unwrap();
    }
    transmit(&mut conn);
    let mut lines = reply_line("3", r#"{"Failed":"no index"}"#);
    lines.extend(reply_line("1", r#"{"NotRun":"busy"}"#));
    lines.extend(reply_line("3", r#"{"Ok":[]}"#));
    lines.extend(reply_line("9", r#"{"Ok":[]}"#));
    lines.extend(reply_line("2", r#"{"Unknown":"timed out upstream"}"#));
    conn.handle_data(0, &lines);
    let evs = events(&mut conn);
    assert_eq!(
        closed(&evs),
        [
            ("3".into(), Outcome::Failed(Value::text("no index"))),
            ("1".into(), Outcome::NotRun("busy".into())),
            ("2".into(), Outcome::Unknown("timed out upstream".into())),
        ]
    );
    let dropped: Vec<&HostEvent> = evs
        .iter()
        .filter(|e| matches!(e, HostEvent::Dropped(_)))
        .collect();
    assert_eq!(
        dropped,
        [
            &HostEvent::Dropped(
                "a reply for run \"run-1\", call \"3\", which is not open (never sent, or already \
                 answered): dropped"
                    .into()
            ),
            &HostEvent::Dropped(
                "a reply for run \"run-1\", call \"9\", which is not open (never sent, or already \
                 answered): dropped"
                    .into()
            ),
        ]
    );
}

#[test]
fn bad_replies_are_admitted_with_their_reason() {
    let mut conn = ready(&[&search_tool()]);
    for id in ["1", "2", "3", "4", "5", "6"] {
        conn.send_call(0, search_call(id)).unwrap();
    }
    transmit(&mut conn);
    let mut lines = reply_line("1", r#"{"Ok":[{"title":"a","score":"high"}]}"#);
    lines.extend(reply_line("2", r#"{"Ok":[],"Failed":"x"}"#));
    lines.extend(reply_line("3", r#"{"Done":1}"#));
    lines.extend(reply_line("4", r#"{"NotRun":3}"#));
    lines.extend(
        b"{\"jsonrpc\":\"2.0\",\"method\":\"reply\",\"params\":{\"runId\":\"run-1\",\"callId\":\"5\",\"outcome\":{\"Ok\":[}}}\n",
    );
    lines.extend(reply_line("6", r#"{"Failed":7}"#));
    conn.handle_data(0, &lines);
    let got = closed(&events(&mut conn));
    let reasons: Vec<String> = got
        .iter()
        .map(|(id, o)| match o {
            Outcome::BadReply(r) => format!("{id}: {r}"),
            other => panic!("{id} is {other:?}"),
        })
        .collect();
    let shape = "the outcome is one of {\"Ok\": value}, {\"Failed\": error}, {\"NotRun\": \
                 \"reason\"}, {\"Unknown\": \"reason\"}";
    assert_eq!(reasons[0].split(": ").next(), Some("1"));
    assert!(
        reasons[0].starts_with("1: the Ok value does not decode at the success type: $[0].score"),
        "{}",
        reasons[0]
    );
    assert_eq!(reasons[1], format!("2: {shape}; it has 2 members"));
    assert_eq!(reasons[2], format!("3: {shape}; `Done` is none of them"));
    assert_eq!(reasons[3], "4: the NotRun reason is a string");
    assert!(
        reasons[4].starts_with("5: the reply is not a JSON-RPC 2.0 message (not JSON: "),
        "{}",
        reasons[4]
    );
    assert!(
        reasons[5].starts_with("6: the Failed value does not decode at the error type: $: "),
        "{}",
        reasons[5]
    );
}

#[test]
fn a_reply_over_the_size_limit_is_bad_reply_without_being_held() {
    let limits = Limits {
        max_line: 200,
        ..Limits::default()
    };
    let mut conn = HostConn::new(limits);
    conn.send_call(0, search_call("1")).unwrap();
    conn.send_call(0, search_call("2")).unwrap();
    assert_eq!(events(&mut conn), [HostEvent::Start]);
    conn.handle_started(0);
    transmit(&mut conn);
    // The describe result is over 200 bytes too: that is a failure to
    // describe, which the machine reports and then stops the process.
    conn.handle_data(0, &describe_line(1, &[&search_tool()], DATA_VERSION));
    let evs = events(&mut conn);
    assert!(
        matches!(&evs[0], HostEvent::Described(Err(why)) if why.starts_with("sent a describe response that is ")),
        "{evs:?}"
    );
    assert_eq!(
        evs.last(),
        Some(&HostEvent::Stop),
        "a process that cannot describe itself is stopped"
    );

    let describe = describe_line(1, &[&search_tool()], DATA_VERSION);
    let max_line = describe.len();
    let mut conn = HostConn::new(Limits {
        max_line,
        ..Limits::default()
    });
    conn.send_call(0, search_call("1")).unwrap();
    conn.handle_started(0);
    conn.handle_data(0, &describe);
    events(&mut conn);
    transmit(&mut conn);
    let big = format!(
        r#"{{"Ok":[{{"title":"{}","score":1}}]}}"#,
        "x".repeat(2 * max_line)
    );
    let line = reply_line("1", &big);
    // Fed in small pieces: the machine holds at most the limit.
    for piece in line.chunks(64) {
        conn.handle_data(0, piece);
    }
    assert_eq!(
        closed(&events(&mut conn)),
        [(
            "1".into(),
            Outcome::BadReply(format!(
                "the reply is {} bytes, over the host's limit of {max_line} bytes",
                line.len() - 1
            ))
        )]
    );
}

#[test]
fn lines_that_are_not_replies_change_nothing() {
    let mut conn = ready(&[&search_tool()]);
    conn.send_call(0, search_call("1")).unwrap();
    transmit(&mut conn);
    conn.handle_data(
        0,
        b"hello\n\n{\"jsonrpc\":\"2.0\",\"method\":\"progress\"}\n{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"sample\"}\n",
    );
    let evs = events(&mut conn);
    assert!(closed(&evs).is_empty());
    assert_eq!(evs.len(), 3, "{evs:?}");
    assert_eq!(
        transmit(&mut conn),
        "{\"jsonrpc\":\"2.0\",\"id\":5,\"error\":{\"code\":-32601,\"message\":\"the host serves no method `sample`\"}}\n"
    );
    conn.handle_data(0, &reply_line("1", r#"{"Ok":[]}"#));
    assert_eq!(
        closed(&events(&mut conn)),
        [("1".into(), Outcome::Ok(Value::List(vec![])))]
    );
}

#[test]
fn a_crash_closes_calls_unknown_if_written_and_not_run_if_not() {
    let mut conn = ready(&[&search_tool()]);
    conn.send_call(0, search_call("1")).unwrap();
    let n = conn.pending_output().len();
    conn.consume_output(0, n);
    conn.send_call(0, search_call("2")).unwrap();
    conn.send_call(0, search_call("3")).unwrap();
    let out = conn.pending_output();
    // Only call 2's line and part of call 3's reached the pipe.
    let first_line = out.iter().position(|&b| b == b'\n').unwrap() + 1;
    assert!(out.len() > first_line + 10);
    conn.consume_output(0, first_line + 10);
    conn.handle_eof(0);
    assert_eq!(
        closed(&events(&mut conn)),
        [
            (
                "1".into(),
                Outcome::Unknown("the implementation's process ended with the call out".into())
            ),
            (
                "2".into(),
                Outcome::Unknown("the implementation's process ended with the call out".into())
            ),
            (
                "3".into(),
                Outcome::NotRun(
                    "the implementation's process ended before the call was written to it".into()
                )
            ),
        ]
    );
    assert_eq!(conn.open_calls(), 0);
}

#[test]
fn a_restart_describes_again_before_a_call_and_a_lost_tool_is_not_run() {
    let search = search_tool();
    let parse = generic_tool();
    let mut conn = ready(&[&search, &parse]);
    conn.handle_eof(0);
    assert!(events(&mut conn).is_empty());
    // Calls resent after the crash keep their (run id, call id).
    conn.send_call(0, search_call("1")).unwrap();
    let mut p = call(&parse, "2", vec![Value::text("1")]);
    p.type_args = vec![Type::Int];
    conn.send_call(0, p).unwrap();
    assert_eq!(events(&mut conn), [HostEvent::Start]);
    conn.handle_started(0);
    assert_eq!(
        transmit(&mut conn),
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"describe\"}\n",
        "nothing but describe goes out before the process has described itself"
    );
    // The restarted process serves only the generic Tool.
    conn.handle_data(0, &describe_line(2, &[&parse], DATA_VERSION));
    let evs = events(&mut conn);
    assert!(matches!(evs[0], HostEvent::Described(Ok(_))));
    assert_eq!(
        closed(&evs),
        [(
            "1".into(),
            Outcome::NotRun(
                "the implementation no longer serves example.com/acme@1.2.0/search.flow.search"
                    .into()
            )
        )]
    );
    let sent = transmit(&mut conn);
    assert!(sent.contains("\"callId\":\"2\""), "{sent}");
    assert!(
        sent.contains(r#""expects":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"integer"}"#),
        "a generic call carries the schema of the type the caller expects: {sent}"
    );
    conn.handle_data(0, &reply_line("2", r#"{"Ok":12345678901234567890123}"#));
    assert_eq!(
        closed(&events(&mut conn))[0].1.to_json(),
        r#"{"Ok":12345678901234567890123}"#
    );
}

#[test]
fn a_restart_that_no_longer_fits_or_speaks_another_major_is_not_run() {
    let search = search_tool();
    let mut conn = ready(&[&search]);
    conn.handle_eof(0);
    conn.send_call(0, search_call("1")).unwrap();
    events(&mut conn);
    conn.handle_started(0);
    transmit(&mut conn);
    let mut other = (*search).clone();
    other.fingerprint = crate::flow::fingerprint::Fingerprint([7; 32]);
    conn.handle_data(0, &describe_line(2, &[&Arc::new(other)], DATA_VERSION));
    let got = closed(&events(&mut conn));
    assert_eq!(
        got[0].1,
        Outcome::NotRun(format!(
            "the implementation no longer fits example.com/acme@1.2.0/search.flow.search: its \
             describe lists fingerprint sha256:{} where the declaration's is {}",
            "07".repeat(32),
            search.fingerprint
        ))
    );
    conn.handle_eof(0);
    conn.send_call(0, search_call("2")).unwrap();
    events(&mut conn);
    conn.handle_started(0);
    transmit(&mut conn);
    conn.handle_data(0, &describe_line(3, &[&search], "2.0"));
    assert_eq!(
        closed(&events(&mut conn))[0].1,
        Outcome::NotRun(
            "the implementation speaks data version 2.0, whose major differs from ours (1.0)"
                .into()
        )
    );
}

#[test]
fn describe_failures_close_waiting_calls_and_stop_the_process() {
    let mut conn = HostConn::new(Limits::default());
    conn.send_call(0, search_call("1")).unwrap();
    events(&mut conn);
    conn.handle_started(100);
    assert_eq!(conn.poll_timeout(), Some(100 + 10 * crate::SECOND));
    conn.handle_timeout(99 + 10 * crate::SECOND);
    assert!(events(&mut conn).is_empty(), "no-op before the deadline");
    conn.handle_timeout(100 + 10 * crate::SECOND);
    let evs = events(&mut conn);
    assert_eq!(
        evs,
        [
            HostEvent::Described(Err("did not describe itself within 10 s".into())),
            HostEvent::Closed {
                key: CallKey::new("run-1", "1"),
                outcome: Outcome::NotRun(
                    "the implementation did not describe itself within 10 s".into()
                )
            },
            HostEvent::Stop,
        ]
    );
    // A call while stopping starts the process again once it has ended.
    conn.send_call(0, search_call("2")).unwrap();
    conn.handle_eof(0);
    assert_eq!(events(&mut conn), [HostEvent::Start]);
    conn.handle_start_failed(0, "No such file or directory");
    assert_eq!(
        closed(&events(&mut conn)),
        [(
            "2".into(),
            Outcome::NotRun(
                "the implementation could not be started: No such file or directory".into()
            )
        )]
    );
}

#[test]
fn cancel_is_sent_and_proves_nothing() {
    let mut conn = ready(&[&search_tool()]);
    conn.send_call(0, search_call("1")).unwrap();
    transmit(&mut conn);
    conn.cancel(0, &CallKey::new("run-1", "1"));
    assert_eq!(
        transmit(&mut conn),
        "{\"jsonrpc\":\"2.0\",\"method\":\"cancel\",\"params\":{\"runId\":\"run-1\",\"callId\":\"1\"}}\n"
    );
    assert!(events(&mut conn).is_empty(), "the call stays open");
    conn.handle_data(0, &reply_line("1", r#"{"Ok":[]}"#));
    assert_eq!(closed(&events(&mut conn)).len(), 1);
}

#[test]
fn a_duplicate_or_misshapen_call_is_refused_at_the_host() {
    let mut conn = ready(&[&search_tool()]);
    conn.send_call(0, search_call("1")).unwrap();
    assert_eq!(
        conn.send_call(0, search_call("1")),
        Err(SendError::Duplicate(CallKey::new("run-1", "1")))
    );
    assert_eq!(
        conn.send_call(0, call(&search_tool(), "2", vec![])),
        Err(SendError::Arity { want: 2, given: 0 })
    );
}

/// The host machine yields the same events whatever the split of its input.
#[test]
fn any_split_of_the_output_yields_the_same_events() {
    let search = search_tool();
    let mut input = describe_line(1, &[&search], DATA_VERSION);
    input.extend(reply_line("2", hit_list()));
    input.extend(b"junk\n");
    input.extend(reply_line("1", r#"{"Failed":"x"}"#));
    let run = |split: usize| {
        let mut conn = HostConn::new(Limits::default());
        conn.send_call(0, search_call("1")).unwrap();
        conn.send_call(0, search_call("2")).unwrap();
        conn.handle_started(0);
        for piece in input.chunks(split) {
            conn.handle_data(0, piece);
        }
        events(&mut conn)
    };
    let whole = run(input.len());
    assert_eq!(closed(&whole).len(), 2);
    for split in 1..40 {
        assert_eq!(run(split), whole, "split {split}");
    }
}

// ---- the implementation's side ----

fn toolkit() -> ToolkitConn {
    ToolkitConn::new(
        vec![search_tool(), generic_tool()],
        ToolkitLimits::default(),
    )
}

fn toolkit_events(conn: &mut ToolkitConn) -> Vec<ToolkitEvent> {
    std::iter::from_fn(|| conn.poll_event()).collect()
}

fn toolkit_out(conn: &mut ToolkitConn) -> String {
    let out = conn.pending_output().to_vec();
    conn.consume_output(0, out.len());
    String::from_utf8(out).unwrap()
}

#[test]
fn the_toolkit_answers_describe_with_its_declarations_own_fingerprints() {
    let mut tk = toolkit();
    tk.handle_data(
        0,
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"describe\"}\n",
    );
    let out = toolkit_out(&mut tk);
    let response: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(response["id"], 1);
    let described = listing::Described::from_json(response["result"].clone()).unwrap();
    assert_eq!(described.data, DataVersion::ours());
    let search = search_tool();
    assert_eq!(
        described.tools.get(search.identity()),
        Some(&search.fingerprint)
    );
    // Each listed signature's own fingerprint is the one listed.
    let listing = Listing::from_json(&response["result"]).unwrap();
    assert_eq!(listing.tools.len(), 2);
}

#[test]
fn the_toolkit_decodes_args_and_answers_what_cannot_run_not_run() {
    let mut tk = toolkit();
    let call = |id: &str, tool: &str, args: &str| {
        format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"call\",\"params\":{{\"runId\":\"r\",\"callId\":\"{id}\",\"tool\":\"{tool}\",\"args\":{args}}}}}\n"
        )
    };
    let search = "example.com/acme@1.2.0/search.flow.search";
    let mut input = call(
        "1",
        search,
        r#"{"query":"q","limit":123456789012345678901234567890}"#,
    );
    input += &call("2", search, r#"{"query":"q","limit":1.5}"#);
    input += &call("3", search, r#"{"query":"q"}"#);
    input += &call("4", search, r#"{"query":"q","limit":1,"extra":true}"#);
    input += &call("5", "example.com/acme@1.2.0/search.flow.other", "{}");
    input += &call(
        "6",
        "example.com/acme@1.2.0/json.flow.parse",
        r#"{"text":"x"}"#,
    )
    .replace("}}}\n", r#"},"expects":{"type":"integer"}}}"#);
    input += "\n";
    tk.handle_data(0, input.as_bytes());
    let evs = toolkit_events(&mut tk);
    let limit = crate::flow::number::Int(
        dashu_int::IBig::from_str_radix("123456789012345678901234567890", 10).unwrap(),
    );
    assert_eq!(
        evs,
        [
            ToolkitEvent::Call(Incoming {
                key: CallKey::new("r", "1"),
                tool: 0,
                args: vec![Value::text("q"), Value::Int(limit)],
                expects: None,
            }),
            ToolkitEvent::Call(Incoming {
                key: CallKey::new("r", "6"),
                tool: 1,
                args: vec![Value::text("x")],
                expects: Some(serde_json::json!({"type": "integer"})),
            }),
        ]
    );
    let out = toolkit_out(&mut tk);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4);
    assert!(lines[0].starts_with(
        r#"{"jsonrpc":"2.0","method":"reply","params":{"runId":"r","callId":"2","outcome":{"NotRun":"the args do not decode: the argument `limit` does not decode: $: "#
    ), "{}", lines[0]);
    assert_eq!(
        lines[1],
        r#"{"jsonrpc":"2.0","method":"reply","params":{"runId":"r","callId":"3","outcome":{"NotRun":"the args do not decode: the parameter `limit` has no argument"}}}"#
    );
    assert_eq!(
        lines[2],
        r#"{"jsonrpc":"2.0","method":"reply","params":{"runId":"r","callId":"4","outcome":{"NotRun":"the args do not decode: the Tool has no parameter `extra`"}}}"#
    );
    assert_eq!(
        lines[3],
        r#"{"jsonrpc":"2.0","method":"reply","params":{"runId":"r","callId":"5","outcome":{"NotRun":"this implementation serves no Tool `example.com/acme@1.2.0/search.flow.other`"}}}"#
    );
    assert!(tk.reply(0, &CallKey::new("r", "1"), &Reply::Ok(Value::List(vec![]))));
    assert!(
        !tk.reply(0, &CallKey::new("r", "1"), &Reply::Ok(Value::List(vec![]))),
        "a call is answered at most once"
    );
    assert_eq!(
        toolkit_out(&mut tk),
        "{\"jsonrpc\":\"2.0\",\"method\":\"reply\",\"params\":{\"runId\":\"r\",\"callId\":\"1\",\"outcome\":{\"Ok\":[]}}}\n"
    );
}

/// The end of input ends nothing the host asked for: a call yielded is
/// still answered after it, and a last line with no newline (no message:
/// every message ends in one) is dropped, and said to be; nothing read
/// after the end counts.
#[test]
fn the_toolkit_drops_an_unfinished_last_line_and_still_answers() {
    let mut tk = toolkit();
    let line = "{\"jsonrpc\":\"2.0\",\"method\":\"call\",\"params\":{\"runId\":\"r\",\"callId\":\"1\",\"tool\":\"example.com/acme@1.2.0/search.flow.search\",\"args\":{\"limit\":1,\"query\":\"q\"}}}";
    tk.handle_data(0, format!("{line}\n").as_bytes());
    tk.handle_data(0, &line.as_bytes()[..20]);
    assert_eq!(toolkit_events(&mut tk).len(), 1, "the whole call");
    tk.handle_eof(5);
    assert!(tk.input_ended());
    assert_eq!(
        toolkit_events(&mut tk),
        [ToolkitEvent::Dropped(
            "a last line of 20 bytes with no newline at the end of input: dropped".into()
        )]
    );
    tk.handle_data(6, format!("{line}\n").as_bytes());
    assert!(
        toolkit_events(&mut tk).is_empty(),
        "nothing is read after the end"
    );
    assert_eq!(tk.open_calls(), 1);
    assert!(tk.reply(7, &CallKey::new("r", "1"), &Reply::Ok(Value::List(vec![]))));
    assert!(toolkit_out(&mut tk).contains("\"callId\":\"1\",\"outcome\":{\"Ok\":[]}"));
    assert_eq!(tk.poll_timeout(), None, "the toolkit has no timer");

    // Blanks cut by the end are no line.
    let mut tk = toolkit();
    tk.handle_data(0, b"\n \r");
    tk.handle_eof(0);
    assert!(toolkit_events(&mut tk).is_empty());
}

/// Output is taken a little at a time: what is pending is what was queued
/// less what was reported written, in order, and queuing more while a
/// write is under way keeps the order.
#[test]
fn the_toolkit_hands_out_its_output_in_pieces() {
    let mut tk = toolkit();
    tk.handle_data(0, b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"nope\"}\n");
    let whole = tk.pending_output().to_vec();
    assert!(whole.ends_with(b"\n"));
    tk.consume_output(0, 10);
    assert_eq!(tk.pending_output(), &whole[10..]);
    tk.handle_data(0, b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"nope\"}\n");
    let second = String::from_utf8(tk.pending_output()[whole.len() - 10..].to_vec()).unwrap();
    assert!(
        second.starts_with("{\"jsonrpc\":\"2.0\",\"id\":2,"),
        "{second}"
    );
    tk.consume_output(0, usize::MAX);
    assert!(
        tk.pending_output().is_empty(),
        "a count past the end is all of it"
    );
}

/// The describe deadline's message names the timeout set, exactly.
#[test]
fn a_describe_timeout_names_the_limit_in_force() {
    for (timeout, said) in [
        (1500 * crate::SECOND / 1000, "1500 ms"),
        (3 * crate::SECOND, "3 s"),
        (1_000_001, "1000001 ns"),
    ] {
        let limits = Limits {
            describe_timeout: timeout,
            ..Limits::default()
        };
        let mut conn = HostConn::new(limits.clone());
        conn.describe(0);
        conn.handle_started(0);
        conn.handle_timeout(timeout);
        assert_eq!(
            events(&mut conn)[1],
            HostEvent::Described(Err(format!("did not describe itself within {said}")))
        );
        let mut mcp = McpConn::new(vec![search_tool()], limits);
        mcp.describe(0);
        mcp.handle_started(0);
        mcp.handle_timeout(timeout);
        assert!(events(&mut mcp).contains(&HostEvent::Described(Err(format!(
            "did not complete its handshake and list its tools within {said}"
        )))));
    }
}

/// The MCP adapter gives up on a server after the pages its limits allow,
/// and says how many.
#[test]
fn mcp_list_pages_are_bounded_by_the_limit_in_force() {
    let limits = Limits {
        max_list_pages: 2,
        ..Limits::default()
    };
    let mut conn = McpConn::new(vec![search_tool()], limits);
    conn.describe(0);
    conn.handle_started(0);
    conn.handle_data(0, &mcp_line(r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}"#));
    conn.handle_data(
        0,
        &mcp_line(r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[],"nextCursor":"p2"}}"#),
    );
    conn.handle_data(
        0,
        &mcp_line(r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[],"nextCursor":"p3"}}"#),
    );
    assert!(events(&mut conn).contains(&HostEvent::Described(Err(
        "listed more than 2 pages of tools".into()
    ))));
}

/// The host's and the toolkit's machines, wired back to back, agree on
/// every message: describe, calls out of order, replies of every kind.
#[test]
fn host_and_toolkit_machines_speak_one_protocol() {
    let search = search_tool();
    let parse = generic_tool();
    let mut host = HostConn::new(Limits::default());
    let mut tk = ToolkitConn::new(
        vec![search.clone(), parse.clone()],
        ToolkitLimits::default(),
    );
    for i in 0..4 {
        host.send_call(0, search_call(&i.to_string())).unwrap();
    }
    let mut p = call(&parse, "p", vec![Value::text("[1,2]")]);
    p.type_args = vec![Type::list(Type::Int)];
    host.send_call(0, p).unwrap();
    host.handle_started(0);
    let mut outcomes = Vec::new();
    for _round in 0..4 {
        let wire = host.pending_output().to_vec();
        host.consume_output(0, wire.len());
        tk.handle_data(0, &wire);
        // Answer in reverse order of arrival, one of each kind.
        let calls: Vec<Incoming> = toolkit_events(&mut tk)
            .into_iter()
            .filter_map(|e| match e {
                ToolkitEvent::Call(c) => Some(c),
                _ => None,
            })
            .collect();
        for c in calls.iter().rev() {
            let reply = match (c.tool, c.key.call.as_str()) {
                (1, _) => {
                    assert_eq!(
                        c.expects.as_ref().map(|s| s["type"].clone()),
                        Some("array".into())
                    );
                    Reply::Ok(Value::Json(
                        crate::flow::decode::parse_json_value(b"[1,2]", &Default::default())
                            .unwrap(),
                    ))
                }
                (_, "0") => Reply::Ok(Value::List(vec![Value::record(vec![
                    ("title", Value::text("t")),
                    (
                        "score",
                        Value::Decimal(crate::flow::number::Decimal::new(
                            dashu_int::IBig::from(25),
                            -2,
                        )),
                    ),
                ])])),
                (_, "1") => Reply::Failed(Value::text("nope")),
                (_, "2") => Reply::NotRun("rate limited".into()),
                _ => Reply::Unknown("lost the upstream".into()),
            };
            assert!(tk.reply(0, &c.key, &reply));
        }
        let back = tk.pending_output().to_vec();
        tk.consume_output(0, back.len());
        host.handle_data(0, &back);
        outcomes.extend(closed(&events(&mut host)));
    }
    outcomes.sort_by(|a, b| a.0.cmp(&b.0));
    let texts: Vec<String> = outcomes
        .iter()
        .map(|(id, o)| format!("{id} {}", o.to_json()))
        .collect();
    assert_eq!(
        texts,
        [
            r#"0 {"Ok":[{"score":0.25,"title":"t"}]}"#,
            r#"1 {"Failed":"nope"}"#,
            r#"2 {"NotRun":"rate limited"}"#,
            r#"3 {"Unknown":"lost the upstream"}"#,
            r#"p {"Ok":[1,2]}"#,
        ]
    );
    // The generic call's value was decoded at List<Int>, not kept as JSON.
    assert!(
        matches!(&outcomes[4].1, Outcome::Ok(Value::List(items)) if items == &vec![Value::int(1), Value::int(2)])
    );
}

/// The one-pass readers agree with the general path on every line they
/// take, and leave it every line they do not.
#[test]
fn the_fast_paths_read_exactly_what_the_general_path_reads() {
    use proptest::prelude::*;
    use proptest::test_runner::TestRunner;
    let piece = prop_oneof![
        Just(r#""jsonrpc":"2.0""#.to_owned()),
        Just(r#""jsonrpc":"1.0""#.to_owned()),
        Just(r#""method":"reply""#.to_owned()),
        Just(r#""method":"call""#.to_owned()),
        Just(r#""id":1"#.to_owned()),
        Just(r#""params":{"runId":"r","callId":"1","outcome":{"Ok":[1]}}"#.to_owned()),
        Just(
            r#""params":{"callId":"1","runId":"r","outcome":{"NotRun":"x"},"runId":"s"}"#
                .to_owned()
        ),
        Just(r#""params":{"runId":"r","callId":"1","outcome":{"Ok":1,"Failed":2}}"#.to_owned()),
        Just(r#""params":{"runId":"r","callId":"1","outcome":{"Unknown":3}}"#.to_owned()),
        Just(r#""params":{"runId":"r","callId":"1","tool":"t","args":{"a":1}}"#.to_owned()),
        Just(
            r#""params":{"runId":"r","callId":"1","tool":"t","args":{"a":1},"expects":{}}"#
                .to_owned()
        ),
        Just(r#""params":{"run\u0049d":"r","callId":"1","tool":"t","args":[]}"#.to_owned()),
        Just(r#""extra":null"#.to_owned()),
    ];
    let line = proptest::collection::vec(piece, 0..5).prop_map(|p| format!("{{{}}}", p.join(",")));
    let mut runner = TestRunner::default();
    runner
        .run(&line, |line| {
            let bytes = line.as_bytes();
            if let Some((key, outcome)) = protocol::fast_reply(bytes) {
                let Ok(jsonrpc_message) = crate::json::jsonrpc::parse(bytes) else {
                    panic!("fast took what is not JSON-RPC: {line}");
                };
                let crate::json::jsonrpc::Message::Notification { method, params } =
                    jsonrpc_message
                else {
                    panic!("fast took a non-notification: {line}");
                };
                assert_eq!(method, "reply");
                let (k, o) = protocol::parse_reply(params.unwrap()).unwrap();
                assert_eq!(k, CallKey::new(&key.0, &key.1), "{line}");
                assert_eq!(
                    format!("{:?}", o.unwrap()),
                    format!("{outcome:?}"),
                    "{line}"
                );
            }
            if let Some(call) = protocol::fast_call(bytes) {
                let Ok(crate::json::jsonrpc::Message::Notification { method, params }) =
                    crate::json::jsonrpc::parse(bytes)
                else {
                    panic!("fast took what is not a notification: {line}");
                };
                assert_eq!(method, "call");
                let general = protocol::parse_call(params.unwrap()).unwrap();
                assert_eq!(format!("{general:?}"), format!("{call:?}"), "{line}");
            }
            Ok(())
        })
        .unwrap();
}

// ---- the MCP adapter, against a scripted server ----

fn mcp_line(s: &str) -> Vec<u8> {
    format!("{s}\n").into_bytes()
}

#[test]
fn the_mcp_adapter_handshakes_lists_every_page_and_maps_results() {
    let search = search_tool();
    let mut conn = McpConn::new(vec![search.clone(), generic_tool()], Limits::default());
    conn.send_call(0, search_call("1")).unwrap();
    // Another run's call with the same history id waits for the first.
    let mut other = search_call("1");
    other.key.run = "run-2".into();
    conn.send_call(0, other).unwrap();
    assert_eq!(events(&mut conn), [HostEvent::Start]);
    conn.handle_started(0);
    let init = transmit(&mut conn);
    assert!(
        init.starts_with(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"limen","version":"#),
        "{init}"
    );
    conn.handle_data(0, &mcp_line(r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}"#));
    assert_eq!(
        transmit(&mut conn),
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{}}\n"
    );
    conn.handle_data(0, &mcp_line(r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"other","inputSchema":{}}],"nextCursor":"p2"}}"#));
    assert_eq!(
        transmit(&mut conn),
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":{\"cursor\":\"p2\"}}\n"
    );
    conn.handle_data(
        0,
        &mcp_line(
            r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"search","inputSchema":{}}]}}"#,
        ),
    );
    let evs = events(&mut conn);
    let HostEvent::Described(Ok(described)) = &evs[0] else {
        panic!("{evs:?}")
    };
    // Served: the declaration whose name the server lists; not the other.
    assert_eq!(described.tools.len(), 1);
    assert_eq!(
        described.tools.get(search.identity()),
        Some(&search.fingerprint)
    );
    assert_eq!(
        transmit(&mut conn),
        "{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"method\":\"tools/call\",\"params\":{\"name\":\"search\",\"arguments\":{\"limit\":2,\"query\":\"rust\"}}}\n",
        "only one call with id \"1\" is out"
    );
    // A ping is answered; two content blocks cannot be mapped.
    conn.handle_data(
        0,
        &mcp_line(r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#),
    );
    conn.handle_data(0, &mcp_line(r#"{"jsonrpc":"2.0","id":"1","result":{"content":[{"type":"text","text":"[]"},{"type":"text","text":"[]"}]}}"#));
    assert_eq!(
        closed(&events(&mut conn)),
        [(
            "1".into(),
            Outcome::BadReply(
                "the MCP result cannot be mapped: it has no structuredContent and 2 content \
                 blocks, not one text block"
                    .into()
            )
        )]
    );
    let out = transmit(&mut conn);
    assert!(
        out.starts_with("{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"result\":{}}\n"),
        "{out}"
    );
    assert!(
        out.contains(r#""id":"1","method":"tools/call""#),
        "the waiting call goes out: {out}"
    );
    // Its text block holds the JSON of the value.
    conn.handle_data(0, &mcp_line(r#"{"jsonrpc":"2.0","id":"1","result":{"content":[{"type":"text","text":"[{\"title\":\"a\",\"score\":2}]"}]}}"#));
    let got = closed(&events(&mut conn));
    assert_eq!(got[0].1.to_json(), r#"{"Ok":[{"score":2,"title":"a"}]}"#);
    // A cancel is notifications/cancelled.
    conn.send_call(0, search_call("5")).unwrap();
    transmit(&mut conn);
    conn.cancel(0, &CallKey::new("run-1", "5"));
    assert_eq!(
        transmit(&mut conn),
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"5\",\"reason\":\"cancelled by the host\"}}\n"
    );
    conn.handle_data(
        0,
        &mcp_line(r#"{"jsonrpc":"2.0","id":"5","error":{"code":-32800,"message":"cancelled"}}"#),
    );
    assert_eq!(
        closed(&events(&mut conn)),
        [(
            "5".into(),
            Outcome::BadReply(
                "the MCP server answered tools/call with error -32800: cancelled".into()
            )
        )]
    );
}

#[test]
fn an_mcp_server_of_another_protocol_version_is_not_described() {
    let mut conn = McpConn::new(vec![search_tool()], Limits::default());
    conn.describe(0);
    events(&mut conn);
    conn.handle_started(0);
    transmit(&mut conn);
    conn.handle_data(
        0,
        &mcp_line(r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"1999-01-01"}}"#),
    );
    assert_eq!(
        events(&mut conn),
        [
            HostEvent::Described(Err(
                "answered initialize with protocol version \"1999-01-01\", which the adapter does \
                 not speak"
                    .into()
            )),
            HostEvent::Stop
        ]
    );
}

/// The args decoded member by member, the slow way `decode_args` falls
/// back to: `None` when it refuses them.
fn args_the_slow_way(tool: &Tool, args: &[u8], limits: &DecodeLimits) -> Option<Vec<Value>> {
    let decl = &tool.declaration;
    let members = protocol::members(args).ok()?;
    let mut values: Vec<Option<Value>> = vec![None; decl.params.len()];
    for (name, raw) in members {
        let i = decl.params.iter().position(|p| p.name == name)?;
        let v = decoding::decode_at(raw, &decl.params[i].ty, &tool.env, &[], limits).ok()?;
        values[i] = Some(v);
    }
    values.into_iter().collect()
}

/// The one-pass args decoder accepts exactly what the member-by-member
/// reading accepts, with the same values, under tight limits too: where
/// it refuses, `decode_args` reads the args again the slow way, so its
/// errors are the slow way's.
#[test]
fn one_pass_args_decode_accepts_what_the_member_by_member_reading_does() {
    let decl = Declaration::new(
        Identity::in_repository("example.com/r", "1.0.0", "t.flow", "t"),
        vec![
            Param::new("b", Type::List(Box::new(Type::List(Box::new(Type::Int))))),
            Param::new("a", Type::Text),
        ],
        Type::Text,
        Type::Text,
    );
    let tool = Tool::new(decl, TypeEnv::new()).unwrap();
    let texts: &[&str] = &[
        r#"{"a":"x","b":[[1],[2,3]]}"#,
        r#"{"b":[],"a":"x"}"#,
        r#" { "a" : "x" , "b" : [ ] } "#,
        r#"{"a":"x"}"#,
        r#"{"a":"x","b":[],"a":"y"}"#,
        r#"{"a":"x","b":[],"c":1}"#,
        r#"{"a":1,"b":[]}"#,
        r#"{"a":"x","b":[[1.5]]}"#,
        r#"{"a":"x","b":[[1]]"#,
        r#"{"a":"x","b":[[1]]} x"#,
        r#"{"a":"\u00e9\n","b":[[1e2]]}"#,
        r#"{"a":"x","b":[[100000000000000000000000000000]]}"#,
        r#"[]"#,
        r#"{}"#,
    ];
    let tight = DecodeLimits {
        max_depth: 1,
        max_bytes: 12,
        ..DecodeLimits::default()
    };
    let shallow = DecodeLimits {
        max_depth: 2,
        ..DecodeLimits::default()
    };
    let shallower = DecodeLimits {
        max_depth: 1,
        ..DecodeLimits::default()
    };
    for limits in [DecodeLimits::default(), tight, shallow, shallower] {
        for text in texts {
            let slow = args_the_slow_way(&tool, text.as_bytes(), &limits);
            let fast = crate::flow::decode::decode_members_fast(
                text.as_bytes(),
                &[("b", &tool.declaration.params[0].ty), ("a", &Type::Text)],
                &tool.env,
                &[],
                &limits,
                crate::json::DEFAULT_MAX_DEPTH,
            );
            if let Some(fast) = &fast {
                assert_eq!(Some(fast), slow.as_ref(), "{text} under {limits:?}");
            }
            let decoded = toolkit::decode_args(&tool, text.as_bytes(), &[], &limits).ok();
            assert_eq!(decoded, slow, "{text} under {limits:?}");
        }
    }
}

mod deadline;
