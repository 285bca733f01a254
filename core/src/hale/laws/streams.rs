//! The hub and stream-row rules of § Streams that are check errors: the hub
//! a param of the main locus, named by `as:`, never supplied by a
//! construction, with at most sixteen stream rows; each row for a declared
//! topic the program publishes, stating `bound:` and a stream's `on_full:`
//! (never `refuse`), requiring declared roles.

use std::collections::BTreeSet;

use super::suggest::did_you_mean;
use super::Laws;
use crate::hale::model::{Direction, Hub, StreamRow};
use crate::hale::syntax::ast::{BindingEntry, Expr};
use crate::hale::syntax::Span;

/// The most stream rows one hub has.
pub const MAX_STREAM_ROWS: usize = 16;

pub(super) fn check(l: &mut Laws) {
    constructions(l);
    let p = l.p;
    for h in &p.hubs {
        hub(l, h);
    }
}

fn hub(l: &mut Laws, h: &Hub) {
    let p = l.p;
    let inst = h.instance();
    let locus = p.locus(&h.locus);
    if !locus.is_some_and(|l| l.is_main) {
        l.error(
            h.param.span,
            format!(
                "hub `{inst}` of `{}`: a hub is a param of the main locus, since its listener runs on a pool of its own, which only the main locus places",
                h.locus
            ),
        );
    }
    if h.literal.as_name.is_none() {
        l.error(
            h.param.span,
            format!("hub `{inst}`: a hub names its exposure with `as:`"),
        );
    }
    if let Some(extra) = h.streams.get(MAX_STREAM_ROWS) {
        l.error(
            extra.span,
            format!(
                "hub `{inst}` binds {} streams: a hub has at most sixteen stream rows",
                h.streams.len()
            ),
        );
    }
    let mut topics = BTreeSet::new();
    for s in &h.streams {
        let t = &s.topic.name;
        let on = format!("stream `{t}` on `{inst}`");
        if !topics.insert(t.as_str()) {
            l.error(
                s.topic.span,
                format!(
                    "{on}: `{t}` is bound to `{inst}` twice: a topic is one stream row of its hub"
                ),
            );
            continue;
        }
        if s.subject.is_none() {
            l.error(
                s.topic.span,
                format!(
                    "{on}: no topic `{t}` is declared{}",
                    did_you_mean(t, p.topics.iter().map(|t| t.decl.name.name.as_str()))
                ),
            );
        } else if s.direction != Some(Direction::Out) {
            l.error(
                s.topic.span,
                format!("{on}: nothing publishes `{t}`, and a stream carries what the program publishes"),
            );
        }
        let entry = locus.and_then(|l| l.bindings.iter().find(|b| b.span == s.span));
        policy(l, s, entry, &on);
        for r in &s.requires {
            if p.role(&r.name).is_none() {
                l.error(
                    r.span,
                    format!(
                        "stream `{t}` requires `{}`, which no `role` declares{}",
                        r.name,
                        did_you_mean(&r.name, p.roles.iter().map(|r| r.name.name.as_str()))
                    ),
                );
            }
        }
    }
}

/// A stream row states a positive `bound:` and `on_full: drop_old` or
/// `drop_new`; `refuse` is refused in its own words.
fn policy(l: &mut Laws, s: &StreamRow, entry: Option<&BindingEntry>, on: &str) {
    let written = |name| entry.and_then(|b| b.option(name)).map(Expr::span);
    let on_full = s.on_full.as_deref();
    if on_full == Some("refuse") {
        l.error(
            written("on_full").unwrap_or(s.topic.span),
            format!(
                "{on}: `refuse` is not a policy of a stream: a subscriber that cannot keep up loses events, never the subscription; state `on_full: drop_old` or `on_full: drop_new`"
            ),
        );
    }
    let bound_ok = s.bound.is_some_and(|b| b > 0);
    let on_full_ok = matches!(on_full, Some("drop_old" | "drop_new" | "refuse"));
    if bound_ok && on_full_ok {
        return;
    }
    let at: Span = match (written("on_full"), written("bound")) {
        (Some(o), _) if !on_full_ok => o,
        (_, Some(b)) if !bound_ok => b,
        _ => s.topic.span,
    };
    l.error(
        at,
        format!(
            "{on}: a stream row states `bound:`, the events it holds for each subscriber, and `on_full:`, `drop_old` or `drop_new`"
        ),
    );
}

/// A construction of a locus that supplies its hub param: the literal is
/// the param's default and the only hub. Constructions are the struct
/// literals of every body and every param's default, at any depth.
fn constructions(l: &mut Laws) {
    let p = l.p;
    if p.hubs.is_empty() {
        return;
    }
    let mut found = Vec::new();
    let bodies = p
        .loci
        .iter()
        .flat_map(|l| &l.fns)
        .chain(&p.free_fns)
        .flat_map(|f| &f.body.literals);
    for e in bodies {
        supplies(l, e, &mut found);
    }
    for param in p.loci.iter().flat_map(|l| &l.params) {
        if let Some(d) = &param.default {
            walk(d, &mut |e| supplies(l, e, &mut found));
        }
    }
    for (span, name) in found {
        l.error(
            span,
            format!(
                "param {name} is a hub that streams are bound to; its default is the hub, and a construction cannot supply another"
            ),
        );
    }
}

/// The fields of the struct literal `e` that supply a hub param of the
/// locus it builds.
fn supplies(l: &Laws, e: &Expr, found: &mut Vec<(Span, String)>) {
    let Expr::Struct { path, fields, .. } = e else {
        return;
    };
    let built = path.text();
    for f in fields {
        let hub =
            l.p.hubs
                .iter()
                .any(|h| h.locus == built && h.param.name == f.name.name);
        if hub {
            found.push((f.name.span, f.name.name.clone()));
        }
    }
}

/// Every struct literal in `e`, outermost first (declaration expressions
/// nest at most [`MAX_NESTING`](crate::hale::syntax::MAX_NESTING) deep).
fn walk(e: &Expr, visit: &mut dyn FnMut(&Expr)) {
    if matches!(e, Expr::Struct { .. }) {
        visit(e);
    }
    match e {
        Expr::Struct { fields, .. } => fields.iter().for_each(|f| walk(&f.value, visit)),
        Expr::List(items, _) | Expr::Tuple(items, _) => items.iter().for_each(|i| walk(i, visit)),
        Expr::Map(entries, _) => entries.iter().for_each(|(_, v)| walk(v, visit)),
        Expr::Call { callee, args, .. } => {
            walk(callee, visit);
            args.iter().for_each(|a| walk(&a.value, visit));
        }
        Expr::Field { base, .. } => walk(base, visit),
        Expr::Index { base, index, .. } => {
            walk(base, visit);
            walk(index, visit);
        }
        Expr::Unary { expr, .. } => walk(expr, visit),
        Expr::Binary { lhs, rhs, .. } => {
            walk(lhs, visit);
            walk(rhs, visit);
        }
        Expr::Number(..) | Expr::Str(..) | Expr::Path(_) | Expr::Unit(_) => {}
    }
}
