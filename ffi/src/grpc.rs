//! The gRPC front: one HTTP/2 connection of an exposure served over
//! `grpc::Rpc`, between its bytes and the exposure. A thin wrapper of
//! `limen_grpc::GrpcFront`; the order of calls is the HTTP front's
//! ([`crate::front`]), with [`limen_grpc_front_stop`] for a graceful end.
//!
//! Many calls are in flight on one connection (one per stream); each
//! REQUEST event is one call, and every DELIVER event for the connection's
//! correlation is handed back with [`limen_grpc_front_deliver`], which
//! finds its stream again.

use limen_core::hale::runtime::Request;
use limen_core::wire::front::{Front, FrontEvent, Machine};
use limen_grpc::{GrpcFront, GrpcLimits};

use crate::exposure::limen_exposure;
use crate::front::{limen_front_event, submit_held, take_delivery};
use crate::{
    bytes, copy_out, free, guard, guard_value, handle, limen_result, limen_str, put, Failure,
};

/// One HTTP/2 connection of a gRPC exposure. Made by
/// [`limen_grpc_front_new`] when the connection is accepted, released by
/// [`limen_grpc_front_free`] once it is closed.
pub struct limen_grpc_front {
    front: GrpcFront,
    /// The request of the last REQUEST event, until the exposure takes it.
    request: Option<Request>,
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
pub unsafe extern "C" fn limen_grpc_front_new(
    now: u64,
    exposure: *mut limen_exposure,
    correlation: u64,
    out: *mut *mut limen_grpc_front,
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
        let raw = Box::into_raw(Box::new(limen_grpc_front {
            front,
            request: None,
        }));
        // SAFETY: the caller's promise that `out` is valid for a write.
        match unsafe { put(out, raw) } {
            Ok(()) => Ok(()),
            Err(e) => {
                // SAFETY: `raw` was made just above and never lent.
                unsafe { free(raw) };
                Err(e)
            }
        }
    })
}

/// Releases a gRPC front; `NULL` is ignored.
///
/// # Safety
/// `front` must be `NULL` or a handle from [`limen_grpc_front_new`] not
/// freed before.
#[no_mangle]
pub unsafe extern "C" fn limen_grpc_front_free(front: *mut limen_grpc_front) {
    // SAFETY: the caller's promise, passed through.
    guard_value((), || unsafe { free(front) })
}

/// The correlation the front was made with; 0 for a `NULL` handle.
///
/// # Safety
/// `front` must be `NULL` or a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_grpc_front_correlation(front: *const limen_grpc_front) -> u64 {
    // SAFETY: the caller's promise, passed through.
    guard_value(0, || {
        unsafe { front.as_ref() }.map_or(0, |h| h.front.correlation())
    })
}

/// The streams the front holds (read, or with the exposure, and not yet
/// answered); 0 for a `NULL` handle.
///
/// # Safety
/// `front` must be `NULL` or a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_grpc_front_streams_held(front: *const limen_grpc_front) -> usize {
    // SAFETY: the caller's promise, passed through.
    guard_value(0, || {
        unsafe { front.as_ref() }.map_or(0, |h| h.front.streams_held())
    })
}

/// Whether the front reads more input now (read the socket only while it
/// does: false while the peer does not read what is queued, and once the
/// connection is over); `false` for a `NULL` handle.
///
/// # Safety
/// `front` must be `NULL` or a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_grpc_front_wants_read(front: *const limen_grpc_front) -> bool {
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
pub unsafe extern "C" fn limen_grpc_front_is_closed(front: *const limen_grpc_front) -> bool {
    // SAFETY: the caller's promise, passed through.
    guard_value(true, || {
        unsafe { front.as_ref() }.is_none_or(|h| h.front.is_closed())
    })
}

/// `data` (`data_len` bytes, copied) was read from the socket at `now`. A
/// protocol error ends the connection after its GOAWAY (a CLOSED event once
/// that is written); an error of one stream resets that stream alone.
///
/// # Safety
/// `front` must be a live handle; `data` valid for `data_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn limen_grpc_front_handle_data(
    front: *mut limen_grpc_front,
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
/// exposure are lost (a LOST event) and the connection is done.
///
/// # Safety
/// `front` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_grpc_front_handle_eof(
    front: *mut limen_grpc_front,
    now: u64,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promise, passed through.
        let h = unsafe { handle(front) }?;
        h.request = None;
        h.front.handle_eof(now);
        Ok(())
    })
}

/// `now` is at or past [`limen_grpc_front_poll_timeout`]'s deadline:
/// output that waited that long on a peer that does not read ends the
/// connection. Before the deadline nothing happens.
///
/// # Safety
/// `front` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_grpc_front_handle_timeout(
    front: *mut limen_grpc_front,
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
pub unsafe extern "C" fn limen_grpc_front_poll_timeout(
    front: *const limen_grpc_front,
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

/// Takes the next event's kind into `*out`, as
/// [`crate::front::limen_front_poll_event`] does: REQUEST (one call, framed
/// from its stream: submit it with [`limen_grpc_front_submit`] before the
/// next call on the front), LOST, CLOSED, or NONE when none waits.
///
/// # Safety
/// `front` must be a live handle; `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_grpc_front_poll_event(
    front: *mut limen_grpc_front,
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

/// Hands the request of the front's last REQUEST event to `exposure`, as
/// [`crate::front::limen_front_submit`] does (`now` monotonic,
/// `wall_unix_ns` the wall clock for a credential's expiry), and writes its
/// request id to `*request_id` (`NULL` to ignore it).
/// `LIMEN_RESULT_INVALID_STATE` when the front holds no request.
///
/// # Safety
/// `front` and `exposure` must be live handles; `request_id` `NULL` or valid
/// for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_grpc_front_submit(
    front: *mut limen_grpc_front,
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

/// Answers on its stream, at `now`, the delivery of `exposure`'s last
/// DELIVER event (the exposure no longer holds it), as § gRPC's table says:
/// a result as HEADERS, DATA and trailers, every other outcome
/// trailers-only. A stream the peer reset meanwhile drops it.
/// `LIMEN_RESULT_INVALID_STATE` when the exposure holds no delivery,
/// `LIMEN_RESULT_INVALID_ARGUMENT` (the delivery still held) when it is
/// addressed to another connection.
///
/// # Safety
/// `front` and `exposure` must be live handles.
#[no_mangle]
pub unsafe extern "C" fn limen_grpc_front_deliver(
    front: *mut limen_grpc_front,
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

/// Graceful shutdown at `now`, once the exposure has answered what it will:
/// GOAWAY (NO_ERROR) after the replies already queued, naming the last
/// stream taken; a stream whose message was still being read never reached
/// the exposure and is reset REFUSED_STREAM. The connection closes (a
/// CLOSED event) when its streams are done and everything is written.
///
/// # Safety
/// `front` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_grpc_front_stop(
    front: *mut limen_grpc_front,
    now: u64,
) -> limen_result {
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
pub unsafe extern "C" fn limen_grpc_front_abort(front: *mut limen_grpc_front) -> limen_result {
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
/// [`limen_grpc_front_consume_output`].
///
/// # Safety
/// `front` must be a live handle; `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_grpc_front_pending_output(
    front: *mut limen_grpc_front,
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
/// with [`limen_grpc_front_consume_output`].
/// `LIMEN_RESULT_BUFFER_TOO_SMALL` writes the length needed and copies
/// nothing.
///
/// # Safety
/// `front` must be a live handle; `buf` valid for `buf_cap` bytes;
/// `written` for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_grpc_front_copy_output(
    front: *mut limen_grpc_front,
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
pub unsafe extern "C" fn limen_grpc_front_consume_output(
    front: *mut limen_grpc_front,
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
