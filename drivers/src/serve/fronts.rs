//! The fronts a connection loop drives: the core's [`Front`] (Unix lines,
//! HTTP/1.1, MCP) and `limen-grpc`'s [`GrpcFront`] (gRPC over HTTP/2),
//! behind one type with the fronts' one set of methods, so the loop holds
//! either the same way.

use std::sync::Arc;

use limen_core::hale::runtime::{Correlation, Delivery, PeerCredentials};
use limen_core::wire::front::{Front, FrontEvent, FrontKind, FrontLimits};
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

/// One connection's front. See the module documentation.
// The core's front is the common one (every HTTP, MCP and Unix
// connection): boxing it would cost an allocation per connection, where
// the slab of connections holds it in place.
#[allow(clippy::large_enum_variant)]
pub(crate) enum AnyFront {
    /// Unix lines, HTTP/1.1, MCP.
    Core(Front),
    /// gRPC.
    Grpc(GrpcFront),
}

impl AnyFront {
    /// The front of a connection just accepted on a listener framed by
    /// `framing`; `None` when none can be made (nghttp2 out of memory):
    /// the connection is closed.
    pub(crate) fn accept(
        now: Timestamp,
        limits: &FrontLimits,
        grpc_limits: GrpcLimits,
        framing: &Framing,
        unix: bool,
        peer: PeerCredentials,
        correlation: Correlation,
    ) -> Option<AnyFront> {
        Some(match (framing, unix) {
            (_, true) => AnyFront::Core(Front::unix(now, limits.line, peer, correlation)),
            (Framing::Mcp(framing), false) => {
                AnyFront::Core(Front::mcp(now, limits.http, framing.clone(), correlation))
            }
            (Framing::Grpc(framing), false) => AnyFront::Grpc(GrpcFront::new(
                now,
                grpc_limits,
                framing.clone(),
                correlation,
            )?),
            (Framing::Plain, false) => AnyFront::Core(Front::http(now, limits.http, correlation)),
        })
    }

    /// See [`Front::set_keep_raw`]; a gRPC front keeps none (nothing
    /// records gRPC exchanges yet).
    pub(crate) fn set_keep_raw(&mut self, keep: bool) {
        if let AnyFront::Core(f) = self {
            f.set_keep_raw(keep);
        }
    }

    /// The transport, for a recording; `None` for gRPC.
    pub(crate) fn kind(&self) -> Option<FrontKind> {
        match self {
            AnyFront::Core(f) => Some(f.kind()),
            AnyFront::Grpc(_) => None,
        }
    }

    pub(crate) fn correlation(&self) -> Correlation {
        match self {
            AnyFront::Core(f) => f.correlation(),
            AnyFront::Grpc(f) => f.correlation(),
        }
    }

    /// Whether closing the connection now should linger
    /// ([`Front::lingers`]); a gRPC connection ends with GOAWAY, never so.
    pub(crate) fn lingers(&self) -> bool {
        match self {
            AnyFront::Core(f) => f.lingers(),
            AnyFront::Grpc(_) => false,
        }
    }

    pub(crate) fn wants_read(&self) -> bool {
        match self {
            AnyFront::Core(f) => f.wants_read(),
            AnyFront::Grpc(f) => f.wants_read(),
        }
    }

    pub(crate) fn handle_data(&mut self, now: Timestamp, data: &[u8]) {
        match self {
            AnyFront::Core(f) => f.handle_data(now, data),
            AnyFront::Grpc(f) => f.handle_data(now, data),
        }
    }

    pub(crate) fn handle_eof(&mut self, now: Timestamp) {
        match self {
            AnyFront::Core(f) => f.handle_eof(now),
            AnyFront::Grpc(f) => f.handle_eof(now),
        }
    }

    pub(crate) fn handle_timeout(&mut self, now: Timestamp) {
        match self {
            AnyFront::Core(f) => f.handle_timeout(now),
            AnyFront::Grpc(f) => f.handle_timeout(now),
        }
    }

    pub(crate) fn poll_timeout(&self) -> Option<Timestamp> {
        match self {
            AnyFront::Core(f) => f.poll_timeout(),
            AnyFront::Grpc(f) => f.poll_timeout(),
        }
    }

    pub(crate) fn poll_event(&mut self) -> Option<FrontEvent> {
        match self {
            AnyFront::Core(f) => f.poll_event(),
            AnyFront::Grpc(f) => f.poll_event(),
        }
    }

    pub(crate) fn deliver(&mut self, now: Timestamp, delivery: Delivery) -> usize {
        match self {
            AnyFront::Core(f) => f.deliver(now, delivery),
            AnyFront::Grpc(f) => f.deliver(now, delivery),
        }
    }

    pub(crate) fn abort(&mut self) {
        match self {
            AnyFront::Core(f) => f.abort(),
            AnyFront::Grpc(f) => f.abort(),
        }
    }

    /// The exposure stopped: a gRPC connection sends GOAWAY after the
    /// replies already queued and closes once its streams are done (§
    /// gRPC's `stop()`). The other fronts end with their one request or
    /// their peer.
    pub(crate) fn stop(&mut self, now: Timestamp) {
        if let AnyFront::Grpc(f) = self {
            f.stop(now);
        }
    }

    pub(crate) fn pending_output(&self) -> &[u8] {
        match self {
            AnyFront::Core(f) => f.pending_output(),
            AnyFront::Grpc(f) => f.pending_output(),
        }
    }

    pub(crate) fn consume_output(&mut self, now: Timestamp, n: usize) {
        match self {
            AnyFront::Core(f) => f.consume_output(now, n),
            AnyFront::Grpc(f) => f.consume_output(now, n),
        }
    }
}
