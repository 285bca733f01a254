//! The Hale client (`hale api client --lang hale`), held to what can be
//! checked without running Hale (limen runs none):
//!
//! - the witness's clients are the golden files under `clients/golden/hale/`
//!   (`--check`), and `--check` against a changed program names the digest
//!   the golden was made against;
//! - `hale check` accepts each client beside the program that imports it,
//!   over the witness and varied programs, and a consumer that switches on
//!   every outcome; what `hale check` cannot tell (it does not type a
//!   function's body) is said, and the variant a consumer names is held to
//!   the enum the client declares;
//! - the wire: the bytes each member function writes, read back out of the
//!   golden text (`Reader`), sent to the replay of every witness record and
//!   matched there; the recorded reply decoded by the client's rules to the
//!   record's outcome, and a connection closed with no reply to `Lost`.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use limen_clients::replay::{witness_records, Mode, Replay, Transport, WireRecord};
use limen_clients::{hale, root, witness};
use limen_core::hale::client::hale_lang::{
    self, decode_http_response, decode_line, Decoded, Outcome, Reader,
};
use limen_core::hale::syntax::ast::{Item, TypeBody};
use limen_core::hale::syntax::lexer::{lex, Tok};
use serde_json::Value;

/// How long a replay's answer may take to read.
const READ_WAIT: Duration = Duration::from_secs(15);

fn golden(surface: &str) -> PathBuf {
    root().join(format!("clients/golden/hale/{surface}.client.hl"))
}

fn run(args: &[&str], dir: Option<&Path>) -> Output {
    let mut cmd = Command::new(hale());
    cmd.args(args);
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    cmd.output().expect("hale runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The diagnostics `hale check` printed that are not notes (law 6's
/// statements of a row): each `file:line:col: message` line.
fn diagnostics(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| {
            let mut parts = l.splitn(4, ':');
            let (_, line, col) = (parts.next(), parts.next(), parts.next());
            let numeric = |p: Option<&str>| {
                p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            };
            numeric(line) && numeric(col) && !l.contains(": note: ")
        })
        .map(str::to_string)
        .collect()
}

/// A fresh temporary folder for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("limen-hale-client-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_golden_clients_are_what_the_witness_generates() {
    let Some(w) = witness() else { return };
    let program = w.join("program.hl");
    for surface in ["Public", "Admin"] {
        let g = golden(surface);
        let o = run(
            &[
                "api",
                "client",
                "--surface",
                surface,
                "--lang",
                "hale",
                "--check",
                g.to_str().unwrap(),
                program.to_str().unwrap(),
            ],
            None,
        );
        assert!(
            o.status.success(),
            "{surface}: the golden has drifted; regenerate it with `hale api client --surface {surface} --lang hale --out {} ../shared/hale-witness/program.hl`: {}",
            g.display(),
            stderr(&o)
        );
    }
}

#[test]
fn check_against_a_changed_program_names_the_digest_the_golden_was_made_against() {
    let Some(w) = witness() else { return };
    let dir = scratch("drift");
    let program = std::fs::read_to_string(w.join("program.hl")).unwrap();
    // A row of Public changes: `Orders::place` now requires `trader`.
    let changed = program.replace(
        "rpc Orders::place;",
        "rpc Orders::place requires: [trader];",
    );
    assert_ne!(changed, program);
    std::fs::write(dir.join("program.hl"), changed).unwrap();
    let g = golden("Public");
    let o = run(
        &[
            "api",
            "client",
            "--surface",
            "Public",
            "--lang",
            "hale",
            "--check",
            g.to_str().unwrap(),
            "program.hl",
        ],
        Some(&dir),
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("was made against fnv1a64:a8930d6e7998e986"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// A consumer of both witness clients: calls each member and switches on
/// every variant of its outcome, and subscribes to `Fills`.
const CONSUMER: &str = r#"
fn show_cancel(o: public::Orders_cancelOutcome) -> String {
    match o {
        public::Orders_cancelOutcome::Result(c) => { return "cancelled"; }
        public::Orders_cancelOutcome::HandlerError(e) => { return e.code; }
        public::Orders_cancelOutcome::Refusal(r) => { return r.kind; }
        public::Orders_cancelOutcome::ServerError => { return "server"; }
        public::Orders_cancelOutcome::Lost(why) => { return why; }
    }
}

fn show_place(o: public::Orders_placeOutcome) -> String {
    match o {
        public::Orders_placeOutcome::Result(r) => { return to_string(r.order); }
        public::Orders_placeOutcome::Refusal(r) => { return r.kind + " " + r.served; }
        public::Orders_placeOutcome::ServerError => { return "server"; }
        public::Orders_placeOutcome::Lost(why) => { return why; }
    }
}

fn show_rebalance(o: admin::Ledger_rebalanceOutcome) -> String {
    match o {
        admin::Ledger_rebalanceOutcome::Result(r) => { return to_string(r.moved); }
        admin::Ledger_rebalanceOutcome::Refusal(r) => { return r.requires; }
        admin::Ledger_rebalanceOutcome::ServerError => { return "server"; }
        admin::Ledger_rebalanceOutcome::Lost(why) => { return why; }
    }
}

fn drive() {
    let placed = public::Orders_place("http://127.0.0.1:8080", "t-alice", public::PlaceOrder { symbol: "ACME", qty: 10, limit: 12500 });
    let cancelled = public::Orders_cancel("http://127.0.0.1:8080", "t-alice", public::CancelOrder { order: 41 });
    let moved = admin::Ledger_rebalance("unix:/run/desk/admin.sock", "", admin::Rebalance { book: "main" });
    let fills = public::FillsSubscription { endpoint: "ws://127.0.0.1:9000", bearer: "t-dave" };
    let started = fills.start();
    let next = fills.next_for(1000);
    let lists = public::api_lists("ws://127.0.0.1:9000", "t-dave");
}
"#;

/// A consumer that names a handler error of `Orders::place`, which
/// declares none.
const WRONG_CONSUMER: &str = r#"
fn show_place(o: public::Orders_placeOutcome) -> String {
    match o {
        public::Orders_placeOutcome::HandlerError(e) => { return "no such variant"; }
        public::Orders_placeOutcome::Result(r) => { return "result"; }
    }
}
"#;

/// The variants of the client's enums, as the checker's parser reads them.
fn enums(client: &str) -> Vec<(String, Vec<String>)> {
    let file = limen_core::hale::syntax::parse("client.hl", client).unwrap();
    file.items
        .into_iter()
        .filter_map(|i| match i {
            Item::Type(t) => match t.body {
                TypeBody::Enum(vs) => {
                    Some((t.name.name, vs.into_iter().map(|v| v.name.name).collect()))
                }
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// The `alias::Enum::Variant` paths a consumer writes whose enum the client
/// under `alias` declares: those whose variant it does not declare (what a
/// typing checker would refuse and `hale check` does not look at), and the
/// declared variants of each such enum the consumer never names (a switch
/// that is not exhaustive).
fn variant_paths(consumer: &str, clients: &[(&str, &str)]) -> (Vec<String>, Vec<String>) {
    let toks: Vec<Tok> = lex("consumer.hl", consumer)
        .unwrap()
        .into_iter()
        .map(|t| t.tok)
        .collect();
    let mut out = Vec::new();
    let mut named: Vec<(String, String, String)> = Vec::new();
    for (alias, text) in clients {
        let declared = enums(text);
        for w in toks.windows(5) {
            let [Tok::Ident(a), Tok::Punct("::"), Tok::Ident(e), Tok::Punct("::"), Tok::Ident(v)] =
                w
            else {
                continue;
            };
            if a != alias {
                continue;
            }
            if let Some((_, vs)) = declared.iter().find(|(n, _)| n == e) {
                if !vs.contains(v) {
                    out.push(format!("{a}::{e}::{v}"));
                }
                named.push((a.clone(), e.clone(), v.clone()));
            }
        }
    }
    let mut missing = Vec::new();
    for (alias, text) in clients {
        for (e, vs) in enums(text) {
            if !named.iter().any(|(a, n, _)| a == alias && *n == e) {
                continue;
            }
            for v in vs {
                if !named
                    .iter()
                    .any(|(a, n, w)| a == alias && *n == e && *w == v)
                {
                    let path = format!("{alias}::{e}::{v}");
                    if !missing.contains(&path) {
                        missing.push(path);
                    }
                }
            }
        }
    }
    (out, missing)
}

#[test]
fn the_golden_clients_check_beside_the_witness_and_a_consumer_of_every_outcome() {
    let Some(w) = witness() else { return };
    let dir = scratch("beside");
    let program = std::fs::read_to_string(w.join("program.hl")).unwrap();
    let public = std::fs::read_to_string(golden("Public")).unwrap();
    let admin = std::fs::read_to_string(golden("Admin")).unwrap();
    std::fs::write(dir.join("Public.client.hl"), &public).unwrap();
    std::fs::write(dir.join("Admin.client.hl"), &admin).unwrap();
    let imports = "import \"Public.client.hl\" as public;\nimport \"Admin.client.hl\" as admin;\n";
    for (name, consumer) in [("good.hl", CONSUMER), ("wrong.hl", WRONG_CONSUMER)] {
        std::fs::write(dir.join(name), format!("{program}\n{imports}{consumer}")).unwrap();
        let o = run(&["check", name], Some(&dir));
        // `hale check` does not type a function's body, so it accepts the
        // wrong consumer as well: that the variant does not exist is held
        // below, against the enum the client declares.
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert_eq!(diagnostics(&stderr(&o)), Vec::<String>::new(), "{name}");
    }
    for client in ["Public.client.hl", "Admin.client.hl"] {
        let o = run(&["check", client], Some(&dir));
        assert!(o.status.success(), "{client} alone: {}", stderr(&o));
    }
    let clients = [("public", public.as_str()), ("admin", admin.as_str())];
    let none = Vec::<String>::new();
    // The consumer names every variant of each outcome it switches on, and
    // no other.
    assert_eq!(variant_paths(CONSUMER, &clients), (none.clone(), none));
    let (unknown, _) = variant_paths(WRONG_CONSUMER, &clients);
    assert_eq!(unknown, ["public::Orders_placeOutcome::HandlerError"]);
    let _ = std::fs::remove_dir_all(dir);
}

/// The pointers of a record's request a typed client made from the witness
/// does not write by itself, and whether it can write the request at all:
/// `malformed` carries a payload its type cannot hold (a missing `qty`, a
/// string `order`); `digest_mismatch` a digest of another program; the Unix
/// `refusal_unauthenticated` no digest (the client always names one).
fn ignored(r: &WireRecord) -> (Vec<&'static str>, bool) {
    let digest = match r.transport {
        Transport::Http => "/headers/Hale-Surface-Digest",
        Transport::Unix => "/digest",
    };
    match (r.transport, r.name.as_str()) {
        (_, "refusal_malformed") => (vec![], false),
        (_, "refusal_digest_mismatch") => (vec![digest], true),
        (Transport::Unix, "refusal_unauthenticated") => (vec![digest], true),
        _ => (vec![], true),
    }
}

/// The client's surface for a record: `Public` over HTTP, `Admin` over the
/// socket, by the record's exposure.
fn client_of(r: &WireRecord) -> String {
    let exposure = r.value["exposure"].as_str().unwrap();
    let surface = exposure.split('@').next().unwrap();
    std::fs::read_to_string(golden(surface)).unwrap()
}

/// Sends `bytes` to the replay's endpoint and reads what it answers, whole.
fn exchange(endpoint: &str, bytes: &str) -> String {
    let mut answer = String::new();
    if let Some(path) = endpoint.strip_prefix("unix:") {
        let mut s = UnixStream::connect(path).unwrap();
        s.set_read_timeout(Some(READ_WAIT)).unwrap();
        s.write_all(bytes.as_bytes()).unwrap();
        s.write_all(b"\n").unwrap();
        // One line, or nothing when the replay closes with no reply.
        let _ = BufReader::new(s).read_line(&mut answer);
    } else {
        let host = endpoint.strip_prefix("http://").unwrap();
        let mut s = std::net::TcpStream::connect(host).unwrap();
        s.set_read_timeout(Some(READ_WAIT)).unwrap();
        s.write_all(bytes.as_bytes()).unwrap();
        let _ = s.read_to_string(&mut answer);
    }
    answer
}

fn transport(t: Transport) -> hale_lang::Transport {
    match t {
        Transport::Http => hale_lang::Transport::Http,
        Transport::Unix => hale_lang::Transport::Unix,
    }
}

/// Holds a decoded answer to the record's outcome, kind and refusal.
fn hold_outcome(r: &WireRecord, d: &Decoded) {
    assert_eq!(d.outcome.name(), r.outcome, "{} {}", r.transport, r.name);
    let reply = r.reply();
    let refusal = match r.transport {
        Transport::Http => &reply["body"]["refusal"],
        Transport::Unix => &reply["refusal"],
    };
    match d.outcome {
        Outcome::Refusal => {
            let got = d.refusal.clone().unwrap();
            assert_eq!(Some(got.kind.as_str()), r.kind.as_deref(), "{}", r.name);
            assert_eq!(got.reason, refusal["reason"].as_str().unwrap_or(""));
            assert_eq!(got.served, refusal["served"].as_str().unwrap_or(""));
            let requires: Vec<String> = refusal["requires"]
                .as_array()
                .map(|a| a.iter().map(|v| v.as_str().unwrap().to_string()).collect())
                .unwrap_or_default();
            assert_eq!(got.requires, requires, "{}", r.name);
        }
        Outcome::Result | Outcome::HandlerError => {
            let want = match (r.transport, d.outcome) {
                (Transport::Http, _) => &reply["body"],
                (_, Outcome::Result) => &reply["value"],
                _ => &reply["error"],
            };
            assert_eq!(d.value.as_ref(), Some(want), "{}", r.name);
        }
        Outcome::ServerError => {
            assert_eq!(d.refusal.as_ref().map(|r| r.kind.as_str()), Some("server"));
        }
        Outcome::Lost => panic!("{}: a recorded reply decoded as lost", r.name),
    }
}

#[test]
fn the_bytes_the_golden_clients_write_are_the_records_and_their_replies_decode() {
    for t in [Transport::Http, Transport::Unix] {
        let Some(records) = witness_records(t) else {
            return;
        };
        assert_eq!(records.len(), 10, "{t}: the witness records ten exchanges");
        for r in &records {
            let reader = Reader::new(&client_of(r)).unwrap();
            let (ignore, writable) = ignored(r);
            let bearer = r.bearer.as_deref().unwrap_or("");
            let id = r.value["request"].get("id").cloned().unwrap_or(Value::Null);
            // The generator's wire table writes the record too.
            let mut want = hale_lang::wire_request(
                transport(t),
                &r.member,
                bearer,
                &r.payload,
                &id,
                &r.served,
            );
            let mut recorded = r.request().clone();
            for p in &ignore {
                for v in [&mut want, &mut recorded] {
                    let (parent, key) = p.rsplit_once('/').unwrap();
                    if let Some(Value::Object(m)) = v.pointer_mut(parent) {
                        m.remove(key);
                    }
                }
            }
            assert_eq!(want, recorded, "{t} {}: wire_request", r.name);

            let replay = Replay::serve(r, Mode::Answer).unwrap().ignoring(&ignore);
            let host = replay.endpoint().strip_prefix("http://").unwrap_or("");
            let written =
                reader.written_text(transport(t), host, &r.member, bearer, &r.payload, &id);
            let bytes = match (written, writable) {
                (Ok(b), true) => b,
                (Err(e), false) => {
                    // The typed client cannot write this payload; the
                    // record's own request is sent so its reply is read.
                    eprintln!("{t} {}: not written by a typed client ({e})", r.name);
                    match t {
                        Transport::Unix => r.request().to_string(),
                        Transport::Http => {
                            let body = r.payload.to_string();
                            reader
                                .call(
                                    "api_http_request",
                                    &[
                                        host.into(),
                                        bearer.into(),
                                        r.member.clone().into(),
                                        body.into(),
                                    ],
                                )
                                .unwrap()
                                .as_str()
                                .unwrap()
                                .to_string()
                        }
                    }
                }
                (Ok(b), false) => panic!("{t} {}: a typed client wrote {b}", r.name),
                (Err(e), true) => panic!("{t} {}: {e}", r.name),
            };
            let answer = exchange(replay.endpoint(), &bytes);
            replay
                .finish()
                .unwrap_or_else(|e| panic!("{t} {}: {e}", r.name));
            let decoded = match t {
                Transport::Http => decode_http_response(&answer),
                Transport::Unix => decode_line(&answer),
            };
            hold_outcome(r, &decoded);

            // A connection closed with no reply is the fifth outcome.
            let replay = Replay::serve(r, Mode::Lost).unwrap().ignoring(&ignore);
            let host = replay.endpoint().strip_prefix("http://").unwrap_or("");
            if writable {
                let bytes = reader
                    .written_text(transport(t), host, &r.member, bearer, &r.payload, &id)
                    .unwrap();
                let answer = exchange(replay.endpoint(), &bytes);
                let lost = match t {
                    Transport::Http => decode_http_response(&answer),
                    Transport::Unix => decode_line(&answer),
                };
                assert_eq!(lost.outcome, Outcome::Lost, "{t} {}: {answer:?}", r.name);
                replay.finish().unwrap();
            }
        }
    }
}

/// Programs to generate clients of with the `hale` binary: the client is
/// the same twice, checks alone, and checks beside its program.
const PROGRAMS: &[(&str, &[&str], &str)] = &[
    (
        "calc.hl",
        &["Math"],
        "api Math { rpc Calc::double; rpc Calc::ping; }
locus Calc {
    fn double(n: Int) -> Int { return n * 2; }
    fn ping() { }
}
main locus M { params { calc: Calc = Calc { }; } }
fn main() { M { }; }
",
    ),
    (
        "words.hl",
        &["Words"],
        "role let;
type Inner { type: String json:\"kind\"; match: Int; }
type Outer { self: Inner; request: Float; value: Bool = true; }
api Words { rpc Deep::match requires: [let]; }
locus Deep { fn match(o: Outer) -> Inner fallible(Inner) { return o.self; } }
main locus M { params { d: Deep = Deep { }; } }
fn main() { M { }; }
",
    ),
];

#[test]
fn every_generated_client_checks_beside_its_program() {
    let dir = scratch("many");
    let mut programs: Vec<(String, Vec<&str>, String)> = PROGRAMS
        .iter()
        .map(|(f, s, t)| (f.to_string(), s.to_vec(), t.to_string()))
        .collect();
    for (file, surfaces) in [
        ("desk.hl", vec!["Public", "Admin"]),
        ("second.hl", vec!["Catalog", "second"]),
    ] {
        let text = std::fs::read_to_string(root().join("conformance/programs").join(file)).unwrap();
        programs.push((file.to_string(), surfaces, text));
    }
    for (file, surfaces, text) in programs {
        std::fs::write(dir.join(&file), &text).unwrap();
        for surface in surfaces {
            let args = [
                "api",
                "client",
                "--surface",
                surface,
                "--lang",
                "hale",
                file.as_str(),
            ];
            let first = run(&args, Some(&dir));
            assert!(
                first.status.success(),
                "{file} {surface}: {}",
                stderr(&first)
            );
            let second = run(&args, Some(&dir));
            assert_eq!(
                first.stdout, second.stdout,
                "{file} {surface}: the same bytes twice"
            );
            let client = format!("{surface}.client.hl");
            std::fs::write(dir.join(&client), &first.stdout).unwrap();
            let o = run(&["check", &client], Some(&dir));
            assert!(o.status.success(), "{file} {surface} alone: {}", stderr(&o));
            // Beside the program, under the program's own file name (its
            // seed names its default surface).
            let beside = dir.join("beside");
            std::fs::create_dir_all(&beside).unwrap();
            std::fs::write(beside.join(&client), &first.stdout).unwrap();
            std::fs::write(
                beside.join(&file),
                format!("{text}\nimport \"{client}\" as api;\n"),
            )
            .unwrap();
            let o = run(&["check", &file], Some(&beside));
            assert!(
                o.status.success(),
                "{file} {surface} beside: {}",
                stderr(&o)
            );
            assert_eq!(
                diagnostics(&stderr(&o)),
                Vec::<String>::new(),
                "{file} {surface}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}
