//! The front a connection loop makes for each connection it accepts: the
//! core's [`UnixFront`], [`HttpFront`] or [`McpFront`], or `limen-grpc`'s
//! [`GrpcFront`] (gRPC over HTTP/2), by the listener's [`Framing`]. The loop
//! holds every one as a [`Front`] and drives it through that trait alone.

use std::sync::Arc;

use limen_core::hale::runtime::{Correlation, PeerCredentials};
use limen_core::wire::front::{Front, FrontLimits};
use limen_core::wire::http::HttpFront;
use limen_core::wire::mcp::McpFront;
use limen_core::wire::unix::UnixFront;
use limen_core::wire::{grpc, mcp};
use limen_core::Timestamp;
use limen_grpc::{GrpcFront, GrpcLimits};

/// How a listener's connections are framed, beside the exposure it serves.
#[derive(Clone)]
pub(crate) enum Framing {
    /// Unix lines or Hale's HTTP, by the socket's kind.
    Plain,
    /// MCP's `POST /mcp`.
    Mcp(Arc<mcp::Framing>),
    /// gRPC over HTTP/2 (prior knowledge).
    Grpc(Arc<grpc::Framing>),
}

/// The front of a connection just accepted on a listener framed by
/// `framing`; `None` when none can be made (nghttp2 out of memory): the
/// connection is closed.
// One allocation a connection, beside the socket's own: the loop's slab
// holds every transport's front alike.
pub(crate) fn accept(
    now: Timestamp,
    limits: &FrontLimits,
    grpc_limits: GrpcLimits,
    framing: &Framing,
    unix: bool,
    peer: PeerCredentials,
    correlation: Correlation,
) -> Option<Box<dyn Front + Send>> {
    Some(match (framing, unix) {
        (_, true) => Box::new(UnixFront::new(now, limits.line, peer, correlation)),
        (Framing::Mcp(framing), false) => Box::new(McpFront::new(
            now,
            limits.http,
            framing.clone(),
            correlation,
        )),
        (Framing::Grpc(framing), false) => Box::new(GrpcFront::new(
            now,
            grpc_limits,
            framing.clone(),
            correlation,
        )?),
        (Framing::Plain, false) => Box::new(HttpFront::new(now, limits.http, correlation)),
    })
}
