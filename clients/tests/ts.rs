//! The TypeScript client (`hale api client --lang ts`), held by the real
//! compiler (`tsc` 7 under the flags the issue names) and run by Node:
//!
//! - golden: the witness's Public and Admin clients under
//!   `clients/golden/ts/` are what the witness generates (`--check`), and a
//!   client made against an older program fails `--check` naming its digest;
//! - wire: the client's request for every HTTP record of the witness is the
//!   record's, and the record's reply decodes to the record's outcome;
//!   `Mode::Lost` is a TransportError; a unix: endpoint is not spoken;
//! - live: against `hale demo` over HTTP and the hub, every outcome the
//!   control socket can provoke and a subscription's every end;
//! - streams: a scripted hub (Node's `ws`, a peer) for what a real hub does
//!   not show on demand: a gap in seq, frames outside the contract;
//! - type-level: an exhaustive consumer compiles, a consumer matching a
//!   handler error a row does not declare does not;
//! - many surfaces: a table of programs, each client compiled, each the
//!   same bytes twice, and the names that would collide refused.
//!
//! Every client and the driver (`tests/ts/driver.ts`) are compiled into a
//! temporary folder outside the checkout (so no `@types` is picked up).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use limen_clients::replay::{witness_records, Mode, Replay, Transport};
use limen_clients::{hale, node, root, tsc, witness};
use serde_json::{json, Value};

/// The flags every client is held to (issue #29).
const TSC_FLAGS: &[&str] = &[
    "--strict",
    "--noUnusedLocals",
    "--noImplicitReturns",
    "--target",
    "es2022",
    "--lib",
    "es2022,dom",
    "--module",
    "es2022",
];

/// How long any one thing a test waits for may take.
const DEADLINE: Duration = Duration::from_secs(20);

/// tsc and node, or `None` after the skip message.
fn peers() -> Option<(PathBuf, PathBuf)> {
    Some((tsc()?, node()?))
}

/// A fresh folder under the system's temporary folder, removed on drop.
struct Temp(PathBuf);

impl Temp {
    fn new(tag: &str) -> Temp {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "limen-ts-{}-{tag}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Temp(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `hale ARGS`: exit status, stdout, stderr.
fn run_hale(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(hale()).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// The TypeScript client of `surface` of the program at `program`.
fn client_of(program: &Path, surface: &str) -> String {
    let (code, out, err) = run_hale(&[
        "api",
        "client",
        "--surface",
        surface,
        "--lang",
        "ts",
        program.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "hale api client --surface {surface}: {err}");
    out
}

/// `tsc` over `files` of `dir` (emitting beside them); its exit status and
/// what it printed.
fn compile(tsc: &Path, dir: &Path, files: &[&str], emit: bool) -> (bool, String) {
    let mut cmd = Command::new(tsc);
    cmd.current_dir(dir).args(TSC_FLAGS);
    if !emit {
        cmd.arg("--noEmit");
    }
    let out = cmd.args(files).output().unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// The committed file `clients/<rel>`.
fn committed(rel: &str) -> String {
    let path = root().join("clients").join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The witness program with `from` replaced by `to` (a row edited), in `dir`.
fn edited_witness(witness: &Path, dir: &Temp, from: &str, to: &str) -> PathBuf {
    let text = std::fs::read_to_string(witness.join("program.hl")).unwrap();
    assert!(text.contains(from), "the witness no longer has {from:?}");
    let path = dir.path("program.hl");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
    path
}

/// The edit that moves Public's digest and keeps every name of its client:
/// `PlaceOrder` gains a field with a default.
const PLACE_ORDER: &str = "type PlaceOrder { symbol: String; qty: Int; limit: Money; }";
const PLACE_ORDER_NOTE: &str =
    "type PlaceOrder { symbol: String; qty: Int; limit: Money; note: String = \"\"; }";

/// The driver (`tests/ts/driver.ts`) compiled against `client` (the text
/// of a Public client) in a folder of its own, and running.
struct Driver {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<Value>,
    /// Answers read while waiting for another tag's.
    held: Vec<Value>,
    _dir: Temp,
}

impl Driver {
    fn start(tsc: &Path, node: &Path, client: &str) -> Driver {
        let dir = Temp::new("driver");
        std::fs::write(dir.path("Public.ts"), client).unwrap();
        std::fs::write(dir.path("driver.ts"), committed("tests/ts/driver.ts")).unwrap();
        let (ok, text) = compile(tsc, &dir.0, &["Public.ts", "driver.ts"], true);
        assert!(ok, "the driver does not compile:\n{text}");
        let mut child = Command::new(node)
            .arg("--experimental-websocket")
            .arg("--no-warnings")
            .arg(dir.path("driver.js"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("the driver wrote {line:?}: {e}"));
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        Driver {
            child,
            stdin,
            lines,
            held: Vec::new(),
            _dir: dir,
        }
    }

    fn send(&mut self, command: Value) {
        writeln!(self.stdin, "{command}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Calls `member` as `bearer` at `endpoint` under `tag`.
    fn call(
        &mut self,
        tag: &str,
        endpoint: &str,
        member: &str,
        bearer: Option<&str>,
        payload: &Value,
    ) {
        self.send(json!({"op": "call", "tag": tag, "endpoint": endpoint,
            "member": member, "bearer": bearer, "payload": payload}));
    }

    /// Subscribes to Fills as `bearer` at `endpoint` under `tag`.
    fn subscribe(&mut self, tag: &str, endpoint: &str, bearer: Option<&str>) {
        self.send(json!({"op": "subscribe", "tag": tag, "endpoint": endpoint, "bearer": bearer}));
    }

    /// The next answer under `tag`, or `None` when none came within `wait`.
    fn next_within(&mut self, tag: &str, wait: Duration) -> Option<Value> {
        if let Some(at) = self.held.iter().position(|v| v["tag"] == tag) {
            return Some(self.held.remove(at));
        }
        let end = Instant::now() + wait;
        loop {
            let left = end.checked_duration_since(Instant::now())?;
            let value = self.lines.recv_timeout(left).ok()?;
            if let Some(e) = value.get("error") {
                panic!("the driver failed: {e}");
            }
            if value["tag"] == tag {
                return Some(value);
            }
            self.held.push(value);
        }
    }

    /// The outcome of whichever call under `tags` answers first, within the
    /// deadline; its tag is taken out of `tags`.
    fn outcome_of_any(&mut self, tags: &mut Vec<String>) -> (String, Value) {
        let end = Instant::now() + DEADLINE;
        loop {
            if let Some(at) = self
                .held
                .iter()
                .position(|v| tags.iter().any(|t| v["tag"] == t.as_str()))
            {
                let mut v = self.held.remove(at);
                let tag = v["tag"].as_str().unwrap().to_string();
                tags.retain(|t| *t != tag);
                return (tag, v["outcome"].take());
            }
            let left = end
                .checked_duration_since(Instant::now())
                .unwrap_or_else(|| panic!("none of {tags:?} answered within {DEADLINE:?}"));
            let value = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("none of {tags:?} answered within {DEADLINE:?}"));
            self.held.push(value);
        }
    }

    /// The next answer under `tag`, within the deadline.
    fn next(&mut self, tag: &str) -> Value {
        self.next_within(tag, DEADLINE)
            .unwrap_or_else(|| panic!("no answer under {tag} within {DEADLINE:?}"))
    }

    /// The outcome of the call under `tag`: the client's, or
    /// `{"transport_error": message}`.
    fn outcome(&mut self, tag: &str) -> Value {
        let mut v = self.next(tag);
        let o = v.as_object_mut().unwrap();
        o.remove("tag");
        match o.remove("outcome") {
            Some(outcome) => outcome,
            None => v,
        }
    }

    /// The next item of the subscription under `tag`.
    fn item(&mut self, tag: &str) -> Value {
        let v = self.next(tag);
        assert!(v.get("item").is_some(), "{tag}: {v}");
        v["item"].clone()
    }

    /// The subscription under `tag` has finished: its iteration ended.
    fn done(&mut self, tag: &str) {
        assert_eq!(self.next(tag)["done"], true, "{tag}");
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The outcome the client must answer for a witness reply.
fn expected_outcome(outcome: &str, body: &Value) -> Value {
    match outcome {
        "result" => json!({"kind": "result", "value": body}),
        "handler_error" => json!({"kind": "handler_error", "error": body}),
        "refusal" => json!({"kind": "refusal", "refusal": body["refusal"]}),
        "server_error" => json!({"kind": "server_error"}),
        other => panic!("an outcome {other}"),
    }
}

#[test]
fn the_golden_clients_are_what_the_witness_generates_and_compile() {
    let Some(witness) = witness() else { return };
    let program = witness.join("program.hl");
    let golden = root().join("clients/golden/ts");
    for surface in ["Public", "Admin"] {
        let file = golden.join(format!("{surface}.ts"));
        let (code, _, err) = run_hale(&[
            "api",
            "client",
            "--surface",
            surface,
            "--lang",
            "ts",
            "--check",
            file.to_str().unwrap(),
            program.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{surface}: {err}");
    }
    // A client made against an older program (PlaceOrder without... with a
    // field more) fails --check against the witness, naming the digest it
    // was made against.
    let dir = Temp::new("older");
    let older = edited_witness(&witness, &dir, PLACE_ORDER, PLACE_ORDER_NOTE);
    let stale = client_of(&older, "Public");
    let stale_digest = stale
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().find(|w| w.starts_with("fnv1a64:")))
        .map(|w| w.trim_end_matches('.').to_string())
        .unwrap();
    assert_ne!(stale, committed("golden/ts/Public.ts"));
    let path = dir.path("Public.ts");
    std::fs::write(&path, &stale).unwrap();
    let (code, _, err) = run_hale(&[
        "api",
        "client",
        "--surface",
        "Public",
        "--lang",
        "ts",
        "--check",
        path.to_str().unwrap(),
        program.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains(&stale_digest), "{err}");

    let Some((tsc, _)) = peers() else { return };
    let dir = Temp::new("golden");
    for surface in ["Public", "Admin"] {
        std::fs::write(
            dir.path(&format!("{surface}.ts")),
            committed(&format!("golden/ts/{surface}.ts")),
        )
        .unwrap();
    }
    let (ok, text) = compile(&tsc, &dir.0, &["Public.ts", "Admin.ts"], false);
    assert!(ok, "the golden clients do not compile:\n{text}");
}

#[test]
fn every_http_record_is_the_request_the_client_writes_and_decodes_to_its_outcome() {
    let Some(records) = witness_records(Transport::Http) else {
        return;
    };
    let Some((tsc, node)) = peers() else { return };
    let mut d = Driver::start(&tsc, &node, &committed("golden/ts/Public.ts"));
    for r in &records {
        let mut replay = Replay::serve(r, Mode::Answer).unwrap();
        if r.kind.as_deref() == Some("digest_mismatch") {
            // The record sends a digest no client generated from the
            // witness names; this client sends DIGEST, always.
            replay = replay.ignoring(&["/headers/Hale-Surface-Digest"]);
        }
        d.call(
            &r.name,
            replay.endpoint(),
            &r.member,
            r.bearer.as_deref(),
            &r.payload,
        );
        let got = d.outcome(&r.name);
        replay
            .finish()
            .unwrap_or_else(|e| panic!("{}: {e}", r.name));
        assert_eq!(
            got,
            expected_outcome(&r.outcome, &r.reply()["body"]),
            "{}",
            r.name
        );
    }
    // What the digest-mismatch refusal carries, typed.
    let mismatch = records
        .iter()
        .find(|r| r.name == "refusal_digest_mismatch")
        .unwrap();
    let replay = Replay::serve(mismatch, Mode::Answer).unwrap();
    d.call(
        "served",
        replay.endpoint(),
        &mismatch.member,
        mismatch.bearer.as_deref(),
        &mismatch.payload,
    );
    assert_eq!(
        d.outcome("served")["refusal"]["served"],
        "fnv1a64:a8930d6e7998e986"
    );
    drop(replay);

    let result = records.iter().find(|r| r.name == "result").unwrap();
    // The fifth outcome: the connection ends with no reply.
    let replay = Replay::serve(result, Mode::Lost).unwrap();
    d.call(
        "lost",
        replay.endpoint(),
        &result.member,
        result.bearer.as_deref(),
        &result.payload,
    );
    let lost = d.outcome("lost");
    replay.finish().unwrap();
    assert!(
        lost["transport_error"]
            .as_str()
            .is_some_and(|m| m.contains("did not answer")),
        "{lost}"
    );
    // A reply outside the contract is a TransportError too: a 422 for
    // `Orders::place`, whose row declares no handler error.
    let handler = records.iter().find(|r| r.name == "handler_error").unwrap();
    let replay = Replay::serve(handler, Mode::Answer).unwrap();
    d.call(
        "outside",
        replay.endpoint(),
        "Orders::place",
        Some("t-alice"),
        &result.payload,
    );
    let outside = d.outcome("outside");
    assert!(
        outside["transport_error"]
            .as_str()
            .is_some_and(|m| m.contains("outside the contract (status 422)")),
        "{outside}"
    );
    // The client does not speak a socket: a unix: endpoint is the caller's
    // mistake (a TypeError), not an outcome.
    d.call(
        "unix",
        "unix:/tmp/nowhere.sock",
        "Orders::place",
        None,
        &result.payload,
    );
    let unix = d.next("unix");
    assert!(
        unix["thrown"]
            .as_str()
            .is_some_and(|m| m.starts_with("TypeError") && m.contains("http://")),
        "{unix}"
    );
}

/// `hale demo` on ports of the system's choosing, with a hub and a control
/// socket, killed when dropped.
struct Demo {
    child: Child,
    public: String,
    hub: String,
    control: PathBuf,
    _dir: Temp,
}

impl Demo {
    fn start(extra: &[&str]) -> Demo {
        let dir = Temp::new("demo");
        let control = dir.path("control.sock");
        let admin = dir.path("admin.sock");
        let mut child = Command::new(hale())
            .args([
                "demo",
                "--public",
                "127.0.0.1:0",
                "--partner",
                "127.0.0.1:0",
            ])
            .args(["--mcp", "127.0.0.1:0", "--hub", "127.0.0.1:0"])
            .arg("--admin-socket")
            .arg(&admin)
            .arg("--control")
            .arg(&control)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The banner names each listener; the control socket is bound
        // before the banner's last line.
        let (tx, rx) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let (mut public, mut hub) = (None, None);
        let end = Instant::now() + DEADLINE;
        loop {
            let left = end
                .checked_duration_since(Instant::now())
                .expect("hale demo printed no banner in time");
            let line = rx.recv_timeout(left).expect("hale demo ended early");
            let word = |scheme: &str| {
                line.split_whitespace()
                    .find(|w| w.starts_with(scheme))
                    .map(str::to_string)
            };
            if line.contains("/public ") {
                public = word("http://");
            }
            if line.contains("hub@") {
                hub = word("ws://");
            }
            if line.starts_with("stop with") {
                break;
            }
        }
        Demo {
            child,
            public: public.expect("public's endpoint in the banner"),
            hub: hub.expect("the hub's endpoint in the banner"),
            control,
            _dir: dir,
        }
    }

    /// One control line, answered `ok`.
    fn control(&self, line: &str) {
        let mut s = std::os::unix::net::UnixStream::connect(&self.control).unwrap();
        s.set_read_timeout(Some(DEADLINE)).unwrap();
        writeln!(s, "{line}").unwrap();
        let mut answer = String::new();
        BufReader::new(s).read_line(&mut answer).unwrap();
        assert!(answer.starts_with("ok"), "{line}: {answer}");
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port nothing listens on: bound, then released.
fn dead_port() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    format!("http://{addr}")
}

#[test]
fn live_against_hale_demo_every_outcome_and_every_end_of_a_subscription() {
    let Some(witness) = witness() else { return };
    let Some((tsc, node)) = peers() else { return };
    let order = json!({"symbol": "ACME", "qty": 10, "limit": 12500});
    // bound 2: two calls held at the gate (one executing, one queued) make
    // the third `full`, and `stop` then refuses the queued one.
    let demo = Demo::start(&["--bound", "2"]);
    let mut d = Driver::start(&tsc, &node, &committed("golden/ts/Public.ts"));
    let (public, hub) = (demo.public.clone(), demo.hub.clone());

    // A subscription sees the fill of every order placed after it is
    // admitted, with its seq.
    d.subscribe("fills", &hub, Some("t-dave"));
    assert_eq!(
        d.item("fills"),
        json!({"kind": "subscribed", "topic": "Fills"})
    );
    d.call("place", &public, "Orders::place", Some("t-alice"), &order);
    let placed = d.outcome("place");
    assert_eq!(placed["kind"], "result", "{placed}");
    let id = placed["value"]["order"].clone();
    assert_eq!(placed["value"]["notional"], 125000);
    assert_eq!(
        d.item("fills"),
        json!({"kind": "event", "seq": 1, "shed": 0,
               "payload": {"order": id, "qty": 10, "price": 12500}})
    );
    d.call("place2", &public, "Orders::place", Some("t-alice"), &order);
    assert_eq!(d.outcome("place2")["kind"], "result");
    let second = d.item("fills");
    assert_eq!((&second["seq"], &second["shed"]), (&json!(2), &json!(0)));

    // The handler error, typed; the refusals the sources give.
    d.call(
        "cancel",
        &public,
        "Orders::cancel",
        Some("t-alice"),
        &json!({"order": 999}),
    );
    assert_eq!(
        d.outcome("cancel"),
        json!({"kind": "handler_error", "error": {"code": "unknown_order", "reason": "no order 999"}})
    );
    d.call(
        "bob",
        &public,
        "Orders::cancel",
        Some("t-bob"),
        &json!({"order": id}),
    );
    assert_eq!(
        d.outcome("bob"),
        json!({"kind": "refusal", "refusal": {"kind": "unauthorized",
               "reason": "Orders::cancel requires trader", "requires": ["trader"]}})
    );
    d.call("nobody", &public, "Orders::place", None, &order);
    assert_eq!(d.outcome("nobody")["refusal"]["kind"], "unauthenticated");
    // The server error: a violation of place's closure.
    d.call(
        "violate",
        &public,
        "Orders::place",
        Some("t-alice"),
        &json!({"symbol": "ACME", "qty": 100000, "limit": 1}),
    );
    assert_eq!(d.outcome("violate"), json!({"kind": "server_error"}));
    // A dead port is the fifth outcome, never a refusal.
    d.call(
        "dead",
        &dead_port(),
        "Orders::place",
        Some("t-alice"),
        &order,
    );
    assert!(d.outcome("dead")["transport_error"].is_string());

    // A client made against a changed program: digest_mismatch, with the
    // digest served.
    let dir = Temp::new("changed");
    let changed = edited_witness(&witness, &dir, PLACE_ORDER, PLACE_ORDER_NOTE);
    let mut old = Driver::start(&tsc, &node, &client_of(&changed, "Public"));
    old.call("old", &public, "Orders::place", Some("t-alice"), &order);
    let mismatch = old.outcome("old");
    assert_eq!(mismatch["refusal"]["kind"], "digest_mismatch", "{mismatch}");
    assert_eq!(mismatch["refusal"]["served"], "fnv1a64:a8930d6e7998e986");
    drop(old);

    // revoked: the grant is taken away; the subscription ends with it.
    demo.control("revoke dave operator");
    assert_eq!(d.item("fills"), json!({"kind": "revoked"}));
    d.done("fills");
    demo.control("grant dave operator");
    // expired: a credential stated to expire soon ends the subscription
    // at that instant.
    demo.control("expire t-dave 2500");
    d.subscribe("expiring", &hub, Some("t-dave"));
    assert_eq!(d.item("expiring")["kind"], "subscribed");
    assert_eq!(d.item("expiring"), json!({"kind": "expired"}));
    d.done("expiring");
    demo.control("expire t-dave 0");
    // Refused subscriptions: no grant, no credential.
    d.subscribe("bob", &hub, Some("t-bob"));
    assert_eq!(
        d.item("bob"),
        json!({"kind": "refusal", "refusal": {"kind": "unauthorized",
               "reason": "Fills requires operator", "requires": ["operator"]}})
    );
    d.done("bob");
    d.subscribe("anon", &hub, None);
    assert_eq!(d.item("anon")["refusal"]["kind"], "unauthenticated");

    // unavailable: the receiver drains.
    demo.control("drain orders");
    d.call("drained", &public, "Orders::place", Some("t-alice"), &order);
    assert_eq!(d.outcome("drained")["refusal"]["kind"], "unavailable");
    demo.control("resume orders");

    // full, then shutting_down: the gate holds what is accepted; calls go
    // in one at a time until one is refused full (each held one is seen
    // not answered within a short wait, which no gated call can be).
    d.subscribe("closing", &hub, Some("t-dave"));
    assert_eq!(d.item("closing")["kind"], "subscribed");
    demo.control("gate orders");
    let mut held = Vec::new();
    let mut full = None;
    for n in 0..20 {
        let tag = format!("held{n}");
        d.call(&tag, &public, "Orders::place", Some("t-alice"), &order);
        match d.next_within(&tag, Duration::from_secs(1)) {
            None => held.push(tag),
            Some(mut v) => {
                let o = v["outcome"].take();
                if o["refusal"]["kind"] == "full" {
                    full = Some(o);
                    break;
                }
                // A receiver resumed after draining refuses the first
                // call once more, as it is asked again.
                assert_eq!(o["refusal"]["kind"], "unavailable", "{o}");
            }
        }
    }
    let full = full.expect("a call refused full");
    assert_eq!(
        full["refusal"]["reason"],
        "the exposure holds its bound of requests accepted and not yet answered"
    );
    // Two are held at the gate (a refusal slower than the wait above
    // would be among them, answered full below).
    assert!(held.len() >= 2, "{held:?}");
    // stop: the queued call is refused shutting_down; the executing one
    // is answered once the gate opens; the hub writes closed.
    demo.control("stop");
    let mut kinds = Vec::new();
    while !kinds.contains(&"shutting_down".to_string()) {
        let (_, o) = d.outcome_of_any(&mut held);
        kinds.push(o["refusal"]["kind"].as_str().unwrap().to_string());
    }
    demo.control("open orders");
    let mut executed = Value::Null;
    while !held.is_empty() {
        let (_, o) = d.outcome_of_any(&mut held);
        if o["kind"] == "result" {
            executed = o;
        } else {
            kinds.push(o["refusal"]["kind"].as_str().unwrap().to_string());
        }
    }
    assert_eq!(executed["kind"], "result", "{executed}");
    kinds.retain(|k| k != "full");
    assert_eq!(kinds, ["shutting_down"]);
    // Its fill reaches the subscription before the hub closes it.
    let fill = d.item("closing");
    assert_eq!(
        (&fill["seq"], &fill["payload"]["order"]),
        (&json!(1), &executed["value"]["order"])
    );
    assert_eq!(
        d.item("closing"),
        json!({"kind": "closed", "reason": "shutting_down"})
    );
    d.done("closing");
    drop(demo);

    // lost: the hub dies with no closed frame.
    let mut demo = Demo::start(&[]);
    d.subscribe("dying", &demo.hub, Some("t-dave"));
    assert_eq!(d.item("dying")["kind"], "subscribed");
    demo.child.kill().unwrap();
    let lost = d.item("dying");
    assert_eq!(lost["kind"], "lost", "{lost}");
    d.done("dying");
}

#[test]
fn an_exhaustive_consumer_compiles_and_one_matching_an_undeclared_handler_error_does_not() {
    let Some((tsc, _)) = peers() else { return };
    let dir = Temp::new("types");
    std::fs::write(dir.path("Public.ts"), committed("golden/ts/Public.ts")).unwrap();
    for f in ["exhaustive.ts", "no_handler_error.ts"] {
        std::fs::write(dir.path(f), committed(&format!("tests/ts/{f}"))).unwrap();
    }
    let (ok, text) = compile(&tsc, &dir.0, &["Public.ts", "exhaustive.ts"], false);
    assert!(ok, "the exhaustive consumer does not compile:\n{text}");
    let (ok, text) = compile(&tsc, &dir.0, &["Public.ts", "no_handler_error.ts"], false);
    assert!(!ok, "a handler error of Orders::place compiled");
    assert!(
        text.contains("no_handler_error.ts(9,")
            && text.contains("TS2678")
            && text.contains("\"handler_error\""),
        "{text}"
    );
}

/// The library the imports case reads, at `lib/lib.hl` beside the program.
const LIB: &str = "role trader;\nunit cent;\ntype Money = quantity Int in cent;\ntype Item { sku: String; price: Money; }\n";

/// What a case of [`SURFACES`] expects: the text its client must contain,
/// or the words its refusal must say.
type Expect = Result<&'static [&'static str], &'static [&'static str]>;

/// Programs of varied surfaces (each `S`): what each is, its text, and what
/// it expects.
const SURFACES: &[(&str, &str, Expect)] = &[
    (
        "scalars, no request, no response, no hub",
        "role r;\nunit cent;\ntype Money = quantity Int in cent;\ntype OrderId = distinct Int;\n\
         api S { rpc L::double requires: [r]; rpc L::ping; rpc L::flag; rpc L::name; rpc L::money; }\n\
         locus L {\n fn double(n: Int) -> Int { return n + n; }\n fn ping() { }\n\
         fn flag(b: Bool) -> Float { return 1.5; }\n fn name(s: String) -> String { return s; }\n\
         fn money(m: Money) -> OrderId fallible(ClosureViolation) { return OrderId(1); }\n}\n",
        Ok(&[
            "request: number,",
            "): Promise<LPingOutcome> {",
            "| CallResult<null>",
            "    request: boolean,\n",
            "export type LFlagOutcome =\n    | CallResult<number>",
            "export type LNameOutcome =\n    | CallResult<string>",
        ]),
    ),
    (
        "nested records, json: keys, defaults, a handler error",
        "role r;\ntype Deep { s: String json:\"the-s\"; n: Int = 7; }\n\
         type Inner { d: Deep; flag: Bool = true; }\ntype Outer { inner: Inner; k: Int json:\"1st\"; }\n\
         type Oops { why: String; }\napi S { rpc Nest::go requires: [r]; }\n\
         locus Nest { fn go(o: Outer) -> Inner fallible(Oops) { return o.inner; } }\n",
        Ok(&[
            "    \"the-s\": string;\n",
            "    n?: number;\n",
            "    \"1st\": number;\n",
            "    inner: Inner;\n",
            "| CallHandlerError<Oops>",
        ]),
    ),
    (
        "reserved words as types, fields and members",
        "role r;\ntype Promise { class: Int; delete: String; }\ntype string { new: Bool; constructor: Int; }\n\
         type Refusal { __proto__: Int; function: Promise; }\n\
         api S { rpc Class::delete requires: [r]; rpc Class::new requires: [r]; rpc Api::function; }\n\
         locus Class {\n fn delete(p: Promise) -> string { return string { new: true, constructor: p.class }; }\n\
         fn new(s: string) -> Refusal fallible(Promise) { return Refusal { __proto__: 1, function: Promise { class: 1, delete: \"\" } }; }\n}\n\
         locus Api { fn function(x: Refusal) -> Int { return x.__proto__; } }\n",
        Ok(&[
            "export interface Promise_ {\n    class: number;\n    delete: string;\n",
            "export interface string_ {",
            "export interface Refusal_ {\n    __proto__: number;\n    function: Promise_;\n",
            "export async function classDelete(",
            "export async function classNew(",
            "export async function apiFunction(",
            "| CallHandlerError<Promise_>",
        ]),
    ),
    (
        "an imported type",
        "import \"lib/lib.hl\" as lib;\ntype Ack { ok: Bool; item: lib::Item; }\n\
         locus Shop { fn buy(i: lib::Item) -> Ack { return Ack { ok: true, item: i }; } }\n\
         api S { rpc Shop::buy requires: [trader]; }\n",
        Ok(&[
            "/** Hale type `lib::Item`. */\nexport interface lib_Item {",
            "    item: lib_Item;\n",
            "    request: lib_Item,\n",
        ]),
    ),
    (
        "a ws:// hub with two streams",
        HUB_PROGRAM,
        Ok(&[
            "export type QuotesItem = StreamItem<Quote>;",
            "export function subscribeQuotes(opts: SubscribeOptions)",
            "export type TicksItem = StreamItem<Tick>;",
            "export function subscribeTicks(opts: SubscribeOptions)",
        ]),
    ),
    (
        "two names that come out the same: a type and a member's outcome",
        "role r;\ntype LFOutcome { n: Int; }\napi S { rpc L::f requires: [r]; }\n\
         locus L { fn f(a: LFOutcome) -> Int { return a.n; } }\n",
        Err(&["rpc `L::f`", "type `LFOutcome`"]),
    ),
    (
        "two names that come out the same: an imported type and a declared one",
        "import \"lib/lib.hl\" as lib;\ntype lib_Item { n: Int; }\ntype Both { a: lib::Item; b: lib_Item; }\n\
         locus Shop { fn buy(i: Both) -> Int { return 1; } }\napi S { rpc Shop::buy requires: [trader]; }\n",
        Err(&["type `lib_Item`", "type `lib::Item`"]),
    ),
];

/// A program with a ws:// hub of two streams (`Ticks`, `Quotes`).
const HUB_PROGRAM: &str = "role r;\ntype Tick { n: Int; }\ntype Quote { sym: String; px: Float; }\n\
topic Ticks { payload: Tick; subject: \"t.ticks\"; }\ntopic Quotes { payload: Quote; subject: \"t.quotes\"; }\n\
api S { rpc B::one requires: [r]; }\n\
locus B { bus { publish Ticks; publish Quotes; } fn one(t: Tick) -> Tick { return t; } }\n\
locus G { fn holds(p: std::api::Principal, r: String) -> Bool { return true; } }\n\
locus T { fn principal(token: String) -> std::api::Principal { return std::api::Principal { mode: \"bearer\", name: token }; } }\n\
main locus M {\n\
params { b: B = B { }; g: G = G { }; t: T = T { }; h: ws::Hub = ws::Hub { bind: \"127.0.0.1:0\", principals: self.t, roles: self.g, as: \"feed\" }; }\n\
bindings { Ticks: self.h requires: [r], bound: 4, on_full: drop_new; Quotes: self.h bound: 8, on_full: drop_old; }\n\
run() { let s = api::serve(S, http::Rpc { bind: \"127.0.0.1:0\", principals: self.t, roles: self.g }, as: \"front\", receivers: { B: self.b }, bound: 4, on_full: refuse); }\n\
}\n";

#[test]
fn varied_surfaces_each_give_a_client_that_compiles_the_same_twice() {
    let dir = Temp::new("many");
    std::fs::create_dir_all(dir.path("lib")).unwrap();
    std::fs::write(dir.path("lib/lib.hl"), LIB).unwrap();
    // The hub's program with a datagram hub: its streams are listed, not
    // spoken.
    let udp = HUB_PROGRAM.replace(
        "ws::Hub = ws::Hub { bind: \"127.0.0.1:0\", principals: self.t,",
        "udp::Hub = udp::Hub { bind: \"127.0.0.1:0\",",
    );
    let udp_case = (
        "a udp:// hub",
        udp.as_str(),
        Ok(&["Hub `feed` is udp: its streams (`Quotes`, `Ticks`) are not spoken here."][..]),
    );
    let mut files = Vec::new();
    for (i, (what, program, expect)) in SURFACES.iter().copied().chain([udp_case]).enumerate() {
        let path = dir.path(&format!("p{i}.hl"));
        std::fs::write(&path, program).unwrap();
        let args = [
            "api",
            "client",
            "--surface",
            "S",
            "--lang",
            "ts",
            path.to_str().unwrap(),
        ];
        let first = run_hale(&args);
        assert_eq!(first, run_hale(&args), "{what}: not the same twice");
        let (code, client, err) = first;
        match expect {
            Ok(needles) => {
                assert_eq!(code, 0, "{what}: {err}");
                for needle in needles {
                    assert!(
                        client.contains(needle),
                        "{what}: no {needle:?} in\n{client}"
                    );
                }
                if what.contains("udp") {
                    assert!(!client.contains("subscribe$"), "{what}");
                }
                let file = format!("c{i}.ts");
                std::fs::write(dir.path(&file), client).unwrap();
                files.push(file);
            }
            Err(words) => {
                assert_eq!(code, 1, "{what}: generated\n{client}");
                for w in words {
                    assert!(err.contains(w), "{what}: {w:?} not in {err}");
                }
            }
        }
    }
    let Some((tsc, _)) = peers() else { return };
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    let (ok, text) = compile(&tsc, &dir.0, &files, false);
    assert!(ok, "the clients do not compile:\n{text}");
}

/// The scripted hub (`tests/ts/scripted_hub.mjs`) running, and its port.
struct ScriptedHub {
    child: Child,
    endpoint: String,
    lines: Receiver<Value>,
    _dir: Temp,
}

impl ScriptedHub {
    fn start(node: &Path) -> Option<ScriptedHub> {
        let ws = root().join(".peers/node/node_modules/ws/wrapper.mjs");
        if !ws.is_file() {
            limen_clients::absent(&format!("Node's ws ({}) is absent", ws.display()));
            return None;
        }
        let dir = Temp::new("hub");
        std::fs::write(dir.path("hub.mjs"), committed("tests/ts/scripted_hub.mjs")).unwrap();
        let mut child = Command::new(node)
            .arg(dir.path("hub.mjs"))
            .arg(&ws)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx
                    .send(serde_json::from_str::<Value>(&line).unwrap())
                    .is_err()
                {
                    break;
                }
            }
        });
        let port = lines
            .recv_timeout(DEADLINE)
            .expect("the scripted hub's port")["port"]
            .clone();
        Some(ScriptedHub {
            child,
            endpoint: format!("ws://127.0.0.1:{port}"),
            lines,
            _dir: dir,
        })
    }

    /// What the next connection sent: its path and its first frame.
    fn connection(&self) -> Value {
        self.lines
            .recv_timeout(DEADLINE)
            .expect("a connection to the scripted hub")
    }
}

impl Drop for ScriptedHub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_subscription_shows_the_gap_ignores_what_is_not_its_own_and_ends_lost_outside_the_contract() {
    let Some((tsc, node)) = peers() else { return };
    let Some(hub) = ScriptedHub::start(&node) else {
        return;
    };
    let mut d = Driver::start(&tsc, &node, &committed("golden/ts/Public.ts"));
    let event = |seq: u64, shed: u64, order: u64| {
        json!({"kind": "event", "seq": seq, "shed": shed,
               "payload": {"order": order, "qty": 1, "price": 2}})
    };
    let subscribed = json!({"kind": "subscribed", "topic": "Fills"});
    let closed = json!({"kind": "closed", "reason": "shutting_down"});

    // The gap: seq 2 and 3 were shed.
    d.subscribe("gap", &hub.endpoint, Some("gap"));
    let seen = hub.connection();
    assert_eq!(seen["url"], "/?access_token=gap");
    assert_eq!(
        seen["first"],
        json!({"type": "subscribe", "topic": "Fills"})
    );
    for want in [
        subscribed.clone(),
        event(1, 0, 41),
        event(4, 2, 44),
        event(5, 0, 45),
        closed.clone(),
    ] {
        assert_eq!(d.item("gap"), want);
    }
    d.done("gap");

    // A reply and another topic's event are not this subscription's.
    d.subscribe("shared", &hub.endpoint, Some("shared"));
    hub.connection();
    for want in [subscribed.clone(), event(1, 0, 41), closed] {
        assert_eq!(d.item("shared"), want);
    }
    d.done("shared");

    // No closed frame: lost.
    d.subscribe("cut", &hub.endpoint, Some("cut"));
    hub.connection();
    assert_eq!(d.item("cut"), subscribed);
    assert_eq!(d.item("cut"), event(1, 0, 41));
    let lost = d.item("cut");
    assert_eq!(lost["kind"], "lost", "{lost}");
    d.done("cut");

    // Frames outside the contract end it lost, saying so.
    for (token, why) in [
        ("reason", "an unauthorized frame whose reason is \"bored\""),
        ("backwards", "an event whose seq (2) does not follow 2"),
        ("text", "a frame that is not JSON"),
        ("type", "a frame of type \"gossip\""),
    ] {
        d.subscribe(token, &hub.endpoint, Some(token));
        hub.connection();
        let mut item = d.item(token);
        if item["kind"] == "subscribed" {
            item = d.item(token);
        }
        if item["kind"] == "event" {
            item = d.item(token);
        }
        assert_eq!(
            item,
            json!({"kind": "lost", "why": format!("the hub broke the protocol: {why}")}),
            "{token}"
        );
        d.done(token);
    }

    // The credential is percent-encoded on the upgrade; the refusal frame's
    // object is the refusal.
    d.subscribe("odd", &hub.endpoint, Some("t x&y"));
    let seen = hub.connection();
    assert_eq!(
        (&seen["url"], &seen["token"]),
        (&json!("/?access_token=t%20x%26y"), &json!("t x&y"))
    );
    assert_eq!(
        d.item("odd"),
        json!({"kind": "refusal", "refusal": {"kind": "unauthenticated", "reason": "no such token"}})
    );
    d.done("odd");

    // The consumer ends a subscription: the iteration finishes, no item.
    d.subscribe("held", &hub.endpoint, Some("quiet"));
    hub.connection();
    assert_eq!(d.item("held"), subscribed);
    assert!(d.next_within("held", Duration::from_millis(200)).is_none());
    d.send(json!({"op": "stop", "tag": "held"}));
    d.done("held");
}
