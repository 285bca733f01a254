//! The HTTP/2 a gRPC front speaks, as core sees it: the events an HTTP/2
//! session reports of its streams ([`H2Event`]) and what the front asks of
//! the session back ([`Command`], through [`Submit`]).
//!
//! This is the seam of the quinn / quinn-proto split: the session (HPACK,
//! flow control, frames: nghttp2 in `limen-nghttp2`) stays outside core,
//! and [`Streams`](super::streams::Streams), the stream table and server
//! reflection, is driven by these events alone, so it is tested and
//! fuzzed without nghttp2. `limen-grpc`'s `GrpcFront` turns nghttp2's
//! callbacks into events and carries the commands out as nghttp2
//! submissions.

use super::{Answer, Field};

/// The HTTP/2 error codes limen sends or reads (RFC 9113 § 7): the stream
/// table's, and the session's in `limen-nghttp2`, which uses these.
pub mod code {
    /// NO_ERROR: a graceful GOAWAY, or a stream stopped after its answer.
    pub const NO_ERROR: u32 = 0x0;
    /// PROTOCOL_ERROR.
    pub const PROTOCOL_ERROR: u32 = 0x1;
    /// INTERNAL_ERROR: the code a close reports when the peer gave none.
    pub const INTERNAL_ERROR: u32 = 0x2;
    /// REFUSED_STREAM: the stream was not processed (safe to retry).
    pub const REFUSED_STREAM: u32 = 0x7;
    /// CANCEL.
    pub const CANCEL: u32 = 0x8;
    /// ENHANCE_YOUR_CALM: the peer sent more frames that make no progress
    /// than the session's budget allows.
    pub const ENHANCE_YOUR_CALM: u32 = 0xb;
}

/// What the peer did to a stream (or the connection), in the order the
/// session saw it. The session has already checked HTTP/2's own rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum H2Event {
    /// A request's header block, whole (CONTINUATION frames joined) and
    /// decoded.
    Headers {
        /// The stream.
        stream: i32,
        /// The fields in order, pseudo-headers first.
        fields: Vec<Field>,
        /// The request ends with its headers (no body).
        end_stream: bool,
    },
    /// A header block whose decoded fields passed the session's header
    /// list limit: its fields were dropped as they came. The stream is
    /// still open; the table answers it RESOURCE_EXHAUSTED.
    HeadersTooLarge {
        /// The stream.
        stream: i32,
        /// The block ended the request's side of the stream.
        end_stream: bool,
    },
    /// Bytes of a request's body. The session's window is the adapter's
    /// to open again: every byte is taken, whether the stream still wants
    /// it or not.
    Data {
        /// The stream.
        stream: i32,
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// The request's side of the stream ended (END_STREAM on DATA or on a
    /// trailer block; a request's trailers say nothing a call reads).
    EndStream {
        /// The stream.
        stream: i32,
    },
    /// The stream is gone, however it went (the peer's RST_STREAM, or its
    /// close): it fails alone, and a reply to it is dropped.
    Reset {
        /// The stream.
        stream: i32,
    },
    /// The peer sent GOAWAY. The streams it has opened are still
    /// answered, so the table does nothing with it.
    GoAway,
}

/// What the stream table asks of the session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Answer `stream` whole: HEADERS, DATA and trailers, or trailers-only.
    Respond {
        /// The stream.
        stream: i32,
        /// The answer.
        answer: Answer,
    },
    /// Start a response that stays open (server reflection): HEADERS and
    /// a first DATA, no END_STREAM.
    Open {
        /// The stream.
        stream: i32,
        /// The response's header fields.
        headers: Vec<Field>,
        /// Its first DATA.
        data: Vec<u8>,
    },
    /// More DATA on a response [`Command::Open`] started.
    Data {
        /// The stream.
        stream: i32,
        /// The bytes.
        data: Vec<u8>,
    },
    /// End a response [`Command::Open`] started with these trailers.
    Trailers {
        /// The stream.
        stream: i32,
        /// The trailer fields.
        trailers: Vec<Field>,
    },
    /// Reset `stream` now with `code`.
    Reset {
        /// The stream.
        stream: i32,
        /// The HTTP/2 error code ([`code`]).
        code: u32,
    },
    /// Reset `stream` NO_ERROR once its answer is out (RFC 9113 § 8.1):
    /// the request's side is still open, and the rest of its body is not
    /// to be read.
    ResetAfterResponse {
        /// The stream.
        stream: i32,
    },
    /// Send GOAWAY with `code`, naming the last stream taken.
    GoAway {
        /// The HTTP/2 error code ([`code`]).
        code: u32,
    },
    /// Serialize what was submitted so far before anything submitted
    /// after (a stop's reflection trailers leave before its GOAWAY).
    Flush,
}

/// A command named a stream the session no longer has (reset meanwhile):
/// that stream fails alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamGone;

/// Carries out the stream table's commands, at once and in order.
pub trait Submit {
    /// Carries out `command`; `Err` when its stream is gone.
    fn submit(&mut self, command: Command) -> Result<(), StreamGone>;
}

/// Commands recorded in order, every one taken (tests, fuzzing, a
/// session that is not there).
impl Submit for Vec<Command> {
    fn submit(&mut self, command: Command) -> Result<(), StreamGone> {
        self.push(command);
        Ok(())
    }
}
