//! The Hale API surface (`hale-api-surface.txt`).
