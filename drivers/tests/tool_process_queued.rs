//! A process whose outcomes are queued for the caller (`Process::queued`),
//! against real processes: the toolkit echo fixture and the rogue one.
//! The caller's own thread reads the process's output in `wait`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use limen_core::flow::tool::{Call, CallKey, HostConn, Limits, Listing, Outcome, Tool};
use limen_core::flow::{Identity, Value};
use limen_drivers::tool::{Process, Spawn};

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

fn queued(program: &str, args: &[&str]) -> Process {
    Process::queued(
        Spawn::new(program, args),
        Box::new(HostConn::new(Limits::default())),
    )
}

fn call(tool: &Arc<Tool>, id: &str, text: &str) -> Call {
    Call {
        key: CallKey::new("run-q", id),
        tool: tool.clone(),
        args: vec![Value::text(text)],
        type_args: Vec::new(),
    }
}

/// Waits until `n` outcomes have come (or 10 s pass), by key.
fn collect(process: &Process, n: usize) -> BTreeMap<String, Outcome> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = Vec::new();
    while got.len() < n && Instant::now() < deadline {
        process.wait(&mut got, Duration::from_secs(1));
    }
    let by_key: BTreeMap<String, Outcome> = got
        .into_iter()
        .map(|(k, o)| (k.call.to_string(), o))
        .collect();
    assert_eq!(by_key.len(), n, "{by_key:?}");
    by_key
}

#[test]
fn outcomes_wait_in_the_queue_until_the_caller_takes_them() {
    let tool = echo_tool();
    let process = queued(ECHO, &["--workers", "0"]);
    // Nothing open: nothing to wait for.
    let mut out = Vec::new();
    let started = Instant::now();
    assert_eq!(process.wait(&mut out, Duration::from_secs(5)), 0);
    assert!(started.elapsed() < Duration::from_secs(1));
    // Described on this thread: no thread reads the answer but the caller.
    let described = process.describe(Duration::from_secs(10)).unwrap();
    assert_eq!(
        described.tools.get(tool.identity()),
        Some(&tool.fingerprint)
    );
    let sent = process
        .send_all((0..300).map(|i| call(&tool, &i.to_string(), &format!("t{i}"))))
        .unwrap();
    assert_eq!(sent, 300);
    let got = collect(&process, 300);
    for (id, outcome) in &got {
        assert_eq!(outcome, &Outcome::Ok(Value::text(&format!("t{id}"))));
    }
    assert_eq!(process.open_calls(), 0);
    assert_eq!(process.starts(), 1);
    process.shutdown();
}

#[test]
fn a_wait_with_calls_held_ends_at_its_timeout_and_the_outcome_waits_for_the_next() {
    let tool = echo_tool();
    let process = queued(ROGUE, &[]);
    process.send(call(&tool, "held", "hold")).unwrap();
    let mut out = Vec::new();
    let started = Instant::now();
    assert_eq!(process.wait(&mut out, Duration::from_millis(300)), 0);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(250) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
    process.send(call(&tool, "f", "flush")).unwrap();
    let got = collect(&process, 2);
    assert_eq!(got["held"], Outcome::Ok(Value::text("held held")));
    assert_eq!(got["f"], Outcome::Ok(Value::text("flushed")));
    process.shutdown();
}

#[test]
fn a_crash_is_seen_by_the_waiting_caller_and_the_next_call_starts_it_again() {
    let tool = echo_tool();
    let process = queued(ROGUE, &[]);
    process.send(call(&tool, "1", "hold")).unwrap();
    process.send(call(&tool, "2", "crash")).unwrap();
    let got = collect(&process, 2);
    let unknown = Outcome::Unknown("the implementation's process ended with the call out".into());
    assert_eq!(got["1"], unknown);
    assert_eq!(got["2"], unknown);
    process.send(call(&tool, "3", "again")).unwrap();
    let got = collect(&process, 1);
    assert_eq!(got["3"], Outcome::Ok(Value::text("again")));
    assert_eq!(process.starts(), 2);
    process.shutdown();
}

#[test]
fn callers_waiting_together_take_each_outcome_once() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let tool = echo_tool();
    let process = Arc::new(queued(ECHO, &["--workers", "2"]));
    let total = 2000;
    let taken = Arc::new(AtomicUsize::new(0));
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let (process, taken) = (process.clone(), taken.clone());
            std::thread::spawn(move || {
                let mut got = Vec::new();
                let deadline = Instant::now() + Duration::from_secs(20);
                while taken.load(Ordering::SeqCst) < total && Instant::now() < deadline {
                    let n = process.wait(&mut got, Duration::from_millis(50));
                    taken.fetch_add(n, Ordering::SeqCst);
                }
                got
            })
        })
        .collect();
    for chunk in (0..total).collect::<Vec<_>>().chunks(100) {
        process
            .send_all(
                chunk
                    .iter()
                    .map(|i| call(&tool, &i.to_string(), &i.to_string())),
            )
            .unwrap();
    }
    let mut all = BTreeMap::new();
    for w in waiters {
        for (key, outcome) in w.join().unwrap() {
            assert_eq!(outcome, Outcome::Ok(Value::text(&key.call)));
            assert!(
                all.insert(key.call.to_string(), ()).is_none(),
                "{key} twice"
            );
        }
    }
    assert_eq!(all.len(), total);
    process.shutdown();
}
