//! The Hale API surface (`hale-api-surface.txt`).
//!
//! - [`syntax`]: the declaration subset of `.hl` — lexer, parser, diagnostics.
pub mod syntax;
