//! A piped receiver (`Server::add_piped_receiver`): a Tool process whose
//! pipes the connection loops drive, with no thread of its own, against
//! the toolkit's echo fixture and the rogue one. Each call's payload is the
//! text the echo Tool is called with (the rogue's command).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use limen_core::flow::tool::{Call, CallKey, HostConn, Limits, Listing, Outcome, Tool};
use limen_core::flow::{Identity, Value};
use limen_core::hale::runtime::*;
use limen_drivers::serve::{BoundAddress, Command, PipedHandler, Server, ServerConfig, StopHandle};
use limen_drivers::tool::Spawn;

const ECHO: &str = env!("CARGO_BIN_EXE_tool-fixture-echo");
const ROGUE: &str = env!("CARGO_BIN_EXE_tool-fixture-rogue");

fn echo_tool() -> Arc<Tool> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../toolkit/tests/fixtures/listing.json"
    );
    let listing = Listing::parse(&std::fs::read(path).unwrap()).unwrap();
    let id = Identity::in_repository("example.com/limen-fixtures", "0.3.0", "echo.flow", "echo");
    listing.get(&id).unwrap().clone()
}

struct AnyCodec;
impl PayloadCodec for AnyCodec {
    fn decode(&self, _m: usize, payload: &[u8]) -> Result<serde_json::Value, String> {
        serde_json::from_slice(payload).map_err(|_| "wrong_type: payload".to_owned())
    }
}

struct Doc;
impl Describer for Doc {
    fn describe(&self, _caller: &Principal, _roles: &[String], _members: &[usize]) -> Vec<u8> {
        b"{}".to_vec()
    }
}

/// What the test sees of the handler.
#[derive(Default)]
struct Seen {
    /// Shut: calls wait.
    gate: AtomicBool,
    /// Each replacement's reasons.
    replaced: Mutex<Vec<String>>,
    /// Structural failures told.
    failed: AtomicUsize,
}

/// Calls the echo Tool with the payload's text.
struct EchoPipe {
    spawn: Spawn,
    tool: Arc<Tool>,
    next: u64,
    seen: Arc<Seen>,
}

impl PipedHandler for EchoPipe {
    fn spawn(&self) -> &Spawn {
        &self.spawn
    }

    fn call(
        &mut self,
        _member: &str,
        payload: &serde_json::Value,
        _ctx: &ServedContext,
    ) -> Result<Call, String> {
        let text = payload.as_str().ok_or("the payload is not a text")?;
        self.next += 1;
        Ok(Call {
            key: CallKey::new("piped", &self.next.to_string()),
            tool: self.tool.clone(),
            args: vec![Value::text(text)],
            type_args: Vec::new(),
        })
    }

    fn answer(&mut self, _member: &str, outcome: Outcome) -> Result<Completion, String> {
        match outcome {
            Outcome::Ok(v) => Ok(Completion::Returned(
                limen_core::flow::canonical::to_canonical_vec(&v),
            )),
            other => Err(format!("{other:?}")),
        }
    }

    fn failed(&mut self) {
        self.seen.failed.fetch_add(1, Ordering::SeqCst);
    }

    fn may_start(&self) -> bool {
        !self.seen.gate.load(Ordering::SeqCst)
    }

    fn replaced(&mut self, why: &str, _stderr: &str) {
        self.seen.replaced.lock().unwrap().push(why.to_owned());
    }
}

fn spec() -> ExposureSpec {
    ExposureSpec {
        name: "u".into(),
        surface: "E".into(),
        digest: "fnv1a64:00000000000000ee".into(),
        via: "unix".into(),
        members: vec![MemberSpec {
            name: "Echo::say".into(),
            receiver: 0,
            requires: vec![],
        }],
        receivers: vec!["self.echo".into()],
        bound: 4096,
        hierarchy: RoleHierarchy::flat(),
        limits: ExposureLimits {
            dispatch_ahead: 256,
            ..ExposureLimits::default()
        },
    }
}

struct Running {
    unix: PathBuf,
    stop: StopHandle,
    seen: Arc<Seen>,
    violations: Arc<AtomicUsize>,
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

/// A server whose one receiver is `program args` behind a piped receiver;
/// a violation is answered with `supervision`.
fn start(
    name: &str,
    program: &str,
    args: &[&str],
    limits: Limits,
    supervision: Supervision,
) -> Running {
    let dir = std::env::temp_dir().join(format!("limen-piped-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let unix = dir.join("p.sock");
    let seen = Arc::new(Seen::default());
    let violations = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = std::sync::mpsc::channel();
    let (unix_path, seen2, violations2) = (unix.clone(), seen.clone(), violations.clone());
    let spawn = Spawn::new(program, args);
    let thread = thread::spawn(move || {
        // Two loops, whatever the machine: replies read by either.
        let mut server = Server::new(ServerConfig {
            loops: 2,
            ..ServerConfig::default()
        })
        .unwrap();
        let (u, BoundAddress::Unix(_)) = server.bind_unix(&unix_path).unwrap().unwrap() else {
            panic!("a Unix listener")
        };
        let handler = EchoPipe {
            spawn,
            tool: echo_tool(),
            next: 0,
            seen: seen2,
        };
        let w = server
            .add_piped_receiver(
                "self.echo",
                1,
                Box::new(HostConn::new(limits)),
                Box::new(handler),
                Arc::new(move |_| {
                    violations2.fetch_add(1, Ordering::SeqCst);
                    supervision
                }),
            )
            .unwrap();
        let line = Exposure::new(
            spec(),
            None,
            Box::new(RoleTable::new()),
            Box::new(AnyCodec),
            Box::new(Doc),
        );
        server.serve(u, line, vec![w]).unwrap();
        tx.send(server.stop_handle()).unwrap();
        server.run().unwrap();
    });
    let stop = rx.recv().unwrap();
    Running {
        unix,
        stop,
        seen,
        violations,
        thread: Some(thread),
    }
}

/// Sends `texts` pipelined on one connection and reads one reply each.
fn calls(path: &Path, texts: &[&str]) -> Vec<serde_json::Value> {
    let s = UnixStream::connect(path).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut w = s.try_clone().unwrap();
    let mut batch = String::new();
    for (i, t) in texts.iter().enumerate() {
        batch.push_str(&format!(
            "{{\"call\":\"Echo::say\",\"payload\":{},\"id\":{i}}}\n",
            serde_json::json!(t)
        ));
    }
    w.write_all(batch.as_bytes()).unwrap();
    let mut lines = BufReader::new(s);
    let mut out = vec![serde_json::Value::Null; texts.len()];
    for _ in texts {
        let mut line = String::new();
        lines.read_line(&mut line).unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        let i = v["id"].as_u64().unwrap() as usize;
        out[i] = v;
    }
    out
}

fn call(path: &Path, text: &str) -> serde_json::Value {
    calls(path, &[text]).remove(0)
}

fn is_server_error(v: &serde_json::Value) -> bool {
    v["refusal"]["kind"] == "server"
}

/// The names of this process's threads.
fn threads() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|n| n.trim().to_owned())
        .collect()
}

#[test]
fn pipelined_calls_are_written_and_read_by_the_loops_with_no_thread_of_their_own() {
    let r = start(
        "echo",
        ECHO,
        &["--workers", "0"],
        Limits::default(),
        Supervision::Restart,
    );
    let texts: Vec<String> = (0..1000).map(|i| format!("t{i}")).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let got = calls(&r.unix, &texts);
    for (i, v) in got.iter().enumerate() {
        assert_eq!(v["value"], serde_json::json!(format!("t{i}")), "{v}");
    }
    // Connections landing on either loop, each sending window after
    // window: the process's standard output follows the loop that writes
    // its calls, and no reply is lost or crossed on the way.
    for c in 0..6 {
        let s = UnixStream::connect(&r.unix).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut w = s.try_clone().unwrap();
        let mut lines = BufReader::new(s);
        for window in 0..40 {
            let mut batch = String::new();
            for i in 0..32 {
                batch.push_str(&format!(
                    "{{\"call\":\"Echo::say\",\"payload\":\"{c}.{window}.{i}\",\"id\":{i}}}\n"
                ));
            }
            w.write_all(batch.as_bytes()).unwrap();
            for _ in 0..32 {
                let mut line = String::new();
                lines.read_line(&mut line).unwrap();
                let v: serde_json::Value = serde_json::from_str(&line).unwrap();
                let i = v["id"].as_u64().unwrap();
                assert_eq!(v["value"], format!("{c}.{window}.{i}"), "{v}");
            }
        }
    }
    // Neither a worker (named after its receiver) nor a process's reader
    // and writer threads.
    let names = threads();
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with("receiver") || n.starts_with("tool ")),
        "{names:?}"
    );
    assert_eq!(r.violations.load(Ordering::SeqCst), 0);
}

#[test]
fn a_process_that_dies_mid_call_is_the_server_error_and_a_new_generation() {
    let dir = std::env::temp_dir().join(format!("limen-piped-state-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let state = dir.join("starts");
    let _ = std::fs::remove_file(&state);
    let r = start(
        "crash",
        ROGUE,
        &["--state", state.to_str().unwrap()],
        Limits::default(),
        Supervision::Restart,
    );
    assert_eq!(call(&r.unix, "a")["value"], "a");
    // Held, then the process exits with it out: both the server error.
    let got = calls(&r.unix, &["hold", "crash"]);
    assert!(got.iter().all(is_server_error), "killed mid-call: {got:?}");
    assert_eq!(r.seen.failed.load(Ordering::SeqCst), 2);
    assert_eq!(r.violations.load(Ordering::SeqCst), 2);
    assert_eq!(r.seen.replaced.lock().unwrap().len(), 1);
    // The next call starts the next generation, after the backoff.
    let started = Instant::now();
    assert_eq!(call(&r.unix, "b")["value"], "b");
    assert!(started.elapsed() >= Duration::from_millis(40));
    let starts = std::fs::read_to_string(&state).unwrap();
    assert_eq!(starts.lines().next(), Some("2"), "{starts}");
}

#[test]
fn a_call_never_answered_closes_at_its_reply_deadline_on_a_loop_timer() {
    let limits = Limits {
        call_timeout: 300_000_000,
        ..Limits::default()
    };
    let r = start("hold", ROGUE, &[], limits, Supervision::Restart);
    let started = Instant::now();
    let v = call(&r.unix, "hold");
    assert!(is_server_error(&v), "{v}");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(290) && took < Duration::from_secs(3),
        "{took:?}"
    );
    assert_eq!(r.seen.replaced.lock().unwrap().len(), 1);
    assert_eq!(call(&r.unix, "c")["value"], "c");
}

#[test]
fn a_gate_holds_the_calls_and_a_drain_pauses_until_the_resume() {
    let r = start(
        "gate",
        ECHO,
        &["--workers", "0"],
        Limits::default(),
        Supervision::Drain,
    );
    assert_eq!(call(&r.unix, "x")["value"], "x");
    r.seen.gate.store(true, Ordering::SeqCst);
    let path = r.unix.clone();
    let held = thread::spawn(move || call(&path, "y"));
    thread::sleep(Duration::from_millis(100));
    assert!(!held.is_finished(), "a call ran through a shut gate");
    r.seen.gate.store(false, Ordering::SeqCst);
    assert_eq!(held.join().unwrap()["value"], "y");

    // A call the handler cannot make is a structural failure; its
    // supervision drains the receiver: refused `unavailable` until resumed.
    let s = UnixStream::connect(&r.unix).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut w = s.try_clone().unwrap();
    writeln!(w, r#"{{"call":"Echo::say","payload":7,"id":1}}"#).unwrap();
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).unwrap();
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert!(is_server_error(&v), "{v}");
    let v = call(&r.unix, "z");
    assert_eq!(v["refusal"]["kind"], "unavailable", "{v}");
    r.stop.command(Command::Resume(0));
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let v = call(&r.unix, "z");
        if v["value"] == "z" {
            break;
        }
        assert!(Instant::now() < end, "never resumed: {v}");
        thread::sleep(Duration::from_millis(20));
    }
}
