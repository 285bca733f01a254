//! The role and bearer sources of the witness's hub, shared between the
//! hub that reads them and whatever changes them while it is served (the
//! replay's scenario steps: a revoke, an expiry): the core's shared
//! tables, which `hale serve`'s sources, and so `hale demo`'s control
//! socket, change too.

pub use limen_core::hale::runtime::{SharedRoles, SharedTokens};
