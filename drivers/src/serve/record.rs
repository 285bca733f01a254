//! The recording hook: a [`Recorder`] set on a [`Server`](super::Server)
//! hears every exchange an exposure answers — the request as the wire
//! machine framed it, paired by request id with the reply bytes written —
//! so a run can be written out in the conformance record format and
//! replayed later.
//!
//! What is not an exchange of an exposure is not heard: a Unix line that is
//! not a JSON object (the line machine answers it with request_id 0), an
//! HTTP request the machine could not read whole, and a reply dropped
//! because its connection was lost.

use limen_core::hale::runtime::{ExposureSpec, Outcome, PeerCredentials, Principal, RequestId};

/// A request as its wire machine framed it (the front's wire form).
pub type RecordedRequest = limen_core::wire::front::RawRequest;

/// One request and its reply, as the server handled them.
#[derive(Debug)]
pub struct Exchange<'a> {
    /// The exposure that answered.
    pub exposure: &'a ExposureSpec,
    /// The peer's kernel credentials (unnamed over TCP).
    pub peer: PeerCredentials,
    /// The request.
    pub request: &'a RecordedRequest,
    /// The exposure's request id for it.
    pub request_id: RequestId,
    /// The caller the exposure established (or would have).
    pub caller: &'a Principal,
    /// The outcome the exposure decided.
    pub outcome: &'a Outcome,
    /// The reply exactly as queued for the socket: the Unix line without
    /// its newline, or the whole HTTP response (over MCP too).
    pub reply: &'a [u8],
}

/// Hears every exchange of a [`Server`](super::Server), on its event loop:
/// an implementation should be quick and must not block.
pub trait Recorder: Send {
    /// One exchange was answered.
    fn exchange(&mut self, exchange: &Exchange<'_>);
}
