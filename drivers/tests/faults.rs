//! Faults that must stay local, provoked on a live `hale demo`: a flood of
//! connections past the process's descriptor limit, and a signal while it
//! is flooded.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use support::demo_limited;

/// The CPU time (user + system, in clock ticks) the process `pid` has used.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The command may hold spaces: fields are counted after its `)`.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// One `Orders::place` call; its status, or `None` when it is not answered
/// within `limit`.
fn place(addr: &str, limit: Duration) -> Option<u16> {
    let mut s = TcpStream::connect_timeout(&addr.parse().unwrap(), limit).ok()?;
    s.set_read_timeout(Some(limit)).unwrap();
    let body = r#"{"symbol":"ACME","qty":10,"limit":12500}"#;
    write!(
        s,
        "POST /call/Orders::place HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t-alice\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    out.get(9..12)?.parse().ok()
}

#[test]
fn a_descriptor_flood_pauses_accepting_without_spinning_and_is_served_again_once_released() {
    // Public's cap set past the descriptor limit (the default would fit
    // in it, leaving nothing to exhaust): the flood meets EMFILE.
    let mut d = demo_limited(
        "fd-flood",
        &["--loops", "2", "--max-connections", "public=4096"],
        Some(64),
    );
    assert_eq!(place(&d.public, Duration::from_secs(5)), Some(200));
    // 120 connections held: the demo takes what its 64 descriptors allow,
    // and every accept after that fails with EMFILE.
    let mut held: Vec<TcpStream> = (0..120)
        .filter_map(|_| {
            TcpStream::connect_timeout(&d.public.parse().unwrap(), Duration::from_secs(1)).ok()
        })
        .collect();
    assert!(held.len() >= 100, "{} connections held", held.len());
    std::thread::sleep(Duration::from_millis(300));
    // Out of descriptors, the demo waits: it does not spin on accept.
    let before = cpu_ticks(d.pid());
    std::thread::sleep(Duration::from_secs(1));
    let spent = cpu_ticks(d.pid()) - before;
    assert!(
        spent < 30,
        "the flooded demo used {spent} ticks of CPU in a second"
    );
    // The clients let go of 100: the demo serves again within a second.
    held.truncate(held.len() - 100);
    let released = Instant::now();
    let mut answered = None;
    while released.elapsed() < Duration::from_secs(3) {
        if let Some(status) = place(&d.public, Duration::from_millis(500)) {
            answered = Some((status, released.elapsed()));
            break;
        }
    }
    let (status, after) = answered.expect("the demo serves again after the flood");
    assert_eq!(status, 200);
    assert!(
        after < Duration::from_secs(1),
        "served again {after:?} after the clients let go"
    );
    // A signal stops it, flooded or not.
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &d.pid().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = d.wait_exit(Duration::from_secs(15));
    assert!(status.is_some(), "SIGTERM did not stop the demo");
    drop(held);
}
