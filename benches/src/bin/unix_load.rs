//! The Unix bench's two halves, std only:
//!
//! - `unix-load echo PATH`: a bare line-echo server on a Unix socket (a
//!   thread per connection, each line written back as it is read): the peer
//!   `hale demo`'s admin exposure is compared with.
//! - `unix-load drive PATH [--in-flight N] [--seconds S] [--line TEXT]`: one
//!   connection keeping N requests in flight for S seconds; prints the
//!   calls answered per second.
#![forbid(unsafe_code)]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::time::{Duration, Instant};

fn echo(path: &str) {
    let _ = std::fs::remove_file(path);
    let listener = UnixListener::bind(path).expect("bind");
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        std::thread::spawn(move || {
            let mut w = conn.try_clone().expect("clone");
            let mut r = BufReader::new(conn);
            let mut line = Vec::new();
            loop {
                line.clear();
                match r.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        if w.write_all(&line).is_err() {
                            return;
                        }
                    }
                }
            }
        });
    }
}

fn drive(path: &str, in_flight: usize, seconds: u64, line: &str) {
    let conn = UnixStream::connect(path).expect("connect");
    let mut w = conn.try_clone().expect("clone");
    let mut r = BufReader::new(conn);
    let mut request = line.as_bytes().to_vec();
    request.push(b'\n');
    for _ in 0..in_flight {
        w.write_all(&request).expect("write");
    }
    let started = Instant::now();
    let until = started + Duration::from_secs(seconds);
    let mut answered = 0u64;
    let mut reply = Vec::new();
    let mut stopping = false;
    let mut outstanding = in_flight;
    while outstanding > 0 {
        reply.clear();
        if r.read_until(b'\n', &mut reply).expect("read") == 0 {
            panic!("the server closed the connection after {answered} replies");
        }
        outstanding -= 1;
        answered += 1;
        if !stopping && Instant::now() >= until {
            stopping = true;
        }
        if !stopping {
            w.write_all(&request).expect("write");
            outstanding += 1;
        }
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{:.0} calls/s ({answered} in {secs:.2} s, {in_flight} in flight)",
        answered as f64 / secs
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    match args.first().map(String::as_str) {
        Some("echo") => echo(&args[1]),
        Some("drive") => drive(
            &args[1],
            flag("--in-flight")
                .and_then(|n| n.parse().ok())
                .unwrap_or(64),
            flag("--seconds").and_then(|n| n.parse().ok()).unwrap_or(5),
            &flag("--line").unwrap_or_else(|| {
                r#"{"call":"Ledger::rebalance","payload":{"book":"main"},"id":1}"#.into()
            }),
        ),
        _ => {
            eprintln!("usage: unix-load echo PATH | unix-load drive PATH [--in-flight N] [--seconds S] [--line TEXT]");
            std::process::exit(2);
        }
    }
}
