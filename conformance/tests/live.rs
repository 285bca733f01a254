//! The live check against `hale demo`, booted through the library on
//! ephemeral ports, with its control socket (so the outcomes that need the
//! server's cooperation are provoked) and its recorder on: what the check
//! sends, the demo records, and the recordings are held to the reference
//! records and replayed.

mod common;

use std::path::PathBuf;
use std::thread;

use common::*;

use limen_drivers::demo::{Demo, DemoOptions};
use limen_drivers::serve::{BoundAddress, StopHandle};

/// A demo running on a thread of its own, on ephemeral ports, recording.
struct Running {
    dir: Temp,
    endpoints: Vec<(String, String)>,
    stop: StopHandle,
    thread: Option<thread::JoinHandle<()>>,
}

impl Running {
    fn endpoint(&self, name: &str) -> String {
        self.endpoints
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, e)| e.clone())
            .unwrap()
    }
    fn control(&self) -> String {
        s(&self.dir.0.join("control.sock")).to_owned()
    }
    fn recorded(&self) -> PathBuf {
        self.dir.0.join("recorded")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Boots the demo; `operator` names who holds `operator` under the admin
/// exposure (the current user when `None`).
fn boot(tag: &str, operator: Option<&str>) -> Running {
    boot_with(tag, operator, |_| {})
}

/// [`boot`], with more of the demo's options set by `more`.
fn boot_with(tag: &str, operator: Option<&str>, more: impl FnOnce(&mut DemoOptions)) -> Running {
    let dir = Temp::new(&format!("live-{tag}"));
    let mut options = DemoOptions::default();
    for name in ["public", "partner"] {
        options.addresses.insert(name.into(), "127.0.0.1:0".into());
    }
    options.mcp = Some("127.0.0.1:0".into());
    options.grpc = Some("127.0.0.1:0".into());
    options
        .addresses
        .insert("admin".into(), s(&dir.0.join("admin.sock")).to_owned());
    options.control = Some(dir.0.join("control.sock"));
    options.record = Some(dir.0.join("recorded"));
    options.operator = operator.map(str::to_owned);
    more(&mut options);
    let demo = Demo::boot(&options).unwrap();
    let endpoints = demo
        .endpoints()
        .iter()
        .map(|(name, _, bound)| {
            let endpoint = match bound {
                BoundAddress::Tcp(a) if name == "grpc" => format!("grpc://{a}"),
                BoundAddress::Tcp(a) if name == "fills" || name == "desk" => format!("ws://{a}"),
                BoundAddress::Tcp(a) => format!("http://{a}"),
                BoundAddress::Unix(p) => format!("unix:{}", p.display()),
            };
            (name.clone(), endpoint)
        })
        .collect();
    let stop = demo.stop_handle();
    let thread = thread::spawn(move || demo.run().unwrap());
    Running {
        dir,
        endpoints,
        stop,
        thread: Some(thread),
    }
}

fn check(args: &[&str]) -> (i32, String) {
    let mut all = vec!["check"];
    all.extend_from_slice(args);
    let (code, out, err) = run(&all);
    (code, format!("{out}{err}"))
}

/// Checks the demo's exposure `name` over `transport` as alice, with its
/// control socket, and `extra` flags.
fn check_cooperating(demo: &Running, name: &str, transport: &str, extra: &[&str]) -> (i32, String) {
    let endpoint = demo.endpoint(name);
    let control = demo.control();
    let mut args = vec![
        "--endpoint",
        &endpoint,
        "--transport",
        transport,
        "--bearer",
        "t-alice",
        "--control",
        &control,
    ];
    args.extend_from_slice(extra);
    check(&args)
}

fn lines_of<'a>(out: &'a str, prefix: &str) -> Vec<&'a str> {
    out.lines()
        .filter(|l| l.starts_with(prefix))
        .map(|l| l[prefix.len()..].split(':').next().unwrap())
        .collect()
}

/// The names of the project's records of `transport`.
fn project_names(transport: &str) -> Vec<String> {
    limen_conformance::record::Corpus::open(&project())
        .unwrap()
        .records
        .iter()
        .filter(|r| r.transport.as_str() == transport)
        .map(|r| r.name.clone())
        .collect()
}

/// The recordings of a run, held to the reference records of their names
/// (when the reference is there); then the reviewed selection (the records
/// of those names) replayed.
fn recordings_hold(demo: &Running, names: &[&str]) {
    let recorded = demo.recorded();
    for name in names {
        let file = recorded.join("wire").join(format!("{name}.json"));
        assert!(file.is_file(), "the run recorded no {name}");
    }
    let reviewed = demo.dir.0.join("reviewed");
    select(&recorded, names, &recorded.join("program.hl"), &reviewed);
    let (code, out, _) = run(&["replay", "--corpus", s(&reviewed)]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.ends_with(&format!("{} passed, 0 failed\n", names.len())),
        "{out}"
    );
    let Some(reference) = reference() else { return };
    // The run recorded more than these (the copies, the setup calls, the
    // describe, the wake after a resume); these are the ones the reference
    // names, and the ones a review keeps.
    let (_, out, _) = run(&[
        "compare",
        "--corpus",
        s(&recorded),
        "--reference",
        s(&reference),
    ]);
    for name in names {
        assert!(out.contains(&format!("pass  {name}\n")), "{name}:\n{out}");
    }
}

#[test]
fn http_every_outcome_live_recorded_and_replayed() {
    let demo = boot("http", None);
    let (code, out) = check_cooperating(&demo, "public", "http", &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("serves Public@fnv1a64:a8930d6e7998e986/public"),
        "{out}"
    );
    // The transport failures too: the silences waited for, the demo's
    // timers closing the connections.
    assert!(out.ends_with("14 passed, 0 failed\n"), "{out}");
    for name in [
        "http/transport_failure.silence",
        "http/transport_failure.trickle",
    ] {
        assert!(out.contains(&format!("pass  {name}\n")), "{out}");
    }
    // The cooperative outcomes run last, the stop at the very end.
    let order = lines_of(&out, "pass  ");
    assert_eq!(
        &order[order.len() - 3..],
        [
            "http/refusal_full",
            "http/refusal_unavailable",
            "http/refusal_shutting_down"
        ]
    );
    // What the check sent of public and the demo answered; the partner's
    // describes it did not send, and a connection closed with nothing
    // written is no exchange a recorder hears.
    let names: Vec<String> = project_names("http")
        .into_iter()
        .filter(|n| !n.contains(".partner.") && !n.contains("transport_failure"))
        .collect();
    assert_eq!(names.len(), 12);
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    recordings_hold(&demo, &names);
}

#[test]
fn mcp_every_outcome_live_recorded_and_replayed() {
    let demo = boot("mcp", None);
    let (code, out) = check_cooperating(&demo, "mcp", "mcp", &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(
            "its initialize names Public@fnv1a64:a8930d6e7998e986; checking the mcp records of `mcp`"
        ),
        "{out}"
    );
    let names = project_names("mcp");
    assert!(
        out.ends_with(&format!("{} passed, 0 failed\n", names.len())),
        "{out}"
    );
    let order = lines_of(&out, "pass  ");
    assert_eq!(
        &order[order.len() - 3..],
        [
            "mcp/refusal_full",
            "mcp/refusal_unavailable",
            "mcp/refusal_shutting_down"
        ]
    );
    // The recorder names what the check sent as the corpus does; these
    // are the ones the reference implies (the outcomes of its HTTP calls,
    // and each caller's tools). The rest the reference says nothing of
    // (ping, a batch, a GET…), and a review renamed two the recorder names
    // by their outcome alone (`.meta_digest`, `.unknown_tool`).
    let implied: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|n| {
            let stem = n.strip_prefix("mcp/").unwrap();
            stem == "tools_list.alice"
                || stem == "tools_list.bob"
                || (!stem.contains('.')
                    && stem != "initialize"
                    && stem != "ping"
                    && stem != "notifications_initialized")
        })
        .collect();
    assert_eq!(implied.len(), 12, "{implied:?}");
    recordings_hold(&demo, &implied);

    // The reference has no MCP records: its HTTP calls are sent as
    // tools/call, and each answer is what the HTTP record implies.
    let Some(reference) = reference() else { return };
    let demo = boot("mcp-reference", None);
    let (code, out) = check_cooperating(&demo, "mcp", "mcp", &["--corpus", s(&reference)]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("no mcp records: its 10 http call records are sent as tools/call"),
        "{out}"
    );
    assert!(out.ends_with("10 passed, 0 failed\n"), "{out}");
}

#[test]
fn grpc_every_outcome_live() {
    // Each place takes the demo's next order id, and each record's order
    // is the first (41); and a stop ends a server. So the +proto result and
    // the stop's abandoned call (whose place never completes) are checked
    // against a demo of their own, the other records against another.
    let names = project_names("grpc");
    assert_eq!(
        names.len(),
        16,
        "the ten outcomes, two describes, three +proto calls, the stop's transport failure"
    );
    let (alone, rest): (Vec<&str>, Vec<&str>) = names
        .iter()
        .map(String::as_str)
        .partition(|n| *n == "grpc/result.proto" || *n == "grpc/transport_failure.stop_wait");
    assert_eq!(alone.len(), 2);
    for (tag, names) in [("grpc", rest), ("grpc-proto", alone)] {
        let demo = boot(tag, None);
        let corpus = demo.dir.0.join("selected");
        select(&project(), &names, &desk(), &corpus);
        let (code, out) = check_cooperating(&demo, "grpc", "grpc", &["--corpus", s(&corpus)]);
        assert_eq!(code, 0, "{out}");
        assert!(
            out.contains("serves Public@fnv1a64:a8930d6e7998e986/grpc"),
            "{out}"
        );
        // Every record, the cooperative ones by the control socket.
        for name in &names {
            assert!(out.contains(&format!("pass  {name}\n")), "{name}:\n{out}");
        }
        assert!(
            out.ends_with(&format!("{} passed, 0 failed\n", names.len())),
            "{out}"
        );
    }
}

#[test]
fn http_without_cooperation_names_what_it_could_not_provoke() {
    let demo = boot("http-alone", None);
    let public = demo.endpoint("public");
    // Described to nobody, the endpoint does not say which exposure it is,
    // and the HTTP records are of two.
    let (code, out) = check(&["--endpoint", &public, "--transport", "http"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains(
            "the http records are of partner, public: name the one it serves with --exposure NAME"
        ),
        "{out}"
    );
    // In a hurry: no silences waited for either.
    let (code, out) = check(&[
        "--endpoint",
        &public,
        "--transport",
        "http",
        "--exposure",
        "public",
        "--max-wait",
        "0",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("checked as `public` (the describe was refused unauthenticated)"),
        "{out}"
    );
    assert_eq!(
        lines_of(&out, "not provoked  "),
        [
            "http/transport_failure.silence",
            "http/transport_failure.trickle",
            "http/refusal_full",
            "http/refusal_unavailable",
            "http/refusal_shutting_down"
        ],
        "{out}"
    );
    assert!(
        out.contains("needs the server's cooperation: pass --control PATH"),
        "{out}"
    );
    assert!(
        out.contains("not provoked  http/transport_failure.silence: its scenario is silent for 5000 ms in all, longer than --max-wait 0 s"),
        "{out}"
    );
    assert!(
        out.ends_with("9 passed, 0 failed, 5 not provoked\n"),
        "{out}"
    );
}

#[test]
fn unix_every_outcome_a_peer_can_provoke_live() {
    // As the operator: the demo grants it to the user running it, which
    // stands in for the recorded uid 1000.
    let demo = boot("unix", None);
    let control = demo.control();
    let public = format!("public={}", demo.endpoint("public"));
    let (code, out) = check(&[
        "--endpoint",
        &demo.endpoint("admin"),
        "--transport",
        "unix",
        "--control",
        &control,
        "--as-peer",
        "1000",
        "--with",
        &public,
    ]);
    assert_eq!(code, 0, "{out}");
    // One stop to a server: the stop's wait is checked on a server of its
    // own (unix_stop_wait_abandons_a_call_live).
    assert_eq!(
        lines_of(&out, "not provoked  "),
        [
            "unix/describe.admin.uid-1001",
            "unix/refusal_unauthenticated",
            "unix/refusal_unauthorized",
            "unix/transport_failure.stop_wait"
        ],
        "{out}"
    );
    assert!(
        out.contains("not provoked  unix/transport_failure.stop_wait: the server stopped at an earlier record's stop()"),
        "{out}"
    );
    assert!(
        out.ends_with("9 passed, 0 failed, 4 not provoked\n"),
        "{out}"
    );
    // The describe was recorded under the user's own uid, not 1000.
    let names: Vec<String> = project_names("unix")
        .into_iter()
        .filter(|n| {
            !n.contains("describe")
                && !n.ends_with("unauthenticated")
                && !n.ends_with("unauthorized")
                && !n.contains("transport_failure")
        })
        .collect();
    assert_eq!(names.len(), 8);
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    recordings_hold(&demo, &names);

    // As a peer that holds nothing, standing in for the recorded uid 1001.
    let demo = boot("unix-nobody", Some("uid:nobody"));
    let control = demo.control();
    let (code, out) = check(&[
        "--endpoint",
        &demo.endpoint("admin"),
        "--transport",
        "unix",
        "--control",
        &control,
        "--as-peer",
        "1001",
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        lines_of(&out, "pass  "),
        ["unix/describe.admin.uid-1001", "unix/refusal_unauthorized"],
        "{out}"
    );
    assert!(
        out.ends_with("2 passed, 0 failed, 11 not provoked\n"),
        "{out}"
    );
    recordings_hold(&demo, &["unix/refusal_unauthorized"]);
}

#[test]
fn unix_stop_wait_abandons_a_call_live() {
    // A server of its own, since a stop ends it: the operator's call held
    // at a gate, stop(), and ten seconds later the demo has closed the
    // caller's connection with nothing written.
    let tmp = Temp::new("live-stop-wait");
    select(
        &project(),
        &["unix/transport_failure.stop_wait"],
        &desk(),
        &tmp.0,
    );
    let demo = boot("unix-stop-wait", None);
    let control = demo.control();
    let (code, out) = check(&[
        "--endpoint",
        &demo.endpoint("admin"),
        "--transport",
        "unix",
        "--control",
        &control,
        "--as-peer",
        "1000",
        "--corpus",
        s(&tmp.0),
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.ends_with("pass  unix/transport_failure.stop_wait\n1 passed, 0 failed\n"),
        "{out}"
    );
}

#[test]
fn a_server_that_answers_otherwise_fails_the_check() {
    let tmp = Temp::new("live-tampered");
    select(
        &project(),
        &["http/result", "http/refusal_unauthorized"],
        &desk(),
        &tmp.0,
    );
    let path = tmp.0.join("wire/http/result.json");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("\"notional\": 125000", "\"notional\": 125001")
        // A record of another contract than the one served is run, and
        // said to be.
        .replace(
            "Public@fnv1a64:a8930d6e7998e986/public",
            "Public@fnv1a64:0123456789abcdef/public",
        );
    std::fs::write(&path, text).unwrap();
    let demo = boot("http-tampered", None);
    let (code, out) = check(&[
        "--endpoint",
        &demo.endpoint("public"),
        "--transport",
        "http",
        "--bearer",
        "t-alice",
        "--corpus",
        s(&tmp.0),
        "--scenarios",
        "none",
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FAIL  http/result: reply $.body.notional: expected 125001, got 125000"),
        "{out}"
    );
    assert!(
        out.contains("records are of Public@fnv1a64:0123456789abcdef/public, not of what the endpoint serves"),
        "{out}"
    );
    assert!(out.ends_with("1 passed, 1 failed\n"), "{out}");
}

#[test]
fn check_speaks_the_transports_it_names() {
    let (code, out) = check(&["--endpoint", "unix:/tmp/x.sock", "--transport", "mcp"]);
    assert_eq!(code, 2);
    assert!(out.contains("does not speak to unix:/tmp/x.sock"), "{out}");
    let (code, out) = check(&["--endpoint", "unix:/tmp/x.sock", "--transport", "http"]);
    assert_eq!(code, 2);
    assert!(out.contains("does not speak to unix:/tmp/x.sock"), "{out}");
    let (code, out) = check(&["--endpoint", "unix:/tmp/x.sock", "--transport", "grpc"]);
    assert_eq!(code, 2);
    assert!(out.contains("does not speak to unix:/tmp/x.sock"), "{out}");
    let (code, out) = check(&["--endpoint", "ftp://h:1", "--transport", "grpc"]);
    assert_eq!(code, 2);
    assert!(out.contains("is not an endpoint"), "{out}");
    assert!(out.contains("grpc://host:port"), "{out}");
}

#[test]
fn a_server_that_never_ends_its_reply_fails_without_growing() {
    // Answers every connection with a head that never ends.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            thread::spawn(move || {
                use std::io::Write;
                let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nX: ");
                let chunk = vec![b'x'; 1 << 16];
                while conn.write_all(&chunk).is_ok() {}
            });
        }
    });
    let tmp = Temp::new("live-endless");
    select(&project(), &["http/result"], &desk(), &tmp.0);
    let (code, out) = check(&[
        "--endpoint",
        &format!("http://{addr}"),
        "--transport",
        "http",
        "--corpus",
        s(&tmp.0),
        "--scenarios",
        "none",
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FAIL  http/result: the reply is over 16777216 bytes"),
        "{out}"
    );
}

#[test]
fn a_server_whose_timer_is_not_the_specs_fails_the_silence() {
    // One server closes every connection as soon as it is made, the other
    // never closes one: neither is HTTP's 5 seconds of silence.
    fn serve(close_at_once: bool) -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        thread::spawn(move || {
            let mut held = Vec::new();
            for conn in listener.incoming() {
                let Ok(conn) = conn else { return };
                if !close_at_once {
                    held.push(conn);
                }
            }
        });
        format!("http://{addr}")
    }
    let tmp = Temp::new("live-silence");
    select(
        &project(),
        &["http/transport_failure.silence"],
        &desk(),
        &tmp.0,
    );
    let corpus = s(&tmp.0).to_owned();
    let runs: Vec<_> = [true, false]
        .into_iter()
        .map(|close_at_once| {
            let endpoint = serve(close_at_once);
            let corpus = corpus.clone();
            thread::spawn(move || {
                let args = [
                    "--endpoint",
                    &endpoint,
                    "--transport",
                    "http",
                    "--exposure",
                    "public",
                    "--corpus",
                    &corpus,
                ];
                check(&args)
            })
        })
        .collect();
    let outs: Vec<(i32, String)> = runs.into_iter().map(|t| t.join().unwrap()).collect();
    let (code, out) = &outs[0];
    assert_eq!(*code, 1, "{out}");
    assert!(
        out.contains("FAIL  http/transport_failure.silence: the connection ended ")
            && out.contains(
                " ms before the scenario's last silence was over: earlier than the spec's timer"
            ),
        "{out}"
    );
    let (code, out) = &outs[1];
    assert_eq!(*code, 1, "{out}");
    assert!(
        out.contains("FAIL  http/transport_failure.silence: no reply, and the connection was still open 1000 ms after the scenario's last step: a transport failure ends it"),
        "{out}"
    );
}

/// `check --transport ws` against the demo's hub carrying desk (`--hub
/// --hub-desk`): every ws record of the hub and of desk passes but what a
/// live socket cannot provoke, a record the hub answers otherwise fails,
/// and a hub that carries no surface runs its own records and not desk's.
#[test]
fn ws_a_live_hub_is_certified_by_its_sequences() {
    let demo = boot_with("ws", None, |o| {
        o.hub = Some("127.0.0.1:0".into());
        o.hub_desk = true;
    });
    let hub = demo.endpoint("fills");
    let public = format!("public={}", demo.endpoint("public"));
    let control = demo.control();
    let args = |corpus: &str| {
        vec![
            "--endpoint".to_owned(),
            hub.clone(),
            "--transport".into(),
            "ws".into(),
            "--bearer".into(),
            "t-dave".into(),
            "--control".into(),
            control.clone(),
            "--with".into(),
            public.clone(),
            "--corpus".into(),
            corpus.to_owned(),
        ]
    };
    // First a corpus whose subscribe says otherwise: the check fails it,
    // the server still up.
    let tmp = Temp::new("live-ws-tampered");
    select(
        &project(),
        &["ws/subscribe", "ws/call.result"],
        &desk(),
        &tmp.0,
    );
    edit(&tmp.0, "ws/subscribe", |v| {
        v["frames"][7]["frame"]["seq"] = 3.into();
    });
    let a = args(s(&tmp.0));
    let (code, out) = check(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FAIL  ws/subscribe: frames[7]: frame $.seq: expected 3, got 2"),
        "{out}"
    );
    assert!(out.contains("pass  ws/call.result"), "{out}");
    // Then the project's corpus, whole.
    let a = args(s(&project()));
    let (code, out) = check(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 0, "{out}");
    let names = project_names("ws");
    let unprovoked = [
        "ws/events.gap_after_shedding",
        "ws/refusal_shutting_down",
        "ws/refusal_malformed.call_without_surface",
    ];
    for name in &names {
        let verdict = if unprovoked.contains(&name.as_str()) {
            "not provoked  "
        } else {
            "pass  "
        };
        assert!(out.contains(&format!("{verdict}{name}")), "{name}: {out}");
    }
    assert!(
        out.ends_with(&format!(
            "{} passed, 0 failed, 3 not provoked\n",
            names.len() - 3
        )),
        "{out}"
    );
}

#[test]
fn ws_a_hub_that_carries_no_surface_runs_its_own_sequences() {
    let demo = boot_with("ws-bare", None, |o| {
        o.hub = Some("127.0.0.1:0".into());
    });
    let hub = demo.endpoint("fills");
    let public = format!("public={}", demo.endpoint("public"));
    let control = demo.control();
    // Without the control socket and public, what needs them is named
    // (first: the full check stops the server).
    let bare = [
        "--endpoint",
        &hub,
        "--transport",
        "ws",
        "--bearer",
        "t-dave",
    ];
    let (code, out) = check(&bare);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("not provoked  ws/unauthorized.revoked: its program acts need the server's control socket (--control)"),
        "{out}"
    );
    assert!(
        out.contains(
            "not provoked  ws/subscribe: its places are made on public (--with public=http://…)"
        ),
        "{out}"
    );
    let mut full = bare.to_vec();
    full.extend(["--control", &control, "--with", &public]);
    let (code, out) = check(&full);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("pass  ws/refusal_malformed.call_without_surface"),
        "{out}"
    );
    assert!(
        out.contains("not provoked  ws/call.result: the hub does not serve Public@fnv1a64:a8930d6e7998e986/desk"),
        "{out}"
    );
}
