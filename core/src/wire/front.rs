//! Transport fronts: one connection of one transport, between its bytes and
//! an exposure.
//!
//! A [`Front`] is a connection [`Machine`] that also frames requests for an
//! exposure and encodes its deliveries: bytes come in, framed [`Request`]s
//! come out ([`FrontEvent::Request`]); an exposure's [`Delivery`] comes in
//! ([`Front::deliver`]), bytes go out. Every transport's front implements
//! it, one front per transport, each in its transport's module —
//! [`UnixFront`], [`HttpFront`], [`McpFront`], `limen-grpc`'s `GrpcFront` — and every driver of the project drives fronts
//! through it alone: the mio server, the replay runner, the benchmarks and
//! (through the C ABI) a C program. None of them holds any framing or
//! encoding of its own.
//!
//! # The order of calls
//!
//! A front follows the machine convention of [`Machine`]:
//!
//! 1. Create it when the connection is accepted (its transport's
//!    constructor: [`UnixFront::new`], [`HttpFront::new`],
//!    [`McpFront::new`], `GrpcFront::new`), with the correlation the
//!    exposure will address its replies to.
//! 2. Feed it input: [`handle_data`](Machine::handle_data) with the bytes
//!    read (only while [`wants_read`](Machine::wants_read)),
//!    [`handle_eof`](Machine::handle_eof) once the peer's end is closed (or
//!    a read failed), [`handle_timeout`](Machine::handle_timeout) when the
//!    deadline [`poll_timeout`](Machine::poll_timeout) named has passed.
//! 3. After any input, take [`poll_event`](Front::poll_event) until `None`:
//!    hand each request to the exposure, tell it of a [`FrontEvent::Lost`]
//!    connection, and close the socket on [`FrontEvent::Closed`].
//! 4. Hand it every [`Delivery`] the exposure addresses to its correlation
//!    ([`deliver`](Front::deliver)), [`abort`](Front::abort) it when the
//!    exposure says it is finished with the connection, and
//!    [`stop`](Front::stop) it when the exposure stops.
//! 5. Write [`pending_output`](Machine::pending_output) to the socket and
//!    report what was written with
//!    [`consume_output`](Machine::consume_output); then poll events again
//!    (a written response may close the connection).
//! 6. Re-arm the timer from [`poll_timeout`](Machine::poll_timeout) after
//!    each of the above.
//!
//! Every input takes `now`, the driver's monotonic clock in nanoseconds.
//!
//! This module holds what the fronts share: the traits, their events and
//! limits. Each transport's module holds its framing step (wire request →
//! [`Request`]), its answer step (outcome → bytes) and its front.
//!
//! [`UnixFront`]: crate::wire::unix::UnixFront
//! [`UnixFront::new`]: crate::wire::unix::UnixFront::new
//! [`HttpFront`]: crate::wire::http::HttpFront
//! [`HttpFront::new`]: crate::wire::http::HttpFront::new
//! [`McpFront`]: crate::wire::mcp::McpFront
//! [`McpFront::new`]: crate::wire::mcp::McpFront::new

use crate::hale::runtime::{Correlation, Delivery, Request};
use crate::wire::http1::{self, HttpRequest};
use crate::wire::line::{self, LineRequest};
use crate::Timestamp;

pub use super::machine::Machine;

/// One connection of one transport between its bytes and an exposure: a
/// [`Machine`] that frames requests and encodes deliveries. See the module
/// documentation for the order of calls.
pub trait Front: Machine {
    /// The transport.
    fn kind(&self) -> FrontKind;

    /// The correlation the exposure addresses this connection's replies to.
    fn correlation(&self) -> Correlation;

    /// Whether each [`FrontEvent::Request`] carries its wire form (off by
    /// default: only a recording needs it). A front whose transport nothing
    /// records keeps none.
    fn set_keep_raw(&mut self, keep: bool) {
        let _ = keep;
    }

    /// The next event, if any. Framing happens here: a request is framed
    /// as it is taken.
    fn poll_event(&mut self) -> Option<FrontEvent>;

    /// Encodes the exposure's `delivery` in the transport's terms (§
    /// Outcomes' column of the transport) and queues it at `now`. Returns
    /// how many bytes were queued.
    fn deliver(&mut self, now: Timestamp, delivery: Delivery) -> usize;

    /// Ends the connection now, whatever is queued: the exposure is
    /// finished with it (a transport failure for the peer).
    fn abort(&mut self);

    /// The exposure stopped: a front whose connection carries many calls
    /// at once ends it gracefully (gRPC's GOAWAY after the replies already
    /// queued). By default nothing: the other fronts end with their one
    /// request or their peer.
    fn stop(&mut self, now: Timestamp) {
        let _ = now;
    }

    /// The streams the connection holds (read, or with the exposure, and
    /// not yet answered) where its transport multiplexes calls on streams
    /// (gRPC's HTTP/2); 0 for the others.
    fn streams_held(&self) -> usize {
        0
    }

    /// The node is draining, or serving again (`draining` false): the
    /// health check a front answers itself (`GET /.health` on HTTP/1.1 and
    /// HTTP/2, gRPC's `grpc.health.v1.Health/Check`) says so from now on,
    /// so a balancer takes the node out before its `stop()` refuses
    /// anything (docs/decisions.md, "Rpc exposures behind a balancer").
    /// By default nothing: a front with no health check (Unix lines).
    fn set_draining(&mut self, draining: bool) {
        let _ = draining;
    }

    /// Whether closing the connection now should linger (RFC 9112 §
    /// 9.6). By default never.
    fn lingers(&self) -> bool {
        false
    }
}

/// The limits of every front, each its machine's own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrontLimits {
    /// Unix lines.
    pub line: line::Limits,
    /// HTTP/1.1, MCP's too.
    pub http: http1::Limits,
}

/// Which transport a front speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrontKind {
    /// Unix JSON lines (§ The Unix transport).
    Unix,
    /// HTTP/1.1 (§ The HTTP transport).
    Http,
    /// MCP over HTTP/1.1 (§ The MCP transport).
    Mcp,
    /// gRPC over HTTP/2 (§ The gRPC transport).
    Grpc,
}

/// A request as its wire machine framed it, before Hale's framing: what a
/// recording of the exchange keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RawRequest {
    /// A Unix JSON line.
    Line(LineRequest),
    /// An HTTP request, read whole.
    Http(HttpRequest),
    /// An MCP request: one JSON-RPC message in an HTTP request, read whole.
    Mcp(HttpRequest),
}

/// What a front asks of its driver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrontEvent {
    /// A request framed for the exposure. `raw` is its wire form when the
    /// front keeps it ([`Front::set_keep_raw`]).
    Request {
        /// The framed request.
        request: Request,
        /// Its wire form, for a recording.
        raw: Option<Box<RawRequest>>,
    },
    /// The peer is gone: its requests with the exposure are lost (they
    /// run; their replies are dropped).
    Lost,
    /// The connection is done: close the socket. Nothing more is written.
    Closed,
}

/// Implements [`Machine`] for a front by handing every call to the
/// connection [`Machine`] in its field `$conn`; with a third argument, every
/// input's `now` is also noted in that field (a front that writes answers
/// of its own queues them then); with `; S: Bound` after them, for a front
/// generic over `S`.
macro_rules! machine_through {
    ($front:ty, $conn:ident $(, $now:ident)? $(; $param:ident: $bound:path)?) => {
        impl$(<$param: $bound>)? $crate::wire::machine::Machine for $front {
            fn wants_read(&self) -> bool {
                $crate::wire::machine::Machine::wants_read(&self.$conn)
            }

            fn handle_data(&mut self, now: $crate::Timestamp, data: &[u8]) {
                $(self.$now = now;)?
                $crate::wire::machine::Machine::handle_data(&mut self.$conn, now, data)
            }

            fn handle_eof(&mut self, now: $crate::Timestamp) {
                $(self.$now = now;)?
                $crate::wire::machine::Machine::handle_eof(&mut self.$conn, now)
            }

            fn handle_timeout(&mut self, now: $crate::Timestamp) {
                $(self.$now = now;)?
                $crate::wire::machine::Machine::handle_timeout(&mut self.$conn, now)
            }

            fn poll_timeout(&self) -> Option<$crate::Timestamp> {
                $crate::wire::machine::Machine::poll_timeout(&self.$conn)
            }

            fn pending_output(&self) -> &[u8] {
                $crate::wire::machine::Machine::pending_output(&self.$conn)
            }

            fn consume_output(&mut self, now: $crate::Timestamp, n: usize) {
                $crate::wire::machine::Machine::consume_output(&mut self.$conn, now, n)
            }

            fn is_closed(&self) -> bool {
                $crate::wire::machine::Machine::is_closed(&self.$conn)
            }
        }
    };
}
pub(crate) use machine_through;
