//! The declaration subset of `.hl`: lexer, parser and diagnostics.
//!
//! [`parse`] reads every declaration form the boundary reads (roles, units,
//! types, topics, `api` blocks, loci with their params, bus, closure,
//! placement and bindings blocks, functions with their attributes) and
//! skips function bodies, reading from them only the `api::serve(…)` sites,
//! the `let` bindings, the `NAME.stop()` calls, the `violate` statements and
//! the struct literals ([`ast::Body`]). Every
//! syntax error is a [`Diagnostic`]; the parser never panics, and nesting is
//! bounded by [`MAX_NESTING`].

pub mod ast;
pub mod diag;
pub mod lexer;
mod parser;

#[cfg(test)]
mod tests;

pub use diag::{Diagnostic, Pos, Sources, Span};
pub use parser::{RETIRED_API_ENTRY, RETIRED_GATED};

/// How deep declaration expressions and types may nest (brackets, operator
/// chains, field chains). Deeper input is refused with a diagnostic rather
/// than risk the stack; a function body is scanned without recursion and
/// may nest as deep as it likes.
pub const MAX_NESTING: usize = 64;

/// Parses `src`, the text of the file named `file` (the name is only used
/// in diagnostics).
pub fn parse(file: &str, src: &str) -> Result<ast::File, Diagnostic> {
    parse_at(file, src, 0)
}

/// Parses `src` as [`parse`] does, every [`Pos::offset`] of the result
/// counted from `base` rather than from 0 (lines and columns stay the
/// file's own). A program of several files parses each at a base of its
/// own, so one offset names one place in one file
/// ([`Sources`]); a syntax error is at the file's own
/// offsets, as [`parse`] gives it.
pub fn parse_at(file: &str, src: &str, base: usize) -> Result<ast::File, Diagnostic> {
    parser::Parser::new(file, src, base)?.file()
}
