//! The Hale API surface (`hale-api-surface.txt`).

pub mod codec;
pub mod runtime;
