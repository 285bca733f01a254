//! Declaration expressions: what a param's default, a literal's field, a
//! serve site's argument, a binding's option or an attribute's argument is.
//! Statements and block expressions are a body's, which is not parsed.

use super::{PResult, Parser};
use crate::hale::syntax::ast::{Arg, Expr, FieldInit, UnOp};
use crate::hale::syntax::lexer::Tok;

/// Binary operators by precedence, loosest first.
const BINARY: &[(&str, u8)] = &[
    ("||", 1),
    ("&&", 2),
    ("==", 3),
    ("!=", 3),
    ("<", 3),
    (">", 3),
    ("<=", 3),
    (">=", 3),
    ("..", 4),
    ("..=", 4),
    ("|", 5),
    ("^", 6),
    ("&", 7),
    ("+", 8),
    ("-", 8),
    ("*", 9),
    ("/", 9),
    ("%", 9),
];

impl Parser<'_> {
    /// One expression.
    pub(super) fn expr(&mut self) -> PResult<Expr> {
        self.binary(0)
    }

    fn binary(&mut self, min: u8) -> PResult<Expr> {
        self.enter()?;
        let result = self.binary_inner(min);
        self.leave();
        result
    }

    /// A chain of operators nests its tree as deep as it is long, so each
    /// operator counts as a level of nesting (dropping a tree is recursive).
    fn binary_inner(&mut self, min: u8) -> PResult<Expr> {
        let mut lhs = self.unary()?;
        let mut levels = 0;
        let result = loop {
            let Tok::Punct(p) = self.tok().tok else {
                break Ok(lhs);
            };
            let Some(&(op, prec)) = BINARY.iter().find(|(o, _)| *o == p) else {
                break Ok(lhs);
            };
            if prec < min {
                break Ok(lhs);
            }
            if let Err(e) = self.enter() {
                break Err(e);
            }
            levels += 1;
            self.bump();
            let rhs = match self.binary(prec + 1) {
                Ok(rhs) => rhs,
                Err(e) => break Err(e),
            };
            let span = lhs.span().to(rhs.span());
            lhs = Expr::Binary {
                op,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
                span,
            };
        };
        self.depth -= levels;
        result
    }

    fn unary(&mut self) -> PResult<Expr> {
        let op = if self.at_punct("-") {
            UnOp::Neg
        } else if self.at_punct("!") {
            UnOp::Not
        } else {
            return self.postfix();
        };
        let start = self.bump().span;
        self.enter()?;
        let operand = self.unary();
        self.leave();
        let operand = operand?;
        let span = start.to(operand.span());
        Ok(Expr::Unary {
            op,
            expr: Box::new(operand),
            span,
        })
    }

    fn postfix(&mut self) -> PResult<Expr> {
        let mut levels = 0;
        let result = self.postfix_chain(&mut levels);
        self.depth -= levels;
        result
    }

    /// Each `.f`, `(…)` or `[…]` nests the tree one level deeper, so each
    /// counts as a level of nesting.
    fn postfix_chain(&mut self, levels: &mut usize) -> PResult<Expr> {
        let start = self.span();
        let mut e = self.primary()?;
        loop {
            if self.at_punct(".") || self.at_punct("(") || self.at_punct("[") {
                self.enter()?;
                *levels += 1;
            }
            if self.at_punct(".") {
                self.bump();
                let name = match &self.tok().tok {
                    Tok::Ident(_) => self.ident("a field name after `.`")?,
                    Tok::Number(n) if n.chars().all(|c| c.is_ascii_digit()) => {
                        let name = n.clone();
                        let span = self.bump().span;
                        crate::hale::syntax::ast::Ident { name, span }
                    }
                    _ => return Err(self.expected("a field name after `.`")),
                };
                e = Expr::Field {
                    base: Box::new(e),
                    name,
                    span: self.since(start),
                };
            } else if self.at_punct("(") {
                let args = self.call_args(false)?;
                e = Expr::Call {
                    callee: Box::new(e),
                    args,
                    span: self.since(start),
                };
            } else if self.at_punct("[") {
                self.bump();
                let index = self.expr()?;
                self.expect_punct("]", "to close the index")?;
                e = Expr::Index {
                    base: Box::new(e),
                    index: Box::new(index),
                    span: self.since(start),
                };
            } else {
                return Ok(e);
            }
        }
    }

    fn primary(&mut self) -> PResult<Expr> {
        let start = self.span();
        match self.tok().tok.clone() {
            Tok::Number(n) => {
                self.bump();
                Ok(Expr::Number(n, start))
            }
            Tok::Str(s) => {
                self.bump();
                Ok(Expr::Str(s, start))
            }
            Tok::Punct("(") => {
                self.bump();
                if self.eat_punct(")").is_some() {
                    return Ok(Expr::Unit(self.since(start)));
                }
                let first = self.expr()?;
                if self.eat_punct(")").is_some() {
                    return Ok(first);
                }
                let mut parts = vec![first];
                while self.eat_punct(",").is_some() {
                    if self.at_punct(")") {
                        break;
                    }
                    parts.push(self.expr()?);
                }
                self.expect_punct(")", "to close the parenthesis")?;
                Ok(Expr::Tuple(parts, self.since(start)))
            }
            Tok::Punct("[") => {
                self.bump();
                let mut items = Vec::new();
                while !self.at_punct("]") {
                    items.push(self.expr()?);
                    if self.eat_punct(",").is_none() {
                        break;
                    }
                }
                self.expect_punct("]", "or `,` in the list")?;
                Ok(Expr::List(items, self.since(start)))
            }
            Tok::Punct("{") => {
                self.bump();
                let mut entries = Vec::new();
                while !self.at_punct("}") {
                    let key = self.path("a name (a key of the map) or `}`")?;
                    self.expect_punct(":", &format!("after the key `{}`", key.text()))?;
                    let value = self.expr()?;
                    entries.push((key, value));
                    if self.eat_punct(",").is_none() {
                        break;
                    }
                }
                self.expect_punct("}", "or `,` in the map")?;
                Ok(Expr::Map(entries, self.since(start)))
            }
            Tok::Ident(_) => {
                let path = self.path("an expression")?;
                if self.at_punct("{") && self.struct_literal_follows() {
                    return self.struct_literal(path);
                }
                Ok(Expr::Path(path))
            }
            _ => Err(self.expected("an expression")),
        }
    }

    /// Whether the `{` at the cursor opens a struct literal: `{ }`,
    /// `{ name: …`, `{ name, …` or `{ name }`.
    fn struct_literal_follows(&self) -> bool {
        match self.nth(1) {
            Tok::Punct("}") => true,
            Tok::Ident(_) => {
                matches!(self.nth(2), Tok::Punct(":" | "," | "}"))
            }
            _ => false,
        }
    }

    fn struct_literal(&mut self, path: crate::hale::syntax::ast::Path) -> PResult<Expr> {
        let start = path.span;
        self.bump(); // `{`
        let mut fields = Vec::new();
        while !self.at_punct("}") {
            let name = self.ident(&format!("a field of the `{}` literal or `}}`", path.text()))?;
            let value = if self.eat_punct(":").is_some() {
                self.expr()?
            } else {
                Expr::Path(crate::hale::syntax::ast::Path {
                    segments: vec![name.clone()],
                    span: name.span,
                })
            };
            fields.push(FieldInit { name, value });
            if self.eat_punct(",").is_none() {
                break;
            }
        }
        self.expect_punct("}", &format!("or `,` in the `{}` literal", path.text()))?;
        Ok(Expr::Struct {
            path,
            fields,
            span: self.since(start),
        })
    }

    /// `(arg, name: arg, …)`; with `eq`, `name = arg` is a named argument too
    /// (an attribute's `@form(vec, cap = 4)`).
    pub(super) fn call_args(&mut self, eq: bool) -> PResult<Vec<Arg>> {
        self.expect_punct("(", "")?;
        let mut args = Vec::new();
        while !self.at_punct(")") {
            let named = matches!(self.tok().tok, Tok::Ident(_))
                && (self.nth_punct(1, ":") || (eq && self.nth_punct(1, "=")));
            let name = if named {
                let n = self.ident("an argument name")?;
                self.bump();
                Some(n)
            } else {
                None
            };
            let value = self.expr()?;
            args.push(Arg { name, value });
            if self.eat_punct(",").is_none() {
                break;
            }
        }
        self.expect_punct(")", "or `,` in the arguments")?;
        Ok(args)
    }
}
