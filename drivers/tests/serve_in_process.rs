//! `hale serve`'s one path with handlers given in process (the library
//! API `hale demo` serves the witness through): a program served by
//! `Application::boot` with a Rust receiver, inline or behind the control
//! socket's gate; an instance without one refused at boot; the control
//! socket's `hub` line where no hub is served.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use limen_core::hale::model::{parse_program, Program};
use limen_core::hale::runtime::{Completion, Receiver, ServedContext};
use limen_drivers::program::config::{ServeConfig, Token};
use limen_drivers::program::{Application, Handlers, ServeOptions};
use limen_drivers::serve::BoundAddress;

const PROGRAM: &str = "type A { n: Int; }\napi S { rpc B::f; }\nlocus B { fn f(a: A) -> A { return a; } }\n\
locus Tokens { fn principal(token: String) -> std::api::Principal { return std::api::Principal { mode: \"bearer\", name: \"\" }; } }\n\
main locus M { params { bearer: Tokens = Tokens { }; b: B = B { }; } run() { let s = api::serve(S, http::Rpc { bind: \"127.0.0.1:0\", principals: self.bearer }, as: \"web\", receivers: { B: self.b }, bound: 4, on_full: refuse); } }\n";

fn program() -> Program {
    parse_program("t.hl", PROGRAM).unwrap()
}

/// Answers `B::f` with its payload.
struct Echo;

impl Receiver for Echo {
    fn call(
        &mut self,
        _member: &str,
        payload: &serde_json::Value,
        _ctx: &ServedContext,
    ) -> Completion {
        Completion::Returned(payload.to_string().into_bytes())
    }
}

/// Options that give the bearer source one token, `t-x`, and `more`.
fn options(more: ServeOptions) -> ServeOptions {
    let mut config = ServeConfig::default();
    let source = config.sources.entry("bearer".into()).or_default();
    source.tokens = Some(
        [(
            "t-x".to_owned(),
            Token {
                principal: "x".into(),
                expires_ms: None,
            },
        )]
        .into(),
    );
    ServeOptions { config, ..more }
}

fn handlers() -> Handlers {
    let mut h = Handlers::new();
    h.insert("b".into(), Box::new(Echo) as Box<dyn Receiver + Send>);
    h
}

/// POSTs `B::f` with `{"n": n}` to `addr`: the status line and the body.
fn call(addr: &str, n: i64) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let body = format!("{{\"n\":{n}}}");
    write!(
        s,
        "POST /call/B::f HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t-x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

fn control(path: &PathBuf, line: &str) -> String {
    let mut s = UnixStream::connect(path).unwrap();
    writeln!(s, "{line}").unwrap();
    let mut answer = String::new();
    BufReader::new(s).read_line(&mut answer).unwrap();
    answer
}

/// Boots the program with `options`, runs it on a thread; its `web`
/// address, and the stop handle.
fn serve(options: &ServeOptions) -> (String, limen_drivers::serve::StopHandle) {
    let app = Application::boot(&program(), options, handlers()).unwrap();
    let addr = match &app.endpoints()[0] {
        (name, _, BoundAddress::Tcp(a)) if name == "web" => a.to_string(),
        other => panic!("{other:?}"),
    };
    let stop = app.stop_handle();
    std::thread::spawn(move || app.run().unwrap());
    (addr, stop)
}

#[test]
fn a_receiver_given_in_process_answers_inline() {
    let options = options(ServeOptions {
        inline: true,
        ..ServeOptions::default()
    });
    let (addr, stop) = serve(&options);
    let reply = call(&addr, 7);
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.ends_with("{\"n\":7}"), "{reply}");
    stop.stop();
}

#[test]
fn behind_a_control_socket_a_receiver_given_in_process_waits_at_its_gate() {
    let dir = std::env::temp_dir().join(format!("limen-in-process-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let socket = dir.join("control.sock");
    let options = options(ServeOptions {
        inline: true,
        control: Some(socket.clone()),
        ..ServeOptions::default()
    });
    let (addr, stop) = serve(&options);
    assert_eq!(control(&socket, "gate b"), "ok\n");
    let held = {
        let addr = addr.clone();
        std::thread::spawn(move || call(&addr, 1))
    };
    std::thread::sleep(Duration::from_millis(300));
    assert!(!held.is_finished(), "the call waits at the gate");
    assert_eq!(control(&socket, "open b"), "ok\n");
    assert!(held.join().unwrap().starts_with("HTTP/1.1 200"));
    assert_eq!(control(&socket, "hub"), "error: no hub is served\n");
    stop.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_instance_neither_configured_nor_given_is_refused_at_boot() {
    let e = Application::boot(
        &program(),
        &options(ServeOptions::default()),
        Handlers::new(),
    )
    .unwrap_err();
    assert_eq!(e.0.len(), 1, "{e}");
    assert!(
        e.0[0].starts_with("the receiver instance `b` (B) has no handler"),
        "{e}"
    );
    let options = options(ServeOptions {
        unserved: ["fills".to_owned()].into(),
        ..ServeOptions::default()
    });
    let e = Application::boot(&program(), &options, handlers()).unwrap_err();
    assert_eq!(
        e.0,
        ["hub fills: the program has no hub `fills` (its hubs: none)"]
    );
}
