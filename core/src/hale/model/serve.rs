//! Serve sites and the exposures they make (§ Serving): what R1 reads of an
//! `api::serve(SURFACE, TRANSPORT, as: NAME, receivers: { T: I, … }, bound: N,
//! on_full: P)` call, and nothing more — its surface, its transport
//! instance's kind, address as written, codec and sources, `as:`, the
//! receivers it binds or that are inferred, `bound:` and `on_full:`.

use std::collections::{BTreeMap, BTreeSet};

use super::{Locus, Program, Row};
use crate::hale::digest::Digest;
use crate::hale::syntax::ast::{Arg, Body, Expr, FnKind, Ident, Path};
use crate::hale::syntax::Span;

use super::surface::DigestError;
use super::transport::{Source, TransportKind, TransportUse};

/// The body a serve site stands in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Enclosing {
    /// A function of a locus (the serving locus).
    Locus {
        /// The locus.
        locus: String,
        /// Whether it is the main locus.
        is_main: bool,
        /// The function.
        function: String,
        /// Its kind (`run()` is a lifecycle method).
        kind: FnKind,
    },
    /// A free function (where the law refuses a serve site).
    Free {
        /// The function.
        function: String,
    },
}

/// Where a serve site's body is: a function of a locus, or a free one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BodyRef {
    /// The locus's index in [`Program::loci`]; none for a free function.
    pub locus: Option<usize>,
    /// The function's index in that locus's `fns`, or in
    /// [`Program::free_fns`].
    pub function: usize,
}

/// One `api::serve(…)` call, its arguments sorted by role.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServeSite {
    /// The body it stands in.
    pub enclosing: Enclosing,
    /// `let NAME = api::serve(…)`: the handle's name.
    pub handle: Option<Ident>,
    /// The first argument, when it is a name: the surface.
    pub surface: Option<Path>,
    /// The second argument: the transport instance.
    pub transport: Option<TransportUse>,
    /// `as:`, when it is a string.
    pub as_name: Option<(String, Span)>,
    /// `receivers: { T: I, … }` as written.
    pub receivers: Option<Vec<(Path, Expr)>>,
    /// `bound:` as written.
    pub bound: Option<Expr>,
    /// `on_full:` as written.
    pub on_full: Option<Expr>,
    /// Every other argument (a third positional one, an unknown name, an
    /// `as:` that is no string).
    pub other: Vec<Arg>,
    /// The function whose body holds the call.
    pub body: BodyRef,
    /// The call.
    pub span: Span,
}

/// How a receiver came to be bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binding {
    /// Named in `receivers:`.
    Explicit,
    /// Elided: the serving locus holds exactly one instance of the type.
    Inferred,
}

impl Binding {
    /// `explicit` or `inferred`, as a document names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Binding::Explicit => "explicit",
            Binding::Inferred => "inferred",
        }
    }
}

/// A receiver instance as a serve site names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Instance {
    /// `self.<param>`.
    Param(String),
    /// A name a `let` of the serving body binds.
    Let(String),
    /// Any other expression, as written.
    Other(String),
}

impl Instance {
    /// The instance as written (`self.orders`, `ledger`).
    pub fn text(&self) -> String {
        match self {
            Instance::Param(p) => format!("self.{p}"),
            Instance::Let(n) | Instance::Other(n) => n.clone(),
        }
    }
}

/// One receiver of an exposure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Receiver {
    /// The locus type it answers for (as the binding or the rows write it).
    pub ty: String,
    /// The instance.
    pub instance: Instance,
    /// Explicit or inferred.
    pub binding: Binding,
    /// The pool it runs on, from the serving locus's placement table (see
    /// [`Pool::name`](super::Pool::name)); none for an instance that is no
    /// param of the main locus.
    pub pool: Option<String>,
}

/// A locus type the surface's rows name that the serve site neither binds
/// nor can infer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unbound {
    /// The type.
    pub ty: String,
    /// The serving locus's instances of it (`self.orders`, …): none when it
    /// holds none, two or more when the binding is ambiguous.
    pub candidates: Vec<String>,
}

/// The listener of an exposure: its transport and its address as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listener {
    /// The transport's kind.
    pub transport: TransportKind,
    /// `bind:` or `path:` as written.
    pub address: Option<String>,
}

/// The exposure a serve site makes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exposure {
    /// Its serve site's index in [`Program::serve_sites`].
    pub site: usize,
    /// `as:`.
    pub name: Option<String>,
    /// The surface it serves.
    pub surface: Option<String>,
    /// The listener, when the transport is a literal or a param built by one.
    pub listener: Option<Listener>,
    /// The codec (`json` when none is named).
    pub codec: String,
    /// The bearer source.
    pub principals: Source,
    /// The role source.
    pub roles: Source,
    /// The receivers: the explicit bindings in the order written, then the
    /// inferred ones in the order the rows first name their types.
    pub receivers: Vec<Receiver>,
    /// The types the rows name that are neither bound nor inferable.
    pub unbound: Vec<Unbound>,
    /// `bound:`, when it is an integer.
    pub bound: Option<u64>,
    /// `on_full:`, when it is a name.
    pub on_full: Option<String>,
}

/// A row as one exposure serves it: with the receiver that answers it and
/// that receiver's pool (the row's `pool` column).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServedRow<'a> {
    /// The row.
    pub row: &'a Row,
    /// The receiver bound for its locus type.
    pub receiver: Option<&'a Receiver>,
    /// The pool the handler runs on.
    pub pool: Option<&'a str>,
}

impl Program {
    /// The body a serve site stands in.
    pub fn serve_body(&self, site: &ServeSite) -> Option<&Body> {
        let f = match site.body.locus {
            Some(l) => self.loci.get(l)?.fns.get(site.body.function),
            None => self.free_fns.get(site.body.function),
        };
        f.map(|f| &f.body)
    }

    /// An exposure's identity: `<surface>@<digest>/<name>`.
    pub fn exposure_id(&self, e: &Exposure) -> Result<String, DigestError> {
        let surface = e.surface.clone().unwrap_or_default();
        let digest: Digest = self.surface_digest(&surface)?;
        Ok(format!(
            "{surface}@{digest}/{}",
            e.name.as_deref().unwrap_or("")
        ))
    }

    /// The rows of an exposure's surface, each with its receiver and pool.
    pub fn served_rows<'a>(&'a self, e: &'a Exposure) -> Vec<ServedRow<'a>> {
        let Some(s) = e.surface.as_deref().and_then(|s| self.surface(s)) else {
            return Vec::new();
        };
        let mut by_type: BTreeMap<&str, &Receiver> = BTreeMap::new();
        for r in &e.receivers {
            by_type.entry(r.ty.as_str()).or_insert(r);
        }
        s.rows
            .iter()
            .map(|row| {
                let receiver = by_type.get(row.locus.as_str()).copied();
                ServedRow {
                    row,
                    receiver,
                    pool: receiver.and_then(|r| r.pool.as_deref()),
                }
            })
            .collect()
    }
}

/// Every serve site of the program, in the order the bodies are written.
pub(super) fn serve_sites(p: &Program) -> Vec<ServeSite> {
    let mut out = Vec::new();
    for (li, l) in p.loci.iter().enumerate() {
        for (fi, f) in l.fns.iter().enumerate() {
            let body = BodyRef {
                locus: Some(li),
                function: fi,
            };
            let enclosing = Enclosing::Locus {
                locus: l.name.name.clone(),
                is_main: l.is_main,
                function: f.name.name.clone(),
                kind: f.kind,
            };
            for call in &f.body.serves {
                out.push(site_of(call, enclosing.clone(), body, Some(l)));
            }
        }
    }
    for (fi, f) in p.free_fns.iter().enumerate() {
        for call in &f.body.serves {
            let body = BodyRef {
                locus: None,
                function: fi,
            };
            let enclosing = Enclosing::Free {
                function: f.name.name.clone(),
            };
            out.push(site_of(call, enclosing, body, None));
        }
    }
    out
}

fn site_of(
    call: &crate::hale::syntax::ast::ServeCall,
    enclosing: Enclosing,
    body: BodyRef,
    holder: Option<&Locus>,
) -> ServeSite {
    let mut site = ServeSite {
        enclosing,
        body,
        handle: call.handle.clone(),
        surface: None,
        transport: None,
        as_name: None,
        receivers: None,
        bound: None,
        on_full: None,
        other: Vec::new(),
        span: call.span,
    };
    let mut positional = 0;
    for arg in &call.args {
        match (arg.name.as_ref().map(|n| n.name.as_str()), &arg.value) {
            (None, Expr::Path(path)) if positional == 0 => {
                site.surface = Some(path.clone());
                positional += 1;
            }
            (None, value) if positional == 1 => {
                site.transport = Some(super::transport::transport_use(value, holder));
                positional += 1;
            }
            (None, _) if positional == 0 => {
                site.other.push(arg.clone());
                positional += 1;
            }
            (Some("as"), Expr::Str(s, span)) if site.as_name.is_none() => {
                site.as_name = Some((s.clone(), *span))
            }
            (Some("receivers"), Expr::Map(entries, _)) if site.receivers.is_none() => {
                site.receivers = Some(entries.clone());
            }
            (Some("bound"), v) if site.bound.is_none() => site.bound = Some(v.clone()),
            (Some("on_full"), v) if site.on_full.is_none() => site.on_full = Some(v.clone()),
            _ => site.other.push(arg.clone()),
        }
    }
    site
}

/// The exposure serve site `index` makes.
pub(super) fn exposure(p: &Program, index: usize, site: &ServeSite) -> Exposure {
    let serving = match &site.enclosing {
        Enclosing::Locus { locus, .. } => p.locus(locus),
        Enclosing::Free { .. } => None,
    };
    let lets: BTreeSet<&str> = p
        .serve_body(site)
        .map(|b| b.lets.iter().map(|l| l.name.name.as_str()).collect())
        .unwrap_or_default();
    let pool = |param: &str| {
        serving
            .filter(|l| l.is_main || l.has_placement(param))
            .filter(|l| l.param(param).is_some())
            .map(|l| l.pool_of(param).name(param))
    };
    let literal = site.transport.as_ref().and_then(TransportUse::literal);
    let mut receivers = Vec::new();
    for (ty, inst) in site.receivers.iter().flatten() {
        let instance = match (inst.self_field(), inst.word()) {
            (Some(f), _) => Instance::Param(f.name.clone()),
            (None, Some(w)) if lets.contains(&w.name.as_str()) => Instance::Let(w.name.clone()),
            _ => Instance::Other(inst.text()),
        };
        let pool = match &instance {
            Instance::Param(param) => pool(param),
            _ => None,
        };
        receivers.push(Receiver {
            ty: ty.text(),
            instance,
            binding: Binding::Explicit,
            pool,
        });
    }
    let mut unbound = Vec::new();
    let surface = site.surface.as_ref().map(Path::text);
    if let Some(s) = surface.as_deref().and_then(|s| p.surface(s)) {
        let explicit: BTreeSet<String> = receivers.iter().map(|r| r.ty.clone()).collect();
        for ty in s.loci() {
            if explicit.contains(ty) {
                continue;
            }
            let held: Vec<&super::Param> = serving.map(|l| l.instances_of(ty)).unwrap_or_default();
            match held.as_slice() {
                [one] => receivers.push(Receiver {
                    ty: ty.to_string(),
                    instance: Instance::Param(one.name.name.clone()),
                    binding: Binding::Inferred,
                    pool: pool(&one.name.name),
                }),
                _ => unbound.push(Unbound {
                    ty: ty.to_string(),
                    candidates: held
                        .iter()
                        .map(|p| format!("self.{}", p.name.name))
                        .collect(),
                }),
            }
        }
    }
    Exposure {
        site: index,
        name: site.as_name.as_ref().map(|(n, _)| n.clone()),
        surface,
        listener: literal.map(|l| Listener {
            transport: l.kind.clone(),
            address: l.address.clone(),
        }),
        codec: literal.map_or_else(|| "json".to_string(), |l| l.codec.clone()),
        principals: literal.map_or(Source::None, |l| l.principals.clone()),
        roles: literal.map_or(Source::None, |l| l.roles.clone()),
        receivers,
        unbound,
        bound: site.bound.as_ref().and_then(Expr::int_value),
        on_full: site
            .on_full
            .as_ref()
            .and_then(Expr::word)
            .map(|w| w.name.clone()),
    }
}
