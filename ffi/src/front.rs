//! The transport fronts: one connection of one transport (Unix lines,
//! HTTP/1.1, MCP, gRPC over HTTP/2) between its bytes and an exposure. One
//! handle for every transport, as rustls-ffi has one connection type for
//! client and server: a constructor per transport, then the same calls,
//! which drive `limen_core::wire::front::Front` (the order of calls is its
//! module's).
//!
//! A gRPC connection carries many calls at once (one per stream): each
//! REQUEST event is one call, every DELIVER event for the connection's
//! correlation is handed back with [`limen_front_deliver`], which finds its
//! stream again, and [`limen_front_stop`] ends it gracefully.

use limen_core::hale::runtime::{Delivery, Input, PeerCredentials, Request};
use limen_core::wire::front::{Front, FrontEvent, FrontLimits};
use limen_core::wire::http::HttpFront;
use limen_core::wire::mcp::McpFront;
use limen_core::wire::unix::UnixFront;
use limen_grpc::{GrpcFront, GrpcLimits};

use crate::exposure::limen_exposure;
use crate::{
    bytes, copy_out, free, guard, guard_value, handle, limen_result, limen_str, put, Failure,
};

/// One connection's front, of any transport. Made by
/// [`limen_front_new_unix`], [`limen_front_new_http`],
/// [`limen_front_new_mcp`] or [`limen_front_new_grpc`] when the connection
/// is accepted, released by [`limen_front_free`] once it is closed.
pub struct limen_front {
    front: Box<dyn Front + Send>,
    /// The request of the last REQUEST event, until the exposure takes it.
    request: Option<Request>,
}

/// Boxes `front` into a new handle written to `*out`.
fn made(front: impl Front + Send + 'static, out: *mut *mut limen_front) -> Result<(), Failure> {
    let h = Box::new(limen_front {
        front: Box::new(front),
        request: None,
    });
    let raw = Box::into_raw(h);
    // SAFETY: the exported caller's promise that `out` is valid for a write.
    match unsafe { put(out, raw) } {
        Ok(()) => Ok(()),
        Err(e) => {
            // SAFETY: `raw` was made just above and never lent.
            unsafe { free(raw) };
            Err(e)
        }
    }
}

/// A Unix-lines connection from the peer whose kernel credentials are
/// `uid`, `gid`, `pid` (-1 each for a peer the kernel will not name),
/// accepted at `now`; the exposure addresses its replies to `correlation`.
/// Writes a new handle to `*out`.
///
/// # Safety
/// `out` must be valid for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_front_new_unix(
    now: u64,
    uid: i64,
    gid: i64,
    pid: i64,
    correlation: u64,
    out: *mut *mut limen_front,
) -> limen_result {
    guard(|| {
        let peer = PeerCredentials {
            uid,
            gid,
            pid,
            groups: None,
        };
        let front = UnixFront::new(now, FrontLimits::default().line, peer, correlation);
        made(front, out)
    })
}

/// An HTTP/1.1 connection accepted at `now`, its replies addressed to
/// `correlation`. Writes a new handle to `*out`.
///
/// # Safety
/// `out` must be valid for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_front_new_http(
    now: u64,
    correlation: u64,
    out: *mut *mut limen_front,
) -> limen_result {
    guard(|| {
        let front = HttpFront::new(now, FrontLimits::default().http, correlation);
        made(front, out)
    })
}

/// An MCP connection (`POST /mcp` on HTTP/1.1) of `exposure`, accepted at
/// `now`, its replies addressed to `correlation`. Writes a new handle to
/// `*out`; the front keeps nothing of `exposure` but its tool names.
///
/// # Safety
/// `exposure` must be a live handle; `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_front_new_mcp(
    now: u64,
    exposure: *mut limen_exposure,
    correlation: u64,
    out: *mut *mut limen_front,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promise, passed through.
        let e = unsafe { handle(exposure) }?;
        let framing = e.framing.clone();
        let front = McpFront::new(now, FrontLimits::default().http, framing, correlation);
        made(front, out)
    })
}

/// An HTTP/2 connection (prior knowledge, no TLS) of `exposure`, which
/// must be served over gRPC ([`crate::exposure::limen_exposure_transport`]
/// is `LIMEN_TRANSPORT_GRPC`), accepted at `now`, its replies addressed to
/// `correlation`. The server's SETTINGS are queued as output at once.
/// Writes a new handle to `*out`; the front shares the exposure's framing
/// and keeps nothing else of it.
///
/// `LIMEN_RESULT_INVALID_ARGUMENT` when the exposure is not served over
/// gRPC; `LIMEN_RESULT_REFUSED` when nghttp2 cannot make a session (out of
/// memory).
///
/// # Safety
/// `exposure` must be a live handle; `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_front_new_grpc(
    now: u64,
    exposure: *mut limen_exposure,
    correlation: u64,
    out: *mut *mut limen_front,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promise, passed through.
        let e = unsafe { handle(exposure) }?;
        let framing = e.grpc.clone().ok_or_else(|| {
            Failure::new(
                limen_result::LIMEN_RESULT_INVALID_ARGUMENT,
                "the exposure is not served over gRPC",
            )
        })?;
        let front =
            GrpcFront::new(now, GrpcLimits::default(), framing, correlation).ok_or_else(|| {
                Failure::new(
                    limen_result::LIMEN_RESULT_REFUSED,
                    "nghttp2 could not make a session",
                )
            })?;
        made(front, out)
    })
}

/// Releases a front; `NULL` is ignored.
///
/// # Safety
/// `front` must be `NULL` or a handle from a `limen_front_new_*` not freed
/// before.
#[no_mangle]
pub unsafe extern "C" fn limen_front_free(front: *mut limen_front) {
    // SAFETY: the caller's promise, passed through.
    guard_value((), || unsafe { free(front) })
}

/// The correlation the front was made with; 0 for a `NULL` handle.
///
/// # Safety
/// `front` must be `NULL` or a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_front_correlation(front: *const limen_front) -> u64 {
    // SAFETY: the caller's promise, passed through.
    guard_value(0, || {
        unsafe { front.as_ref() }.map_or(0, |h| h.front.correlation())
    })
}

/// The calls the front holds (read, or with the exposure, and not yet
/// answered) on a gRPC front, one per stream; 0 for a front of another
/// transport and for a `NULL` handle.
///
/// # Safety
/// `front` must be `NULL` or a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_front_streams_held(front: *const limen_front) -> usize {
    // SAFETY: the caller's promise, passed through.
    guard_value(0, || {
        unsafe { front.as_ref() }.map_or(0, |h| h.front.streams_held())
    })
}

/// Whether the front reads more input now (read the socket only while it
/// does); `false` for a `NULL` handle.
///
/// # Safety
/// `front` must be `NULL` or a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_front_wants_read(front: *const limen_front) -> bool {
    // SAFETY: the caller's promise, passed through.
    guard_value(false, || {
        unsafe { front.as_ref() }.is_some_and(|h| h.front.wants_read())
    })
}

/// Whether the connection is done (close the socket); `true` for a `NULL`
/// handle.
///
/// # Safety
/// `front` must be `NULL` or a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_front_is_closed(front: *const limen_front) -> bool {
    // SAFETY: the caller's promise, passed through.
    guard_value(true, || {
        unsafe { front.as_ref() }.is_none_or(|h| h.front.is_closed())
    })
}

/// `data` (`data_len` bytes, copied) was read from the socket at `now`. On
/// gRPC, a protocol error ends the connection after its GOAWAY (a CLOSED
/// event once that is written); an error of one stream resets that stream
/// alone.
///
/// # Safety
/// `front` must be a live handle; `data` valid for `data_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn limen_front_handle_data(
    front: *mut limen_front,
    now: u64,
    data: *const u8,
    data_len: usize,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(front) }?;
        // SAFETY: as above.
        let data = unsafe { bytes(data, data_len) }?;
        h.request = None;
        h.front.handle_data(now, data);
        Ok(())
    })
}

/// The peer's end closed (or a read failed) at `now`: its calls with the
/// exposure are lost (a LOST event).
///
/// # Safety
/// `front` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_front_handle_eof(front: *mut limen_front, now: u64) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promise, passed through.
        let h = unsafe { handle(front) }?;
        h.request = None;
        h.front.handle_eof(now);
        Ok(())
    })
}

/// `now` is at or past [`limen_front_poll_timeout`]'s deadline (on gRPC,
/// output that waited that long on a peer that does not read ends the
/// connection). Before the deadline nothing happens.
///
/// # Safety
/// `front` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_front_handle_timeout(
    front: *mut limen_front,
    now: u64,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promise, passed through.
        let h = unsafe { handle(front) }?;
        h.request = None;
        h.front.handle_timeout(now);
        Ok(())
    })
}

/// Whether the front has a deadline; if so it is written to `*deadline`
/// (the monotonic clock, nanoseconds). `false` for a `NULL` handle.
///
/// # Safety
/// `front` must be `NULL` or a live handle; `deadline` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_front_poll_timeout(
    front: *const limen_front,
    deadline: *mut u64,
) -> bool {
    guard_value(false, || {
        // SAFETY: the caller's promise, passed through.
        let Some(h) = (unsafe { front.as_ref() }) else {
            return false;
        };
        match h.front.poll_timeout() {
            // SAFETY: as above.
            Some(t) => unsafe { put(deadline, t) }.is_ok(),
            None => false,
        }
    })
}

/// What a front event asks ([`limen_front_poll_event`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum limen_front_event {
    /// No event is waiting.
    LIMEN_FRONT_EVENT_NONE = 0,
    /// A request was framed: hand it to the exposure with
    /// [`limen_front_submit`] before the next call on the front (it is
    /// dropped otherwise).
    LIMEN_FRONT_EVENT_REQUEST = 1,
    /// The peer is gone: tell the exposure
    /// ([`crate::exposure::limen_exposure_connection_lost`]).
    LIMEN_FRONT_EVENT_LOST = 2,
    /// The connection is done: close the socket and free the front.
    LIMEN_FRONT_EVENT_CLOSED = 3,
}

/// Takes the next event's kind into `*out` (`LIMEN_FRONT_EVENT_NONE` when
/// none waits). Poll until NONE after every input and after output is
/// consumed.
///
/// # Safety
/// `front` must be a live handle; `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_front_poll_event(
    front: *mut limen_front,
    out: *mut limen_front_event,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(front) }?;
        h.request = None;
        let kind = match h.front.poll_event() {
            None => limen_front_event::LIMEN_FRONT_EVENT_NONE,
            Some(FrontEvent::Request { request, .. }) => {
                h.request = Some(request);
                limen_front_event::LIMEN_FRONT_EVENT_REQUEST
            }
            Some(FrontEvent::Lost) => limen_front_event::LIMEN_FRONT_EVENT_LOST,
            Some(FrontEvent::Closed) => limen_front_event::LIMEN_FRONT_EVENT_CLOSED,
        };
        // SAFETY: as above.
        unsafe { put(out, kind) }
    })
}

/// Hands the request of the front's last REQUEST event to `exposure`, which
/// arrived at `now` (monotonic) with the wall clock reading `wall_unix_ns`
/// (nanoseconds since the Unix epoch, for a credential's expiry), and
/// writes its request id to `*request_id` (`NULL` to ignore it).
/// `LIMEN_RESULT_INVALID_STATE` when the front holds no request. Poll the
/// exposure afterwards.
///
/// # Safety
/// `front` and `exposure` must be live handles; `request_id` `NULL` or valid
/// for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_front_submit(
    front: *mut limen_front,
    exposure: *mut limen_exposure,
    now: u64,
    wall_unix_ns: u64,
    request_id: *mut u64,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(front) }?;
        // SAFETY: as above.
        let e = unsafe { handle(exposure) }?;
        // SAFETY: as above.
        unsafe { submit_held(&mut h.request, e, now, wall_unix_ns, request_id) }
    })
}

/// Hands the request a front holds to `e` (a front's `submit`).
///
/// # Safety
/// `request_id` must be `NULL` or valid for a write.
unsafe fn submit_held(
    held: &mut Option<Request>,
    e: &mut limen_exposure,
    now: u64,
    wall_unix_ns: u64,
    request_id: *mut u64,
) -> Result<(), Failure> {
    let request = held.take().ok_or_else(|| {
        Failure::new(
            limen_result::LIMEN_RESULT_INVALID_STATE,
            "the front holds no request: submit right after a REQUEST event",
        )
    })?;
    e.delivery = None;
    // The id the request takes, then the request through the one verb.
    let id = e.exposure.next_request_id();
    e.exposure.handle_input(
        now,
        Input::Request {
            request,
            wall: wall_unix_ns,
        },
    );
    if !request_id.is_null() {
        // SAFETY: the caller's promise.
        unsafe { put(request_id, id) }?;
    }
    Ok(())
}

/// Takes the delivery `e` holds for the connection `correlation` (a
/// front's `deliver`); a delivery for another connection stays held.
fn take_delivery(e: &mut limen_exposure, correlation: u64) -> Result<Delivery, Failure> {
    let Some(d) = e.delivery.take() else {
        return Err(Failure::new(
            limen_result::LIMEN_RESULT_INVALID_STATE,
            "the exposure holds no delivery: deliver right after a DELIVER event",
        ));
    };
    if d.correlation != correlation {
        let why = format!(
            "the delivery is for connection {}, the front is {correlation}",
            d.correlation
        );
        e.delivery = Some(d);
        return Err(Failure::new(
            limen_result::LIMEN_RESULT_INVALID_ARGUMENT,
            why,
        ));
    }
    Ok(d)
}

/// Encodes the delivery of `exposure`'s last DELIVER event onto this front
/// at `now` (the exposure no longer holds it); on gRPC it answers on its
/// stream, as § gRPC's table says (a result as HEADERS, DATA and trailers,
/// every other outcome trailers-only), and a stream the peer reset
/// meanwhile drops it. `LIMEN_RESULT_INVALID_STATE`
/// when the exposure holds no delivery, `LIMEN_RESULT_INVALID_ARGUMENT`
/// (the delivery still held) when it is addressed to another connection.
///
/// # Safety
/// `front` and `exposure` must be live handles.
#[no_mangle]
pub unsafe extern "C" fn limen_front_deliver(
    front: *mut limen_front,
    exposure: *mut limen_exposure,
    now: u64,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(front) }?;
        // SAFETY: as above.
        let e = unsafe { handle(exposure) }?;
        h.request = None;
        let d = take_delivery(e, h.front.correlation())?;
        h.front.deliver(now, d);
        Ok(())
    })
}

/// Graceful shutdown at `now`, once the exposure has answered what it will
/// (`Front::stop`). On gRPC: GOAWAY (NO_ERROR) after the replies already
/// queued, naming the last stream taken; a stream whose message was still
/// being read never reached the exposure and is reset REFUSED_STREAM; the
/// connection closes (a CLOSED event) when its streams are done and
/// everything is written. The other transports end with their one request
/// or their peer: nothing happens.
///
/// # Safety
/// `front` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_front_stop(front: *mut limen_front, now: u64) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promise, passed through.
        let h = unsafe { handle(front) }?;
        h.request = None;
        h.front.stop(now);
        Ok(())
    })
}

/// Ends the connection now, whatever is queued (the exposure is finished
/// with it).
///
/// # Safety
/// `front` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_front_abort(front: *mut limen_front) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promise, passed through.
        let h = unsafe { handle(front) }?;
        h.request = None;
        h.front.abort();
        Ok(())
    })
}

/// Lends the bytes still to write into `*out`; they stay valid until the
/// next call on the front. Write what the socket takes, then report it with
/// [`limen_front_consume_output`].
///
/// # Safety
/// `front` must be a live handle; `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_front_pending_output(
    front: *mut limen_front,
    out: *mut limen_str,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(front) }?;
        let s = limen_str::lend(h.front.pending_output());
        // SAFETY: as above.
        unsafe { put(out, s) }
    })
}

/// Copies every byte still to write into `buf` (`buf_cap` bytes) and writes
/// the count to `*written`, consuming nothing: report what the socket took
/// with [`limen_front_consume_output`]. `LIMEN_RESULT_BUFFER_TOO_SMALL`
/// writes the length needed and copies nothing.
///
/// # Safety
/// `front` must be a live handle; `buf` valid for `buf_cap` bytes;
/// `written` for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_front_copy_output(
    front: *mut limen_front,
    buf: *mut u8,
    buf_cap: usize,
    written: *mut usize,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(front) }?;
        // SAFETY: as above.
        unsafe { copy_out(h.front.pending_output(), buf, buf_cap, written) }
    })
}

/// `n` bytes of the pending output were written at `now`.
/// `LIMEN_RESULT_INVALID_ARGUMENT` (nothing consumed) when `n` is more than
/// is pending.
///
/// # Safety
/// `front` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_front_consume_output(
    front: *mut limen_front,
    now: u64,
    n: usize,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promise, passed through.
        let h = unsafe { handle(front) }?;
        let pending = h.front.pending_output().len();
        crate::check_consume(n, pending)?;
        h.request = None;
        h.front.consume_output(now, n);
        Ok(())
    })
}
