//! The exact reading against the general one: each machine run twice over
//! the same lines, once reading the writer's form in place and once not,
//! must yield the same events and write the same bytes. The lines are the
//! writers' own output for many values, hand-made near misses, and
//! deterministic mutations of both.

use std::sync::Arc;

use super::*;
use crate::flow::fingerprint::{Declaration, Param};
use crate::flow::identity::Identity;
use crate::flow::tool::listing::{describe_result, Tool};
use crate::flow::tool::protocol::{write_call, write_reply, Reply};
use crate::flow::tool::toolkit::{ToolkitConn, ToolkitEvent, ToolkitLimits};
use crate::flow::tool::{Call, CallKey, HostConn, HostEvent, Limits, ToolConn};
use crate::flow::types::{Field, TypeDecl, TypeEnv};

fn tool(name: &str, params: Vec<Param>, ok: Type, err: Type, env: TypeEnv) -> Arc<Tool> {
    let decl = Declaration::new(
        Identity::in_repository("example.com/x", "1.0.0", "t.flow", name),
        params,
        ok,
        err,
    );
    Arc::new(Tool::new(decl, env).unwrap())
}

/// Tools of every kind the exact reading treats differently: scalar
/// params and outcomes, a compound outcome, a compound param, a generic.
fn tools() -> Vec<Arc<Tool>> {
    let hit = Identity::in_repository("example.com/x", "1.0.0", "t.flow", "Hit");
    let mut env = TypeEnv::new();
    env.declare(TypeDecl::record(
        hit.clone(),
        vec![
            Field::new("title", Type::Text),
            Field::new("score", Type::Decimal),
        ],
    ));
    let generic = Declaration::new(
        Identity::in_repository("example.com/x", "1.0.0", "t.flow", "parse"),
        vec![Param::new("text", Type::Text)],
        Type::param("T"),
        Type::Text,
    )
    .generic(&["T"]);
    vec![
        tool(
            "echo",
            vec![Param::new("text", Type::Text)],
            Type::Text,
            Type::Text,
            TypeEnv::new(),
        ),
        tool(
            "search",
            vec![
                Param::new("query", Type::Text),
                Param::new("limit", Type::Int),
                Param::new("a!", Type::Bool),
                Param::new("a", Type::Bool),
            ],
            Type::list(Type::named(hit)),
            Type::Int,
            env,
        ),
        tool(
            "sum",
            vec![Param::new("xs", Type::list(Type::Int))],
            Type::Int,
            Type::Bool,
            TypeEnv::new(),
        ),
        Arc::new(Tool::new(generic, TypeEnv::new()).unwrap()),
    ]
}

/// A small deterministic generator (no entropy in core, and a failure
/// must replay).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Decoding limits a few of the test values pass: strings, integers and
/// texts just short of and past them.
fn tight_decoding() -> DecodeLimits {
    DecodeLimits {
        max_string_bytes: 4,
        max_int_digits: 3,
        max_bytes: 6,
        ..DecodeLimits::default()
    }
}

/// `lines` as they are, then `rounds - 1` more times each mutated, every
/// one ending in a newline.
fn with_mutations<'a>(
    lines: &'a [Vec<u8>],
    rounds: usize,
    rng: &'a mut Lcg,
) -> impl Iterator<Item = Vec<u8>> + 'a {
    (0..lines.len() * rounds).map(move |n| {
        let base = &lines[n % lines.len()];
        let mut line = if n < lines.len() {
            base.clone()
        } else {
            mutate(base, rng)
        };
        line.push(b'\n');
        line
    })
}

/// `line` changed in one of a few ways, or not at all.
fn mutate(line: &[u8], rng: &mut Lcg) -> Vec<u8> {
    let mut out = line.to_vec();
    if out.is_empty() {
        return out;
    }
    let at = rng.below(out.len());
    const BYTES: &[u8] = b" \"\\{}[],:0123456789-.eE\x01\xc3\xa9\x7fatrufls";
    match rng.below(5) {
        0 => {
            out.remove(at);
        }
        1 => out.insert(at, BYTES[rng.below(BYTES.len())]),
        2 => out[at] = BYTES[rng.below(BYTES.len())],
        3 => out.truncate(at),
        _ => {}
    }
    out
}

fn texts() -> Vec<Value> {
    [
        "",
        "rust",
        "the quick brown fox jumps over the lazy dog",
        "é ü 日本",
        "quote \" and backslash \\",
        "line\nbreak\ttab",
        "\u{1}",
        "\u{7f}",
        "a much longer text that goes on past the eight-byte words of the scanner",
    ]
    .iter()
    .map(|t| Value::text(t))
    .collect()
}

fn ints() -> Vec<Value> {
    [
        0i64,
        1,
        -1,
        7,
        -42,
        999_999_999_999_999_999,
        -999_999_999_999_999_999,
        i64::MAX,
        i64::MIN,
    ]
    .into_iter()
    .map(Value::int)
    .collect()
}

fn host_pair(tools: &[Arc<Tool>], limits: &Limits) -> [HostConn; 2] {
    let mut conns = [HostConn::new(limits.clone()), HostConn::new(limits.clone())];
    conns[1].set_exact_reading(false);
    let result = serde_json::to_string(&describe_result(tools.iter())).unwrap();
    let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{result}}}\n");
    for conn in &mut conns {
        conn.describe(0);
        conn.handle_started(0);
        conn.handle_data(0, line.as_bytes());
        while conn.poll_event().is_some() {}
        let n = conn.pending_output().len();
        conn.consume_output(0, n);
    }
    conns
}

fn host_events(conn: &mut HostConn) -> (Vec<HostEvent>, Vec<u8>) {
    let events = std::iter::from_fn(|| conn.poll_event()).collect();
    let out = conn.pending_output().to_vec();
    conn.consume_output(0, out.len());
    (events, out)
}

/// Reply lines for call `id`: the writer's form of many outcomes, and
/// hand-made near misses.
fn reply_lines(id: &str) -> Vec<Vec<u8>> {
    let key = CallKey::new("run-1", id);
    let mut lines = Vec::new();
    let mut replies: Vec<Reply> = Vec::new();
    for v in texts().into_iter().chain(ints()) {
        replies.push(Reply::Ok(v.clone()));
        replies.push(Reply::Failed(v));
    }
    replies.push(Reply::Ok(Value::Bool(true)));
    replies.push(Reply::Ok(Value::List(vec![])));
    replies.push(Reply::NotRun("rate limited".into()));
    replies.push(Reply::Unknown("lost \"it\"".into()));
    replies.push(Reply::Unknown("é".into()));
    for r in &replies {
        let mut line = Vec::new();
        write_reply(&key, r, &mut line);
        lines.push(line);
    }
    let head = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"reply\",\"params\":{{\"runId\":\"run-1\",\"callId\":\"{id}\""
    );
    for tail in [
        r#","outcome":{"Ok":1.5}}}"#,
        r#","outcome":{"Ok":1e2}}}"#,
        r#","outcome":{"Ok":01}}}"#,
        r#","outcome":{"Ok":-}}}"#,
        r#","outcome":{"Ok":1},"x":{"y":2}}}"#,
        r#","outcome":{"Ok":"a"},"x":{"y":"b"}}}"#,
        r#","outcome":{"Ok": "spaced" }}}"#,
        r#","outcome":{"Ok":"a","Failed":"b"}}}"#,
        r#","outcome":{"Ok":}}}"#,
        r#","outcome":{"NotRun":1}}}"#,
        r#","outcome":{"NotRun":"a" }}}"#,
        r#","outcome":{"Unknown":"a\u0041"}}}"#,
        r#","outcome":{"Maybe":"a"}}}"#,
        r#","outcome":{"Ok":[{"title":"t","score":1.50}]}}}"#,
        r#","outcome":{"Ok":[{"title":"t","score":"x"}]}}}"#,
        r#","outcome":{"Ok":"x"}} }"#,
        r#","outcome":{"Ok":"x"}}}  "#,
        r#","outcome":{"Ok":"x"},"outcome":{"Ok":"y"}}}"#,
    ] {
        lines.push(format!("{head}{tail}").into_bytes());
    }
    lines.push(
        format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"reply\",\"params\":{{\"runId\":\"run\\u002d1\",\"callId\":\"{id}\",\"outcome\":{{\"Ok\":\"x\"}}}}}}"
        )
        .into_bytes(),
    );
    lines
}

#[test]
fn exact_reading_agrees_with_the_general_one_on_replies() {
    let tools = tools();
    let tight = Limits {
        decode: tight_decoding(),
        ..Limits::default()
    };
    let mut rng = Lcg(7);
    for limits in [Limits::default(), tight] {
        let mut conns = host_pair(&tools, &limits);
        let mut next = 0u64;
        let mut lines_checked = 0;
        for round in 0..4 {
            for (t, tool) in tools.iter().enumerate() {
                let id = next.to_string();
                next += 1;
                let type_args = if tool.declaration.generic.is_empty() {
                    Vec::new()
                } else {
                    vec![[Type::Text, Type::Int][round % 2].clone()]
                };
                let args = tool
                    .declaration
                    .params
                    .iter()
                    .map(|p| match p.ty {
                        Type::Text => Value::text("q"),
                        Type::Int => Value::int(1),
                        Type::Bool => Value::Bool(true),
                        _ => Value::List(vec![]),
                    })
                    .collect::<Vec<_>>();
                let send = |conns: &mut [HostConn; 2]| {
                    for conn in conns.iter_mut() {
                        let call = Call {
                            key: CallKey::new("run-1", &id),
                            tool: tool.clone(),
                            args: args.clone(),
                            type_args: type_args.clone(),
                        };
                        conn.send_call(0, call).unwrap();
                    }
                    let sent = [host_events(&mut conns[0]), host_events(&mut conns[1])];
                    assert_eq!(sent[0], sent[1]);
                };
                let lines = reply_lines(&id);
                for (n, line) in with_mutations(&lines, 3, &mut rng).enumerate() {
                    // Most lines meet the call open; every fifth, closed.
                    if conns[0].open_calls() == 0 && n % 5 != 4 {
                        send(&mut conns);
                    }
                    for conn in &mut conns {
                        conn.handle_data(0, &line);
                    }
                    let got = [host_events(&mut conns[0]), host_events(&mut conns[1])];
                    assert_eq!(
                        got[0],
                        got[1],
                        "tool {t}, line {}",
                        String::from_utf8_lossy(&line)
                    );
                    lines_checked += 1;
                }
                // Close what is left, so the next tool starts clean.
                for conn in &mut conns {
                    conn.abandon(0, &CallKey::new("run-1", &id));
                }
            }
        }
        assert!(lines_checked > 1000, "{lines_checked} lines");
    }
}

fn toolkit_pair(tools: &[Arc<Tool>], limits: &ToolkitLimits) -> [ToolkitConn; 2] {
    let mut conns = [
        ToolkitConn::new(tools.to_vec(), limits.clone()),
        ToolkitConn::new(tools.to_vec(), limits.clone()),
    ];
    conns[1].set_exact_reading(false);
    conns
}

fn toolkit_events(conn: &mut ToolkitConn) -> (Vec<ToolkitEvent>, Vec<u8>) {
    let events = std::iter::from_fn(|| conn.poll_event()).collect();
    let out = conn.pending_output().to_vec();
    conn.consume_output(0, out.len());
    (events, out)
}

/// Call lines: the writer's form for many arguments, and near misses.
fn call_lines(tools: &[Arc<Tool>], id: &str) -> Vec<Vec<u8>> {
    let mut lines = Vec::new();
    let key = CallKey::new("run-1", id);
    let write = |tool: &Arc<Tool>, args: Vec<Value>, type_args: Vec<Type>| {
        let mut line = Vec::new();
        let call = Call {
            key: key.clone(),
            tool: tool.clone(),
            args,
            type_args,
        };
        write_call(&call, &mut line).unwrap();
        line
    };
    for text in texts() {
        lines.push(write(&tools[0], vec![text.clone()], vec![]));
        lines.push(write(&tools[3], vec![text.clone()], vec![Type::Int]));
        for (limit, flag) in ints().into_iter().zip([true, false].into_iter().cycle()) {
            lines.push(write(
                &tools[1],
                vec![text.clone(), limit, Value::Bool(flag), Value::Bool(!flag)],
                vec![],
            ));
        }
    }
    lines.push(write(
        &tools[2],
        vec![Value::List(vec![Value::int(1), Value::int(2)])],
        vec![],
    ));
    let head = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"call\",\"params\":{{\"runId\":\"run-1\",\"callId\":\"{id}\",\"tool\":\"example.com/x@1.0.0/t.flow."
    );
    for tail in [
        r#"echo","args":{"text":"x"},"expects":{"type":"string"}}}"#,
        r#"echo","args":{"text":"x","text":"y"}}}"#,
        r#"echo","args":{"text":"x","other":1}}}"#,
        r#"echo","args":{}}}"#,
        r#"echo","args":{"text":1}}}"#,
        r#"echo","args":{ "text":"x"}}}"#,
        r#"echo","args":{"text":"x"}} }"#,
        r#"echo","args":{"text":"x"},"x":{"y":"z"}}}"#,
        r#"echo","args":{"text":"x"}}"#,
        r#"nothing","args":{"text":"x"}}}"#,
        r#"search","args":{"a":true,"a!":false,"limit":1.0,"query":"q"}}}"#,
        r#"search","args":{"a":true,"a!":false,"limit":1e1,"query":"q"}}}"#,
        r#"search","args":{"a!":false,"a":true,"limit":1,"query":"q"}}}"#,
        r#"search","args":{"a!":false,"a":tru,"limit":1,"query":"q"}}}"#,
        r#"search","args":{"a!":false,"a":true,"limit":-0,"query":"q"}}}"#,
        r#"search","args":{"a!":false,"a":true,"limit":00,"query":"q"}}}"#,
        r#"search","args":{"a!":false,"a":true,"limit":1234567890123456789,"query":"q"}}}"#,
        r#"sum","args":{"xs":[1,2,3]}}}"#,
        r#"sum","args":{"xs":[1,2,"3"]}}}"#,
    ] {
        lines.push(format!("{head}{tail}").into_bytes());
    }
    lines
}

#[test]
fn exact_reading_agrees_with_the_general_one_on_calls() {
    let tools = tools();
    let tight = ToolkitLimits {
        decode: tight_decoding(),
        ..ToolkitLimits::default()
    };
    let mut rng = Lcg(11);
    let mut yielded = 0;
    for limits in [ToolkitLimits::default(), tight] {
        let mut conns = toolkit_pair(&tools, &limits);
        for round in 0..3 {
            let id = round.to_string();
            let lines = call_lines(&tools, &id);
            for line in with_mutations(&lines, 4, &mut rng) {
                for conn in &mut conns {
                    conn.handle_data(0, &line);
                }
                let got = [toolkit_events(&mut conns[0]), toolkit_events(&mut conns[1])];
                assert_eq!(got[0], got[1], "line {}", String::from_utf8_lossy(&line));
                for event in &got[0].0 {
                    if let ToolkitEvent::Call(call) = event {
                        yielded += 1;
                        // Answered at once, so the key can be called again.
                        for conn in &mut conns {
                            assert!(conn.reply(0, &call.key, &Reply::NotRun("done".into())));
                        }
                    }
                }
                let replies = [toolkit_events(&mut conns[0]), toolkit_events(&mut conns[1])];
                assert_eq!(replies[0], replies[1]);
            }
        }
    }
    assert!(yielded > 100, "{yielded} calls yielded");
}

#[test]
fn the_writer_s_form_is_read_in_place() {
    let tools = tools();
    let key = CallKey::new("run-1", "7");
    let mut line = Vec::new();
    write_reply(&key, &Reply::Ok(Value::text("hi")), &mut line);
    assert_eq!(
        reply(&line),
        Some(("run-1", "7", ExactOutcome::Ok("\"hi\"")))
    );
    let mut line = Vec::new();
    write_reply(&key, &Reply::NotRun("no".into()), &mut line);
    assert_eq!(
        reply(&line),
        Some(("run-1", "7", ExactOutcome::NotRun("no")))
    );
    let call_line = {
        let mut line = Vec::new();
        let call = Call {
            key: key.clone(),
            tool: tools[1].clone(),
            args: vec![
                Value::text("q"),
                Value::int(-5),
                Value::Bool(true),
                Value::Bool(false),
            ],
            type_args: vec![],
        };
        write_call(&call, &mut line).unwrap();
        line
    };
    let read = call(&call_line).unwrap();
    assert_eq!((read.run, read.call), ("run-1", "7"));
    assert_eq!(read.tool, "example.com/x@1.0.0/t.flow.search");
    let plan = ArgsPlan::of(&tools[1].declaration.params).unwrap();
    assert_eq!(
        plan.decode(read.args, &DecodeLimits::default()),
        Some(vec![
            Value::text("q"),
            Value::int(-5),
            Value::Bool(true),
            Value::Bool(false)
        ])
    );
    // A compound parameter has no plan: the decoder reads those args.
    assert!(ArgsPlan::of(&tools[2].declaration.params).is_none());
    // Escapes are the general path's.
    assert_eq!(
        Scalar::Text.decode(r#""a\n""#, &DecodeLimits::default()),
        None
    );
    assert_eq!(Scalar::Int.decode("1.0", &DecodeLimits::default()), None);
    assert_eq!(
        Scalar::Int.decode("-0", &DecodeLimits::default()),
        Some(Value::int(0))
    );
}
