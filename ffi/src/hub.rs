//! The WebSocket hub (`ws::Hub`, § Streams): every connection of one hub of
//! a program, its subscriptions and their queues, as one handle. A thin
//! wrapper of `limen_core::wire::ws::Hub`; the order of calls is its
//! module's.
//!
//! The driver accepts sockets and names each by an id of its choosing
//! ([`limen_hub_accept`]); the hub reads the HTTP upgrade and the
//! `subscribe` frames, and writes the frames of § Streams. The program's
//! side publishes ([`limen_hub_publish`]), announces a role source's
//! revision ([`limen_hub_announce`]) and stops ([`limen_hub_stop`]).

use std::collections::BTreeSet;
use std::ffi::c_char;

use limen_core::hale::docs::ExposureDescriber;
use limen_core::hale::model::TransportKind;
use limen_core::hale::runtime::Describer;
use limen_core::wire::ws::hub::{Hub, HubEvent, Published};
use limen_core::wire::ws::hub_spec::HubSpec;

use crate::exposure::limen_identity;
use crate::{
    bytes, c_text, copy_out, free, guard, guard_value, handle, limen_result, limen_str, put,
    Failure,
};

/// One WebSocket hub. Made by [`limen_hub_new`], released by
/// [`limen_hub_free`].
pub struct limen_hub {
    hub: Hub,
    identity: Vec<u8>,
    /// The ids accepted and not yet closed, so an id in use is refused
    /// rather than silently replacing its connection.
    open: BTreeSet<u64>,
}

/// Builds the hub `name` (NUL-terminated; the hub literal's `as:`) of the
/// program text `src` (`src_len` bytes) served over WebSocket, with the
/// identity sources of `identity` (read, not kept: the caller still frees
/// it; its callbacks, when set, are asked at every upgrade and recheck),
/// and writes a new handle to `*out`. `bound` (NUL-terminated, or `NULL`
/// for the address as written) is the listener's address as described.
///
/// `LIMEN_RESULT_REFUSED` when the program does not pass its check,
/// `LIMEN_RESULT_NOT_FOUND` when it has no hub `name`,
/// `LIMEN_RESULT_UNREADABLE` when the hub is not a `ws::Hub` or cannot be
/// served.
///
/// # Safety
/// `src` must be valid for `src_len` bytes; `name` NUL-terminated;
/// `identity` a live handle; `bound` `NULL` or NUL-terminated; `out` valid
/// for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_hub_new(
    src: *const u8,
    src_len: usize,
    name: *const c_char,
    identity: *mut limen_identity,
    bound: *const c_char,
    out: *mut *mut limen_hub,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let src = unsafe { crate::text(src, src_len, "the program") }?;
        // SAFETY: as above.
        let name = unsafe { c_text(name, "the hub's name") }?;
        // SAFETY: as above.
        let ids = unsafe { handle(identity) }?;
        let bound = if bound.is_null() {
            None
        } else {
            // SAFETY: as above.
            Some(unsafe { c_text(bound, "the bound address") }?)
        };
        let program = crate::exposure::checked_program(src)?;
        let model = program.hub(name).ok_or_else(|| {
            Failure::new(
                limen_result::LIMEN_RESULT_NOT_FOUND,
                format!("the program has no hub `{name}`"),
            )
        })?;
        let unreadable = |e: String| Failure::new(limen_result::LIMEN_RESULT_UNREADABLE, e);
        if model.literal.kind != TransportKind::Ws {
            return Err(unreadable(format!(
                "the hub `{name}` is not a ws::Hub (limen_hub serves WebSocket)"
            )));
        }
        let spec = HubSpec::from_program(&program, name).map_err(unreadable)?;
        let id = program
            .hub_exposure_id(name)
            .map_err(|e| unreadable(e.to_string()))?;
        let describer = ExposureDescriber::new(&program, name, bound)
            .map_err(|e| unreadable(format!("cannot describe `{name}`: {e}")))?;
        // A hub's principals are always a bearer source's (§ Streams: the
        // upgrade presents a token).
        let (bearer, roles) = ids.sources(false);
        let hub = Hub::new(
            spec,
            bearer,
            roles,
            Box::new(describer) as Box<dyn Describer + Send>,
        );
        let h = Box::new(limen_hub {
            hub,
            identity: id.into_bytes(),
            open: BTreeSet::new(),
        });
        // SAFETY: as above.
        unsafe { put(out, Box::into_raw(h)) }
    })
}

/// Releases a hub; `NULL` is ignored. Its connections are forgotten (close
/// their sockets).
///
/// # Safety
/// `hub` must be `NULL` or a handle from [`limen_hub_new`] not freed
/// before.
#[no_mangle]
pub unsafe extern "C" fn limen_hub_free(hub: *mut limen_hub) {
    // SAFETY: the caller's promise, passed through.
    guard_value((), || unsafe { free(hub) })
}

/// Writes the hub's exposure identity (`hub@<digest>/<name>`) into `buf`,
/// its length to `*written`.
///
/// # Safety
/// `hub` must be a live handle; `buf` valid for `buf_cap` bytes; `written`
/// for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_hub_identity(
    hub: *mut limen_hub,
    buf: *mut u8,
    buf_cap: usize,
    written: *mut usize,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(hub) }?;
        // SAFETY: as above.
        unsafe { copy_out(&h.identity, buf, buf_cap, written) }
    })
}

/// A socket was accepted at `now`; `conn` names it in every call until its
/// CLOSE event. `LIMEN_RESULT_INVALID_ARGUMENT` when `conn` names a
/// connection not yet closed. After `limen_hub_stop` the connection is
/// still read (its upgrade is answered, its subscribes refused
/// `shutting_down`), but a driver stops accepting.
///
/// # Safety
/// `hub` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_hub_accept(
    hub: *mut limen_hub,
    now: u64,
    conn: u64,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promise, passed through.
        let h = unsafe { handle(hub) }?;
        if !h.open.insert(conn) {
            return Err(Failure::new(
                limen_result::LIMEN_RESULT_INVALID_ARGUMENT,
                format!("connection {conn} is open: an id is reused only after its CLOSE event"),
            ));
        }
        h.hub.handle_accept(now, conn);
        Ok(())
    })
}

/// The connection named `conn`, or `LIMEN_RESULT_NOT_FOUND`.
fn open(h: &limen_hub, conn: u64) -> Result<(), Failure> {
    if h.open.contains(&conn) {
        Ok(())
    } else {
        Err(Failure::new(
            limen_result::LIMEN_RESULT_NOT_FOUND,
            format!("no open connection {conn}"),
        ))
    }
}

/// `data` (`data_len` bytes, copied) was read from `conn` at `now`, the
/// wall clock reading `wall_unix_ns` (nanoseconds since the Unix epoch: an
/// upgrade reads its credential's expiry on it). `LIMEN_RESULT_NOT_FOUND`
/// for a connection not open.
///
/// # Safety
/// `hub` must be a live handle; `data` valid for `data_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn limen_hub_handle_data(
    hub: *mut limen_hub,
    now: u64,
    wall_unix_ns: u64,
    conn: u64,
    data: *const u8,
    data_len: usize,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(hub) }?;
        // SAFETY: as above.
        let data = unsafe { bytes(data, data_len) }?;
        open(h, conn)?;
        h.hub.handle_data(now, wall_unix_ns, conn, data);
        Ok(())
    })
}

/// The peer's end of `conn` closed (or a read failed) at `now`: its
/// subscriptions end and nothing more is written to it (a CLOSE event
/// follows). `LIMEN_RESULT_NOT_FOUND` for a connection not open.
///
/// # Safety
/// `hub` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_hub_handle_eof(
    hub: *mut limen_hub,
    now: u64,
    conn: u64,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promise, passed through.
        let h = unsafe { handle(hub) }?;
        open(h, conn)?;
        h.hub.handle_eof(now, conn);
        Ok(())
    })
}

/// `now` is at or past [`limen_hub_poll_timeout`]'s deadline: credentials
/// reach their expiry (`unauthorized` `expired`), a write stalled past its
/// limit drops its connection, a peer that never answered the close frame
/// is let go. Before every deadline nothing happens.
///
/// # Safety
/// `hub` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_hub_handle_timeout(hub: *mut limen_hub, now: u64) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promise, passed through.
        let h = unsafe { handle(hub) }?;
        h.hub.handle_timeout(now);
        Ok(())
    })
}

/// Whether the hub has a deadline; if so it is written to `*deadline` (the
/// monotonic clock, nanoseconds). `false` for a `NULL` handle.
///
/// # Safety
/// `hub` must be `NULL` or a live handle; `deadline` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_hub_poll_timeout(hub: *const limen_hub, deadline: *mut u64) -> bool {
    guard_value(false, || {
        // SAFETY: the caller's promise, passed through.
        let Some(h) = (unsafe { hub.as_ref() }) else {
            return false;
        };
        match h.hub.poll_timeout() {
            // SAFETY: as above.
            Some(t) => unsafe { put(deadline, t) }.is_ok(),
            None => false,
        }
    })
}

/// What a hub event asks ([`limen_hub_event`]'s `kind`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum limen_hub_event_kind {
    /// No event is waiting.
    LIMEN_HUB_EVENT_NONE = 0,
    /// `conn` has bytes to write: write its
    /// [`limen_hub_pending_output`], report it with
    /// [`limen_hub_consume_output`], and look again (the next frame may
    /// follow at once).
    LIMEN_HUB_EVENT_OUTPUT = 1,
    /// `conn` is done (its last bytes written, or dropped): close the
    /// socket. The id is free again.
    LIMEN_HUB_EVENT_CLOSE = 2,
}

/// One hub event.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct limen_hub_event {
    /// What the event asks.
    pub kind: limen_hub_event_kind,
    /// OUTPUT, CLOSE: the connection.
    pub conn: u64,
}

/// Takes the next event into `*out` (kind `LIMEN_HUB_EVENT_NONE` when none
/// waits). Poll until NONE after every input, publish, announce and stop.
///
/// # Safety
/// `hub` must be a live handle; `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_hub_poll_event(
    hub: *mut limen_hub,
    out: *mut limen_hub_event,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(hub) }?;
        // The ABI's hub serves no surface (it never calls
        // `Hub::serve_calls`), so it frames no calls; were one framed, it
        // would have no exposure to go to, and is passed over.
        let ev = loop {
            break match h.hub.poll_event() {
                None => limen_hub_event {
                    kind: limen_hub_event_kind::LIMEN_HUB_EVENT_NONE,
                    conn: 0,
                },
                Some(HubEvent::Output(conn)) => limen_hub_event {
                    kind: limen_hub_event_kind::LIMEN_HUB_EVENT_OUTPUT,
                    conn,
                },
                Some(HubEvent::Close(conn)) => {
                    h.open.remove(&conn);
                    limen_hub_event {
                        kind: limen_hub_event_kind::LIMEN_HUB_EVENT_CLOSE,
                        conn,
                    }
                }
                Some(HubEvent::Call(_) | HubEvent::Lost(_)) => continue,
            };
        };
        // SAFETY: as above.
        unsafe { put(out, ev) }
    })
}

/// Whether the hub reads `conn` now: false while the client has more
/// answers or bytes waiting to be written than the limits allow (read the
/// socket again once this is true), and for a connection not open or a
/// `NULL` handle.
///
/// # Safety
/// `hub` must be `NULL` or a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_hub_wants_read(hub: *const limen_hub, conn: u64) -> bool {
    // SAFETY: the caller's promise, passed through.
    guard_value(false, || {
        unsafe { hub.as_ref() }.is_some_and(|h| h.hub.wants_read(conn))
    })
}

/// Lends the bytes `conn` still has to write into `*out` (empty for a
/// connection not open); they stay valid until the next call on the hub.
///
/// # Safety
/// `hub` must be a live handle; `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_hub_pending_output(
    hub: *mut limen_hub,
    conn: u64,
    out: *mut limen_str,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(hub) }?;
        let s = limen_str::lend(h.hub.pending_output(conn));
        // SAFETY: as above.
        unsafe { put(out, s) }
    })
}

/// Copies every byte `conn` still has to write into `buf` (`buf_cap`
/// bytes) and writes the count to `*written`, consuming nothing.
/// `LIMEN_RESULT_BUFFER_TOO_SMALL` writes the length needed and copies
/// nothing.
///
/// # Safety
/// `hub` must be a live handle; `buf` valid for `buf_cap` bytes; `written`
/// for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_hub_copy_output(
    hub: *mut limen_hub,
    conn: u64,
    buf: *mut u8,
    buf_cap: usize,
    written: *mut usize,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(hub) }?;
        // SAFETY: as above.
        unsafe { copy_out(h.hub.pending_output(conn), buf, buf_cap, written) }
    })
}

/// The socket of `conn` took `n` bytes of its pending output at `now`.
/// `LIMEN_RESULT_INVALID_ARGUMENT` (nothing consumed) when `n` is more than
/// is pending, `LIMEN_RESULT_NOT_FOUND` for a connection not open.
///
/// # Safety
/// `hub` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_hub_consume_output(
    hub: *mut limen_hub,
    now: u64,
    conn: u64,
    n: usize,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promise, passed through.
        let h = unsafe { handle(hub) }?;
        open(h, conn)?;
        let pending = h.hub.pending_output(conn).len();
        crate::check_consume(n, pending)?;
        h.hub.consume_output(now, conn, n);
        Ok(())
    })
}

/// Publishes `payload` (`payload_len` bytes: the event's JSON text, as the
/// row's codec writes it, put into each `event` frame as it stands) on
/// `topic` (NUL-terminated) at `now`: offered to every admitted
/// subscription of the topic, each taking its next seq and shedding under
/// its row's `on_full` when its queue is full. Writes how many
/// subscriptions it was offered to into `*offered` (`NULL` to ignore it).
///
/// `LIMEN_RESULT_INVALID_ARGUMENT` when the payload is not JSON,
/// `LIMEN_RESULT_NOT_FOUND` when the hub binds no stream for `topic`,
/// `LIMEN_RESULT_REFUSED` when the payload does not fit the bus frame (it
/// reaches nobody and takes no seq), `LIMEN_RESULT_INVALID_STATE` after
/// [`limen_hub_stop`].
///
/// # Safety
/// `hub` must be a live handle; `topic` NUL-terminated; `payload` valid for
/// `payload_len` bytes; `offered` `NULL` or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_hub_publish(
    hub: *mut limen_hub,
    now: u64,
    topic: *const c_char,
    payload: *const u8,
    payload_len: usize,
    offered: *mut usize,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(hub) }?;
        // SAFETY: as above.
        let topic = unsafe { c_text(topic, "the topic") }?;
        // SAFETY: as above.
        let payload = unsafe { crate::text(payload, payload_len, "the payload") }?;
        // The payload is written into the frame as it stands: text that is
        // not JSON would make every subscriber's frame unreadable.
        if serde_json::from_str::<serde_json::Value>(payload).is_err() {
            return Err(Failure::new(
                limen_result::LIMEN_RESULT_INVALID_ARGUMENT,
                "the payload is not JSON",
            ));
        }
        let n = match h.hub.publish(now, topic, payload) {
            Published::Offered(n) => n,
            Published::TooLarge => {
                return Err(Failure::new(
                    limen_result::LIMEN_RESULT_REFUSED,
                    "the payload does not fit the bus frame",
                ))
            }
            Published::UnknownTopic => {
                return Err(Failure::new(
                    limen_result::LIMEN_RESULT_NOT_FOUND,
                    format!("the hub binds no stream for `{topic}`"),
                ))
            }
            Published::Stopped => {
                return Err(Failure::new(
                    limen_result::LIMEN_RESULT_INVALID_STATE,
                    "the hub has stopped",
                ))
            }
        };
        if !offered.is_null() {
            // SAFETY: as above.
            unsafe { put(offered, n) }?;
        }
        Ok(())
    })
}

/// A role source's revision at `now`: every subscription is rechecked
/// against the source's grants (the identity's role callback, asked now);
/// one whose row's requires no longer holds receives one `unauthorized`
/// frame (`revoked`) and loses what it held.
///
/// # Safety
/// `hub` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_hub_announce(
    hub: *mut limen_hub,
    now: u64,
    revision: u64,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promise, passed through.
        let h = unsafe { handle(hub) }?;
        h.hub.announce(now, revision);
        Ok(())
    })
}

/// `stop()` at `now`: each connection writes `closed` after what was
/// queued for it, then the close frame, and closes once the peer answers
/// it (or its wait ends); a subscribe after it is refused `shutting_down`
/// and nothing more is published. Stop accepting. Idempotent.
///
/// # Safety
/// `hub` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_hub_stop(hub: *mut limen_hub, now: u64) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promise, passed through.
        let h = unsafe { handle(hub) }?;
        h.hub.stop(now);
        Ok(())
    })
}

/// Whether the hub stopped and every connection is closed (the driver may
/// exit); `true` for a `NULL` handle.
///
/// # Safety
/// `hub` must be `NULL` or a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_hub_is_finished(hub: *const limen_hub) -> bool {
    // SAFETY: the caller's promise, passed through.
    guard_value(true, || {
        unsafe { hub.as_ref() }.is_none_or(|h| h.hub.is_finished())
    })
}

/// The subscriptions admitted and not ended, over every connection
/// (`subscribers()`); 0 for a `NULL` handle.
///
/// # Safety
/// `hub` must be `NULL` or a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_hub_subscribers(hub: *const limen_hub) -> usize {
    // SAFETY: the caller's promise, passed through.
    guard_value(0, || {
        unsafe { hub.as_ref() }.map_or(0, |h| h.hub.subscribers())
    })
}

/// The WebSocket connections held, upgraded and not yet closed
/// (`connections()`); 0 for a `NULL` handle.
///
/// # Safety
/// `hub` must be `NULL` or a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_hub_connections(hub: *const limen_hub) -> usize {
    // SAFETY: the caller's promise, passed through.
    guard_value(0, || {
        unsafe { hub.as_ref() }.map_or(0, |h| h.hub.connections())
    })
}

/// How many events the hub's topics have offered (`events()`: each
/// publish that fit the bus frame, subscribed or not); 0 for a `NULL`
/// handle.
///
/// # Safety
/// `hub` must be `NULL` or a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_hub_events(hub: *const limen_hub) -> u64 {
    // SAFETY: the caller's promise, passed through.
    guard_value(0, || unsafe { hub.as_ref() }.map_or(0, |h| h.hub.events()))
}
