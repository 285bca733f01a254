//! Rpc exposures across nodes, live: two `hale demo` nodes of the witness
//! behind Debian's HAProxy, configured from `examples/cluster/haproxy.cfg`
//! (its ports substituted, a stats socket added), HTTP and gRPC (h2c).
//!
//! curl and grpcio (`drivers/tests/peer/grpc_load.py`, stubs generated from
//! the exported `Public.proto`) call `Orders::place` through HAProxy without
//! pause; which node answered is what HAProxy says it sent the call to (the
//! `X-Hale-Node` header the example sets, `x-hale-node` metadata over
//! gRPC). Once both nodes have answered both clients, node 1 is sent
//! SIGTERM: with `--drain-grace` it answers its health checks 503 while it
//! still serves, HAProxy's stats socket reports it DOWN while its process
//! still runs, every call begun after that lands on node 2, and node 1
//! stops. Every call sent is answered, or refused `shutting_down` by a
//! node: none is dropped (no transport failure, no HAProxy error page).
//!
//! The peers are installed by `scripts/install-peers`; a test skips with a
//! message when one is absent, unless `LIMEN_REQUIRE_PEERS=1`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod support;

use support::{export_public, grpc_demo, grpc_stubs, peer, root, scratch, venv_python, Demo};

/// The example configuration the test runs, ports substituted.
const EXAMPLE: &str = "examples/cluster/haproxy.cfg";

/// The nodes' drain: well above the example's checks (`inter 500ms`,
/// `fall 2`), so HAProxy takes node 1 out long before its stop, however
/// loaded the machine.
const GRACE: &str = "5s";

/// The call both clients make.
const PLACE: &str = r#"{"symbol": "ACME", "qty": 10, "limit": 12500}"#;

#[test]
fn the_example_configuration_is_valid() {
    if !peer("haproxy") {
        return;
    }
    let out = Command::new("haproxy")
        .args(["-c", "-f"])
        .arg(root().join(EXAMPLE))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "haproxy -c: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// HAProxy, run in the foreground on ports of its own; killed when dropped.
struct Haproxy {
    child: Child,
    stats: PathBuf,
    http: String,
    grpc: String,
    log: PathBuf,
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port nobody held a moment ago, for HAProxy's frontends.
fn free_port() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

/// The example's configuration with its addresses replaced by the nodes'
/// and two free ports, and a stats socket in `dir`.
fn start_haproxy(dir: &Path, nodes: [&Demo; 2]) -> Haproxy {
    let example = std::fs::read_to_string(root().join(EXAMPLE)).unwrap();
    let (http, grpc) = (free_port(), free_port());
    let stats = dir.join("haproxy.sock");
    let mut text = example.clone();
    for (from, to) in [
        ("127.0.0.1:8000", http.as_str()),
        ("127.0.0.1:8070", grpc.as_str()),
        ("127.0.0.1:8180", nodes[0].public.as_str()),
        ("127.0.0.1:8280", nodes[1].public.as_str()),
        ("127.0.0.1:8170", nodes[0].grpc.as_str()),
        ("127.0.0.1:8270", nodes[1].grpc.as_str()),
    ] {
        assert!(text.contains(from), "the example binds {from}");
        text = text.replace(from, to);
    }
    text = text.replacen(
        "global\n",
        &format!(
            "global\n    stats socket {} mode 600 level admin\n",
            stats.display()
        ),
        1,
    );
    let cfg = dir.join("haproxy.cfg");
    std::fs::write(&cfg, text).unwrap();
    // Its warnings (a server DOWN, and why) go to standard error.
    let log = dir.join("haproxy.log");
    let file = std::fs::File::create(&log).unwrap();
    let child = Command::new("haproxy")
        .arg("-db")
        .arg("-f")
        .arg(&cfg)
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .spawn()
        .unwrap();
    Haproxy {
        child,
        stats,
        http,
        grpc,
        log,
    }
}

impl Haproxy {
    /// Each server's status as the stats socket reports it, by (backend,
    /// server): `UP`, `DOWN`, `UP 1/2`…; `None` while the socket is not up.
    fn states(&self) -> Option<HashMap<(String, String), String>> {
        let mut s = UnixStream::connect(&self.stats).ok()?;
        s.write_all(b"show stat\n").ok()?;
        let mut text = String::new();
        s.read_to_string(&mut text).ok()?;
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next()?.trim_start_matches("# ").split(',').collect();
        let at = header.iter().position(|h| *h == "status")?;
        let mut states = HashMap::new();
        for line in lines {
            let cells: Vec<&str> = line.split(',').collect();
            if cells.len() > at && cells[1] != "FRONTEND" && cells[1] != "BACKEND" {
                states.insert(
                    (cells[0].to_owned(), cells[1].to_owned()),
                    cells[at].to_owned(),
                );
            }
        }
        Some(states)
    }

    /// Whether `server` has status `status` in both backends.
    fn is(&self, server: &str, status: &str) -> bool {
        self.states().is_some_and(|s| {
            ["hale_http_nodes", "hale_grpc_nodes"].iter().all(|b| {
                s.get(&(b.to_string(), server.to_owned()))
                    .map(String::as_str)
                    == Some(status)
            })
        })
    }
}

/// Waits until `done`, polling, at most `limit`; fails naming `what`.
fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "not within {limit:?}: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One curl call through HAProxy: what curl saw.
#[derive(Debug, Clone)]
struct CurlCall {
    /// curl's exit status (0: a reply was read).
    exit: i32,
    status: u16,
    node: Option<String>,
    body: String,
    /// Begun after HAProxy reported node 1 DOWN.
    after: bool,
}

fn curl_call(http: &str, after: bool) -> CurlCall {
    let out = Command::new("curl")
        .args(["-sS", "-i", "--max-time", "30", "-X", "POST"])
        .args(["-H", "Authorization: Bearer t-alice"])
        .args(["-H", "Content-Type: application/json"])
        .args(["--data", PLACE])
        .arg(format!("http://{http}/call/Orders::place"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let node = head.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("x-hale-node")
            .then(|| value.trim().to_owned())
    });
    CurlCall {
        exit: out.status.code().unwrap_or(-1),
        status,
        node,
        body: body.to_owned(),
        after,
    }
}

/// The grpcio calls HAProxy says `node` answered.
fn count(calls: &[Value], node: &str) -> usize {
    calls.iter().filter(|c| c["node"] == node).count()
}

#[test]
fn two_nodes_behind_haproxy_share_the_calls_and_one_drains_out_losing_none() {
    if !peer("haproxy") || !peer("curl") {
        return;
    }
    let dir = scratch("cluster", "balancer");
    let Some(python) = venv_python(
        "grpc, grpc_tools, grpc_status",
        "grpcio, grpcio-tools, grpcio-status",
    ) else {
        return;
    };
    let api = dir.join("api");
    let stubs = dir.join("stubs");
    export_public(&api);
    grpc_stubs(&python, &api, "Public.proto", &stubs);

    let flags = ["--drain-grace", GRACE, "--loops", "1"];
    let mut node1 = grpc_demo("cluster-node1", &flags);
    let node2 = grpc_demo("cluster-node2", &flags);
    let haproxy = start_haproxy(&dir, [&node1, &node2]);
    let log = || std::fs::read_to_string(&haproxy.log).unwrap_or_default();
    wait_for(
        "HAProxy reports both nodes UP",
        Duration::from_secs(30),
        || haproxy.is("node1", "UP") && haproxy.is("node2", "UP"),
    );

    // One program on both nodes: the same description for the same
    // caller, digest and all, but for the address each node bound.
    let described: Vec<Value> = [&node1, &node2]
        .iter()
        .map(|n| {
            let out = Command::new("curl")
                .args(["-s", "-H", "Authorization: Bearer t-alice"])
                .arg(format!("http://{}/.description", n.public))
                .output()
                .unwrap();
            let mut doc: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(doc["listener"]["address"], n.public.as_str());
            doc["listener"]["address"] = Value::Null;
            doc
        })
        .collect();
    assert_eq!(described[0], described[1], "one description on both nodes");
    assert!(described[0]["digest"].is_string(), "{}", described[0]);

    // The load: two curl loops and two grpcio workers, without pause.
    let stop = Arc::new(AtomicBool::new(false));
    let after = Arc::new(AtomicBool::new(false));
    let curls: Arc<Mutex<Vec<CurlCall>>> = Arc::default();
    let mut curl_threads = Vec::new();
    for _ in 0..2 {
        let (stop, after, curls, http) = (
            stop.clone(),
            after.clone(),
            curls.clone(),
            haproxy.http.clone(),
        );
        curl_threads.push(std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                let call = curl_call(&http, after.load(Ordering::SeqCst));
                curls.lock().unwrap().push(call);
            }
        }));
    }
    let stop_file = dir.join("stop");
    let marker_file = dir.join("after");
    let mut grpc = Command::new(&python)
        .arg(root().join("drivers/tests/peer/grpc_load.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let plan = json!({
        "target": haproxy.grpc, "stubs": stubs, "workers": 2,
        "stop_file": stop_file, "marker_file": marker_file,
    });
    grpc.stdin
        .take()
        .unwrap()
        .write_all(plan.to_string().as_bytes())
        .unwrap();
    let grpcs: Arc<Mutex<Vec<Value>>> = Arc::default();
    let done: Arc<Mutex<Option<Value>>> = Arc::default();
    let reader = {
        let (grpcs, done) = (grpcs.clone(), done.clone());
        let out = grpc.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                let v: Value = serde_json::from_str(&line).unwrap();
                if v["done"] == true {
                    *done.lock().unwrap() = Some(v);
                } else {
                    grpcs.lock().unwrap().push(v);
                }
            }
        })
    };
    let curl_nodes = |node: &str, after_only: bool| {
        curls
            .lock()
            .unwrap()
            .iter()
            .filter(|c| c.node.as_deref() == Some(node) && (c.after || !after_only))
            .count()
    };
    let grpc_nodes = |node: &str, after_only: bool| {
        let g = grpcs.lock().unwrap();
        let calls: Vec<Value> = g
            .iter()
            .filter(|c| !after_only || c["after"] == true)
            .cloned()
            .collect();
        count(&calls, node)
    };

    // Spread: both nodes answer both clients.
    wait_for(
        "both nodes answer curl's and grpcio's calls",
        Duration::from_secs(60),
        || {
            ["node1", "node2"]
                .iter()
                .all(|n| curl_nodes(n, false) >= 5 && grpc_nodes(n, false) >= 5)
        },
    );

    // Node 1 is asked to stop mid-load: it drains first.
    let kill = Command::new("kill")
        .args(["-TERM", &node1.pid().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    wait_for(
        "HAProxy reports node 1 DOWN (its health checks answer 503)",
        Duration::from_secs(30),
        || haproxy.is("node1", "DOWN"),
    );
    // Taken out by its health check while it still serves: before its stop.
    assert!(
        node1.wait_exit(Duration::from_millis(1)).is_none(),
        "node 1 was still running when HAProxy took it out"
    );
    std::fs::write(&marker_file, b"").unwrap();
    after.store(true, Ordering::SeqCst);
    // The grace ends in stop(); the node exits.
    assert!(
        node1.wait_exit(Duration::from_secs(40)).is_some(),
        "node 1 did not stop after its drain"
    );
    // Calls go on, on node 2 alone.
    wait_for(
        "calls begun after node 1 went DOWN are answered",
        Duration::from_secs(60),
        || curl_nodes("node2", true) >= 10 && grpc_nodes("node2", true) >= 10,
    );
    stop.store(true, Ordering::SeqCst);
    std::fs::write(&stop_file, b"").unwrap();
    for t in curl_threads {
        t.join().unwrap();
    }
    let start = Instant::now();
    let status = loop {
        if let Some(status) = grpc.try_wait().unwrap() {
            break status;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "grpc_load.py did not end"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    reader.join().unwrap();
    assert!(status.success(), "grpc_load.py: {status}");

    let curls = curls.lock().unwrap().clone();
    let grpcs = grpcs.lock().unwrap().clone();
    let done = done
        .lock()
        .unwrap()
        .clone()
        .expect("grpc_load.py reported its end");
    // grpcio had a status for every call it made.
    assert_eq!(done["calls"], json!(grpcs.len()), "{done}");
    let refused = curls.iter().filter(|c| c.status == 503).count()
        + grpcs.iter().filter(|c| c["code"] == 14).count();
    let summary = format!(
        "curl: {} calls, node1 {} node2 {}; grpcio: {} calls, node1 {} node2 {}; \
         refused shutting_down: {refused}\nhaproxy: {}",
        curls.len(),
        curls
            .iter()
            .filter(|c| c.node.as_deref() == Some("node1"))
            .count(),
        curls
            .iter()
            .filter(|c| c.node.as_deref() == Some("node2"))
            .count(),
        grpcs.len(),
        count(&grpcs, "node1"),
        count(&grpcs, "node2"),
        log()
    );
    eprintln!("{summary}");

    // None dropped: each curl call was answered by a node, 200 with its
    // receipt or 503 refused shutting_down (never HAProxy's own page, a
    // 502, or no reply).
    for c in &curls {
        let answered = c.exit == 0
            && c.node.is_some()
            && match c.status {
                200 => c.body.contains("\"order\""),
                503 => c.body.contains("\"shutting_down\""),
                _ => false,
            };
        assert!(
            answered,
            "a curl call not answered by a node: {c:?}\n{summary}"
        );
    }
    // Each grpcio call has OK or UNAVAILABLE with the shutting_down refusal
    // in its details.
    for c in &grpcs {
        let answered = c["node"].is_string()
            && (c["code"] == 0 && c["order"].is_i64()
                || c["code"] == 14 && c["kind"] == "shutting_down");
        assert!(
            answered,
            "a grpcio call not answered by a node: {c}\n{summary}"
        );
    }
    // HAProxy sent nothing to node 1 once it reported it DOWN.
    for c in curls.iter().filter(|c| c.after) {
        assert_eq!(c.node.as_deref(), Some("node2"), "{c:?}\n{summary}");
    }
    for c in grpcs.iter().filter(|c| c["after"] == true) {
        assert_eq!(c["node"], "node2", "{c}\n{summary}");
    }
}
