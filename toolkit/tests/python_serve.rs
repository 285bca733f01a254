//! The Python toolkit's serve loop (`limen_toolkit.serve`) held to the
//! Rust toolkit: the fixture Tool written with it
//! (`toolkits/python/tests/fixture/echo_tool.py`, over the module `flow
//! toolkit python` generated) is fed lines and its replies checked: describe
//! byte for byte what core's `ToolkitConn` (the Rust toolkit's) answers,
//! every line the toolkit answers by itself (malformed calls, args that do
//! not decode, unknown tools and methods) what `ToolkitConn` answers, the
//! fixture's calls what the Rust fixture answers (big integers past 2^64,
//! 40-digit decimals), a panic, an exit, a cancel of a running call and of
//! one not started. `toolkits/python/tests/serve_cases.py` covers what the
//! fixture never does (print to stdout, suspend, return a wrong value). The
//! venv under `.peers` is a peer: absent, the test skips
//! (`LIMEN_REQUIRE_PEERS=1` fails instead).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use limen_clients::python;
use limen_core::flow::tool::toolkit::ToolkitLimits;
use limen_core::flow::tool::{Listing, ToolkitConn, ToolkitEvent};
use serde_json::{json, Value as Json};

const TOOL: &str = "example.com/limen-fixtures@0.3.0/echo.flow";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn listing_text() -> String {
    std::fs::read_to_string(root().join("toolkit/tests/fixtures/listing.json")).unwrap()
}

/// A Python script under `toolkits/python/tests`, started with piped
/// standard input and output.
fn start(python: &Path, script: &str, args: &[&str]) -> Child {
    Command::new(python)
        .arg(root().join("toolkits/python/tests").join(script))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python runs")
}

/// Writes `input`, closes standard input, and reads every output line, the
/// exit status and standard error.
fn exchange(python: &Path, script: &str, args: &[&str], input: &str) -> (Vec<String>, i32, String) {
    let mut child = start(python, script, args);
    // Written from a thread: replies fill their pipe while calls are read.
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_owned();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    let lines = String::from_utf8(out.stdout)
        .expect("UTF-8")
        .lines()
        .map(str::to_owned)
        .collect();
    (
        lines,
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn call(id: &str, tool: &str, args: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"call","params":{{"runId":"r","callId":"{id}","tool":"{TOOL}.{tool}","args":{args}}}}}"#
    )
}

/// What core's `ToolkitConn` (the Rust toolkit's machine) writes for
/// `input`; a call it yields is answered "ran" (none should be).
fn core_answers(input: &str) -> Vec<String> {
    core_answers_to(&listing_text(), input)
}

/// [`core_answers`] serving another listing.
fn core_answers_to(listing: &str, input: &str) -> Vec<String> {
    let listing = Listing::parse(listing.as_bytes()).unwrap();
    let mut conn = ToolkitConn::new(listing.tools, ToolkitLimits::default());
    conn.handle_data(0, input.as_bytes());
    conn.handle_eof(0);
    while let Some(event) = conn.poll_event() {
        if let ToolkitEvent::Call(incoming) = event {
            let reply = limen_core::flow::tool::Reply::Unknown("ran".into());
            conn.reply(0, &incoming.key, &reply);
        }
    }
    String::from_utf8(conn.pending_output().to_vec())
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A reply line with a JSON parser's own words (after "not JSON: ") cut,
/// since the two parsers word a syntax error each its own way, and an
/// argument's refusal cut after its path: the codec's reasons are held to
/// core's by `python_toolkit.rs`, which compares paths.
fn comparable(line: &str) -> Json {
    let mut v: Json = serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
    let cut = |s: &mut Json| {
        if let Some(text) = s.as_str() {
            if let Some(at) = text.find("not JSON: ") {
                *s = Json::String(format!("{}not JSON: …", &text[..at]));
            } else if let Some(at) = text.find(" does not decode: $") {
                let path = at + " does not decode: ".len();
                if let Some(end) = text[path..].find(": ") {
                    *s = Json::String(format!("{}: …", &text[..path + end]));
                }
            }
        }
    };
    if let Some(outcome) = v.pointer_mut("/params/outcome") {
        for (_, reason) in outcome.as_object_mut().unwrap().iter_mut() {
            cut(reason);
        }
    }
    if let Some(message) = v.pointer_mut("/error/message") {
        cut(message);
    }
    v
}

fn sorted(lines: &[String]) -> Vec<Json> {
    let mut v: Vec<Json> = lines.iter().map(|l| comparable(l)).collect();
    v.sort_by_key(|j| j.to_string());
    v
}

#[test]
fn describe_is_byte_for_byte_the_rust_toolkits() {
    let Some(python) = python() else { return };
    for id in ["1", r#""x""#, "null"] {
        let input = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"describe"}}"#) + "\n";
        let (got, status, stderr) = exchange(&python, "fixture/echo_tool.py", &[], &input);
        assert_eq!(status, 0, "{stderr}");
        assert_eq!(got, core_answers(&input));
    }
}

/// Descriptions are not in a fingerprint, so a listing may carry any
/// text there: control characters, non-ASCII, a line separator, escapes.
#[test]
fn describe_writes_every_character_as_the_rust_toolkit_does() {
    let Some(python) = python() else { return };
    let mut listing: Json = serde_json::from_str(&listing_text()).unwrap();
    listing["tools"][0]["signature"]["description"] =
        json!("a\u{1}b\u{7f} é \u{2028} \"q\" \\ \t\n😀 \u{ffff}");
    let text = serde_json::to_string_pretty(&listing).unwrap();
    let path =
        std::env::temp_dir().join(format!("limen-python-serve-listing-{}", std::process::id()));
    std::fs::write(&path, &text).unwrap();
    let input = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"describe\"}\n";
    let path_text = path.to_string_lossy().into_owned();
    let (got, status, stderr) =
        exchange(&python, "serve_cases.py", &["--listing", &path_text], input);
    let _ = std::fs::remove_file(&path);
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(got, core_answers_to(&text, input));
}

#[test]
fn what_the_toolkit_answers_by_itself_is_what_core_answers() {
    let Some(python) = python() else { return };
    let lines = [
        call("1", "add", r#"{"a":1,"b":"2"}"#),
        call("2", "nothing", "{}"),
        call("3", "add", r#"{"a":[1],"b":2}"#),
        call("4", "add", r#"{"a":1,"b":2,"a":3}"#),
        call("5", "add", r#"{"a":1,"c":2}"#),
        call("6", "add", r#"{"a":1}"#),
        call("7", "add", "[]"),
        call("8", "add", r#"{"a":1.5,"b":2}"#),
        call("9", "echo", r#"{"text":"\ud800"}"#),
        call("10", "note", r#"{"note":{"text":"n","weight":"1"}}"#),
        call("11", "reshape", r#"{"shape":"Square"}"#),
        call("12", "add", r#"{"a":1e5000,"b":1}"#),
        r#"{"jsonrpc":"2.0","method":"call","params":{"runId":"r","callId":"13","args":{}}}"#
            .into(),
        r#"{"jsonrpc":"2.0","method":"call","params":{"runId":"r","callId":"14","tool":7,"args":{}}}"#.into(),
        r#"{"jsonrpc":"2.0","method":"call","params":{"runId":"r","callId":"15","tool":"t"}}"#
            .into(),
        r#"{"jsonrpc":"2.0","method":"call","params":{"runId":"r","callId":"16","tool":"t","args":{}}"#.into(),
        r#"{"jsonrpc":"1.0","method":"call","params":{"runId":"r","callId":"17","tool":"t","args":{}}}"#.into(),
        r#"{"jsonrpc":"2.0","id":9,"method":"frobnicate"}"#.into(),
        r#"{"jsonrpc":"2.0","id":"s","method":"frobnicate","params":{}}"#.into(),
        r#"{"jsonrpc":"2.0","id":1.50,"method":"frobnicate"}"#.into(),
        r#"{"jsonrpc":"2.0","id":[1],"method":"describe"}"#.into(),
        r#"{"jsonrpc":"2.0","id":2,"id":3,"method":"describe"}"#.into(),
        r#"{"jsonrpc":"2.0","id":4,"method":5}"#.into(),
        r#"{"jsonrpc":"2.0","id":5,"method":"describe","params":3}"#.into(),
        r#"{"jsonrpc":"2.0","id":6,"method":"describe","result":1}"#.into(),
        r#"{"id":7,"method":"describe"}"#.into(),
        r#"{"jsonrpc":"2.0","result":1}"#.into(),
        r#"{"jsonrpc":"2.0","id":8}"#.into(),
        "[1]".into(),
        "{bad".into(),
        "   ".into(),
        r#"{"jsonrpc":"2.0","method":"call"}"#.into(),
        r#"{"jsonrpc":"2.0","method":"cancel","params":{"runId":"r","callId":"99"}}"#.into(),
        r#"{"jsonrpc":"2.0","id":3,"result":1}"#.into(),
        r#"{"jsonrpc":"2.0","method":"reply","params":{}}"#.into(),
    ];
    let input = lines.join("\n") + "\n" + r#"{"unfinished":"#;
    let (got, status, stderr) = exchange(&python, "fixture/echo_tool.py", &[], &input);
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(sorted(&got), sorted(&core_answers(&input)));
    // What changes nothing is logged, as the Rust toolkit logs it.
    for logged in [
        "limen-toolkit: a cancel for run \"r\", call \"99\", which is not open: ignored",
        "limen-toolkit: the call's params is not an object: dropped",
        "limen-toolkit: a message the protocol does not send here: a response",
        "limen-toolkit: a message the protocol does not send here: a notification `reply`",
        "limen-toolkit: a last line of 14 bytes with no newline at the end of input: dropped",
    ] {
        assert!(stderr.contains(logged), "{logged} in {stderr}");
    }
}

#[test]
fn the_fixture_answers_as_the_rust_fixture_does() {
    let Some(python) = python() else { return };
    let expects = r#"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"integer"}"#;
    let cases: Vec<(String, &str)> = vec![
        (call("1", "echo", r#"{"text":"hello"}"#), r#"{"Ok":"hello"}"#),
        (
            call("2", "echo", r#"{"text":"a\"b\\c\u00e9\n\u0001 ☃"}"#),
            r#"{"Ok":"a\"b\\cé\n\u0001 ☃"}"#,
        ),
        (
            call(
                "3",
                "add",
                r#"{"a":100000000000000000000000000000000000000000,"b":-18446744073709551617}"#,
            ),
            r#"{"Ok":99999999999999999999981553255926290448383}"#,
        ),
        (
            call("4", "add", r#"{"b":-1,"a":-18446744073709551616}"#),
            r#"{"Ok":-18446744073709551617}"#,
        ),
        (call("5", "add", r#"{"a":1e2,"b":0}"#), r#"{"Ok":100}"#),
        (
            call(
                "6",
                "note",
                r#"{"note":{"text":"n","tags":["a","b"],"weight":123456789012345678901234567890.1234567891}}"#,
            ),
            r#"{"Ok":{"tags":["a","b"],"text":"n","weight":123456789012345678901234567890.1234567891}}"#,
        ),
        (
            call("7", "note", r#"{"note":{"weight":1.50,"text":"t"}}"#),
            r#"{"Ok":{"text":"t","weight":1.5}}"#,
        ),
        (call("8", "fail", r#"{"reason":"no"}"#), r#"{"Failed":{"Refused":"no"}}"#),
        (
            call("9", "crash", r#"{"how":"quietly"}"#),
            r#"{"Unknown":"asked to stop: quietly"}"#,
        ),
        (
            call("10", "crash", r#"{"how":"panic"}"#),
            r#"{"Unknown":"the Tool's code raised RuntimeError: asked to panic"}"#,
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","method":"call","params":{{"runId":"r","callId":"11","tool":"{TOOL}.identity","args":{{"value":[5,{{"b":1.0}}]}},"expects":{expects}}}}}"#
            ),
            r#"{"Ok":{"items":[[5,{"b":1}]],"next":"\"https://json-schema.org/draft/2020-12/schema\""}}"#,
        ),
        (
            call("12", "grow", r#"{"tree":{"label":"t","children":[]}}"#),
            r#"{"Ok":{"children":[{"children":[],"label":"t/leaf"}],"label":"t"}}"#,
        ),
        (call("13", "reshape", r#"{"shape":"Dot"}"#), r#"{"Ok":"Dot"}"#),
        (
            call("14", "reshape", r#"{"shape":{"Rect":{"w":1,"h":2}}}"#),
            r#"{"Ok":{"Rect":{"h":2,"w":1}}}"#,
        ),
        (
            call(
                "15",
                "everything",
                r#"{"all":["AAE=","2024-01-01T00:00:00.500Z","PT1.50S",[3,1],[[2,"b"],[1,"a"]],{"z":1,"a":2},{"x":[1.50,null]},{"tok":1}]}"#,
            ),
            r#"{"Ok":["AAE=","2024-01-01T00:00:00.5Z","PT1.5S",[1,3],[[1,"a"],[2,"b"]],{"a":2,"z":1},{"x":[1.5,null]},{"tok":1}]}"#,
        ),
        // The key and the line as another writer may put them.
        (
            format!(
                "{{ \"params\": {{\"args\": {{\"text\": \"x\"}}, \"tool\": \"{TOOL}.echo\", \"callId\": \"16\", \"runId\": \"r\"}}, \"method\": \"call\", \"jsonrpc\": \"2.0\" }}\r"
            ),
            r#"{"Ok":"x"}"#,
        ),
    ];
    let input: String = cases.iter().map(|(l, _)| format!("{l}\n")).collect();
    let (got, status, stderr) = exchange(&python, "fixture/echo_tool.py", &[], &input);
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(got.len(), cases.len(), "{got:?}");
    for (i, (_, want)) in cases.iter().enumerate() {
        let id = (i + 1).to_string();
        let line = got
            .iter()
            .find(|l| comparable(l)["params"]["callId"] == id.as_str())
            .unwrap_or_else(|| panic!("no reply to {id}: {got:?}"));
        let reply: Json = serde_json::from_str(line).unwrap();
        // Each reply is canonical: its outcome's text is written as core
        // writes it.
        let outcome = &line[line.find(r#""outcome":"#).unwrap() + 10..line.len() - 2];
        assert_eq!(outcome, *want, "call {id}");
        assert_eq!(reply["params"]["runId"], "r");
    }
}

#[test]
fn an_exit_mid_call_ends_the_process_with_the_calls_before_it_answered() {
    let Some(python) = python() else { return };
    let input = [
        call("1", "echo", r#"{"text":"before"}"#),
        call("2", "crash", r#"{"how":"exit"}"#),
        call("3", "echo", r#"{"text":"after"}"#),
    ]
    .join("\n")
        + "\n";
    let (got, status, _) = exchange(&python, "fixture/echo_tool.py", &[], &input);
    assert_eq!(status, 3);
    assert!(
        got.iter().all(|l| !l.contains(r#""callId":"3""#)),
        "{got:?}"
    );
}

/// Reads reply lines until one names `id`.
fn reply_to(out: &mut BufReader<ChildStdout>, id: &str) -> Json {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        assert!(Instant::now() < deadline, "no reply to {id}");
        let mut line = String::new();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "ended before the reply to {id}"
        );
        let reply: Json = serde_json::from_str(&line).unwrap();
        if reply["params"]["callId"] == id {
            return reply["params"]["outcome"].clone();
        }
    }
}

#[test]
fn a_cancel_reaches_the_running_handler_and_a_call_not_started_is_not_run() {
    let Some(python) = python() else { return };
    let started = std::env::temp_dir().join(format!("limen-python-serve-{}", std::process::id()));
    let _ = std::fs::remove_file(&started);
    let mut child = start(&python, "fixture/echo_tool.py", &[]);
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let how = format!(r#"{{"how":"when cancelled {}"}}"#, started.display());
    writeln!(stdin, "{}", call("c", "crash", &how)).unwrap();
    stdin.flush().unwrap();
    let begun = Instant::now();
    while !started.exists() {
        assert!(
            begun.elapsed() < Duration::from_secs(20),
            "the call never ran"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // One write: a call and its cancel, read together, so the cancel comes
    // before the call starts; then the cancel of the running call.
    let cancel = |id: &str| {
        format!(r#"{{"jsonrpc":"2.0","method":"cancel","params":{{"runId":"r","callId":"{id}"}}}}"#)
    };
    let never = format!(r#"{{"how":"when cancelled {}.never"}}"#, started.display());
    write!(
        stdin,
        "{}\n{}\n{}\n",
        call("q", "crash", &never),
        cancel("q"),
        cancel("c")
    )
    .unwrap();
    stdin.flush().unwrap();
    assert_eq!(
        reply_to(&mut out, "q"),
        json!({"NotRun": "cancelled before the Tool's code started"})
    );
    assert_eq!(
        reply_to(&mut out, "c"),
        json!({"Unknown": "stopped: the host cancelled the call"})
    );
    assert!(begun.elapsed() < Duration::from_secs(20));
    assert!(!Path::new(&format!("{}.never", started.display())).exists());
    // The process serves on, and ends when its input does.
    writeln!(stdin, "{}", call("after", "echo", r#"{"text":"still"}"#)).unwrap();
    drop(stdin);
    assert_eq!(reply_to(&mut out, "after"), json!({"Ok": "still"}));
    assert!(child.wait().unwrap().success());
    let _ = std::fs::remove_file(&started);
}

#[test]
fn the_authors_code_cannot_write_to_stdout_and_calls_that_wait_overlap() {
    let Some(python) = python() else { return };
    authors_code(&python, &["2000"]);
}

/// Served with `eager=False`, every call has its task from the start, so
/// `asyncio.timeout()` works before any await; the rest is the same.
#[test]
fn served_lazily_each_call_has_its_task_from_the_start() {
    let Some(python) = python() else { return };
    let timeout = call("timeout", "echo", r#"{"text":"timeout"}"#) + "\n";
    let (got, status, stderr) = exchange(&python, "serve_cases.py", &["lazy"], &timeout);
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(
        comparable(&got[0])["params"]["outcome"],
        json!({"Ok": "timeout"})
    );
    authors_code(&python, &["2000", "lazy"]);
}

/// What the fixture never does, through `serve_cases.py ARGS`.
fn authors_code(python: &Path, args: &[&str]) {
    let input = [
        call("slow", "echo", r#"{"text":"sleep 300"}"#),
        call("fast", "echo", r#"{"text":"sleep 1"}"#),
        call("print", "echo", r#"{"text":"print"}"#),
        call("fd", "echo", r#"{"text":"fd"}"#),
        call("wrong", "echo", r#"{"text":"wrong"}"#),
        call("notrun", "echo", r#"{"text":"not run"}"#),
        call("plain", "add", r#"{"a":1,"b":2}"#),
        call("fail", "fail", r#"{"reason":"x"}"#),
        call(
            "big",
            "echo",
            &format!(r#"{{"text":"{}"}}"#, "x".repeat(3000)),
        ),
        // Longer than a read: only its length and its ids are kept.
        call(
            "huge",
            "echo",
            &format!(r#"{{"text":"{}"}}"#, "y".repeat(600_000)),
        ),
    ]
    .join("\n")
        + "\n";
    let (got, status, stderr) = exchange(python, "serve_cases.py", args, &input);
    assert_eq!(status, 0, "{stderr}");
    // Every line on stdout is a reply: the protocol is never corrupted.
    let replies: Vec<Json> = got
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let outcome = |id: &str| {
        replies
            .iter()
            .find(|r| r["params"]["callId"] == id)
            .unwrap_or_else(|| panic!("no reply to {id}: {got:?}"))["params"]["outcome"]
            .clone()
    };
    let position = |id: &str| replies.iter().position(|r| r["params"]["callId"] == id);
    assert!(position("fast") < position("slow"), "{got:?}");
    assert_eq!(outcome("slow"), json!({"Ok": "sleep 300"}));
    let printed = outcome("print")["Unknown"].as_str().unwrap().to_owned();
    assert!(
        printed.starts_with("the Tool's code raised StdoutIsTheProtocol: ")
            && printed.contains("sys.stderr"),
        "{printed}"
    );
    assert_eq!(outcome("fd"), json!({"Ok": "fd"}));
    assert!(stderr.contains("garbage on fd 1"), "{stderr}");
    assert_eq!(
        outcome("wrong"),
        json!({"Unknown": "the Tool's code returned a value not of the success type Text: $: expected Text, found a Python int"})
    );
    assert_eq!(outcome("notrun"), json!({"NotRun": "nothing done"}));
    assert_eq!(outcome("plain"), json!({"Ok": 3}));
    assert!(outcome("fail")["Unknown"]
        .as_str()
        .unwrap()
        .starts_with("the Tool's code failed with a value not of the error type EchoError: "));
    assert_eq!(
        outcome("big"),
        json!({"NotRun": "the call is 3147 bytes, over the implementation's limit of 2000 bytes"})
    );
    assert_eq!(
        outcome("huge"),
        json!({"NotRun": "the call is 600148 bytes, over the implementation's limit of 2000 bytes"})
    );
    assert_eq!(replies.len(), 10, "{got:?}");
}

#[test]
fn a_cancel_that_escapes_the_authors_code_is_unknown_and_input_ending_waits_for_running_calls() {
    let Some(python) = python() else { return };
    let mut child = start(&python, "serve_cases.py", &[]);
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    writeln!(stdin, "{}", call("hang", "echo", r#"{"text":"hang"}"#)).unwrap();
    writeln!(stdin, "{}", call("wait", "echo", r#"{"text":"sleep 200"}"#)).unwrap();
    // A reply that comes after both calls were read: both are running.
    writeln!(stdin, "{}", call("mark", "echo", r#"{"text":"mark"}"#)).unwrap();
    stdin.flush().unwrap();
    assert_eq!(reply_to(&mut out, "mark"), json!({"Ok": "mark"}));
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"cancel","params":{{"runId":"r","callId":"hang"}}}}"#
    )
    .unwrap();
    drop(stdin);
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let replies: Vec<Json> = rest
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let outcome = |id: &str| {
        replies
            .iter()
            .find(|r| r["params"]["callId"] == id)
            .unwrap_or_else(|| panic!("no reply to {id}: {rest}"))["params"]["outcome"]
            .clone()
    };
    assert_eq!(outcome("hang"), json!({"Unknown": "cancelled by the host"}));
    assert_eq!(outcome("wait"), json!({"Ok": "sleep 200"}));
    assert!(child.wait().unwrap().success());
}

/// Standard input and output that are files, not pipes: read on a thread,
/// written with plain writes, and the same replies.
#[test]
fn standard_input_and_output_may_be_files() {
    let Some(python) = python() else { return };
    let dir = std::env::temp_dir();
    let input = dir.join(format!("limen-python-serve-in-{}", std::process::id()));
    let output = dir.join(format!("limen-python-serve-out-{}", std::process::id()));
    let lines = [
        call("slow", "echo", r#"{"text":"sleep 100"}"#),
        call("1", "add", r#"{"a":18446744073709551616,"b":1}"#),
        r#"{"jsonrpc":"2.0","id":1,"method":"describe"}"#.to_owned(),
    ];
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    let status = Command::new(&python)
        .arg(root().join("toolkits/python/tests/serve_cases.py"))
        .stdin(std::fs::File::open(&input).unwrap())
        .stdout(std::fs::File::create(&output).unwrap())
        .status()
        .unwrap();
    assert!(status.success());
    let got = std::fs::read_to_string(&output).unwrap();
    assert_eq!(got.lines().count(), 3, "{got}");
    assert!(
        got.contains(r#""callId":"1","outcome":{"Ok":18446744073709551617}"#),
        "{got}"
    );
    assert!(
        got.contains(r#""callId":"slow","outcome":{"Ok":"sleep 100"}"#),
        "{got}"
    );
    assert_eq!(
        got.lines().nth(1),
        core_answers(&format!("{}\n", lines[2]))
            .first()
            .map(String::as_str)
    );
    let _ = std::fs::remove_file(&input);
    let _ = std::fs::remove_file(&output);
}

/// What `ToolkitConn` writes for each line fed alone, a call it yields
/// answered at once (as the Python loop answers a call that never awaits).
fn core_answers_line_by_line(lines: &[String]) -> Vec<String> {
    let listing = Listing::parse(listing_text().as_bytes()).unwrap();
    let mut conn = ToolkitConn::new(listing.tools, ToolkitLimits::default());
    for line in lines {
        conn.handle_data(0, format!("{line}\n").as_bytes());
        while let Some(event) = conn.poll_event() {
            if let ToolkitEvent::Call(incoming) = event {
                let reply = limen_core::flow::tool::Reply::Unknown("ran".into());
                conn.reply(0, &incoming.key, &reply);
            }
        }
    }
    String::from_utf8(conn.pending_output().to_vec())
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A reply of a call that ran (any outcome but NotRun) as "ran": core's
/// machine does not run calls, the fixture does.
fn ran_or_not(mut v: Json) -> Json {
    if let Some(outcome) = v.pointer_mut("/params/outcome") {
        if outcome.get("NotRun").is_none() {
            *outcome = json!("ran");
        }
    }
    v
}

/// Lines mutated at random (a seeded generator: the same lines every run)
/// from calls, requests and broken lines, fed to the Python loop and to
/// core's machine: every answer the same, but for the parsers' own words.
#[test]
fn mutated_lines_are_answered_as_core_answers_them() {
    let Some(python) = python() else { return };
    let bases = [
        call("1", "add", r#"{"a":1,"b":2}"#),
        call("2", "echo", r#"{"text":"hello"}"#),
        call("3", "note", r#"{"note":{"text":"n","weight":1.5}}"#),
        call("4", "reshape", r#"{"shape":{"Rect":{"w":1,"h":2}}}"#),
        call("5", "grow", r#"{"tree":{"label":"t","children":[]}}"#),
        r#"{"jsonrpc":"2.0","id":9,"method":"frobnicate","params":[1,{"a":null}]}"#.into(),
        r#"{"jsonrpc":"2.0","id":"d","method":"describe"}"#.into(),
        r#"{"jsonrpc":"2.0","method":"reply","params":{"runId":"r","callId":"1"}}"#.into(),
        r#"{"jsonrpc":"2.0","id":3,"result":{"x":true}}"#.into(),
    ];
    let alphabet = br#"{}[]":,.-+eE0123456789abrt\ "#;
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let mut lines = Vec::new();
    for _ in 0..3000 {
        let mut line = bases[next(bases.len())].clone().into_bytes();
        for _ in 0..1 + next(3) {
            if line.is_empty() {
                break;
            }
            let at = next(line.len());
            match next(4) {
                0 => line[at] = alphabet[next(alphabet.len())],
                1 => {
                    line.remove(at);
                }
                2 => line.insert(at, alphabet[next(alphabet.len())]),
                _ => line.truncate(at),
            }
        }
        let line = String::from_utf8(line).unwrap();
        // A read holding a cancel is read whole before its calls run, one
        // call at a time is not what this compares.
        if !line.contains("\"cancel\"") && !line.trim().is_empty() {
            lines.push(line);
        }
    }
    let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let (got, status, stderr) = exchange(&python, "fixture/echo_tool.py", &[], &input);
    assert_eq!(status, 0, "{stderr}");
    let norm = |ls: &[String]| {
        let mut v: Vec<String> = ls
            .iter()
            .map(|l| ran_or_not(comparable(l)).to_string())
            .collect();
        v.sort();
        v
    };
    let (python, core) = (norm(&got), norm(&core_answers_line_by_line(&lines)));
    let only = |a: &[String], b: &[String]| -> Vec<String> {
        let mut b = b.to_vec();
        a.iter()
            .filter(|x| match b.iter().position(|y| y == *x) {
                Some(i) => {
                    b.remove(i);
                    false
                }
                None => true,
            })
            .cloned()
            .collect()
    };
    let (p, c) = (only(&python, &core), only(&core, &python));
    assert!(
        p.is_empty() && c.is_empty(),
        "{} lines; only python: {p:#?}\nonly core: {c:#?}",
        lines.len()
    );
}
