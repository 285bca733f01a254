//! The NATS client machine (`core/src/wire/nats.rs`), holding three
//! subscriptions and a publish made before the connection, fed the input
//! as a server's bytes, then its EOF; then connected again and fed the
//! input once more.
//!
//! Checks, under the default options and under small ones (a 64-byte
//! buffer of publishes, echo off), chosen by the mode byte: the same
//! events and the same counts whether the server's bytes come whole, byte
//! by byte or in arbitrary pieces, and the same bytes written (when the
//! connection ended in a line of the server's, what was queued in the same
//! read is forgotten with the socket: a prefix of them); the events in
//! their only possible order (Connected at most once a connection, nothing
//! after Disconnected, which ends every connection the EOF finds open); a
//! Message names one of the subscriptions, a subject without spaces and a
//! payload within the server's `max_payload`; the input held between reads
//! within the longest line or `MSG` the limits allow; the publishes held
//! within `max_buffered`; everything the client writes is a client
//! protocol stream (CONNECT with JSON first, then SUB, UNSUB, PUB with its
//! payload, PING, PONG), the held publish only once Connected;
//! a reconnection writes CONNECT, every subscription and a PING before
//! anything else; the timer does nothing before the deadline
//! `poll_timeout` names, and acts at it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use limen_core::wire::machine::Machine;
use limen_core::wire::nats::{NatsClient, NatsEvent, Options, DEFAULT_MAX_PAYLOAD, MAX_INFO_LINE};
use limen_fuzz::{feeds, hex, pieces};

const SUBJECTS: [&str; 3] = ["a.b", "a.*", "c.>"];

#[derive(Debug, PartialEq)]
struct Run {
    events: Vec<NatsEvent>,
    output: Vec<u8>,
    closed: bool,
    dropped: u64,
    buffered: usize,
}

fn client(options: &Options) -> NatsClient {
    let mut c = NatsClient::new(0, options.clone());
    for s in SUBJECTS {
        c.subscribe(s).expect("a valid subject");
    }
    c.publish("x.y", b"held").expect("room for one");
    c
}

/// Feeds `feed`, taking the events and all output after each piece, and
/// holding the input buffer to the limits.
fn drive(c: &mut NatsClient, feed: &[&[u8]], events: &mut Vec<NatsEvent>, output: &mut Vec<u8>) {
    for piece in feed {
        c.handle_data(0, piece);
        events.extend(std::iter::from_fn(|| c.poll_event()));
        let payload = c.max_payload().unwrap_or(DEFAULT_MAX_PAYLOAD);
        let line = c.max_control_line().max(MAX_INFO_LINE);
        assert!(
            c.read_buffered() <= line.max(payload) + 2,
            "{} bytes held",
            c.read_buffered()
        );
        output.extend_from_slice(c.pending_output());
        let n = c.pending_output().len();
        c.consume_output(0, n);
    }
}

fn run(options: &Options, feed: &[&[u8]]) -> Run {
    let mut c = client(options);
    let mut events = Vec::new();
    let mut output = Vec::new();
    drive(&mut c, feed, &mut events, &mut output);
    c.handle_eof(0);
    events.extend(std::iter::from_fn(|| c.poll_event()));
    assert!(c.is_closed() && c.pending_output().is_empty());
    assert!(c.buffered() <= options.max_buffered);
    Run {
        events,
        output,
        closed: c.is_closed(),
        dropped: c.take_dropped(),
        buffered: c.buffered(),
    }
}

/// Reads `out` as a client's stream: its lines, a PUB's payload read with
/// its line.
fn client_lines(out: &[u8]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut at = 0;
    while at < out.len() {
        let end = at
            + out[at..]
                .windows(2)
                .position(|w| w == b"\r\n")
                .unwrap_or_else(|| panic!("a line without CRLF: {}", hex(&out[at..])));
        let line = std::str::from_utf8(&out[at..end]).expect("the client writes text lines");
        at = end + 2;
        let fields: Vec<&str> = line.split(' ').collect();
        match fields[0] {
            "CONNECT" => {
                let json: serde_json::Value =
                    serde_json::from_str(&line[8..]).expect("CONNECT's JSON");
                assert_eq!(json["verbose"], false);
                assert_eq!(json["protocol"], 1);
            }
            "SUB" => {
                assert_eq!(fields.len(), 3, "{line}");
                assert!(SUBJECTS.contains(&fields[1]), "{line}");
                fields[2].parse::<u64>().expect("a sid");
            }
            "UNSUB" => panic!("nothing was unsubscribed: {line}"),
            "PUB" => {
                assert_eq!(fields.len(), 3, "{line}");
                let n: usize = fields[2].parse().expect("a size");
                assert_eq!(&out[at + n..at + n + 2], b"\r\n");
                at += n + 2;
            }
            "PING" | "PONG" => assert_eq!(fields.len(), 1),
            _ => panic!("not a client line: {line}"),
        }
        lines.push(line.to_owned());
    }
    lines
}

fn check(options: &Options, data: &[u8]) {
    let all = feeds(data);
    // Fed byte by byte, the driver takes every byte the machine queues
    // before a line that ends the connection; fed in larger pieces, what
    // was queued in the piece that ended it is forgotten with the socket
    // (and a publish in it held again). So the bytes written, and the
    // bytes held, are the same across feeds when the EOF ended the
    // connection, and otherwise a prefix of the byte-by-byte run's.
    let bytewise = run(options, &all[1]);
    let eof = matches!(
        bytewise.events.last(),
        Some(NatsEvent::Disconnected { reason }) if reason == "the server closed the connection"
    );
    for (i, feed) in all.iter().enumerate() {
        let other = run(options, feed);
        let pieces = || feed.iter().map(|p| hex(p)).collect::<Vec<_>>();
        assert_eq!(
            (&bytewise.events, bytewise.dropped, bytewise.closed),
            (&other.events, other.dropped, other.closed),
            "byte by byte and feed {i} differ; pieces: {:?}",
            pieces()
        );
        if eof {
            assert_eq!(bytewise, other, "feed {i} differs; pieces: {:?}", pieces());
        } else {
            assert!(
                bytewise.output.starts_with(&other.output),
                "feed {i} wrote what byte by byte did not; pieces: {:?}",
                pieces()
            );
        }
    }
    let first = bytewise;

    // The events' order: Disconnected once, last; Connected at most once,
    // before it; Messages name a subscription.
    let Run { events, output, .. } = &first;
    assert!(
        matches!(events.last(), Some(NatsEvent::Disconnected { .. })),
        "{events:?}"
    );
    let ends = events
        .iter()
        .filter(|e| matches!(e, NatsEvent::Disconnected { .. }))
        .count();
    assert_eq!(ends, 1, "{events:?}");
    let connected = events
        .iter()
        .filter(|e| matches!(e, NatsEvent::Connected { .. }))
        .count();
    assert!(connected <= 1, "{events:?}");
    for e in events {
        if let NatsEvent::Message {
            subject,
            sid,
            payload,
            reply,
        } = e
        {
            assert!((1..=3).contains(sid), "sid {sid}");
            assert!(!subject.is_empty() && !subject.contains([' ', '\t', '\r', '\n']));
            assert!(reply
                .as_ref()
                .is_none_or(|r| !r.is_empty() && !r.contains([' ', '\t', '\r', '\n'])));
            assert!(payload.len() < data.len());
        }
        if let NatsEvent::Connected { max_payload, .. } = e {
            assert!(*max_payload > 0);
        }
    }

    // The client's stream: CONNECT, the subscriptions and a PING first;
    // the held publish only once connected.
    let lines = client_lines(output);
    if !lines.is_empty() {
        assert!(lines[0].starts_with("CONNECT "), "{lines:?}");
        assert_eq!(lines[1..4], ["SUB a.b 1", "SUB a.* 2", "SUB c.> 3"]);
        assert_eq!(lines[4], "PING");
    }
    let held_sent = lines.iter().any(|l| l == "PUB x.y 4");
    if connected == 1 {
        // Written once connected, or dropped for a max_payload under 4.
        assert!(held_sent != (first.dropped == 1), "{lines:?} {events:?}");
    } else {
        assert!(!held_sent && first.buffered > 0, "{lines:?} {events:?}");
    }

    // A reconnection: the same handshake first, whatever came before.
    let mut c = client(options);
    let mut events = Vec::new();
    let mut output = Vec::new();
    drive(&mut c, &[data], &mut events, &mut output);
    c.handle_eof(0);
    while c.poll_event().is_some() {}
    c.reconnect(1);
    assert!(!c.is_closed() && c.pending_output().is_empty());
    let seed = limen_fuzz::fnv1a(data);
    events.clear();
    output.clear();
    drive(&mut c, &pieces(data, seed), &mut events, &mut output);
    let lines = client_lines(&output);
    if !lines.is_empty() {
        assert!(lines[0].starts_with("CONNECT "), "{lines:?}");
        assert_eq!(lines[1..5], ["SUB a.b 1", "SUB a.* 2", "SUB c.> 3", "PING"]);
    }

    // The timer: nothing before its deadline, a PING or the end at it.
    if let Some(deadline) = c.poll_timeout() {
        let before = c.pending_output().len();
        c.handle_timeout(deadline - 1);
        assert_eq!(c.pending_output().len(), before, "the timer acted early");
        assert!(c.poll_event().is_none());
        c.handle_timeout(deadline);
        assert!(
            c.is_closed() || c.pending_output().ends_with(b"PING\r\n"),
            "the timer did not act at its deadline"
        );
        assert_ne!(c.poll_timeout(), Some(deadline));
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, data)) = data.split_first() else {
        return;
    };
    let options = if mode & 1 == 0 {
        Options::default()
    } else {
        Options {
            name: "fuzz".into(),
            echo: false,
            max_buffered: 64,
            ..Options::default()
        }
    };
    check(&options, data);
});
