//! The connection loops under attack (issue #26, items 3 and 9): one
//! listener filled to its cap leaves the others serving; a refusal with
//! the request's body unread is still read by a client that sends it all
//! in one write (the lingering close of RFC 9112 § 9.6), on the HTTP, MCP
//! and hub listeners; a connection that never stops sending is let go
//! after a bounded time and size; and one connection that floods its loop
//! does not starve a well-behaved client beside it. The attacking clients
//! are raw `std::net` sockets; every attack is bounded in count and time.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use limen_core::hale::runtime::*;
use limen_drivers::serve::{BoundAddress, Server, ServerConfig, StopHandle};

use support::demo;

// ---------------------------------------------------------------------------
// Per-listener caps, in process: two HTTP listeners and a Unix socket.

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

struct Echo;
impl Receiver for Echo {
    fn call(&mut self, _m: &str, payload: &serde_json::Value, _c: &ServedContext) -> Completion {
        Completion::Returned(payload.to_string().into_bytes())
    }
}

fn spec(name: &str, via: &str) -> ExposureSpec {
    ExposureSpec {
        name: name.into(),
        surface: "E".into(),
        digest: "fnv1a64:00000000000000ee".into(),
        via: via.into(),
        members: vec![MemberSpec {
            name: "Echo::say".into(),
            receiver: 0,
            requires: vec![],
        }],
        receivers: vec!["self.echo".into()],
        bound: 64,
        hierarchy: RoleHierarchy::flat(),
        limits: ExposureLimits::default(),
    }
}

struct Three {
    a: String,
    b: String,
    unix: PathBuf,
    stop: StopHandle,
    thread: Option<thread::JoinHandle<()>>,
}

impl Drop for Three {
    fn drop(&mut self) {
        self.stop.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A server with HTTP listeners `a` and `b` and a Unix socket, each
/// serving an echo exposure; `a`'s cap set to `cap_a` when given.
fn three(config: ServerConfig, cap_a: Option<usize>) -> Three {
    let dir = support::scratch("hardening", &format!("{:?}", thread::current().id()));
    let unix = dir.join("admin.sock");
    let unix_path = unix.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let thread = thread::spawn(move || {
        let mut server = Server::new(config).unwrap();
        let mut addrs = Vec::new();
        let mut ids = Vec::new();
        for _ in 0..2 {
            let (id, BoundAddress::Tcp(addr)) = server.bind_http("127.0.0.1:0").unwrap() else {
                panic!("a TCP listener")
            };
            addrs.push(addr.to_string());
            ids.push(id);
        }
        if let Some(cap) = cap_a {
            server.set_max_connections(ids[0], cap).unwrap();
        }
        let (u, _) = server.bind_unix(&unix_path).unwrap().unwrap();
        let w = server
            .add_worker(
                "self.echo",
                1,
                Box::new(Echo),
                Arc::new(|_| Supervision::Absorb),
            )
            .unwrap();
        for (id, via) in [(ids[0], "http"), (ids[1], "http"), (u, "unix")] {
            let bearer: Option<Box<dyn BearerSource + Send>> =
                (via == "http").then(|| Box::new(TokenTable::new(None).with("t-a", "a")) as Box<_>);
            let e = Exposure::new(
                spec(via, via),
                bearer,
                Box::new(RoleTable::new()),
                Box::new(AnyCodec),
                Box::new(Doc),
            );
            server.serve(id, e, vec![w]).unwrap();
        }
        tx.send((addrs, server.stop_handle())).unwrap();
        server.run().unwrap();
    });
    let (addrs, stop) = rx.recv().unwrap();
    Three {
        a: addrs[0].clone(),
        b: addrs[1].clone(),
        unix,
        stop,
        thread: Some(thread),
    }
}

/// An echo call over HTTP; its status, `None` when the connection was
/// closed unanswered.
fn http_echo(addr: &str) -> Option<u16> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let body = "7";
    let _ = write!(
        s,
        "POST /call/Echo::say HTTP/1.1\r\nAuthorization: Bearer t-a\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.get(9..12)?.parse().ok()
}

/// An echo call over the Unix socket; whether it was answered.
fn unix_echo(path: &PathBuf) -> bool {
    let Ok(mut s) = UnixStream::connect(path) else {
        return false;
    };
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    if s.write_all(b"{\"call\":\"Echo::say\",\"payload\":7,\"id\":1}\n")
        .is_err()
    {
        return false;
    }
    let mut line = String::new();
    let _ = BufReader::new(s).read_line(&mut line);
    line.contains("\"ok\":true")
}

/// Opens `n` connections to `addr` and holds them, idle.
fn fill(addr: &str, n: usize) -> Vec<TcpStream> {
    (0..n).map(|_| TcpStream::connect(addr).unwrap()).collect()
}

/// Whether the server closed `s` (EOF or reset) within `limit`.
fn closed_by_server(mut s: &TcpStream, limit: Duration) -> bool {
    s.set_read_timeout(Some(limit)).unwrap();
    let mut b = [0u8; 64];
    matches!(s.read(&mut b), Ok(0) | Err(_)) && {
        // A timeout is not a close.
        s.set_read_timeout(Some(Duration::from_millis(1))).unwrap();
        !matches!(s.read(&mut b), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
    }
}

#[test]
fn a_listener_filled_to_its_cap_leaves_the_other_listeners_serving() {
    // Before: one count over every listener, so 32 idle connections on
    // `a` locked out `b` and the Unix socket alike.
    let r = three(
        ServerConfig {
            max_connections: 32,
            loops: 1,
            ..ServerConfig::default()
        },
        None,
    );
    assert_eq!(http_echo(&r.a), Some(200));
    let held = fill(&r.a, 32);
    // Every one of them accepted (each loop turn accepts what is waiting):
    // a call on `b` is answered only after the turn that accepted them.
    assert_eq!(http_echo(&r.b), Some(200), "b serves beside a full a");
    assert!(unix_echo(&r.unix), "the Unix socket serves beside a full a");
    // The 33rd on `a` is closed at accept.
    let over = TcpStream::connect(&r.a).unwrap();
    assert!(closed_by_server(&over, Duration::from_secs(10)));
    // And `b` can be filled to its own cap: 32 more connections.
    let held_b = fill(&r.b, 31);
    assert!(unix_echo(&r.unix), "the Unix socket serves beside a full b");
    assert_eq!(http_echo(&r.b), Some(200), "b's 32nd");
    drop((held, held_b));
}

#[test]
fn a_cap_set_on_one_listener_holds_for_it_alone() {
    let r = three(
        ServerConfig {
            loops: 1,
            ..ServerConfig::default()
        },
        Some(4),
    );
    let held = fill(&r.a, 4);
    assert_eq!(http_echo(&r.b), Some(200));
    let over = TcpStream::connect(&r.a).unwrap();
    assert!(closed_by_server(&over, Duration::from_secs(10)));
    drop(held);
    // Released, `a` serves again (the count follows the closes).
    let start = Instant::now();
    while http_echo(&r.a) != Some(200) {
        assert!(start.elapsed() < Duration::from_secs(10), "a serves again");
    }
    assert!(unix_echo(&r.unix));
}

// ---------------------------------------------------------------------------
// `hale demo`: a capped gRPC listener flooded with prefaces.

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// A well-behaved `Orders::place` over HTTP; its status.
fn place(addr: &str) -> Option<u16> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let body = r#"{"symbol":"ACME","qty":1,"limit":1}"#;
    write!(
        s,
        "POST /call/Orders::place HTTP/1.1\r\nAuthorization: Bearer t-alice\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.get(9..12)?.parse().ok()
}

/// `describe` over the admin socket; whether it was answered.
fn admin_describe(path: &PathBuf) -> bool {
    let Ok(mut s) = UnixStream::connect(path) else {
        return false;
    };
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    if s.write_all(b"{\"describe\":true,\"id\":1}\n").is_err() {
        return false;
    }
    let mut line = String::new();
    let _ = BufReader::new(s).read_line(&mut line);
    line.contains("\"ok\":true")
}

#[test]
fn prefaces_filling_the_grpc_listener_leave_admin_public_and_mcp_serving() {
    const CAP: usize = 200;
    let d = demo(
        "hardening-cap",
        &[
            "--grpc",
            "127.0.0.1:0",
            "--loops",
            "1",
            "--max-connections",
            &format!("grpc={CAP}"),
        ],
    );
    // The attack of issue #26: connections that send the HTTP/2 preface
    // and nothing more, past the listener's cap.
    let mut flood: Vec<TcpStream> = Vec::new();
    for _ in 0..CAP + 50 {
        let mut s = TcpStream::connect(&d.grpc).unwrap();
        let _ = s.write_all(PREFACE);
        flood.push(s);
    }
    assert_eq!(place(&d.public), Some(200), "public serves");
    assert!(admin_describe(&d.admin), "the admin socket serves");
    assert!(place(&d.partner).is_some(), "partner answers");
    // At most CAP of them are held: the others were closed at accept.
    let closed = flood
        .iter()
        .filter(|s| closed_by_server(s, Duration::from_millis(200)))
        .count();
    assert!(closed >= 50, "{closed} of the flood closed at accept");
}

// ---------------------------------------------------------------------------
// The lingering close: a refusal read by a client that sends it all at once.

/// Sends `head` and `body_len` bytes of body in one write, then reads the
/// answer; the whole answer (its head and its Content-Length of body), or
/// `None` when the exchange failed: the write was reset (a client still
/// sending reports that, and never reads the answer: curl, browsers,
/// HTTP libraries), or the read ended in a reset rather than the server's
/// end of stream.
fn refused_in_one_write(addr: &str, head: &str, body_len: usize) -> Option<String> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(20))).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut request = head.as_bytes().to_vec();
    request.resize(head.len() + body_len, b'x');
    s.write_all(&request).ok()?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).ok()?;
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = text.split_once("\r\n\r\n")?;
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))?
        .parse()
        .ok()?;
    (body.len() == length).then_some(text)
}

/// 4 MiB over the body limit (1 MiB), sent with its head in one write.
const OVER: usize = 5 * 1024 * 1024;

#[test]
fn a_body_over_the_limit_sent_in_one_write_reads_its_whole_400_every_time() {
    let d = demo("hardening-linger", &["--loops", "1"]);
    let head = format!(
        "POST /call/Orders::place HTTP/1.1\r\nAuthorization: Bearer t-alice\r\nContent-Length: {OVER}\r\n\r\n"
    );
    let read = (0..20)
        .filter_map(|_| refused_in_one_write(&d.public, &head, OVER))
        .filter(|a| a.starts_with("HTTP/1.1 400 "))
        .count();
    assert_eq!(read, 20, "the 400 read whole, of 20");
    assert_eq!(place(&d.public), Some(200));
}

#[test]
fn an_mcp_body_over_the_limit_sent_in_one_write_reads_its_whole_answer_every_time() {
    let d = demo("hardening-linger-mcp", &["--loops", "1"]);
    let head = format!(
        "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {OVER}\r\n\r\n"
    );
    let read = (0..20)
        .filter_map(|_| refused_in_one_write(&d.mcp, &head, OVER))
        .filter(|a| a.starts_with("HTTP/1.1 "))
        .count();
    assert_eq!(read, 20, "the refusal read whole, of 20");
}

#[test]
fn a_hub_refusal_with_unread_input_behind_it_is_read_whole_every_time() {
    let d = demo("hardening-linger-hub", &["--hub", "127.0.0.1:0"]);
    // An upgrade with no version or key is refused (426); 4 MiB follow it.
    let upgrade =
        "GET /fills HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n";
    let read = (0..20)
        .filter_map(|_| refused_in_one_write(&d.hub, upgrade, 4 * 1024 * 1024))
        .filter(|a| a.starts_with("HTTP/1.1 426 "))
        .count();
    assert_eq!(read, 20, "the upgrade refusal read whole, of 20");
    // A body over the limit behind a request for the description.
    let head = format!("GET /.description HTTP/1.1\r\nContent-Length: {OVER}\r\n\r\n");
    let read = (0..20)
        .filter_map(|_| refused_in_one_write(&d.hub, &head, OVER))
        .filter(|a| a.starts_with("HTTP/1.1 400 "))
        .count();
    assert_eq!(read, 20, "the description's refusal read whole, of 20");
}

/// A client that never stops sending after its refusal: it reads the 400,
/// and the server lets it go after its bounded time or size (it does not
/// hold the descriptor while the client sends).
#[test]
fn a_client_that_keeps_sending_after_its_refusal_is_let_go() {
    let d = demo("hardening-linger-bound", &["--loops", "1"]);
    let s = TcpStream::connect(&d.public).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut w = s.try_clone().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let writer = {
        let (stop, sent) = (stop.clone(), sent.clone());
        thread::spawn(move || {
            let head = b"POST /call/Orders::place HTTP/1.1\r\nContent-Length: 999999999\r\n\r\n";
            if w.write_all(head).is_err() {
                return;
            }
            let chunk = vec![b'x'; 64 * 1024];
            let started = Instant::now();
            // A hang guard, far past the bound: 60 s.
            while !stop.load(Ordering::SeqCst) && started.elapsed() < Duration::from_secs(60) {
                match w.write(&chunk) {
                    Ok(n) => {
                        sent.fetch_add(n as u64, Ordering::SeqCst);
                    }
                    Err(_) => return,
                }
            }
        })
    };
    let mut r = BufReader::new(s);
    let mut status = String::new();
    r.read_line(&mut status).unwrap();
    assert!(status.starts_with("HTTP/1.1 400 "), "{status}");
    // Then the end: EOF (the server shut down its side), and then the
    // server lets go: the writer's sends fail.
    let mut rest = Vec::new();
    r.read_to_end(&mut rest)
        .expect("the answer ends with the server's end of stream, not a reset");
    let started = Instant::now();
    writer.join().unwrap();
    stop.store(true, Ordering::SeqCst);
    assert!(
        started.elapsed() < Duration::from_secs(55),
        "the server let the client go"
    );
    assert!(
        sent.load(Ordering::SeqCst) < 8 * 1024 * 1024 * 1024,
        "the server read a bounded amount"
    );
    assert_eq!(place(&d.public), Some(200));
}

// ---------------------------------------------------------------------------
// Fairness: one connection that floods the loop beside a good client.

/// An HTTP/2 client that sends WINDOW_UPDATE(+1) frames on the connection
/// as fast as it can, until `stop` or the server closes it or a hang
/// guard of 60 s; whether it was still flooding when stopped.
fn window_update_flood(addr: &str, stop: Arc<AtomicBool>) -> thread::JoinHandle<bool> {
    let mut s = TcpStream::connect(addr).unwrap();
    thread::spawn(move || {
        let mut first = PREFACE.to_vec();
        first.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]); // SETTINGS
        if s.write_all(&first).is_err() {
            return false;
        }
        // Keep what the server writes from filling our socket: drained.
        let mut r = s.try_clone().unwrap();
        thread::spawn(move || {
            let mut b = vec![0u8; 64 * 1024];
            while matches!(r.read(&mut b), Ok(n) if n > 0) {}
        });
        let frame = [0u8, 0, 4, 8, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let chunk: Vec<u8> = frame.iter().copied().cycle().take(13 * 20_000).collect();
        let started = Instant::now();
        while !stop.load(Ordering::SeqCst) {
            if started.elapsed() > Duration::from_secs(60) {
                return false;
            }
            if s.write_all(&chunk).is_err() {
                // The server closed it: not a starvation.
                return true;
            }
        }
        let _ = s.shutdown(Shutdown::Both);
        true
    })
}

#[test]
fn a_flooding_connection_does_not_starve_a_client_beside_it() {
    let d = demo(
        "hardening-flood",
        &["--grpc", "127.0.0.1:0", "--loops", "1"],
    );
    let stop = Arc::new(AtomicBool::new(false));
    let flooders: Vec<_> = (0..2)
        .map(|_| window_update_flood(&d.grpc, stop.clone()))
        .collect();
    // Let the flood begin before the call (a hang guard would not help:
    // the test asserts the call completes while the flood goes on).
    thread::sleep(Duration::from_millis(300));
    let answered = place(&d.public);
    stop.store(true, Ordering::SeqCst);
    let flooding: Vec<bool> = flooders.into_iter().map(|f| f.join().unwrap()).collect();
    assert_eq!(answered, Some(200), "the good client was answered");
    assert!(
        flooding.iter().all(|&f| f),
        "the good call completed only after the flood gave up ({flooding:?})"
    );
}
