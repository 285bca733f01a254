//! The hubs, live: `hale demo --hub` (and `--udp-hub`) run as a process
//! and driven by clients nobody here wrote — Python `websockets` 17 (its
//! sync client, `drivers/tests/peer/hub_client.py`), Node's `ws` package and
//! Node's own WebSocket (`hub_client.mjs`), a plain Python UDP socket
//! (`udp_client.py`) — and by `hale watch`: the description for three
//! callers, a subscribe by header and by query, an order placed over HTTP
//! and its fill read with its seq, each refusal, expiry and revocation
//! provoked through the control socket, and `closed` then the close frame
//! at stop; with `--hub-desk`, `call` frames on a subscriber's connection
//! answered by `reply` frames among its events (§ Rpcs on a hub). The peers are installed by `scripts/install-peers` under
//! `<repo>/.peers/`; a test skips with a message when one is absent,
//! unless `LIMEN_REQUIRE_PEERS=1`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

mod support;

use support::{absent, demo, Demo, HALE};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The venv's Python when it has `websockets`.
fn python() -> Option<PathBuf> {
    let python = root().join(".peers/venv/bin/python");
    let ok = Command::new(&python)
        .args(["-c", "import websockets.sync.client"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        Some(python)
    } else {
        absent(&format!(
            "Python websockets is absent ({})",
            python.display()
        ));
        None
    }
}

/// The witness's description of the hub for `caller`, its listener the
/// address the demo bound ("the listener's address as bound").
fn fixture(caller: &str, bound: &str) -> Option<Value> {
    let path = root().join(format!(
        "../shared/hale-witness/fills.{caller}.description.json"
    ));
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!(
            "skipped the description check: {} is absent",
            path.display()
        );
        return None;
    };
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    doc["listener"]["address"] = json!(bound);
    Some(doc)
}

/// One control line's answer, whatever it is.
fn control_answer(d: &Demo, line: &str) -> String {
    use std::io::{BufRead, BufReader, Write};
    let mut s = std::os::unix::net::UnixStream::connect(&d.control).unwrap();
    writeln!(s, "{line}").unwrap();
    let mut answer = String::new();
    BufReader::new(s).read_line(&mut answer).unwrap();
    answer
}

fn event(seq: u64, order: &Value, qty: i64, price: i64) -> Value {
    json!({"type": "event", "topic": "Fills", "seq": seq,
           "payload": {"order": order, "qty": qty, "price": price}})
}

fn refusal(topic: Value, kind: &str, reason: &str) -> Value {
    json!({"type": "refusal", "topic": topic, "refusal": {"kind": kind, "reason": reason}})
}

/// Runs `hub_client.py SCENARIO` against `d`; what it saw.
fn client(python: &Path, scenario: &str, d: &Demo) -> Value {
    assert!(!d.hub.is_empty(), "the banner names the hub");
    let out = Command::new(python)
        .arg("-W")
        .arg("error::DeprecationWarning")
        .arg(root().join("drivers/tests/peer/hub_client.py"))
        .args([scenario, &d.hub, &d.public])
        .arg(&d.control)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "hub_client.py {scenario}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_websocket_client_subscribes_reads_each_fill_is_refused_and_sees_closed_at_stop() {
    let Some(python) = python() else { return };
    let mut d = demo("hub", &["--hub", "127.0.0.1:0"]);
    let got = client(&python, "tour", &d);

    // GET /.description before any upgrade: the caller's document.
    for caller in ["dave", "bob"] {
        if let Some(want) = fixture(caller, &d.hub) {
            assert_eq!(got["descriptions"][caller], json!([200, want]), "{caller}");
        }
    }
    assert_eq!(
        got["descriptions"]["nobody"],
        json!([401, {"refusal": {"kind": "unauthenticated", "reason": "the sources name nobody"}}])
    );

    // Admitted by the header and by ?access_token=.
    let subscribed = json!({"type": "subscribed", "topic": "Fills"});
    assert_eq!(got["subscribed"], json!([subscribed, subscribed]));

    // Each accepted Orders::place publishes its Fill; each subscription
    // numbers its events from 1.
    let first = &got["first"];
    let order = &first["receipt"]["order"];
    assert!(order.is_i64(), "{first}");
    let want = event(1, order, 10, 12500);
    assert_eq!(first["events"], json!([want, want]));
    // A second subscribe is answered again and changes nothing.
    assert_eq!(got["again"], subscribed);
    let second = &got["second"];
    assert_eq!(
        second["events"],
        json!([event(2, &second["receipt"]["order"], 3, 9900)])
    );

    let r = &got["refusals"];
    assert_eq!(
        r["unauthenticated"],
        refusal(json!("Fills"), "unauthenticated", "the sources name nobody")
    );
    assert_eq!(
        r["unauthorized"],
        json!({"type": "refusal", "topic": "Fills",
               "refusal": {"kind": "unauthorized", "reason": "Fills requires operator",
                           "requires": ["operator"]}})
    );
    assert_eq!(
        r["unknown_topic"],
        refusal(json!("Quotes"), "malformed", "unknown_topic: Quotes")
    );
    assert_eq!(
        r["no_topic"],
        refusal(
            Value::Null,
            "malformed",
            "a subscribe names its topic as a string"
        )
    );
    assert_eq!(
        r["not_a_frame"],
        refusal(
            Value::Null,
            "malformed",
            "not a frame: a frame is one JSON object naming its type"
        )
    );

    // stop(): closed, then the close frame (1001, going away).
    assert_eq!(
        got["closing"],
        json!([{"type": "closed", "reason": "shutting_down"}])
    );
    assert_eq!(got["close_code"], 1001);
    let status = d
        .wait_exit(Duration::from_secs(15))
        .expect("the demo exits");
    assert!(status.success(), "{status:?}");
}

#[test]
fn expiry_and_revocation_provoked_from_outside_each_end_the_subscription_with_one_frame() {
    let Some(python) = python() else { return };
    let d = demo("hub-invalidate", &["--hub", "127.0.0.1:0"]);
    let got = client(&python, "invalidate", &d);
    assert_eq!(got["controls"], json!(["ok\n", "ok\n", "ok\n"]));
    let subscribed = json!({"type": "subscribed", "topic": "Fills"});
    // The credential's instant ends the subscription, no event needed.
    assert_eq!(
        got["expiring"],
        json!([subscribed, {"type": "unauthorized", "topic": "Fills", "reason": "expired"}])
    );
    let after = got["expired_after_s"].as_f64().unwrap();
    // At the instant (1 s after the clock started, never before), not at a
    // later event or the client's timeout.
    assert!((1.0..10.0).contains(&after), "expired after {after} s");
    assert_eq!(
        got["spent"],
        refusal(
            json!("Fills"),
            "unauthenticated",
            "the bearer token is refused: expired"
        )
    );
    // A revision that takes dave's grant: one unauthorized frame, and no
    // event after it.
    assert_eq!(got["subscribed"], subscribed);
    let before = &got["before"];
    assert_eq!(
        before["event"],
        event(1, &before["receipt"]["order"], 10, 12500)
    );
    assert_eq!(
        got["revoked"],
        json!({"type": "unauthorized", "topic": "Fills", "reason": "revoked"})
    );
    assert_eq!(got["after_revocation"], Value::Null);
    assert_eq!(got["again"]["refusal"]["kind"], "unauthorized");
}

#[test]
fn a_hub_address_that_cannot_be_bound_fails_the_boot() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = std::env::temp_dir().join(format!("limen-hub-boot-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let out = Command::new(HALE)
        .args([
            "demo",
            "--public",
            "127.0.0.1:0",
            "--partner",
            "127.0.0.1:0",
        ])
        .args(["--mcp", "127.0.0.1:0", "--hub", &addr])
        .arg("--admin-socket")
        .arg(dir.join("admin.sock"))
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("api: ws::Hub could not listen on {addr}")),
        "{stderr}"
    );
}

#[test]
fn hale_watch_prints_each_frame_and_exits_by_how_the_hub_ended_it() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;

    let mut d = demo("hub-watch", &["--hub", "127.0.0.1:0"]);
    let endpoint = format!("ws://{}", d.hub);
    // bob's description lists no stream: refused before any subscribe.
    let bob = Command::new(HALE)
        .args(["watch", &endpoint, "Fills", "--token", "t-bob"])
        .output()
        .unwrap();
    assert_eq!(bob.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&bob.stderr);
    assert!(
        stderr.contains("`Fills` is not a stream this caller may subscribe to"),
        "{stderr}"
    );
    // A socket or an HTTP endpoint is refused, naming ws://.
    for other in [
        format!("http://{}", d.public),
        "unix:/tmp/x.sock".to_owned(),
    ] {
        let out = Command::new(HALE)
            .args(["watch", &other, "Fills"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(5), "{other}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("ws://host:port"));
    }

    let mut dave = Command::new(HALE)
        .args(["watch", &endpoint, "Fills"])
        .env("HALE_API_TOKEN", "t-dave")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(dave.stdout.take().unwrap()).lines();
    let mut next = || -> Value { serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap() };
    assert_eq!(next(), json!({"type": "subscribed", "topic": "Fills"}));
    let reply = limen_drivers::client::wire::http_exchange(
        &d.public,
        "POST",
        "/call/Orders::place",
        &[("Authorization", "Bearer t-alice".to_owned())],
        br#"{"symbol":"ACME","qty":7,"limit":100}"#,
    )
    .unwrap();
    let receipt: Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(next(), event(1, &receipt["order"], 7, 100));
    // What the program asks of its hub, read through the control socket.
    assert_eq!(
        control_answer(&d, "hub"),
        "ok events=1 subscribers=1 connections=1\n"
    );
    d.control("stop");
    assert_eq!(next(), json!({"type": "closed", "reason": "shutting_down"}));
    assert_eq!(dave.wait().unwrap().code(), Some(0));
    assert!(d
        .wait_exit(Duration::from_secs(15))
        .is_some_and(|s| s.success()));
}

#[test]
fn hale_watch_exits_1_at_an_unauthorized_frame() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;

    let d = demo("hub-watch-revoked", &["--hub", "127.0.0.1:0"]);
    let mut dave = Command::new(HALE)
        .args([
            "watch",
            &format!("ws://{}", d.hub),
            "Fills",
            "--token",
            "t-dave",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(dave.stdout.take().unwrap()).lines();
    let mut next = || -> Value { serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap() };
    assert_eq!(next(), json!({"type": "subscribed", "topic": "Fills"}));
    d.control("revoke dave operator");
    assert_eq!(
        next(),
        json!({"type": "unauthorized", "topic": "Fills", "reason": "revoked"})
    );
    assert_eq!(dave.wait().unwrap().code(), Some(1));
}

#[test]
fn a_plain_udp_socket_subscribes_two_ids_reads_each_fill_and_sees_closed() {
    if !support::peer("python3") {
        return;
    }
    let mut d = demo("udp-hub", &["--udp-hub", "127.0.0.1:0"]);
    assert!(!d.udp_hub.is_empty(), "the banner names the datagram hub");
    let out = Command::new("python3")
        .arg(root().join("drivers/tests/peer/udp_client.py"))
        .args([&d.udp_hub, &d.public])
        .arg(&d.control)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "udp_client.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    let subscribed = |id: Value| json!({"type": "subscribed", "id": id, "topic": "Fills"});
    assert_eq!(
        got["subscribed"],
        json!([subscribed(json!("a")), subscribed(json!(2))])
    );
    let udp_event = |id: Value, seq: u64, order: &Value, qty: i64, price: i64| {
        json!({"type": "event", "id": id, "topic": "Fills", "seq": seq,
               "payload": {"order": order, "qty": qty, "price": price}})
    };
    let order = &got["first"]["receipt"]["order"];
    assert_eq!(
        got["first"]["events"],
        json!([
            udp_event(json!(2), 1, order, 10, 12500),
            udp_event(json!("a"), 1, order, 10, 12500)
        ])
    );
    let r = &got["refusals"];
    assert_eq!(r["unauthenticated"]["refusal"]["kind"], "unauthenticated");
    assert_eq!(r["unauthenticated"]["id"], 3);
    assert_eq!(
        r["unauthorized"],
        json!({"type": "refusal", "id": 4, "topic": "Fills",
               "refusal": {"kind": "unauthorized", "reason": "Fills requires operator",
                           "requires": ["operator"]}})
    );
    assert_eq!(
        r["unknown_topic"]["refusal"],
        json!({"kind": "malformed", "reason": "unknown_topic: Quotes"})
    );
    assert_eq!(r["no_id"]["id"], Value::Null);
    // The freed id starts again at 1; the other goes on.
    assert_eq!(got["resubscribed"], subscribed(json!(2)));
    let order = &got["second"]["receipt"]["order"];
    assert_eq!(
        got["second"]["events"],
        json!([
            udp_event(json!(2), 1, order, 3, 9900),
            udp_event(json!("a"), 2, order, 3, 9900)
        ])
    );
    let description = &got["description"];
    assert_eq!(description["id"], "d");
    assert_eq!(
        description["document"]["listener"],
        json!({"transport": "udp", "address": d.udp_hub})
    );
    assert_eq!(description["document"]["outcomes"]["transport"], "udp");
    assert_eq!(description["document"]["streams"][0]["topic"], "Fills");
    let closed = |id: Value| json!({"type": "closed", "id": id, "reason": "shutting_down"});
    assert_eq!(
        got["closing"],
        json!([closed(json!(2)), closed(json!("a"))])
    );
    assert!(d
        .wait_exit(Duration::from_secs(15))
        .is_some_and(|s| s.success()));
}

/// Node's `ws` package and Node's own WebSocket, each through
/// `drivers/tests/peer/hub_client.mjs`: subscribe, a fill with its seq,
/// three refusals, `closed` then close 1001.
#[test]
fn node_websocket_clients_subscribe_read_a_fill_are_refused_and_see_closed() {
    let node_ok = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let ws_package = root().join(".peers/node/node_modules/ws/package.json");
    if !node_ok || !ws_package.exists() {
        absent(&format!(
            "node or the ws package is absent ({})",
            ws_package.display()
        ));
        return;
    }
    for mode in ["ws", "native"] {
        let mut d = demo(&format!("hub-node-{mode}"), &["--hub", "127.0.0.1:0"]);
        let out = Command::new("node")
            .args(["--experimental-websocket", "--no-warnings"])
            .arg(root().join("drivers/tests/peer/hub_client.mjs"))
            .args([mode, &d.hub, &d.public])
            .arg(&d.control)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "hub_client.mjs {mode}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            got["subscribed"],
            json!({"type": "subscribed", "topic": "Fills"}),
            "{mode}"
        );
        let first = &got["first"];
        assert_eq!(
            first["event"],
            event(1, &first["receipt"]["order"], 10, 12500),
            "{mode}"
        );
        let r = &got["refusals"];
        assert_eq!(
            r["unauthenticated"],
            refusal(json!("Fills"), "unauthenticated", "the sources name nobody")
        );
        assert_eq!(
            r["unauthorized"]["refusal"]["requires"],
            json!(["operator"])
        );
        assert_eq!(
            r["unknown_topic"],
            refusal(json!("Quotes"), "malformed", "unknown_topic: Quotes")
        );
        assert_eq!(
            got["closing"],
            json!([{"type": "closed", "reason": "shutting_down"}, {"closedConnection": 1001}]),
            "{mode}"
        );
        assert!(d
            .wait_exit(Duration::from_secs(15))
            .is_some_and(|s| s.success()));
    }
}

#[test]
fn websocket_client_subscribes_reads_a_fill_is_refused_and_sees_closed() {
    let Some(python) = python() else { return };
    let has = Command::new(&python)
        .args(["-c", "import websocket"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has {
        absent("Python websocket-client is absent");
        return;
    }
    let mut d = demo("hub-wsc", &["--hub", "127.0.0.1:0"]);
    let out = Command::new(&python)
        .arg(root().join("drivers/tests/peer/hub_client_wsc.py"))
        .args([&d.hub, &d.public])
        .arg(&d.control)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "hub_client_wsc.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    let subscribed = json!({"type": "subscribed", "topic": "Fills"});
    assert_eq!(got["subscribed"], json!([subscribed, subscribed]));
    let want = event(1, &got["first"]["receipt"]["order"], 4, 5000);
    assert_eq!(got["first"]["events"], json!([want, want]));
    assert_eq!(
        got["refusals"]["unauthenticated"]["refusal"]["kind"],
        "unauthenticated"
    );
    assert_eq!(
        got["refusals"]["unauthorized"]["refusal"]["kind"],
        "unauthorized"
    );
    assert_eq!(
        got["closed"],
        json!({"type": "closed", "reason": "shutting_down"})
    );
    // Opcode 8, the close frame, with 1001.
    assert_eq!(got["close"], json!([8, 1001]));
    assert!(d
        .wait_exit(Duration::from_secs(15))
        .is_some_and(|s| s.success()));
}

/// A client that sends a burst and reads only afterwards is held back, then
/// read again, and receives every answer (the server's pause and resume).
#[test]
fn a_burst_of_frames_is_answered_whole_after_the_hub_held_the_reader_back() {
    use limen_core::wire::ws::client::{self, ServerFrame, ServerReader};
    use std::io::{Read, Write};

    let d = demo("hub-burst", &["--hub", "127.0.0.1:0"]);
    let mut s = std::net::TcpStream::connect(&d.hub).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let key = client::key([3; 16]);
    s.write_all(&client::upgrade_request(&d.hub, "/", &key, Some("t-dave")))
        .unwrap();
    let mut head = Vec::new();
    let mut buf = vec![0u8; 65536];
    let rest = loop {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "the upgrade is answered");
        head.extend_from_slice(&buf[..n]);
        if let Some(at) = client::upgrade_answer(&head, &key).unwrap() {
            break head.split_off(at);
        }
    };
    let burst = 2000;
    let mut frames = Vec::new();
    for _ in 0..burst {
        frames.extend(client::text("not json", [1, 2, 3, 4]));
    }
    s.write_all(&frames).unwrap();
    let mut reader = ServerReader::default();
    reader.handle_data(&rest);
    let mut refusals = 0;
    while refusals < burst {
        while let Some(f) = reader.poll_frame().unwrap() {
            if let ServerFrame::Text(t) = f {
                let v: Value = serde_json::from_str(&t).unwrap();
                assert_eq!(v["refusal"]["kind"], "malformed");
                refusals += 1;
            }
        }
        if refusals < burst {
            let n = s.read(&mut buf).unwrap();
            assert!(n > 0, "{refusals} answers of {burst} before the end");
            reader.handle_data(&buf[..n]);
        }
    }
}

/// A `reply` frame: the Unix reply's fields (§ Rpcs on a hub), the
/// server's request id read from the frame itself (it numbers the
/// exposure's requests, which the test does not choose).
fn reply(got: &Value, id: Value, outcome: Value, caller: &str) -> Value {
    let mut want = json!({"type": "reply", "request_id": got["request_id"], "id": id,
                          "caller": {"mode": "bearer", "name": caller}});
    for (k, v) in outcome.as_object().unwrap() {
        want[k] = v.clone();
    }
    assert!(got["request_id"].is_u64(), "{got}");
    want
}

#[test]
fn calls_on_a_subscribers_connection_are_answered_by_reply_frames_among_its_events() {
    let Some(python) = python() else { return };
    let mut d = demo("hub-desk", &["--hub", "127.0.0.1:0", "--hub-desk"]);
    let got = client(&python, "calls", &d);
    assert_eq!(
        got["subscribed"],
        json!({"type": "subscribed", "topic": "Fills"})
    );
    // The fill is published while the call runs: the hub writes its event,
    // then the reply, on the one connection; the caller is the one the
    // upgrade's credential named.
    let place = &got["place"];
    let order = &place[1]["value"]["order"];
    assert_eq!(place[0], event(1, order, 10, 12500));
    assert_eq!(
        place[1],
        reply(
            &place[1],
            json!("c1"),
            json!({"ok": true, "value": {"order": order, "notional": 125000}}),
            "dave"
        )
    );
    // desk is bound to public's Orders instance: public's next order is the
    // next number, and its fill the subscription's next seq.
    let next = order.as_i64().unwrap() + 1;
    assert_eq!(got["http"]["order"], next);
    assert_eq!(got["http_event"], event(2, &json!(next), 3, 9900));
    // Admission as for every transport, in its order: the digest, the
    // member, the payload, the roles.
    let served = "fnv1a64:a8930d6e7998e986";
    assert_eq!(
        got["digest_mismatch"],
        reply(
            &got["digest_mismatch"],
            json!(7),
            json!({"ok": false, "refusal": {"kind": "digest_mismatch",
                   "reason": "the request was generated against fnv1a64:0000000000000000",
                   "served": served}}),
            "dave"
        )
    );
    assert_eq!(
        got["unauthorized"],
        reply(
            &got["unauthorized"],
            json!("c3"),
            json!({"ok": false, "refusal": {"kind": "unauthorized",
                   "reason": "Orders::cancel requires trader", "requires": ["trader"]}}),
            "dave"
        )
    );
    assert_eq!(
        got["unknown_member"]["refusal"],
        json!({"kind": "malformed", "reason": "unknown_member: Orders::nope"})
    );
    assert_eq!(
        got["missing_field"]["refusal"],
        json!({"kind": "malformed", "reason": "missing_field: qty"})
    );
    // No credential at the upgrade, or one the source refuses: each call is
    // refused unauthenticated, with the source's reason.
    assert_eq!(
        got["nobody"]["refusal"],
        json!({"kind": "unauthenticated", "reason": "the sources name nobody"})
    );
    assert_eq!(
        got["stranger"]["refusal"],
        json!({"kind": "unauthenticated", "reason": "no such token"})
    );
    // bob (by ?access_token=) holds nothing under the hub's roles and
    // Orders::place requires nothing; his order's fill reaches dave.
    let bob = &got["bob"];
    let third = json!(next + 1);
    assert_eq!(
        *bob,
        reply(
            bob,
            json!("c8"),
            json!({"ok": true, "value": {"order": third, "notional": 125000}}),
            "bob"
        )
    );
    assert_eq!(got["bob_fill"], event(3, &third, 10, 12500));
    // Each request took its own server request id.
    let ids: Vec<u64> = ["digest_mismatch", "unauthorized", "unknown_member", "bob"]
        .iter()
        .map(|k| got[k]["request_id"].as_u64().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    // A call executing at stop() runs to its end: its fill, its reply,
    // then closed, in the order the hub wrote them.
    assert_eq!(got["controls"], json!(["ok\n", "ok\n", "ok\n"]));
    let closing = &got["closing"];
    let fourth = json!(next + 2);
    assert_eq!(closing[0], event(4, &fourth, 10, 12500));
    assert_eq!(
        closing[1],
        reply(
            &closing[1],
            json!("c9"),
            json!({"ok": true, "value": {"order": fourth, "notional": 125000}}),
            "dave"
        )
    );
    assert_eq!(
        closing[2],
        json!({"type": "closed", "reason": "shutting_down"})
    );
    let status = d
        .wait_exit(Duration::from_secs(15))
        .expect("the demo exits");
    assert!(status.success(), "{status:?}");
}

#[test]
fn hub_desk_without_a_hub_is_a_usage_error() {
    let out = Command::new(HALE)
        .args(["demo", "--hub-desk"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--hub"), "{stderr}");
}
