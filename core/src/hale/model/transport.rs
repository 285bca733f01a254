//! Transport instances as a serve site or a hub names them (§ Serving, § The
//! Rpc interface, § Streams): the literal's kind, its listener's address as
//! written, its codec, and its bearer and role sources.

use super::Locus;
use crate::hale::syntax::ast::{Expr, Ident, Path};

/// The kind of a transport instance, from its literal's namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransportKind {
    /// `std::api::test::Rpc`, the in-process fixture transport.
    Test,
    /// `unix::Rpc`
    Unix,
    /// `http::Rpc`
    Http,
    /// `mcp::Rpc`
    Mcp,
    /// `grpc::Rpc`
    Grpc,
    /// `ws::Hub`
    Ws,
    /// `udp::Hub` (`std::api::udp::Hub`)
    Udp,
    /// Any other type, by its path as written (a transport the program
    /// declares, or one no compiler ships).
    Other(String),
}

impl TransportKind {
    /// The kind a transport literal's path names: the segment before the
    /// type's name (`http::Rpc` → `http`, `std::api::udp::Hub` → `udp`).
    pub fn of_path(path: &Path) -> TransportKind {
        let n = path.segments.len();
        let last = path.last();
        if n >= 2 && (last == "Rpc" || last == "Hub") {
            match (path.segments[n - 2].name.as_str(), last) {
                ("test", "Rpc") => return TransportKind::Test,
                ("unix", "Rpc") => return TransportKind::Unix,
                ("http", "Rpc") => return TransportKind::Http,
                ("mcp", "Rpc") => return TransportKind::Mcp,
                ("grpc", "Rpc") => return TransportKind::Grpc,
                ("ws", "Hub") => return TransportKind::Ws,
                ("udp", "Hub") => return TransportKind::Udp,
                _ => {}
            }
        }
        TransportKind::Other(path.text())
    }

    /// The listener's transport as a document names it (`unix`, `http`,
    /// `ws`, `udp`, `grpc`, `mcp`; `test` for the in-process transport).
    pub fn as_str(&self) -> &str {
        match self {
            TransportKind::Test => "test",
            TransportKind::Unix => "unix",
            TransportKind::Http => "http",
            TransportKind::Mcp => "mcp",
            TransportKind::Grpc => "grpc",
            TransportKind::Ws => "ws",
            TransportKind::Udp => "udp",
            TransportKind::Other(p) => p,
        }
    }

    /// Whether this is a hub (`ws::Hub`, `udp::Hub`).
    pub fn is_hub(&self) -> bool {
        matches!(self, TransportKind::Ws | TransportKind::Udp)
    }
}

/// A bearer source or a role source as a transport instance names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// `self.<param>`, with the param's type when the holder declares it.
    Param {
        /// The param.
        param: String,
        /// Its type as written.
        ty: Option<String>,
    },
    /// The Unix transport's peer credentials, when it names no bearer source.
    Kernel,
    /// A literal built in place (`StaticRoles { … }`), by its type.
    Literal(String),
    /// Any other expression, as written.
    Other(String),
    /// None is named.
    None,
}

impl Source {
    fn of(e: &Expr, holder: Option<&Locus>) -> Source {
        if let Some(p) = e.self_field() {
            return Source::Param {
                param: p.name.clone(),
                ty: holder
                    .and_then(|l| l.param(&p.name))
                    .and_then(|p| p.type_name()),
            };
        }
        match e {
            Expr::Struct { path, .. } => Source::Literal(path.text()),
            other => Source::Other(other.text()),
        }
    }

    /// The source as a document names it: `self.bearer`, `kernel`, the
    /// literal's type, the expression; empty for none.
    pub fn text(&self) -> String {
        match self {
            Source::Param { param, .. } => format!("self.{param}"),
            Source::Kernel => "kernel".to_string(),
            Source::Literal(t) | Source::Other(t) => t.clone(),
            Source::None => String::new(),
        }
    }

    /// The param's type, for a `self.<param>` source.
    pub fn ty(&self) -> Option<&str> {
        match self {
            Source::Param { ty, .. } => ty.as_deref(),
            _ => None,
        }
    }
}

/// A transport instance built by a literal (`http::Rpc { bind: …, … }`,
/// `ws::Hub { … }`), read as R1 reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransportLiteral {
    /// The literal's type as written (`http::Rpc`).
    pub path: String,
    /// Its kind.
    pub kind: TransportKind,
    /// `bind:`, or `path:` for the Unix transport, as written: a string's
    /// value, or the expression's text.
    pub address: Option<String>,
    /// `codec:`; `json` when it names none.
    pub codec: String,
    /// `principals:`; the Unix transport's peer credentials ([`Source::Kernel`])
    /// when it names none.
    pub principals: Source,
    /// `roles:`.
    pub roles: Source,
    /// `as:`: a hub's name.
    pub as_name: Option<String>,
    /// The literal itself.
    pub expr: Expr,
}

impl TransportLiteral {
    /// The literal `e` (a struct literal), its `self.…` fields read against
    /// the locus that holds it.
    pub fn of(e: &Expr, holder: Option<&Locus>) -> Option<TransportLiteral> {
        let Expr::Struct { path, .. } = e else {
            return None;
        };
        let kind = TransportKind::of_path(path);
        let text = |e: &Expr| e.str_value().map_or_else(|| e.text(), str::to_string);
        let address = e
            .struct_field("bind")
            .or_else(|| e.struct_field("path"))
            .map(text);
        let codec = e.struct_field("codec").map_or_else(
            || "json".to_string(),
            |c| c.word().map_or_else(|| c.text(), |w| w.name.clone()),
        );
        let principals = match e.struct_field("principals") {
            Some(s) => Source::of(s, holder),
            None if kind == TransportKind::Unix => Source::Kernel,
            None => Source::None,
        };
        let roles = e
            .struct_field("roles")
            .map_or(Source::None, |s| Source::of(s, holder));
        let as_name = e
            .struct_field("as")
            .and_then(|a| a.str_value())
            .map(str::to_string);
        Some(TransportLiteral {
            path: path.text(),
            kind,
            address,
            codec,
            principals,
            roles,
            as_name,
            expr: e.clone(),
        })
    }
}

/// A serve site's transport argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransportUse {
    /// A literal in the call: a child of the exposure.
    Literal(TransportLiteral),
    /// `self.<param>`: a borrow of the instance the serving locus holds,
    /// with the literal that builds it when the param is built by one.
    Param {
        /// The param.
        param: Ident,
        /// The literal that builds it.
        literal: Option<TransportLiteral>,
    },
    /// Any other expression.
    Other(Expr),
}

impl TransportUse {
    /// The literal the transport is, or is built by.
    pub fn literal(&self) -> Option<&TransportLiteral> {
        match self {
            TransportUse::Literal(l) => Some(l),
            TransportUse::Param { literal, .. } => literal.as_ref(),
            TransportUse::Other(_) => None,
        }
    }
}

/// A serve site's transport argument, read against the locus that holds it.
pub(super) fn transport_use(e: &Expr, holder: Option<&Locus>) -> TransportUse {
    if let Some(lit) = TransportLiteral::of(e, holder) {
        return TransportUse::Literal(lit);
    }
    if let Some(param) = e.self_field() {
        let literal = holder
            .and_then(|l| l.param(&param.name))
            .and_then(|p| p.literal())
            .and_then(|lit| TransportLiteral::of(lit, holder));
        return TransportUse::Param {
            param: param.clone(),
            literal,
        };
    }
    TransportUse::Other(e.clone())
}
