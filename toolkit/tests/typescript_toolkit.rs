//! The TypeScript toolkit (`toolkits/typescript`, npm package
//! `limen-toolkit`): its value conversions held to core's decoding on the
//! same vectors as the Python toolkit's (`support/vectors.rs`), the
//! committed `dist/` equal to what `tsc` builds today, an offline `npm
//! install` of the folder into a scratch project, and its serve loop
//! (through `test/echo.ts`, a hand-written Tool on the generic API over the
//! fixture listing) answering as core's `ToolkitConn` and the Rust toolkit
//! do. `tsc` and `node` are peers: absent, the tests skip
//! (`LIMEN_REQUIRE_PEERS=1` fails instead).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::OnceLock;

use limen_core::flow::fingerprint::{Declaration, Param};
use limen_core::flow::tool::listing::describe_result;
use limen_core::flow::tool::toolkit::ToolkitLimits;
use limen_core::flow::tool::{Listing, Tool, ToolkitConn};
use limen_core::flow::{Identity, Type};
use serde_json::{json, Value as Json};

#[path = "support/vectors.rs"]
mod vectors;

use vectors::root;

fn package() -> PathBuf {
    root().join("toolkits/typescript")
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("typescript_toolkit")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    dir
}

fn run(cmd: &mut Command, what: &str) -> std::process::Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The package and its tests compiled (`tsconfig.test.json`, strict) into
/// a scratch folder, once for every test: `node` and that folder.
fn built() -> Option<(PathBuf, PathBuf)> {
    static BUILT: OnceLock<Option<(PathBuf, PathBuf)>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let tsc = limen_clients::tsc()?;
            let node = limen_clients::node()?;
            let out = scratch("build");
            run(
                Command::new(tsc)
                    .arg("-p")
                    .arg(package().join("tsconfig.test.json"))
                    .arg("--outDir")
                    .arg(&out),
                "tsc over the package and its tests",
            );
            Some((node, out))
        })
        .clone()
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .expect("a folder")
        .map(|e| {
            let e = e.expect("an entry");
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(e.path()).expect("a file"))
        })
        .collect();
    out.sort();
    out
}

#[test]
fn the_committed_dist_is_what_tsc_builds_today() {
    let Some(tsc) = limen_clients::tsc() else {
        return;
    };
    let out = scratch("dist");
    run(
        Command::new(tsc)
            .arg("-p")
            .arg(package().join("tsconfig.json"))
            .arg("--outDir")
            .arg(&out),
        "tsc over the package",
    );
    let fresh = files(&out);
    let committed = files(&package().join("dist"));
    let names = |f: &[(String, Vec<u8>)]| f.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&committed), names(&fresh), "dist/ holds other files");
    for ((name, want), (_, got)) in fresh.iter().zip(&committed) {
        assert!(
            want == got,
            "dist/{name} is not what tsc builds today: run `npm run build` in toolkits/typescript"
        );
    }
}

/// Runs `test/vectors.js` over `cases`: where its answers differ from core's.
fn differences<T: AsRef<str>>(node: &Path, build: &Path, cases: &[(Json, T)]) -> Vec<String> {
    let mut child = Command::new(node)
        .arg(build.join("test/vectors.js"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("node runs");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = vectors::input(cases);
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().expect("node answers");
    writer
        .join()
        .expect("the writer")
        .expect("the cases are written");
    assert!(out.status.success(), "vectors.js failed");
    // Reasons too, word for word: the toolkit words a refusal as core does.
    vectors::differences(cases, &String::from_utf8(out.stdout).expect("UTF-8"), true)
}

#[test]
fn conversions_agree_with_core_on_every_vector() {
    let Some((node, build)) = built() else { return };
    let differ = differences(&node, &build, &vectors::cases());
    assert!(
        differ.is_empty(),
        "{} differ:\n{}",
        differ.len(),
        differ.join("\n")
    );
}

/// The reader and the decoder on texts a step away from the vectors' (a
/// small fuzz campaign, from a fixed seed): what core accepts the toolkit
/// accepts with the same canonical text, and what core refuses it refuses
/// at the same path (or as not JSON).
#[test]
fn conversions_agree_with_core_on_mutants_of_the_vectors() {
    let Some((node, build)) = built() else { return };
    // A longer campaign: LIMEN_TS_MUTANTS=500 LIMEN_TS_SEED=7.
    let knob = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let per_case = knob("LIMEN_TS_MUTANTS", 20) as usize;
    let seed = knob("LIMEN_TS_SEED", 0x5eed_1e55);
    let differ = differences(&node, &build, &vectors::mutants(per_case, seed));
    assert!(
        differ.is_empty(),
        "{} differ:\n{}",
        differ.len(),
        differ.join("\n")
    );
}

/// Numbers that grow when written out: core bounds the canonical text of
/// a value by the text limit, and so does the toolkit, at the same element.
#[test]
fn a_value_whose_canonical_text_would_pass_the_limit_is_refused_as_core_refuses_it() {
    let Some((node, build)) = built() else { return };
    let env = limen_core::flow::TypeEnv::new();
    let schema = |ty: &Type| limen_core::flow::schema::schema_of(ty, &env).expect("a schema");
    let many = |token: &str, n: usize| format!("[{}]", vec![token; n].join(","));
    let cases: Vec<(Json, String)> = vec![
        (schema(&Type::list(Type::Int)), many("1e4299", 4000)),
        (schema(&Type::list(Type::Int)), many("1e4299", 3800)),
        (schema(&Type::list(Type::Decimal)), many("1e-999", 17_000)),
        (schema(&Type::Json), many("-1e999", 17_000)),
        (schema(&Type::Json), many("1e999", 16_000)),
    ];
    let differ = differences(&node, &build, &cases);
    assert!(
        differ.is_empty(),
        "{} differ:\n{}",
        differ.len(),
        differ
            .iter()
            .map(|d| d.chars().take(300).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn writing_refuses_what_is_not_of_the_type() {
    let Some((node, build)) = built() else { return };
    run(
        Command::new(node).arg(build.join("test/encode_refusals.js")),
        "encode_refusals.js",
    );
}

#[test]
fn npm_installs_the_folder_offline_into_a_scratch_project() {
    let Some(node) = limen_clients::node() else {
        return;
    };
    let Some(tsc) = limen_clients::tsc() else {
        return;
    };
    let npm = node.with_file_name("npm");
    if !npm.is_file() {
        limen_clients::absent("npm is not beside node");
        return;
    }
    let dir = scratch("npm-install");
    std::fs::write(
        dir.join("package.json"),
        r#"{"name": "scratch", "private": true, "type": "module"}"#,
    )
    .expect("package.json");
    run(
        Command::new(&npm)
            .args(["install", "--offline", "--no-audit", "--no-fund"])
            .arg(package())
            .current_dir(&dir)
            .env("npm_config_cache", dir.join(".npm-cache")),
        "npm install --offline toolkits/typescript",
    );
    // Its JavaScript runs, and its types compile under --strict.
    std::fs::write(
        dir.join("main.ts"),
        r#"import { Decimal, serve, type Context, type Handler } from "limen-toolkit";
const h: Handler = (cx: Context, args: unknown[]) => [cx.runId, args.length];
const d: Decimal = Decimal.parse("0.1").add(Decimal.parse("0.2"));
console.log(d.toString(), typeof serve, typeof h);
"#,
    )
    .expect("main.ts");
    run(
        Command::new(&tsc).current_dir(&dir).args([
            "--strict", "--module", "nodenext", "--target", "es2022", "--types", "", "main.ts",
        ]),
        "tsc --strict over a project that imports limen-toolkit",
    );
    let out = run(
        Command::new(&node).arg("main.js").current_dir(&dir),
        "node main.js",
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "0.3 function function\n"
    );
}

// -- the serve loop, through test/echo.ts --------------------------------------

const REPO: &str = "example.com/limen-fixtures@0.3.0/echo.flow";

fn listing_path() -> PathBuf {
    root().join("toolkit/tests/fixtures/listing.json")
}

struct Echo {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Echo {
    fn start() -> Option<Echo> {
        let (node, build) = built()?;
        let mut child = Command::new(node)
            .arg(build.join("test/echo.js"))
            .arg(listing_path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node runs");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Some(Echo {
            child,
            stdin,
            stdout,
        })
    }

    fn send(&mut self, lines: &[String]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        let mut text = lines.join("\n");
        text.push('\n');
        stdin.write_all(text.as_bytes()).expect("a line is written");
        stdin.flush().expect("flushed");
    }

    fn read(&mut self) -> Json {
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("a line is read");
        assert!(!line.is_empty(), "the process ended without a reply");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    /// The replies to `n` calls, by call id.
    fn replies(&mut self, n: usize) -> Vec<Json> {
        (0..n).map(|_| self.read()).collect()
    }

    /// Closes standard input and waits: the exit status and what was left.
    fn finish(self) -> (Option<i32>, Vec<Json>) {
        let (status, rest, _) = self.finish_raw();
        (status, rest)
    }

    /// [`Echo::finish`], with the lines left as written.
    fn finish_raw(mut self) -> (Option<i32>, Vec<Json>, String) {
        drop(self.stdin.take());
        let mut raw = String::new();
        std::io::Read::read_to_string(&mut self.stdout, &mut raw).expect("the rest is read");
        let rest = raw
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        let status = self.child.wait().expect("the process ends");
        (status.code(), rest, raw)
    }
}

fn call(id: &str, tool: &str, args: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"call","params":{{"runId":"r","callId":"{id}","tool":"{REPO}.{tool}","args":{args}}}}}"#
    )
}

fn cancel(id: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","method":"cancel","params":{{"runId":"r","callId":"{id}"}}}}"#)
}

fn outcome_of<'a>(replies: &'a [Json], id: &str) -> &'a Json {
    &replies
        .iter()
        .find(|r| r["params"]["callId"] == id)
        .unwrap_or_else(|| panic!("no reply to {id}: {replies:?}"))["params"]["outcome"]
}

#[test]
fn describe_answers_the_listing_as_core_does_byte_for_byte() {
    let Some(mut echo) = Echo::start() else {
        return;
    };
    let describe = r#"{"jsonrpc":"2.0","id":1,"method":"describe"}"#;
    echo.send(&[describe.to_owned()]);
    let mut got = String::new();
    echo.stdout.read_line(&mut got).expect("the response");

    // Core's own implementation side, over the same listing.
    let text = std::fs::read(listing_path()).expect("the listing");
    let listing = Listing::parse(&text).expect("the fixture listing");
    let mut conn = ToolkitConn::new(listing.tools, ToolkitLimits::default());
    conn.handle_data(0, format!("{describe}\n").as_bytes());
    let want = String::from_utf8(conn.pending_output().to_vec()).expect("UTF-8");
    assert_eq!(got, want);
    let listed: Json = serde_json::from_slice(&text).expect("JSON");
    let answered: Json = serde_json::from_str(&got).expect("JSON");
    assert_eq!(answered["result"], listed);
    assert_eq!(echo.finish(), (Some(0), vec![]));
}

#[test]
fn every_outcome_and_core_s_words_for_what_never_runs() {
    let Some(mut echo) = Echo::start() else {
        return;
    };
    echo.send(&[
        call("1", "echo", r#"{"text":"héllo"}"#),
        call(
            "2",
            "add",
            r#"{"a":18446744073709551616,"b":340282366920938463463374607431768211456}"#,
        ),
        call("3", "add", r#"{"a":1,"b":"2"}"#),
        call("4", "nothing", "{}"),
        call("5", "add", r#"{"a":[1],"b":2}"#),
        r#"{"jsonrpc":"2.0","id":9,"method":"frobnicate"}"#.to_owned(),
        call("6", "fail", r#"{"reason":"no"}"#),
        call("7", "crash", r#"{"how":"panic"}"#),
        call("8", "crash", r#"{"how":"elsewise"}"#),
        call("9", "crash", r#"{"how":"later"}"#),
        call("10", "crash", r#"{"how":"print"}"#),
        call(
            "11",
            "note",
            r#"{"note":{"text":"t","weight":1.50,"extra":[1]}}"#,
        ),
        call(
            "12",
            "identity",
            r#"{"value":{"b":1.0000000000000000000000000000000000000001,"a":null}}"#,
        ),
        call("13", "add", r#"{"b":1,"a":2,"a":3}"#),
        call("14", "add", r#"{"a":1}"#),
        r#"{"jsonrpc":"2.0","method":"call","params":{"runId":"r","callId":"15","tool":"#
            .to_owned(),
        "[1,2]".to_owned(),
        // Args in another order than a host writes them: the general path.
        call("16", "add", r#"{"b":1,"a":2}"#),
        call("17", "add", r#"{"b":"x","a":[]}"#),
        // A generic Tool's call carries the schema the caller expects.
        format!(
            r#"{{"jsonrpc":"2.0","method":"call","params":{{"runId":"r","callId":"18","tool":"{REPO}.identity","args":{{"value":[1,"a"]}},"expects":{{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}}}}}}"#
        ),
    ]);
    let (status, replies, raw) = echo.finish_raw();
    assert_eq!(status, Some(0));
    let o = |id| outcome_of(&replies, id).clone();
    assert_eq!(o("1"), json!({"Ok": "héllo"}));
    // serde_json reads numbers as f64: the exact text is checked raw.
    assert!(
        raw.contains(r#""callId":"2","outcome":{"Ok":340282366920938463481821351505477763072}"#),
        "{raw}"
    );
    assert_eq!(
        o("3"),
        json!({"NotRun": "the args do not decode: the argument `b` does not decode: $: expected Int, found \"2\""})
    );
    assert_eq!(
        o("4"),
        json!({"NotRun": format!("this implementation serves no Tool `{REPO}.nothing`")})
    );
    assert!(o("5")["NotRun"]
        .as_str()
        .unwrap()
        .starts_with("the args do not decode: the argument `a` does not decode: $: "));
    let error = replies
        .iter()
        .find(|r| r["id"] == 9)
        .expect("an error response");
    assert_eq!(error["error"]["code"], -32601);
    assert_eq!(o("6"), json!({"Failed": {"Refused": "no"}}));
    assert_eq!(
        o("7"),
        json!({"Unknown": "the Tool's code threw Error: asked to panic"})
    );
    assert_eq!(o("8"), json!({"Unknown": "asked to stop: elsewise"}));
    assert_eq!(o("9"), json!({"Ok": "later"}));
    let printed = o("10")["Unknown"].as_str().unwrap().to_owned();
    assert!(printed.contains("standard error"), "{printed}");
    assert!(
        raw.contains(r#""callId":"11","outcome":{"Ok":{"text":"t","weight":1.5}}"#),
        "{raw}"
    );
    assert!(
        raw.contains(r#""callId":"12","outcome":{"Ok":{"items":[{"a":null,"b":1.0000000000000000000000000000000000000001}]}}"#),
        "{raw}"
    );
    assert_eq!(
        o("13"),
        json!({"NotRun": "the args do not decode: `args` gives the member `a` twice"})
    );
    assert_eq!(
        o("14"),
        json!({"NotRun": "the args do not decode: the parameter `b` has no argument"})
    );
    assert!(o("15")["NotRun"]
        .as_str()
        .unwrap()
        .starts_with("the call is not a JSON-RPC 2.0 message: "));
    assert_eq!(o("16"), json!({"Ok": 3}));
    // Core's order: the members as they come.
    assert_eq!(
        o("17"),
        json!({"NotRun": "the args do not decode: the argument `b` does not decode: $: expected Int, found \"x\""})
    );
    assert_eq!(
        o("18"),
        json!({"Ok": {"items": [[1, "a"]], "next": "\"https://json-schema.org/draft/2020-12/schema\""}})
    );
    let invalid = replies.iter().find(|r| r["error"]["code"] == -32600);
    assert!(invalid.is_some(), "an array is no message: {replies:?}");
}

#[test]
fn a_cancel_aborts_a_running_call_and_a_call_cancelled_before_it_starts_is_not_run() {
    let Some(mut echo) = Echo::start() else {
        return;
    };
    let dir = scratch("cancel");
    let started = dir.join("started");
    let how = format!("when cancelled {}", started.display());
    // A call and its cancel in one write: the cancel is read before the
    // call starts.
    echo.send(&[
        call("early", "crash", &json!({"how": how}).to_string()),
        cancel("early"),
    ]);
    assert_eq!(
        outcome_of(&echo.replies(1), "early"),
        &json!({"NotRun": "cancelled before the Tool's code started"})
    );
    assert!(!started.exists(), "the cancelled call's code ran");
    echo.send(&[call("c", "crash", &json!({"how": how}).to_string())]);
    // The file says the call's code is running: no sleep decides it.
    while !started.exists() {
        std::thread::yield_now();
    }
    echo.send(&[cancel("c"), call("after", "echo", r#"{"text":"still"}"#)]);
    let replies = echo.replies(2);
    assert_eq!(
        outcome_of(&replies, "c"),
        &json!({"Unknown": "stopped: the host cancelled the call"})
    );
    assert_eq!(outcome_of(&replies, "after"), &json!({"Ok": "still"}));
    assert_eq!(echo.finish(), (Some(0), vec![]));
}

#[test]
fn calls_open_when_input_ends_are_answered_and_an_exit_mid_call_ends_the_process() {
    let Some(mut echo) = Echo::start() else {
        return;
    };
    let many: Vec<String> = (0..300)
        .map(|i| call(&i.to_string(), "crash", r#"{"how":"later"}"#))
        .collect();
    echo.send(&many);
    let (status, replies) = echo.finish();
    assert_eq!(status, Some(0));
    assert_eq!(replies.len(), 300);
    for i in 0..300 {
        assert_eq!(
            outcome_of(&replies, &i.to_string()),
            &json!({"Ok": "later"})
        );
    }

    let Some(mut echo) = Echo::start() else {
        return;
    };
    echo.send(&[call("x", "crash", r#"{"how":"exit"}"#)]);
    let (status, replies) = echo.finish();
    assert_eq!((status, replies), (Some(3), vec![]));
}

#[test]
fn a_second_call_with_an_open_key_is_ignored_and_escaped_keys_are_written_back() {
    let Some(mut echo) = Echo::start() else {
        return;
    };
    let dir = scratch("second");
    let started = dir.join("started");
    let how = json!({"how": format!("when cancelled {}", started.display())}).to_string();
    echo.send(&[call("c", "crash", &how)]);
    while !started.exists() {
        std::thread::yield_now();
    }
    // The same key again while the first runs: ignored, never run.
    echo.send(&[
        call("c", "echo", r#"{"text":"again"}"#),
        // A key with escapes, and the envelope in another order: the
        // general path reads it.
        r#"{"params":{"args":{"text":"x"},"tool":"example.com/limen-fixtures@0.3.0/echo.flow.echo","callId":"q\"\u00e9\n","runId":"r"},"method":"call","jsonrpc":"2.0"}"#.to_owned(),
        cancel("c"),
    ]);
    let (status, replies, raw) = echo.finish_raw();
    assert_eq!(status, Some(0));
    assert_eq!(replies.len(), 2, "{raw}");
    assert_eq!(
        outcome_of(&replies, "c"),
        &json!({"Unknown": "stopped: the host cancelled the call"})
    );
    assert_eq!(outcome_of(&replies, "q\"é\n"), &json!({"Ok": "x"}));
    assert!(raw.contains(r#""callId":"q\"é\n""#), "{raw}");
}

#[test]
fn a_line_that_is_not_utf8_is_refused_and_the_lines_beside_it_are_answered() {
    let Some(mut echo) = Echo::start() else {
        return;
    };
    let mut bytes = call("a", "echo", r#"{"text":"ok"}"#).into_bytes();
    bytes.push(b'\n');
    bytes.extend_from_slice(call("bad", "echo", r#"{"text":"\xff"}"#).as_bytes());
    // The escape above is JSON's text, not a byte: put a real one in.
    let at = bytes.len() - 8;
    bytes.splice(at..at + 4, [0xff]);
    bytes.push(b'\n');
    bytes.extend_from_slice(call("b", "echo", r#"{"text":"é"}"#).as_bytes());
    bytes.push(b'\n');
    let stdin = echo.stdin.as_mut().expect("stdin");
    stdin.write_all(&bytes).expect("written");
    let (status, replies) = echo.finish();
    assert_eq!(status, Some(0));
    assert_eq!(outcome_of(&replies, "a"), &json!({"Ok": "ok"}));
    assert_eq!(outcome_of(&replies, "b"), &json!({"Ok": "é"}));
    assert_eq!(
        outcome_of(&replies, "bad"),
        &json!({"NotRun": "the call is not a JSON-RPC 2.0 message: not UTF-8"})
    );
}

/// A listing of one Tool per vector type (its parameter, its success type;
/// a generic one too), versions in every `$ref`: the toolkit computes each
/// fingerprint as core does, and `serve` reads every signature.
#[test]
fn fingerprints_are_core_s_for_every_type_and_serve_reads_every_signature() {
    let Some((node, build)) = built() else { return };
    let env = vectors::env();
    let id =
        |name: &str| Identity::in_repository("github.com/acme/tools", "1.4.0", "search.flow", name);
    let mut tools = Vec::new();
    for (i, (ty, _)) in vectors::vectors().into_iter().enumerate() {
        let decl = Declaration::new(
            id(&format!("t{i}")),
            vec![Param::new("x", ty.clone()), Param::new("a", Type::Int)],
            ty,
            Type::Text,
        );
        tools.push(std::sync::Arc::new(
            Tool::new(decl, env.clone()).expect("a Tool"),
        ));
    }
    let generic = Declaration::new(
        id("g"),
        vec![Param::new("value", Type::param("T"))],
        Type::list(Type::param("T")),
        Type::Never,
    )
    .generic(&["T"]);
    tools.push(std::sync::Arc::new(
        Tool::new(generic, env).expect("a Tool"),
    ));
    let listing = serde_json::to_string_pretty(&describe_result(&tools)).expect("JSON");

    let mut child = Command::new(node)
        .arg(build.join("test/fingerprints.js"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("node runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(listing.as_bytes())
        .expect("the listing is written");
    let out = child.wait_with_output().expect("node answers");
    assert!(out.status.success(), "fingerprints.js failed");
    let got: Vec<String> = String::from_utf8(out.stdout)
        .expect("UTF-8")
        .lines()
        .map(str::to_owned)
        .collect();
    let mut want: Vec<String> = tools.iter().map(|t| t.fingerprint.to_string()).collect();
    want.push("served".into());
    assert_eq!(got, want);
}

#[test]
fn a_listing_whose_fingerprint_is_not_its_signature_s_is_refused() {
    let Some((node, build)) = built() else { return };
    let text = std::fs::read_to_string(listing_path()).expect("the listing");
    let tampered = text.replacen("sha256:8e", "sha256:9e", 1);
    assert_ne!(text, tampered, "the fixture's first fingerprint starts 8e");
    let dir = scratch("tampered");
    std::fs::write(dir.join("listing.json"), tampered).expect("written");
    let out = Command::new(node)
        .arg(build.join("test/echo.js"))
        .arg(dir.join("listing.json"))
        .stdin(Stdio::null())
        .output()
        .expect("node runs");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("$.tools[0].fingerprint: the listed fingerprint sha256:9e"),
        "{stderr}"
    );
}

#[test]
fn args_read_by_the_plan_land_in_declaration_order() {
    let Some((node, build)) = built() else { return };
    let out = run(
        Command::new(node)
            .arg(build.join("test/args_order.js"))
            .arg(listing_path()),
        "args_order.js",
    );
    let replies: Vec<Json> = String::from_utf8(out.stdout)
        .expect("UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(outcome_of(&replies, "plan"), &json!({"Ok": 9}));
    assert_eq!(outcome_of(&replies, "other"), &json!({"Ok": 9}));
    assert_eq!(
        outcome_of(&replies, "bad"),
        &json!({"NotRun": "the args do not decode: the argument `a` does not decode: $: expected Int, found \"x\""})
    );
}

#[test]
fn a_call_past_the_line_limit_is_not_run_as_core_words_it() {
    let Some(mut echo) = Echo::start() else {
        return;
    };
    let big = "x".repeat(17 << 20);
    let line = call("big", "echo", &format!(r#"{{"text":"{big}"}}"#));
    echo.send(&[line.clone(), call("after", "echo", r#"{"text":"still"}"#)]);
    let (status, replies) = echo.finish();
    assert_eq!(status, Some(0));
    // Core's ToolkitConn, over the same line.
    let text = std::fs::read(listing_path()).expect("the listing");
    let listing = Listing::parse(&text).expect("the fixture listing");
    let mut conn = ToolkitConn::new(listing.tools, ToolkitLimits::default());
    conn.handle_data(0, format!("{line}\n").as_bytes());
    let want: Json = serde_json::from_slice(conn.pending_output()).expect("core's reply");
    assert_eq!(outcome_of(&replies, "big"), &want["params"]["outcome"]);
    assert_eq!(outcome_of(&replies, "after"), &json!({"Ok": "still"}));
}
