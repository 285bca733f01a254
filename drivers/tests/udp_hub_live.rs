//! The datagram hub under attack, live (issue #26): `hale demo --udp-hub`
//! as a process, a plain `std::net::UdpSocket` flooding it with one-byte
//! datagrams and another subscribing many ids, a well-behaved subscriber
//! beside them. Garbage is not answered (no reflection, no queue), a
//! subscriber past the caps is refused `full`, and the well-behaved one is
//! served through it all and receives `closed` at SIGTERM. Bounded in
//! count (20,000 datagrams) and time (every read has a deadline).

use std::net::UdpSocket;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod support;

use support::demo;

/// How many one-byte datagrams the flood sends.
const FLOOD: usize = 20_000;

fn socket() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    s
}

fn recv(s: &UdpSocket) -> Option<Value> {
    let mut buf = vec![0u8; 65_536];
    let (n, _) = s.recv_from(&mut buf).ok()?;
    Some(serde_json::from_slice(&buf[..n]).expect("a datagram is JSON"))
}

#[test]
fn a_flood_of_garbage_is_not_answered_and_the_caps_refuse_full_while_a_subscriber_is_served() {
    let d = demo("udp-attack", &["--udp-hub", "127.0.0.1:0"]);
    assert!(!d.udp_hub.is_empty(), "the banner names the datagram hub");
    let hub = d.udp_hub.as_str();

    let flood = socket();
    for _ in 0..FLOOD {
        // The kernel may refuse a send when its buffer is full: the flood
        // is what it is.
        let _ = flood.send_to(b"x", hub);
    }

    // A well-behaved subscriber, after the flood: asks again until it is
    // answered (a datagram may be lost; subscribed again changes nothing).
    let good = socket();
    good.set_read_timeout(Some(Duration::from_millis(250)))
        .unwrap();
    let subscribe = json!({"type": "subscribe", "topic": "Fills", "id": "good", "token": "t-dave"});
    let deadline = Instant::now() + Duration::from_secs(20);
    let answer = loop {
        assert!(
            Instant::now() < deadline,
            "the subscriber was never answered"
        );
        good.send_to(subscribe.to_string().as_bytes(), hub).unwrap();
        if let Some(answer) = recv(&good) {
            break answer;
        }
    };
    assert_eq!(
        answer,
        json!({"type": "subscribed", "id": "good", "topic": "Fills"})
    );

    // The flood's socket was answered nothing: every datagram before the
    // subscriber's was read before its answer was written.
    flood
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut reflected = 0;
    let mut buf = vec![0u8; 65_536];
    while let Ok((n, _)) = flood.recv_from(&mut buf) {
        reflected += n;
    }
    assert_eq!(
        reflected, 0,
        "{reflected} bytes answered to {FLOOD} bytes of garbage"
    );

    // One host, one caller: past the caps (256 each by default, the good
    // subscriber among them) a subscribe is refused `full`.
    let many = socket();
    let (mut subscribed, mut full) = (0, 0);
    for i in 0..260 {
        let d = json!({"type": "subscribe", "topic": "Fills", "id": i, "token": "t-dave"});
        many.send_to(d.to_string().as_bytes(), hub).unwrap();
        let Some(answer) = recv(&many) else {
            continue;
        };
        match answer["type"].as_str() {
            Some("subscribed") => subscribed += 1,
            Some("refusal") if answer["refusal"]["kind"] == "full" => full += 1,
            _ => panic!("unexpected {answer}"),
        }
    }
    assert_eq!((subscribed, full), (255, 5));

    // SIGTERM: the subscriber is sent `closed`, and the demo exits.
    let status = Command::new("kill")
        .args(["-TERM", &d.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    good.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let closed = loop {
        let Some(v) = recv(&good) else {
            panic!("no closed within the deadline");
        };
        if v["type"] != "event" {
            break v;
        }
    };
    assert_eq!(
        closed,
        json!({"type": "closed", "id": "good", "reason": "shutting_down"})
    );
    let mut d = d;
    assert!(
        d.wait_exit(Duration::from_secs(10)).is_some(),
        "the demo did not exit at SIGTERM"
    );
}
