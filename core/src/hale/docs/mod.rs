//! The documents of Hale contracts, each a pure function of the rows
//! (§ The description, § Generated specs and clients, § gRPC: the `.proto`):
//!
//! - [`inventory`](mod@inventory): the program-wide inventory, and a bundle's surface-wide
//!   document;
//! - [`describe`](mod@describe): one exposure's description for one caller, built offline
//!   from `--holds` or live by the runtime's [`Describer`]
//!   ([`ExposureDescriber`]) from what admission decided;
//! - [`openapi`](mod@openapi), [`json_schema`](mod@json_schema), [`mcp`](mod@mcp): a surface's projections;
//! - [`proto`](mod@proto): the surface's `.proto`;
//! - [`export`](mod@export): the bundle `hale api export` writes, and what `--check`
//!   finds drifted.
//!
//! Documents are `serde_json` values whose keys keep the schema's order
//! (`preserve_order`); a server writes them compact. Nothing here reads a
//! path, a clock or the environment, so the same rows give the same bytes
//! on any run and any checkout.
//!
//! [`Describer`]: crate::hale::runtime::Describer

pub mod book;
pub mod describe;
mod error;
pub mod export;
pub mod inventory;
pub mod json_schema;
pub mod mcp;
pub mod openapi;
pub mod outcomes;
pub mod proto;
pub mod proto_file;
pub mod rows;

#[cfg(test)]
mod tests;

pub use describe::{caller_principal, describe_offline, DescriptionPlan, ExposureDescriber};
pub use error::{DocError, Form};
pub use export::{bundle, Bundle, Drift};
pub use inventory::{inventory, surface_inventory};
pub use json_schema::json_schema;
pub use mcp::{mcp, tools_from_description, McpDescriber};
pub use openapi::openapi;
pub use proto::proto;
