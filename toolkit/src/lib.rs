//! limen-toolkit: write a Flow Tool implementation in Rust.
//!
//! An implementation is a process speaking the Tool protocol on its
//! standard input and output. This library is its side of it: it answers
//! describe from the declarations it serves (so its fingerprints are theirs),
//! decodes each call's arguments at the declared types, calls the author's
//! code and answers — a call whose arguments do not decode, or that names
//! no declaration served, NotRun; the declared error Failed; any other error
//! or a panic Unknown (§ Toolkits).
//!
//! `flow toolkit rust LISTING` ([`codegen::rust`]) generates, from a
//! `flow tools` listing, Rust types for every named type and a typed trait
//! `Tools` with a method per declaration; the author implements the trait
//! and calls the generated `serve`:
//!
//! ```ignore
//! include!("tools.rs"); // generated
//! struct Impl;
//! impl Tools for Impl {
//!     fn search(&self, _cx: &limen_toolkit::Context, query: String, limit: limen_toolkit::Int)
//!         -> Result<Vec<Hit>, limen_toolkit::Error<String>> {
//!         let limit = i64::try_from(&limit.0).map_err(|_| "limit too large".to_owned())?;
//!         # let _ = (query, limit); Ok(vec![])
//!     }
//! }
//! fn main() -> std::io::Result<()> { serve(Impl, limen_toolkit::Options::default()) }
//! ```
//!
//! Int is the exact [`Int`], Decimal the exact [`Decimal`]; a generic
//! Tool's type parameter values are [`Json`], with the schema the call
//! carries in [`Context::expects`].
//!
//! `flow toolkit python LISTING` ([`codegen::python`]) generates the same
//! from a listing for the Python toolkit (`toolkits/python`): a module of
//! dataclasses, tagged unions and a `Tools` protocol.
//!
//! The host's `cancel` reaches the call's code as [`Context::cancel`], a
//! [`Cancel`] token to poll or wait on; a call cancelled before its code
//! started is answered NotRun, one that started is answered with what its
//! code returns, and no call's thread is ever killed.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod cancel;
pub mod codegen;
pub mod convert;
pub mod publish;
mod serve;

pub use cancel::Cancel;
pub use convert::{Bytes, Dict, FromValue, HostToken, IntoValue, Json, Never, Set};
pub use limen_core::flow::tool::toolkit::ToolkitLimits;
pub use limen_core::flow::tool::{CallKey, Reply, Tool};
pub use limen_core::flow::{Decimal, Duration, Instant, Int, JsonValue, Value};
pub use publish::publish;
pub use serve::{
    run_call, serve, serve_listing, serve_on, Context, Error, Options, Service, HAND_OFF,
};

/// The next argument, for generated code: a value that is not of its
/// declared type is a NotRun reason.
pub fn arg<T: FromValue>(args: &mut std::vec::IntoIter<Value>, name: &str) -> Result<T, String> {
    match args.next() {
        Some(v) => T::from_value(v).map_err(|e| format!("the argument `{name}`: {e}")),
        None => Err(format!("the argument `{name}` is missing")),
    }
}

/// The reply for what the author's code returned, for generated code.
pub fn reply<T: IntoValue, E: IntoValue>(result: Result<T, Error<E>>) -> Reply {
    match result {
        Ok(v) => Reply::Ok(v.into_value()),
        Err(Error::Failed(e)) => Reply::Failed(e.into_value()),
        Err(Error::NotRun(why)) => Reply::NotRun(why),
        Err(Error::Unknown(why)) => Reply::Unknown(why),
    }
}
