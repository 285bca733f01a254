//! `hale demo` run as a process on ephemeral ports, driven by real peers:
//! curl for every HTTP status of § Outcomes (the recorded exchanges of the
//! reference fixtures, each reply equal to its record), socat for the Unix
//! socket, wrk for load; misbehaving clients beside a well-behaved one; and
//! the exit codes of `hale api describe|call`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod support;

use support::{demo, peer, HALE};

fn shared() -> Option<PathBuf> {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/hale-witness/wire"
    ));
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("skipped: ../shared/hale-witness is absent");
        None
    }
}

fn record(dir: &Path, transport: &str, name: &str) -> Value {
    let text = std::fs::read_to_string(dir.join(transport).join(format!("{name}.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// A curl of a recorded HTTP request against `addr`: (status, body).
fn curl(addr: &str, request: &Value) -> (u16, Value) {
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-o", "-", "-w", "\n%{http_code}", "-X"])
        .arg(request["method"].as_str().unwrap());
    for (name, value) in request["headers"].as_object().unwrap() {
        cmd.arg("-H")
            .arg(format!("{name}: {}", value.as_str().unwrap()));
    }
    cmd.arg("--data-binary").arg(request["body"].to_string());
    cmd.arg(format!(
        "http://{addr}{}",
        request["path"].as_str().unwrap()
    ));
    let out = cmd.output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let (body, status) = text.rsplit_once('\n').unwrap();
    (
        status.parse().unwrap(),
        serde_json::from_str(body).unwrap_or(Value::Null),
    )
}

fn check_http(addr: &str, rec: &Value) {
    let (status, body) = curl(addr, &rec["request"]);
    assert_eq!(
        (status, body),
        (
            rec["reply"]["status"].as_u64().unwrap() as u16,
            rec["reply"]["body"].clone()
        ),
        "{} {}",
        rec["outcome"],
        rec["kind"]
    );
}

/// Runs `f` on a thread, returning its handle: a call that waits at a gate.
fn background<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    let h = std::thread::spawn(f);
    std::thread::sleep(Duration::from_millis(300));
    h
}

#[test]
fn curl_gets_every_http_status_as_recorded() {
    let Some(dir) = shared() else { return };
    if !peer("curl") {
        return;
    }
    let d = demo("http", &[]);
    for name in [
        "result",
        "handler_error",
        "refusal_malformed",
        "refusal_digest_mismatch",
        "refusal_unauthenticated",
        "refusal_unauthorized",
        "server_error",
    ] {
        check_http(&d.public, &record(&dir, "http", name));
    }
    // unavailable: the receiver drains. Once it is back, the next request
    // finds it known unavailable (refused, and the receiver asked again);
    // it answers, and the one after is served under a new generation.
    d.control("drain orders");
    check_http(&d.public, &record(&dir, "http", "refusal_unavailable"));
    d.control("resume orders");
    let result = record(&dir, "http", "result");
    assert_eq!(curl(&d.public, &result["request"]).0, 503);
    assert_eq!(curl(&d.public, &result["request"]).0, 200);
    // partner is the same surface over another listener and source.
    let (status, _) = curl(&d.partner, &result["request"]);
    assert_eq!(status, 200);

    // full: a gated receiver holds the bound of one.
    let d = demo("full", &["--bound", "1"]);
    d.control("gate orders");
    let (addr, req) = (d.public.clone(), result["request"].clone());
    let held = background(move || curl(&addr, &req));
    check_http(&d.public, &record(&dir, "http", "refusal_full"));
    d.control("open orders");
    assert_eq!(held.join().unwrap().0, 200);

    // shutting_down: one executing, the recorded one queued, then stop().
    let d = demo("down", &[]);
    d.control("gate orders");
    let (addr, req) = (d.public.clone(), result["request"].clone());
    let executing = background(move || curl(&addr, &req));
    let rec = record(&dir, "http", "refusal_shutting_down");
    let (addr, req) = (d.public.clone(), rec["request"].clone());
    let queued = background(move || curl(&addr, &req));
    d.control("stop");
    let (status, body) = queued.join().unwrap();
    assert_eq!((status, body), (503, rec["reply"]["body"].clone()));
    d.control("open orders");
    assert_eq!(
        executing.join().unwrap().0,
        200,
        "the executing call is answered"
    );
}

/// One Unix line through socat: the reply line.
fn socat(path: &Path, line: &str) -> Value {
    let mut child = Command::new("socat")
        .arg("-")
        .arg(format!("UNIX-CONNECT:{}", path.display()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{line}").unwrap();
    let mut reply = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut reply)
        .unwrap();
    drop(stdin);
    let _ = child.wait();
    serde_json::from_str(&reply).unwrap_or(Value::Null)
}

/// A Unix reply with what another peer changes masked: the request id and
/// the caller's kernel numbers and name.
fn masked(mut v: Value) -> Value {
    v["request_id"] = Value::Null;
    v["caller"] = serde_json::json!({"mode": v["caller"]["mode"].clone()});
    v
}

#[test]
fn socat_gets_the_recorded_unix_replies() {
    let Some(dir) = shared() else { return };
    if !peer("socat") || !peer("curl") {
        return;
    }
    let d = demo("unix", &[]);
    // The result cancels order 41: one is placed first, through public.
    let placed = record(&dir, "http", "result");
    assert_eq!(curl(&d.public, &placed["request"]).0, 200);
    for name in [
        "result",
        "handler_error",
        "refusal_malformed",
        "refusal_digest_mismatch",
        "server_error",
    ] {
        let rec = record(&dir, "unix", name);
        let reply = socat(&d.admin, &rec["request"].to_string());
        assert_eq!(masked(reply), masked(rec["reply"].clone()), "{name}");
    }
    d.control("drain ledger");
    let rec = record(&dir, "unix", "refusal_unavailable");
    assert_eq!(
        masked(socat(&d.admin, &rec["request"].to_string())),
        masked(rec["reply"].clone())
    );
    // unauthorized: a peer who is not the operator.
    let d = demo("unix-other", &["--operator", "uid:4000"]);
    let rec = record(&dir, "unix", "refusal_unauthorized");
    assert_eq!(
        masked(socat(&d.admin, &rec["request"].to_string())),
        masked(rec["reply"].clone())
    );
    // A line that is not a JSON object: request_id 0, and the line ends.
    let reply = socat(&d.admin, "not json");
    assert_eq!(reply["request_id"], 0);
    assert_eq!(reply["refusal"]["kind"], "malformed");
}

#[test]
fn wrk_load_is_answered_without_errors() {
    if !peer("wrk") {
        return;
    }
    let d = demo("wrk", &[]);
    let script = d.dir.join("post.lua");
    std::fs::write(
        &script,
        "wrk.method = \"POST\"\nwrk.body = '{\"symbol\":\"ACME\",\"qty\":10,\"limit\":12500}'\nwrk.headers[\"Authorization\"] = \"Bearer t-alice\"\n",
    )
    .unwrap();
    let out = Command::new("wrk")
        .args(["-t1", "-c16", "-d2s", "-s"])
        .arg(&script)
        .arg(format!("http://{}/call/Orders::place", d.public))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(!text.contains("Non-2xx"), "{text}");
    let requests: u64 = text
        .lines()
        .find(|l| l.contains("requests in"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(requests > 100, "{text}");
}

/// A well-behaved call, answered 200.
fn well_behaved(addr: &str) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let body = r#"{"symbol":"ACME","qty":1,"limit":1}"#;
    write!(
        s,
        "POST /call/Orders::place HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t-alice\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
}

fn status_of(addr: &str, request: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let _ = s.write_all(request);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out)
        .lines()
        .next()
        .unwrap_or("")
        .to_owned()
}

#[test]
fn misbehaving_clients_harm_nobody_else() {
    let d = demo("adversarial", &[]);
    // A head over 64 KiB and a body over 1 MiB are malformed.
    let mut head = b"POST /call/Orders::place HTTP/1.1\r\nX-Pad: ".to_vec();
    head.extend(std::iter::repeat_n(b'a', 70_000));
    head.extend_from_slice(b"\r\n\r\n");
    assert_eq!(status_of(&d.public, &head), "HTTP/1.1 400 Bad Request");
    let big = b"POST /call/Orders::place HTTP/1.1\r\nAuthorization: Bearer t-alice\r\nContent-Length: 1048577\r\n\r\n";
    assert_eq!(status_of(&d.public, big), "HTTP/1.1 400 Bad Request");
    well_behaved(&d.public);

    // An over-long Unix line is refused with request_id 0 and ends.
    let mut long = UnixStream::connect(&d.admin).unwrap();
    long.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = long.write_all(&vec![b' '; 60_001]);
    let mut reply = String::new();
    BufReader::new(long.try_clone().unwrap())
        .read_line(&mut reply)
        .unwrap();
    let v: Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(
        (v["request_id"].clone(), v["refusal"]["kind"].clone()),
        (0.into(), "malformed".into())
    );

    // A Unix client that floods describes and never reads.
    let hog = UnixStream::connect(&d.admin).unwrap();
    hog.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut hog_w = hog.try_clone().unwrap();
    for _ in 0..5_000 {
        if hog_w.write_all(b"{\"describe\":true}\n").is_err() {
            break;
        }
    }
    well_behaved(&d.public);

    // A client that half-closes after sending is taken to have gone.
    let mut half = TcpStream::connect(&d.public).unwrap();
    let body = r#"{"symbol":"ACME","qty":1,"limit":1}"#;
    write!(
        half,
        "POST /call/Orders::place HTTP/1.1\r\nAuthorization: Bearer t-alice\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    half.shutdown(Shutdown::Write).unwrap();
    well_behaved(&d.public);

    // 1000 connections opened and held.
    let held: Vec<TcpStream> = (0..1000)
        .map(|_| TcpStream::connect(&d.public).unwrap())
        .collect();
    well_behaved(&d.public);
    drop(held);

    // A request trickled byte by byte past 10 s is ended; others answered.
    let addr = d.public.clone();
    let trickle = std::thread::spawn(move || {
        let mut s = TcpStream::connect(&addr).unwrap();
        let started = Instant::now();
        let request = b"POST /call/Orders::place HTTP/1.1\r\nAuthorization: Bearer t-alice\r\nContent-Length: 2\r\n\r\n{}";
        for b in request.iter().cycle() {
            if s.write_all(std::slice::from_ref(b)).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(250));
            if started.elapsed() > Duration::from_secs(14) {
                break;
            }
        }
        let mut out = Vec::new();
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let _ = s.read_to_end(&mut out);
        (started.elapsed(), out)
    });
    std::thread::sleep(Duration::from_secs(2));
    well_behaved(&d.public);
    let (took, out) = trickle.join().unwrap();
    assert!(
        took < Duration::from_secs(14),
        "the server ended the trickle ({took:?})"
    );
    assert!(
        out.is_empty(),
        "nothing is written to a request cut off by its timer"
    );
    drop(hog);
}

fn hale(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(HALE)
        .args(args)
        .env_remove("HALE_API_BEARER")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_verbs_exit_by_outcome() {
    let d = demo("verbs", &[]);
    let http = format!("http://{}", d.public);
    let unix = format!("unix:{}", d.admin.display());
    let place = ["--symbol", "ACME", "--qty", "10", "--limit", "12500"];
    let mut args = vec!["api", "call", &http, "Orders::place"];
    args.extend(place);
    args.extend(["--bearer", "t-alice"]);
    let (code, out, _) = hale(&args);
    assert_eq!(
        (code, out.as_str()),
        (0, "{\"order\":41,\"notional\":125000}\n")
    );
    // The typed form and --json of one payload write the same wire line.
    let (code, out, _) = hale(&[
        "api",
        "call",
        &http,
        "Orders::place",
        "--json",
        r#"{ "limit": 12500, "qty": 10, "symbol": "ACME" }"#,
        "--bearer",
        "t-alice",
    ]);
    assert_eq!(
        (code, out.as_str()),
        (0, "{\"order\":42,\"notional\":125000}\n")
    );
    let (code, _, err) = hale(&[
        "api",
        "call",
        &http,
        "Orders::cancel",
        "--order",
        "999",
        "--bearer",
        "t-alice",
    ]);
    assert_eq!(
        (code, err.trim()),
        (1, r#"{"code":"unknown_order","reason":"no order 999"}"#)
    );
    let (code, _, err) = hale(&[
        "api",
        "call",
        &http,
        "Orders::cancel",
        "--json",
        r#"{"order":41}"#,
        "--bearer",
        "t-bob",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("\"requires\":[\"trader\"]"), "{err}");
    let (code, _, err) = hale(&[
        "api",
        "call",
        &http,
        "Orders::place",
        "--symbol",
        "A",
        "--qty",
        "50000",
        "--limit",
        "1",
        "--bearer",
        "t-alice",
    ]);
    assert_eq!((code, err.trim()), (3, r#"{"refusal":{"kind":"server"}}"#));
    let (code, _, err) = hale(&[
        "api",
        "call",
        &http,
        "Orders::place",
        "--json",
        "{}",
        "--digest",
        "fnv1a64:0000000000000000",
        "--bearer",
        "t-alice",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("\"served\":\"fnv1a64:a8930d6e7998e986\""),
        "{err}"
    );
    // --raw prints the wire outcome on stdout, the exit code unchanged.
    let (code, out, err) = hale(&[
        "api",
        "call",
        &http,
        "Orders::cancel",
        "--order",
        "999",
        "--bearer",
        "t-alice",
        "--raw",
    ]);
    assert_eq!((code, err.as_str()), (1, ""));
    assert!(out.contains("unknown_order"));
    // Over the socket: the line's id is the verb's.
    let (code, out, _) = hale(&[
        "api",
        "call",
        &unix,
        "Orders::cancel",
        "--order",
        "41",
        "--id",
        "x-1",
        "--raw",
    ]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["id"], "x-1");
    // The short forms: a bare path and a bare payload.
    let (code, _, _) = hale(&[
        "call",
        d.admin.to_str().unwrap(),
        "Ledger::rebalance",
        r#"{"book":"main"}"#,
    ]);
    assert_eq!(code, 0);
    let (code, out, _) = hale(&["describe", d.admin.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0);
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["exposure"], "Admin@fnv1a64:40381db6685c9f75/admin");
    // The readable form: the exposure and its listener, the caller, one
    // line per member this caller may call, from the same document.
    let (code, out, _) = hale(&["describe", d.admin.to_str().unwrap()]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("Admin@fnv1a64:40381db6685c9f75/admin  [unix "),
        "{out}"
    );
    assert!(lines[1].starts_with("caller: unix "), "{out}");
    let members = doc["members"].as_array().unwrap();
    assert_eq!(
        lines.len(),
        2 + members.len() + doc["streams"].as_array().unwrap().len()
    );
    for (line, m) in lines[2..].iter().zip(members) {
        assert!(
            line.starts_with(&format!("  {}(", m["name"].as_str().unwrap())),
            "{out}"
        );
    }
    // describe: 0, 2 refused, 4 nothing answers, 5 usage.
    let (code, out, _) = hale(&["api", "describe", &http, "--bearer", "t-alice"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("\ncaller: bearer alice; roles: trader\n"),
        "{out}"
    );
    assert!(
        out.contains("  Orders::place(symbol: String, qty: Int, limit: Int (Money, q(cent))) -> OrderReceipt"),
        "{out}"
    );
    let (code, _, err) = hale(&["api", "describe", &http]);
    assert_eq!(code, 2);
    assert!(err.contains("unauthenticated"), "{err}");
    let dead = d.dir.join("dead.sock");
    assert_eq!(
        hale(&["api", "describe", &format!("unix:{}", dead.display())]).0,
        4
    );
    assert_eq!(
        hale(&[
            "api",
            "call",
            &format!("unix:{}", dead.display()),
            "A::b",
            "--json",
            "{}"
        ])
        .0,
        4
    );
    assert_eq!(hale(&["api", "describe", "http://127.0.0.1:1"]).0, 4);
    for refused in [
        "grpc://127.0.0.1:1",
        "mcp://127.0.0.1:1",
        "ws://h:1",
        "nonsense",
    ] {
        let (code, _, err) = hale(&["api", "describe", refused]);
        assert_eq!(code, 5, "{refused}");
        assert!(
            err.contains("unix:<path>") && err.contains("http://host:port"),
            "{err}"
        );
    }
    // Usage errors of the typed form, before anything is sent.
    let usage = [
        vec![
            "api",
            "call",
            &http,
            "Orders::place",
            "--symbol",
            "A",
            "--bearer",
            "t-alice",
        ],
        vec![
            "api",
            "call",
            &http,
            "Orders::place",
            "--symbol",
            "A",
            "--qty",
            "x",
            "--limit",
            "1",
            "--bearer",
            "t-alice",
        ],
        vec![
            "api",
            "call",
            &http,
            "Orders::place",
            "--nope",
            "1",
            "--bearer",
            "t-alice",
        ],
        vec![
            "api",
            "call",
            &http,
            "Orders::place",
            "--json",
            "{",
            "--bearer",
            "t-alice",
        ],
        vec![
            "api",
            "call",
            &http,
            "Orders::place",
            "--json",
            "{}",
            "--qty",
            "1",
            "--bearer",
            "t-alice",
        ],
        vec![
            "api",
            "call",
            &http,
            "Orders::nope",
            "--qty",
            "1",
            "--bearer",
            "t-alice",
        ],
        vec!["api", "call", &http],
        vec!["api", "describe"],
    ];
    for args in usage {
        assert_eq!(hale(&args).0, 5, "{args:?}");
    }
}
