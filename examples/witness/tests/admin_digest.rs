//! `hale admin` when the program moves under its page (§ The clients: "a
//! call carries the digest of the description read at that moment"; issue
//! #31: the page "reloads the description on demand and says when the
//! digest moved"), in a real browser: Debian's Chromium, driven headless by
//! playwright-core through `admin_digest.mjs`.
//!
//! The witness is served with `hale serve` (its handlers `witness-tool`),
//! and `hale admin` opens a page on its public exposure as alice. Once the
//! page shows the digest, the server is stopped and a changed program is
//! served on the same port: `Orders::place` in `api Public` now
//! `requires: [trader]`, which alice holds and the digest covers. The page's
//! next call still names the digest it shows and is refused
//! `digest_mismatch` naming the served one; Reload description says the
//! digest moved and shows the new one; the call then answers a result.
//! Screenshots land in `target/admin-screenshots/digest/` (12-, 13-, 14-).

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use limen_clients::{absent, node, root, workspace_bin};
use serde_json::{json, Value};
use support::{config, program, scratch, Served};

/// Debian's Chromium, as `scripts/install-peers` installs it.
const CHROMIUM: &str = "/usr/bin/chromium";

/// How long the browser may take over a step it reports (it has deadlines
/// of its own; this one is for a script that hangs without saying so).
const REPORT_WAIT: Duration = Duration::from_secs(300);

/// The line of the public `api` row this test changes, and what it becomes.
const PLACE_ROW: &str = "    rpc Orders::place;\n";
const PLACE_ROW_MOVED: &str = "    rpc Orders::place requires: [trader];\n";

/// A child process killed when dropped (the admin, the browser's script).
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The witness served with `witness-tool` answering its receivers, public
/// bound to `public` (`host:port`).
fn serve(program: &Path, name: &str, public: &str) -> Served {
    let dir = scratch(name);
    let config = config(&dir, false, "");
    Served::serve_on(program, dir, &config, public, &[])
}

/// `hale admin ENDPOINT --bearer t-alice --port 0` and the launch URL it
/// prints first.
fn admin(endpoint: &str) -> (Killed, String) {
    let mut child = Command::new(workspace_bin("hale"))
        .args(["admin", endpoint, "--bearer", "t-alice", "--port", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("hale admin starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    // Keep the pipe drained so the admin never blocks on stdout.
    std::thread::spawn(move || for _ in lines {});
    let url = first
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:") && w.contains("/?token="))
        .unwrap_or_else(|| panic!("hale admin {endpoint} printed no launch URL: {first:?}"))
        .to_owned();
    (Killed(child), url)
}

/// Until a socket may bind `127.0.0.1:port` again, at most 30 s: the old
/// server has let go of it (its process reaped, its listener closed).
/// The probe binds as `hale serve`'s own first probe does (std's bind,
/// SO_REUSEADDR), so a port free here is free to it, connections the old
/// server left in TIME_WAIT included; only another process taking the
/// port in between could refuse it, and then the start fails saying so.
fn until_free(port: u16) {
    let end = Instant::now() + Duration::from_secs(30);
    while let Err(e) = TcpListener::bind(("127.0.0.1", port)) {
        assert!(
            Instant::now() < end,
            "127.0.0.1:{port} is still taken after the server stopped: {e}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The next line the script prints, as JSON, within [`REPORT_WAIT`].
fn next_json(lines: &Receiver<String>, stderr_hint: &str) -> Value {
    let line = lines
        .recv_timeout(REPORT_WAIT)
        .unwrap_or_else(|e| panic!("admin_digest.mjs printed nothing more ({e}){stderr_hint}"));
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("admin_digest.mjs: {e}: {line}"))
}

/// The digest `hale check --api` gives the exposure public of `program`
/// for alice holding trader: the changed program's, read from the
/// compiler rather than from the server under test.
fn checked_digest(program: &Path) -> String {
    let out = Command::new(workspace_bin("hale"))
        .args([
            "check",
            "--api",
            "--exposure",
            "public",
            "--caller",
            "alice",
        ])
        .args(["--holds", "trader"])
        .arg(program)
        .output()
        .expect("hale check runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("a description");
    doc["digest"].as_str().expect("a digest").to_owned()
}

/// The node_modules holding playwright-core: `LIMEN_PLAYWRIGHT_MODULES`, or
/// the peers' (`.peers/node/node_modules`).
fn playwright_modules() -> PathBuf {
    std::env::var_os("LIMEN_PLAYWRIGHT_MODULES")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".peers/node/node_modules"))
}

#[test]
fn the_admin_page_names_its_digest_and_says_when_the_digest_moved() {
    let Some(program) = program() else { return };
    let modules = playwright_modules();
    let Some(node) = node() else { return };
    if !Path::new(CHROMIUM).exists() || !modules.join("playwright-core").exists() {
        absent(&format!(
            "{CHROMIUM} or playwright-core ({}) is absent",
            modules.display()
        ));
        return;
    }
    let fixtures = program.parent().unwrap();
    let described: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures.join("public.alice.description.json")).unwrap(),
    )
    .unwrap();
    let first = described["digest"].as_str().unwrap().to_owned();

    // The changed program, in a folder of its own.
    let text = std::fs::read_to_string(&program).unwrap();
    assert_eq!(text.matches(PLACE_ROW).count(), 1, "api Public's place row");
    let moved_dir = scratch("admin-digest-program");
    let moved = moved_dir.join("program.hl");
    std::fs::write(&moved, text.replace(PLACE_ROW, PLACE_ROW_MOVED)).unwrap();
    let served_now = checked_digest(&moved);

    let old = serve(&program, "admin-digest-old", "127.0.0.1:0");
    let endpoint = old.endpoint("public");
    let port: u16 = endpoint
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("a port in {endpoint}"));
    let (_admin, url) = admin(&endpoint);

    let shots = workspace_bin("hale")
        .parent()
        .and_then(Path::parent)
        .expect("hale lies under target/<profile>/")
        .join("admin-screenshots/digest");
    std::fs::create_dir_all(&shots).unwrap();
    let plan = json!({"modules": modules, "chromium": CHROMIUM, "shots": shots, "url": url});
    let mut script = Command::new(node)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/admin_digest.mjs"))
        .arg(plan.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("node starts");
    let mut stdin = script.stdin.take().unwrap();
    let stdout = script.stdout.take().unwrap();
    let _script = Killed(script);
    let (tx, lines) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let hint = " (its standard error is above)";

    let ready = next_json(&lines, hint);
    assert_eq!(ready["ready"], true, "the page did not load: {ready}");
    assert_eq!(
        ready["digest"], first,
        "the page shows public's digest for alice"
    );

    // The program moves: the old server gone (reaped, so its listener is
    // closed), the port free again, the changed one served there.
    let _ = old.stop();
    until_free(port);
    let new = serve(&moved, "admin-digest-new", &format!("127.0.0.1:{port}"));
    assert_eq!(new.endpoint("public"), endpoint, "the same port");
    writeln!(stdin, "moved").unwrap();
    stdin.flush().unwrap();

    let got = next_json(&lines, hint);
    let _ = std::fs::write(shots.join("digest-report.json"), format!("{got:#}"));
    assert!(
        got["error"].is_null(),
        "the browser stopped after {}: {}",
        got["steps"],
        got["error"].as_str().unwrap_or_default()
    );
    assert_eq!(got["console"], json!([]), "console errors");
    assert_eq!(got["page_errors"], json!([]), "script errors");

    // The call names the digest of the description the page shows, read
    // before the program moved; the exposure refuses it and names its own.
    assert_ne!(served_now, first, "the change moves the digest");
    assert_eq!(got["digest_at_call"], first);
    let mismatch = &got["mismatch"];
    assert_eq!(mismatch["sent"]["digest"], first, "{mismatch}");
    assert_eq!(mismatch["outcome"], "refusal", "{mismatch}");
    assert_eq!(mismatch["kind"], "digest_mismatch", "{mismatch}");
    assert_eq!(mismatch["fields"]["kind"], "digest_mismatch", "{mismatch}");
    assert_eq!(mismatch["fields"]["served"], served_now, "{mismatch}");

    // Reloaded: the page says the digest moved, from what to what, and the
    // identity card shows the new one.
    let notice = &got["notice"];
    assert!(
        notice["class"]
            .as_str()
            .is_some_and(|c| c.split_whitespace().any(|c| c == "notice-moved")),
        "{notice}"
    );
    assert!(
        notice["text"]
            .as_str()
            .is_some_and(|t| t.contains("The digest moved")),
        "{notice}"
    );
    assert_eq!(notice["digests"], json!([first, served_now]), "{notice}");
    assert_eq!(got["reloaded_digest"], served_now);
    // The form was rebuilt from the new description: place's row now
    // names the role the changed program requires.
    assert_eq!(got["requires_before"], "requires nothing");
    assert_eq!(got["requires_after"], "requires trader");

    // The next call names the new digest and answers.
    // What was typed and the outcome before the move are kept.
    assert_eq!(
        got["kept"],
        json!({"values": ["ACME", "10", "12500"], "first_outcome": "digest_mismatch"}),
        "{got}"
    );
    let second = &got["second"];
    assert_eq!(second["sent"]["digest"], served_now, "{second}");
    assert_eq!(second["outcome"], "result", "{second}");
    assert_eq!(second["fields"]["notional"], "125000", "{second}");

    for name in ["12-digest-mismatch", "13-digest-moved", "14-after-reload"] {
        assert!(shots.join(format!("{name}.png")).exists(), "{name}.png");
    }
    drop(new);
    let _ = std::fs::remove_dir_all(&moved_dir);
}
