//! The hubs of a served program, and publishing to their topics.
//!
//! Each hub the main locus declares (`hub: ws::Hub = ws::Hub { bind: …,
//! principals: self.bearer, roles: self.hub_roles, as: "fills" }`, or a
//! `udp::Hub`) is bound at its `bind:` (or `[bind] fills = …`, `--bind
//! fills=…`) and runs on a loop of its own, under the identity sources the
//! configuration gives its source params. Its role source announces each
//! revision to it — a grant or a revoke from the control socket, a grants
//! file read again — so it rechecks its subscriptions (§ Streams, How the
//! hub knows).
//!
//! An event is published by a handler (any language: a line on the
//! control socket, whose path a handler finds in `HALE_CONTROL`) or an
//! operator (`hale publish SOCKET TOPIC JSON`): the topic must be one the
//! program declares, and its payload is decoded by the topic's shape
//! before it is offered to every hub that streams the topic.

use std::collections::BTreeMap;

use limen_core::hale::codec::{self, Shape};
use limen_core::hale::docs::ExposureDescriber;
use limen_core::hale::model::{Program, Source, TransportKind};
use limen_core::hale::runtime::{BearerSource, RoleSource, RoleTable};
use limen_core::hale::serving::shape_of;
use limen_core::wire::ws::{Hub, HubSpec};

use super::sources::Sources;
use super::ServeOptions;
use crate::serve::hub::{HubHandle, HubServer};
use crate::serve::udp_hub::UdpHubServer;
use crate::serve::{BoundAddress, Listener};

/// A hub's loop, to run on a thread of its own.
pub enum HubLoop {
    /// A WebSocket hub's.
    Ws(HubServer),
    /// A datagram hub's.
    Udp(UdpHubServer),
}

impl HubLoop {
    /// Serves until the hub is stopped.
    pub fn run(self) -> std::io::Result<()> {
        match self {
            HubLoop::Ws(s) => s.run(),
            HubLoop::Udp(s) => s.run(),
        }
    }
}

/// One hub served.
pub struct ServedHub {
    /// Its name (`as:`; `NAME-udp` for its datagram listener that
    /// [`ServeOptions::udp_hubs`] adds).
    pub name: String,
    /// The main locus's param that holds it (`hub`).
    pub param: String,
    /// The hub exposure's identity.
    pub identity: String,
    /// Where it listens.
    pub bound: BoundAddress,
    /// `ws` or `udp`.
    pub scheme: &'static str,
    /// Publish, announce, stop.
    pub handle: HubHandle,
    /// Its loop, until it is started.
    pub run: Option<HubLoop>,
    /// The topics its stream rows carry.
    pub topics: Vec<String>,
    /// Its role source param, whose revisions it is told of.
    pub roles: Option<String>,
    /// Its stream digest, sixteen lowercase hex digits: what scopes its
    /// topics' subjects on a broker ([`super::broker`]).
    pub digest: String,
}

/// Binds every hub of the program but the [`ServeOptions::unserved`], and
/// each of [`ServeOptions::udp_hubs`] over datagrams as well (after the
/// hubs' own listeners).
pub fn serve(
    program: &Program,
    options: &ServeOptions,
    sources: &Sources,
) -> Result<Vec<ServedHub>, String> {
    let mut out = Vec::new();
    let mut over_udp = Vec::new();
    for h in &program.hubs {
        let Some(name) = h.name().map(str::to_owned) else {
            continue;
        };
        if !options.unserved.contains(&name) {
            let address = options
                .binds
                .get(&name)
                .or_else(|| options.config.bind.get(&name))
                .cloned()
                .or_else(|| h.literal.address.clone())
                .unwrap_or_default();
            out.push(serve_one(program, h, &name, &address, sources)?);
        }
        if let Some(address) = options.udp_hubs.get(&name) {
            // The same rows and sources over datagrams: described as the
            // program would be were its hub a `udp::Hub`.
            let mut described = program.clone();
            for d in described
                .hubs
                .iter_mut()
                .filter(|d| d.name() == Some(&name))
            {
                d.literal.kind = TransportKind::Udp;
            }
            let mut hub = h.clone();
            hub.literal.kind = TransportKind::Udp;
            let mut served = serve_one(&described, &hub, &name, address, sources)?;
            served.name = format!("{name}-udp");
            over_udp.push(served);
        }
    }
    out.extend(over_udp);
    Ok(out)
}

/// Binds hub `h` of `program`, named `name`, at `address`.
fn serve_one(
    program: &Program,
    h: &limen_core::hale::model::Hub,
    name: &str,
    address: &str,
    sources: &Sources,
) -> Result<ServedHub, String> {
    let fail = |err: String| format!("hale serve: cannot serve the hub {name}: {err}");
    let spec = HubSpec::from_program(program, name).map_err(fail)?;
    let identity = program
        .hub_exposure_id(name)
        .map_err(|err| fail(err.to_string()))?;
    let bearer = || -> Option<Box<dyn BearerSource + Send>> {
        match &h.literal.principals {
            Source::Param { param, .. } => sources
                .tokens(param)
                .map(|t| Box::new(t) as Box<dyn BearerSource + Send>),
            _ => None,
        }
    };
    let roles_param = match &h.literal.roles {
        Source::Param { param, .. } => Some(param.clone()),
        _ => None,
    };
    let roles = || -> Box<dyn RoleSource + Send> {
        match roles_param.as_deref().and_then(|p| sources.roles(p)) {
            Some(r) => Box::new(r),
            None => Box::new(RoleTable::new()),
        }
    };
    let topics: Vec<String> = h.streams.iter().map(|s| s.topic.name.clone()).collect();
    let digest = program
        .hub_digest(name)
        .map_err(|err| fail(err.to_string()))?;
    let (bound, scheme, handle, run) = match h.literal.kind {
        TransportKind::Udp => {
            let (socket, bound) = UdpHubServer::bind(address)
                .map_err(|err| format!("api: udp::Hub could not listen on {address}: {err}"))?;
            let describer = ExposureDescriber::new(program, name, Some(&bound.to_string()))
                .map_err(|err| fail(err.to_string()))?;
            let machine =
                limen_core::wire::udp::Hub::new(spec, bearer(), roles(), Box::new(describer));
            let server = UdpHubServer::new(socket, machine).map_err(|err| fail(err.to_string()))?;
            let handle = server.handle();
            (
                BoundAddress::Tcp(bound),
                "udp",
                handle,
                HubLoop::Udp(server),
            )
        }
        _ => {
            let listener = Listener::bind_tcp(address)
                .map_err(|err| format!("api: ws::Hub could not listen on {address}: {err}"))?;
            let bound = listener.bound();
            let describer = ExposureDescriber::new(program, name, Some(&bound.to_string()))
                .map_err(|err| fail(err.to_string()))?;
            let machine = Hub::new(spec, bearer(), roles(), Box::new(describer));
            let server = HubServer::new(listener, machine).map_err(|err| fail(err.to_string()))?;
            let handle = server.handle();
            (bound, "ws", handle, HubLoop::Ws(server))
        }
    };
    Ok(ServedHub {
        param: h.param.name.clone(),
        name: name.to_owned(),
        identity,
        bound,
        scheme,
        handle,
        run: Some(run),
        topics,
        roles: roles_param,
        digest: limen_core::hale::digest::hex16(digest.0),
    })
}

/// Where every event published on this node also goes: the link to the
/// program's other nodes ([`super::broker::Broker`]). A trait, so the hubs
/// know nothing of the broker that knows them.
pub trait Outbound: Send + Sync {
    /// Sends `payload` (an event's JSON text) on the broker subject
    /// `subject`.
    fn send(&self, subject: &str, payload: &str);
}

/// The broker subject of the topic of wire subject `wire` on the hub of
/// stream digest `digest` (sixteen hex digits): `hale.<digest>.<wire>`, so
/// two programs (two stream digests) never cross on one broker.
pub fn broker_subject(digest: &str, wire: &str) -> String {
    format!("hale.{digest}.{wire}")
}

/// Publishes to a served program's topics: each payload held to its
/// topic's shape, then offered to every hub that streams the topic — and,
/// with a broker, sent to the program's other nodes ([`super::broker`]).
#[derive(Clone)]
pub struct Publisher {
    shapes: BTreeMap<String, Option<Shape>>,
    /// Each hub's topics, stream digest (hex) and handle.
    hubs: Vec<(Vec<String>, String, HubHandle)>,
    /// The wire subject of each topic.
    subjects: BTreeMap<String, String>,
    /// Where every event published here also goes.
    broker: Option<std::sync::Arc<dyn Outbound>>,
}

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher")
            .field("topics", &self.shapes.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Publisher {
    /// The program's topics, and the hubs served.
    pub fn new(program: &Program, hubs: &[ServedHub]) -> Publisher {
        let shapes = program
            .topics
            .iter()
            .map(|t| {
                let shape = t
                    .decl
                    .payload
                    .as_ref()
                    .and_then(|ty| shape_of(&program.types, ty).ok());
                (t.decl.name.name.clone(), shape)
            })
            .collect();
        Publisher {
            shapes,
            hubs: hubs
                .iter()
                .map(|h| (h.topics.clone(), h.digest.clone(), h.handle.clone()))
                .collect(),
            subjects: program
                .topics
                .iter()
                .map(|t| (t.decl.name.name.clone(), t.wire_subject.clone()))
                .collect(),
            broker: None,
        }
    }

    /// The wire subject of `topic`.
    pub fn wire_subject(&self, topic: &str) -> Option<String> {
        self.subjects.get(topic).cloned()
    }

    /// Sends every event published from now on to `broker` as well.
    pub fn set_broker(&mut self, broker: impl Outbound + 'static) {
        self.broker = Some(std::sync::Arc::new(broker));
    }

    /// The broker subject of each (stream digest, topic) the hubs serve,
    /// with the topic: `hale.<digest>.<wire subject>`.
    pub fn routes(&self) -> Vec<(String, String, String)> {
        let mut out: Vec<(String, String, String)> = Vec::new();
        for (topics, digest, _) in &self.hubs {
            for t in topics {
                let Some(subject) = self.subjects.get(t) else {
                    continue;
                };
                let route = (broker_subject(digest, subject), t.clone(), digest.clone());
                if !out.contains(&route) {
                    out.push(route);
                }
            }
        }
        out
    }

    /// Publishes `payload` (JSON text) on `topic`; how many hubs it was
    /// offered to.
    pub fn publish(&self, topic: &str, payload: &str) -> Result<usize, String> {
        let (text, offered) = self.offer(topic, payload.as_bytes(), None)?;
        if let Some(broker) = &self.broker {
            // Once per stream digest: a hub served over WebSocket and over
            // datagrams is one hub with two listeners.
            let mut sent: Vec<&str> = Vec::new();
            for (topics, digest, _) in &self.hubs {
                if topics.iter().any(|t| t == topic) && !sent.contains(&digest.as_str()) {
                    sent.push(digest);
                    if let Some(subject) = self.subjects.get(topic) {
                        broker.send(&broker_subject(digest, subject), &text);
                    }
                }
            }
        }
        Ok(offered)
    }

    /// Offers an event that arrived from another node through the broker
    /// to this node's hubs of stream digest `digest`, held to the topic's
    /// shape as a local publish is; never sent on.
    pub fn offer_remote(&self, topic: &str, payload: &[u8], digest: &str) -> Result<usize, String> {
        self.offer(topic, payload, Some(digest)).map(|(_, n)| n)
    }

    /// Decodes `payload` by `topic`'s shape and offers its JSON text to
    /// every hub (of stream digest `only`, when given) that streams it.
    fn offer(
        &self,
        topic: &str,
        payload: &[u8],
        only: Option<&str>,
    ) -> Result<(String, usize), String> {
        let Some(shape) = self.shapes.get(topic) else {
            let known: Vec<&str> = self.shapes.keys().map(String::as_str).collect();
            return Err(format!(
                "the program declares no topic `{topic}` (its topics: {})",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            ));
        };
        let value = match shape {
            Some(shape) => codec::decode(shape, payload)
                .map_err(|e| format!("the payload is not {topic}'s: {e}"))?,
            None => serde_json::from_slice::<serde_json::Value>(payload)
                .map_err(|e| format!("the payload is not JSON: {e}"))?,
        };
        let text = value.to_string();
        let mut offered = 0;
        for (topics, digest, hub) in &self.hubs {
            if topics.iter().any(|t| t == topic) && only.is_none_or(|d| d == digest) {
                hub.publish(topic, text.clone());
                offered += 1;
            }
        }
        Ok((text, offered))
    }
}
