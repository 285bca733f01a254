//! Topics, hubs and stream rows (§ Streams), and each hub's stream digest
//! (§ Streams, the hub exposure).

use std::collections::{BTreeMap, BTreeSet};

use super::surface::DigestError;
use super::transport::{TransportKind, TransportLiteral};
use super::{Duplicate, Program};
use crate::hale::digest::{hub_input, Digest, HubLine};
use crate::hale::shape::Shapes;
use crate::hale::syntax::ast::{Expr, Ident, TopicDecl, TypeExpr};
use crate::hale::syntax::Span;

/// A declared topic and its wire subject.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topic {
    /// The declaration.
    pub decl: TopicDecl,
    /// The wire subject: the `subject:` segments of the topic and its
    /// parents joined by `.`, root first; a topic with no `subject:`
    /// contributes its name.
    pub wire_subject: String,
    /// Whether the parent chain reaches an undeclared topic, comes back to
    /// itself or runs deeper than [`MAX_TOPIC_DEPTH`] (the subject then
    /// joins the segments reached).
    pub broken_chain: bool,
}

/// The direction of a stream row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// The stream carries what the program publishes.
    Out,
    /// The program subscribes to the topic and nothing in it publishes it.
    In,
}

impl Direction {
    /// `out` or `in`.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Out => "out",
            Direction::In => "in",
        }
    }
}

/// One stream row: a topic binding to a hub.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamRow {
    /// The topic as the binding names it.
    pub topic: Ident,
    /// Its wire subject; none when no topic of that name is declared.
    pub subject: Option<String>,
    /// `out` when a locus publishes the topic; `in` when one subscribes and
    /// none publishes; none when nothing does (the law refuses such a row).
    pub direction: Option<Direction>,
    /// The topic's payload type.
    pub payload: Option<TypeExpr>,
    /// The codec: the stream adapter's JSON codec unless the binding names
    /// another with `codec:`.
    pub codec: String,
    /// `bound:`, when it is an integer.
    pub bound: Option<u64>,
    /// `on_full:`, when it is a name.
    pub on_full: Option<String>,
    /// `requires:` as written; empty when none.
    pub requires: Vec<Ident>,
    /// Whether the binding replays: a hub binding provides none in v1.
    pub replay: bool,
    /// The binding entry.
    pub span: Span,
}

/// A hub: a param built by a `ws::Hub` or `udp::Hub` literal, and the topic
/// bindings to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hub {
    /// The locus whose param it is (the main locus, for a hub the laws admit).
    pub locus: String,
    /// The param.
    pub param: Ident,
    /// The literal that builds it: kind, `bind:`, codec, sources, `as:`.
    pub literal: TransportLiteral,
    /// Its stream rows, in the order the bindings are written.
    pub streams: Vec<StreamRow>,
}

impl Hub {
    /// The hub instance as a document names it (`self.hub`).
    pub fn instance(&self) -> String {
        format!("self.{}", self.param.name)
    }

    /// The hub's name, its `as:`.
    pub fn name(&self) -> Option<&str> {
        self.literal.as_name.as_deref()
    }
}

impl Program {
    /// The hub's stream rows reduced to what its digest covers.
    pub fn hub_lines(&self, hub: &str) -> Result<Vec<HubLine>, DigestError> {
        let h = self
            .hub(hub)
            .ok_or_else(|| DigestError::NoHub(hub.to_string()))?;
        let mut shapes = Shapes::new(&self.types);
        let mut lines = Vec::with_capacity(h.streams.len());
        for s in &h.streams {
            let topic = s.topic.name.clone();
            let missing = |missing| DigestError::Stream {
                topic: topic.clone(),
                missing,
            };
            let payload = s.payload.as_ref().ok_or_else(|| missing("payload"))?;
            let payload = shapes
                .shape_hash(payload)
                .map_err(|error| DigestError::Shape {
                    of: topic.clone(),
                    error,
                })?;
            lines.push(HubLine {
                topic: topic.clone(),
                payload,
                direction: s
                    .direction
                    .ok_or_else(|| missing("direction"))?
                    .as_str()
                    .to_string(),
                codec: s.codec.clone(),
                bound: s.bound.ok_or_else(|| missing("bound"))?,
                on_full: s.on_full.clone().ok_or_else(|| missing("on_full"))?,
                replay: s.replay,
                requires: s.requires.iter().map(|r| r.name.clone()).collect(),
            });
        }
        Ok(lines)
    }

    /// The hub's stream digest hash input, byte for byte.
    pub fn hub_input(&self, hub: &str) -> Result<String, DigestError> {
        Ok(hub_input(&self.hub_lines(hub)?))
    }

    /// The hub's stream digest.
    pub fn hub_digest(&self, hub: &str) -> Result<Digest, DigestError> {
        Ok(Digest::of(&self.hub_input(hub)?))
    }

    /// The hub exposure's identity: `hub@<stream digest>/<name>`.
    pub fn hub_exposure_id(&self, hub: &str) -> Result<String, DigestError> {
        Ok(format!("hub@{}/{hub}", self.hub_digest(hub)?))
    }
}

/// How many parents a topic's wire subject is read through; a deeper chain
/// is read as broken (a wire subject a chain of every topic builds would
/// otherwise grow with the square of the program).
pub const MAX_TOPIC_DEPTH: usize = 64;

/// The topics with their wire subjects; a second declaration of a name is a
/// duplicate.
pub(super) fn topics(decls: Vec<TopicDecl>, dups: &mut Vec<Duplicate>) -> Vec<Topic> {
    let mut unique: Vec<TopicDecl> = Vec::new();
    let mut by_name: BTreeMap<String, usize> = BTreeMap::new();
    for d in decls {
        if let Some(&first) = by_name.get(&d.name.name) {
            dups.push(Duplicate {
                kind: "topic",
                name: d.name.name.clone(),
                first: unique[first].name.span,
                second: d.name.span,
            });
        } else {
            by_name.insert(d.name.name.clone(), unique.len());
            unique.push(d);
        }
    }
    let segment = |t: &TopicDecl| {
        t.subject
            .as_ref()
            .map_or_else(|| t.name.name.clone(), |(s, _)| s.clone())
    };
    unique
        .iter()
        .map(|t| {
            let mut chain = vec![segment(t)];
            let mut seen: BTreeSet<&str> = BTreeSet::from([t.name.name.as_str()]);
            let mut parent = t.parent.as_ref();
            let mut broken = false;
            while let Some(p) = parent {
                if !seen.insert(&p.name) || chain.len() > MAX_TOPIC_DEPTH {
                    broken = true;
                    break;
                }
                match by_name.get(&p.name).map(|&i| &unique[i]) {
                    Some(u) => {
                        chain.push(segment(u));
                        parent = u.parent.as_ref();
                    }
                    None => {
                        broken = true;
                        break;
                    }
                }
            }
            chain.reverse();
            Topic {
                decl: t.clone(),
                wire_subject: chain.join("."),
                broken_chain: broken,
            }
        })
        .collect()
}

/// The hubs: every param built by a hub literal, with the bindings of its
/// locus that bind a topic to it.
pub(super) fn hubs(p: &Program) -> Vec<Hub> {
    let mut out = Vec::new();
    for l in &p.loci {
        let mut bound: BTreeMap<&str, Vec<&crate::hale::syntax::ast::BindingEntry>> =
            BTreeMap::new();
        for b in &l.bindings {
            if let Some(f) = b.transport.self_field() {
                bound.entry(f.name.as_str()).or_default().push(b);
            }
        }
        for param in &l.params {
            let Some(literal) = param
                .literal()
                .and_then(|e| TransportLiteral::of(e, Some(l)))
            else {
                continue;
            };
            if !literal.kind.is_hub() {
                continue;
            }
            let streams = bound
                .get(param.name.name.as_str())
                .into_iter()
                .flatten()
                .map(|b| {
                    let topic = p.topic(&b.topic.name);
                    let name = &b.topic.name;
                    let direction = if p.publishes(name) {
                        Some(Direction::Out)
                    } else if p.subscribes(name) {
                        Some(Direction::In)
                    } else {
                        None
                    };
                    let requires = match b.option("requires") {
                        Some(Expr::List(items, _)) => {
                            items.iter().filter_map(|e| e.word().cloned()).collect()
                        }
                        _ => Vec::new(),
                    };
                    StreamRow {
                        topic: b.topic.clone(),
                        subject: topic.map(|t| t.wire_subject.clone()),
                        direction,
                        payload: topic.and_then(|t| t.decl.payload.clone()),
                        codec: b
                            .option("codec")
                            .and_then(Expr::word)
                            .map_or_else(|| "json".to_string(), |w| w.name.clone()),
                        bound: b.option("bound").and_then(Expr::int_value),
                        on_full: b
                            .option("on_full")
                            .and_then(Expr::word)
                            .map(|w| w.name.clone()),
                        requires,
                        replay: false,
                        span: b.span,
                    }
                })
                .collect();
            out.push(Hub {
                locus: l.name.name.clone(),
                param: param.name.clone(),
                literal,
                streams,
            });
        }
    }
    debug_assert!(out
        .iter()
        .all(|h| matches!(h.literal.kind, TransportKind::Ws | TransportKind::Udp)));
    out
}
