//! The Flow host boundary (`flow-host-boundary.txt`).
