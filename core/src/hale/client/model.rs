//! What every generated client reads of the program: one surface's rows in
//! name order, the records they and the program's stream rows reach, the
//! exposures that serve the surface and the hubs a client subscribes
//! through. Read once, with the same [`TypeBook`] the documents use, so a
//! client and the description can never disagree about a field.

use std::collections::BTreeMap;

use super::ClientError;
use crate::hale::docs::book::{Record, Slot, TypeBook};
use crate::hale::docs::rows::{
    exposure_listener, hub_streams, stream, surface_members, unique, ErrorSlot,
};
use crate::hale::docs::DocError;
use crate::hale::model::{Program, TransportKind};

/// One member of the surface, as a client calls it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientMember {
    /// The member as the wire names it: `Orders::place`.
    pub name: String,
    /// The receiver locus: everything before the last `::` (`Orders`).
    pub locus: String,
    /// The function: the last segment (`place`).
    pub function: String,
    /// The request, when the row takes one.
    pub request: Option<Slot>,
    /// The result, when the row returns one.
    pub response: Option<Slot>,
    /// The error column: none, `ClosureViolation` (a structural failure:
    /// the server error, never a handler error), or a type.
    pub error: ErrorSlot,
    /// The roles the member requires, each once, as written.
    pub requires: Vec<String>,
}

impl ClientMember {
    /// The handler error's type, only where the row declares one a caller
    /// can receive (`fallible(E)` with `E` not `ClosureViolation`).
    pub fn handler_error(&self) -> Option<&Slot> {
        match &self.error {
            ErrorSlot::Type(s) => Some(s),
            ErrorSlot::None | ErrorSlot::ClosureViolation => None,
        }
    }
}

/// One stream row of a hub, as a client subscribes to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientStream {
    /// The topic, as the subscribe frame names it (`Fills`).
    pub topic: String,
    /// The bus subject it carries (`desk.fills`).
    pub subject: String,
    /// `out` (the program publishes, a client subscribes).
    pub direction: String,
    /// The event's shape, when it carries one.
    pub payload: Option<Slot>,
    /// The frames a subscription holds before it sheds.
    pub bound: u64,
    /// `drop_old` or `drop_new`.
    pub on_full: String,
    /// Whether a reconnect replays (no hub binding does in v1).
    pub replay: bool,
    /// The roles the stream requires, each once, as written.
    pub requires: Vec<String>,
}

/// One hub of the program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientHub {
    /// The hub's name (its `as:`).
    pub name: String,
    /// Its identity, `hub@<stream digest>/<name>`.
    pub identity: String,
    /// `ws` or `udp`: a client subscribes over `ws://` only (§ Generated
    /// specs and clients); a datagram hub's streams are listed, not spoken.
    pub transport: TransportKind,
    /// The address the program writes, if any (a default for the caller).
    pub address: Option<String>,
    /// Its stream rows, in topic order (as bytes).
    pub streams: Vec<ClientStream>,
}

/// One exposure that serves the surface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientExposure {
    /// The exposure's name (its `as:`).
    pub name: String,
    /// Its identity, `<Surface>@<digest>/<name>`.
    pub identity: String,
    /// Its transport.
    pub transport: TransportKind,
    /// The address the program writes, if any.
    pub address: Option<String>,
}

/// A surface read for its clients: a pure function of the rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientSurface {
    /// The program's name: its main locus's, else its seed's.
    pub app: String,
    /// The surface's name.
    pub surface: String,
    /// The surface digest: `fnv1a64:` and sixteen hex digits. A client
    /// sends it on every call and names it in a constant.
    pub digest: String,
    /// The members, by name (as bytes).
    pub members: Vec<ClientMember>,
    /// Every record a member or a stream reaches, by name (as bytes); a
    /// field of record type names another record of this map.
    pub records: BTreeMap<String, Record>,
    /// The exposures that serve the surface, by name (as bytes).
    pub exposures: Vec<ClientExposure>,
    /// Every hub of the program, by name (as bytes), with its stream rows.
    pub hubs: Vec<ClientHub>,
}

impl ClientSurface {
    /// Reads `surface` of `program`: its rows, the program's hubs and the
    /// records they reach. A shape the JSON codec does not carry is refused
    /// naming the row and the field, as every document refuses it.
    pub fn read(program: &Program, surface: &str) -> Result<ClientSurface, ClientError> {
        let mut book = TypeBook::new();
        let (digest, slots) = surface_members(program, surface, &mut book)?;
        let members = slots
            .iter()
            .map(|m| {
                let name = m.row.member.clone();
                let (locus, function) = match name.rfind("::") {
                    Some(at) => (name[..at].to_string(), name[at + 2..].to_string()),
                    None => (String::new(), name.clone()),
                };
                ClientMember {
                    locus,
                    function,
                    request: m.request.clone(),
                    response: m.response.clone(),
                    error: m.error.clone(),
                    requires: m.requires(),
                    name,
                }
            })
            .collect();
        let mut exposures = Vec::new();
        for e in program
            .exposures
            .iter()
            .filter(|e| e.surface.as_deref() == Some(surface))
        {
            let listener = exposure_listener(e)?;
            let name = e.name.clone().unwrap_or_default();
            exposures.push(ClientExposure {
                identity: format!("{surface}@{digest}/{name}"),
                name,
                transport: listener.transport.clone(),
                address: listener.address.clone(),
            });
        }
        exposures.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        let mut hubs = Vec::new();
        for h in &program.hubs {
            let name = h.name().unwrap_or_default().to_string();
            let hub_digest = program.hub_digest(&name).map_err(DocError::from)?;
            let mut streams = Vec::new();
            for row in hub_streams(h) {
                let (_, payload) = stream(program, h, row, &mut book, "#/")?;
                streams.push(ClientStream {
                    topic: row.topic.name.clone(),
                    subject: row.subject.clone().unwrap_or_default(),
                    direction: row.direction.map_or("", |d| d.as_str()).to_string(),
                    payload,
                    bound: row.bound.unwrap_or_default(),
                    on_full: row.on_full.clone().unwrap_or_default(),
                    replay: row.replay,
                    requires: unique(&row.requires),
                });
            }
            hubs.push(ClientHub {
                identity: format!("hub@{hub_digest}/{name}"),
                name,
                transport: h.literal.kind.clone(),
                address: h.literal.address.clone(),
                streams,
            });
        }
        hubs.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        Ok(ClientSurface {
            app: program
                .main_locus()
                .map_or_else(|| program.seed.clone(), |l| l.name.name.clone()),
            surface: surface.to_string(),
            digest: digest.to_string(),
            members,
            records: book.records().clone(),
            exposures,
            hubs,
        })
    }

    /// The streams a client subscribes to: every stream row of every
    /// `ws://` hub, with its hub, in hub then topic order.
    pub fn ws_streams(&self) -> impl Iterator<Item = (&ClientHub, &ClientStream)> {
        self.hubs
            .iter()
            .filter(|h| h.transport == TransportKind::Ws)
            .flat_map(|h| h.streams.iter().map(move |s| (h, s)))
    }
}
