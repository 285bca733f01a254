//! `hale admin` over HTTP, driven by curl (§ The clients): every route of
//! the page — the page, its script and style, the API, the stream — is
//! refused 403 without the launch token, with a foreign Host and with a
//! foreign Origin, and served with the token; the launch URL sets the
//! cookie and sends the page to `/`; each action is one request to the
//! endpoint, over a Unix socket, HTTP and a hub, and the page is told each
//! of the five outcomes as it happened. The real browser's test is
//! `admin_page.rs`.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{demo, peer, HALE};

/// A running `hale admin`, killed when dropped.
struct Admin {
    child: Child,
    /// The launch URL it printed.
    url: String,
    /// The page's port.
    port: u16,
    /// What it wrote on stderr, read once it is killed.
    stderr: Option<std::process::ChildStderr>,
}

impl Drop for Admin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Admin {
    fn start(endpoint: &str, extra: &[&str]) -> Admin {
        let mut child = Command::new(HALE)
            .args(["admin", endpoint, "--port", "0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut url = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut url)
            .unwrap();
        let url = url.trim().to_owned();
        let port = url
            .strip_prefix("http://127.0.0.1:")
            .and_then(|r| r.split('/').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the first line is the launch URL: {url:?}"));
        let stderr = child.stderr.take();
        Admin {
            child,
            url,
            port,
            stderr,
        }
    }

    fn token(&self) -> &str {
        self.url.split("token=").nth(1).unwrap()
    }

    fn cookie(&self) -> String {
        format!("Cookie: hale-admin-{}={}", self.port, self.token())
    }

    fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Its stderr so far: kills it first.
    fn stderr(&mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut s = String::new();
        if let Some(mut e) = self.stderr.take() {
            let _ = e.read_to_string(&mut s);
        }
        s
    }
}

/// One request by curl: the status and the body. `extra` are curl's
/// arguments (headers, a body).
fn curl(url: &str, extra: &[&str]) -> (u16, String) {
    let out = Command::new("curl")
        .args(["-s", "--max-time", "20", "-w", "\n%{http_code}"])
        .args(extra)
        .arg(url)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, status) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (status.trim().parse().unwrap_or(0), body.to_owned())
}

/// One call through the page's API: the answer's JSON.
fn call(a: &Admin, member: &str, payload: Value, digest: Option<&str>) -> Value {
    let body = json!({"member": member, "payload": payload, "digest": digest}).to_string();
    let (status, text) = curl(
        &format!("{}/api/call", a.base()),
        &[
            "-H",
            &a.cookie(),
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            &body,
        ],
    );
    assert_eq!(status, 200, "{text}");
    serde_json::from_str(&text).unwrap()
}

fn description(a: &Admin) -> Value {
    let (status, text) = curl(
        &format!("{}/api/description", a.base()),
        &["-H", &a.cookie()],
    );
    assert_eq!(status, 200, "{text}");
    serde_json::from_str(&text).unwrap()
}

const PLACE: &str = r#"{"symbol":"ACME","qty":10,"limit":12500}"#;

#[test]
fn every_route_is_refused_without_the_token_from_a_foreign_host_or_origin() {
    if !peer("curl") {
        return;
    }
    let d = demo("admin-gate", &["--hub", "127.0.0.1:0", "--hub-desk"]);
    let mut a = Admin::start(&format!("ws://{}", d.hub), &["--token", "t-dave"]);
    let base = a.base();
    let cookie = a.cookie();
    let foreign_host = format!("Host: evil.test:{}", a.port);
    let wrong_token = format!("Cookie: hale-admin-{}={}", a.port, "0".repeat(64));
    let other_port = format!("Cookie: hale-admin-{}={}", a.port + 1, a.token());
    let call_body = format!(r#"{{"member":"Orders::place","payload":{PLACE},"digest":null}}"#);
    // (path, curl's arguments for the route itself)
    let routes: Vec<(&str, Vec<&str>)> = vec![
        ("/", vec![]),
        ("/admin.js", vec![]),
        ("/admin.css", vec![]),
        ("/api/description", vec![]),
        (
            "/api/call",
            vec![
                "-H",
                "Content-Type: application/json",
                "--data-binary",
                &call_body,
            ],
        ),
        ("/api/stream?topic=Fills", vec!["-N", "--max-time", "3"]),
    ];
    for (path, route) in &routes {
        let url = format!("{base}{path}");
        let refused: [(&str, Vec<&str>); 6] = [
            ("no token", vec![]),
            ("a wrong token", vec!["-H", &wrong_token]),
            ("another port's cookie", vec!["-H", &other_port]),
            ("a foreign Host", vec!["-H", &cookie, "-H", &foreign_host]),
            (
                "a foreign Origin",
                vec!["-H", &cookie, "-H", "Origin: http://evil.test"],
            ),
            (
                "a cross-site fetch",
                vec!["-H", &cookie, "-H", "Sec-Fetch-Site: cross-site"],
            ),
        ];
        for (why, headers) in refused {
            let mut args = route.clone();
            args.extend(headers);
            let (status, body) = curl(&url, &args);
            assert_eq!(status, 403, "{path} with {why}: {body}");
            assert!(body.starts_with("403 Forbidden: "), "{path}: {body}");
            assert!(
                !body.contains(a.token()),
                "a refusal never spells the token"
            );
        }
        // With the token, on the page's address, from the page's origin.
        let origin = format!("Origin: {base}");
        let mut args = route.clone();
        args.extend(["-H", cookie.as_str(), "-H", origin.as_str()]);
        let (status, body) = curl(&url, &args);
        assert_eq!(status, 200, "{path} with the token: {body}");
        match *path {
            "/" => assert!(body.contains("<html"), "{body}"),
            "/api/description" => {
                let v: Value = serde_json::from_str(&body).unwrap();
                assert_eq!(v["transport"], "ws");
                assert_eq!(
                    v["hub"]["document"]["exposure"],
                    "hub@fnv1a64:26970854397ab154/fills"
                );
                assert_eq!(
                    v["exposure"]["document"]["exposure"],
                    "Public@fnv1a64:a8930d6e7998e986/desk"
                );
            }
            "/api/call" => {
                let v: Value = serde_json::from_str(&body).unwrap();
                assert_eq!(v["outcome"], "result", "{v}");
            }
            "/api/stream?topic=Fills" => {
                assert!(
                    body.contains(r#"data: {"type":"subscribed","topic":"Fills"}"#),
                    "{body}"
                );
            }
            _ => {}
        }
    }

    // The launch URL: a redirect to `/` that sets the cookie, HttpOnly and
    // SameSite=Strict; following it with curl's cookie jar loads the page.
    let out = Command::new("curl")
        .args(["-s", "-D", "-", "-o", "/dev/null", &a.url])
        .output()
        .unwrap();
    let head = String::from_utf8_lossy(&out.stdout).to_lowercase();
    assert!(head.starts_with("http/1.1 303"), "{head}");
    assert!(head.contains("\r\nlocation: /\r\n"), "{head}");
    let set_cookie = head
        .lines()
        .find(|l| l.starts_with("set-cookie:"))
        .unwrap_or_else(|| panic!("{head}"));
    assert!(set_cookie.contains(&format!("hale-admin-{}=", a.port)));
    assert!(set_cookie.contains("httponly") && set_cookie.contains("samesite=strict"));
    for header in [
        "content-security-policy: default-src 'none'",
        "x-frame-options: deny",
    ] {
        assert!(head.contains(header), "{head}");
    }
    let jar = support::scratch("admin-http", "jar").join("jar");
    let jar = jar.to_str().unwrap();
    let (status, body) = curl(&a.url, &["-L", "-c", jar, "-b", jar]);
    assert_eq!(status, 200);
    assert!(body.contains("<html"), "{body}");
    // The launch URL on a foreign Host is refused, token and all.
    let (status, _) = curl(&a.url, &["-H", &foreign_host]);
    assert_eq!(status, 403);
    let (status, _) = curl(&format!("{base}/?token=abc"), &[]);
    assert_eq!(status, 403);

    // The token is printed once, on stdout, and never on stderr.
    let stderr = a.stderr();
    assert!(!stderr.contains(a.token()), "{stderr}");
}

#[test]
fn each_action_is_one_request_to_a_unix_or_http_endpoint_with_its_outcome() {
    if !peer("curl") {
        return;
    }
    let d = demo("admin-outcomes", &[]);
    // Over HTTP, as alice (trader under public's roles).
    let alice = Admin::start(&format!("http://{}", d.public), &["--bearer", "t-alice"]);
    let desc = description(&alice);
    assert_eq!(desc["transport"], "http");
    assert!(desc["hub"].is_null());
    let doc = &desc["exposure"]["document"];
    assert_eq!(doc["exposure"], "Public@fnv1a64:a8930d6e7998e986/public");
    assert_eq!(doc["caller"]["principal"]["name"], "alice");
    let digest = doc["digest"].as_str().unwrap();
    let placed = call(
        &alice,
        "Orders::place",
        serde_json::from_str(PLACE).unwrap(),
        Some(digest),
    );
    assert_eq!(placed["outcome"], "result", "{placed}");
    assert_eq!(placed["status"], 200);
    assert_eq!(placed["value"]["notional"], 125000);
    let unknown = call(&alice, "Orders::cancel", json!({"order": 7}), Some(digest));
    assert_eq!(unknown["outcome"], "handler_error", "{unknown}");
    assert_eq!(unknown["status"], 422);
    assert_eq!(unknown["error"]["code"], "unknown_order");
    assert_eq!(unknown["error"]["reason"], "no order 7");
    let moved = call(
        &alice,
        "Orders::place",
        serde_json::from_str(PLACE).unwrap(),
        Some("fnv1a64:0000000000000000"),
    );
    assert_eq!(moved["outcome"], "refusal");
    assert_eq!(moved["refusal"]["kind"], "digest_mismatch");
    assert_eq!(moved["refusal"]["served"], digest);
    let violated = call(
        &alice,
        "Orders::place",
        json!({"symbol": "ACME", "qty": 20000, "limit": 1}),
        Some(digest),
    );
    assert_eq!(violated["outcome"], "server_error", "{violated}");
    assert_eq!(violated["refusal"], json!({"kind": "server"}));
    // bob holds no trader: the refusal names what the row requires.
    let bob = Admin::start(&format!("http://{}", d.public), &["--bearer", "t-bob"]);
    let refused = call(&bob, "Orders::cancel", json!({"order": 41}), Some(digest));
    assert_eq!(refused["outcome"], "refusal", "{refused}");
    assert_eq!(refused["status"], 403);
    assert_eq!(refused["refusal"]["kind"], "unauthorized");
    assert_eq!(refused["refusal"]["requires"], json!(["trader"]));
    // The raw bytes are the exposure's body as it wrote it.
    let raw: Value = serde_json::from_str(refused["raw"].as_str().unwrap()).unwrap();
    assert_eq!(raw["refusal"], refused["refusal"]);

    // Over the Unix socket, as the current user (operator under admin's
    // roles).
    let admin = Admin::start(&format!("unix:{}", d.admin.display()), &[]);
    let desc = description(&admin);
    assert_eq!(desc["transport"], "unix");
    let doc = &desc["exposure"]["document"];
    assert_eq!(doc["surface"], "Admin");
    let digest = doc["digest"].as_str().unwrap();
    let rebalanced = call(
        &admin,
        "Ledger::rebalance",
        json!({"book": "main"}),
        Some(digest),
    );
    assert_eq!(rebalanced["outcome"], "result", "{rebalanced}");
    assert_eq!(rebalanced["value"], json!({"moved": 1500}));
    assert!(rebalanced["status"].is_null());
    let raw: Value = serde_json::from_str(rebalanced["raw"].as_str().unwrap()).unwrap();
    assert_eq!(raw["ok"], true, "the raw reply line");
    let violated = call(
        &admin,
        "Ledger::rebalance",
        json!({"book": ""}),
        Some(digest),
    );
    assert_eq!(violated["outcome"], "server_error", "{violated}");
    // A page on an HTTP endpoint has no stream.
    let (status, _) = curl(
        &format!("{}/api/stream?topic=Fills", alice.base()),
        &["-H", &alice.cookie()],
    );
    assert_eq!(status, 404);

    // The endpoint gone: the description and a call say nothing answered.
    let gone = support::scratch("admin-http", "gone").join("none.sock");
    let nobody = Admin::start(&format!("unix:{}", gone.display()), &[]);
    let desc = description(&nobody);
    assert!(desc["exposure"]["document"].is_null());
    assert!(
        desc["exposure"]["error"]
            .as_str()
            .unwrap()
            .contains("did not answer"),
        "{desc}"
    );
    let lost = call(&nobody, "Orders::cancel", json!({"order": 41}), None);
    assert_eq!(lost["outcome"], "no_answer");
    assert!(lost["reason"].as_str().unwrap().contains("did not answer"));
}

#[test]
fn bad_requests_are_answered_and_silent_clients_harm_no_other() {
    if !peer("curl") {
        return;
    }
    let d = demo("admin-bad", &[]);
    let a = Admin::start(&format!("http://{}", d.public), &["--bearer", "t-alice"]);
    let url = format!("{}/api/call", a.base());
    let cookie = a.cookie();
    for (content_type, body, status, says) in [
        ("text/plain", "{}", 415, "application/json"),
        ("application/json", "{", 400, "not JSON"),
        ("application/json", r#"{"payload":1}"#, 400, "no member"),
        (
            "application/json",
            r#"{"member":"Orders::place HTTP/1.1\r\nX: y","payload":1}"#,
            400,
            "member's name",
        ),
    ] {
        let ct = format!("Content-Type: {content_type}");
        let (got, text) = curl(&url, &["-H", &cookie, "-H", &ct, "--data-binary", body]);
        assert_eq!(got, status, "{body}: {text}");
        assert!(text.contains(says), "{body}: {text}");
    }
    let (status, _) = curl(&format!("{}/nowhere", a.base()), &["-H", &cookie]);
    assert_eq!(status, 404);
    let (status, _) = curl(
        &format!("{}/api/description", a.base()),
        &["-H", &cookie, "-X", "DELETE"],
    );
    assert_eq!(status, 405);

    // Malformed bytes get a 400 naming why; silent connections hold
    // nothing another client needs.
    let mut silent: Vec<TcpStream> = (0..20)
        .map(|_| TcpStream::connect(("127.0.0.1", a.port)).unwrap())
        .collect();
    let mut junk = TcpStream::connect(("127.0.0.1", a.port)).unwrap();
    junk.write_all(b"NOT HTTP AT ALL\r\n\r\n").unwrap();
    let mut answer = String::new();
    junk.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 400 "), "{answer}");
    let started = Instant::now();
    let desc = description(&a);
    assert_eq!(desc["exposure"]["document"]["name"], "public");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "served while 20 clients say nothing"
    );
    // A silent client is let go at the HTTP machine's limit (5 s of
    // silence), with nothing written.
    let s = &mut silent[0];
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut buf = [0u8; 64];
    assert_eq!(s.read(&mut buf).unwrap_or(0), 0, "closed, unanswered");
}

#[test]
fn a_port_in_use_is_exit_2_and_a_foreign_endpoint_is_usage() {
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port().to_string();
    let out = Command::new(HALE)
        .args(["admin", "unix:/nonexistent", "--port", &port])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--port 0"), "{stderr}");
    assert!(out.stdout.is_empty(), "no URL for a page not served");
    for endpoint in ["grpc://127.0.0.1:1", "mcp://127.0.0.1:1", "ws://nohost"] {
        let out = Command::new(HALE)
            .args(["admin", endpoint, "--port", "0"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(5), "{endpoint}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("ws://host:port"), "{stderr}");
    }
    let out = Command::new(HALE)
        .args(["admin", "unix:/x", "--bearer", "a", "--token", "b"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(5),
        "--bearer and --token are one flag"
    );
}
