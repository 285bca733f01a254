//! Function bodies: skipped, not executed, but read for what the boundary
//! needs of them — the `api::serve(…)` sites, the `let` bindings, the
//! `NAME.stop()` calls, the `violate` statements and the struct literals.
//!
//! The scan keeps a heap stack of the open brackets, so a body nests as deep
//! as it likes without recursion, and a mismatched or unclosed bracket is a
//! diagnostic naming the bracket it failed to close.

use super::{closer, PResult, Parser};
use crate::hale::syntax::ast::{Body, Ident, LetBinding, ServeCall, StopCall, ViolateStmt};
use crate::hale::syntax::diag::Span;
use crate::hale::syntax::lexer::Tok;

/// One open bracket of a body, and the `let`s its block holds.
struct Frame {
    close: &'static str,
    open: Span,
    lets: Vec<usize>,
}

impl Parser<'_> {
    /// The body at the cursor's `{`, through its matching `}`.
    pub(super) fn body(&mut self) -> PResult<Body> {
        let open = self.span();
        let mut body = Body::default();
        let mut stack: Vec<Frame> = Vec::new();
        loop {
            let t = self.tok().clone();
            match &t.tok {
                Tok::Eof => {
                    let open: Vec<(&'static str, Span)> =
                        stack.iter().map(|f| (f.close, f.open)).collect();
                    return Err(self.unclosed(&open));
                }
                Tok::Punct(p @ ("{" | "(" | "[")) => {
                    stack.push(Frame {
                        close: closer(p),
                        open: t.span,
                        lets: Vec::new(),
                    });
                    self.bump();
                }
                Tok::Punct(p @ ("}" | ")" | "]")) => {
                    let mut top: Vec<(&'static str, Span)> = stack
                        .last()
                        .map(|f| (f.close, f.open))
                        .into_iter()
                        .collect();
                    self.close_bracket(p, &mut top, t.span)?;
                    if let Some(frame) = stack.pop() {
                        for i in frame.lets {
                            body.lets[i].scope_end = t.span.start;
                        }
                    }
                    self.bump();
                    if stack.is_empty() {
                        body.span = self.since(open);
                        return Ok(body);
                    }
                }
                Tok::Ident(w) if w == "let" => self.body_let(&mut body, &mut stack)?,
                Tok::Ident(w) if w == "api" && self.serve_follows(0) => {
                    let call = self.serve_call(None)?;
                    body.serves.push(call);
                }
                Tok::Ident(name)
                    if self.nth_punct(1, ".")
                        && self.nth_word(2, "stop")
                        && self.nth_punct(3, "(") =>
                {
                    let target = Ident {
                        name: name.clone(),
                        span: t.span,
                    };
                    let end = self.toks[(self.pos + 3).min(self.toks.len() - 1)].span;
                    body.stops.push(StopCall {
                        target,
                        span: t.span.to(end),
                    });
                    self.bump();
                }
                Tok::Ident(w) if w == "violate" && matches!(self.nth(1), Tok::Ident(_)) => {
                    let start = self.bump().span;
                    let next = self.bump();
                    if let Tok::Ident(name) = next.tok {
                        let closure = Ident {
                            name,
                            span: next.span,
                        };
                        body.violates.push(ViolateStmt {
                            span: start.to(closure.span),
                            closure,
                        });
                    }
                }
                Tok::Ident(_) if self.literal_follows() => {
                    let (pos, depth) = (self.pos, self.depth);
                    if let Ok(e) = self.expr() {
                        if matches!(e, crate::hale::syntax::ast::Expr::Struct { .. }) {
                            body.literals.push(e);
                        }
                    }
                    // Scan the literal's tokens as any others: a serve site
                    // or a nested literal inside it is read in its turn.
                    self.pos = pos;
                    self.depth = depth;
                    self.bump();
                }
                _ => {
                    self.bump();
                }
            }
        }
    }

    /// Whether a struct literal starts at the cursor: a path that does not
    /// continue another (no `.` or `::` before it), then `{` and what
    /// opens a literal (`}`, `name:`, `name,`, `name }`).
    fn literal_follows(&self) -> bool {
        if self.pos > 0 && matches!(self.toks[self.pos - 1].tok, Tok::Punct("." | "::")) {
            return false;
        }
        let mut n = 1;
        while self.nth_punct(n, "::") && matches!(self.nth(n + 1), Tok::Ident(_)) {
            n += 2;
        }
        self.nth_punct(n, "{")
            && match self.nth(n + 1) {
                Tok::Punct("}") => true,
                Tok::Ident(_) => matches!(self.nth(n + 2), Tok::Punct(":" | "," | "}")),
                _ => false,
            }
    }

    /// Whether `api :: serve (` starts `n` tokens ahead.
    fn serve_follows(&self, n: usize) -> bool {
        matches!(self.nth(n), Tok::Ident(w) if w == "api")
            && self.nth_punct(n + 1, "::")
            && self.nth_word(n + 2, "serve")
            && self.nth_punct(n + 3, "(")
    }

    /// `api::serve(…)` at the cursor. Its arguments are declaration
    /// expressions, so an argument that does not parse is an error here.
    fn serve_call(&mut self, handle: Option<Ident>) -> PResult<ServeCall> {
        let start = self.span();
        self.bump();
        self.bump();
        self.bump(); // `api :: serve`
        let args = self.call_args(false)?;
        Ok(ServeCall {
            handle,
            args,
            span: self.since(start),
        })
    }

    /// `let [mut] NAME [: T] = …`: recorded with its initializer when that
    /// is a declaration expression; the scan then goes on after the `=`, so
    /// brackets and serve sites inside the initializer are seen as usual.
    fn body_let(&mut self, body: &mut Body, stack: &mut [Frame]) -> PResult<()> {
        let start = self.bump().span;
        if self.at_word("mut") && matches!(self.nth(1), Tok::Ident(_)) {
            self.bump();
        }
        let Tok::Ident(name) = self.tok().tok.clone() else {
            return Ok(()); // a pattern (`let (a, b) = …`): not a binding the boundary reads
        };
        let name = Ident {
            name,
            span: self.bump().span,
        };
        if self.eat_punct(":").is_some() {
            self.type_expr()?;
        }
        if !self.at_punct("=") {
            return Ok(());
        }
        self.bump();
        let span = start.to(name.span);
        let init = if self.serve_follows(0) {
            let call = self.serve_call(Some(name.clone()))?;
            body.serves.push(call);
            None
        } else {
            let (pos, depth) = (self.pos, self.depth);
            let parsed = self.expr().ok().filter(|_| self.at_punct(";"));
            self.pos = pos;
            self.depth = depth;
            parsed
        };
        let index = body.lets.len();
        body.lets.push(LetBinding {
            name,
            init,
            scope_end: self.span().start,
            span,
        });
        if let Some(frame) = stack.last_mut() {
            frame.lets.push(index);
        }
        Ok(())
    }
}
