//! The session against real HTTP/2 clients from nghttp2's own tools
//! (`nghttp`, `h2load`, Debian's nghttp2-client, installed by
//! `scripts/install-peers`), over a socket this test serves with a
//! blocking loop; and against hand-made frames for the errors. A missing
//! client skips with a message, unless `LIMEN_REQUIRE_PEERS=1`.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::thread;

use limen_nghttp2::{code, H2Event, Limits, Session};

fn have(tool: &str) -> bool {
    if Command::new(tool).arg("--version").output().is_ok() {
        return true;
    }
    let required = std::env::var("LIMEN_REQUIRE_PEERS").as_deref() == Ok("1");
    assert!(!required, "{tool} missing; run scripts/install-peers");
    eprintln!("skipped: {tool} missing; run scripts/install-peers");
    false
}

/// Serves one connection: `/echo` answers the body back with HEADERS,
/// DATA and a trailer `grpc-status: 0`; `/only` answers one HEADERS frame
/// with END_STREAM (`grpc-status: 3`). Returns the paths it was asked.
fn serve(mut socket: TcpStream) -> Vec<String> {
    let mut session = Session::server(Limits::default()).unwrap();
    let mut paths: HashMap<i32, String> = HashMap::new();
    let mut bodies: HashMap<i32, Vec<u8>> = HashMap::new();
    let mut asked = Vec::new();
    let mut buf = vec![0u8; 16384];
    loop {
        // Write everything queued first.
        loop {
            let out = {
                session.flush().unwrap();
                session.pending_output()
            };
            if out.is_empty() {
                break;
            }
            let n = out.len();
            socket.write_all(out).unwrap();
            session.consume_output(0, n);
        }
        if session.is_done() {
            return asked;
        }
        let n = match socket.read(&mut buf) {
            Ok(0) | Err(_) => return asked,
            Ok(n) => n,
        };
        if session.handle_data(0, &buf[..n]).is_err() {
            continue;
        }
        while let Some(event) = session.poll_event() {
            match event {
                H2Event::Headers {
                    stream,
                    fields,
                    end_stream,
                } => {
                    let path = fields
                        .iter()
                        .find(|(n, _)| n == b":path")
                        .map(|(_, v)| String::from_utf8(v.clone()).unwrap())
                        .unwrap_or_default();
                    asked.push(path.clone());
                    paths.insert(stream, path);
                    if end_stream {
                        answer(&mut session, stream, &paths, &mut bodies);
                    }
                }
                H2Event::Data { stream, bytes } => {
                    session.consume(stream, bytes.len()).unwrap();
                    bodies.entry(stream).or_default().extend_from_slice(&bytes);
                }
                H2Event::EndStream { stream } => answer(&mut session, stream, &paths, &mut bodies),
                _ => {}
            }
        }
    }
}

fn answer(
    session: &mut Session,
    stream: i32,
    paths: &HashMap<i32, String>,
    bodies: &mut HashMap<i32, Vec<u8>>,
) {
    let body = bodies.remove(&stream).unwrap_or_default();
    match paths.get(&stream).map(String::as_str) {
        Some("/only") => session
            .respond_headers_only(
                stream,
                &[
                    (b":status", b"200"),
                    (b"content-type", b"application/grpc"),
                    (b"grpc-status", b"3"),
                ],
            )
            .unwrap(),
        _ => session
            .respond(
                stream,
                &[(b":status", b"200"), (b"content-type", b"application/grpc")],
                body,
                vec![(b"grpc-status".to_vec(), b"0".to_vec())],
            )
            .unwrap(),
    }
}

/// A listener serving each connection it accepts on a thread.
fn server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    thread::spawn(move || {
        for socket in listener.incoming() {
            let socket = socket.unwrap();
            thread::spawn(move || serve(socket));
        }
    });
    addr
}

fn nghttp(args: &[&str]) -> String {
    let out = Command::new("nghttp").args(args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "nghttp {args:?}: {text}");
    text
}

#[test]
fn a_response_is_headers_data_and_trailers_and_trailers_only_is_one_headers_frame() {
    if !have("nghttp") {
        return;
    }
    let addr = server();
    let dir = std::env::temp_dir().join(format!("limen-h2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let body = dir.join("body");
    std::fs::write(&body, b"\0\0\0\0\x05hello").unwrap();

    let echo = nghttp(&[
        "-v",
        "-d",
        body.to_str().unwrap(),
        &format!("http://{addr}/echo"),
    ]);
    // The server's SETTINGS carry the limits.
    assert!(
        echo.contains("[SETTINGS_MAX_CONCURRENT_STREAMS(0x03):4096]"),
        "{echo}"
    );
    // HEADERS without END_STREAM (flags END_HEADERS, 0x04), the body in
    // DATA (no flag), the trailers ending it (END_STREAM | END_HEADERS).
    let frames: Vec<&str> = echo
        .lines()
        .map(|l| l.rsplit('[').next().unwrap_or(l))
        .filter(|l| l.contains("recv HEADERS frame") || l.contains("recv DATA frame"))
        .collect();
    assert_eq!(frames.len(), 3, "{echo}");
    assert!(
        frames[0].contains("HEADERS") && frames[0].contains("flags=0x04"),
        "{echo}"
    );
    assert!(
        frames[1].contains("DATA") && frames[1].contains("flags=0x00"),
        "{echo}"
    );
    assert!(
        frames[2].contains("HEADERS") && frames[2].contains("flags=0x05"),
        "{echo}"
    );
    assert!(echo.contains("grpc-status: 0"), "{echo}");
    assert!(echo.contains("length=10"), "the body echoed whole: {echo}");

    let only = nghttp(&[
        "-v",
        "-d",
        body.to_str().unwrap(),
        &format!("http://{addr}/only"),
    ]);
    let frames: Vec<&str> = only
        .lines()
        .filter(|l| l.contains("recv HEADERS frame") || l.contains("recv DATA frame"))
        .collect();
    assert_eq!(frames.len(), 1, "{only}");
    assert!(frames[0].contains("flags=0x05"), "{only}");
    assert!(only.contains("grpc-status: 3"), "{only}");
}

#[test]
fn many_streams_on_few_connections_are_each_answered() {
    if !have("h2load") {
        return;
    }
    let addr = server();
    let dir = std::env::temp_dir().join(format!("limen-h2load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let body = dir.join("body");
    // Past one 16 KiB DATA frame and the default 64 KiB window, so flow
    // control and consume are exercised.
    std::fs::write(&body, vec![7u8; 100_000]).unwrap();
    let out = Command::new("h2load")
        .args(["-n", "400", "-c", "4", "-m", "16", "-d"])
        .arg(&body)
        .arg(format!("http://{addr}/echo"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("400 succeeded, 0 failed, 0 errored"),
        "{text}"
    );
}

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const EMPTY_SETTINGS: &[u8] = &[0, 0, 0, 4, 0, 0, 0, 0, 0];

/// The GOAWAY frames in `bytes` (a run of whole frames): their error codes.
fn goaways(bytes: &[u8]) -> Vec<u32> {
    let mut codes = Vec::new();
    let mut at = 0;
    while at + 9 <= bytes.len() {
        let len = u32::from_be_bytes([0, bytes[at], bytes[at + 1], bytes[at + 2]]) as usize;
        if bytes[at + 3] == 7 {
            let p = &bytes[at + 9..at + 9 + len];
            codes.push(u32::from_be_bytes([p[4], p[5], p[6], p[7]]));
        }
        at += 9 + len;
    }
    codes
}

#[test]
fn a_frame_the_protocol_forbids_is_a_goaway_with_its_error() {
    let mut session = Session::server(Limits::default()).unwrap();
    session.handle_data(0, PREFACE).unwrap();
    session.handle_data(0, EMPTY_SETTINGS).unwrap();
    // DATA on stream 0 is a connection error of type PROTOCOL_ERROR.
    let _ = session.handle_data(0, &[0, 0, 1, 0, 0, 0, 0, 0, 0, b'x']);
    let out = {
        session.flush().unwrap();
        session.pending_output()
    }
    .to_vec();
    assert_eq!(goaways(&out), [code::PROTOCOL_ERROR], "{out:02x?}");
    session.consume_output(0, out.len());
    assert!(session.is_done());
}

#[test]
fn a_peer_that_does_not_speak_http2_is_an_error_and_nothing_is_taken() {
    let mut session = Session::server(Limits::default()).unwrap();
    let err = session
        .handle_data(0, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap_err();
    assert!(err.code < 0, "{err}");
    assert!(session.poll_event().is_none());
}

#[test]
fn go_away_lets_the_open_streams_finish() {
    let mut session = Session::server(Limits::default()).unwrap();
    session.handle_data(0, PREFACE).unwrap();
    session.handle_data(0, EMPTY_SETTINGS).unwrap();
    // HEADERS on stream 1, END_STREAM|END_HEADERS, HPACK: :method POST
    // (idx 3), :scheme http (6), :path / (4), :authority "a" (literal,
    // indexed name 1).
    let block = [0x83, 0x86, 0x84, 0x41, 0x01, b'a'];
    let mut frame = vec![0, 0, block.len() as u8, 1, 0x05, 0, 0, 0, 1];
    frame.extend_from_slice(&block);
    session.handle_data(0, &frame).unwrap();
    let mut streams = Vec::new();
    while let Some(e) = session.poll_event() {
        if let H2Event::Headers {
            stream, end_stream, ..
        } = e
        {
            assert!(end_stream);
            streams.push(stream);
        }
    }
    assert_eq!(streams, [1]);
    session.go_away(code::NO_ERROR).unwrap();
    session
        .respond(1, &[(b":status", b"200")], b"ok".to_vec(), Vec::new())
        .unwrap();
    let out = {
        session.flush().unwrap();
        session.pending_output()
    }
    .to_vec();
    assert_eq!(goaways(&out), [code::NO_ERROR]);
    // The response follows the GOAWAY: HEADERS and DATA on stream 1.
    assert!(out.windows(2).any(|w| w == b"ok"), "{out:02x?}");
}
