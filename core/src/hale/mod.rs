//! The Hale API surface (`hale-api-surface.txt`).

pub mod runtime;
