//! limen-nghttp2: HTTP/2 (frames, HPACK, SETTINGS and PING, flow control,
//! GOAWAY) through nghttp2, as a sans-I/O [`Session`] that follows the
//! project's machine convention (`docs/architecture.md`).
//!
//! Bytes come in through [`Session::handle_data`] (nghttp2's
//! `mem_recv2`), bytes go out through [`Session::pending_output`] and
//! [`Session::consume_output`] (its `mem_send2`), and what happened comes
//! out of [`Session::poll_event`]. nghttp2's callbacks only push events
//! into a queue, each behind a panic boundary, and none calls back into the
//! session: trailers are submitted after `mem_send2` has returned the DATA
//! that ends a response body, never from inside its read callback.
//!
//! The session bounds what a peer makes it hold or do: a header list is
//! counted as decoded and dropped past [`Limits::max_header_list_size`]
//! ([`H2Event::HeadersTooLarge`]), and frames that make no progress have a
//! budget ([`Limits::unproductive_burst`]), past which the session ends
//! with GOAWAY(ENHANCE_YOUR_CALM).
//!
//! This crate and `limen-ffi` are the project's only unsafe code; every
//! `unsafe` block says why it holds.
//!
//! # The order of calls
//!
//! 1. [`Session::server`] queues the server's SETTINGS.
//! 2. Feed what the socket read to [`handle_data`](Session::handle_data);
//!    an error is fatal for the connection: write what
//!    [`pending_output`](Session::pending_output) still holds (a GOAWAY,
//!    when nghttp2 queued one) and close.
//! 3. Take [`poll_event`](Session::poll_event) until `None`. A request's
//!    bytes come as [`H2Event::Data`]; call [`consume`](Session::consume)
//!    as the application takes them, which opens the flow-control window.
//! 4. Answer a stream with [`respond`](Session::respond) (HEADERS, DATA,
//!    trailers) or [`respond_headers_only`](Session::respond_headers_only)
//!    (one HEADERS frame with END_STREAM), or keep its response open with
//!    [`respond_open`](Session::respond_open), then
//!    [`send_data`](Session::send_data) as each part is ready and
//!    [`end_open`](Session::end_open) (the stream's DATA is deferred in
//!    between and resumed by those calls, never from a callback);
//!    [`reset`](Session::reset) or [`go_away`](Session::go_away) as
//!    needed.
//! 5. [`flush`](Session::flush) (which serializes what is queued), then
//!    write [`pending_output`](Session::pending_output), report it with
//!    [`consume_output`](Session::consume_output). The connection is done
//!    when [`is_done`](Session::is_done).

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

use std::collections::{HashMap, HashSet, VecDeque};
use std::ffi::{c_int, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

use libnghttp2_sys as sys;

/// Nanoseconds on the driver's monotonic clock (the machine convention's
/// `now`; nghttp2 keeps no timers of its own here): core's.
pub use limen_core::Timestamp;

/// A header field: name and value, as bytes: core's, the one the stream
/// table reads.
pub use limen_core::wire::grpc::Field;

/// HTTP/2 error codes the front uses (RFC 9113 § 7): core's, the one
/// definition the stream table shares.
pub use limen_core::wire::grpc::h2::code;

use limen_core::SECOND;

/// The bytes RFC 9113 § 6.5.2 counts for a field beside its name and
/// value (SETTINGS_MAX_HEADER_LIST_SIZE's accounting, from HPACK's entry
/// size).
pub const FIELD_OVERHEAD: usize = 32;

/// The session's limits, sent in its SETTINGS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// SETTINGS_MAX_CONCURRENT_STREAMS: streams a peer may open at once.
    pub max_concurrent_streams: u32,
    /// SETTINGS_INITIAL_WINDOW_SIZE: the bytes a stream may send before
    /// the application takes them.
    pub initial_window_size: u32,
    /// SETTINGS_MAX_HEADER_LIST_SIZE: the largest header list accepted,
    /// and enforced: a header block whose decoded fields pass it (name,
    /// value and [`FIELD_OVERHEAD`] each, as RFC 9113 § 6.5.2 counts) is
    /// not kept, and comes out as [`H2Event::HeadersTooLarge`] (an HPACK
    /// bomb of one-byte references to a large indexed field decodes to
    /// far more than its wire size).
    pub max_header_list_size: u32,
    /// Frames that make no progress (WINDOW_UPDATE, PING, SETTINGS,
    /// PRIORITY, RST_STREAM, empty DATA) the peer may send in a burst;
    /// past it the session ends with GOAWAY(ENHANCE_YOUR_CALM).
    pub unproductive_burst: u32,
    /// How many of those frames a second refill the burst, and how many
    /// each productive frame (a request's HEADERS, DATA that carries
    /// bytes) gives back: a well-behaved peer's pings and window updates
    /// follow its traffic, a flood does not.
    pub unproductive_per_second: u32,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            // The gRPC front holds at most 4096 streams (§ gRPC).
            max_concurrent_streams: 4096,
            // A whole gRPC message of 1 MiB and its five-byte prefix fit
            // one window.
            initial_window_size: (1 << 20) + 5,
            max_header_list_size: 64 * 1024,
            // nghttp2's own glitch limiter starts at 1000 with 33 a second
            // for the frames it counts; these are the frames it does not.
            unproductive_burst: 1000,
            unproductive_per_second: 100,
        }
    }
}

/// What the peer did, in the order nghttp2 saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum H2Event {
    /// A request's header block, whole (CONTINUATION frames joined).
    Headers {
        /// The stream.
        stream: i32,
        /// The fields in order, pseudo-headers first.
        fields: Vec<Field>,
        /// The request ends with its headers (no body).
        end_stream: bool,
    },
    /// Bytes of a request's body. Call [`Session::consume`] once they are
    /// taken, to open the window again.
    Data {
        /// The stream.
        stream: i32,
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// The request's side of the stream ended (END_STREAM on DATA or on a
    /// trailer block).
    EndStream {
        /// The stream.
        stream: i32,
    },
    /// The peer reset the stream (RST_STREAM).
    Reset {
        /// The stream.
        stream: i32,
        /// The error code it gave.
        code: u32,
    },
    /// The stream is closed, however it closed.
    Closed {
        /// The stream.
        stream: i32,
        /// The error code (NO_ERROR for a normal close).
        code: u32,
    },
    /// A trailer block, whole: a response's trailers, as a client
    /// session reads them (a server reads a request's and drops them). An
    /// [`H2Event::EndStream`] follows when it ends the stream.
    Trailers {
        /// The stream.
        stream: i32,
        /// The fields in order.
        fields: Vec<Field>,
    },
    /// A header block (a request's head or its trailers) whose decoded
    /// fields passed [`Limits::max_header_list_size`]: its fields were
    /// dropped as they came. The stream is still open; the application
    /// answers it (431, RESOURCE_EXHAUSTED) or resets it.
    HeadersTooLarge {
        /// The stream.
        stream: i32,
        /// The block ended the request's side of the stream.
        end_stream: bool,
    },
    /// The peer sent GOAWAY.
    GoAway {
        /// The last stream it will have processed.
        last_stream: i32,
        /// Its error code.
        code: u32,
    },
}

/// A failure of the session: nghttp2's error, with its text. After one
/// from [`Session::handle_data`] the connection is over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// nghttp2's negative error code.
    pub code: i32,
    /// What it means, in nghttp2's words (or the panic's).
    pub text: String,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HTTP/2: {} ({})", self.text, self.code)
    }
}

impl std::error::Error for Error {}

fn error(code: c_int) -> Error {
    // SAFETY: nghttp2_strerror returns a pointer to a static,
    // NUL-terminated string for every code.
    let text = unsafe { CStr::from_ptr(sys::nghttp2_strerror(code)) }
        .to_string_lossy()
        .into_owned();
    Error { code, text }
}

fn check(rv: c_int) -> Result<(), Error> {
    if rv < 0 {
        Err(error(rv))
    } else {
        Ok(())
    }
}

/// A response body waiting for nghttp2 to read it, and the trailers that
/// follow it.
struct Body {
    bytes: Vec<u8>,
    at: usize,
    trailers: Vec<Field>,
    /// More may come ([`Session::respond_open`]): once what is here is
    /// read, the read callback defers the stream instead of ending it,
    /// until [`Session::send_data`] or [`Session::end_open`] resumes it.
    open: bool,
}

/// A header block being received: its fields, and their size as RFC 9113
/// § 6.5.2 counts it.
#[derive(Default)]
struct Block {
    fields: Vec<Field>,
    size: usize,
    /// The size passed the limit: the fields are dropped, and so is every
    /// later one of the block.
    over: bool,
}

/// The budget of frames that make no progress, as a GCRA (generic cell
/// rate algorithm): `tat` is the time at which the budget would be whole
/// again; each such frame moves it one interval later, each productive
/// frame one interval earlier; a `tat` more than `burst` intervals ahead of
/// `now` is over the budget. One number, no timer.
#[derive(Default)]
struct Calm {
    tat: Timestamp,
    interval: Timestamp,
    burst: Timestamp,
    /// The budget was passed: the session ends ENHANCE_YOUR_CALM once
    /// nghttp2 returns.
    exceeded: bool,
}

impl Calm {
    fn new(limits: &Limits) -> Calm {
        let interval = SECOND / Timestamp::from(limits.unproductive_per_second.max(1));
        Calm {
            tat: 0,
            interval,
            burst: interval.saturating_mul(Timestamp::from(limits.unproductive_burst)),
            exceeded: false,
        }
    }

    fn spend(&mut self, now: Timestamp, frames: Timestamp) {
        self.tat = self
            .tat
            .max(now)
            .saturating_add(self.interval.saturating_mul(frames));
        if self.tat - now > self.burst {
            self.exceeded = true;
        }
    }

    fn earn(&mut self) {
        self.tat = self.tat.saturating_sub(self.interval);
    }
}

/// What a header block past the header list's limit costs of the budget of
/// frames that make no progress: ten of them spend the default burst.
const OVERSIZED_BLOCK_COST: Timestamp = 100;

/// What the callbacks write to: owned by the session, boxed so its address
/// (nghttp2's user data) never moves.
#[derive(Default)]
struct State {
    events: VecDeque<H2Event>,
    /// Header blocks being received, by stream.
    headers: HashMap<i32, Block>,
    /// [`Limits::max_header_list_size`].
    max_header_list: usize,
    /// The input's `now`, for the callbacks.
    now: Timestamp,
    /// Frames that make no progress, counted.
    calm: Calm,
    /// Streams to reset NO_ERROR once their response has gone out whole
    /// ([`Session::reset_after_response`]).
    reset_after: HashSet<i32>,
    /// Those whose response went out, to reset once `mem_send2` returns.
    resets_due: Vec<i32>,
    /// The peer's first SETTINGS arrived (a client's, after its preface).
    settings_received: bool,
    /// Response bodies being sent, by stream.
    bodies: HashMap<i32, Body>,
    /// Streams whose body was read whole and whose trailers are to be
    /// submitted once `mem_send2` returns.
    trailers_due: Vec<(i32, Vec<Field>)>,
    /// A callback panicked: the session is failed.
    panicked: Option<String>,
}

/// An HTTP/2 connection, a server's or (for the conformance runner) a
/// client's. See the crate documentation.
pub struct Session {
    raw: *mut sys::nghttp2_session,
    state: Box<State>,
    out: Vec<u8>,
    out_at: usize,
}

// SAFETY: the session and its state are owned by this value and reached
// only through `&mut self`; nghttp2 keeps no thread-local state, so moving
// the whole to another thread is sound.
unsafe impl Send for Session {}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("events", &self.state.events.len())
            .field("bodies", &self.state.bodies.len())
            .finish()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // SAFETY: `raw` came from nghttp2_session_{server,client}_new2 and is freed
        // once, here.
        unsafe { sys::nghttp2_session_del(self.raw) };
    }
}

/// Runs a callback's body behind a panic boundary: a panic fails the
/// session (`NGHTTP2_ERR_CALLBACK_FAILURE`) instead of unwinding into C.
fn guarded(user_data: *mut c_void, f: impl FnOnce(&mut State) -> c_int) -> c_int {
    // SAFETY: user_data is the session's boxed State, alive for as long as
    // nghttp2 can call back, and nothing else holds a reference to it
    // while nghttp2 runs (the session is inside one of its calls, made from
    // a `&mut self` method that touches the state only before or after).
    let state = unsafe { &mut *(user_data as *mut State) };
    match catch_unwind(AssertUnwindSafe(|| f(state))) {
        Ok(rv) => rv,
        Err(panic) => {
            let text = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            state.panicked = Some(text);
            sys::NGHTTP2_ERR_CALLBACK_FAILURE
        }
    }
}

/// # Safety
/// Called by nghttp2 with a valid frame and the session's user data.
unsafe extern "C" fn on_begin_headers(
    _session: *mut sys::nghttp2_session,
    frame: *const sys::nghttp2_frame,
    user_data: *mut c_void,
) -> c_int {
    // SAFETY: nghttp2 passes a valid frame; hd is the common prefix.
    let stream = unsafe { (*frame).hd.stream_id };
    guarded(user_data, |state| {
        state.headers.insert(stream, Block::default());
        0
    })
}

/// # Safety
/// Called by nghttp2 with valid name and value buffers of the given
/// lengths.
unsafe extern "C" fn on_header(
    _session: *mut sys::nghttp2_session,
    frame: *const sys::nghttp2_frame,
    name: *const u8,
    namelen: usize,
    value: *const u8,
    valuelen: usize,
    _flags: u8,
    user_data: *mut c_void,
) -> c_int {
    // SAFETY: nghttp2 passes a valid frame and buffers of these lengths,
    // alive for the duration of the callback.
    let (stream, name, value) = unsafe {
        (
            (*frame).hd.stream_id,
            std::slice::from_raw_parts(name, namelen),
            std::slice::from_raw_parts(value, valuelen),
        )
    };
    guarded(user_data, |state| {
        let limit = state.max_header_list;
        let block = state.headers.entry(stream).or_default();
        if block.over {
            return 0;
        }
        // Counted as decoded, before anything is copied: a reference of
        // one byte on the wire may stand for a field of thousands.
        block.size = block
            .size
            .saturating_add(name.len() + value.len() + FIELD_OVERHEAD);
        if block.size > limit {
            // The rest of the block is still decoded by nghttp2 (HPACK's
            // table must stay in step, RFC 9113 § 10.5.1) but nothing of
            // it is kept.
            block.over = true;
            block.fields = Vec::new();
            return 0;
        }
        block.fields.push((name.to_vec(), value.to_vec()));
        0
    })
}

/// # Safety
/// Called by nghttp2 with a valid frame.
unsafe extern "C" fn on_frame_recv(
    _session: *mut sys::nghttp2_session,
    frame: *const sys::nghttp2_frame,
    user_data: *mut c_void,
) -> c_int {
    // SAFETY: a valid frame; the union member read is the one its type
    // names.
    let (hd, cat, rst_code, goaway) = unsafe {
        let hd = (*frame).hd;
        let cat = (hd.type_ as u32 == sys::NGHTTP2_HEADERS).then(|| (*frame).headers.cat);
        let rst =
            (hd.type_ as u32 == sys::NGHTTP2_RST_STREAM).then(|| (*frame).rst_stream.error_code);
        let goaway = (hd.type_ as u32 == sys::NGHTTP2_GOAWAY)
            .then(|| ((*frame).goaway.last_stream_id, (*frame).goaway.error_code));
        (hd, cat, rst, goaway)
    };
    guarded(user_data, |state| {
        let end_stream = hd.flags & sys::NGHTTP2_FLAG_END_STREAM as u8 != 0;
        let stream = hd.stream_id;
        let kind = hd.type_ as u32;
        let over =
            kind == sys::NGHTTP2_HEADERS && state.headers.get(&stream).is_some_and(|b| b.over);
        let productive = match kind {
            // A request's head at a server, a response's at a client.
            sys::NGHTTP2_HEADERS => {
                (cat == Some(sys::NGHTTP2_HCAT_REQUEST) || cat == Some(sys::NGHTTP2_HCAT_RESPONSE))
                    && !over
            }
            sys::NGHTTP2_DATA => hd.length > 0 || end_stream,
            sys::NGHTTP2_GOAWAY => true,
            // WINDOW_UPDATE, PING, SETTINGS, PRIORITY, RST_STREAM,
            // trailers: no exchange moves on.
            _ => false,
        };
        let now = state.now;
        if productive {
            state.calm.earn();
        } else if over {
            // A header block past the limit cost nghttp2 its whole
            // decoding (an HPACK bomb: thousands of fields): it counts as
            // many frames that move nothing.
            state.calm.spend(now, OVERSIZED_BLOCK_COST);
        } else {
            state.calm.spend(now, 1);
        }
        if kind == sys::NGHTTP2_SETTINGS && hd.flags & sys::NGHTTP2_FLAG_ACK as u8 == 0 {
            state.settings_received = true;
        }
        match kind {
            sys::NGHTTP2_HEADERS => {
                let block = state.headers.remove(&stream).unwrap_or_default();
                if block.over {
                    state
                        .events
                        .push_back(H2Event::HeadersTooLarge { stream, end_stream });
                    return 0;
                }
                let fields = block.fields;
                // A request's head at a server, a response's at a client.
                if cat == Some(sys::NGHTTP2_HCAT_REQUEST) || cat == Some(sys::NGHTTP2_HCAT_RESPONSE)
                {
                    state.events.push_back(H2Event::Headers {
                        stream,
                        fields,
                        end_stream,
                    });
                } else {
                    state.events.push_back(H2Event::Trailers { stream, fields });
                    if end_stream {
                        state.events.push_back(H2Event::EndStream { stream });
                    }
                }
            }
            sys::NGHTTP2_DATA if end_stream => {
                state.events.push_back(H2Event::EndStream { stream });
            }
            sys::NGHTTP2_RST_STREAM => {
                state.events.push_back(H2Event::Reset {
                    stream,
                    code: rst_code.unwrap_or(code::INTERNAL_ERROR),
                });
            }
            sys::NGHTTP2_GOAWAY => {
                let (last_stream, code) = goaway.unwrap_or((0, code::INTERNAL_ERROR));
                state
                    .events
                    .push_back(H2Event::GoAway { last_stream, code });
            }
            _ => {}
        }
        0
    })
}

/// # Safety
/// Called by nghttp2 with a valid buffer of `len` bytes.
unsafe extern "C" fn on_data_chunk_recv(
    _session: *mut sys::nghttp2_session,
    _flags: u8,
    stream: i32,
    data: *const u8,
    len: usize,
    user_data: *mut c_void,
) -> c_int {
    // SAFETY: nghttp2 passes a buffer of `len` bytes alive for the call.
    let bytes = unsafe { std::slice::from_raw_parts(data, len) };
    guarded(user_data, |state| {
        state.events.push_back(H2Event::Data {
            stream,
            bytes: bytes.to_vec(),
        });
        0
    })
}

/// # Safety
/// Called by nghttp2 with the session's user data.
unsafe extern "C" fn on_stream_close(
    _session: *mut sys::nghttp2_session,
    stream: i32,
    error_code: u32,
    user_data: *mut c_void,
) -> c_int {
    guarded(user_data, |state| {
        state.headers.remove(&stream);
        state.bodies.remove(&stream);
        state.reset_after.remove(&stream);
        state.events.push_back(H2Event::Closed {
            stream,
            code: error_code,
        });
        0
    })
}

/// # Safety
/// Called by nghttp2 with a valid frame and the session's user data.
unsafe extern "C" fn on_frame_send(
    _session: *mut sys::nghttp2_session,
    frame: *const sys::nghttp2_frame,
    user_data: *mut c_void,
) -> c_int {
    // SAFETY: nghttp2 passes a valid frame; hd is the common prefix.
    let hd = unsafe { (*frame).hd };
    guarded(user_data, |state| {
        let ends = hd.flags & sys::NGHTTP2_FLAG_END_STREAM as u8 != 0;
        let kind = hd.type_ as u32;
        if ends
            && (kind == sys::NGHTTP2_HEADERS || kind == sys::NGHTTP2_DATA)
            && state.reset_after.remove(&hd.stream_id)
        {
            // Submitted once mem_send2 returns, never from here.
            state.resets_due.push(hd.stream_id);
        }
        0
    })
}

/// # Safety
/// Called by nghttp2 with a buffer of at least `length` bytes.
unsafe extern "C" fn read_body(
    _session: *mut sys::nghttp2_session,
    stream: i32,
    buf: *mut u8,
    length: usize,
    data_flags: *mut u32,
    _source: *mut sys::nghttp2_data_source,
    user_data: *mut c_void,
) -> sys::nghttp2_ssize {
    let mut flags = 0u32;
    let mut n = 0usize;
    let mut deferred = false;
    let rv = guarded(user_data, |state| {
        let Some(body) = state.bodies.get_mut(&stream) else {
            // Nothing submitted for the stream: end it empty.
            flags = sys::NGHTTP2_DATA_FLAG_EOF;
            return 0;
        };
        n = (body.bytes.len() - body.at).min(length);
        // SAFETY: nghttp2 hands a buffer of at least `length` bytes, and
        // the body holds at least `n` more from `at`.
        unsafe { ptr::copy_nonoverlapping(body.bytes[body.at..].as_ptr(), buf, n) };
        body.at += n;
        if body.at == body.bytes.len() && body.open {
            // An open response with nothing more yet: the stream waits
            // (deferred, only when nothing was read in this call, as
            // nghttp2 asks) until more is queued or the end is.
            deferred = n == 0;
            body.bytes.clear();
            body.at = 0;
        } else if body.at == body.bytes.len() {
            flags = sys::NGHTTP2_DATA_FLAG_EOF;
            let body = state.bodies.remove(&stream).expect("present");
            if !body.trailers.is_empty() {
                // The trailers end the stream; they are submitted once
                // mem_send2 returns, never from here.
                flags |= sys::NGHTTP2_DATA_FLAG_NO_END_STREAM;
                state.trailers_due.push((stream, body.trailers));
            }
        }
        0
    });
    if rv != 0 {
        return rv as sys::nghttp2_ssize;
    }
    if deferred {
        return sys::NGHTTP2_ERR_DEFERRED as sys::nghttp2_ssize;
    }
    // SAFETY: nghttp2 passes a valid flags pointer.
    unsafe { *data_flags |= flags };
    n as sys::nghttp2_ssize
}

/// Header fields as nghttp2 takes them: pointers into `fields`, which must
/// outlive the call they are passed to (nghttp2 copies them).
fn nv(fields: &[(&[u8], &[u8])]) -> Vec<sys::nghttp2_nv> {
    fields
        .iter()
        .map(|(name, value)| sys::nghttp2_nv {
            name: name.as_ptr() as *mut u8,
            value: value.as_ptr() as *mut u8,
            namelen: name.len(),
            valuelen: value.len(),
            flags: sys::NGHTTP2_NV_FLAG_NONE as u8,
        })
        .collect()
}

/// One SETTINGS entry, laid out as nghttp2's `nghttp2_settings_entry`
/// (`int32_t settings_id; uint32_t value;`).
#[repr(C)]
struct SettingsEntry {
    id: i32,
    value: u32,
}

impl Session {
    /// A server session; its SETTINGS (the limits) are queued to send.
    pub fn server(limits: Limits) -> Result<Session, Error> {
        Session::new(limits, false)
    }

    /// A client session (prior knowledge): its connection preface and
    /// SETTINGS are queued to send. The conformance runner speaks to the
    /// gRPC front through one, so a replay's bytes are HTTP/2 as nghttp2
    /// writes and reads them, the same every run.
    pub fn client(limits: Limits) -> Result<Session, Error> {
        Session::new(limits, true)
    }

    fn new(limits: Limits, client: bool) -> Result<Session, Error> {
        let mut state = Box::new(State {
            max_header_list: limits.max_header_list_size as usize,
            calm: Calm::new(&limits),
            ..State::default()
        });
        let mut callbacks: *mut sys::nghttp2_session_callbacks = ptr::null_mut();
        let mut option: *mut sys::nghttp2_option = ptr::null_mut();
        let mut raw: *mut sys::nghttp2_session = ptr::null_mut();
        // SAFETY: each pointer is filled by its constructor before use and
        // freed once; the callbacks and option are copied into the session
        // by nghttp2_session_server_new2, so both are freed right after.
        unsafe {
            check(sys::nghttp2_session_callbacks_new(&mut callbacks))?;
            sys::nghttp2_session_callbacks_set_on_begin_headers_callback(
                callbacks,
                Some(on_begin_headers),
            );
            sys::nghttp2_session_callbacks_set_on_header_callback(callbacks, Some(on_header));
            sys::nghttp2_session_callbacks_set_on_frame_recv_callback(
                callbacks,
                Some(on_frame_recv),
            );
            sys::nghttp2_session_callbacks_set_on_data_chunk_recv_callback(
                callbacks,
                Some(on_data_chunk_recv),
            );
            sys::nghttp2_session_callbacks_set_on_stream_close_callback(
                callbacks,
                Some(on_stream_close),
            );
            sys::nghttp2_session_callbacks_set_on_frame_send_callback(
                callbacks,
                Some(on_frame_send),
            );
            let rv = sys::nghttp2_option_new(&mut option);
            if rv < 0 {
                sys::nghttp2_session_callbacks_del(callbacks);
                return Err(error(rv));
            }
            // The window opens as the application takes the bytes.
            sys::nghttp2_option_set_no_auto_window_update(option, 1);
            let user_data = &mut *state as *mut State as *mut c_void;
            let rv = if client {
                sys::nghttp2_session_client_new2(&mut raw, callbacks, user_data, option)
            } else {
                sys::nghttp2_session_server_new2(&mut raw, callbacks, user_data, option)
            };
            sys::nghttp2_session_callbacks_del(callbacks);
            sys::nghttp2_option_del(option);
            check(rv)?;
        }
        let session = Session {
            raw,
            state,
            out: Vec::new(),
            out_at: 0,
        };
        let settings = [
            SettingsEntry {
                id: sys::NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS as i32,
                value: limits.max_concurrent_streams,
            },
            SettingsEntry {
                id: sys::NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE as i32,
                value: limits.initial_window_size,
            },
            SettingsEntry {
                id: sys::NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE as i32,
                value: limits.max_header_list_size,
            },
        ];
        // SAFETY: SettingsEntry has nghttp2_settings_entry's layout (two
        // 32-bit fields, eight bytes), and nghttp2 copies the entries.
        check(unsafe {
            sys::nghttp2_submit_settings(
                session.raw,
                sys::NGHTTP2_FLAG_NONE as u8,
                settings.as_ptr() as *const sys::nghttp2_settings_entry,
                settings.len(),
            )
        })?;
        Ok(session)
    }

    /// Takes bytes the peer sent. An error ends the connection: write what
    /// [`pending_output`](Session::pending_output) holds, then close.
    ///
    /// A peer that passed the budget of frames that make no progress
    /// ([`Limits::unproductive_burst`]) gets GOAWAY(ENHANCE_YOUR_CALM),
    /// queued, and this error.
    pub fn handle_data(&mut self, now: Timestamp, data: &[u8]) -> Result<(), Error> {
        if self.state.calm.exceeded {
            return Err(Self::calm_error());
        }
        self.state.now = now;
        // SAFETY: `raw` is live; nghttp2 reads `data.len()` bytes from it
        // and calls back into `state` only during this call.
        let rv = unsafe { sys::nghttp2_session_mem_recv2(self.raw, data.as_ptr(), data.len()) };
        self.failed()?;
        if self.state.calm.exceeded {
            // SAFETY: `raw` is live; this only queues GOAWAY and marks the
            // session to end once it is sent.
            unsafe { sys::nghttp2_session_terminate_session(self.raw, code::ENHANCE_YOUR_CALM) };
            return Err(Self::calm_error());
        }
        if rv < 0 {
            return Err(error(rv as c_int));
        }
        Ok(())
    }

    fn calm_error() -> Error {
        Error {
            code: sys::NGHTTP2_ERR_CALLBACK_FAILURE,
            text: "too many frames that make no progress (ENHANCE_YOUR_CALM)".into(),
        }
    }

    /// Whether the peer's connection preface is done: its first SETTINGS
    /// frame has arrived (a server reads the client's magic before it).
    pub fn preface_received(&self) -> bool {
        self.state.settings_received
    }

    /// The decoded header bytes held for header blocks not yet whole, as
    /// RFC 9113 § 6.5.2 counts them: at most
    /// [`Limits::max_header_list_size`] a stream (a block past it is
    /// dropped as it comes), whatever the HPACK on the wire expands to.
    pub fn header_bytes_held(&self) -> usize {
        self.state
            .headers
            .values()
            .map(|b| if b.over { 0 } else { b.size })
            .sum()
    }

    /// Resets `stream` with NO_ERROR once its response has gone out whole
    /// (its END_STREAM sent): RFC 9113 § 8.1's way for a server that
    /// answered before the request ended to stop the rest of it, so DATA
    /// the peer still sends is a closed stream's, not read or windowed.
    pub fn reset_after_response(&mut self, stream: i32) {
        self.state.reset_after.insert(stream);
    }

    fn failed(&mut self) -> Result<(), Error> {
        match self.state.panicked.take() {
            Some(text) => Err(Error {
                code: sys::NGHTTP2_ERR_CALLBACK_FAILURE,
                text: format!("a callback panicked: {text}"),
            }),
            None => Ok(()),
        }
    }

    /// The next event, if any. Poll until `None` after every input.
    pub fn poll_event(&mut self) -> Option<H2Event> {
        self.state.events.pop_front()
    }

    /// The peer's `n` bytes of `stream`'s body are taken: its window and
    /// the connection's open by that much.
    pub fn consume(&mut self, stream: i32, n: usize) -> Result<(), Error> {
        // SAFETY: `raw` is live.
        let rv = unsafe { sys::nghttp2_session_consume(self.raw, stream, n) };
        // A stream already closed has no window to open: not an error of
        // the connection.
        if rv == sys::NGHTTP2_ERR_INVALID_ARGUMENT {
            return Ok(());
        }
        check(rv)
    }

    /// Answers `stream` with a response: HEADERS (`fields`, `:status`
    /// first), `body` in DATA, then `trailers` ending the stream (or the
    /// last DATA ends it when there are none).
    pub fn respond(
        &mut self,
        stream: i32,
        fields: &[(&[u8], &[u8])],
        body: Vec<u8>,
        trailers: Vec<Field>,
    ) -> Result<(), Error> {
        let nva = nv(fields);
        let provider = sys::nghttp2_data_provider2 {
            source: sys::nghttp2_data_source {
                ptr: ptr::null_mut(),
            },
            read_callback: Some(read_body),
        };
        self.state.bodies.insert(
            stream,
            Body {
                bytes: body,
                at: 0,
                trailers,
                open: false,
            },
        );
        // SAFETY: `raw` is live; nva points into `fields`, alive for the
        // call, and nghttp2 copies it and the provider.
        let rv = unsafe {
            sys::nghttp2_submit_response2(self.raw, stream, nva.as_ptr(), nva.len(), &provider)
        };
        if rv < 0 {
            self.state.bodies.remove(&stream);
        }
        check(rv)
    }

    /// Answers `stream` with a response that stays open: HEADERS
    /// (`fields`), then `first` in DATA; more follows with
    /// [`send_data`](Session::send_data), each as it is queued, and
    /// [`end_open`](Session::end_open) ends it with its trailers. Between
    /// them the stream's DATA is deferred, not ended (a bidirectional
    /// call's response, gRPC server reflection's).
    pub fn respond_open(
        &mut self,
        stream: i32,
        fields: &[(&[u8], &[u8])],
        first: Vec<u8>,
    ) -> Result<(), Error> {
        self.respond(stream, fields, first, Vec::new())?;
        if let Some(body) = self.state.bodies.get_mut(&stream) {
            body.open = true;
        }
        Ok(())
    }

    /// Queues `bytes` on the open response of `stream`
    /// ([`respond_open`](Session::respond_open)) and resumes its DATA. A
    /// stream that is no longer open (closed, reset, or ended) is an
    /// error of that stream alone.
    pub fn send_data(&mut self, stream: i32, bytes: &[u8]) -> Result<(), Error> {
        let Some(body) = self.state.bodies.get_mut(&stream).filter(|b| b.open) else {
            return Err(error(sys::NGHTTP2_ERR_INVALID_ARGUMENT));
        };
        if body.at == body.bytes.len() {
            body.bytes.clear();
            body.at = 0;
        }
        body.bytes.extend_from_slice(bytes);
        self.resume(stream)
    }

    /// Ends the open response of `stream` with `trailers` once what is
    /// queued is sent. A stream that is no longer open is an error of that
    /// stream alone.
    pub fn end_open(&mut self, stream: i32, trailers: Vec<Field>) -> Result<(), Error> {
        let Some(body) = self.state.bodies.get_mut(&stream).filter(|b| b.open) else {
            return Err(error(sys::NGHTTP2_ERR_INVALID_ARGUMENT));
        };
        body.open = false;
        body.trailers = trailers;
        self.resume(stream)
    }

    /// Puts a deferred stream's DATA back in the outgoing queue. Called
    /// only from a `&mut self` method, never from a callback, so nghttp2
    /// is not re-entered.
    fn resume(&mut self, stream: i32) -> Result<(), Error> {
        // SAFETY: `raw` is live.
        let rv = unsafe { sys::nghttp2_session_resume_data(self.raw, stream) };
        // A stream whose DATA is not deferred (the read callback has not
        // yet run dry) is already in the queue: nothing to resume.
        if rv == sys::NGHTTP2_ERR_INVALID_ARGUMENT {
            return Ok(());
        }
        check(rv)
    }

    /// Opens a stream of a client session with a request: HEADERS
    /// (`fields`, pseudo-headers first), then `body` in DATA ending the
    /// stream (or the HEADERS frame ends it when `body` is `None`).
    /// Returns the stream.
    pub fn request(
        &mut self,
        fields: &[(&[u8], &[u8])],
        body: Option<Vec<u8>>,
    ) -> Result<i32, Error> {
        let nva = nv(fields);
        let provider = sys::nghttp2_data_provider2 {
            source: sys::nghttp2_data_source {
                ptr: ptr::null_mut(),
            },
            read_callback: Some(read_body),
        };
        let with_body = if body.is_some() {
            &provider as *const sys::nghttp2_data_provider2
        } else {
            ptr::null()
        };
        // SAFETY: `raw` is live; nva points into `fields`, alive for the
        // call, and nghttp2 copies it and the provider. The body is read
        // only from mem_send2, after it is put in place below.
        let stream = unsafe {
            sys::nghttp2_submit_request2(
                self.raw,
                ptr::null(),
                nva.as_ptr(),
                nva.len(),
                with_body,
                ptr::null_mut(),
            )
        };
        check(stream)?;
        if let Some(bytes) = body {
            self.state.bodies.insert(
                stream,
                Body {
                    bytes,
                    at: 0,
                    trailers: Vec::new(),
                    open: false,
                },
            );
        }
        Ok(stream)
    }

    /// Answers `stream` with one HEADERS frame that ends it (gRPC's
    /// trailers-only response).
    pub fn respond_headers_only(
        &mut self,
        stream: i32,
        fields: &[(&[u8], &[u8])],
    ) -> Result<(), Error> {
        let nva = nv(fields);
        // SAFETY: as in `respond`; no data provider ends the stream with
        // the HEADERS frame.
        check(unsafe {
            sys::nghttp2_submit_response2(self.raw, stream, nva.as_ptr(), nva.len(), ptr::null())
        })
    }

    /// Resets `stream` with `code`.
    pub fn reset(&mut self, stream: i32, code: u32) -> Result<(), Error> {
        // SAFETY: `raw` is live.
        check(unsafe {
            sys::nghttp2_submit_rst_stream(self.raw, sys::NGHTTP2_FLAG_NONE as u8, stream, code)
        })
    }

    /// Sends GOAWAY with `code`, naming the last stream processed: the
    /// streams already open finish, no new one is taken.
    pub fn go_away(&mut self, code: u32) -> Result<(), Error> {
        // SAFETY: `raw` is live.
        check(unsafe {
            let last = sys::nghttp2_session_get_last_proc_stream_id(self.raw);
            sys::nghttp2_submit_goaway(
                self.raw,
                sys::NGHTTP2_FLAG_NONE as u8,
                last,
                code,
                ptr::null(),
                0,
            )
        })
    }

    /// Serializes every frame queued so far (as far as flow control lets
    /// DATA go) behind the bytes not yet written, which
    /// [`pending_output`](Session::pending_output) then holds. Call it
    /// after every input, before reading the output.
    pub fn flush(&mut self) -> Result<(), Error> {
        if self.out_at == self.out.len() {
            self.out.clear();
            self.out_at = 0;
        }
        self.serialize()
    }

    /// The bytes serialized and not yet written, borrowed until the next
    /// call: what [`flush`](Session::flush) serialized, the verb and shape
    /// of every machine's `pending_output` (a shared borrow, no error:
    /// serializing, which can fail, is `flush`'s, an input step).
    pub fn pending_output(&self) -> &[u8] {
        &self.out[self.out_at..]
    }

    /// [`pending_output`](Session::pending_output) under its former name,
    /// which `limen-grpc` still calls (issue #27 moves that crate on another
    /// branch; the name goes once it calls `pending_output`).
    pub fn queued(&self) -> &[u8] {
        self.pending_output()
    }

    /// `n` bytes of [`pending_output`](Session::pending_output) were
    /// written.
    pub fn consume_output(&mut self, _now: Timestamp, n: usize) {
        self.out_at = (self.out_at + n).min(self.out.len());
    }

    fn serialize(&mut self) -> Result<(), Error> {
        loop {
            let mut chunk: *const u8 = ptr::null();
            // SAFETY: `raw` is live; nghttp2 sets `chunk` to a buffer of
            // the returned length, valid until its next call, and it is
            // copied before that.
            let n = unsafe { sys::nghttp2_session_mem_send2(self.raw, &mut chunk) };
            self.failed()?;
            if n < 0 {
                return Err(error(n as c_int));
            }
            if n > 0 {
                // SAFETY: as above.
                self.out
                    .extend_from_slice(unsafe { std::slice::from_raw_parts(chunk, n as usize) });
            }
            // Trailers due after a body read whole: submitted now that
            // nghttp2 is out of its read callback; the next mem_send2
            // serializes them after the DATA already out.
            let due = std::mem::take(&mut self.state.trailers_due);
            let resets = std::mem::take(&mut self.state.resets_due);
            let submitted = !due.is_empty() || !resets.is_empty();
            for stream in resets {
                // SAFETY: `raw` is live. A stream closed meanwhile is
                // not an error of the connection.
                let _ = unsafe {
                    sys::nghttp2_submit_rst_stream(
                        self.raw,
                        sys::NGHTTP2_FLAG_NONE as u8,
                        stream,
                        code::NO_ERROR,
                    )
                };
            }
            for (stream, trailers) in due {
                let fields: Vec<(&[u8], &[u8])> = trailers
                    .iter()
                    .map(|(n, v)| (n.as_slice(), v.as_slice()))
                    .collect();
                let nva = nv(&fields);
                // SAFETY: `raw` is live; nva points into `trailers`.
                check(unsafe {
                    sys::nghttp2_submit_trailer(self.raw, stream, nva.as_ptr(), nva.len())
                })?;
            }
            if n == 0 && !submitted {
                return Ok(());
            }
        }
    }

    /// Whether nghttp2 wants more input: false once the session is over
    /// (a GOAWAY exchanged and its streams done, or a fatal error).
    pub fn wants_read(&self) -> bool {
        // SAFETY: `raw` is live.
        unsafe { sys::nghttp2_session_want_read(self.raw) != 0 }
    }

    /// Whether the connection is done: nothing more to read or to write.
    pub fn is_done(&mut self) -> bool {
        // SAFETY: `raw` is live.
        let wants = unsafe {
            sys::nghttp2_session_want_read(self.raw) != 0
                || sys::nghttp2_session_want_write(self.raw) != 0
        };
        !wants && self.out_at == self.out.len()
    }
}
