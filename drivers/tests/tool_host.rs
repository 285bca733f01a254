//! The host driver against real processes: the fixture Tool written with
//! each of limen's toolkits (Rust: `tool-fixture-echo`; Python:
//! `toolkits/python/tests/fixture/echo_tool.py`; TypeScript:
//! `toolkits/typescript/test/fixture/echo-tool.ts`), every protocol
//! test run against each, and a process that breaks the protocol on request
//! (`tool-fixture-rogue`).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use limen_core::flow::tool::binding::RepositoryConfig;
use limen_core::flow::tool::{CallKey, Implementation, Limits, Listing, Outcome, Tool, ToolConfig};
use limen_core::flow::{decode, Identity, Limits as DecodeLimits, Type, Value};
use limen_drivers::tool::{Host, HostOptions};

const ECHO: &str = env!("CARGO_BIN_EXE_tool-fixture-echo");
const ROGUE: &str = env!("CARGO_BIN_EXE_tool-fixture-rogue");
const REPO: &str = "example.com/limen-fixtures";

fn listing() -> Listing {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../toolkit/tests/fixtures/listing.json"
    );
    Listing::parse(&std::fs::read(path).unwrap()).unwrap()
}

fn id(name: &str) -> Identity {
    Identity::in_repository(REPO, "0.3.0", "echo.flow", name)
}

fn tools(names: &[&str]) -> Vec<Arc<Tool>> {
    let l = listing();
    names
        .iter()
        .map(|n| l.get(&id(n)).unwrap().clone())
        .collect()
}

fn command(program: &str, args: &[&str]) -> Implementation {
    let mut line = format!("'{program}'");
    for a in args {
        line.push_str(&format!(" '{a}'"));
    }
    Implementation::Command {
        command: line,
        dir: None,
    }
}

fn bind_with(names: &[&str], implementation: Implementation, limits: Limits) -> Host {
    let tools = tools(names);
    let options = HostOptions {
        overrides: tools
            .iter()
            .map(|t| (t.identity().clone(), implementation.clone()))
            .collect(),
        limits,
        ..HostOptions::default()
    };
    let binding = Host::bind(&tools, &options);
    match binding.host {
        Some(host) => host,
        None => panic!("{}", binding.report.refusal().unwrap_or_default()),
    }
}

/// A toolkit whose fixture Tool the protocol tests run against: each
/// fixture is the same Tools (`toolkit/tests/fixtures/listing.json`),
/// written with that toolkit over the code its generator made.
#[derive(Clone, Copy, Debug)]
enum Kit {
    Rust,
    /// `toolkits/python/tests/fixture/echo_tool.py`, run by the peers'
    /// Python.
    Python,
    /// `toolkits/typescript/test/fixture/echo-tool.ts`, compiled by
    /// `limen_clients::ts_toolkit` and run by node.
    TypeScript,
}

/// The fixture's command line (program and arguments), or None when what
/// runs it is missing here (said by `absent`).
fn fixture(kit: Kit) -> Option<Vec<String>> {
    match kit {
        Kit::Rust => Some(vec![ECHO.into(), "--workers".into(), "4".into()]),
        // The Python toolkit's fixture finds its package from its own place.
        Kit::Python => {
            let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
            let python = root.join(".peers/venv/bin/python");
            if !python.exists() {
                limen_clients::absent("the peers' Python venv (.peers/venv) is absent");
                return None;
            }
            let script = root.join("toolkits/python/tests/fixture/echo_tool.py");
            Some(vec![
                python.to_string_lossy().into_owned(),
                script.to_string_lossy().into_owned(),
            ])
        }
        Kit::TypeScript => limen_clients::ts_fixture_command(),
    }
}

fn implementation(line: &[String]) -> Implementation {
    let (program, args) = line.split_first().unwrap();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    command(program, &args)
}

fn echo_host(line: &[String]) -> Host {
    bind_with(
        &["echo", "add", "fail", "crash", "identity", "note", "grow"],
        implementation(line),
        Limits::default(),
    )
}

fn key(call: &str) -> CallKey {
    CallKey::new("run-7", call)
}

fn text(host: &Host, call: &str, t: &str) -> Outcome {
    host.call(key(call), &id("echo"), vec![Value::text(t)], vec![])
}

/// `json` decoded at the declared type of parameter `param` of `tool`.
fn arg(tool: &str, param: usize, json: &str) -> Value {
    let tool = tools(&[tool]).remove(0);
    let ty = &tool.declaration.params[param].ty;
    decode(json.as_bytes(), ty, &tool.env, &DecodeLimits::default()).unwrap()
}

/// A scratch path of this test process's own.
fn scratch(name: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("limen-tool-host-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

fn every_kind_of_outcome(kit: Kit) {
    let Some(line) = fixture(kit) else { return };
    let host = echo_host(&line);
    assert_eq!(text(&host, "1", "hello"), Outcome::Ok(Value::text("hello")));
    // Integers past 2^64, both ways.
    let big = Value::Int(limen_core::flow::Int(dashu_int::IBig::from(10u8).pow(40)));
    assert_eq!(
        host.call(key("2"), &id("add"), vec![big, Value::int(1)], vec![])
            .to_json(),
        format!(r#"{{"Ok":1{}1}}"#, "0".repeat(39))
    );
    assert_eq!(
        host.call(
            key("2n"),
            &id("add"),
            vec![arg("add", 0, "-18446744073709551616"), Value::int(-1)],
            vec![]
        )
        .to_json(),
        r#"{"Ok":-18446744073709551617}"#
    );
    // A decimal of 40 digits crosses exact.
    let note = arg(
        "note",
        0,
        r#"{"text":"n","tags":["a","b"],"weight":123456789012345678901234567890.1234567891}"#,
    );
    assert_eq!(
        host.call(key("2d"), &id("note"), vec![note], vec![])
            .to_json(),
        r#"{"Ok":{"tags":["a","b"],"text":"n","weight":123456789012345678901234567890.1234567891}}"#
    );
    assert_eq!(
        host.call(key("3"), &id("fail"), vec![Value::text("no")], vec![])
            .to_json(),
        r#"{"Failed":{"Refused":"no"}}"#
    );
    match host.call(key("4"), &id("crash"), vec![Value::text("panic")], vec![]) {
        Outcome::Unknown(why) => assert!(why.contains("asked to panic"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        host.call(key("5"), &id("crash"), vec![Value::text("quietly")], vec![]),
        Outcome::Unknown("asked to stop: quietly".into())
    );
    // A generic Tool: the value crosses as JSON, the reply decodes at the
    // type the caller expects.
    let outcome = host.call(
        key("6"),
        &id("identity"),
        vec![Value::int(5)],
        vec![Type::Int],
    );
    assert_eq!(
        outcome.to_json(),
        r#"{"Ok":{"items":[5],"next":"\"https://json-schema.org/draft/2020-12/schema\""}}"#
    );
    let tree = r#"{"Ok":{"children":[{"children":[],"label":"t/leaf"}],"label":"t"}}"#;
    let t = Value::record(vec![
        ("label", Value::text("t")),
        ("children", Value::List(vec![])),
        ("parent", Value::none()),
    ]);
    assert_eq!(
        host.call(key("7"), &id("grow"), vec![t], vec![]).to_json(),
        tree
    );
    host.shutdown();
}

fn many_calls_in_flight(kit: Kit) {
    let Some(line) = fixture(kit) else { return };
    let host = echo_host(&line);
    let pending: Vec<_> = (0..256)
        .map(|i| {
            host.start_call(
                key(&format!("c{i}")),
                &id("echo"),
                vec![Value::text(&format!("t{i}"))],
                vec![],
            )
            .unwrap()
        })
        .collect();
    for (i, rx) in pending.into_iter().enumerate() {
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(20)).unwrap(),
            Outcome::Ok(Value::text(&format!("t{i}")))
        );
    }
    host.shutdown();
}

/// Talks to a process line by line, for what the host never sends.
fn raw_exchange(line: &[String], lines: &[&str]) -> Vec<serde_json::Value> {
    raw_lines(line, lines)
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// [`raw_exchange`]'s replies as the process wrote them (integers past
/// 2^64 exact).
fn raw_lines(line: &[String], lines: &[&str]) -> Vec<String> {
    let mut child = Command::new(&line[0])
        .args(&line[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for l in lines {
        writeln!(stdin, "{l}").unwrap();
    }
    drop(stdin);
    let out = BufReader::new(child.stdout.take().unwrap());
    let replies = out.lines().map(|l| l.unwrap()).collect();
    child.wait().unwrap();
    replies
}

fn args_that_do_not_decode_and_tools_it_lacks(kit: Kit) {
    let Some(line) = fixture(kit) else { return };
    let tool = |name: &str| format!("{REPO}@0.3.0/echo.flow.{name}");
    let call = |id: &str, tool: &str, args: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"call","params":{{"runId":"r","callId":"{id}","tool":"{tool}","args":{args}}}}}"#
        )
    };
    let replies = raw_exchange(
        &line,
        &[
            &call("1", &tool("add"), r#"{"a":1,"b":"2"}"#),
            &call("2", &tool("nothing"), "{}"),
            &call("3", &tool("add"), r#"{"a":[1],"b":2}"#),
            r#"{"jsonrpc":"2.0","id":9,"method":"frobnicate"}"#,
        ],
    );
    // Replies come in any order: find each by its call id.
    let by_id = |id: &str| {
        replies
            .iter()
            .find(|r| r["params"]["callId"] == id)
            .unwrap_or_else(|| panic!("no reply to {id}: {replies:?}"))
            .clone()
    };
    let outcome = |r: &serde_json::Value| r["params"]["outcome"].clone();
    let replies = [
        by_id("1"),
        by_id("2"),
        by_id("3"),
        replies.iter().find(|r| r["id"] == 9).unwrap().clone(),
    ];
    assert_eq!(
        outcome(&replies[0]),
        serde_json::json!({"NotRun": "the args do not decode: the argument `b` does not decode: $: expected Int, found \"2\""})
    );
    assert_eq!(
        outcome(&replies[1]),
        serde_json::json!({"NotRun": format!("this implementation serves no Tool `{}`", tool("nothing"))})
    );
    assert!(
        outcome(&replies[2])["NotRun"]
            .as_str()
            .unwrap()
            .starts_with("the args do not decode: the argument `a` does not decode: $: "),
        "{}",
        replies[2]
    );
    assert_eq!(replies[3]["error"]["code"], -32601);
}

/// The host's cancel reaches the code of a call that a toolkit process is
/// running: the handler, waiting on its token, stops, and its own outcome
/// is the call's (Unknown: it stopped midway), long before its own half
/// minute. The handler makes a file once it runs, so the cancel is sent
/// to a running call, never a queued one.
fn a_cancel_reaches_the_running_handler(kit: Kit) {
    let Some(line) = fixture(kit) else { return };
    let host = echo_host(&line);
    let started = scratch(&format!("{kit:?}-cancel-started"));
    let how = format!("when cancelled {}", started.display());
    let begun = std::time::Instant::now();
    let outcome = std::thread::scope(|s| {
        let call = s.spawn(|| host.call(key("c"), &id("crash"), vec![Value::text(&how)], vec![]));
        while !started.exists() {
            assert!(!call.is_finished(), "the call ended before it ran");
            std::thread::sleep(Duration::from_millis(5));
        }
        host.cancel(&id("crash"), &key("c"));
        call.join().unwrap()
    });
    let _ = std::fs::remove_file(&started);
    assert_eq!(
        outcome,
        Outcome::Unknown("stopped: the host cancelled the call".into())
    );
    assert!(begun.elapsed() < Duration::from_secs(20));
    // The process serves on.
    assert_eq!(
        text(&host, "after", "still"),
        Outcome::Ok(Value::text("still"))
    );
    host.shutdown();
}

/// A process that dies mid-call leaves the call Unknown (it may have run),
/// and the next call starts the process again.
fn a_crash_mid_call_is_unknown(kit: Kit) {
    let Some(line) = fixture(kit) else { return };
    let host = echo_host(&line);
    assert_eq!(
        host.call(key("x"), &id("crash"), vec![Value::text("exit")], vec![]),
        Outcome::Unknown("the implementation's process ended with the call out".into())
    );
    assert_eq!(text(&host, "y", "again"), Outcome::Ok(Value::text("again")));
    let (_, process) = host.processes().next().unwrap();
    assert_eq!(process.starts(), 2);
    host.shutdown();
}

/// Every protocol test, against one toolkit's fixture.
macro_rules! against {
    ($module:ident, $kit:expr) => {
        mod $module {
            use super::*;

            #[test]
            fn a_toolkit_process_answers_every_kind_of_outcome() {
                every_kind_of_outcome($kit);
            }

            #[test]
            fn many_calls_in_flight_are_answered_each_by_its_own_reply() {
                many_calls_in_flight($kit);
            }

            #[test]
            fn the_toolkit_answers_args_that_do_not_decode_and_tools_it_lacks_not_run() {
                args_that_do_not_decode_and_tools_it_lacks($kit);
            }

            #[test]
            fn a_cancel_reaches_the_toolkit_handler_of_a_running_call() {
                a_cancel_reaches_the_running_handler($kit);
            }

            #[test]
            fn a_crash_mid_call_is_unknown_and_the_process_starts_again() {
                a_crash_mid_call_is_unknown($kit);
            }
        }
    };
}

against!(rust, Kit::Rust);
against!(python, Kit::Python);
against!(typescript, Kit::TypeScript);

fn rogue(args: &[&str], limits: Limits) -> Host {
    bind_with(&["echo"], command(ROGUE, args), limits)
}

fn state_file(name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("limen-rogue-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&dir);
    dir.to_string_lossy().into_owned()
}

#[test]
fn replies_out_of_order_duplicates_and_strangers_change_nothing() {
    let host = rogue(&[], Limits::default());
    let held: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|c| {
            host.start_call(key(c), &id("echo"), vec![Value::text("hold")], vec![])
                .unwrap()
        })
        .collect();
    assert_eq!(
        text(&host, "d", "flush"),
        Outcome::Ok(Value::text("flushed"))
    );
    for (rx, c) in held.into_iter().zip(["a", "b", "c"]) {
        assert_eq!(
            rx.recv().unwrap(),
            Outcome::Ok(Value::text(&format!("held {c}")))
        );
    }
    assert_eq!(text(&host, "e", "twice"), Outcome::Ok(Value::text("first")));
    assert_eq!(
        text(&host, "f", "stranger"),
        Outcome::Ok(Value::text("stranger"))
    );
    assert_eq!(
        text(&host, "g", "garbage"),
        Outcome::Ok(Value::text("after garbage"))
    );
    // The next call's reply comes after every line above has been read.
    assert_eq!(text(&host, "h", "last"), Outcome::Ok(Value::text("last")));
    let (_, process) = host.processes().next().unwrap();
    let log = process.log();
    assert!(log.contains(&"a reply for run \"run-7\", call \"e\", which is not open (never sent, or already answered): dropped".to_owned()), "{log:?}");
    assert!(log.contains(&"a reply for run \"run-7\", call \"no-such-call\", which is not open (never sent, or already answered): dropped".to_owned()), "{log:?}");
    assert!(
        log.iter()
            .any(|l| l.starts_with("a line that is not a JSON-RPC 2.0 message (not JSON: ")),
        "{log:?}"
    );
    assert_eq!(process.starts(), 1, "nothing above restarted the process");
    assert!(String::from_utf8_lossy(&process.stderr()).contains("rogue: start 1"));
    host.shutdown();
}

#[test]
fn a_reply_larger_than_the_limit_is_bad_reply() {
    let limits = Limits {
        max_line: 64 << 10,
        ..Limits::default()
    };
    let host = rogue(&[], limits);
    match text(&host, "1", "big:100000") {
        Outcome::BadReply(why) => assert!(
            why.starts_with("the reply is 1000")
                && why.ends_with("bytes, over the host's limit of 65536 bytes"),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(text(&host, "2", "small"), Outcome::Ok(Value::text("small")));
    host.shutdown();
}

#[test]
fn a_crash_is_unknown_for_calls_out_and_a_restart_describes_again() {
    let state = state_file("crash");
    let host = rogue(&["--state", &state], Limits::default());
    let held = host
        .start_call(key("1"), &id("echo"), vec![Value::text("hold")], vec![])
        .unwrap();
    assert_eq!(
        text(&host, "2", "crash"),
        Outcome::Unknown("the implementation's process ended with the call out".into())
    );
    assert_eq!(
        held.recv().unwrap(),
        Outcome::Unknown("the implementation's process ended with the call out".into())
    );
    // Sent again after the crash, the call keeps its (run id, call id), so
    // the implementation can recognize it.
    assert_eq!(text(&host, "1", "again"), Outcome::Ok(Value::text("again")));
    match text(&host, "3", "seen") {
        Outcome::Ok(Value::Text(seen)) => assert_eq!(seen, "run-7/1,run-7/2,run-7/1,run-7/3"),
        other => panic!("{other:?}"),
    }
    let (_, process) = host.processes().next().unwrap();
    assert_eq!(process.starts(), 2);
    // The process's stderr is read by a thread of its own: a line the
    // process wrote may reach the host a moment after the call's reply.
    let started_twice = || {
        let stderr = String::from_utf8_lossy(&process.stderr()).into_owned();
        (
            stderr.contains("rogue: start 1") && stderr.contains("rogue: start 2"),
            stderr,
        )
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !started_twice().0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let (both, stderr) = started_twice();
    assert!(both, "{stderr}");
    host.shutdown();
}

#[test]
fn calls_written_before_a_stall_are_unknown_and_calls_never_written_not_run() {
    let host = rogue(&[], Limits::default());
    let stall = host
        .start_call(
            key("stall"),
            &id("echo"),
            vec![Value::text("stall")],
            vec![],
        )
        .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    // Far more than a pipe holds: the process no longer reads.
    let filler = "x".repeat(16 << 10);
    let pending: Vec<_> = (0..64)
        .map(|i| {
            host.start_call(
                key(&i.to_string()),
                &id("echo"),
                vec![Value::text(&filler)],
                vec![],
            )
            .unwrap()
        })
        .collect();
    assert!(matches!(stall.recv().unwrap(), Outcome::Unknown(_)));
    let (mut unknown, mut not_run) = (0, 0);
    for rx in pending {
        match rx.recv().unwrap() {
            Outcome::Unknown(why) => {
                assert_eq!(why, "the implementation's process ended with the call out");
                unknown += 1;
            }
            Outcome::NotRun(why) => {
                assert_eq!(
                    why,
                    "the implementation's process ended before the call was written to it"
                );
                not_run += 1;
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(
        unknown > 0 && not_run > 0,
        "unknown {unknown}, not run {not_run}"
    );
    host.shutdown();
}

#[test]
fn a_restart_that_no_longer_serves_or_never_describes_makes_the_call_not_run() {
    let state = state_file("drops");
    let host = rogue(&["--state", &state, "--restart-drops"], Limits::default());
    assert_eq!(
        text(&host, "1", "crash"),
        Outcome::Unknown("the implementation's process ended with the call out".into())
    );
    assert_eq!(
        text(&host, "2", "anything"),
        Outcome::NotRun(format!(
            "the implementation no longer serves {}",
            id("echo")
        ))
    );
    host.shutdown();

    let state = state_file("major");
    let host = rogue(
        &["--state", &state, "--restart-major", "2"],
        Limits::default(),
    );
    text(&host, "1", "crash");
    assert_eq!(
        text(&host, "2", "anything"),
        Outcome::NotRun(
            "the implementation speaks data version 2.0, whose major differs from ours (1.0)"
                .into()
        )
    );
    host.shutdown();

    let state = state_file("dies");
    let host = rogue(&["--state", &state, "--restart-dies"], Limits::default());
    text(&host, "1", "crash");
    assert_eq!(
        text(&host, "2", "anything"),
        Outcome::NotRun("the implementation ended before it described itself".into())
    );
    host.shutdown();
}

fn refusal(tools: &[Arc<Tool>], options: &HostOptions) -> String {
    let binding = Host::bind(tools, options);
    assert!(binding.host.is_none());
    binding.report.refusal().unwrap()
}

#[test]
fn each_binding_refusal_names_the_declaration_and_why() {
    let echo = tools(&["echo"]);
    let e = id("echo");
    let over = |implementation: Implementation| HostOptions {
        overrides: BTreeMap::from([(e.clone(), implementation)]),
        ..HostOptions::default()
    };
    assert_eq!(
        refusal(&echo, &HostOptions::default()),
        format!(
            "the run is refused: 1 of 1 declarations is not bound\n  {e}: unbound: no host \
             override, and repository {REPO} has no flow-tool.toml"
        )
    );
    let config = ToolConfig::parse(
        "fixtures/flow-tool.toml",
        "[tools.\"other.flow\"]\ncommand = \"x\"\n",
    )
    .unwrap();
    let configs = BTreeMap::from([(
        REPO.to_owned(),
        RepositoryConfig {
            file: "fixtures/flow-tool.toml".into(),
            dir: None,
            config,
        },
    )]);
    assert_eq!(
        refusal(
            &echo,
            &HostOptions {
                configs,
                ..HostOptions::default()
            }
        ),
        format!(
            "the run is refused: 1 of 1 declarations is not bound\n  {e}: unbound: no host \
             override, and fixtures/flow-tool.toml has no [tools.\"echo.flow\"] table"
        )
    );
    let rogue_cmd = |args: &[&str]| command(ROGUE, args);
    let shown = |args: &[&str]| {
        let Implementation::Command { command, .. } = rogue_cmd(args) else {
            unreachable!()
        };
        command
    };
    assert_eq!(
        refusal(&echo, &over(rogue_cmd(&["--major", "2"]))),
        format!(
            "the run is refused: 1 of 1 declarations is not bound\n  {e}: version refusal: bound \
             to command `{}` (the host's override), which speaks data version 2.0, whose major \
             differs from ours (1.0)",
            shown(&["--major", "2"])
        )
    );
    assert_eq!(
        refusal(&echo, &over(rogue_cmd(&["--mismatch"]))),
        format!(
            "the run is refused: 1 of 1 declarations is not bound\n  {e}: mismatch: bound to \
             command `{}` (the host's override), whose describe lists fingerprint sha256:{} where \
             the declaration's is {}",
            shown(&["--mismatch"]),
            "ab".repeat(32),
            echo[0].fingerprint
        )
    );
    let state = state_file("refuse-drops");
    std::fs::write(&state, "1\n\n").unwrap();
    let args = ["--state", state.as_str(), "--restart-drops"];
    assert_eq!(
        refusal(&echo, &over(rogue_cmd(&args))),
        format!(
            "the run is refused: 1 of 1 declarations is not bound\n  {e}: not served: bound to \
             command `{}` (the host's override), whose describe does not list it",
            shown(&args)
        )
    );
    assert_eq!(
        refusal(
            &echo,
            &over(Implementation::Command {
                command: "/nonexistent/tool".into(),
                dir: None
            })
        ),
        format!(
            "the run is refused: 1 of 1 declarations is not bound\n  {e}: unavailable: bound to \
             command `/nonexistent/tool` (the host's override), which could not be started: \
             `/nonexistent/tool`: No such file or directory (os error 2)"
        )
    );
}

#[test]
fn a_path_identity_is_bound_only_by_the_host() {
    let l = listing();
    let mut tool = (**l.get(&id("echo")).unwrap()).clone();
    tool.declaration.identity = Identity::at_path("/home/me/run.flow", "echo");
    let tools = vec![Arc::new(tool)];
    assert_eq!(
        refusal(&tools, &HostOptions::default()),
        "the run is refused: 1 of 1 declarations is not bound\n  /home/me/run.flow.echo: \
         unbound: no host override, and a file outside any repository has no flow-tool.toml: \
         the host must bind it"
    );
}

/// The TypeScript fixture answers as the Rust one does, byte for byte
/// (replies compared in order of their text): describe, and a call of
/// every Tool the protocol tests leave out or touch lightly (`everything`
/// with each kind of value, every shape, a note with its Option left out,
/// a generic Tool without an expected type, a tree with a parent).
#[test]
fn the_typescript_fixture_answers_as_the_rust_one() {
    let Some(ts) = fixture(Kit::TypeScript) else {
        return;
    };
    let tool = |name: &str| format!("{REPO}@0.3.0/echo.flow.{name}");
    let call = |id: usize, name: &str, args: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"call","params":{{"runId":"r","callId":"{id}","tool":"{}","args":{args}}}}}"#,
            tool(name)
        )
    };
    let lines = [
        call(
            1,
            "everything",
            r#"{"all":["aGVsbG8=","2024-01-02T03:04:05.123456789Z","PT1.5S",[1,2,340282366920938463463374607431768211457],[[3,"c"],[1,"a"]],{"z":1,"a":2},{"x":[1,2.5e3,null,true,"s",{}]},{"tok":1}]}"#,
        ),
        call(2, "reshape", r#"{"shape":{"Rect":{"w":1,"h":-2}}}"#),
        call(3, "reshape", r#"{"shape":"Dot"}"#),
        call(4, "reshape", r#"{"shape":{"Circle":1.50}}"#),
        call(5, "note", r#"{"note":{"text":"t","weight":0.1}}"#),
        call(6, "identity", r#"{"value":{"a":[1,2]}}"#),
        call(
            7,
            "grow",
            r#"{"tree":{"label":"x","children":[{"label":"y","children":[]}],"parent":{"label":"p","children":[]}}}"#,
        ),
        call(8, "echo", r#"{"text":"\u00e9\ud83d\ude00\"\\"}"#),
        r#"{"jsonrpc":"2.0","id":1,"method":"describe"}"#.to_owned(),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let answers = |line: &[String]| {
        let mut replies = raw_lines(line, &lines);
        replies.sort();
        replies
    };
    assert_eq!(answers(&ts), answers(&fixture(Kit::Rust).unwrap()));
}
