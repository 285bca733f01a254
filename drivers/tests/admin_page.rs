//! `hale admin` in a real browser (§ The clients): Debian's Chromium, driven
//! headless by playwright-core through `drivers/tests/peer/admin_browser.mjs`,
//! against `hale demo` with a hub carrying the desk. Three `hale admin`
//! processes serve its pages: the hub as dave, public over HTTP as alice and
//! as bob. The browser fills forms and subscribes while the control socket
//! gates, revokes and stops the demo; each outcome and frame is read from
//! what the page shows. Then the pages are asked for without the token,
//! under a foreign Host and from a foreign Origin: 403 each. Screenshots of
//! every state land in `target/admin-screenshots/page/`.

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};
use support::{absent, demo, report, root, spawn_plan, HALE};

/// Debian's Chromium, as `scripts/install-peers` installs it.
const CHROMIUM: &str = "/usr/bin/chromium";

/// A running `hale admin`, killed when dropped.
struct Admin {
    child: Child,
    /// The launch URL it printed (`http://127.0.0.1:PORT/?token=…`).
    url: String,
}

impl Admin {
    /// Starts `hale admin ENDPOINT --port 0` with `extra` flags and reads the
    /// launch URL from the first line it prints.
    fn start(endpoint: &str, extra: &[&str]) -> Admin {
        let mut child = Command::new(HALE)
            .args(["admin", endpoint, "--port", "0"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines
            .next()
            .and_then(Result::ok)
            .unwrap_or_else(|| panic!("hale admin {endpoint} printed no launch URL"));
        // Keep the pipe drained so the admin never blocks on stdout.
        std::thread::spawn(move || for _ in lines {});
        let url = first
            .split_whitespace()
            .find(|w| w.starts_with("http://127.0.0.1:"))
            .unwrap_or_else(|| panic!("the launch line names the page's URL: {first}"))
            .to_owned();
        assert!(url.contains("/?token="), "{url}");
        Admin { child, url }
    }

    /// The page's own address, `http://127.0.0.1:PORT/`.
    fn page(&self) -> String {
        self.url[..self.url.find('?').unwrap()].to_owned()
    }
}

impl Drop for Admin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The node_modules holding playwright-core: `LIMEN_PLAYWRIGHT_MODULES`, or
/// the peers' (`.peers/node/node_modules`).
fn playwright_modules() -> PathBuf {
    std::env::var_os("LIMEN_PLAYWRIGHT_MODULES")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".peers/node/node_modules"))
}

/// The build's `target/`, where the screenshots go: the directory above
/// the one holding the binary under test.
fn target_dir() -> PathBuf {
    Path::new(HALE)
        .parent()
        .and_then(Path::parent)
        .expect("the hale binary lies under target/<profile>/")
        .to_path_buf()
}

/// The fields an outcome card shows, by name.
fn field<'a>(outcome: &'a Value, name: &str) -> &'a Value {
    &outcome["fields"][name]
}

#[test]
fn the_admin_page_in_chromium_calls_tails_and_refuses_strangers() {
    let modules = playwright_modules();
    let node_ok = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !node_ok || !Path::new(CHROMIUM).exists() || !modules.join("playwright-core").exists() {
        absent(&format!(
            "node, {CHROMIUM} or playwright-core ({}) is absent",
            modules.display()
        ));
        return;
    }

    let mut d = demo(
        "admin-page",
        &["--hub", "127.0.0.1:0", "--hub-desk", "--bound", "1"],
    );
    let hub = Admin::start(&format!("ws://{}", d.hub), &["--token", "t-dave"]);
    let alice = Admin::start(&format!("http://{}", d.public), &["--bearer", "t-alice"]);
    let bob = Admin::start(&format!("http://{}", d.public), &["--bearer", "t-bob"]);
    // This test's own folder, emptied: the digest test
    // (examples/witness/tests/admin_digest.rs) writes beside it.
    let shots = target_dir().join("admin-screenshots/page");
    let _ = std::fs::remove_dir_all(&shots);
    std::fs::create_dir_all(&shots).unwrap();

    let plan = json!({
        "modules": modules,
        "chromium": CHROMIUM,
        "shots": shots,
        "control": d.control,
        "public": d.public,
        "hub": hub.url,
        "alice": alice.url,
        "bob": bob.url,
    });
    let child = spawn_plan(
        Command::new("node").arg(root().join("drivers/tests/peer/admin_browser.mjs")),
        &plan,
    );
    let got = report(child, "admin_browser.mjs");
    // Beside the screenshots, what the browser saw, for whoever looks at them.
    std::fs::write(shots.join("report.json"), format!("{got:#}")).unwrap();
    assert!(
        got["error"].is_null(),
        "the browser stopped after {}: {}",
        got["steps"],
        got["error"].as_str().unwrap_or_default()
    );

    // The page: loaded at `/` (the token in no URL after the launch), under
    // its CSP with nothing refused and no script error.
    let a = &got["alice"];
    assert_eq!(a["url_after_launch"], alice.page());
    assert_eq!(got["token_in_later_urls"], json!([]));
    assert_eq!(got["console"], json!([]), "console errors");
    assert_eq!(got["page_errors"], json!([]), "script errors");
    assert_eq!(got["unlabelled"], json!([]), "every input has its label");

    // Identity, digest, caller and roles; the members listed.
    let id = &a["identity"];
    let exposure = id["exposure"].as_str().unwrap();
    assert!(
        exposure.starts_with("Public@fnv1a64:") && exposure.ends_with("/public"),
        "{id}"
    );
    assert!(
        id["digest"].as_str().unwrap().starts_with("fnv1a64:"),
        "{id}"
    );
    assert_eq!(id["caller"], "alice");
    assert_eq!(id["roles"], json!(["trader"]));
    assert_eq!(a["members"], json!(["Orders::cancel", "Orders::place"]));
    assert_eq!(a["streams"], json!([]));

    // The form typed by PlaceOrder: numbers as numbers, the unit shown.
    assert_eq!(
        a["place_input_types"],
        json!([["symbol", "text"], ["qty", "number"], ["limit", "number"]])
    );
    assert_eq!(a["place_units"], json!(["q(cent)"]));

    // Filled by keyboard alone: the result, its fields as the response's.
    let place = &a["place"];
    assert_eq!(place["outcome"], "result", "{place}");
    assert_eq!(field(place, "notional"), "125000");
    let raw: Value = serde_json::from_str(place["raw"].as_str().unwrap()).unwrap();
    assert_eq!(raw["notional"], 125000, "the raw bytes are the HTTP body");

    // An unknown order: the handler error's code and reason.
    let cancel = &a["cancel"];
    assert_eq!(cancel["outcome"], "handler_error", "{cancel}");
    assert_eq!(field(cancel, "code"), "unknown_order");
    assert!(
        field(cancel, "reason").as_str().unwrap().contains("999999"),
        "{cancel}"
    );
    assert_eq!(a["cancel_json"], json!({"order": 999999}));
    // An integer past 2^53 is sent as its digits, not rounded.
    let big = &a["cancel_big"];
    assert_eq!(big["outcome"], "handler_error", "{big}");
    assert!(
        field(big, "reason")
            .as_str()
            .unwrap()
            .contains("no order 9223372036854775807"),
        "{big}"
    );

    // `full`: one call held at the gate while a second is refused.
    let full = &a["full"];
    assert_eq!(full["refused"]["kind"], "full", "{full}");
    assert_eq!(field(&full["refused"], "kind"), "full");
    assert_eq!(full["pending_while_refused"], 1, "{full}");
    assert_eq!(full["held"]["outcome"], "result", "{full}");
    // A handler that violates: the server error, with its raw bytes.
    let violated = &a["violated"];
    assert_eq!(violated["outcome"], "server_error", "{violated}");
    let raw: Value = serde_json::from_str(violated["raw"].as_str().unwrap()).unwrap();
    assert_eq!(raw, json!({"refusal": {"kind": "server"}}));

    assert!(
        a["reload"].as_str().unwrap().contains("has not moved"),
        "{}",
        a["reload"]
    );

    // bob holds no role: the refusal names what the row requires.
    let b = &got["bob"];
    assert_eq!(b["identity"]["caller"], "bob");
    assert_eq!(b["members"], json!(["Orders::place"]));
    assert_eq!(b["cancel"]["outcome"], "refusal", "{}", b["cancel"]);
    assert_eq!(b["cancel"]["kind"], "unauthorized");
    assert_eq!(field(&b["cancel"], "requires"), &json!(["trader"]));

    // The hub: its desk's members and Fills; an event with its seq, then
    // `revoked`, a refusal naming operator, and `closed` at stop.
    let h = &got["hub"];
    assert_eq!(h["streams"], json!(["Fills"]));
    assert!(
        h["members"]
            .as_array()
            .unwrap()
            .contains(&json!("Orders::place")),
        "{h}"
    );
    assert_eq!(h["place"]["outcome"], "result", "{}", h["place"]);
    assert_eq!(h["event"]["seq"], "1");
    let event: Value = serde_json::from_str(h["event"]["raw"].as_str().unwrap()).unwrap();
    let order: u64 = field(&h["place"], "order")
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        event,
        json!({"type": "event", "topic": "Fills", "seq": 1,
               "payload": {"order": order, "qty": 7, "price": 12600}})
    );
    assert_eq!(h["revoked"]["reason"], "revoked", "{h}");
    assert_eq!(h["refused"]["kind"], "unauthorized", "{h}");
    assert_eq!(
        field(&h["refused_fields"], "requires"),
        &json!(["operator"]),
        "{h}"
    );
    assert_eq!(h["closed"]["reason"], "shutting_down", "{h}");
    assert!(d
        .wait_exit(std::time::Duration::from_secs(30))
        .is_some_and(|s| s.success()));

    // The endpoint gone: no answer.
    assert_eq!(
        a["after_stop"]["outcome"], "no_answer",
        "{}",
        a["after_stop"]
    );

    // Strangers: no token, a foreign Host (with the right token in the
    // URL), a foreign Origin (with the cookie riding along): 403 each.
    for (route, status) in got["no_token"].as_object().unwrap() {
        assert_eq!(status, 403, "no token: {route}");
    }
    assert_eq!(got["no_token"].as_object().unwrap().len(), 6);
    for (route, status) in got["foreign_host"].as_object().unwrap() {
        assert_eq!(status, 403, "foreign Host: {route}");
    }
    assert_eq!(got["foreign_host_cookies"], json!([]));
    let origins = got["foreign_origin"].as_object().unwrap();
    assert_eq!(origins.len(), 5);
    for (route, seen) in origins {
        assert_eq!(seen["status"], 403, "foreign Origin: {route} {seen}");
        assert!(
            seen["cookie"] == true,
            "the cookie rode along: {route} {seen}"
        );
        assert!(
            seen["origin"].as_str().is_some_and(
                |o| o.starts_with("http://127.0.0.1:") && o != hub.page().trim_end_matches('/')
            ),
            "{route} {seen}"
        );
    }

    // A screenshot of each state.
    for name in [
        "01-alice-loaded",
        "02-result",
        "04-full",
        "04b-server-error",
        "06-stream-event",
        "08-stream-closed",
        "11-foreign-host",
    ] {
        assert!(shots.join(format!("{name}.png")).exists(), "{name}.png");
    }
    drop((hub, alice, bob));
}
