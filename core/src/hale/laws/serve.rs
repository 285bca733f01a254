//! The laws of a serve site (§ Serving) and the paragraphs after them: a
//! serve site that cannot be served at all, a transport this build does not
//! ship, a socket served from a locus that is not the main locus.

use std::collections::BTreeSet;

use super::suggest::did_you_mean;
use super::{count_word, head, Laws};
use crate::hale::model::{
    Binding, Enclosing, Exposure, Instance, Locus, ServeSite, Surface, TransportKind,
    TransportLiteral, TransportUse,
};
use crate::hale::syntax::ast::{Expr, LetBinding};
use crate::hale::syntax::Span;

/// The transports this build serves a surface over, in the spec's words.
const SHIPPED: &str = "`std::api::test::Rpc`, the in-process transport, `unix::Rpc`, `http::Rpc`, `mcp::Rpc`, `grpc::Rpc`, `ws::Hub`, `udp::Hub`, or a transport the program declares";

pub(super) fn check(l: &mut Laws) {
    exposure_names(l);
    imported_mains(l);
    let p = l.p;
    for (site, e) in p.serve_sites.iter().zip(&p.exposures) {
        site_laws(l, site, e);
    }
}

/// An exposure is named once: the serve sites' `as:` and the hubs' `as:`
/// share one namespace (§ Streams, the hub exposure).
fn exposure_names(l: &mut Laws) {
    let p = l.p;
    let mut names: Vec<(&str, Span)> = p
        .serve_sites
        .iter()
        .filter_map(|s| s.as_name.as_ref().map(|(n, span)| (n.as_str(), *span)))
        .collect();
    for h in &p.hubs {
        if let Some(a) = h.literal.expr.struct_field("as") {
            if let Some(n) = a.str_value() {
                names.push((n, a.span()));
            }
        }
    }
    names.sort_by_key(|(_, span)| span.start.offset);
    let mut seen = BTreeSet::new();
    for (name, span) in names {
        if !seen.insert(name) {
            l.error(
                span,
                format!("exposure `{name}` is served twice: `as:` names one exposure; name this one apart"),
            );
        }
    }
}

/// Only the entry program's main locus serves: an imported main locus
/// with serve sites that the program writes the name of (a param of its
/// main locus holding it, a literal of it in the main locus or in `fn
/// main`) is refused where the program writes it. One the program only
/// imports for its types is not.
fn imported_mains(l: &mut Laws) {
    let p = l.p;
    for (name, _) in &p.imported_mains {
        let mut at: Vec<Span> = Vec::new();
        let literal = |e: &Expr| match e {
            Expr::Struct { path, .. } if path.text() == *name => Some(path.span),
            _ => None,
        };
        if let Some(main) = p.main_locus() {
            at.extend(main.instances_of(name).iter().map(|param| param.name.span));
            at.extend(
                main.fns
                    .iter()
                    .flat_map(|f| &f.body.literals)
                    .filter_map(literal),
            );
        }
        at.extend(
            p.free_fns
                .iter()
                .filter(|f| f.name.name == "main")
                .flat_map(|f| &f.body.literals)
                .filter_map(literal),
        );
        for span in at {
            l.error(
                span,
                format!("api::serve in {name}, a main locus the program imports: only the entry program’s main locus serves; serve from the entry’s main locus or hold the exposure there"),
            );
        }
    }
}

fn site_laws(l: &mut Laws, site: &ServeSite, e: &Exposure) {
    let p = l.p;
    let head = head(site.span.start, "api::serve".len());
    let Some(surface_path) = &site.surface else {
        l.error(
            head,
            "`api::serve`: a serve site names the surface it serves, as its first argument"
                .to_string(),
        );
        return;
    };
    let name = surface_path.text();
    let of = format!("serve of `{name}`");
    let of_as = match &site.as_name {
        Some((n, _)) => format!("{of} as `{n}`"),
        None => of.clone(),
    };
    let surface = p.surface(&name);
    if surface.is_none() {
        l.error(
            surface_path.span,
            format!(
                "{of}: no surface `{name}` is declared{}",
                did_you_mean(&name, p.surfaces.iter().map(|s| s.name.as_str()))
            ),
        );
    }
    if site.as_name.is_none() {
        let written = site
            .other
            .iter()
            .find(|a| a.name.as_ref().is_some_and(|n| n.name == "as"));
        l.error(
            written.map_or(head, |a| a.value.span()),
            format!("{of}: a serve site names its exposure with `as:`"),
        );
    }
    queue(l, site, &of_as, head);
    transport(l, site, &of, head);
    match &site.enclosing {
        Enclosing::Free { function } => l.error(
            head,
            format!(
                "`api::serve` in `{function}`: a serve site belongs to a locus’s body, since its exposure is a param of the serving locus; serve from the locus that holds the receivers"
            ),
        ),
        Enclosing::Locus { locus, .. } => {
            if let (Some(s), Some(holder)) = (surface, p.locus(locus)) {
                receivers(l, site, e, s, holder, &of, &of_as, head);
            }
        }
    }
}

/// A serve site states its queue: an integer `bound:` (a queue of none
/// would admit nothing) and `on_full: refuse`.
fn queue(l: &mut Laws, site: &ServeSite, of_as: &str, head: Span) {
    let bound_ok = site
        .bound
        .as_ref()
        .and_then(Expr::int_value)
        .is_some_and(|b| b > 0);
    let on_full_ok = site
        .on_full
        .as_ref()
        .and_then(Expr::word)
        .is_some_and(|w| w.name == "refuse");
    if bound_ok && on_full_ok {
        return;
    }
    let at = match (&site.on_full, &site.bound) {
        (Some(o), _) if !on_full_ok => o.span(),
        (_, Some(b)) if !bound_ok => b.span(),
        _ => head,
    };
    l.error(
        at,
        format!(
            "{of_as}: a serve site states `bound:`, the requests it holds accepted and not yet answered, and `on_full: refuse`, the one policy for a request"
        ),
    );
}

/// The transport instance: named, one this build ships (or the program
/// declares), framed for requests, and a socket only from the main locus.
fn transport(l: &mut Laws, site: &ServeSite, of: &str, head: Span) {
    let p = l.p;
    let (lit, at): (&TransportLiteral, Span) = match &site.transport {
        None => {
            l.error(
                head,
                format!("{of}: a serve site names the transport instance it serves over, as its second argument (a literal such as `unix::Rpc {{ … }}`, or a param a literal builds)"),
            );
            return;
        }
        Some(TransportUse::Literal(lit)) => {
            let at = match &lit.expr {
                Expr::Struct { path, .. } => path.span,
                other => other.span(),
            };
            if lit.kind.is_hub() {
                l.error(
                    at,
                    format!(
                        "`api::serve` over `{}`: a hub is a param of the main locus, built by its literal there; serve over it by name (`self.<param>`)",
                        lit.path
                    ),
                );
                return;
            }
            (lit, at)
        }
        Some(TransportUse::Param {
            param,
            literal: Some(lit),
        }) => (lit, param.span),
        Some(TransportUse::Param {
            param,
            literal: None,
        }) => {
            l.error(
                param.span,
                format!("{of}: `self.{}` is no transport instance: serve over a transport literal, or a param a literal builds", param.name),
            );
            return;
        }
        Some(TransportUse::Other(e)) => {
            l.error(
                e.span(),
                format!("{of}: `{}` is no transport instance: serve over a transport literal, or a param a literal builds", e.text()),
            );
            return;
        }
    };
    match &lit.kind {
        TransportKind::Other(path) if p.locus(path).is_none() => l.error(
            at,
            format!(
                "`api::serve` over `{path}`: this compiler serves a surface over {SHIPPED}; the other transports follow"
            ),
        ),
        TransportKind::Udp => l.error(
            at,
            format!(
                "`api::serve` over `{}`: a request and its reply over datagrams are not framed in this release, so a surface is not served over a datagram hub; serve it over `ws::Hub` or an Rpc transport",
                lit.path
            ),
        ),
        _ => {}
    }
    let socket = matches!(
        lit.kind,
        TransportKind::Unix
            | TransportKind::Http
            | TransportKind::Mcp
            | TransportKind::Grpc
            | TransportKind::Ws
            | TransportKind::Udp
    );
    if let Enclosing::Locus {
        locus,
        is_main: false,
        ..
    } = &site.enclosing
    {
        if socket {
            l.error(
                at,
                format!(
                    "`api::serve` over `{}` in `{locus}`: a socket’s listener runs on a pool of its own, which only the main locus places; serve from the main locus",
                    lit.path
                ),
            );
        }
    }
}

/// Every receiver type the rows name is bound to one instance the serving
/// locus holds for as long as the exposure lives, built by a literal.
#[allow(clippy::too_many_arguments)]
fn receivers(
    l: &mut Laws,
    site: &ServeSite,
    e: &Exposure,
    s: &Surface,
    holder: &Locus,
    of: &str,
    of_as: &str,
    head: Span,
) {
    let named: BTreeSet<&str> = s.loci().into_iter().collect();
    let mut bound = BTreeSet::new();
    for (ty, inst) in site.receivers.iter().flatten() {
        let t = ty.text();
        if !named.contains(t.as_str()) {
            l.error(
                ty.span,
                format!(
                    "{of}: `receivers:` binds `{t}`, which no row of `{}` names",
                    s.name
                ),
            );
            continue;
        }
        if !bound.insert(t.clone()) {
            l.error(
                ty.span,
                format!("{of}: `receivers:` binds `{t}` twice: a type is bound to one instance"),
            );
            continue;
        }
        instance(l, site, holder, &t, inst, of);
    }
    for r in e
        .receivers
        .iter()
        .filter(|r| r.binding == Binding::Inferred)
    {
        if let Instance::Param(name) = &r.instance {
            if holder.param(name).is_some_and(|p| p.literal().is_none()) {
                l.error(head, not_a_literal(of, name, holder));
            }
        }
    }
    for u in &e.unbound {
        let ty = &u.ty;
        let message = match u.candidates.as_slice() {
            [] => format!(
                "{of_as}: `{ty}` is not held by `{}`, and the serve binds none: hold one as a param of `{}` and name it (`receivers: {{ {ty}: self.<param> }}`)",
                holder.name.name, holder.name.name
            ),
            [_] => continue,
            held => {
                let times = match held.len() {
                    2 => "twice".to_string(),
                    n => format!("{} times", count_word(n)),
                };
                let quoted: Vec<String> = held.iter().map(|c| format!("`{c}`")).collect();
                let (init, last) = quoted.split_at(quoted.len() - 1);
                let neither = if held.len() == 2 { "neither" } else { "none of them" };
                format!(
                    "{of_as}: `{ty}` is held {times}, as {} and {}, and the serve binds {neither}: name the one that answers (`receivers: {{ {ty}: {} }}`)",
                    init.join(", "),
                    last.join(""),
                    held[0]
                )
            }
        };
        l.error(head, message);
    }
}

fn not_a_literal(of: &str, name: &str, holder: &Locus) -> String {
    format!(
        "{of}: `{name}` is not built by a literal in a param of `{}`: the serve numbers the instance in the literal that builds it",
        holder.name.name
    )
}

/// One explicit binding `T: instance`.
fn instance(l: &mut Laws, site: &ServeSite, holder: &Locus, ty: &str, inst: &Expr, of: &str) {
    let p = l.p;
    if let Some(field) = inst.self_field() {
        let Some(param) = holder.param(&field.name) else {
            l.error(
                field.span,
                format!(
                    "{of}: `{}` has no param `{}`{}",
                    holder.name.name,
                    field.name,
                    did_you_mean(
                        &field.name,
                        holder.instances_of(ty).iter().map(|p| p.name.name.as_str())
                    )
                ),
            );
            return;
        };
        match param.type_name() {
            Some(held) if held != ty => l.error(
                inst.span(),
                format!(
                    "{of}: `receivers:` binds `{ty}` to `self.{}`, which holds a `{held}`",
                    field.name
                ),
            ),
            _ if param.literal().is_none() => {
                l.error(inst.span(), not_a_literal(of, &field.name, holder))
            }
            _ => {}
        }
        return;
    }
    let body = p.serve_body(site);
    let binding = inst.word().and_then(|w| {
        body?.lets.iter().rev().find(|b| {
            b.name.name == w.name
                && b.span.start.offset < site.span.start.offset
                && b.scope_end.offset > site.span.start.offset
        })
    });
    match (binding, body) {
        (Some(b), Some(body)) => outlives(l, site, b, body, inst, of),
        _ => l.error(inst.span(), not_a_literal(of, &inst.text(), holder)),
    }
}

/// A let-bound receiver is refused unless the handle is stopped before the
/// block that holds the binding ends.
fn outlives(
    l: &mut Laws,
    site: &ServeSite,
    b: &LetBinding,
    body: &crate::hale::syntax::ast::Body,
    inst: &Expr,
    of: &str,
) {
    let handle = site.handle.as_ref().map(|h| h.name.as_str());
    let stops: Vec<_> = body
        .stops
        .iter()
        .filter(|s| Some(s.target.name.as_str()) == handle)
        .filter(|s| s.span.start.offset > site.span.end.offset)
        .collect();
    if stops
        .iter()
        .any(|s| s.span.start.offset < b.scope_end.offset)
    {
        return;
    }
    let name = &b.name.name;
    let when = match (handle, stops.first()) {
        (Some(h), Some(_)) => format!("before `{h}.stop()`"),
        _ => "while its exposure is served".to_string(),
    };
    l.error(
        inst.span(),
        format!(
            "{of}: `{name}` is `let`-bound and dissolves at the end of this block, {when}; hold it as a param"
        ),
    );
}
