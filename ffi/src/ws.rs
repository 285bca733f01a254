//! The WebSocket codec alone (RFC 6455, the server's side), for a program
//! that wants frames and not a hub: after it answered the upgrade itself
//! (with [`limen_ws_accept_key`]), one [`limen_ws_conn`] per connection
//! reads masked client frames into messages and writes unmasked ones. A
//! thin wrapper of `limen_core::wire::ws::WsConn`; the order of calls is
//! its module's.

use limen_core::wire::machine::Machine;
use limen_core::wire::ws::{accept_key, Limits, WsConn, WsEvent};

use crate::{
    bytes, copy_out, free, guard, guard_value, handle, limen_result, limen_str, put, Failure,
};

/// The codec's limits ([`limen_ws_limits_default`]: a message of at most
/// 64 KiB, no fragments, no binary, as the hub speaks).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct limen_ws_limits {
    /// The largest message taken, all its fragments together; a larger one
    /// closes the connection 1009.
    pub max_message: usize,
    /// Whether a message may come in fragments (else 1008).
    pub fragments: bool,
    /// Whether binary messages are taken (else 1003).
    pub binary: bool,
}

/// The default limits, the hub's.
#[no_mangle]
pub extern "C" fn limen_ws_limits_default() -> limen_ws_limits {
    let l = Limits::default();
    limen_ws_limits {
        max_message: l.max_message,
        fragments: l.fragments,
        binary: l.binary,
    }
}

/// Writes the `Sec-WebSocket-Accept` value for the client's
/// `Sec-WebSocket-Key` `key` (`key_len` bytes, as the header states it)
/// into `buf`, its length (28) to `*written`: the one computed header of
/// the `101 Switching Protocols` a program writes before making a
/// [`limen_ws_conn`].
///
/// # Safety
/// `key` must be valid for `key_len` bytes; `buf` for `buf_cap` bytes;
/// `written` for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_ws_accept_key(
    key: *const u8,
    key_len: usize,
    buf: *mut u8,
    buf_cap: usize,
    written: *mut usize,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let key = unsafe { crate::text(key, key_len, "the key") }?;
        let accept = accept_key(key.trim());
        // SAFETY: as above.
        unsafe { copy_out(accept.as_bytes(), buf, buf_cap, written) }
    })
}

/// One upgraded WebSocket connection, the server's side. Made by
/// [`limen_ws_conn_new`], released by [`limen_ws_conn_free`].
pub struct limen_ws_conn {
    conn: WsConn,
    /// The last event, whose bytes an event struct lends until the next
    /// call.
    event: Option<WsEvent>,
}

/// A connection just upgraded, under `limits`. Writes a new handle to
/// `*out`. `LIMEN_RESULT_INVALID_ARGUMENT` for a `max_message` of 0.
///
/// # Safety
/// `out` must be valid for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_ws_conn_new(
    limits: limen_ws_limits,
    out: *mut *mut limen_ws_conn,
) -> limen_result {
    guard(|| {
        if limits.max_message == 0 {
            return Err(Failure::new(
                limen_result::LIMEN_RESULT_INVALID_ARGUMENT,
                "max_message is 0: no message would be taken",
            ));
        }
        let conn = WsConn::new(Limits {
            max_message: limits.max_message,
            fragments: limits.fragments,
            binary: limits.binary,
        });
        let raw = Box::into_raw(Box::new(limen_ws_conn { conn, event: None }));
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

/// Releases a connection; `NULL` is ignored.
///
/// # Safety
/// `conn` must be `NULL` or a handle from [`limen_ws_conn_new`] not freed
/// before.
#[no_mangle]
pub unsafe extern "C" fn limen_ws_conn_free(conn: *mut limen_ws_conn) {
    // SAFETY: the caller's promise, passed through.
    guard_value((), || unsafe { free(conn) })
}

/// `data` (`data_len` bytes, copied, in any split) was read from the socket
/// at `now`.
///
/// # Safety
/// `conn` must be a live handle; `data` valid for `data_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn limen_ws_conn_handle_data(
    conn: *mut limen_ws_conn,
    now: u64,
    data: *const u8,
    data_len: usize,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(conn) }?;
        // SAFETY: as above.
        let data = unsafe { bytes(data, data_len) }?;
        h.event = None;
        h.conn.handle_data(now, data);
        Ok(())
    })
}

/// The peer's end closed at `now`; without a close handshake that is a
/// CLOSED event with 1006.
///
/// # Safety
/// `conn` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_ws_conn_handle_eof(
    conn: *mut limen_ws_conn,
    now: u64,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promise, passed through.
        let h = unsafe { handle(conn) }?;
        h.event = None;
        h.conn.handle_eof(now);
        Ok(())
    })
}

/// What a WebSocket event is ([`limen_ws_event`]'s `kind`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum limen_ws_event_kind {
    /// No event is waiting.
    LIMEN_WS_EVENT_NONE = 0,
    /// A whole text message (`data`, UTF-8).
    LIMEN_WS_EVENT_TEXT = 1,
    /// A whole binary message (`data`; only with `binary` in the limits).
    LIMEN_WS_EVENT_BINARY = 2,
    /// The connection is over: the peer's close (`code`, or 1005 when it
    /// gave none), the peer's protocol error (the code this side sent), or
    /// the end of input without a close (1006). Write what is pending, then
    /// close the socket.
    LIMEN_WS_EVENT_CLOSED = 3,
}

/// One WebSocket event. Its pointers stay valid until the next call on the
/// connection; the fields a kind does not name are zero or empty.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct limen_ws_event {
    /// What happened.
    pub kind: limen_ws_event_kind,
    /// TEXT, BINARY: the message.
    pub data: limen_str,
    /// CLOSED: the close code.
    pub code: u16,
    /// CLOSED: the reason, as the closing side gave it.
    pub reason: limen_str,
}

/// Takes the next event into `*out` (kind `LIMEN_WS_EVENT_NONE` when none
/// waits). Poll until NONE after every input, and answer each message
/// before taking the next: after a protocol error of the peer's, the close
/// frame is queued as its CLOSED event is taken, after the answers to the
/// messages before it.
///
/// # Safety
/// `conn` must be a live handle; `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_ws_conn_poll_event(
    conn: *mut limen_ws_conn,
    out: *mut limen_ws_event,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(conn) }?;
        h.event = h.conn.poll_event();
        let mut ev = limen_ws_event {
            kind: limen_ws_event_kind::LIMEN_WS_EVENT_NONE,
            data: limen_str::EMPTY,
            code: 0,
            reason: limen_str::EMPTY,
        };
        match &h.event {
            None => {}
            Some(WsEvent::Text(text)) => {
                ev.kind = limen_ws_event_kind::LIMEN_WS_EVENT_TEXT;
                ev.data = limen_str::lend(text.as_bytes());
            }
            Some(WsEvent::Binary(data)) => {
                ev.kind = limen_ws_event_kind::LIMEN_WS_EVENT_BINARY;
                ev.data = limen_str::lend(data);
            }
            Some(WsEvent::Closed { code, reason }) => {
                ev.kind = limen_ws_event_kind::LIMEN_WS_EVENT_CLOSED;
                ev.code = *code;
                ev.reason = limen_str::lend(reason.as_bytes());
            }
        }
        // SAFETY: as above.
        unsafe { put(out, ev) }
    })
}

/// Queues `text` (`text_len` bytes of UTF-8) as one unmasked text frame at
/// `now`; nothing is sent once the close handshake began. `text` may be the
/// data of the event just taken (an echo): it is read before the event's
/// bytes are released.
/// `LIMEN_RESULT_INVALID_ARGUMENT` when it is not UTF-8 (a text frame must
/// be).
///
/// # Safety
/// `conn` must be a live handle; `text` valid for `text_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn limen_ws_conn_send_text(
    conn: *mut limen_ws_conn,
    now: u64,
    text: *const u8,
    text_len: usize,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(conn) }?;
        // SAFETY: as above.
        let text = unsafe { crate::text(text, text_len, "the text") }?;
        // `text` may be the last event's own bytes (an echo): they are
        // copied before the event is dropped.
        h.conn.send_text(now, text);
        h.event = None;
        Ok(())
    })
}

/// Queues `data` (`data_len` bytes) as one unmasked binary frame at `now`,
/// as [`limen_ws_conn_send_text`] does text.
///
/// # Safety
/// `conn` must be a live handle; `data` valid for `data_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn limen_ws_conn_send_binary(
    conn: *mut limen_ws_conn,
    now: u64,
    data: *const u8,
    data_len: usize,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(conn) }?;
        // SAFETY: as above.
        let data = unsafe { bytes(data, data_len) }?;
        // As in limen_ws_conn_send_text: the event is dropped after.
        h.conn.send_binary(now, data);
        h.event = None;
        Ok(())
    })
}

/// Begins the close handshake at `now` with `code` and `reason`
/// (`reason_len` bytes of UTF-8, at most 123 of them sent), after what is
/// queued; the CLOSED event comes with the peer's answer.
///
/// # Safety
/// `conn` must be a live handle; `reason` valid for `reason_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn limen_ws_conn_close(
    conn: *mut limen_ws_conn,
    now: u64,
    code: u16,
    reason: *const u8,
    reason_len: usize,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(conn) }?;
        // SAFETY: as above.
        let reason = unsafe { crate::text(reason, reason_len, "the reason") }?;
        // As in limen_ws_conn_send_text: the event is dropped after.
        h.conn.close(now, code, reason);
        h.event = None;
        Ok(())
    })
}

/// Whether the connection is over (a CLOSED event was taken); `true` for
/// a `NULL` handle.
///
/// # Safety
/// `conn` must be `NULL` or a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_ws_conn_is_closed(conn: *const limen_ws_conn) -> bool {
    // SAFETY: the caller's promise, passed through.
    guard_value(true, || {
        unsafe { conn.as_ref() }.is_none_or(|h| h.conn.is_closed())
    })
}

/// Lends the bytes still to write into `*out`; they stay valid until the
/// next call on the connection.
///
/// # Safety
/// `conn` must be a live handle; `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_ws_conn_pending_output(
    conn: *mut limen_ws_conn,
    out: *mut limen_str,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(conn) }?;
        let s = limen_str::lend(h.conn.pending_output());
        // SAFETY: as above.
        unsafe { put(out, s) }
    })
}

/// Copies every byte still to write into `buf` (`buf_cap` bytes) and writes
/// the count to `*written`, consuming nothing.
/// `LIMEN_RESULT_BUFFER_TOO_SMALL` writes the length needed and copies
/// nothing.
///
/// # Safety
/// `conn` must be a live handle; `buf` valid for `buf_cap` bytes;
/// `written` for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_ws_conn_copy_output(
    conn: *mut limen_ws_conn,
    buf: *mut u8,
    buf_cap: usize,
    written: *mut usize,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(conn) }?;
        // SAFETY: as above.
        unsafe { copy_out(h.conn.pending_output(), buf, buf_cap, written) }
    })
}

/// `n` bytes of the pending output were written at `now`.
/// `LIMEN_RESULT_INVALID_ARGUMENT` (nothing consumed) when `n` is more than
/// is pending.
///
/// # Safety
/// `conn` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_ws_conn_consume_output(
    conn: *mut limen_ws_conn,
    now: u64,
    n: usize,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promise, passed through.
        let h = unsafe { handle(conn) }?;
        let pending = h.conn.pending_output().len();
        crate::check_consume(n, pending)?;
        h.event = None;
        h.conn.consume_output(now, n);
        Ok(())
    })
}
