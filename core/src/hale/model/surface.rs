//! Surfaces and their rows (§ Surfaces and their rows), and each surface's
//! contract digest (§ The contract digest).

use std::fmt;

use super::{Duplicate, Program};
use crate::hale::digest::{surface_input, Digest, SurfaceLine};
use crate::hale::shape::{ShapeError, Shapes};
use crate::hale::syntax::ast::{ApiDecl, Expr, FnDecl, FnKind, Ident, Path, TypeExpr};
use crate::hale::syntax::Span;

/// Where a row comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowSource {
    /// An `rpc …;` line of an `api` block.
    Api(Span),
    /// An `@rpc` attribute on the handler.
    Attribute(Span),
}

/// What a row's `Locus::fn` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handler {
    /// A member fn of a declared locus: a handler.
    Member,
    /// No locus of that name is declared.
    NoLocus,
    /// The locus declares no function of that name.
    NoFn,
    /// The function is a lifecycle method, a mode or a failure handler.
    NotMember(FnKind),
}

/// The trailing context parameter a handler declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContextKind {
    /// `ctx: std::api::Context`
    Context,
    /// `ctx: std::api::ServedContext`
    ServedContext,
}

/// One row of a surface, with the spec's columns (the pool is the serve
/// site's: [`ServedRow`](super::ServedRow)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// The surface.
    pub surface: String,
    /// The member as a caller names it, as written (`Orders::place`).
    pub member: String,
    /// The locus part of the member, as written (`Orders`).
    pub locus: String,
    /// The function part (`place`).
    pub function: String,
    /// What the member names.
    pub handler: Handler,
    /// The handler's one value parameter's type; none when it takes none
    /// (or takes more than one: see `value_params`).
    pub request: Option<TypeExpr>,
    /// The handler's return type; none for `()` or no return type.
    pub response: Option<TypeExpr>,
    /// `E` of `fallible(E)`; none when the handler is not fallible.
    pub error: Option<TypeExpr>,
    /// How many value parameters the handler takes beside a trailing
    /// context (a handler takes at most one).
    pub value_params: usize,
    /// The trailing context parameter, when declared.
    pub context: Option<ContextKind>,
    /// The required roles as written, in order; empty when none.
    pub requires: Vec<Ident>,
    /// The line or attribute that makes the row.
    pub source: RowSource,
    /// The member as written.
    pub span: Span,
}

impl Row {
    /// Whether the error column is `ClosureViolation`: the row fails as the
    /// server error and its description carries no error schema.
    pub fn error_is_closure_violation(&self) -> bool {
        matches!(&self.error, Some(t) if t.bare_path().is_some_and(|p| p.is("ClosureViolation")))
    }

    /// The required role names as written.
    pub fn requires_names(&self) -> Vec<&str> {
        self.requires.iter().map(|r| r.name.as_str()).collect()
    }
}

/// A surface: a named table of rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Surface {
    /// The surface's name.
    pub name: String,
    /// The `api` block's name, when a block declares the surface (none for
    /// a default surface made of `@rpc` rows alone).
    pub declared: Option<Span>,
    /// The rows in order: the block's, then the `@rpc` rows of the seed
    /// when this is its default surface.
    pub rows: Vec<Row>,
}

impl Surface {
    /// The locus types the rows name, each once, in the order the rows
    /// first name them.
    pub fn loci(&self) -> Vec<&str> {
        let mut seen = std::collections::BTreeSet::new();
        self.rows
            .iter()
            .map(|r| r.locus.as_str())
            .filter(|l| seen.insert(*l))
            .collect()
    }
}

/// Why a digest could not be computed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DigestError {
    /// No surface of that name.
    NoSurface(String),
    /// A row names no handler, so it has no shapes.
    Unresolved {
        /// The member.
        member: String,
        /// What it names instead.
        handler: Handler,
    },
    /// A row's handler takes more than one value parameter.
    Requests {
        /// The member.
        member: String,
        /// How many.
        count: usize,
    },
    /// A shape could not be rendered.
    Shape {
        /// The member or topic.
        of: String,
        /// Why.
        error: ShapeError,
    },
    /// No hub of that name.
    NoHub(String),
    /// A stream row lacks what its line holds.
    Stream {
        /// The topic.
        topic: String,
        /// What is missing (`bound`, `on_full`, `payload`, `direction`).
        missing: &'static str,
    },
}

impl fmt::Display for DigestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DigestError::NoSurface(s) => write!(f, "no surface `{s}` is declared"),
            DigestError::Unresolved { member, handler } => {
                write!(f, "rpc `{member}` names no handler ({handler:?})")
            }
            DigestError::Requests { member, count } => {
                write!(f, "rpc `{member}`: a handler takes its request as one parameter, and it takes {count}")
            }
            DigestError::Shape { of, error } => write!(f, "`{of}`: {error}"),
            DigestError::NoHub(h) => write!(f, "no hub `{h}` is declared"),
            DigestError::Stream { topic, missing } => {
                write!(f, "stream `{topic}` states no `{missing}`")
            }
        }
    }
}

impl std::error::Error for DigestError {}

impl Program {
    /// The function a row names, when it names one.
    pub fn handler(&self, row: &Row) -> Option<&FnDecl> {
        self.locus(&row.locus)?.function(&row.function)
    }

    /// The contract shape of `ty` over this program's types.
    pub fn contract_shape<'a>(&'a self, ty: &'a TypeExpr) -> Result<String, ShapeError> {
        Shapes::new(&self.types).contract_shape(ty)
    }

    /// The shape hash of `ty` over this program's types.
    pub fn shape_hash<'a>(&'a self, ty: &'a TypeExpr) -> Result<u64, ShapeError> {
        Shapes::new(&self.types).shape_hash(ty)
    }

    /// The surface's rows reduced to what its digest covers.
    pub fn surface_lines<'a>(&'a self, surface: &str) -> Result<Vec<SurfaceLine>, DigestError> {
        let s = self
            .surface(surface)
            .ok_or_else(|| DigestError::NoSurface(surface.to_string()))?;
        let mut shapes = Shapes::new(&self.types);
        let mut lines = Vec::with_capacity(s.rows.len());
        for r in &s.rows {
            if r.handler != Handler::Member {
                return Err(DigestError::Unresolved {
                    member: r.member.clone(),
                    handler: r.handler,
                });
            }
            if r.value_params > 1 {
                return Err(DigestError::Requests {
                    member: r.member.clone(),
                    count: r.value_params,
                });
            }
            let mut hash = |t: &'a Option<TypeExpr>| -> Result<Option<u64>, DigestError> {
                t.as_ref()
                    .map(|t| shapes.shape_hash(t))
                    .transpose()
                    .map_err(|error| DigestError::Shape {
                        of: r.member.clone(),
                        error,
                    })
            };
            lines.push(SurfaceLine {
                member: r.member.clone(),
                request: hash(&r.request)?,
                response: hash(&r.response)?,
                error: hash(&r.error)?,
                requires: r.requires.iter().map(|i| i.name.clone()).collect(),
            });
        }
        Ok(lines)
    }

    /// The surface's digest hash input, byte for byte.
    pub fn surface_input(&self, surface: &str) -> Result<String, DigestError> {
        Ok(surface_input(&self.surface_lines(surface)?))
    }

    /// The surface's digest.
    pub fn surface_digest(&self, surface: &str) -> Result<Digest, DigestError> {
        Ok(Digest::of(&self.surface_input(surface)?))
    }
}

/// Whether a parameter's type is a trailing context's.
fn context_kind(ty: &TypeExpr) -> Option<ContextKind> {
    match ty.bare_path()?.text().as_str() {
        "std::api::Context" => Some(ContextKind::Context),
        "std::api::ServedContext" => Some(ContextKind::ServedContext),
        _ => None,
    }
}

/// A row's type columns from its handler's signature.
fn row_of(
    surface: &str,
    member: &Path,
    handler: Handler,
    f: Option<&FnDecl>,
    requires: Vec<Ident>,
    source: RowSource,
) -> Row {
    let segments: Vec<&str> = member.segments.iter().map(|s| s.name.as_str()).collect();
    let (locus, function) = match segments.split_last() {
        Some((last, init)) => (init.join("::"), (*last).to_string()),
        None => (String::new(), String::new()),
    };
    let mut row = Row {
        surface: surface.to_string(),
        member: member.text(),
        locus,
        function,
        handler,
        request: None,
        response: None,
        error: None,
        value_params: 0,
        context: None,
        requires,
        source,
        span: member.span,
    };
    if let Some(f) = f {
        let mut params: Vec<&TypeExpr> = f.params.iter().map(|p| &p.ty).collect();
        row.context = params.last().and_then(|t| context_kind(t));
        if row.context.is_some() {
            params.pop();
        }
        row.value_params = params.len();
        if params.len() == 1 {
            row.request = Some(params[0].clone());
        }
        row.response = f.ret.clone().filter(|t| !matches!(t, TypeExpr::Unit(_)));
        row.error = f.fallible.clone();
    }
    row
}

/// The roles of `@rpc(requires: [a, b])`.
fn attribute_requires(args: Option<&[crate::hale::syntax::ast::Arg]>) -> Vec<Ident> {
    let Some(args) = args else { return Vec::new() };
    args.iter()
        .filter(|a| a.name.as_ref().is_some_and(|n| n.name == "requires"))
        .flat_map(|a| match &a.value {
            Expr::List(items, _) => items.iter().filter_map(|e| e.word().cloned()).collect(),
            _ => Vec::new(),
        })
        .collect()
}

/// Every surface: the `api` blocks' (a second block of a name is a
/// duplicate), and the seed's default surface of `@rpc` rows, merged into a
/// block of the seed's name when there is one.
pub(super) fn surfaces(p: &Program, apis: &[ApiDecl]) -> (Vec<Surface>, Vec<Duplicate>) {
    let mut out: Vec<Surface> = Vec::new();
    let mut dups = Vec::new();
    let mut declared: std::collections::BTreeMap<&str, Span> = std::collections::BTreeMap::new();
    for a in apis {
        if let Some(first) = declared.get(a.name.name.as_str()) {
            dups.push(Duplicate {
                kind: "api",
                name: a.name.name.clone(),
                first: *first,
                second: a.name.span,
            });
            continue;
        }
        declared.insert(&a.name.name, a.name.span);
        let rows = a
            .rows
            .iter()
            .map(|r| {
                let segments = &r.member.segments;
                let locus_name = segments[..segments.len() - 1]
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join("::");
                let fn_name = segments.last().map_or("", |s| s.name.as_str());
                let (handler, f) = match p.locus(&locus_name) {
                    None => (Handler::NoLocus, None),
                    Some(l) => match l.function(fn_name) {
                        None => (Handler::NoFn, None),
                        Some(f) if f.kind == FnKind::Plain => (Handler::Member, Some(f)),
                        Some(f) => (Handler::NotMember(f.kind), Some(f)),
                    },
                };
                row_of(
                    &a.name.name,
                    &r.member,
                    handler,
                    f,
                    r.requires.clone().unwrap_or_default(),
                    RowSource::Api(r.span),
                )
            })
            .collect();
        out.push(Surface {
            name: a.name.name.clone(),
            declared: Some(a.name.span),
            rows,
        });
    }
    let mut defaults = Vec::new();
    for l in &p.loci {
        for f in &l.fns {
            for attr in f.attrs.iter().filter(|a| a.name.name == "rpc") {
                let member = Path {
                    segments: vec![l.name.clone(), f.name.clone()],
                    span: f.name.span,
                };
                let handler = if f.kind == FnKind::Plain {
                    Handler::Member
                } else {
                    Handler::NotMember(f.kind)
                };
                let requires = attribute_requires(attr.args.as_deref());
                defaults.push(row_of(
                    &p.seed,
                    &member,
                    handler,
                    Some(f),
                    requires,
                    RowSource::Attribute(attr.span),
                ));
            }
        }
    }
    if !defaults.is_empty() {
        match out.iter_mut().find(|s| s.name == p.seed) {
            Some(s) => s.rows.extend(defaults),
            None => out.push(Surface {
                name: p.seed.clone(),
                declared: None,
                rows: defaults,
            }),
        }
    }
    (out, dups)
}
