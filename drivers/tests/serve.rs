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
use limen_drivers::serve::{BoundAddress, Server, ServerConfig, StopHandle};

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

/// Echoes its payload; `Echo::slow` sleeps first.
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
        ],
        receivers: vec!["self.echo".into()],
        bound: 64,
        hierarchy: RoleHierarchy::flat(),
        limits: ExposureLimits::default(),
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
        let w = server
            .add_worker(
                "self.echo",
                1,
                Box::new(Echo),
                Arc::new(|_| Supervision::Absorb),
            )
            .unwrap();
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
