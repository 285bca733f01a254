//! Type expressions and the declarations of the boundary's vocabulary:
//! `role`, `unit`, `type`, `topic` and `api`.

use super::{PResult, Parser};
use crate::hale::syntax::ast::{
    ApiDecl, Clause, Denomination, FieldDecl, Ident, RoleDecl, RpcRowDecl, ScalarDecl, ScalarKind,
    TopicDecl, TypeBody, TypeDecl, TypeExpr, UnitDecl, UnitEquation, VariantDecl,
};
use crate::hale::syntax::lexer::Tok;

/// Splits a number token into its digits and its unit suffix
/// (`100ms` → `100`, `ms`).
pub(super) fn split_suffix(text: &str) -> (&str, &str) {
    let at = text
        .find(|c: char| c.is_ascii_alphabetic())
        .unwrap_or(text.len());
    text.split_at(at)
}

impl Parser<'_> {
    /// A type: a name with optional generic arguments, `[T]`, `[T; N]`,
    /// `(A, B)`, `()`, `fn(A) -> R`.
    pub(super) fn type_expr(&mut self) -> PResult<TypeExpr> {
        self.enter()?;
        let t = self.type_expr_inner();
        self.leave();
        t
    }

    fn type_expr_inner(&mut self) -> PResult<TypeExpr> {
        let start = self.span();
        if self.eat_punct("(").is_some() {
            if self.eat_punct(")").is_some() {
                return Ok(TypeExpr::Unit(self.since(start)));
            }
            let first = self.type_expr()?;
            if self.eat_punct(")").is_some() {
                return Ok(first);
            }
            let mut parts = vec![first];
            while self.eat_punct(",").is_some() {
                if self.at_punct(")") {
                    break;
                }
                parts.push(self.type_expr()?);
            }
            self.expect_punct(")", "to close the tuple type")?;
            return Ok(TypeExpr::Tuple(parts, self.since(start)));
        }
        if self.eat_punct("[").is_some() {
            let elem = Box::new(self.type_expr()?);
            let len = if self.eat_punct(";").is_some() {
                match &self.tok().tok {
                    Tok::Number(n) | Tok::Ident(n) => {
                        let n = n.clone();
                        self.bump();
                        Some(n)
                    }
                    _ => return Err(self.expected("the array's length after `;`")),
                }
            } else {
                None
            };
            self.expect_punct("]", "to close the array type")?;
            return Ok(TypeExpr::Array {
                elem,
                len,
                span: self.since(start),
            });
        }
        if self.at_word("fn") && self.nth_punct(1, "(") {
            self.bump();
            self.bump();
            let mut params = Vec::new();
            while !self.at_punct(")") {
                params.push(self.type_expr()?);
                if self.eat_punct(",").is_none() {
                    break;
                }
            }
            self.expect_punct(")", "to close the function type's parameters")?;
            let ret = if self.eat_punct("->").is_some() {
                Some(Box::new(self.type_expr()?))
            } else {
                None
            };
            return Ok(TypeExpr::Fn {
                params,
                ret,
                span: self.since(start),
            });
        }
        let path = self.path("a type")?;
        let mut args = Vec::new();
        if self.eat_punct("<").is_some() {
            loop {
                args.push(self.type_expr()?);
                if self.eat_punct(",").is_none() {
                    break;
                }
            }
            self.expect_punct(">", "to close the generic arguments")?;
        }
        Ok(TypeExpr::Named {
            path,
            args,
            span: self.since(start),
        })
    }

    /// `<T, U: Bound>` after a declared name, when written.
    pub(super) fn generic_params(&mut self) -> PResult<Vec<Ident>> {
        let mut out = Vec::new();
        if self.eat_punct("<").is_none() {
            return Ok(out);
        }
        loop {
            out.push(self.ident("a generic parameter's name")?);
            if self.eat_punct(":").is_some() {
                self.type_expr()?;
            }
            if self.eat_punct(",").is_none() {
                break;
            }
        }
        self.expect_punct(">", "to close the generic parameters")?;
        Ok(out)
    }

    pub(super) fn role_decl(&mut self) -> PResult<RoleDecl> {
        let start = self.bump().span;
        let name = self.ident("the role's name after `role`")?;
        let mut includes = Vec::new();
        if self.eat_word("includes").is_some() {
            includes = self.name_list(&format!("the roles `{}` includes", name.name))?;
        }
        self.expect_punct(";", &format!("after the role `{}`", name.name))?;
        Ok(RoleDecl {
            name,
            includes,
            span: self.since(start),
        })
    }

    /// `[a, b, …]`: a bracketed list of names (roles), possibly empty.
    pub(super) fn name_list(&mut self, what: &str) -> PResult<Vec<Ident>> {
        self.expect_punct("[", &format!("to open the list of {what}"))?;
        let mut out = Vec::new();
        while !self.at_punct("]") {
            out.push(self.ident(&format!("a name in the list of {what}"))?);
            if self.eat_punct(",").is_none() {
                break;
            }
        }
        self.expect_punct("]", &format!("to close the list of {what}"))?;
        Ok(out)
    }

    pub(super) fn unit_decl(&mut self) -> PResult<UnitDecl> {
        let start = self.bump().span;
        let name = self.ident("the unit's name after `unit`")?;
        let mut equation = None;
        if self.eat_punct("=").is_some() {
            let context = format!(
                "the factor of the unit `{}` (a positive integer or a ratio)",
                name.name
            );
            let Tok::Number(first) = self.tok().tok.clone() else {
                return Err(self.expected(&context));
            };
            let first_span = self.bump().span;
            let (digits, suffix) = split_suffix(&first);
            let mut factor = digits.replace('_', "");
            let mut target = None;
            if !suffix.is_empty() {
                let mut span = first_span;
                span.start.offset += digits.len();
                span.start.col += digits.chars().count() as u32;
                target = Some(Ident {
                    name: suffix.to_string(),
                    span,
                });
            } else {
                if self.eat_punct("/").is_some() {
                    let Tok::Number(den) = self.tok().tok.clone() else {
                        return Err(self.expected("the denominator of the ratio after `/`"));
                    };
                    let den_span = self.bump().span;
                    let (d, s) = split_suffix(&den);
                    factor = format!("{factor}/{}", d.replace('_', ""));
                    if !s.is_empty() {
                        let mut span = den_span;
                        span.start.offset += d.len();
                        span.start.col += d.chars().count() as u32;
                        target = Some(Ident {
                            name: s.to_string(),
                            span,
                        });
                    }
                }
                if target.is_none() && self.at_ident() {
                    target = Some(self.ident("the target unit")?);
                }
            }
            equation = Some(UnitEquation { factor, target });
        }
        self.expect_punct(";", &format!("after the unit `{}`", name.name))?;
        Ok(UnitDecl {
            name,
            equation,
            span: self.since(start),
        })
    }

    pub(super) fn type_decl(&mut self) -> PResult<TypeDecl> {
        let start = self.bump().span;
        let name = self.ident("the type's name after `type`")?;
        let generics = self.generic_params()?;
        let body = if self.at_punct("{") {
            TypeBody::Struct(self.struct_fields(&name)?)
        } else {
            self.expect_punct("=", &format!("or `{{` after the type `{}`", name.name))?;
            if self.at_word("enum") && self.nth_punct(1, "{") {
                self.bump();
                let variants = self.enum_variants(&name)?;
                self.eat_punct(";");
                TypeBody::Enum(variants)
            } else {
                self.scalar_or_alias(&name)?
            }
        };
        Ok(TypeDecl {
            name,
            generics,
            body,
            span: self.since(start),
        })
    }

    fn struct_fields(&mut self, ty: &Ident) -> PResult<Vec<FieldDecl>> {
        self.bump(); // `{`
        let mut fields = Vec::new();
        while self.eat_punct("}").is_none() {
            let start = self.span();
            let name = self.ident(&format!("a field of `{}` or `}}`", ty.name))?;
            self.expect_punct(":", &format!("and the type of the field `{}`", name.name))?;
            let fty = self.type_expr()?;
            let mut json_key = None;
            if self.at_word("json") && self.nth_punct(1, ":") {
                let tag = self.bump().span;
                self.bump();
                match &self.tok().tok {
                    Tok::Str(key) => {
                        let key = key.clone();
                        self.bump();
                        json_key = Some((key, self.since(tag)));
                    }
                    _ => {
                        return Err(
                            self.expected("the key of the `json:\"key\"` tag (a string literal)")
                        )
                    }
                }
            }
            let default = if self.eat_punct("=").is_some() {
                Some(self.expr()?)
            } else {
                None
            };
            self.expect_punct(";", &format!("after the field `{}`", name.name))?;
            fields.push(FieldDecl {
                name,
                ty: fty,
                json_key,
                default,
                span: self.since(start),
            });
        }
        Ok(fields)
    }

    fn enum_variants(&mut self, ty: &Ident) -> PResult<Vec<VariantDecl>> {
        self.bump(); // `{`
        let mut variants = Vec::new();
        while !self.at_punct("}") {
            let name = self.ident(&format!("a variant of `{}`", ty.name))?;
            let mut fields = Vec::new();
            if self.eat_punct("(").is_some() {
                loop {
                    fields.push(self.type_expr()?);
                    if self.eat_punct(",").is_none() || self.at_punct(")") {
                        break;
                    }
                }
                self.expect_punct(
                    ")",
                    &format!("to close the fields of the variant `{}`", name.name),
                )?;
            }
            variants.push(VariantDecl { name, fields });
            if self.eat_punct(",").is_none() {
                break;
            }
        }
        self.expect_punct("}", &format!("or `,` after a variant of `{}`", ty.name))?;
        Ok(variants)
    }

    /// After `type NAME =`: an alias, or a scalar (a kind word, `in`, or a
    /// clause block makes it one).
    fn scalar_or_alias(&mut self, name: &Ident) -> PResult<TypeBody> {
        let kind = match &self.tok().tok {
            Tok::Ident(w)
                if matches!(self.nth(1), Tok::Ident(_))
                    || self.nth_punct(1, "[")
                    || self.nth_punct(1, "(") =>
            {
                match w.as_str() {
                    "quantity" => Some(ScalarKind::Quantity),
                    "point" => Some(ScalarKind::Point),
                    "distinct" => Some(ScalarKind::Distinct),
                    _ => None,
                }
            }
            _ => None,
        };
        if kind.is_some() {
            self.bump();
        }
        let base = self.type_expr()?;
        let denomination = if self.eat_word("in").is_some() {
            Some(self.denomination()?)
        } else {
            None
        };
        let mut clauses = Vec::new();
        let block = self.at_punct("{");
        if block {
            clauses = self.clauses(&format!("in the clauses of `{}`", name.name))?;
            self.eat_punct(";");
        } else {
            self.expect_punct(";", &format!("after the type `{}`", name.name))?;
        }
        if kind.is_none() && denomination.is_none() && !block {
            return Ok(TypeBody::Alias(base));
        }
        Ok(TypeBody::Scalar(ScalarDecl {
            kind,
            base,
            denomination,
            clauses,
        }))
    }

    /// `cent`, `100ms`, `100 ms`.
    fn denomination(&mut self) -> PResult<Denomination> {
        let what = "a denomination after `in` (a unit, or a positive integer multiple of one)";
        match self.tok().tok.clone() {
            Tok::Ident(_) => Ok(Denomination {
                multiple: None,
                unit: self.ident(what)?,
            }),
            Tok::Number(n) => {
                let (digits, suffix) = split_suffix(&n);
                if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit() || c == '_') {
                    return Err(self.expected(what));
                }
                let span = self.bump().span;
                let multiple = Some(digits.replace('_', ""));
                if suffix.is_empty() {
                    let unit = self.ident("the unit after the denomination's multiple")?;
                    return Ok(Denomination { multiple, unit });
                }
                let mut uspan = span;
                uspan.start.offset += digits.len();
                uspan.start.col += digits.chars().count() as u32;
                Ok(Denomination {
                    multiple,
                    unit: Ident {
                        name: suffix.to_string(),
                        span: uspan,
                    },
                })
            }
            _ => Err(self.expected(what)),
        }
    }

    /// `{ name: value; … }`, each value kept as written.
    pub(super) fn clauses(&mut self, context: &str) -> PResult<Vec<Clause>> {
        self.bump(); // `{`
        let mut out = Vec::new();
        while self.eat_punct("}").is_none() {
            let start = self.span();
            let name = self.ident(&format!("a clause name or `}}` {context}"))?;
            self.eat_punct(":");
            let value = self.skip_to_semicolon(&format!("after the clause `{}`", name.name))?;
            out.push(Clause {
                name,
                value: self.text(value),
                span: self.since(start),
            });
        }
        Ok(out)
    }

    pub(super) fn topic_decl(&mut self) -> PResult<TopicDecl> {
        let start = self.bump().span;
        let name = self.ident("the topic's name after `topic`")?;
        let parent = if self.eat_punct(":").is_some() {
            Some(self.ident("the parent topic after `:`")?)
        } else {
            None
        };
        self.expect_punct("{", &format!("to open the topic `{}`", name.name))?;
        let mut payload = None;
        let mut subject = None;
        let mut other = Vec::new();
        while self.eat_punct("}").is_none() {
            let fstart = self.span();
            let field = self.ident(&format!("a field of the topic `{}` or `}}`", name.name))?;
            match field.name.as_str() {
                "payload" => {
                    self.expect_punct(":", "after `payload`")?;
                    payload = Some(self.type_expr()?);
                    self.expect_punct(";", "after the topic's payload type")?;
                }
                "subject" => {
                    self.expect_punct(":", "after `subject`")?;
                    let Tok::Str(s) = self.tok().tok.clone() else {
                        return Err(self.expected("the topic's wire subject (a string literal)"));
                    };
                    let span = self.bump().span;
                    subject = Some((s, span));
                    self.expect_punct(";", "after the topic's subject")?;
                }
                _ => {
                    self.eat_punct(":");
                    let value =
                        self.skip_to_semicolon(&format!("after the topic field `{}`", field.name))?;
                    other.push(Clause {
                        name: field,
                        value: self.text(value),
                        span: self.since(fstart),
                    });
                }
            }
        }
        Ok(TopicDecl {
            name,
            parent,
            payload,
            subject,
            other,
            span: self.since(start),
        })
    }

    pub(super) fn api_decl(&mut self) -> PResult<ApiDecl> {
        let start = self.bump().span;
        let name = self.ident("the surface's name after `api`")?;
        self.expect_punct("{", &format!("to open the surface `{}`", name.name))?;
        let mut rows = Vec::new();
        while self.eat_punct("}").is_none() {
            let rstart = self.span();
            self.expect_word("rpc", &format!("(a row of `{}`) or `}}`", name.name))?;
            let member = self.path("the row's handler as `Locus::fn` after `rpc`")?;
            if member.segments.len() < 2 {
                return Err(self.error(
                    member.span,
                    format!(
                        "a row names its handler as `Locus::fn`, and `{}` names no locus",
                        member.text()
                    ),
                ));
            }
            let requires = self.requires_opt(&member.text())?;
            self.expect_punct(";", &format!("after the row `{}`", member.text()))?;
            rows.push(RpcRowDecl {
                member,
                requires,
                span: self.since(rstart),
            });
        }
        Ok(ApiDecl {
            name,
            rows,
            span: self.since(start),
        })
    }

    /// `requires: [a, b]`, when written.
    fn requires_opt(&mut self, of: &str) -> PResult<Option<Vec<Ident>>> {
        if self.eat_word("requires").is_none() {
            return Ok(None);
        }
        self.expect_punct(":", "after `requires`")?;
        Ok(Some(self.name_list(&format!("roles `{of}` requires"))?))
    }
}
