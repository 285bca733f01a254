//! The admission law over surface rows (§ Surfaces and their rows, laws
//! 1–7), and `@rpc` on a free fn.
//!
//! A row's own faults — what it names, a member written twice in one
//! surface, an undeclared role — are reported at every row. A fault of the
//! handler's signature or body — two value parameters (law 2), a shape the
//! codec does not carry (law 5), a violation it does not declare (law 7,
//! F.42) — is the handler's, so it is reported once, at the first row that
//! names the handler (surfaces in order, rows in order; for law 5 the first
//! row of a served surface).

use std::collections::BTreeSet;

use super::codec::{json_form, NotCarried};
use super::suggest::did_you_mean;
use super::{count_word, Laws};
use crate::hale::model::{Handler, Row};
use crate::hale::syntax::ast::{FnDecl, FnKind, TypeExpr};

pub(super) fn check(l: &mut Laws) {
    let p = l.p;
    for f in &p.free_fns {
        for a in f.attrs.iter().filter(|a| a.name.name == "rpc") {
            let name = &f.name.name;
            l.error(
                a.span,
                format!(
                    "`@rpc` on `{name}`: a handler is a member fn of a locus, and `{name}` is a free fn"
                ),
            );
        }
    }
    // Law 5 holds a row to the codecs of the serve sites that serve its
    // surface; a surface nobody serves is asked no form.
    let served: BTreeSet<&str> = p
        .exposures
        .iter()
        .filter_map(|e| e.surface.as_deref())
        .collect();
    let mut judged = BTreeSet::new();
    let mut formed = BTreeSet::new();
    for s in &p.surfaces {
        let mut members = BTreeSet::new();
        for r in &s.rows {
            if !members.insert(r.member.as_str()) {
                l.error(
                    r.span,
                    format!(
                        "rpc `{}` is in `{}` twice: a member is one row; keep one, with the roles it requires",
                        r.member, s.name
                    ),
                );
            }
            for role in &r.requires {
                if p.role(&role.name).is_none() {
                    l.error(
                        role.span,
                        format!(
                            "rpc `{}` requires `{}`, which no `role` declares{}",
                            r.member,
                            role.name,
                            did_you_mean(&role.name, p.roles.iter().map(|r| r.name.name.as_str()))
                        ),
                    );
                }
            }
            if !names_a_handler(l, r) {
                continue;
            }
            let Some(f) = p.handler(r) else { continue };
            if judged.insert(r.member.as_str()) {
                one_request(l, r);
                declares_its_violation(l, r, f);
            }
            if served.contains(s.name.as_str())
                && r.value_params <= 1
                && formed.insert(r.member.as_str())
            {
                shapes_have_a_form(l, r);
            }
            if let Some(note) = super::note_for(r) {
                l.note(r.span, note);
            }
        }
    }
}

/// Law 1: a row names a member fn of a declared locus.
fn names_a_handler(l: &mut Laws, r: &Row) -> bool {
    let p = l.p;
    let message = match r.handler {
        Handler::Member | Handler::NotMember(FnKind::Plain) => return true,
        Handler::NoLocus => format!(
            "rpc `{}`: no locus `{}` is declared{}",
            r.member,
            r.locus,
            did_you_mean(&r.locus, p.loci.iter().map(|l| l.name.name.as_str()))
        ),
        Handler::NoFn => {
            let fns = p.locus(&r.locus).map(|l| {
                l.fns
                    .iter()
                    .filter(|f| f.kind == FnKind::Plain)
                    .map(|f| f.name.name.as_str())
            });
            format!(
                "rpc `{}`: `{}` declares no fn `{}`{}",
                r.member,
                r.locus,
                r.function,
                did_you_mean(&r.function, fns.into_iter().flatten())
            )
        }
        Handler::NotMember(kind) => {
            let what = match kind {
                FnKind::Lifecycle => "a lifecycle method of",
                FnKind::Mode => "a mode of",
                FnKind::OnFailure | FnKind::Plain => "a failure handler of",
            };
            format!(
                "rpc `{}`: `{}` is {what} `{}`, and a handler is a member fn",
                r.member, r.function, r.locus
            )
        }
    };
    l.error(r.span, message);
    false
}

/// Law 2: at most one value parameter beside a trailing context.
fn one_request(l: &mut Laws, r: &Row) {
    if r.value_params > 1 {
        l.error(
            r.span,
            format!(
                "rpc `{}`: a handler takes its request as one parameter, and `{}` takes {}: declare a type for the request",
                r.member,
                r.function,
                count_word(r.value_params)
            ),
        );
    }
}

/// Law 7 and F.42: a handler that may violate (a `violate` statement in
/// its body) is `fallible(ClosureViolation)`, whatever it returns.
fn declares_its_violation(l: &mut Laws, r: &Row, f: &FnDecl) {
    let Some(v) = f.body.violates.first() else {
        return;
    };
    if r.error_is_closure_violation() {
        return;
    }
    let stmt = format!("violate {}", v.closure.name);
    let message = match (&r.error, &r.response) {
        (Some(e), _) => format!(
            "rpc `{}` may violate (`{stmt}`) and is `fallible({})`: a fn has one error type, and a fn that may violate declares `fallible(ClosureViolation)` (F.42)",
            r.member,
            e.text()
        ),
        (None, None) => format!(
            "rpc `{}` may violate (`{stmt}`) and returns nothing: an rpc handler that may violate is `fallible(ClosureViolation)`, so its caller receives the server error instead of a result",
            r.member
        ),
        (None, Some(t)) => format!(
            "rpc `{}` may violate (`{stmt}`) and returns `{}`: a method that returns a value and may violate is `fallible(ClosureViolation)` (F.42), so its caller receives the server error instead of a result",
            r.member,
            t.text()
        ),
    };
    l.error(r.span, message);
}

/// Law 5: the request, the response and the error (unless it is
/// `ClosureViolation`, which is asked no form) are carried by the JSON
/// codec, and have a shape hash.
fn shapes_have_a_form(l: &mut Laws, r: &Row) {
    let p = l.p;
    let error = r.error.as_ref().filter(|_| !r.error_is_closure_violation());
    let columns: [(&str, Option<&TypeExpr>); 3] = [
        ("request", r.request.as_ref()),
        ("response", r.response.as_ref()),
        ("error", error),
    ];
    for (column, ty) in columns {
        let Some(ty) = ty else { continue };
        let message = match json_form(&p.types, ty) {
            Err(NotCarried {
                path,
                ty: field,
                undeclared,
            }) => {
                let why = if undeclared {
                    format!(
                        "and no type `{field}` is declared{}",
                        did_you_mean(&field, p.types.iter().map(|t| t.name.name.as_str()))
                    )
                } else {
                    "which the JSON codec does not carry".to_string()
                };
                if path.is_empty() {
                    format!("rpc `{}`: its {column} is `{field}`, {why}", r.member)
                } else {
                    format!(
                        "rpc `{}`: its {column} `{}` has a field `{path}: {field}`, {why}",
                        r.member,
                        ty.text()
                    )
                }
            }
            Ok(()) => match p.shape_hash(ty) {
                Ok(_) => continue,
                Err(e) => format!("rpc `{}`: its {column} has no shape: {e}", r.member),
            },
        };
        l.error(r.span, message);
    }
}
