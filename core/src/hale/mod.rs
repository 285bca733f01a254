//! The Hale API surface (`hale-api-surface.txt`): declarations, the model,
//! shapes and digests, the JSON codec and the exposure runtime.
//!
//! - [`syntax`]: the declaration subset of `.hl` — lexer, parser, diagnostics.
//! - [`model`]: the program model — roles, units, types, topics, loci, the
//!   surface rows, serve sites and exposures, hubs and stream rows.
//! - [`laws`]: the admission laws, each refusal in the spec's words at
//!   `file:line:col`, and law 6's notes.
//! - [`shape`]: a type's contract shape and shape hash.
//! - [`digest`]: the FNV-1a fold and the hash input texts of the surface and
//!   stream digests.
//! - [`codec`]: the JSON codec, strict decoding of a payload by its shape.
//! - [`runtime`]: the exposure machine, identity sources, outcomes and the
//!   fixture transport.
//! - [`docs`]: the documents — the inventory, descriptions, the OpenAPI, JSON
//!   Schema, MCP and `.proto` projections, the exported bundle — and the
//!   runtime's describer.
//! - [`imports`]: a program of several files, read through a loader.
//! - [`check_program`]: `hale check`'s one entry point
//!   ([`check_program_with`] for a program that imports).
//!
//! From text to digest:
//!
//! ```
//! use limen_core::hale::model::parse_program;
//!
//! let src = "role trader;\n\
//!            type Ask { n: Int; }\n\
//!            type Bid { ok: Bool; }\n\
//!            api Desk { rpc Book::ask requires: [trader]; }\n\
//!            locus Book { fn ask(a: Ask) -> Bid { return Bid { ok: true }; } }";
//! let program = parse_program("desk.hl", src).unwrap();
//! assert_eq!(program.surface_digest("Desk").unwrap().to_string().len(), "fnv1a64:".len() + 16);
//! ```
mod check;
pub mod client;
pub mod codec;
pub mod digest;
pub mod docs;
pub mod imports;
pub mod laws;
pub mod model;
pub mod protobuf;
pub mod runtime;
pub mod serving;
pub mod shape;
pub mod syntax;
pub mod tools;

pub use check::{check_program, check_program_with, Checked};
