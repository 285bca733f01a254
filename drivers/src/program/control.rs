//! The control socket of a served program (`--control PATH`): one line a
//! command, each answered `ok` or `error: …` — the protocol `hale demo
//! --control` speaks, so `limen-conformance check` provokes every outcome
//! of any served program. The socket's file permissions are its access
//! control.
//!
//! - `gate <instance>` / `open <instance>`: hold a receiver's calls before
//!   they reach its handler, and let them go (`full`, `shutting_down`);
//! - `drain <instance>` / `resume <instance>`: the receiver's members
//!   refused `unavailable`, and back;
//! - `grant|revoke <principal> <role> [<source>]`: a role source changed
//!   (every role source when none is named), a new revision;
//! - `expire <token> <ms>`: a bearer credential given an expiry;
//! - `reload`: the identity files read again, as SIGHUP does;
//! - `publish <topic> <json>`: an event published on a topic the program
//!   declares, its payload held to the topic's shape (`hale publish`);
//! - `hub`: each hub listener's counts, in the order served (`ok events=E
//!   subscribers=S connections=C`, one triple per listener, separated by
//!   `;`);
//! - `broker`: the link to the program's other nodes (`ok connected=0|1
//!   published=N received=N dropped=N refused=N revisions=N
//!   connections=N`, [`super::broker::BrokerReport`]), `error: no broker`
//!   when none is named;
//! - `stop`: the spec's `stop()`, after the drain when `--drain-grace` gives
//!   one (the health checks answer 503 meanwhile).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;
use std::path::Path;

use limen_core::hale::runtime::{Completion, Receiver, ServedContext};

use super::broker::Broker;
use super::hubs::Publisher;
use super::sources::Sources;
use crate::serve::hub::HubHandle;
use crate::serve::{Command, StopHandle, WorkerId};

/// One receiver instance as the control socket steers it.
#[derive(Clone, Debug)]
pub struct Instance {
    /// Its worker.
    pub worker: WorkerId,
    /// Its gate.
    pub gate: Gate,
}

/// A gate the control socket can hold shut (`gate`/`open`): while shut, a
/// receiver's call waits before it starts.
pub type Gate = std::sync::Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>;

/// Waits while `gate` is held shut.
pub fn wait_open(gate: &Gate) {
    let (closed, wake) = &**gate;
    let mut shut = closed.lock().unwrap_or_else(|e| e.into_inner());
    while *shut {
        shut = wake.wait(shut).unwrap_or_else(|e| e.into_inner());
    }
}

/// A receiver behind a gate the control socket holds, so a test decides
/// when its handlers run.
pub struct Gated {
    inner: Box<dyn Receiver + Send>,
    gate: Gate,
}

impl Gated {
    /// `inner` behind `gate`.
    pub fn new(inner: Box<dyn Receiver + Send>, gate: Gate) -> Gated {
        Gated { inner, gate }
    }
}

impl Receiver for Gated {
    fn call(
        &mut self,
        member: &str,
        payload: &serde_json::Value,
        ctx: &ServedContext,
    ) -> Completion {
        wait_open(&self.gate);
        self.inner.call(member, payload, ctx)
    }
}

/// The instance `name` (`orders` or `self.orders`).
fn find_instance<'a>(
    instances: &'a BTreeMap<String, Instance>,
    name: &str,
) -> Result<&'a Instance, String> {
    instances
        .get(name.strip_prefix("self.").unwrap_or(name))
        .ok_or_else(|| format!("no receiver instance `{name}`"))
}

/// Acts on one line.
fn act(
    line: &str,
    instances: &BTreeMap<String, Instance>,
    stop: &StopHandle,
    sources: &Sources,
    publisher: &Publisher,
) -> Result<(), String> {
    if let Some(rest) = line.strip_prefix("publish ") {
        let (topic, payload) = rest
            .trim_start()
            .split_once(char::is_whitespace)
            .ok_or("publish TOPIC JSON")?;
        return publisher.publish(topic, payload.trim()).map(|_| ());
    }
    let words: Vec<&str> = line.split_whitespace().collect();
    let find = |name: &str| find_instance(instances, name);
    match words.as_slice() {
        ["gate", name] => {
            *find(name)?.gate.0.lock().unwrap_or_else(|e| e.into_inner()) = true;
            Ok(())
        }
        ["drain", name] => {
            stop.command(Command::Drain(find(name)?.worker));
            Ok(())
        }
        ["resume", name] => {
            stop.command(Command::Resume(find(name)?.worker));
            Ok(())
        }
        ["grant", principal, role] => sources.grant(principal, role, None),
        ["grant", principal, role, source] => sources.grant(principal, role, Some(source)),
        ["revoke", principal, role] => sources.revoke(principal, role, None),
        ["revoke", principal, role, source] => sources.revoke(principal, role, Some(source)),
        ["expire", token, ms] => {
            let ms: u64 = ms
                .parse()
                .map_err(|_| format!("`{ms}` is not a number of milliseconds"))?;
            sources.expire(token, ms)
        }
        ["reload"] => {
            let errors = sources.reload(true);
            if errors.is_empty() {
                Ok(())
            } else {
                Err(errors.join("; "))
            }
        }
        _ => Err(format!(
            "unknown control `{}`",
            // A line may hold a credential (`expire TOKEN`): name the verb.
            words.first().copied().unwrap_or("")
        )),
    }
}

/// The `hub` line's answer: each hub listener's counts, in the order
/// served.
fn hub_report(hubs: &[HubHandle]) -> String {
    if hubs.is_empty() {
        return "error: no hub is served\n".to_owned();
    }
    let counts: Vec<String> = hubs
        .iter()
        .map(|h| match h.report() {
            Some(r) => format!(
                "events={} subscribers={} connections={}",
                r.events, r.subscribers, r.connections
            ),
            None => "ended".to_owned(),
        })
        .collect();
    format!("ok {}\n", counts.join("; "))
}

/// The `broker` line's answer.
fn broker_report(broker: Option<&Broker>) -> String {
    let Some(b) = broker else {
        return "error: no broker\n".to_owned();
    };
    let r = b.report();
    format!(
        "ok connected={} published={} received={} dropped={} refused={} revisions={} connections={}\n",
        u8::from(r.connected),
        r.published,
        r.received,
        r.dropped,
        r.refused,
        r.revisions,
        r.connections
    )
}

/// What a control connection steers.
struct Steered {
    instances: BTreeMap<String, Instance>,
    stop: StopHandle,
    sources: Sources,
    publisher: Publisher,
    hubs: Vec<HubHandle>,
    broker: Option<Broker>,
}

/// One control connection: each line answered in turn.
fn session(conn: std::os::unix::net::UnixStream, steered: &Steered) {
    let Steered {
        instances,
        stop,
        sources,
        publisher,
        hubs,
        broker,
    } = steered;
    let Ok(mut out) = conn.try_clone() else {
        return;
    };
    for line in BufReader::new(conn).lines() {
        let Ok(line) = line else { break };
        let words: Vec<&str> = line.split_whitespace().collect();
        // Answered before they act: each may let the server finish
        // stopping, and its process end, at once.
        match words.as_slice() {
            ["hub"] => {
                if out.write_all(hub_report(hubs).as_bytes()).is_err() {
                    break;
                }
                continue;
            }
            ["broker"] => {
                if out
                    .write_all(broker_report(broker.as_ref()).as_bytes())
                    .is_err()
                {
                    break;
                }
                continue;
            }
            ["stop"] => {
                if out.write_all(b"ok\n").is_err() {
                    break;
                }
                // A drain first when the node has a grace (`--drain-grace`):
                // the balancer takes it out before its queue is refused.
                stop.drain_then_stop();
                continue;
            }
            ["open", name] => {
                let i = match find_instance(instances, name) {
                    Ok(i) => i,
                    Err(e) => {
                        if out.write_all(format!("error: {e}\n").as_bytes()).is_err() {
                            break;
                        }
                        continue;
                    }
                };
                if out.write_all(b"ok\n").is_err() {
                    break;
                }
                let (closed, wake) = &*i.gate;
                *closed.lock().unwrap_or_else(|e| e.into_inner()) = false;
                wake.notify_all();
                continue;
            }
            _ => {}
        }
        let reply = match act(&line, instances, stop, sources, publisher) {
            Ok(()) => "ok\n".to_owned(),
            Err(e) => format!("error: {e}\n"),
        };
        if out.write_all(reply.as_bytes()).is_err() {
            break;
        }
    }
}

/// Serves the control socket until the process ends, each connection on
/// a thread of its own: a handler process keeps one open to publish
/// through, and an operator's must not wait for it. `hubs` are the hub
/// listeners `hub` reports on, `broker` the link `broker` reports on.
pub fn serve(
    listener: UnixListener,
    path: &Path,
    instances: BTreeMap<String, Instance>,
    stop: StopHandle,
    (sources, publisher): (Sources, Publisher),
    hubs: Vec<HubHandle>,
    broker: Option<Broker>,
) {
    let steered = std::sync::Arc::new(Steered {
        instances,
        stop,
        sources,
        publisher,
        hubs,
        broker,
    });
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        let steered = steered.clone();
        let spawned = std::thread::Builder::new()
            .name("hale serve control".into())
            .spawn(move || session(conn, &steered));
        if let Err(e) = spawned {
            eprintln!("hale serve: a control connection refused: {e}");
        }
    }
    let _ = std::fs::remove_file(path);
}
