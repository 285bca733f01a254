//! The serving driver over real sockets: one exposure over HTTP and one over
//! a Unix socket, a toy receiver, and clients that misbehave beside ones
//! that do not.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use limen_core::hale::runtime::*;
use limen_drivers::serve::{
    BoundAddress, Command, Server, ServerConfig, StopHandle, DISPATCH_AHEAD,
};

struct AnyCodec;
impl PayloadCodec for AnyCodec {
    fn decode(&self, _m: usize, payload: &[u8]) -> Result<serde_json::Value, String> {
        serde_json::from_slice(payload).map_err(|_| "wrong_type: payload".to_owned())
    }
}

struct Doc;
impl Describer for Doc {
    fn describe(&self, caller: &Principal, _roles: &[String], members: &[usize]) -> Vec<u8> {
        serde_json::json!({"caller": &*caller.name, "members": members.len()})
            .to_string()
            .into_bytes()
    }
}

/// Echoes its payload; `Echo::slow` sleeps first; `Echo::boom` panics;
/// `Echo::where` names the thread it ran on.
struct Echo;
impl Receiver for Echo {
    fn call(
        &mut self,
        member: &str,
        payload: &serde_json::Value,
        _ctx: &ServedContext,
    ) -> Completion {
        if member == "Echo::slow" {
            thread::sleep(Duration::from_millis(300));
        }
        if member == "Echo::boom" {
            panic!("the handler of Echo::boom panics");
        }
        if member == "Echo::where" {
            // Which thread ran the call: a worker's is named after its
            // receiver.
            let name = thread::current().name().unwrap_or("").to_owned();
            return Completion::Returned(serde_json::json!(name).to_string().into_bytes());
        }
        Completion::Returned(payload.to_string().into_bytes())
    }
}

fn spec(name: &str, via: &str) -> ExposureSpec {
    ExposureSpec {
        name: name.into(),
        surface: "E".into(),
        digest: "fnv1a64:00000000000000ee".into(),
        via: via.into(),
        members: vec![
            MemberSpec {
                name: "Echo::say".into(),
                receiver: 0,
                requires: vec![],
            },
            MemberSpec {
                name: "Echo::slow".into(),
                receiver: 0,
                requires: vec![],
            },
            MemberSpec {
                name: "Echo::boom".into(),
                receiver: 0,
                requires: vec![],
            },
            MemberSpec {
                name: "Echo::where".into(),
                receiver: 0,
                requires: vec![],
            },
        ],
        receivers: vec!["self.echo".into()],
        bound: 64,
        hierarchy: RoleHierarchy::flat(),
        // As `hale demo` serves: calls handed ahead to the worker.
        limits: ExposureLimits {
            dispatch_ahead: DISPATCH_AHEAD,
            ..ExposureLimits::default()
        },
    }
}

struct Running {
    http: String,
    unix: PathBuf,
    stop: StopHandle,
    thread: Option<thread::JoinHandle<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn start(config: ServerConfig) -> Running {
    start_supervised(config, Supervision::Absorb)
}

/// [`start`] with the receiver's owner answering a violation (or a panic)
/// with `supervision`.
fn start_supervised(config: ServerConfig, supervision: Supervision) -> Running {
    start_with(config, supervision, false)
}

/// [`start_supervised`], its receiver run inline on the owner's loop
/// (declared non-blocking) when `inline`, on a worker thread otherwise.
fn start_with(config: ServerConfig, supervision: Supervision, inline: bool) -> Running {
    let dir = std::env::temp_dir().join(format!(
        "limen-serve-{}-{:?}",
        std::process::id(),
        thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let unix = dir.join("e.sock");
    let (tx, rx) = std::sync::mpsc::channel();
    let unix_path = unix.clone();
    let thread = thread::spawn(move || {
        let mut server = Server::new(config).unwrap();
        let (h, BoundAddress::Tcp(addr)) = server.bind_http("127.0.0.1:0").unwrap() else {
            panic!("a TCP listener")
        };
        let (u, _) = server.bind_unix(&unix_path).unwrap().unwrap();
        let w = if inline {
            server
                .add_inline_receiver(
                    "self.echo",
                    1,
                    Box::new(Echo),
                    Arc::new(move |_| supervision),
                )
                .unwrap()
        } else {
            server
                .add_worker(
                    "self.echo",
                    1,
                    Box::new(Echo),
                    Arc::new(move |_| supervision),
                )
                .unwrap()
        };
        let tokens = TokenTable::new(Some("no such token")).with("t-a", "a");
        let http = Exposure::new(
            spec("h", "http"),
            Some(Box::new(tokens)),
            Box::new(RoleTable::new()),
            Box::new(AnyCodec),
            Box::new(Doc),
        );
        let line = Exposure::new(
            spec("u", "unix"),
            None,
            Box::new(RoleTable::new()),
            Box::new(AnyCodec),
            Box::new(Doc),
        );
        server.serve(h, http, vec![w]).unwrap();
        server.serve(u, line, vec![w]).unwrap();
        tx.send((addr.to_string(), server.stop_handle())).unwrap();
        server.run().unwrap();
    });
    let (http, stop) = rx.recv().unwrap();
    Running {
        http,
        unix,
        stop,
        thread: Some(thread),
    }
}

fn post(addr: &str, member: &str, body: &str, token: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    // A call that is never answered fails the test instead of hanging it.
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "POST /call/{member} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out[9..12].parse().unwrap();
    let body = out.split_once("\r\n\r\n").unwrap().1.to_owned();
    (status, body)
}

#[test]
fn http_and_unix_exposures_answer_over_sockets() {
    let r = start(ServerConfig::default());
    assert_eq!(
        post(&r.http, "Echo::say", r#"{"a":1}"#, "t-a"),
        (200, r#"{"a":1}"#.into())
    );
    assert_eq!(
        post(&r.http, "Echo%3A%3Asay", "[2]", "t-a"),
        (200, "[2]".into())
    );
    let (status, body) = post(&r.http, "Echo::say", "1", "t-zz");
    assert_eq!(status, 401);
    assert_eq!(
        body,
        r#"{"refusal":{"kind":"unauthenticated","reason":"no such token"}}"#
    );

    let s = UnixStream::connect(&r.unix).unwrap();
    let mut w = s.try_clone().unwrap();
    let mut lines = BufReader::new(s);
    writeln!(w, r#"{{"call":"Echo::slow","payload":{{"n":1}},"id":1}}"#).unwrap();
    writeln!(w, r#"{{"describe":true,"id":"d"}}"#).unwrap();
    let mut first = String::new();
    lines.read_line(&mut first).unwrap();
    // The describe is answered while the slow call still runs.
    let first: serde_json::Value = serde_json::from_str(&first).unwrap();
    assert_eq!(first["id"], "d");
    assert_eq!(first["caller"]["mode"], "unix");
    let mut second = String::new();
    lines.read_line(&mut second).unwrap();
    let second: serde_json::Value = serde_json::from_str(&second).unwrap();
    assert_eq!(second["id"], 1);
    assert_eq!(second["value"], serde_json::json!({"n": 1}));
}

#[test]
fn a_slow_or_silent_client_harms_nobody_else() {
    let r = start(ServerConfig::default());
    // A head that never ends, and a Unix client that never reads.
    let mut trickle = TcpStream::connect(&r.http).unwrap();
    trickle
        .write_all(b"POST /call/Echo::say HTTP/1.1\r\n")
        .unwrap();
    let hog = UnixStream::connect(&r.unix).unwrap();
    let mut hog_w = hog.try_clone().unwrap();
    for _ in 0..2000 {
        if hog_w.write_all(b"{\"describe\":true}\n").is_err() {
            break;
        }
    }
    // Meanwhile a well-behaved client is answered.
    assert_eq!(
        post(&r.http, "Echo::say", "true", "t-a"),
        (200, "true".into())
    );
    drop(hog);
    drop(trickle);
}

#[test]
fn a_handler_that_panics_answers_its_caller_the_server_error_and_its_receiver_serves_on() {
    let r = start(ServerConfig::default());
    let (status, body) = post(&r.http, "Echo::boom", "1", "t-a");
    assert_eq!(status, 500, "{body}");
    // The same receiver takes its next call, over either transport.
    assert_eq!(post(&r.http, "Echo::say", "2", "t-a"), (200, "2".into()));
    let mut unix = UnixStream::connect(&r.unix).unwrap();
    unix.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    unix.write_all(b"{\"call\":\"Echo::boom\",\"payload\":1,\"id\":1}\n{\"call\":\"Echo::say\",\"payload\":3,\"id\":2}\n")
        .unwrap();
    let mut lines = BufReader::new(unix).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(
        first.contains("\"id\":1") && first.contains("\"refusal\":{\"kind\":\"server\"}"),
        "{first}"
    );
    let second = lines.next().unwrap().unwrap();
    assert!(
        second.contains("\"id\":2") && second.contains("\"value\":3"),
        "{second}"
    );
}

#[test]
fn a_handler_that_panics_under_a_draining_owner_settles_every_later_call_unavailable() {
    let r = start_supervised(ServerConfig::default(), Supervision::Drain);
    // A slow call holds the receiver while more queue behind it; the panic
    // comes after, and what was queued behind it is settled, not forgotten.
    let http = r.http.clone();
    let queued = thread::spawn(move || {
        thread::sleep(Duration::from_millis(50));
        post(&http, "Echo::say", "1", "t-a")
    });
    let (status, _) = post(&r.http, "Echo::boom", "1", "t-a");
    assert_eq!(status, 500);
    let (status, body) = queued.join().unwrap();
    assert!(
        status == 200 || body.contains("unavailable"),
        "{status} {body}"
    );
    let (status, body) = post(&r.http, "Echo::say", "2", "t-a");
    assert!(body.contains("unavailable"), "{status} {body}");
}

#[test]
fn replies_on_one_connection_leave_in_the_order_the_exposure_produced_them() {
    // One receiver answers in the order its calls were accepted, so the
    // exposure delivers them in request order; every reply on the
    // connection must come back in that order, whatever the loops and the
    // worker do between.
    let r = start(ServerConfig {
        loops: 2,
        ..ServerConfig::default()
    });
    let unix = UnixStream::connect(&r.unix).unwrap();
    unix.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut batch = String::new();
    for i in 1..=2000 {
        batch.push_str(&format!(
            "{{\"call\":\"Echo::say\",\"payload\":{i},\"id\":{i}}}\n"
        ));
    }
    let mut w = unix.try_clone().unwrap();
    let writer = thread::spawn(move || w.write_all(batch.as_bytes()).unwrap());
    // Past the bound a call is refused `full` at once, ahead of the calls
    // still running: those refusals may come first, but every call is
    // answered once and the calls that ran are answered in order.
    let mut lines = BufReader::new(unix).lines();
    let mut seen = std::collections::BTreeSet::new();
    let mut last_ran = 0u64;
    for _ in 1..=2000u64 {
        let line = lines.next().unwrap().unwrap();
        let reply: serde_json::Value = serde_json::from_str(&line).unwrap();
        let id = reply["request_id"].as_u64().unwrap();
        assert_eq!(reply["id"].as_u64(), Some(id), "{line}");
        assert!(seen.insert(id), "answered twice: {line}");
        if reply["ok"] == serde_json::json!(true) {
            assert!(id > last_ran, "{id} after {last_ran}: {line}");
            last_ran = id;
        } else {
            assert_eq!(reply["refusal"]["kind"], "full", "{line}");
        }
    }
    assert_eq!(seen.len(), 2000);
    writer.join().unwrap();
}

/// Writes `calls` (member, id) as Unix lines at once and reads a reply per
/// call, by client id.
fn unix_calls(
    path: &PathBuf,
    calls: &[(&str, u64)],
    then: impl FnOnce(),
) -> std::collections::BTreeMap<u64, serde_json::Value> {
    let mut unix = UnixStream::connect(path).unwrap();
    unix.set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    let mut batch = String::new();
    for (member, id) in calls {
        batch.push_str(&format!(
            "{{\"call\":\"{member}\",\"payload\":{id},\"id\":{id}}}\n"
        ));
    }
    unix.write_all(batch.as_bytes()).unwrap();
    then();
    let mut lines = BufReader::new(unix).lines();
    let mut replies = std::collections::BTreeMap::new();
    for _ in calls {
        let line = lines.next().unwrap().unwrap();
        let reply: serde_json::Value = serde_json::from_str(&line).unwrap();
        replies.insert(reply["id"].as_u64().unwrap(), reply);
    }
    replies
}

#[test]
fn at_stop_calls_handed_ahead_and_not_started_are_refused_shutting_down() {
    let r = start(ServerConfig::default());
    // The slow call runs while the others wait handed ahead to the same
    // worker; the stop comes while it runs.
    let mut calls = vec![("Echo::slow", 1)];
    calls.extend((2..=20).map(|id| ("Echo::say", id)));
    let replies = unix_calls(&r.unix, &calls, || {
        thread::sleep(Duration::from_millis(100));
        r.stop.stop();
    });
    assert_eq!(replies[&1]["ok"], true, "{}", replies[&1]);
    for id in 2..=20 {
        assert_eq!(
            replies[&id]["refusal"]["kind"], "shutting_down",
            "{}",
            replies[&id]
        );
    }
}

#[test]
fn after_a_drained_panic_no_call_handed_ahead_runs() {
    let r = start_supervised(ServerConfig::default(), Supervision::Drain);
    // The panic comes while the calls behind it are already handed to the
    // worker: none of them may run on the receiver that drains.
    let mut calls = vec![("Echo::slow", 1), ("Echo::boom", 2)];
    calls.extend((3..=20).map(|id| ("Echo::say", id)));
    let replies = unix_calls(&r.unix, &calls, || {});
    assert_eq!(replies[&1]["ok"], true, "{}", replies[&1]);
    assert_eq!(replies[&2]["refusal"]["kind"], "server", "{}", replies[&2]);
    for id in 3..=20 {
        assert_eq!(
            replies[&id]["refusal"]["kind"], "unavailable",
            "{}",
            replies[&id]
        );
    }
}

/// Grants `staff` to a Unix peer holding the supplementary group `gid`.
struct ByGroup(u32);
impl RoleSource for ByGroup {
    fn holds(&self, p: &Principal, role: &str) -> bool {
        role == "staff" && p.groups.contains(&self.0)
    }
}

/// One call over a Unix exposure whose `Echo::say` requires `staff`, held
/// by whoever holds the supplementary group `gid`, made by a child process
/// that first takes the supplementary groups `client_groups` (which needs
/// root; `None` keeps this process's): the reply line.
fn call_as_member_of(gid: u32, client_groups: Option<&[u32]>, tag: &str) -> serde_json::Value {
    let dir = std::env::temp_dir().join(format!("limen-serve-groups-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("g.sock");
    let mut server = Server::new(ServerConfig::default()).unwrap();
    let (u, _) = server.bind_unix(&path).unwrap().unwrap();
    let w = server
        .add_worker(
            "self.echo",
            1,
            Box::new(Echo),
            Arc::new(|_| Supervision::Absorb),
        )
        .unwrap();
    let mut spec = spec("g", "unix");
    spec.members[0].requires = vec!["staff".into()];
    let exposure = Exposure::new(
        spec,
        None,
        Box::new(ByGroup(gid)),
        Box::new(AnyCodec),
        Box::new(Doc),
    );
    server.serve(u, exposure, vec![w]).unwrap();
    let stop = server.stop_handle();
    let run = thread::spawn(move || server.run());
    let groups = client_groups.map_or("None".to_owned(), |g| format!("{g:?}"));
    let client = format!(
        "import os, socket\n\
         g = {groups}\n\
         if g is not None: os.setgroups(g)\n\
         s = socket.socket(socket.AF_UNIX)\n\
         s.connect({path:?})\n\
         s.sendall(b'{{\"call\":\"Echo::say\",\"payload\":7,\"id\":1}}\\n')\n\
         print(s.makefile().readline(), end='')\n",
        path = path.display().to_string()
    );
    let out = std::process::Command::new("python3")
        .args(["-c", &client])
        .output()
        .unwrap();
    stop.stop();
    run.join().unwrap().unwrap();
    let line = String::from_utf8(out.stdout).unwrap();
    serde_json::from_str(&line)
        .unwrap_or_else(|_| panic!("no reply: {line} {}", String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn a_unix_peer_s_supplementary_groups_reach_the_role_source() {
    let root = rustix::process::geteuid().is_root();
    if !root {
        eprintln!("skipped: setting a client's supplementary groups needs root");
        return;
    }
    let reply = call_as_member_of(4242, Some(&[4242, 4343]), "held");
    assert_eq!(reply["ok"], true, "{reply}");
    assert_eq!(reply["value"], 7);
    // The groups are the principal's, not its JSON's (the description's
    // principal has no member for them).
    assert_eq!(reply["caller"].get("groups"), None, "{reply}");
    let reply = call_as_member_of(4242, Some(&[4343]), "other");
    assert_eq!(reply["refusal"]["kind"], "unauthorized", "{reply}");
    let reply = call_as_member_of(4242, Some(&[]), "none");
    assert_eq!(reply["refusal"]["kind"], "unauthorized", "{reply}");
}

// ---------------------------------------------------------------------------
// A receiver declared non-blocking, run inline on the owner's loop: the
// worker's guarantees hold without the worker's thread.

#[test]
fn an_inline_handler_that_panics_answers_the_server_error_and_its_receiver_serves_on() {
    let r = start_with(ServerConfig::default(), Supervision::Absorb, true);
    let (status, body) = post(&r.http, "Echo::boom", "1", "t-a");
    assert_eq!(status, 500, "{body}");
    assert_eq!(post(&r.http, "Echo::say", "2", "t-a"), (200, "2".into()));
    // Calls of one turn behind a panic still run, one at a time, in order.
    let replies = unix_calls(&r.unix, &[("Echo::boom", 1), ("Echo::say", 2)], || {});
    assert_eq!(replies[&1]["refusal"]["kind"], "server", "{}", replies[&1]);
    assert_eq!(replies[&2]["value"], 2, "{}", replies[&2]);
}

#[test]
fn after_a_drained_panic_on_an_inline_receiver_no_call_handed_ahead_runs_until_resumed() {
    let r = start_with(ServerConfig::default(), Supervision::Drain, true);
    let mut calls = vec![("Echo::say", 1), ("Echo::boom", 2)];
    calls.extend((3..=20).map(|id| ("Echo::say", id)));
    let replies = unix_calls(&r.unix, &calls, || {});
    assert_eq!(replies[&1]["ok"], true, "{}", replies[&1]);
    assert_eq!(replies[&2]["refusal"]["kind"], "server", "{}", replies[&2]);
    for id in 3..=20 {
        assert_eq!(
            replies[&id]["refusal"]["kind"], "unavailable",
            "{}",
            replies[&id]
        );
    }
    // Paused until the operator resumes it; then it serves again (the
    // first call after the resume may still find it known absent).
    r.stop.command(Command::Resume(0));
    assert!(
        (0..20).any(|_| post(&r.http, "Echo::say", "5", "t-a") == (200, "5".into())),
        "a resumed inline receiver serves again"
    );
}

#[test]
fn an_inline_receiver_drained_by_command_refuses_unavailable_until_resumed() {
    let r = start_with(ServerConfig::default(), Supervision::Absorb, true);
    assert_eq!(post(&r.http, "Echo::say", "1", "t-a"), (200, "1".into()));
    r.stop.command(Command::Drain(0));
    let (status, body) = post(&r.http, "Echo::say", "2", "t-a");
    assert!(
        status == 503 && body.contains("unavailable"),
        "{status} {body}"
    );
    r.stop.command(Command::Resume(0));
    assert!(
        (0..20).any(|_| post(&r.http, "Echo::say", "3", "t-a") == (200, "3".into())),
        "a resumed inline receiver serves again"
    );
}

#[test]
fn a_command_given_before_a_client_connects_is_in_force_on_every_loop() {
    // Four loops, each accepting on a socket of its own: the kernel spreads
    // the connections over them, and whichever admits a request must
    // already know of a drain given before it connected.
    for inline in [false, true] {
        let r = start_with(
            ServerConfig {
                loops: 4,
                ..ServerConfig::default()
            },
            Supervision::Absorb,
            inline,
        );
        assert_eq!(post(&r.http, "Echo::say", "0", "t-a"), (200, "0".into()));
        r.stop.command(Command::Drain(0));
        for i in 1..=16 {
            let (status, body) = post(&r.http, "Echo::say", &i.to_string(), "t-a");
            assert!(
                status == 503 && body.contains("unavailable"),
                "call {i} (inline {inline}): {status} {body}"
            );
        }
    }
}

#[test]
fn an_inline_receiver_runs_a_lone_call_on_the_loop_and_a_pipelined_burst_on_its_spill_worker() {
    let r = start_with(ServerConfig::default(), Supervision::Absorb, true);
    // One call in its turn: run on the owner's own thread, not a worker.
    let (status, body) = post(&r.http, "Echo::where", "0", "t-a");
    assert_eq!(status, 200, "{body}");
    assert_ne!(
        body, "\"receiver self.echo\"",
        "a lone call ran on a worker"
    );
    // 32 calls pipelined on one connection, in one write: the turn that
    // frames them hands the receiver a burst, which its spill worker runs.
    let calls: Vec<(&str, u64)> = (1..=32).map(|id| ("Echo::where", id)).collect();
    let replies = unix_calls(&r.unix, &calls, || {});
    assert_eq!(replies.len(), 32);
    assert!(
        replies
            .values()
            .any(|reply| reply["value"] == "receiver self.echo"),
        "no call of the burst ran on the spill worker: {replies:?}"
    );
    // Whoever ran them, every call was answered, and a lone call after the
    // burst runs inline again once the spill worker is idle.
    assert!(
        (0..50).any(|_| {
            let (status, body) = post(&r.http, "Echo::where", "0", "t-a");
            status == 200 && body != "\"receiver self.echo\""
        }),
        "lone calls after a burst never ran inline again"
    );
}

#[test]
fn after_a_drained_panic_inline_the_calls_of_its_turn_do_not_run() {
    // Three calls (fewer than a burst) in one write run inline: the panic
    // of the second drains the receiver, and the third, handed ahead in the
    // same turn, never starts.
    let r = start_with(ServerConfig::default(), Supervision::Drain, true);
    let replies = unix_calls(
        &r.unix,
        &[("Echo::where", 1), ("Echo::boom", 2), ("Echo::say", 3)],
        || {},
    );
    assert_ne!(
        replies[&1]["value"], "receiver self.echo",
        "{}",
        replies[&1]
    );
    assert_eq!(replies[&2]["refusal"]["kind"], "server", "{}", replies[&2]);
    assert_eq!(
        replies[&3]["refusal"]["kind"], "unavailable",
        "{}",
        replies[&3]
    );
}
