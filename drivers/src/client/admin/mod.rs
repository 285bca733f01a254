//! `hale admin ENDPOINT [--port P] [--bearer T | --token T]` (§ The
//! clients): a page on `127.0.0.1` listing the description's members and
//! streams, a form per member and a live tail per stream, every action one
//! request to the endpoint.
//!
//! The process binds the page's address, draws a launch token and prints
//! the one URL that carries it. Every request then passes the gate first
//! (the token, the page's own Host and Origin: the core's
//! [`limen_core::wire::admin`], pure, where the routes are read too), and
//! is answered by one of these routes:
//!
//! | route | answer |
//! |---|---|
//! | `GET /?token=T` | the launch: `303` to `/`, setting the HttpOnly, SameSite=Strict cookie |
//! | `GET /`, `/admin.js`, `/admin.css` | the page, built into the binary ([`assets`]) |
//! | `GET /api/description` | the description(s) read from the endpoint now ([`endpoint::Remote::describe`]) |
//! | `POST /api/call` | one call, naming the digest the page displays ([`endpoint::Remote::call`]) |
//! | `GET /api/stream?topic=T` | a subscription to a hub's stream, each frame relayed as a server-sent event |
//!
//! Each connection is a thread of its own (at most [`MAX_CONNECTIONS`] at
//! once; the page is one person's), reading its request with the core's
//! HTTP/1.1 machine ([`limen_core::wire::http1::HttpConn`]) under its
//! limits, so a slow or silent client holds one thread for 10 seconds at
//! most and harms no other.

pub mod endpoint;

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use limen_core::wire::admin::{self, Gate, LaunchToken, Route, Verdict};
use limen_core::wire::http1::{HttpConn, HttpEvent, HttpRequest, Limits};
use limen_core::wire::machine::Machine;
use serde_json::{json, Value};

use endpoint::{Remote, Target};

use super::hub_conn::{HubConn, Incoming, ENDED};

/// The port the page listens on unless `--port` says.
pub const DEFAULT_PORT: u16 = crate::hale_cli::cli::DEFAULT_ADMIN_PORT;

/// The most connections served at once; one more is closed unanswered.
pub const MAX_CONNECTIONS: usize = 64;

/// Exit status: the page's address could not be bound.
pub const EXIT_BIND: i32 = 2;

/// The page, its script and its style, built into the binary so the page
/// works offline and loads nothing from another host.
pub mod assets {
    /// `GET /`.
    pub const INDEX: &str = include_str!("assets/index.html");
    /// `GET /admin.js`.
    pub const SCRIPT: &str = include_str!("assets/admin.js");
    /// `GET /admin.css`.
    pub const STYLE: &str = include_str!("assets/admin.css");
}

/// The headers every answer carries: the page may load its own script,
/// style and API only, in no frame, and leaks no URL.
pub const SECURITY_HEADERS: [(&str, &str); 6] = [
    (
        "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
         connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
    ),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Frame-Options", "DENY"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
    ("Cross-Origin-Resource-Policy", "same-origin"),
];

/// The page's server: its gate and the endpoint it drives.
pub struct Admin {
    gate: Gate,
    remote: Remote,
}

/// An answer to one request.
enum Answer {
    /// A whole response.
    Whole {
        status: u16,
        content_type: &'static str,
        extra: Vec<(&'static str, String)>,
        body: Vec<u8>,
    },
    /// The stream of `topic`, relayed until it ends.
    Stream { topic: String },
}

fn text(status: u16, body: impl Into<String>) -> Answer {
    Answer::Whole {
        status,
        content_type: "text/plain; charset=utf-8",
        extra: Vec::new(),
        body: body.into().into_bytes(),
    }
}

fn json_answer(status: u16, v: &Value) -> Answer {
    Answer::Whole {
        status,
        content_type: "application/json",
        extra: Vec::new(),
        body: v.to_string().into_bytes(),
    }
}

fn asset(content_type: &'static str, body: &str) -> Answer {
    Answer::Whole {
        status: 200,
        content_type,
        extra: Vec::new(),
        body: body.as_bytes().to_vec(),
    }
}

impl Admin {
    /// The page for `remote`, behind `gate`.
    pub fn new(gate: Gate, remote: Remote) -> Admin {
        Admin { gate, remote }
    }

    /// The answer to `request`: the gate's, then the route's.
    fn answer(&self, request: &HttpRequest) -> Answer {
        match self.gate.check(request) {
            Verdict::Refused(why) => return text(403, format!("403 Forbidden: {why}\n")),
            Verdict::Launch { set_cookie } => {
                return Answer::Whole {
                    status: 303,
                    content_type: "text/plain; charset=utf-8",
                    extra: vec![("Location", "/".to_owned()), ("Set-Cookie", set_cookie)],
                    body: b"the page is at /\n".to_vec(),
                }
            }
            Verdict::Admitted => {}
        }
        match admin::route(request) {
            Route::Page => asset("text/html; charset=utf-8", assets::INDEX),
            Route::Script => asset("text/javascript; charset=utf-8", assets::SCRIPT),
            Route::Style => asset("text/css; charset=utf-8", assets::STYLE),
            Route::Description => json_answer(200, &self.remote.describe()),
            Route::Call => match admin::parse_call(request) {
                Ok(call) => json_answer(
                    200,
                    &self
                        .remote
                        .call(&call.member, &call.payload, call.digest.as_deref()),
                ),
                Err((status, why)) => json_answer(status, &json!({ "error": why })),
            },
            Route::Stream { topic } => match self.remote.target {
                Target::Hub(_) => Answer::Stream { topic },
                Target::Exposure(_) => text(
                    404,
                    "streams are a hub's: this page drives no ws:// endpoint\n",
                ),
            },
            Route::Error(status, why) => text(status, format!("{why}\n")),
        }
    }
}

/// The driver's clock: nanoseconds since `start`.
fn now(start: Instant) -> u64 {
    start.elapsed().as_nanos() as u64
}

/// Serves one connection: reads its request with the core's machine,
/// answers it, writes the answer; a stream runs until either side ends it.
fn serve_connection(admin: &Admin, mut stream: TcpStream) {
    let start = Instant::now();
    let _ = stream.set_nodelay(true);
    let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));
    let mut conn = HttpConn::new(now(start), Limits::default());
    let mut buf = vec![0u8; 16_384];
    loop {
        while let Some(event) = conn.poll_event() {
            match event {
                HttpEvent::Request(request) => match admin.answer(&request) {
                    Answer::Whole {
                        status,
                        content_type,
                        extra,
                        body,
                    } => {
                        let mut headers: Vec<(&str, &str)> = SECURITY_HEADERS.to_vec();
                        headers.extend(extra.iter().map(|(n, v)| (*n, v.as_str())));
                        conn.send_typed(now(start), status, content_type, &headers, &body);
                    }
                    Answer::Stream { topic } => {
                        relay_stream(admin, stream, &topic);
                        return;
                    }
                },
                HttpEvent::Malformed { reason, .. } => {
                    let body = format!("400 Bad Request: {reason}\n");
                    conn.send_typed(
                        now(start),
                        400,
                        "text/plain; charset=utf-8",
                        &SECURITY_HEADERS,
                        body.as_bytes(),
                    );
                }
                HttpEvent::Lost | HttpEvent::Close => {}
            }
        }
        let out = conn.pending_output();
        if !out.is_empty() {
            let n = out.len();
            if stream.write_all(out).is_err() {
                return;
            }
            conn.consume_output(now(start), n);
            continue;
        }
        if conn.is_closed() {
            if conn.lingers() {
                // The client may still be sending: let it, briefly, so
                // the kernel does not reset the answer away.
                let _ = stream.shutdown(Shutdown::Write);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
                while matches!(stream.read(&mut buf), Ok(n) if n > 0) {}
            }
            return;
        }
        let wait = conn
            .poll_timeout()
            .map(|deadline| Duration::from_nanos(deadline.saturating_sub(now(start))))
            .unwrap_or(Duration::from_secs(5))
            .max(Duration::from_millis(1));
        let _ = stream.set_read_timeout(Some(wait));
        match stream.read(&mut buf) {
            Ok(0) => conn.handle_eof(now(start)),
            Ok(n) => conn.handle_data(now(start), &buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                conn.handle_timeout(now(start))
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => conn.handle_eof(now(start)),
        }
    }
}

/// One server-sent event carrying `frame` (one JSON text).
fn sse(frame: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(frame.len() + 8);
    for line in frame.split('\n') {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line.trim_end_matches('\r').as_bytes());
        out.push(b'\n');
    }
    out.push(b'\n');
    out
}

/// The frames after which a subscription is over.
fn ends_subscription(frame: &str) -> bool {
    let kind = serde_json::from_str::<Value>(frame)
        .ok()
        .and_then(|v| v["type"].as_str().map(str::to_owned));
    matches!(kind.as_deref(), Some("closed" | "unauthorized" | "refusal"))
}

/// `GET /api/stream?topic=T`: subscribes on a hub connection of its own
/// and relays every frame, until the hub ends the subscription, the hub
/// connection fails (`hale-admin.no_answer`), or the page goes away (the
/// page's unsubscribe), which closes the hub connection.
fn relay_stream(admin: &Admin, mut page: TcpStream, topic: &str) {
    let Target::Hub(authority) = &admin.remote.target else {
        return;
    };
    let mut head =
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"
            .to_vec();
    for (name, value) in SECURITY_HEADERS {
        head.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    // `retry`: should the page not close its source after the end, the
    // browser asks again a minute later, not every few seconds.
    head.extend_from_slice(b"Connection: close\r\n\r\nretry: 60000\n\n");
    if page.write_all(&head).is_err() {
        return;
    }
    let no_answer = |page: &mut TcpStream, reason: String| {
        let frame = json!({"type": "hale-admin.no_answer", "reason": reason}).to_string();
        let _ = page.write_all(&sse(&frame));
    };
    let mut hub = match HubConn::connect(authority, admin.remote.bearer.as_deref(), None) {
        Ok(h) => h,
        Err(e) => return no_answer(&mut page, format!("ws://{authority} did not answer: {e}")),
    };
    let subscribe = json!({"type": "subscribe", "topic": topic}).to_string();
    if let Err(e) = hub.send(&subscribe) {
        return no_answer(&mut page, format!("ws://{authority}: {e}"));
    }
    // The page sends nothing on an event stream: its read ends when the
    // page closes it, and then the hub connection is shut so the relay
    // below wakes and ends.
    let gone = Arc::new(std::sync::atomic::AtomicBool::new(false));
    if let (Ok(mut page_read), Ok(hub_socket)) = (page.try_clone(), hub.socket()) {
        let gone = gone.clone();
        std::thread::spawn(move || {
            let _ = page_read.set_read_timeout(None);
            let mut sink = [0u8; 512];
            while matches!(page_read.read(&mut sink), Ok(n) if n > 0) {}
            gone.store(true, Ordering::SeqCst);
            let _ = hub_socket.shutdown(Shutdown::Both);
        });
    }
    loop {
        match hub.next() {
            Ok(Incoming::Text(frame)) => {
                if page.write_all(&sse(&frame)).is_err() {
                    break;
                }
                if ends_subscription(&frame) {
                    hub.close();
                    break;
                }
            }
            Ok(Incoming::Closed(code)) => {
                no_answer(
                    &mut page,
                    format!("the hub closed the connection ({code}) without closed"),
                );
                break;
            }
            Err(e) => {
                if !gone.load(Ordering::SeqCst) {
                    let why = if e == ENDED {
                        format!("{e} without closed")
                    } else {
                        e
                    };
                    no_answer(&mut page, why);
                }
                break;
            }
        }
    }
    let _ = page.shutdown(Shutdown::Both);
}

/// A launch token of 32 bytes from the kernel's generator.
fn draw_token() -> io::Result<LaunchToken> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(LaunchToken::from_bytes(&bytes))
}

/// Runs `hale admin`; returns only when it cannot serve (the exit status).
pub fn main(args: &crate::hale_cli::cli::AdminArgs) -> i32 {
    let target = match Target::parse(&args.endpoint) {
        Ok(t) => t,
        Err(e) => return crate::hale_cli::cli::usage(&["admin"], &e),
    };
    let bearer = args
        .bearer
        .clone()
        .or_else(|| args.token.clone())
        .or_else(|| {
            std::env::var("HALE_API_BEARER")
                .ok()
                .filter(|t| !t.is_empty())
        })
        .or_else(|| {
            std::env::var("HALE_API_TOKEN")
                .ok()
                .filter(|t| !t.is_empty())
        });
    let listener = match TcpListener::bind(("127.0.0.1", args.port)) {
        Ok(l) => l,
        Err(e) => {
            eprintln!(
                "hale admin: cannot listen on 127.0.0.1:{}: {e}{}",
                args.port,
                if args.port != 0 {
                    " (--port 0 picks a free port)"
                } else {
                    ""
                }
            );
            return EXIT_BIND;
        }
    };
    let port = match listener.local_addr() {
        Ok(a) => a.port(),
        Err(e) => {
            eprintln!("hale admin: the listener has no address: {e}");
            return EXIT_BIND;
        }
    };
    let token = match draw_token() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("hale admin: cannot draw a launch token from /dev/urandom: {e}");
            return EXIT_BIND;
        }
    };
    let gate = Gate::new(port, token);
    crate::cli_support::print(&format!("{}\n", gate.launch_url()));
    eprintln!(
        "hale admin: the page for {} is served at http://127.0.0.1:{port}/ to whoever opens the URL above \
         (it carries the launch token: keep it to yourself); Ctrl-C stops it",
        args.endpoint
    );
    let admin = Arc::new(Admin::new(
        gate,
        Remote::new(target, args.endpoint.clone(), bearer),
    ));
    let active = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        let stream = match stream {
            Ok(s) => s,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => {
                // Out of descriptors, most likely: let some connections end.
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        if active.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
            drop(stream);
            continue;
        }
        active.fetch_add(1, Ordering::SeqCst);
        let (admin, held) = (admin.clone(), active.clone());
        let spawned = std::thread::Builder::new()
            .name("hale-admin-conn".into())
            .spawn(move || {
                // A panic is a bug; still, it ends this connection alone
                // and gives its place back.
                let served = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    serve_connection(&admin, stream)
                }));
                if served.is_err() {
                    eprintln!("hale admin: a connection's thread panicked; the page serves on");
                }
                held.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            active.fetch_sub(1, Ordering::SeqCst);
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_one_event_and_its_lines_stay_lines() {
        assert_eq!(
            sse(r#"{"type":"event"}"#),
            b"data: {\"type\":\"event\"}\n\n"
        );
        assert_eq!(sse("a\r\nb"), b"data: a\ndata: b\n\n");
    }

    #[test]
    fn closed_unauthorized_and_refusal_end_a_subscription() {
        for frame in [
            r#"{"type":"closed","reason":"shutting_down"}"#,
            r#"{"type":"unauthorized","topic":"Fills","reason":"revoked"}"#,
            r#"{"type":"refusal","topic":"Fills","refusal":{"kind":"unauthorized"}}"#,
        ] {
            assert!(ends_subscription(frame), "{frame}");
        }
        for frame in [
            r#"{"type":"event","seq":1}"#,
            r#"{"type":"subscribed"}"#,
            "x",
        ] {
            assert!(!ends_subscription(frame), "{frame}");
        }
    }

    #[test]
    fn drawn_tokens_are_64_hex_digits_and_differ() {
        let (a, b) = (draw_token().unwrap(), draw_token().unwrap());
        assert_eq!(a.as_str().len(), 64);
        assert!(a.as_str().bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
