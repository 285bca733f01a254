//! The recursive-descent parser over the lexer's tokens.
//!
//! Every production either consumes a token or fails, so no loop can spin;
//! every recursive production goes through [`Parser::enter`], so nesting is
//! bounded by [`MAX_NESTING`](super::MAX_NESTING) and a deep input is a
//! diagnostic, never a stack overflow. Bodies are scanned with a heap stack
//! of open brackets (`body.rs`), not by recursion.

mod body;
mod expr;
mod locus;
mod types;

use super::ast::{Attribute, ConstDecl, File, Ident, ImportDecl, Item, Path};
use super::diag::{Diagnostic, Pos, Span};
use super::lexer::{lex, Tok, Token};
use super::MAX_NESTING;

pub(super) type PResult<T> = Result<T, Diagnostic>;

/// The diagnostic of the retired structural entry, `bindings { api: … }`
/// (§ What this replaced), naming what replaced it.
pub const RETIRED_API_ENTRY: &str = "`bindings { api: … }` is retired: a program's API is a \
     surface, an `api` block (`rpc Locus::member requires: [role];`) or `@rpc(requires: [role])` \
     on a handler, served by `api::serve(Surface, transport, as: \"name\", …)` in `run()`; a \
     stream is a topic bound to a hub (`bindings { Topic: self.hub requires: [role], …; }`)";

/// The diagnostic of the retired `@gated` (§ What this replaced), naming
/// what replaced it.
pub const RETIRED_GATED: &str = "`@gated` is retired: the roles a caller needs are the \
     `requires` of the member's row (`rpc Locus::member requires: [role];` in an `api` block, or \
     `@rpc(requires: [role])`), checked where `api::serve(…)` serves it; a stream's are the \
     `requires` of its topic's binding to a hub";

pub(super) struct Parser<'a> {
    file: &'a str,
    src: &'a str,
    /// Added to every offset the parser hands out (see [`super::parse_at`]);
    /// taken off again wherever the parser reads its own `src` by a span.
    base: usize,
    toks: Vec<Token>,
    pos: usize,
    depth: usize,
}

/// How a token is named in a message.
fn describe(tok: &Tok) -> String {
    match tok {
        Tok::Ident(w) => format!("`{w}`"),
        Tok::Number(n) => format!("`{n}`"),
        Tok::Str(_) => "a string literal".to_string(),
        Tok::Punct(p) => format!("`{p}`"),
        Tok::Eof => "the end of the file".to_string(),
    }
}

impl<'a> Parser<'a> {
    pub(super) fn new(file: &'a str, src: &'a str, base: usize) -> PResult<Parser<'a>> {
        let mut toks = lex(file, src)?;
        for t in &mut toks {
            t.span.start.offset += base;
            t.span.end.offset += base;
        }
        Ok(Parser {
            file,
            src,
            base,
            toks,
            pos: 0,
            depth: 0,
        })
    }

    /// `span` as an offset into this parser's own `src`.
    fn local(&self, mut span: Span) -> Span {
        span.start.offset = span.start.offset.saturating_sub(self.base);
        span.end.offset = span.end.offset.saturating_sub(self.base);
        span
    }

    // ── the cursor ──────────────────────────────────────────────────────

    fn tok(&self) -> &Token {
        &self.toks[self.pos]
    }

    fn nth(&self, n: usize) -> &Tok {
        &self.toks[(self.pos + n).min(self.toks.len() - 1)].tok
    }

    fn span(&self) -> Span {
        self.tok().span
    }

    /// The end of the last token consumed.
    fn prev_end(&self) -> Pos {
        if self.pos == 0 {
            self.toks[0].span.start
        } else {
            self.toks[self.pos - 1].span.end
        }
    }

    /// The span from `start` to the end of the last token consumed.
    fn since(&self, start: Span) -> Span {
        Span {
            start: start.start,
            end: self.prev_end().max(start.end),
        }
    }

    fn bump(&mut self) -> Token {
        let t = self.toks[self.pos].clone();
        if t.tok != Tok::Eof {
            self.pos += 1;
        }
        t
    }

    fn at_eof(&self) -> bool {
        self.tok().tok == Tok::Eof
    }

    fn at_punct(&self, p: &str) -> bool {
        matches!(&self.tok().tok, Tok::Punct(q) if *q == p)
    }

    fn nth_punct(&self, n: usize, p: &str) -> bool {
        matches!(self.nth(n), Tok::Punct(q) if *q == p)
    }

    fn at_word(&self, w: &str) -> bool {
        matches!(&self.tok().tok, Tok::Ident(x) if x == w)
    }

    fn nth_word(&self, n: usize, w: &str) -> bool {
        matches!(self.nth(n), Tok::Ident(x) if x == w)
    }

    fn at_ident(&self) -> bool {
        matches!(self.tok().tok, Tok::Ident(_))
    }

    fn eat_punct(&mut self, p: &str) -> Option<Span> {
        if self.at_punct(p) {
            Some(self.bump().span)
        } else {
            None
        }
    }

    fn eat_word(&mut self, w: &str) -> Option<Span> {
        if self.at_word(w) {
            Some(self.bump().span)
        } else {
            None
        }
    }

    // ── errors ──────────────────────────────────────────────────────────

    fn error(&self, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic::at(self.file, self.src, self.local(span), message)
    }

    /// "expected {what}, found {the current token}", at the current token.
    fn expected(&self, what: &str) -> Diagnostic {
        let found = describe(&self.tok().tok);
        self.error(self.span(), format!("expected {what}, found {found}"))
    }

    fn expect_punct(&mut self, p: &str, context: &str) -> PResult<Span> {
        match self.eat_punct(p) {
            Some(s) => Ok(s),
            None if context.is_empty() => Err(self.expected(&format!("`{p}`"))),
            None => Err(self.expected(&format!("`{p}` {context}"))),
        }
    }

    fn expect_word(&mut self, w: &str, context: &str) -> PResult<Span> {
        match self.eat_word(w) {
            Some(s) => Ok(s),
            None => Err(self.expected(format!("`{w}` {context}").trim_end())),
        }
    }

    /// An identifier, or "expected {what}".
    fn ident(&mut self, what: &str) -> PResult<Ident> {
        match &self.tok().tok {
            Tok::Ident(name) => {
                let name = name.clone();
                let span = self.bump().span;
                Ok(Ident { name, span })
            }
            _ => Err(self.expected(what)),
        }
    }

    /// `IDENT (:: IDENT)*`
    fn path(&mut self, what: &str) -> PResult<Path> {
        let first = self.ident(what)?;
        let mut span = first.span;
        let mut segments = vec![first];
        while self.at_punct("::") && matches!(self.nth(1), Tok::Ident(_)) {
            self.bump();
            let seg = self.ident("a name after `::`")?;
            span = span.to(seg.span);
            segments.push(seg);
        }
        Ok(Path { segments, span })
    }

    /// Enters one level of nesting, refusing past [`MAX_NESTING`].
    fn enter(&mut self) -> PResult<()> {
        if self.depth >= MAX_NESTING {
            return Err(self.error(
                self.span(),
                format!("this nests deeper than the {MAX_NESTING} levels a declaration may"),
            ));
        }
        self.depth += 1;
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// Skips one bracketed group starting at the current `{`, `(` or `[`,
    /// refusing a mismatched or unclosed bracket. Uses a heap stack.
    fn skip_group(&mut self) -> PResult<Span> {
        let start = self.span();
        let mut stack: Vec<(&'static str, Span)> = Vec::new();
        loop {
            let t = self.tok().clone();
            match t.tok {
                Tok::Punct(p @ ("{" | "(" | "[")) => {
                    stack.push((closer(p), t.span));
                    self.bump();
                }
                Tok::Punct(p @ ("}" | ")" | "]")) => {
                    self.close_bracket(p, &mut stack, t.span)?;
                    self.bump();
                    if stack.is_empty() {
                        return Ok(self.since(start));
                    }
                }
                Tok::Eof => return Err(self.unclosed(&stack)),
                _ => {
                    self.bump();
                }
            }
        }
    }

    /// Pops the bracket `p` closes, refusing a mismatch.
    fn close_bracket(
        &self,
        p: &str,
        stack: &mut Vec<(&'static str, Span)>,
        at: Span,
    ) -> PResult<()> {
        match stack.last() {
            Some((want, _)) if *want == p => {
                stack.pop();
                Ok(())
            }
            Some((want, open)) => Err(self.error(
                at,
                format!(
                    "mismatched `{p}`: the `{}` at {}:{} is closed by `{want}`",
                    opener(want),
                    open.start.line,
                    open.start.col
                ),
            )),
            None => Err(self.error(at, format!("unmatched `{p}`"))),
        }
    }

    /// The error for an end of file with brackets still open.
    fn unclosed(&self, stack: &[(&'static str, Span)]) -> Diagnostic {
        match stack.last() {
            Some((want, open)) => self.error(
                self.span(),
                format!(
                    "unexpected end of the file: the `{}` at {}:{} is never closed",
                    opener(want),
                    open.start.line,
                    open.start.col
                ),
            ),
            None => self.expected("more"),
        }
    }

    /// Skips tokens up to the `;` ending a clause (bracketed groups skipped
    /// whole) and consumes it; the span covers the skipped tokens.
    fn skip_to_semicolon(&mut self, context: &str) -> PResult<Span> {
        let start = self.span();
        let mut any = false;
        loop {
            if self.at_punct(";") {
                let span = if any {
                    self.since(start)
                } else {
                    Span {
                        start: start.start,
                        end: start.start,
                    }
                };
                self.bump();
                return Ok(span);
            }
            if self.at_eof() || self.at_punct("}") || self.at_punct(")") || self.at_punct("]") {
                return Err(self.expected(&format!("`;` {context}")));
            }
            if self.at_punct("{") || self.at_punct("(") || self.at_punct("[") {
                self.skip_group()?;
            } else {
                self.bump();
            }
            any = true;
        }
    }

    /// The source text of a span.
    fn text(&self, span: Span) -> String {
        let span = self.local(span);
        self.src[span.start.offset..span.end.offset.max(span.start.offset)].to_string()
    }

    // ── the file ────────────────────────────────────────────────────────

    pub(super) fn file(&mut self) -> PResult<File> {
        let mut items = Vec::new();
        while !self.at_eof() {
            let attrs = self.attributes()?;
            let start = self.span();
            let is_locus =
                self.at_word("locus") || (self.at_word("main") && self.nth_word(1, "locus"));
            if !attrs.is_empty() && !is_locus && !self.at_word("fn") {
                return Err(self.expected("a `fn` or a `locus` after its attributes"));
            }
            let item = match &self.tok().tok {
                Tok::Ident(w) => match w.as_str() {
                    "import" => Item::Import(self.import_decl()?),
                    "role" => Item::Role(self.role_decl()?),
                    "unit" => Item::Unit(self.unit_decl()?),
                    "type" => Item::Type(self.type_decl()?),
                    "topic" => Item::Topic(self.topic_decl()?),
                    "api" => Item::Api(self.api_decl()?),
                    "locus" | "main" if is_locus => Item::Locus(self.locus_decl(attrs)?),
                    "fn" => Item::Fn(self.fn_decl(attrs, super::ast::FnKind::Plain)?),
                    "const" => Item::Const(self.const_decl()?),
                    "interface" | "perspective" | "target" | "module" => self.other_decl(start)?,
                    _ => return Err(self.top_level_expected()),
                },
                _ => return Err(self.top_level_expected()),
            };
            items.push(item);
        }
        Ok(File { items })
    }

    fn top_level_expected(&self) -> Diagnostic {
        self.expected(
            "a declaration (`role`, `unit`, `type`, `topic`, `api`, `locus`, `main locus`, `fn`, `const` or `import`)",
        )
    }

    /// `@name` or `@name(args)`, any number; the retired `@gated` is
    /// refused (`RETIRED_GATED`).
    fn attributes(&mut self) -> PResult<Vec<Attribute>> {
        let mut out = Vec::new();
        while let Some(at) = self.eat_punct("@") {
            let name = self.ident("an attribute name after `@`")?;
            if name.name == "gated" {
                // § What this replaced: gating by attribute is retired.
                return Err(self.error(self.since(at), RETIRED_GATED));
            }
            let args = if self.at_punct("(") {
                Some(self.call_args(true)?)
            } else {
                None
            };
            out.push(Attribute {
                name,
                args,
                span: self.since(at),
            });
        }
        Ok(out)
    }

    fn import_decl(&mut self) -> PResult<ImportDecl> {
        let start = self.bump().span;
        let path = match &self.tok().tok {
            Tok::Str(s) => {
                let s = s.clone();
                self.bump();
                s
            }
            _ => return Err(self.expected("the imported path (a string literal) after `import`")),
        };
        self.expect_word("as", "and the import's name after its path")?;
        let alias = self.ident("the import's name after `as`")?;
        self.expect_punct(";", "after the import")?;
        Ok(ImportDecl {
            path,
            alias,
            span: self.since(start),
        })
    }

    fn const_decl(&mut self) -> PResult<ConstDecl> {
        let start = self.bump().span;
        let name = self.ident("the constant's name after `const`")?;
        let ty = if self.eat_punct(":").is_some() {
            Some(self.type_expr()?)
        } else {
            None
        };
        self.expect_punct(
            "=",
            &format!("and the value of the constant `{}`", name.name),
        )?;
        // A constant's value may be any compile-time expression; one that is
        // no declaration expression is skipped to its `;`.
        let (pos, depth) = (self.pos, self.depth);
        let value = match self.expr() {
            Ok(v) if self.at_punct(";") => Some(v),
            _ => {
                self.pos = pos;
                self.depth = depth;
                None
            }
        };
        self.skip_to_semicolon(&format!("after the value of the constant `{}`", name.name))?;
        Ok(ConstDecl {
            name,
            ty,
            value,
            span: self.since(start),
        })
    }

    /// A declaration the boundary does not read: its word, its name, and
    /// everything up to its closing `}` or `;`.
    fn other_decl(&mut self, start: Span) -> PResult<Item> {
        let keyword = self.ident("a declaration")?;
        let name = if self.at_ident() {
            Some(self.ident("a name")?)
        } else {
            None
        };
        loop {
            if self.at_punct("{") {
                self.skip_group()?;
                break;
            }
            if self.eat_punct(";").is_some() {
                break;
            }
            if self.at_eof() {
                return Err(
                    self.expected(&format!("the body of the `{}` declaration", keyword.name))
                );
            }
            if self.at_punct("(") || self.at_punct("[") {
                self.skip_group()?;
            } else {
                self.bump();
            }
        }
        Ok(Item::Other {
            keyword,
            name,
            span: self.since(start),
        })
    }
}

fn closer(open: &str) -> &'static str {
    match open {
        "{" => "}",
        "(" => ")",
        _ => "]",
    }
}

fn opener(close: &str) -> &'static str {
    match close {
        "}" => "{",
        ")" => "(",
        _ => "[",
    }
}
