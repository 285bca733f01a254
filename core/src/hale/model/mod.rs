//! The program model: what a `.hl` file declares, as the boundary reads it.
//!
//! [`Program::build`] turns a parsed [`File`](ast::File) into tables — roles,
//! units, types, topics, loci, free functions — and derives from them the
//! rows the contract is made of: the surface rows ([`Surface`], [`Row`]), the
//! serve sites and their exposures ([`ServeSite`], [`Exposure`]), and the hubs
//! with their stream rows ([`Hub`], [`StreamRow`]). Building never fails: a
//! row that names nothing, a serve site missing an argument, a stream whose
//! topic nothing publishes are kept as they are written and marked, for the
//! admission laws to refuse with their own words. Digests are computed on
//! demand and fail only when a row cannot be reduced (an unresolved handler).

mod hub;
mod serve;
mod surface;
mod transport;
pub mod types;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

pub use hub::{Direction, Hub, StreamRow, Topic, MAX_TOPIC_DEPTH};
pub use serve::{
    Binding, BodyRef, Enclosing, Exposure, Instance, Listener, Receiver, ServeSite, ServedRow,
    Unbound,
};
pub use surface::{ContextKind, DigestError, Handler, Row, RowSource, Surface};
pub use transport::{Source, TransportKind, TransportLiteral, TransportUse};
pub use types::{Prim, Resolved, TypeTable};

use super::syntax::ast::{
    self, Attribute, BindingEntry, BusDirection, BusEntry, BusSubject, Expr, FnDecl, FnKind, Ident,
    Item, PlacementSpec, RoleDecl, TypeExpr, UnitDecl,
};
use super::syntax::{parse, Diagnostic, Span};

/// The seed name a single file stands for: its file name without the
/// directories and without the `.hl` extension (`program.hl` → `program`).
/// The seed's default surface, of its `@rpc` rows, is named after it.
pub fn seed_of(file: &str) -> String {
    let base = file.rsplit(['/', '\\']).next().unwrap_or(file);
    base.strip_suffix(".hl").unwrap_or(base).to_string()
}

/// Parses `src`, the text of the file named `file`, and builds its model, the
/// seed named after the file ([`seed_of`]).
pub fn parse_program(file: &str, src: &str) -> Result<Program, Diagnostic> {
    Ok(Program::build(&parse(file, src)?, &seed_of(file)))
}

/// A second declaration of a name its kind already declares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Duplicate {
    /// What kind of declaration (`role`, `unit`, `type`, `topic`, `api`, `locus`, `fn`).
    pub kind: &'static str,
    /// The name.
    pub name: String,
    /// The first declaration's name.
    pub first: Span,
    /// The second one's.
    pub second: Span,
}

/// Where a main-locus param runs (`placement { … }`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pool {
    /// `cooperative(pool = NAME)`; a param with no entry, and `cooperative`
    /// with no pool, run on the pool `main`.
    Cooperative(String),
    /// `pinned[(core = N)]`: a thread of its own.
    Pinned(Option<String>),
}

impl Pool {
    /// The pool's name as a receiver's `pool` column shows it: the
    /// cooperative pool's name, or `pinned:<param>` for a pinned param.
    pub fn name(&self, param: &str) -> String {
        match self {
            Pool::Cooperative(p) => p.clone(),
            Pool::Pinned(_) => format!("pinned:{param}"),
        }
    }
}

/// One param of a locus: `name[: T] = literal;`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// The param.
    pub name: Ident,
    /// Its declared type.
    pub ty: Option<TypeExpr>,
    /// Its default: the literal that builds it.
    pub default: Option<Expr>,
    /// `: inferred`.
    pub inferred: bool,
    /// The whole param.
    pub span: Span,
}

impl Param {
    /// The param's type as written: its declared type, else the type of the
    /// literal that builds it.
    pub fn type_name(&self) -> Option<String> {
        match (&self.ty, &self.default) {
            (Some(t), _) => Some(t.text()),
            (None, Some(Expr::Struct { path, .. })) => Some(path.text()),
            _ => None,
        }
    }

    /// The struct or locus literal that builds the param, when its default is one.
    pub fn literal(&self) -> Option<&Expr> {
        self.default
            .as_ref()
            .filter(|e| matches!(e, Expr::Struct { .. }))
    }

    /// Whether the param holds an instance of the locus or type `ty`.
    pub fn holds(&self, ty: &str) -> bool {
        self.type_name().as_deref() == Some(ty)
    }
}

/// A locus declaration with its members sorted by kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Locus {
    /// The locus.
    pub name: Ident,
    /// Whether it is the `main` locus.
    pub is_main: bool,
    /// Its attributes.
    pub attrs: Vec<Attribute>,
    /// Its params in order.
    pub params: Vec<Param>,
    /// Its bus entries in order.
    pub bus: Vec<BusEntry>,
    /// Its closures' names.
    pub closures: Vec<Ident>,
    /// Its placement entries: `(param, pool, constraints)`.
    pub placement: Vec<(Ident, Pool, Vec<Ident>)>,
    /// Its topic bindings in order.
    pub bindings: Vec<BindingEntry>,
    /// Every function of every kind, in order.
    pub fns: Vec<FnDecl>,
    /// The whole declaration.
    pub span: Span,
    /// Functions, params and held types by name, built once.
    index: LocusIndex,
}

/// The name indexes of a [`Locus`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct LocusIndex {
    fns: BTreeMap<String, Vec<usize>>,
    params: BTreeMap<String, usize>,
    holders: BTreeMap<String, Vec<usize>>,
    placement: BTreeMap<String, usize>,
}

impl Locus {
    /// The param `name`.
    pub fn param(&self, name: &str) -> Option<&Param> {
        self.index.params.get(name).map(|&i| &self.params[i])
    }

    /// The params holding an instance of `ty`, in order.
    pub fn instances_of(&self, ty: &str) -> Vec<&Param> {
        self.index
            .holders
            .get(ty)
            .map(|ps| ps.iter().map(|&i| &self.params[i]).collect())
            .unwrap_or_default()
    }

    /// The function named `name` of the first kind found (a plain `fn`
    /// before a lifecycle method, a mode or a failure handler).
    pub fn function(&self, name: &str) -> Option<&FnDecl> {
        let named = self.index.fns.get(name)?;
        let plain = named
            .iter()
            .map(|&i| &self.fns[i])
            .find(|f| f.kind == FnKind::Plain);
        plain.or_else(|| named.first().map(|&i| &self.fns[i]))
    }

    /// Where the param `name` runs: its placement entry's pool, else `main`.
    pub fn pool_of(&self, name: &str) -> Pool {
        self.index
            .placement
            .get(name)
            .map_or(Pool::Cooperative("main".to_string()), |&i| {
                self.placement[i].1.clone()
            })
    }

    /// Whether the placement block has an entry for the param `name`.
    pub fn has_placement(&self, name: &str) -> bool {
        self.index.placement.contains_key(name)
    }

    /// Whether the locus declares `publish TOPIC` in its bus block.
    pub fn publishes(&self, topic: &str) -> bool {
        self.bus_names(BusDirection::Publish, topic)
    }

    /// Whether the locus declares `subscribe TOPIC` in its bus block.
    pub fn subscribes(&self, topic: &str) -> bool {
        self.bus_names(BusDirection::Subscribe, topic)
    }

    fn bus_names(&self, direction: BusDirection, topic: &str) -> bool {
        self.bus.iter().any(|b| {
            b.direction == direction
                && matches!(&b.subject, BusSubject::Topic(p) if p.text() == topic)
        })
    }
}

/// The model of one program.
#[derive(Clone, Debug)]
pub struct Program {
    /// The seed the program is (its default surface's name).
    pub seed: String,
    /// The declared roles, first declaration of a name.
    pub roles: Vec<RoleDecl>,
    /// The declared units, first declaration of a name.
    pub units: Vec<UnitDecl>,
    /// The declared types.
    pub types: TypeTable,
    /// The declared topics with their wire subjects.
    pub topics: Vec<Topic>,
    /// The declared loci, first declaration of a name.
    pub loci: Vec<Locus>,
    /// The free functions, in order.
    pub free_fns: Vec<FnDecl>,
    /// The surfaces: every `api` block's, then the seed's default surface
    /// when an `@rpc` row exists and no block bears its name.
    pub surfaces: Vec<Surface>,
    /// Every `api::serve(…)` call, in any body, in order.
    pub serve_sites: Vec<ServeSite>,
    /// The exposures the serve sites make, one per site, in the same order.
    pub exposures: Vec<Exposure>,
    /// The hubs (params built by a `ws::Hub` or `udp::Hub` literal), with
    /// their stream rows.
    pub hubs: Vec<Hub>,
    /// Second declarations of a name, kept out of the tables above, in the
    /// order written.
    pub duplicates: Vec<Duplicate>,
    /// The main loci the program imports that hold serve sites, by the
    /// name the import gives them (`lib::Head`), each with where its first
    /// serve site is written. Only the entry's main locus serves: an
    /// imported one is a plain locus of the program, its serve sites kept
    /// out of [`serve_sites`](Self::serve_sites) and refused when the
    /// program writes its name ([`crate::hale::imports`]). Empty for a
    /// program of one file.
    pub imported_mains: Vec<(String, Span)>,
    /// Names to table positions, built once with the tables (so the lookups
    /// below stay logarithmic however large the program).
    index: Index,
}

/// The name indexes of a [`Program`]'s tables.
#[derive(Clone, Debug, Default)]
struct Index {
    roles: BTreeMap<String, usize>,
    loci: BTreeMap<String, usize>,
    topics: BTreeMap<String, usize>,
    surfaces: BTreeMap<String, usize>,
    published: BTreeSet<String>,
    subscribed: BTreeSet<String>,
}

impl Program {
    /// The model of `file`, the seed `seed`.
    pub fn build(file: &ast::File, seed: &str) -> Program {
        let mut dups = Vec::new();
        let mut index = Index::default();
        let mut unit_names = BTreeMap::new();
        let mut roles: Vec<RoleDecl> = Vec::new();
        let mut units: Vec<UnitDecl> = Vec::new();
        let mut type_decls = Vec::new();
        let mut topic_decls = Vec::new();
        let mut apis = Vec::new();
        let mut loci: Vec<Locus> = Vec::new();
        let mut free_fns = Vec::new();
        for item in &file.items {
            match item {
                Item::Role(r) => push_unique(
                    &mut roles,
                    &mut index.roles,
                    r.clone(),
                    |r| &r.name,
                    "role",
                    &mut dups,
                ),
                Item::Unit(u) => push_unique(
                    &mut units,
                    &mut unit_names,
                    u.clone(),
                    |u| &u.name,
                    "unit",
                    &mut dups,
                ),
                Item::Type(t) => type_decls.push(t.clone()),
                Item::Topic(t) => topic_decls.push(t.clone()),
                Item::Api(a) => apis.push(a.clone()),
                Item::Locus(l) => {
                    for m in &l.members {
                        if let ast::LocusMember::Type(t) = m {
                            type_decls.push(t.clone());
                        }
                    }
                    push_unique(
                        &mut loci,
                        &mut index.loci,
                        locus_of(l),
                        |l| &l.name,
                        "locus",
                        &mut dups,
                    );
                }
                Item::Fn(f) => free_fns.push(f.clone()),
                Item::Import(_) | Item::Const(_) | Item::Other { .. } => {}
            }
        }
        let (types, type_dups) = TypeTable::new(type_decls);
        for d in type_dups {
            if let Some(first) = types.get(&d.name.name) {
                dups.push(Duplicate {
                    kind: "type",
                    name: d.name.name.clone(),
                    first: first.name.span,
                    second: d.name.span,
                });
            }
        }
        let topics = hub::topics(topic_decls, &mut dups);
        for (i, t) in topics.iter().enumerate() {
            index.topics.insert(t.decl.name.name.clone(), i);
        }
        for b in loci.iter().flat_map(|l| &l.bus) {
            if let BusSubject::Topic(path) = &b.subject {
                let set = match b.direction {
                    BusDirection::Publish => &mut index.published,
                    BusDirection::Subscribe => &mut index.subscribed,
                };
                set.insert(path.text());
            }
        }
        let mut program = Program {
            seed: seed.to_string(),
            roles,
            units,
            types,
            topics,
            loci,
            free_fns,
            surfaces: Vec::new(),
            serve_sites: Vec::new(),
            exposures: Vec::new(),
            hubs: Vec::new(),
            duplicates: dups,
            imported_mains: Vec::new(),
            index,
        };
        let (surfaces, api_dups) = surface::surfaces(&program, &apis);
        for (i, s) in surfaces.iter().enumerate() {
            program.index.surfaces.insert(s.name.clone(), i);
        }
        program.surfaces = surfaces;
        program.duplicates.extend(api_dups);
        program.serve_sites = serve::serve_sites(&program);
        program.exposures = program
            .serve_sites
            .iter()
            .enumerate()
            .map(|(i, s)| serve::exposure(&program, i, s))
            .collect();
        program.hubs = hub::hubs(&program);
        program.duplicates.sort_by_key(|d| d.second.start);
        program
    }

    /// The role `name`.
    pub fn role(&self, name: &str) -> Option<&RoleDecl> {
        self.index.roles.get(name).map(|&i| &self.roles[i])
    }

    /// The locus `name`.
    pub fn locus(&self, name: &str) -> Option<&Locus> {
        self.index.loci.get(name).map(|&i| &self.loci[i])
    }

    /// The first `main` locus.
    pub fn main_locus(&self) -> Option<&Locus> {
        self.loci.iter().find(|l| l.is_main)
    }

    /// The topic `name`.
    pub fn topic(&self, name: &str) -> Option<&Topic> {
        self.index.topics.get(name).map(|&i| &self.topics[i])
    }

    /// The surface `name`.
    pub fn surface(&self, name: &str) -> Option<&Surface> {
        self.index.surfaces.get(name).map(|&i| &self.surfaces[i])
    }

    /// The exposure named `name` by its serve site's `as:` (the first, when
    /// two share it).
    pub fn exposure(&self, name: &str) -> Option<&Exposure> {
        self.exposures
            .iter()
            .find(|e| e.name.as_deref() == Some(name))
    }

    /// The hub whose `as:` is `name`.
    pub fn hub(&self, name: &str) -> Option<&Hub> {
        self.hubs
            .iter()
            .find(|h| h.literal.as_name.as_deref() == Some(name))
    }

    /// Whether any locus publishes `topic` (`bus { publish T; }`).
    pub fn publishes(&self, topic: &str) -> bool {
        self.index.published.contains(topic)
    }

    /// Whether any locus subscribes to `topic`.
    pub fn subscribes(&self, topic: &str) -> bool {
        self.index.subscribed.contains(topic)
    }

    /// Every role name a row or a stream requires that no `role` declares.
    pub fn undeclared_roles(&self) -> BTreeSet<String> {
        let rows = self
            .surfaces
            .iter()
            .flat_map(|s| &s.rows)
            .flat_map(|r| &r.requires);
        let streams = self
            .hubs
            .iter()
            .flat_map(|h| &h.streams)
            .flat_map(|s| &s.requires);
        rows.chain(streams)
            .filter(|r| self.role(&r.name).is_none())
            .map(|r| r.name.clone())
            .collect()
    }
}

/// Pushes `item` unless its kind already declares its name, recording the
/// duplicate.
fn push_unique<T>(
    out: &mut Vec<T>,
    seen: &mut BTreeMap<String, usize>,
    item: T,
    name: impl Fn(&T) -> &Ident,
    kind: &'static str,
    dups: &mut Vec<Duplicate>,
) {
    let n = name(&item);
    if let Some(&first) = seen.get(&n.name) {
        dups.push(Duplicate {
            kind,
            name: n.name.clone(),
            first: name(&out[first]).span,
            second: n.span,
        });
    } else {
        seen.insert(n.name.clone(), out.len());
        out.push(item);
    }
}

fn locus_of(l: &ast::LocusDecl) -> Locus {
    let mut locus = Locus {
        name: l.name.clone(),
        is_main: l.is_main,
        attrs: l.attrs.clone(),
        params: Vec::new(),
        bus: Vec::new(),
        closures: Vec::new(),
        placement: Vec::new(),
        bindings: Vec::new(),
        fns: Vec::new(),
        span: l.span,
        index: LocusIndex::default(),
    };
    for m in &l.members {
        match m {
            ast::LocusMember::Params(ps, _) => locus.params.extend(ps.iter().map(|p| Param {
                name: p.name.clone(),
                ty: p.ty.clone(),
                default: p.default.clone(),
                inferred: p.inferred,
                span: p.span,
            })),
            ast::LocusMember::Bus(entries, _) => locus.bus.extend(entries.iter().cloned()),
            ast::LocusMember::Closure(name, _) => locus.closures.push(name.clone()),
            ast::LocusMember::Placement(entries, _) => {
                locus.placement.extend(entries.iter().map(|e| {
                    let pool = match &e.spec {
                        PlacementSpec::Cooperative(p) => Pool::Cooperative(
                            p.as_ref()
                                .map_or_else(|| "main".to_string(), |p| p.name.clone()),
                        ),
                        PlacementSpec::Pinned(core) => Pool::Pinned(core.clone()),
                    };
                    (e.param.clone(), pool, e.constraints.clone())
                }))
            }
            ast::LocusMember::Bindings(entries, _) => {
                locus.bindings.extend(entries.iter().cloned())
            }
            ast::LocusMember::Fn(f) => locus.fns.push(f.clone()),
            ast::LocusMember::Type(_)
            | ast::LocusMember::Const(_)
            | ast::LocusMember::Other(..) => {}
        }
    }
    for (i, f) in locus.fns.iter().enumerate() {
        locus
            .index
            .fns
            .entry(f.name.name.clone())
            .or_default()
            .push(i);
    }
    for (i, p) in locus.params.iter().enumerate() {
        locus.index.params.entry(p.name.name.clone()).or_insert(i);
        if let Some(ty) = p.type_name() {
            locus.index.holders.entry(ty).or_default().push(i);
        }
    }
    for (i, (p, _, _)) in locus.placement.iter().enumerate() {
        locus.index.placement.entry(p.name.clone()).or_insert(i);
    }
    locus
}
