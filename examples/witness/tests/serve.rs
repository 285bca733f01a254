//! `hale serve` of the witness program (`../shared/hale-witness/program.hl`)
//! with its receivers answered by `witness-tool`, a Flow Tool process:
//! real processes throughout — the `hale` binary, one `witness-tool` per
//! receiver instance, and `limen-conformance check` holding the served
//! program to the corpus, as it holds `hale demo`
//! (conformance/tests/live.rs).
//!
//! `hale` and `limen-conformance` are found beside this test's binary
//! (`cargo test --workspace` builds them); `witness-tool` is this crate's.

mod support;

use limen_clients::{absent, workspace_bin};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::{check, config, program, scratch, Served};

/// A `hale serve` of the witness with its receivers answered by
/// `witness-tool` (the configuration [`config`] writes).
impl Served {
    fn start(program: &Path, name: &str, rogue: bool) -> Served {
        Served::start_with(program, name, rogue, "", &[])
    }

    fn start_with(
        program: &Path,
        name: &str,
        rogue: bool,
        extra: &str,
        files: &[(&str, &str)],
    ) -> Served {
        Served::start_args(program, name, rogue, extra, files, &[])
    }

    /// With `extra` appended to the configuration, `files` written beside
    /// it first, and `args` given to `hale serve`.
    fn start_args(
        program: &Path,
        name: &str,
        rogue: bool,
        extra: &str,
        files: &[(&str, &str)],
        args: &[&str],
    ) -> Served {
        let dir = scratch(name);
        for (file, text) in files {
            std::fs::write(dir.join(file), text).unwrap();
        }
        let config = config(&dir, rogue, extra);
        Served::serve(program, dir, &config, args)
    }
}

#[test]
fn public_passes_the_check_as_the_demo_does() {
    let Some(program) = program() else { return };
    Served::start(&program, "public", false).passes_public();
}

#[test]
fn partner_passes_the_check_as_the_demo_does() {
    let Some(program) = program() else { return };
    Served::start(&program, "partner", false).passes_partner();
}

#[test]
fn admin_over_unix_passes_the_check_as_the_demo_does() {
    let Some(program) = program() else { return };
    Served::start(&program, "admin", false).passes_admin();
}

#[test]
fn the_hub_passes_the_check_as_the_demo_s_hub_does() {
    let Some(program) = program() else { return };
    Served::start(&program, "hub", false).passes_hub();
}

/// One HTTP/1.1 call: the status and the body.
fn call(endpoint: &str, token: &str, member: &str, body: &str) -> (u16, String) {
    let addr = endpoint.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "POST /call/{member} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    let status = reply[9..12].parse().unwrap();
    let body = reply.split("\r\n\r\n").nth(1).unwrap_or("").to_owned();
    (status, body)
}

fn place(endpoint: &str, symbol: &str) -> (u16, String) {
    call(
        endpoint,
        "t-alice",
        "Orders::place",
        &format!("{{\"symbol\":\"{symbol}\",\"qty\":10,\"limit\":12500}}"),
    )
}

const SERVER_ERROR: (u16, &str) = (500, r#"{"refusal":{"kind":"server"}}"#);

fn is_server_error(r: &(u16, String)) -> bool {
    (r.0, r.1.as_str()) == SERVER_ERROR
}

fn pid(dir: &Path, instance: &str) -> String {
    std::fs::read_to_string(dir.join(format!("{instance}.pid"))).unwrap_or_default()
}

/// Until `f` holds, at most 10 s.
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < end, "never: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_handler_that_misbehaves_is_the_server_error_and_comes_back_as_a_new_generation() {
    let Some(program) = program() else { return };
    let served = Served::start(&program, "rogue", true);
    let public = served.endpoint("public");
    let partner = served.endpoint("partner");
    let dir = served.dir.clone();
    let ok = place(&public, "ACME");
    assert_eq!(ok.0, 200, "{ok:?}");
    let first = pid(&dir, "orders");

    // Each misbehaviour: the server error for its caller, a new process
    // for the next call, and the other receivers never notice.
    for symbol in ["SHAPE", "GARBAGE", "HANG"] {
        let before = pid(&dir, "orders");
        let r = place(&public, symbol);
        assert!(is_server_error(&r), "{symbol}: {r:?}");
        let other = place(&partner, "ACME");
        assert_eq!(
            other.0, 200,
            "partner's instance, during {symbol}: {other:?}"
        );
        // The next call starts the next generation, after the backoff.
        let next = place(&public, "ACME");
        assert_eq!(next.0, 200, "after {symbol}: {next:?}");
        assert_ne!(pid(&dir, "orders"), before, "{symbol}: a new process");
    }
    assert_ne!(pid(&dir, "orders"), first);

    // SIGKILL in the middle of a call.
    let slow = {
        let public = public.clone();
        std::thread::spawn(move || place(&public, "SLOW"))
    };
    std::thread::sleep(Duration::from_millis(500));
    let victim = pid(&dir, "orders");
    assert!(Command::new("kill")
        .args(["-9", &victim])
        .status()
        .unwrap()
        .success());
    let r = slow.join().unwrap();
    assert!(is_server_error(&r), "killed mid-call: {r:?}");
    assert_eq!(place(&partner, "ACME").0, 200);

    // A process that exits at start: every call the server error until it
    // starts again, and then the receiver serves.
    std::fs::write(dir.join("exit-at-start"), "").unwrap();
    let r = place(&public, "SLOW-NOT");
    assert!(is_server_error(&r), "exits at start: {r:?}");
    assert_eq!(place(&partner, "ACME").0, 200, "partner is its own process");
    std::fs::remove_file(dir.join("exit-at-start")).unwrap();
    eventually("the receiver serves again", || {
        place(&public, "ACME").0 == 200
    });

    let err = served.stop();
    assert!(err.contains("the handler of `orders` failed"), "{err}");
    assert!(err.contains("restarts as a new generation"), "{err}");
}

fn serve_with(program: &Path, dir: &Path, config_text: &str) -> (i32, String) {
    let path = dir.join("serve.toml");
    std::fs::write(&path, config_text).unwrap();
    let out = Command::new(workspace_bin("hale"))
        .arg("serve")
        .arg(program)
        .arg("--config")
        .arg(&path)
        .arg("--check-config")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_configuration_the_program_does_not_match_is_refused_at_start() {
    let Some(program) = program() else { return };
    let dir = scratch("refused");
    let good = std::fs::read_to_string(config(&dir, false, "")).unwrap();
    let (code, err) = serve_with(&program, &dir, &good);
    assert_eq!(code, 0, "{err}");

    let cases = [
        (
            format!("{good}\n[handlers.shipping]\ncommand = [\"true\"]\n"),
            "handlers.shipping: the program has no receiver instance `shipping` (its instances: orders, partner_orders, ledger)",
        ),
        (
            good.replacen(
                "[handlers.ledger]\ncommand",
                "[handlers.ledger]\nmcp = [\"x\"]\ncommand",
                1,
            ),
            "handlers.ledger: both `command` and `mcp`: a receiver has one handler",
        ),
        (
            good.replacen(
                "tokens = { \"t-alice\" = \"alice\", \"t-bob\" = \"bob\", \"t-carol\" = \"carol\", \"t-dave\" = \"dave\" }",
                "tokens_file = \"absent-tokens.toml\"",
                1,
            ),
            "sources.bearer.tokens_file: ",
        ),
        (
            good.replacen("--instance\", \"ledger\"", "--instance\", \"orders\"", 1),
            "the handler of `ledger` implements no Tool `rebalance` for `Ledger::rebalance` (it serves: cancel, place)",
        ),
    ];
    for (text, wanted) in cases {
        let (code, err) = serve_with(&program, &dir, &text);
        assert_eq!(code, 2, "{wanted}:\n{err}");
        assert!(err.contains(wanted), "{wanted}:\n{err}");
        assert_eq!(err.lines().count(), 1, "one diagnostic:\n{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `hale watch` of `topic` as `token`, its frames read line by line.
struct Watch {
    child: Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Watch {
    fn start(endpoint: &str, topic: &str, token: &str) -> Watch {
        let mut child = Command::new(workspace_bin("hale"))
            .args(["watch", endpoint, topic, "--token", token])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Watch { child, lines }
    }

    fn next(&self) -> String {
        self.lines
            .recv_timeout(Duration::from_secs(10))
            .expect("a frame within 10 s")
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn publish(control: &str, topic: &str, payload: &str) -> (i32, String) {
    let out = Command::new(workspace_bin("hale"))
        .args(["publish", control, topic, payload])
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_operator_publishes_and_editing_the_grants_file_revokes() {
    let Some(program) = program() else { return };
    let served = Served::start_with(
        &program,
        "grants-file",
        false,
        "[sources.hub_roles]\ngrants_file = \"hub-grants.toml\"\n",
        &[("hub-grants.toml", "operator = [\"dave\"]\n")],
    );
    let watch = Watch::start(&served.endpoint("fills"), "Fills", "t-dave");
    // The subscription is admitted before anything is published: publish
    // until the first event arrives.
    let payload = r#"{"order": 7, "qty": 1, "price": 5}"#;
    let frame = loop {
        let (code, err) = publish(&served.control(), "Fills", payload);
        assert_eq!(code, 0, "{err}");
        match watch.lines.recv_timeout(Duration::from_millis(300)) {
            Ok(frame) if frame.contains(r#""type":"event""#) => break frame,
            _ => continue,
        }
    };
    assert!(
        frame.contains(r#""payload":{"order":7,"qty":1,"price":5}"#),
        "{frame}"
    );
    // A payload that is not the topic's is refused, naming why.
    let (code, err) = publish(&served.control(), "Fills", r#"{"order": "seven"}"#);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("hale publish: the payload is not Fills's: "),
        "{err}"
    );
    let (code, err) = publish(&served.control(), "Quotes", "{}");
    assert_eq!(code, 1);
    assert!(
        err.contains("the program declares no topic `Quotes` (its topics: Fills)"),
        "{err}"
    );
    // dave loses operator when the file no longer grants it.
    std::fs::write(served.dir.join("hub-grants.toml"), "operator = []\n").unwrap();
    let frame = loop {
        let f = watch.next();
        if !f.contains(r#""type":"event""#) {
            break f;
        }
    };
    assert!(frame.contains("unauthorized"), "{frame}");
    assert!(frame.contains("revoked"), "{frame}");
}

/// The project's Python with the MCP SDK (`scripts/install-peers`).
fn peers_python() -> Option<PathBuf> {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.peers/venv/bin/python");
    let has_sdk = Command::new(&python)
        .args(["-c", "import mcp.server.fastmcp"])
        .status()
        .is_ok_and(|s| s.success());
    if has_sdk {
        Some(python)
    } else {
        absent("the MCP SDK is not installed");
        None
    }
}

fn hale_call(endpoint: &str, member: &str, args: &[&str]) -> (i32, String) {
    let out = Command::new(workspace_bin("hale"))
        .args(["call", endpoint, member])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn an_mcp_server_answers_a_receiver() {
    let Some(program) = program() else { return };
    let Some(python) = peers_python() else { return };
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_ledger.py");
    let served = Served::start_with(
        &program,
        "mcp",
        false,
        &format!(
            "[handlers.ledger]\nmcp = [\"{}\", \"{}\"]\n",
            python.display(),
            server.display()
        ),
        &[],
    );
    let admin = served.endpoint("admin");
    let (code, out) = hale_call(&admin, "Ledger::rebalance", &["--book", "desk"]);
    assert_eq!((code, out.trim()), (0, r#"{"moved":1500}"#));
    // The SDK's tool error is no `ClosureViolation`: a structural failure,
    // the server error (exit 3), and the server starts the MCP server again.
    let (code, _) = hale_call(&admin, "Ledger::rebalance", &["--book", ""]);
    assert_eq!(code, 3);
    let (code, out) = hale_call(&admin, "Ledger::rebalance", &["--book", "desk"]);
    assert_eq!((code, out.trim()), (0, r#"{"moved":1500}"#));
    let err = served.stop();
    assert!(
        err.contains("the handler of `ledger` failed: `Ledger::rebalance`: BadReply"),
        "{err}"
    );
}

#[test]
fn an_upstream_service_answers_a_receiver_behind_the_contract() {
    let Some(program) = program() else { return };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/upstream.py");
    let mut upstream = Command::new("python3")
        .arg(&script)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut port = String::new();
    BufReader::new(upstream.stdout.take().unwrap())
        .read_line(&mut port)
        .unwrap();
    let served = Served::start_with(
        &program,
        "upstream",
        false,
        &format!(
            "[handlers.orders]\nhttp = \"http://127.0.0.1:{}/desk\"\n",
            port.trim()
        ),
        &[],
    );
    let public = served.endpoint("public");
    // Admitted by limen, forwarded with the caller's name, held to the row.
    let (status, body) = place(&public, "ACME");
    assert_eq!(
        (status, body.as_str()),
        (200, r#"{"order":41,"notional":125000}"#)
    );
    let r = call(&public, "t-alice", "Orders::cancel", r#"{"order":99}"#);
    assert_eq!(r.0, 422, "{r:?}");
    assert_eq!(r.1, r#"{"code":"unknown_order","reason":"no order 99"}"#);
    // Refused by limen: the upstream never sees it.
    let r = call(&public, "t-bob", "Orders::cancel", r#"{"order":41}"#);
    assert_eq!(r.0, 403, "{r:?}");
    // A 500 and a reply that is not the row's: the server error.
    assert!(is_server_error(&place(&public, "BOOM")));
    assert!(is_server_error(&place(&public, "SHAPE")));
    let (status, _) = place(&public, "ACME");
    assert_eq!(status, 200);
    let _ = upstream.kill();
    let _ = upstream.wait();
    // An upstream that is gone: the server error.
    assert!(is_server_error(&place(&public, "ACME")));
    let err = served.stop();
    assert!(err.contains("the upstream answered 500"), "{err}");
    assert!(err.contains("the result is not the row's"), "{err}");
}

/// `GET /metrics` of the listener the banner names.
fn scrape(served: &Served) -> String {
    let url = served
        .banner
        .lines()
        .find_map(|l| l.split_whitespace().find(|w| w.ends_with("/metrics")))
        .unwrap_or_else(|| panic!("no metrics in the banner:\n{}", served.banner))
        .to_owned();
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/metrics");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(s, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
    assert!(
        reply.contains("Content-Type: text/plain; version=0.0.4"),
        "{reply}"
    );
    reply.split("\r\n\r\n").nth(1).unwrap_or("").to_owned()
}

#[test]
fn each_call_is_a_log_line_and_a_metric_prometheus_reads() {
    let Some(program) = program() else { return };
    let served = Served::start_args(
        &program,
        "metrics",
        false,
        "",
        &[],
        &["--metrics", "127.0.0.1:0", "--log", "calls"],
    );
    let public = served.endpoint("public");
    assert_eq!(place(&public, "ACME").0, 200);
    let r = call(&public, "t-bob", "Orders::cancel", r#"{"order":41}"#);
    assert_eq!(r.0, 403);
    let text = scrape(&served);
    // Prometheus's own parser (prometheus-client) reads it whole.
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.peers/venv/bin/python");
    let parsed = Command::new(&python)
        .args([
            "-c",
            "import sys\nfrom prometheus_client.parser import text_string_to_metric_families as p\n\
             for f in p(sys.stdin.read()):\n    for s in f.samples:\n        print(f.type, s.name, sorted(s.labels.items()), float(s.value))",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    match parsed {
        Ok(mut child) => {
            child
                .stdin
                .take()
                .unwrap()
                .write_all(text.as_bytes())
                .unwrap();
            let out = child.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            if stderr.contains("No module named") {
                absent("prometheus-client is not installed");
            } else {
                assert!(out.status.success(), "{stderr}\n{text}");
                let samples = String::from_utf8_lossy(&out.stdout);
                assert!(samples.contains("counter hale_calls_total [('exposure', 'public'), ('member', 'Orders::place'), ('outcome', 'result')] 1.0"), "{samples}");
                assert!(samples.contains("counter hale_calls_total [('exposure', 'public'), ('member', 'Orders::cancel'), ('outcome', 'unauthorized')] 1.0"), "{samples}");
                assert!(
                    samples.contains(
                        "histogram hale_call_duration_seconds_count [('exposure', 'public')] 2.0"
                    ),
                    "{samples}"
                );
                assert!(
                    samples.contains("gauge hale_hub_subscribers [('hub', 'fills')] 0.0"),
                    "{samples}"
                );
            }
        }
        Err(e) => absent(&format!("the peers' Python: {e}")),
    }
    let err = served.stop();
    let lines: Vec<serde_json::Value> = err
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert_eq!(lines[0]["exposure"], "public");
    assert_eq!(lines[0]["member"], "Orders::place");
    assert_eq!(lines[0]["caller"], "alice");
    assert_eq!(lines[0]["outcome"], "result");
    assert!(lines[0]["duration_ms"].as_f64().is_some());
    assert_eq!(lines[1]["caller"], "bob");
    assert_eq!(lines[1]["outcome"], "unauthorized");
}

#[test]
fn a_surface_served_over_the_hub_passes_the_check_as_the_demo_s_desk_does() {
    let Some(program) = program() else { return };
    // The witness with Public served over its hub too (§ Rpcs on a hub), as
    // `hale demo --hub-desk` serves it: the site limen-witness writes.
    let text = std::fs::read_to_string(&program).unwrap();
    let with_desk = limen_witness::exposures::with_hub_desk(&text).expect("a run() to serve from");
    let dir = scratch("desk-program");
    let file = dir.join("desk.hl");
    std::fs::write(&file, with_desk).unwrap();
    let served = Served::start(&file, "desk", false);
    let public = format!("public={}", served.endpoint("public"));
    assert_eq!(served.endpoint("desk"), served.endpoint("fills"));
    let (code, out) = check(&[
        "--endpoint",
        &served.endpoint("fills"),
        "--transport",
        "ws",
        "--bearer",
        "t-dave",
        "--control",
        &served.control(),
        "--with",
        &public,
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("pass  ws/call.result\n"), "{out}");
    // What the demo's hub carrying desk leaves unprovoked too
    // (conformance/tests/live.rs).
    assert!(
        out.ends_with("21 passed, 0 failed, 3 not provoked\n"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigterm_stops_in_order_and_the_hub_writes_closed() {
    let Some(program) = program() else { return };
    let mut served = Served::start(&program, "sigterm", false);
    let watch = Watch::start(&served.endpoint("fills"), "Fills", "t-dave");
    let subscribed = watch.next();
    assert!(subscribed.contains("subscribed"), "{subscribed}");
    let public = served.endpoint("public");
    assert_eq!(place(&public, "ACME").0, 200);
    let ok = Command::new("kill")
        .args(["-TERM", &served.child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let closed = loop {
        let f = watch.next();
        if !f.contains(r#""type":"event""#) {
            break f;
        }
    };
    assert!(closed.contains(r#""type":"closed""#), "{closed}");
    let status = served.child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "stopped in order, not killed");
    // Nothing listens any more.
    let addr = public.trim_start_matches("http://");
    assert!(std::net::TcpStream::connect(addr).is_err());
}
