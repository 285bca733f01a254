//! The cost of one publish on a `udp::Hub` (issue #26): N subscribers,
//! each from an address and a caller of its own, then one event published
//! and every datagram handed to a socket that takes them all, on the
//! virtual clock. Prints, per N, the wall time of the publish and of its
//! sending, the machine's steps, and the time of `stop()` and its
//! `closed` datagrams. The limits are raised to hold 100,000 subscribers
//! (the default caps at 16,384, which the last line shows refusing).
//!
//! `cargo run --release -p limen-core --example udp_publish`

use std::time::Instant;

use limen_core::hale::runtime::{Describer, Principal, RoleHierarchy, RoleTable, TokenTable};
use limen_core::wire::udp::{Hub, Limits};
use limen_core::wire::ws::{HubLimits, HubSpec, OnFull, StreamSpec};

struct Doc;

impl Describer for Doc {
    fn describe(&self, _: &Principal, _: &[String], _: &[usize]) -> Vec<u8> {
        b"{}".to_vec()
    }
}

fn hub(n: usize, limits: Limits) -> Hub<u32> {
    let spec = HubSpec::new(
        "h",
        vec![StreamSpec {
            topic: "Fills".into(),
            bound: 64,
            on_full: OnFull::DropOld,
            requires: vec!["operator".into()],
        }],
        RoleHierarchy::flat(),
        HubLimits::default(),
    )
    .unwrap();
    let mut tokens = TokenTable::new(None);
    let mut roles = RoleTable::new();
    for i in 0..n {
        tokens = tokens.with(&format!("t{i}"), &format!("p{i}"));
        roles = roles.grant(&format!("p{i}"), "operator");
    }
    Hub::new(spec, Some(Box::new(tokens)), Box::new(roles), Box::new(Doc)).with_limits(limits)
}

fn drain(h: &mut Hub<u32>, now: u64) -> usize {
    let mut n = 0;
    while let Some((_, d)) = h.pending_transmit(now) {
        let len = d.len();
        h.consume_transmit(now, len);
        n += 1;
    }
    n
}

fn main() {
    let raised = Limits {
        max_subscribers: 100_000,
        max_per_host: 100_000,
        max_per_caller: 100_000,
        ..Limits::default()
    };
    for (n, limits) in [
        (1_000, raised),
        (10_000, raised),
        (100_000, raised),
        (100_000, Limits::default()),
    ] {
        let mut h = hub(n, limits);
        let mut now = 1;
        for i in 0..n {
            now += 1_000_000;
            let d = format!(r#"{{"type":"subscribe","topic":"Fills","id":1,"token":"t{i}"}}"#);
            h.handle_datagram(now, now, u32::try_from(i).unwrap(), d.as_bytes());
            drain(&mut h, now);
        }
        let held = h.subscribers();
        let steps = h.steps();
        let t = Instant::now();
        h.publish(now, "Fills", r#"{"order":1,"qty":1,"price":2}"#);
        let sent = drain(&mut h, now);
        let publish = t.elapsed();
        let publish_steps = h.steps() - steps;
        let t = Instant::now();
        h.stop(now);
        let closed = drain(&mut h, now);
        let stop = t.elapsed();
        println!(
            "asked {n:>6} held {held:>6} (max_subscribers {:>6}): publish+send {sent:>6} datagrams {:>8.2} ms, {publish_steps:>7} steps; stop {closed:>6} closed {:>8.2} ms",
            limits.max_subscribers,
            publish.as_secs_f64() * 1e3,
            stop.as_secs_f64() * 1e3,
        );
    }
}
