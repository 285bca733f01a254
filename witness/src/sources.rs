//! The role and bearer sources of the witness's hub, shared between the
//! hub that reads them and whatever changes them while it is served (the
//! demo's control socket: a revoke, an expiry; the replay's scenario
//! steps): the core's shared tables, which `hale serve` uses too.

pub use limen_core::hale::runtime::{SharedRoles, SharedTokens};
