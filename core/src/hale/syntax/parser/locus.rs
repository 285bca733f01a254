//! Loci and functions: `locus` / `main locus` with their params, bus,
//! closure, placement and bindings blocks, and every function form (a `fn`,
//! a lifecycle method, a mode, a failure handler).

use super::{PResult, Parser};
use crate::hale::syntax::ast::{
    Attribute, BindingEntry, BusDirection, BusEntry, BusSubject, FnDecl, FnKind, FnParam, Ident,
    LocusDecl, LocusMember, ParamDecl, PlacementEntry, PlacementSpec,
};
use crate::hale::syntax::lexer::Tok;

/// The lifecycle methods, written without `fn`.
pub const LIFECYCLE: &[&str] = &["birth", "accept", "run", "drain", "dissolve"];

impl Parser<'_> {
    pub(super) fn locus_decl(&mut self, attrs: Vec<Attribute>) -> PResult<LocusDecl> {
        let start = attrs.first().map_or(self.span(), |a| a.span);
        let is_main = self.eat_word("main").is_some();
        self.expect_word("locus", "")?;
        let name = self.ident("the locus's name after `locus`")?;
        // Annotations (`: tier 2, projection rich`) are not the boundary's.
        if self.eat_punct(":").is_some() {
            while !self.at_punct("{") && !self.at_eof() {
                if self.at_punct("(") || self.at_punct("[") {
                    self.skip_group()?;
                } else {
                    self.bump();
                }
            }
        }
        let open = self.expect_punct("{", &format!("to open the locus `{}`", name.name))?;
        let mut members = Vec::new();
        while self.eat_punct("}").is_none() {
            if self.at_eof() {
                return Err(self.error(
                    self.span(),
                    format!(
                        "unexpected end of the file: the locus `{}` opened at {}:{} is never closed",
                        name.name, open.start.line, open.start.col
                    ),
                ));
            }
            members.push(self.locus_member(&name)?);
        }
        Ok(LocusDecl {
            attrs,
            is_main,
            name,
            members,
            span: self.since(start),
        })
    }

    fn locus_member(&mut self, locus: &Ident) -> PResult<LocusMember> {
        let attrs = self.attributes()?;
        let start = self.span();
        let word = match &self.tok().tok {
            Tok::Ident(w) => w.clone(),
            _ => String::new(),
        };
        let is_fn = word == "fn"
            || word == "mode"
            || (word == "on_failure" && self.nth_punct(1, "("))
            || (LIFECYCLE.contains(&word.as_str())
                && (self.nth_punct(1, "(") || self.nth_punct(1, "{")));
        if !attrs.is_empty() && !is_fn {
            return Err(self.expected("a `fn` after its attributes"));
        }
        let next_is_block = self.nth_punct(1, "{");
        Ok(match word.as_str() {
            "fn" => LocusMember::Fn(self.fn_decl(attrs, FnKind::Plain)?),
            "mode" => LocusMember::Fn(self.fn_decl(attrs, FnKind::Mode)?),
            "on_failure" if is_fn => LocusMember::Fn(self.fn_decl(attrs, FnKind::OnFailure)?),
            w if is_fn && LIFECYCLE.contains(&w) => LocusMember::Fn(self.fn_decl(attrs, FnKind::Lifecycle)?),
            "params" if next_is_block => {
                let params = self.params_block(locus)?;
                LocusMember::Params(params, self.since(start))
            }
            "bus" if next_is_block => {
                let entries = self.bus_block()?;
                LocusMember::Bus(entries, self.since(start))
            }
            "placement" if next_is_block => {
                let entries = self.placement_block()?;
                LocusMember::Placement(entries, self.since(start))
            }
            "bindings" if next_is_block => {
                let entries = self.bindings_block()?;
                LocusMember::Bindings(entries, self.since(start))
            }
            "closure" => {
                self.bump();
                let name = self.ident("the closure's name after `closure`")?;
                if !self.at_punct("{") {
                    return Err(self.expected(&format!("`{{` to open the closure `{}`", name.name)));
                }
                self.skip_group()?;
                LocusMember::Closure(name, self.since(start))
            }
            "type" => LocusMember::Type(self.type_decl()?),
            "const" => LocusMember::Const(self.const_decl()?),
            "contract" | "capacity" | "birth_check" => {
                let word = self.ident("a member")?;
                if self.at_punct("{") {
                    self.skip_group()?;
                    if word.name == "birth_check" {
                        self.skip_to_semicolon("after the birth check")?;
                    }
                } else {
                    self.skip_to_semicolon(&format!("after `{}`", word.name))?;
                }
                LocusMember::Other(word, self.since(start))
            }
            _ => {
                return Err(self.expected(&format!(
                    "a member of the locus `{}` (`params`, `bus`, `closure`, `placement`, `bindings`, `fn`, \
                     a lifecycle method, `mode`, `on_failure`, `type` or `const`) or `}}`",
                    locus.name
                )))
            }
        })
    }

    fn params_block(&mut self, locus: &Ident) -> PResult<Vec<ParamDecl>> {
        self.bump();
        self.bump(); // `params {`
        let mut out = Vec::new();
        while self.eat_punct("}").is_none() {
            let start = self.span();
            let name = self.ident(&format!("a param of `{}` or `}}`", locus.name))?;
            let mut ty = None;
            let mut inferred = false;
            let mut default = None;
            if self.eat_punct(":").is_some() {
                if self.at_word("inferred") && self.nth_punct(1, ";") {
                    self.bump();
                    inferred = true;
                } else {
                    ty = Some(self.type_expr()?);
                    if self.eat_punct(":").is_some() {
                        self.expect_word("inferred", "after `:`")?;
                        inferred = true;
                    }
                }
            }
            if !inferred {
                self.expect_punct(
                    "=",
                    &format!("and the default of the param `{}`", name.name),
                )?;
                default = Some(self.expr()?);
            }
            self.expect_punct(";", &format!("after the param `{}`", name.name))?;
            out.push(ParamDecl {
                name,
                ty,
                default,
                inferred,
                span: self.since(start),
            });
        }
        Ok(out)
    }

    fn bus_block(&mut self) -> PResult<Vec<BusEntry>> {
        self.bump();
        self.bump(); // `bus {`
        let mut out = Vec::new();
        while self.eat_punct("}").is_none() {
            let start = self.span();
            let direction = if self.eat_word("publish").is_some() {
                BusDirection::Publish
            } else if self.eat_word("subscribe").is_some() {
                BusDirection::Subscribe
            } else {
                return Err(self.expected("`publish`, `subscribe` or `}` in the bus block"));
            };
            let subject = match self.tok().tok.clone() {
                Tok::Str(s) => BusSubject::Literal(s, self.bump().span),
                Tok::Ident(_) => BusSubject::Topic(self.path("a topic")?),
                _ => return Err(self.expected("a topic or a literal subject")),
            };
            let mut of_type = None;
            let mut alias = None;
            loop {
                if self.eat_word("of").is_some() {
                    self.expect_word("type", "after `of`")?;
                    of_type = Some(self.type_expr()?);
                } else if self.eat_word("as").is_some() {
                    alias = Some(self.ident("a name after `as`")?);
                } else if self.at_word("where") {
                    // A routing-key filter (`where key == …`) is not the boundary's.
                    self.skip_to_semicolon("after the key filter")?;
                    break;
                } else {
                    self.expect_punct(";", "after the bus entry")?;
                    break;
                }
            }
            out.push(BusEntry {
                direction,
                subject,
                of_type,
                alias,
                span: self.since(start),
            });
        }
        Ok(out)
    }

    fn placement_block(&mut self) -> PResult<Vec<PlacementEntry>> {
        self.bump();
        self.bump(); // `placement {`
        let mut out = Vec::new();
        while self.eat_punct("}").is_none() {
            let start = self.span();
            let param = self.ident("a param to place or `}`")?;
            self.expect_punct(":", &format!("after the placed param `{}`", param.name))?;
            let spec = if self.eat_word("cooperative").is_some() {
                let mut pool = None;
                if self.eat_punct("(").is_some() {
                    self.expect_word("pool", "in `cooperative(pool = NAME)`")?;
                    self.expect_punct("=", "after `pool`")?;
                    pool = Some(self.ident("the pool's name")?);
                    self.expect_punct(")", "after the pool's name")?;
                }
                PlacementSpec::Cooperative(pool)
            } else if self.eat_word("pinned").is_some() {
                let mut core = None;
                if self.eat_punct("(").is_some() {
                    self.expect_word("core", "in `pinned(core = N)`")?;
                    self.expect_punct("=", "after `core`")?;
                    let Tok::Number(n) = self.tok().tok.clone() else {
                        return Err(self.expected("the core's number"));
                    };
                    self.bump();
                    core = Some(n);
                    self.expect_punct(")", "after the core's number")?;
                }
                PlacementSpec::Pinned(core)
            } else {
                return Err(self.expected("`cooperative` or `pinned`"));
            };
            let constraints = self.where_clause()?;
            self.expect_punct(";", &format!("after the placement of `{}`", param.name))?;
            out.push(PlacementEntry {
                param,
                spec,
                constraints,
                span: self.since(start),
            });
        }
        Ok(out)
    }

    /// `where a, b`, when written.
    fn where_clause(&mut self) -> PResult<Vec<Ident>> {
        let mut out = Vec::new();
        if self.eat_word("where").is_some() {
            loop {
                out.push(self.ident("a constraint after `where`")?);
                if self.eat_punct(",").is_none() {
                    break;
                }
            }
        }
        Ok(out)
    }

    /// A `bindings` block: topics bound to hubs (the retired `api:` entry
    /// refused, `RETIRED_API_ENTRY`).
    fn bindings_block(&mut self) -> PResult<Vec<BindingEntry>> {
        self.bump();
        self.bump(); // `bindings {`
        let mut out = Vec::new();
        while self.eat_punct("}").is_none() {
            let start = self.span();
            let topic = self.ident("a topic to bind or `}`")?;
            if topic.name == "api" {
                // § What this replaced: the structural entry is retired.
                return Err(self.error(topic.span, super::RETIRED_API_ENTRY));
            }
            self.expect_punct(":", &format!("after the bound topic `{}`", topic.name))?;
            let transport = self.expr()?;
            let mut options = Vec::new();
            let mut constraints = Vec::new();
            loop {
                if self.eat_punct(";").is_some() {
                    break;
                }
                if self.eat_punct(",").is_some() {
                    continue;
                }
                if self.at_word("where") {
                    constraints = self.where_clause()?;
                } else if self.at_ident() && self.nth_punct(1, ":") {
                    let name = self.ident("an option")?;
                    self.bump();
                    let value = self.expr()?;
                    options.push((name, value));
                } else if self.at_word("codec") && self.nth_punct(1, "(") {
                    let name = self.ident("an option")?;
                    let args = self.call_args(false)?;
                    let value = args
                        .into_iter()
                        .next()
                        .map(|a| a.value)
                        .unwrap_or(crate::hale::syntax::ast::Expr::Unit(name.span));
                    options.push((name, value));
                } else {
                    return Err(self.expected(&format!(
                        "an option (`name: value`), `where …` or `;` in the binding of `{}`",
                        topic.name
                    )));
                }
            }
            out.push(BindingEntry {
                topic,
                transport,
                options,
                constraints,
                span: self.since(start),
            });
        }
        Ok(out)
    }

    /// A function of any kind; the cursor is on its first word (`fn`,
    /// `mode`, `on_failure`, or the lifecycle word).
    pub(super) fn fn_decl(&mut self, attrs: Vec<Attribute>, kind: FnKind) -> PResult<FnDecl> {
        let start = attrs.first().map_or(self.span(), |a| a.span);
        let name = match kind {
            FnKind::Plain | FnKind::Mode => {
                self.bump();
                self.ident(if kind == FnKind::Plain {
                    "the function's name after `fn`"
                } else {
                    "the mode's name"
                })?
            }
            FnKind::Lifecycle | FnKind::OnFailure => self.ident("a function")?,
        };
        let generics = self.generic_params()?;
        let mut params = Vec::new();
        if kind != FnKind::Lifecycle || self.at_punct("(") {
            self.expect_punct("(", &format!("to open the parameters of `{}`", name.name))?;
            while !self.at_punct(")") {
                let pname = self.ident(&format!("a parameter of `{}` or `)`", name.name))?;
                self.expect_punct(
                    ":",
                    &format!("and the type of the parameter `{}`", pname.name),
                )?;
                let ty = self.type_expr()?;
                let default = if self.eat_punct("=").is_some() {
                    Some(self.expr()?)
                } else {
                    None
                };
                params.push(FnParam {
                    name: pname,
                    ty,
                    default,
                });
                if self.eat_punct(",").is_none() {
                    break;
                }
            }
            self.expect_punct(")", &format!("or `,` in the parameters of `{}`", name.name))?;
        }
        let ret = if self.eat_punct("->").is_some() {
            Some(self.type_expr()?)
        } else {
            None
        };
        let mut fallible = None;
        if self.at_word("fallible") && self.nth_punct(1, "(") {
            self.bump();
            self.bump();
            fallible = Some(self.type_expr()?);
            self.expect_punct(")", "to close `fallible(…)`")?;
        }
        if !self.at_punct("{") {
            return Err(self.expected(&format!("`{{` to open the body of `{}`", name.name)));
        }
        let body = self.body()?;
        Ok(FnDecl {
            attrs,
            kind,
            name,
            generics,
            params,
            ret,
            fallible,
            body,
            span: self.since(start),
        })
    }
}
