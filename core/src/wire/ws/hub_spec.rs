//! What a [`Hub`](super::Hub) serves: its stream rows, its limits, and the
//! frames of § Streams ("The ws frames") it writes.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::hale::model::Program;
use crate::hale::runtime::{Refusal, RoleHierarchy};
use crate::hale::serving::hierarchy;
use crate::wire::{http1, ws};
use crate::{Timestamp, SECOND};

/// The reason a spent credential's subscribe is refused (§ Streams: "a
/// spent credential admits nothing new").
pub const EXPIRED_REASON: &str = crate::hale::runtime::outcome::reasons::SPENT;

/// The reason of a refusal after `stop()`.
pub const STOPPING_REASON: &str = "the hub is stopping";

/// What became of one [`publish`](super::Hub::publish).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Published {
    /// Offered to this many subscriptions (each took a seq).
    Offered(usize),
    /// The payload does not fit the bus frame: it reaches no remote
    /// subscriber and takes no seq.
    TooLarge,
    /// The hub binds no stream for the topic.
    UnknownTopic,
    /// The hub has stopped: nothing is offered.
    Stopped,
}

/// How a subscription's queue sheds when it holds `bound` frames (a
/// stream row's `on_full:`; `refuse` is no policy of a stream).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnFull {
    /// Shed the oldest undelivered frame.
    DropOld,
    /// Shed the frame being published.
    DropNew,
}

impl OnFull {
    /// `drop_old` or `drop_new` as a row writes them.
    pub fn parse(name: &str) -> Option<OnFull> {
        match name {
            "drop_old" => Some(OnFull::DropOld),
            "drop_new" => Some(OnFull::DropNew),
            _ => None,
        }
    }
}

/// One stream row of the hub, as admission and delivery read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamSpec {
    /// The topic, as a subscribe names it (`Fills`).
    pub topic: String,
    /// The frames one subscription's queue holds at most.
    pub bound: usize,
    /// How the queue sheds.
    pub on_full: OnFull,
    /// The roles a subscriber must hold, as written.
    pub requires: Vec<String>,
}

/// The limits of a hub, each with the specification's value by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HubLimits {
    /// The WebSocket codec's (a message of at most 64 KiB).
    pub ws: ws::Limits,
    /// The HTTP request before the upgrade (a head of at most 64 KiB, 5 s of
    /// silence, 10 s in all).
    pub http: http1::Limits,
    /// How long one write may wait for the reader to take any of it before
    /// the connection is dropped (§ Streams: 5 s).
    pub stalled_write: Timestamp,
    /// How long the hub waits for the peer's close frame after its own
    /// (one second: RFC 6455 names no wait, a peer that speaks the
    /// protocol answers at once, and the specification's one bound on a
    /// teardown's wait is a second).
    pub close_wait: Timestamp,
    /// How long `stop()` waits in all for its connections to take what
    /// was queued, `closed` and the close frame, and to answer it; a
    /// connection still open then is dropped. One second: the hub's stop
    /// is also its teardown's (§ Streams, stop()), and § Serving bounds a
    /// teardown's wait at one second, "since a teardown may be the
    /// process's".
    pub teardown_wait: Timestamp,
    /// How long a connection whose upgrade named nobody (no credential, or
    /// one the bearer source refused) is held after its upgrade: each of
    /// its subscribes and calls is refused `unauthenticated`, so it is
    /// then closed (1008) rather than held for ever (10 s).
    pub anonymous_wait: Timestamp,
    /// The most connections the hub holds at once (4096, as the request
    /// loops' default); past it an accepted socket is closed at once,
    /// unless an unproven connection can make room.
    pub max_connections: usize,
    /// The most unproven connections the hub holds at once: those not yet
    /// upgraded and those whose upgrade named nobody (1024, a quarter of
    /// `max_connections`, so connections from peers who present no
    /// credential can never fill the hub). An accept past it (or past
    /// `max_connections`) drops the oldest unproven connection, one that
    /// named nobody before one still in its HTTP request.
    pub max_unproven: usize,
    /// The bus frame an event has to fit, in bytes on the wire (65,536).
    pub bus_frame: usize,
    /// The bus frame's header, in bytes (17): an event's encoded payload
    /// has `bus_frame - bus_header` bytes at most.
    pub bus_header: usize,
    /// The most stream rows a hub has (sixteen).
    pub max_streams: usize,
    /// The answers a connection may be owed before the hub stops reading
    /// it: its calls handed to the exposure and not yet answered, and the
    /// answers (refusals, `subscribed`, replies) waiting to be written. A
    /// client that sends and does not read, or sends calls faster than the
    /// exposure answers them, is held back, not buffered without bound:
    /// the frames it sent past the limit wait in its socket.
    pub max_answers: usize,
    /// The bytes a connection may have waiting to be written (pongs
    /// among them) before the hub stops reading it, as a Unix line
    /// connection's.
    pub max_output: usize,
}

impl Default for HubLimits {
    fn default() -> HubLimits {
        HubLimits {
            ws: ws::Limits::default(),
            http: http1::Limits::default(),
            stalled_write: 5 * SECOND,
            close_wait: SECOND,
            teardown_wait: SECOND,
            anonymous_wait: 10 * SECOND,
            max_connections: 4096,
            max_unproven: 1024,
            bus_frame: 65_536,
            bus_header: 17,
            max_streams: 16,
            max_answers: 64,
            max_output: 1 << 20,
        }
    }
}

/// What a hub serves: its name, its stream rows and their roles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HubSpec {
    /// The hub's name (`as:`).
    pub name: String,
    /// The stream rows, in the order the bindings are written.
    pub streams: Vec<StreamSpec>,
    /// Which roles include which.
    pub hierarchy: RoleHierarchy,
    /// The machine's limits.
    pub limits: HubLimits,
}

impl HubSpec {
    /// A hub of `streams`; more rows than `limits.max_streams`, a topic
    /// bound twice or a bound of 0 are refused, naming the row.
    pub fn new(
        name: &str,
        streams: Vec<StreamSpec>,
        hierarchy: RoleHierarchy,
        limits: HubLimits,
    ) -> Result<HubSpec, String> {
        if limits.max_unproven == 0 || limits.max_unproven >= limits.max_connections {
            return Err(format!(
                "hub `{name}` holds {} unproven connections of {} in all: at least one, and fewer than all, so a caller who presents a credential always finds room",
                limits.max_unproven, limits.max_connections
            ));
        }
        if limits.max_answers == 0 {
            return Err(format!(
                "hub `{name}` owes a connection at most 0 answers: it would read nothing"
            ));
        }
        if streams.len() > limits.max_streams {
            return Err(format!(
                "hub `{name}` binds {} streams: a hub has at most {} stream rows",
                streams.len(),
                limits.max_streams
            ));
        }
        for (i, s) in streams.iter().enumerate() {
            if streams[..i].iter().any(|t| t.topic == s.topic) {
                return Err(format!(
                    "hub `{name}` binds `{}` twice: a topic is one stream row",
                    s.topic
                ));
            }
            if s.bound == 0 {
                return Err(format!(
                    "stream `{}` on hub `{name}` has bound 0: a subscription holds at least one frame",
                    s.topic
                ));
            }
        }
        Ok(HubSpec {
            name: name.to_owned(),
            streams,
            hierarchy,
            limits,
        })
    }

    /// The hub `name` of `program`, its stream rows as the model reads them
    /// (the laws have admitted them: a row without its bound or `on_full`
    /// is refused here too).
    pub fn from_program(program: &Program, name: &str) -> Result<HubSpec, String> {
        let hub = program
            .hub(name)
            .ok_or_else(|| format!("the program has no hub `{name}`"))?;
        let mut streams = Vec::with_capacity(hub.streams.len());
        for row in &hub.streams {
            let topic = row.topic.name.clone();
            let bound = row
                .bound
                .ok_or_else(|| format!("stream `{topic}` on hub `{name}` states no bound"))?;
            let on_full = row
                .on_full
                .as_deref()
                .and_then(OnFull::parse)
                .ok_or_else(|| {
                    format!("stream `{topic}` on hub `{name}` states no on_full of drop_old or drop_new")
                })?;
            streams.push(StreamSpec {
                topic,
                bound: usize::try_from(bound).unwrap_or(usize::MAX),
                on_full,
                requires: row.requires.iter().map(|r| r.name.clone()).collect(),
            });
        }
        HubSpec::new(name, streams, hierarchy(program), HubLimits::default())
    }

    /// Every role the stream rows require, sorted, each once: what a
    /// description's `caller.roles` is chosen from.
    pub fn required_roles(&self) -> Vec<String> {
        let mut roles: Vec<String> = self
            .streams
            .iter()
            .flat_map(|s| s.requires.iter().cloned())
            .collect();
        roles.sort();
        roles.dedup();
        roles
    }

    /// The row of `topic`.
    pub fn stream(&self, topic: &str) -> Option<usize> {
        self.streams.iter().position(|s| s.topic == topic)
    }

    /// An event published on `topic` as every hub offers it, or why it is
    /// not offered: no such row, or over the bus frame (it then reaches no
    /// subscriber and takes no seq).
    pub(crate) fn offer(&self, topic: &str, payload: &str) -> Result<Arc<Offered>, Published> {
        let stream = self.stream(topic).ok_or(Published::UnknownTopic)?;
        if payload.len() + self.limits.bus_header > self.limits.bus_frame {
            return Err(Published::TooLarge);
        }
        Ok(Arc::new(Offered {
            stream,
            payload: payload.into(),
        }))
    }
}

/// One event as published, shared by every queue it is offered to.
#[derive(Debug)]
pub(crate) struct Offered {
    /// Its row.
    pub(crate) stream: usize,
    /// Its JSON text.
    pub(crate) payload: Box<str>,
}

/// Why a subscription ended without `stop()`: the `reason` of an
/// `unauthorized` frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invalidated {
    /// The credential reached its expiry.
    Expired,
    /// The row's requires no longer holds at a role-source revision.
    Revoked,
}

impl Invalidated {
    /// `expired` or `revoked`.
    pub fn as_str(self) -> &'static str {
        match self {
            Invalidated::Expired => "expired",
            Invalidated::Revoked => "revoked",
        }
    }
}

/// The frames a hub writes, as compact JSON text.
pub mod frames {
    use super::*;

    /// `{"type": "subscribed", "topic": T}`.
    pub fn subscribed(topic: &str) -> String {
        json!({"type": "subscribed", "topic": topic}).to_string()
    }

    /// `{"type": "refusal", "topic": T or null, "refusal": {…}}`.
    pub fn refusal(topic: Option<&str>, refusal: &Refusal) -> String {
        json!({"type": "refusal", "topic": topic, "refusal": refusal.to_json()}).to_string()
    }

    /// `{"type": "unauthorized", "topic": T, "reason": R}`.
    pub fn unauthorized(topic: &str, why: Invalidated) -> String {
        json!({"type": "unauthorized", "topic": topic, "reason": why.as_str()}).to_string()
    }

    /// `{"type": "closed", "reason": "shutting_down"}`.
    pub fn closed() -> String {
        json!({"type": "closed", "reason": "shutting_down"}).to_string()
    }

    /// `{"type": "event", "topic": T, "seq": N, "payload": P}`, `P` being
    /// the payload's JSON text as the row's codec wrote it.
    pub fn event(topic_json: &str, seq: u64, payload: &str) -> String {
        event_parts(topic_json, &seq.to_string(), payload).concat()
    }

    /// [`event`]'s text in the pieces it joins (`seq` in decimal), for a
    /// writer that copies them straight into its frame: a fan-out writes
    /// one per subscriber.
    pub fn event_parts<'a>(topic_json: &'a str, seq: &'a str, payload: &'a str) -> [&'a str; 7] {
        [
            "{\"type\":\"event\",\"topic\":",
            topic_json,
            ",\"seq\":",
            seq,
            ",\"payload\":",
            payload,
            "}",
        ]
    }

    /// The topic as a JSON string, written once per row.
    pub fn topic_json(topic: &str) -> String {
        Value::from(topic).to_string()
    }
}
