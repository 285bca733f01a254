//! The Tool process protocol's two connections, their declarations read
//! from a listing: the host's side of one implementation process
//! ([`limen_tool_host`], a thin wrapper of `HostConn`; the order of calls is
//! `ToolConn`'s: the caller starts the process, writes its standard input
//! and reads its standard output) and the implementation's side
//! ([`limen_toolkit`], a thin wrapper of `ToolkitConn`: the caller reads
//! its own standard input and writes its standard output).

use std::ffi::{c_char, CString};

use limen_core::flow::canonical::write_canonical;
use limen_core::flow::tool::toolkit::{decode_args, ToolkitLimits};
use limen_core::flow::tool::{
    CallKey, HostConn, HostEvent, Limits, Listing, Outcome, Reply, ToolConn, ToolkitConn,
    ToolkitEvent,
};
use limen_core::flow::{decode_with_params, Identity, Limits as FlowLimits, Type};

use crate::{
    bytes, c_text, copy_out, free, guard, guard_value, handle, limen_result, limen_str, put,
    Failure,
};

/// The host's side of one implementation process, with the listing its
/// calls are declared in. Made by [`limen_tool_host_new`], released by
/// [`limen_tool_host_free`].
pub struct limen_tool_host {
    conn: HostConn,
    listing: Listing,
    limits: Limits,
    text: Vec<u8>,
    run: CString,
    call: CString,
}

/// What a host event asks or tells ([`limen_tool_event`]'s `kind`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum limen_tool_event_kind {
    /// No event is waiting.
    LIMEN_TOOL_EVENT_NONE = 0,
    /// Start the implementation's process, then report
    /// [`limen_tool_host_started`] (or [`limen_tool_host_start_failed`]).
    LIMEN_TOOL_EVENT_START = 1,
    /// Stop the process (it failed to describe itself); report
    /// [`limen_tool_host_handle_eof`] once it has ended.
    LIMEN_TOOL_EVENT_STOP = 2,
    /// The process described itself: `ok`, and `text` is describe's result
    /// as JSON; or not, and `text` says why.
    LIMEN_TOOL_EVENT_DESCRIBED = 3,
    /// A call is closed: `run` and `call` name it, `text` is its outcome as
    /// JSON (`{"Ok": …}`, `{"Failed": …}`, `{"NotRun": "…"}`,
    /// `{"Unknown": "…"}`, `{"BadReply": "…"}`), `ok` whether it is Ok.
    LIMEN_TOOL_EVENT_CLOSED = 4,
    /// Something the implementation sent changed nothing; `text` says what.
    LIMEN_TOOL_EVENT_DROPPED = 5,
}

/// One host event. Its pointers stay valid until the next call on the host.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct limen_tool_event {
    /// What the event asks or tells.
    pub kind: limen_tool_event_kind,
    /// DESCRIBED: whether it described itself; CLOSED: whether the outcome
    /// is Ok.
    pub ok: bool,
    /// CLOSED: the call's run id, NUL-terminated.
    pub run: *const c_char,
    /// CLOSED: the call's history id, NUL-terminated.
    pub call: *const c_char,
    /// DESCRIBED, CLOSED, DROPPED: the text (UTF-8, not NUL-terminated).
    pub text: limen_str,
}

/// Reads the listing `listing` (`listing_len` bytes of JSON: `{"data",
/// "tools"}`) and writes a new host handle to `*out`, with no process yet.
/// `LIMEN_RESULT_UNREADABLE` when the listing is not one limen reads.
///
/// # Safety
/// `listing` must be valid for `listing_len` bytes; `out` for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_tool_host_new(
    listing: *const u8,
    listing_len: usize,
    out: *mut *mut limen_tool_host,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let text = unsafe { bytes(listing, listing_len) }?;
        let listing = Listing::parse(text).map_err(|e| {
            Failure::new(
                limen_result::LIMEN_RESULT_UNREADABLE,
                format!("the listing is not one limen reads: {e}"),
            )
        })?;
        let limits = Limits::default();
        let h = Box::new(limen_tool_host {
            conn: HostConn::new(limits.clone()),
            listing,
            limits,
            text: Vec::new(),
            run: CString::default(),
            call: CString::default(),
        });
        // SAFETY: as above.
        unsafe { put(out, Box::into_raw(h)) }
    })
}

/// Releases a host; `NULL` is ignored. Open calls are dropped.
///
/// # Safety
/// `host` must be `NULL` or a handle from [`limen_tool_host_new`] not freed
/// before.
#[no_mangle]
pub unsafe extern "C" fn limen_tool_host_free(host: *mut limen_tool_host) {
    // SAFETY: the caller's promise, passed through.
    guard_value((), || unsafe { free(host) })
}

/// Asks for the implementation's describe at `now`: starts the process if
/// it is not running; a DESCRIBED event follows.
///
/// # Safety
/// `host` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_tool_host_describe(
    host: *mut limen_tool_host,
    now: u64,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promise, passed through.
        let h = unsafe { handle(host) }?;
        h.conn.describe(now);
        Ok(())
    })
}

fn key(run: &str, call: &str) -> CallKey {
    CallKey::new(run, call)
}

/// Sends a call at `now`: the Tool `tool` (its identity, NUL-terminated, as
/// the listing names it) with the args object `args` (`args_len` bytes of
/// JSON, one member per parameter), keyed by the run id `run` and the
/// history id `call` (both NUL-terminated). A generic Tool's type
/// parameters stand for `json.Value`. Starts the process if it is not
/// running; a CLOSED event naming the key follows, exactly once.
///
/// `LIMEN_RESULT_NOT_FOUND` when the listing declares no such Tool,
/// `LIMEN_RESULT_REFUSED` when the args do not decode at its parameters,
/// `LIMEN_RESULT_INVALID_STATE` when a call with this key is open.
///
/// # Safety
/// `host` must be a live handle; `run`, `call` and `tool` NUL-terminated;
/// `args` valid for `args_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn limen_tool_host_call(
    host: *mut limen_tool_host,
    now: u64,
    run: *const c_char,
    call: *const c_char,
    tool: *const c_char,
    args: *const u8,
    args_len: usize,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(host) }?;
        // SAFETY: as above.
        let run = unsafe { c_text(run, "the run id") }?;
        // SAFETY: as above.
        let call = unsafe { c_text(call, "the call id") }?;
        // SAFETY: as above.
        let tool = unsafe { c_text(tool, "the Tool") }?;
        // SAFETY: as above.
        let args = unsafe { bytes(args, args_len) }?;
        let identity = Identity::parse(tool).map_err(|e| {
            Failure::new(
                limen_result::LIMEN_RESULT_INVALID_ARGUMENT,
                format!("`{tool}` is not a Tool's identity: {e}"),
            )
        })?;
        let declared = h.listing.get(&identity).cloned().ok_or_else(|| {
            Failure::new(
                limen_result::LIMEN_RESULT_NOT_FOUND,
                format!("the listing declares no {identity}"),
            )
        })?;
        let binds: Vec<(String, Type)> = declared
            .declaration
            .generic
            .iter()
            .map(|g| (g.clone(), Type::Json))
            .collect();
        let type_args = binds.iter().map(|(_, t)| t.clone()).collect();
        let values = decode_args(&declared, args, &binds, &h.limits.decode).map_err(|e| {
            Failure::new(
                limen_result::LIMEN_RESULT_REFUSED,
                format!("the args do not decode: {e}"),
            )
        })?;
        let c = limen_core::flow::tool::Call {
            key: key(run, call),
            tool: declared,
            args: values,
            type_args,
        };
        h.conn
            .send_call(now, c)
            .map_err(|e| Failure::new(limen_result::LIMEN_RESULT_INVALID_STATE, e.to_string()))
    })
}

/// Asks the implementation to stop work on the call `run`/`call` at `now`
/// (it stays open until its reply; a call not yet written closes NotRun).
///
/// # Safety
/// `host` must be a live handle; `run` and `call` NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn limen_tool_host_cancel(
    host: *mut limen_tool_host,
    now: u64,
    run: *const c_char,
    call: *const c_char,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(host) }?;
        // SAFETY: as above.
        let k = key(unsafe { c_text(run, "the run id") }?, unsafe {
            // SAFETY: as above.
            c_text(call, "the call id")
        }?);
        h.conn.cancel(now, &k);
        Ok(())
    })
}

/// Closes the call `run`/`call` without an outcome at `now` (a reply that
/// comes later is dropped).
///
/// # Safety
/// `host` must be a live handle; `run` and `call` NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn limen_tool_host_abandon(
    host: *mut limen_tool_host,
    now: u64,
    run: *const c_char,
    call: *const c_char,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(host) }?;
        // SAFETY: as above.
        let k = key(unsafe { c_text(run, "the run id") }?, unsafe {
            // SAFETY: as above.
            c_text(call, "the call id")
        }?);
        h.conn.abandon(now, &k);
        Ok(())
    })
}

/// The process a START event asked for has started at `now`.
///
/// # Safety
/// `host` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_tool_host_started(
    host: *mut limen_tool_host,
    now: u64,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promise, passed through.
        let h = unsafe { handle(host) }?;
        h.conn.handle_started(now);
        Ok(())
    })
}

/// The process a START event asked for could not be started, for
/// `reason` (NUL-terminated).
///
/// # Safety
/// `host` must be a live handle; `reason` NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn limen_tool_host_start_failed(
    host: *mut limen_tool_host,
    now: u64,
    reason: *const c_char,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(host) }?;
        // SAFETY: as above.
        let reason = unsafe { c_text(reason, "the reason") }?;
        h.conn.handle_start_failed(now, reason);
        Ok(())
    })
}

/// `data` (`data_len` bytes, copied) was read from the process's standard
/// output at `now`, in any split.
///
/// # Safety
/// `host` must be a live handle; `data` valid for `data_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn limen_tool_host_handle_data(
    host: *mut limen_tool_host,
    now: u64,
    data: *const u8,
    data_len: usize,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(host) }?;
        // SAFETY: as above.
        let data = unsafe { bytes(data, data_len) }?;
        h.conn.handle_data(now, data);
        Ok(())
    })
}

/// The process's standard output ended at `now`: the process is over
/// (reap it). Every call out closes.
///
/// # Safety
/// `host` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_tool_host_handle_eof(
    host: *mut limen_tool_host,
    now: u64,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promise, passed through.
        let h = unsafe { handle(host) }?;
        h.conn.handle_eof(now);
        Ok(())
    })
}

/// `now` is at or past [`limen_tool_host_poll_timeout`]'s deadline.
///
/// # Safety
/// `host` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_tool_host_handle_timeout(
    host: *mut limen_tool_host,
    now: u64,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promise, passed through.
        let h = unsafe { handle(host) }?;
        h.conn.handle_timeout(now);
        Ok(())
    })
}

/// Whether the host has a deadline (the describe's, or the earliest open call's
/// reply deadline, `Limits::call_timeout`); if so it is written to
/// `*deadline`. `false` for a `NULL` handle.
///
/// # Safety
/// `host` must be `NULL` or a live handle; `deadline` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_tool_host_poll_timeout(
    host: *const limen_tool_host,
    deadline: *mut u64,
) -> bool {
    guard_value(false, || {
        // SAFETY: the caller's promise, passed through.
        let Some(h) = (unsafe { host.as_ref() }) else {
            return false;
        };
        match h.conn.poll_timeout() {
            // SAFETY: as above.
            Some(t) => unsafe { put(deadline, t) }.is_ok(),
            None => false,
        }
    })
}

/// How many calls are open (sent or waiting to be); 0 for a `NULL` handle.
///
/// # Safety
/// `host` must be `NULL` or a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_tool_host_open_calls(host: *const limen_tool_host) -> usize {
    // SAFETY: the caller's promise, passed through.
    guard_value(0, || {
        unsafe { host.as_ref() }.map_or(0, |h| h.conn.open_calls())
    })
}

/// Lends the bytes still to write to the process's standard input into
/// `*out`, valid until the next call on the host; report what was written
/// with [`limen_tool_host_consume_output`].
///
/// # Safety
/// `host` must be a live handle; `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_tool_host_pending_output(
    host: *mut limen_tool_host,
    out: *mut limen_str,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(host) }?;
        let s = limen_str::lend(h.conn.pending_output());
        // SAFETY: as above.
        unsafe { put(out, s) }
    })
}

/// Copies every byte still to write into `buf`, its count to `*written`,
/// consuming nothing; `LIMEN_RESULT_BUFFER_TOO_SMALL` writes the length
/// needed and copies nothing.
///
/// # Safety
/// `host` must be a live handle; `buf` valid for `buf_cap` bytes; `written`
/// for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_tool_host_copy_output(
    host: *mut limen_tool_host,
    buf: *mut u8,
    buf_cap: usize,
    written: *mut usize,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(host) }?;
        // SAFETY: as above.
        unsafe { copy_out(h.conn.pending_output(), buf, buf_cap, written) }
    })
}

/// The first `n` bytes of the pending output were written to the process
/// at `now`. `LIMEN_RESULT_INVALID_ARGUMENT` (nothing consumed) when `n` is
/// more than is pending.
///
/// # Safety
/// `host` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_tool_host_consume_output(
    host: *mut limen_tool_host,
    now: u64,
    n: usize,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promise, passed through.
        let h = unsafe { handle(host) }?;
        let pending = h.conn.pending_output().len();
        crate::check_consume(n, pending)?;
        h.conn.consume_output(now, n);
        Ok(())
    })
}

/// Takes the next event into `*out` (kind `LIMEN_TOOL_EVENT_NONE` when none
/// waits). Poll until NONE after every input and command.
///
/// # Safety
/// `host` must be a live handle; `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_tool_host_poll_event(
    host: *mut limen_tool_host,
    out: *mut limen_tool_event,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(host) }?;
        let mut ev = limen_tool_event {
            kind: limen_tool_event_kind::LIMEN_TOOL_EVENT_NONE,
            ok: false,
            run: std::ptr::null(),
            call: std::ptr::null(),
            text: limen_str::EMPTY,
        };
        h.text.clear();
        match h.conn.poll_event() {
            None => {}
            Some(HostEvent::Start) => ev.kind = limen_tool_event_kind::LIMEN_TOOL_EVENT_START,
            Some(HostEvent::Stop) => ev.kind = limen_tool_event_kind::LIMEN_TOOL_EVENT_STOP,
            Some(HostEvent::Described(d)) => {
                ev.kind = limen_tool_event_kind::LIMEN_TOOL_EVENT_DESCRIBED;
                match d {
                    Ok(d) => {
                        ev.ok = true;
                        h.text = d.result.to_string().into_bytes();
                    }
                    Err(why) => h.text = why.into_bytes(),
                }
            }
            Some(HostEvent::Closed { key, outcome }) => {
                ev.kind = limen_tool_event_kind::LIMEN_TOOL_EVENT_CLOSED;
                ev.ok = matches!(outcome, Outcome::Ok(_));
                h.run = crate::c_string(key.run.as_str());
                h.call = crate::c_string(key.call.as_str());
                ev.run = h.run.as_ptr();
                ev.call = h.call.as_ptr();
                h.text = outcome.to_json().into_bytes();
            }
            Some(HostEvent::Dropped(why)) => {
                ev.kind = limen_tool_event_kind::LIMEN_TOOL_EVENT_DROPPED;
                h.text = why.into_bytes();
            }
        }
        ev.text = limen_str::lend(&h.text);
        // SAFETY: as above.
        unsafe { put(out, ev) }
    })
}

/// The implementation's side of one Tool protocol connection: a program
/// that implements Tools reads the host's lines on its standard input and
/// answers on its standard output. Made by [`limen_toolkit_new`], released
/// by [`limen_toolkit_free`].
pub struct limen_toolkit {
    conn: ToolkitConn,
    /// Each Tool's identity, in the listing's order.
    names: Vec<CString>,
    /// The Tool of each open call, by its key.
    open: Vec<(CallKey, usize)>,
    text: Vec<u8>,
    run: CString,
    call: CString,
}

/// What a toolkit event asks ([`limen_toolkit_event`]'s `kind`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum limen_toolkit_event_kind {
    /// No event is waiting.
    LIMEN_TOOLKIT_EVENT_NONE = 0,
    /// A call to run: `tool` (its index in the listing) and `tool_name`,
    /// `run` and `call` (its key), `text` its args object as canonical JSON
    /// text, one member per parameter. Answer it with
    /// [`limen_toolkit_reply`].
    LIMEN_TOOLKIT_EVENT_CALL = 1,
    /// The host asks to stop work on the call `run`/`call` (it proves
    /// nothing; the call still needs its reply).
    LIMEN_TOOLKIT_EVENT_CANCEL = 2,
    /// Something that changes nothing; `text` says what.
    LIMEN_TOOLKIT_EVENT_DROPPED = 3,
}

/// One toolkit event. Its pointers stay valid until the next call on the
/// toolkit.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct limen_toolkit_event {
    /// What the event asks.
    pub kind: limen_toolkit_event_kind,
    /// CALL: the Tool's index in the listing.
    pub tool: usize,
    /// CALL: the Tool's identity, NUL-terminated (valid until the toolkit
    /// is freed).
    pub tool_name: *const c_char,
    /// CALL, CANCEL: the run id, NUL-terminated.
    pub run: *const c_char,
    /// CALL, CANCEL: the history id, NUL-terminated.
    pub call: *const c_char,
    /// CALL: the args object; DROPPED: what was dropped.
    pub text: limen_str,
}

/// How a Tool's call ended ([`limen_toolkit_reply`]'s `how`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum limen_reply {
    /// The declared success value: `body` is JSON at the Tool's ok type.
    LIMEN_REPLY_OK = 0,
    /// The declared error value: `body` is JSON at the Tool's error type.
    LIMEN_REPLY_FAILED = 1,
    /// The call definitely did not happen: `body` is the reason (text).
    LIMEN_REPLY_NOT_RUN = 2,
    /// The call may or may not have happened: `body` is the reason (text).
    LIMEN_REPLY_UNKNOWN = 3,
}

/// Serves the Tools of the listing `listing` (`listing_len` bytes of JSON),
/// answering describe with their fingerprints, and writes a new handle to
/// `*out`. `LIMEN_RESULT_UNREADABLE` when the listing is not one limen
/// reads.
///
/// # Safety
/// `listing` must be valid for `listing_len` bytes; `out` for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_toolkit_new(
    listing: *const u8,
    listing_len: usize,
    out: *mut *mut limen_toolkit,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let text = unsafe { bytes(listing, listing_len) }?;
        let listing = Listing::parse(text).map_err(|e| {
            Failure::new(
                limen_result::LIMEN_RESULT_UNREADABLE,
                format!("the listing is not one limen reads: {e}"),
            )
        })?;
        let names = listing
            .tools
            .iter()
            .map(|t| crate::c_string(&t.identity().to_string()))
            .collect();
        let h = Box::new(limen_toolkit {
            names,
            conn: ToolkitConn::new(listing.tools, ToolkitLimits::default()),
            open: Vec::new(),
            text: Vec::new(),
            run: CString::default(),
            call: CString::default(),
        });
        // SAFETY: as above.
        unsafe { put(out, Box::into_raw(h)) }
    })
}

/// Releases a toolkit; `NULL` is ignored.
///
/// # Safety
/// `toolkit` must be `NULL` or a handle from [`limen_toolkit_new`] not
/// freed before.
#[no_mangle]
pub unsafe extern "C" fn limen_toolkit_free(toolkit: *mut limen_toolkit) {
    // SAFETY: the caller's promise, passed through.
    guard_value((), || unsafe { free(toolkit) })
}

/// `data` (`data_len` bytes, copied) was read from standard input at `now`.
///
/// # Safety
/// `toolkit` must be a live handle; `data` valid for `data_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn limen_toolkit_handle_data(
    toolkit: *mut limen_toolkit,
    now: u64,
    data: *const u8,
    data_len: usize,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(toolkit) }?;
        // SAFETY: as above.
        let data = unsafe { bytes(data, data_len) }?;
        h.conn.handle_data(now, data);
        Ok(())
    })
}

/// Standard input ended at `now`: finish the open calls, write what is
/// pending, then exit.
///
/// # Safety
/// `toolkit` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_toolkit_handle_eof(
    toolkit: *mut limen_toolkit,
    now: u64,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promise, passed through.
        let h = unsafe { handle(toolkit) }?;
        h.conn.handle_eof(now);
        Ok(())
    })
}

/// Whether standard input has ended; `true` for a `NULL` handle.
///
/// # Safety
/// `toolkit` must be `NULL` or a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_toolkit_input_ended(toolkit: *const limen_toolkit) -> bool {
    // SAFETY: the caller's promise, passed through.
    guard_value(true, || {
        unsafe { toolkit.as_ref() }.is_none_or(|h| h.conn.input_ended())
    })
}

/// How many calls are yielded and not answered; 0 for a `NULL` handle.
///
/// # Safety
/// `toolkit` must be `NULL` or a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_toolkit_open_calls(toolkit: *const limen_toolkit) -> usize {
    // SAFETY: the caller's promise, passed through.
    guard_value(0, || {
        unsafe { toolkit.as_ref() }.map_or(0, |h| h.conn.open_calls())
    })
}

/// Takes the next event into `*out` (kind `LIMEN_TOOLKIT_EVENT_NONE` when
/// none waits). Poll until NONE after every input.
///
/// # Safety
/// `toolkit` must be a live handle; `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_toolkit_poll_event(
    toolkit: *mut limen_toolkit,
    out: *mut limen_toolkit_event,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(toolkit) }?;
        let mut ev = limen_toolkit_event {
            kind: limen_toolkit_event_kind::LIMEN_TOOLKIT_EVENT_NONE,
            tool: 0,
            tool_name: std::ptr::null(),
            run: std::ptr::null(),
            call: std::ptr::null(),
            text: limen_str::EMPTY,
        };
        h.text.clear();
        match h.conn.poll_event() {
            None => {}
            Some(ToolkitEvent::Call(incoming)) => {
                ev.kind = limen_toolkit_event_kind::LIMEN_TOOLKIT_EVENT_CALL;
                ev.tool = incoming.tool;
                ev.tool_name = h
                    .names
                    .get(incoming.tool)
                    .map_or(std::ptr::null(), |n| n.as_ptr());
                let tool = &h.conn.tools()[incoming.tool];
                h.text.push(b'{');
                for (i, (p, v)) in tool
                    .declaration
                    .params
                    .iter()
                    .zip(&incoming.args)
                    .enumerate()
                {
                    if i > 0 {
                        h.text.push(b',');
                    }
                    limen_core::json::write_string(&p.name, &mut h.text);
                    h.text.push(b':');
                    write_canonical(v, &mut h.text);
                }
                h.text.push(b'}');
                h.run = crate::c_string(incoming.key.run.as_str());
                h.call = crate::c_string(incoming.key.call.as_str());
                h.open.push((incoming.key, incoming.tool));
                ev.run = h.run.as_ptr();
                ev.call = h.call.as_ptr();
            }
            Some(ToolkitEvent::Cancel(key)) => {
                ev.kind = limen_toolkit_event_kind::LIMEN_TOOLKIT_EVENT_CANCEL;
                h.run = crate::c_string(key.run.as_str());
                h.call = crate::c_string(key.call.as_str());
                ev.run = h.run.as_ptr();
                ev.call = h.call.as_ptr();
            }
            Some(ToolkitEvent::Dropped(why)) => {
                ev.kind = limen_toolkit_event_kind::LIMEN_TOOLKIT_EVENT_DROPPED;
                h.text = why.into_bytes();
            }
        }
        ev.text = limen_str::lend(&h.text);
        // SAFETY: as above.
        unsafe { put(out, ev) }
    })
}

/// Answers the open call `run`/`call` (NUL-terminated) at `now`: `how` is a
/// [`limen_reply`] number, `body` (`body_len` bytes) the value as JSON (OK,
/// FAILED; decoded strictly at the Tool's declared type, a generic Tool's
/// type parameters standing for `json.Value`) or the reason (NOT_RUN,
/// UNKNOWN). `LIMEN_RESULT_NOT_FOUND` when no such call is open,
/// `LIMEN_RESULT_REFUSED` (the call still open) when the value does not
/// decode at its type.
///
/// # Safety
/// `toolkit` must be a live handle; `run` and `call` NUL-terminated; `body`
/// valid for `body_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn limen_toolkit_reply(
    toolkit: *mut limen_toolkit,
    now: u64,
    run: *const c_char,
    call: *const c_char,
    how: u32,
    body: *const u8,
    body_len: usize,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(toolkit) }?;
        // SAFETY: as above.
        let k = key(unsafe { c_text(run, "the run id") }?, unsafe {
            // SAFETY: as above.
            c_text(call, "the call id")
        }?);
        // SAFETY: as above.
        let body = unsafe { bytes(body, body_len) }?;
        let at = h
            .open
            .iter()
            .position(|(open, _)| *open == k)
            .ok_or_else(|| {
                Failure::new(
                    limen_result::LIMEN_RESULT_NOT_FOUND,
                    format!("no call is open with {k}"),
                )
            })?;
        let tool = h.conn.tools()[h.open[at].1].clone();
        let decl = &tool.declaration;
        let binds: Vec<(String, Type)> = decl
            .generic
            .iter()
            .map(|g| (g.clone(), Type::Json))
            .collect();
        let value = |ty: &Type| {
            decode_with_params(body, ty, &tool.env, &binds, &FlowLimits::default()).map_err(|e| {
                Failure::new(
                    limen_result::LIMEN_RESULT_REFUSED,
                    format!("the value does not decode at its type: {e}"),
                )
            })
        };
        let reason = || String::from_utf8_lossy(body).into_owned();
        let reply = match how {
            0 => Reply::Ok(value(&decl.ok)?),
            1 => Reply::Failed(value(&decl.err)?),
            2 => Reply::NotRun(reason()),
            3 => Reply::Unknown(reason()),
            other => {
                return Err(Failure::new(
                    limen_result::LIMEN_RESULT_INVALID_ARGUMENT,
                    format!("{other} names no reply"),
                ))
            }
        };
        h.open.swap_remove(at);
        h.conn.reply(now, &k, &reply);
        Ok(())
    })
}

/// Lends the bytes still to write to standard output into `*out`, valid
/// until the next call on the toolkit; report what was written with
/// [`limen_toolkit_consume_output`].
///
/// # Safety
/// `toolkit` must be a live handle; `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_toolkit_pending_output(
    toolkit: *mut limen_toolkit,
    out: *mut limen_str,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(toolkit) }?;
        let s = limen_str::lend(h.conn.pending_output());
        // SAFETY: as above.
        unsafe { put(out, s) }
    })
}

/// The first `n` bytes of the pending output were written at `now`.
/// `LIMEN_RESULT_INVALID_ARGUMENT` (nothing consumed) when `n` is more than
/// is pending.
///
/// # Safety
/// `toolkit` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_toolkit_consume_output(
    toolkit: *mut limen_toolkit,
    now: u64,
    n: usize,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promise, passed through.
        let h = unsafe { handle(toolkit) }?;
        let pending = h.conn.pending_output().len();
        crate::check_consume(n, pending)?;
        h.conn.consume_output(now, n);
        Ok(())
    })
}
