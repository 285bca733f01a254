//! The C ABI (`ffi/`) driven as a C program drives it: an arbitrary
//! sequence of calls on one exposure handle, its HTTP and Unix fronts, the
//! same serve site over gRPC with one gRPC front, the witness's WebSocket
//! hub with up to four connections, one WebSocket codec connection, and a
//! Flow schema handle, with arbitrary bytes, buffer sizes, lengths to
//! consume, completions and clocks.
//!
//! Checks: no call panics (`LIMEN_RESULT_PANIC` is a finding); a buffer
//! too small is `LIMEN_RESULT_BUFFER_TOO_SMALL` with the length needed
//! written out and not one byte of the buffer touched; an output that fits
//! is written within the buffer and nowhere past it; consuming more than is
//! pending is refused and consumes nothing; every pointer an event lends is
//! readable for its length; a hub refuses an id still open and takes it
//! again after its CLOSE; a message echoed from the event that lent it is
//! read before it is released; and, under AddressSanitizer, no call leaks
//! (every handle is freed at the end of the input).
#![no_main]

use std::ffi::CStr;
use std::ptr;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use limen_ffi::exposure::*;
use limen_ffi::flow::*;
use limen_ffi::front::*;
use limen_ffi::hub::*;
use limen_ffi::ws::*;
use limen_ffi::{limen_result, limen_str};

const DESK: &str = include_str!("../../conformance/programs/desk.hl");
const ANY: &str = r#"{"$schema":"https://json-schema.org/draft/2020-12/schema"}"#;

/// Well-formed requests: HTTP (the first four) and Unix lines.
const TEMPLATES: [&str; 8] = [
    "POST /call/Orders::place HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t-alice\r\nContent-Length: 40\r\n\r\n{\"symbol\":\"ACME\",\"qty\":10,\"limit\":12500}",
    "POST /call/Orders::cancel HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t-alice\r\nContent-Length: 12\r\n\r\n{\"order\":41}",
    "GET /describe HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t-alice\r\n\r\n",
    "POST /call/Orders::place HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t-bob\r\nContent-Length: 2\r\n\r\n{}",
    "{\"id\":1,\"member\":\"Orders::cancel\",\"payload\":{\"order\":41}}\n",
    "{\"id\":2,\"describe\":true}\n",
    "{\"id\":3,\"member\":\"Ledger::rebalance\",\"payload\":{\"book\":\"b\"}}\n",
    "not a line\n",
];

#[derive(Arbitrary, Debug)]
enum Op {
    /// Bytes from the peer of front 0 (HTTP) or 1 (Unix).
    Data(bool, Vec<u8>),
    /// One of the well-formed requests of `TEMPLATES` for front 0 or 1, so
    /// dispatch and delivery are reached at once.
    Template(bool, u8),
    Eof(bool),
    Timeout(bool),
    /// Poll front 0 or 1, submitting a request it framed.
    PollFront(bool),
    /// Poll the exposure, answering what it asks with `Reply`.
    PollExposure(Reply),
    /// Copy a front's output into a buffer of this size.
    CopyOutput(bool, u16),
    /// Consume this many bytes of a front's output.
    Consume(bool, u16),
    /// Peek a front's output and consume it all.
    Flush(bool),
    Deliver(bool),
    Abort(bool),
    Lost(u8),
    Stop,
    Teardown,
    ExposureTimeout,
    Born(u8, u8),
    Absent(u8),
    Complete(u8, u8, Vec<u8>),
    /// The canonical text of these bytes into a buffer of this size.
    Canonical(Vec<u8>, u16),
    Refusal,
    /// Time passes, in milliseconds.
    Tick(u16),
    Grpc(GrpcOp),
    Hub(HubOp),
    Ws(WsOp),
}

/// What the gRPC front is fed and asked; its exposure is `public` served
/// over gRPC, its connection correlation 3.
#[derive(Arbitrary, Debug)]
enum GrpcOp {
    /// Bytes from the peer.
    Data(Vec<u8>),
    /// The client's connection preface and an empty SETTINGS.
    Preface,
    /// A whole call of `GRPC_CALLS` on the stream `2 * n + 1`, its body cut
    /// after this many bytes when `Some`.
    Call(u8, u8, Option<u16>),
    Eof,
    Timeout,
    /// Poll the front, submitting a request it framed.
    Poll,
    /// Poll the gRPC exposure, answering what it asks.
    PollExposure(Reply),
    CopyOutput(u16),
    Consume(u16),
    Flush,
    Deliver,
    Stop,
    Abort,
    Lost,
}

/// Calls as (path, content type, message): `+json` and `+proto` (a
/// protobuf PlaceOrder: symbol "ACME", qty 10, limit 12500).
const GRPC_CALLS: [(&str, &str, &[u8]); 4] = [
    (
        "/Public/Orders__place",
        "application/grpc+json",
        b"{\"symbol\":\"ACME\",\"qty\":10,\"limit\":12500}",
    ),
    (
        "/Public/Orders__cancel",
        "application/grpc+json",
        b"{\"order\":41}",
    ),
    (
        "/Public/Orders__place",
        "application/grpc",
        b"\x0a\x04ACME\x10\x0a\x18\xd4\x61",
    ),
    ("/Public/Nothing", "application/grpc+json", b"{}"),
];

/// An HTTP/2 frame (RFC 9113 § 4.1).
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len()).unwrap_or(0).to_be_bytes();
    let mut f = vec![len[1], len[2], len[3], kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// A call's HEADERS (HPACK literals without indexing, RFC 7541 § 6.2.2)
/// and DATA (the gRPC length prefix and the message), cut after `cut`
/// bytes of the DATA payload when given (no END_STREAM then).
fn grpc_call(stream: u32, call: usize, cut: Option<u16>) -> Vec<u8> {
    let (path, content_type, message) = GRPC_CALLS[call % GRPC_CALLS.len()];
    let mut block = Vec::new();
    for (n, v) in [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", path),
        (":authority", "x"),
        ("content-type", content_type),
        ("te", "trailers"),
        ("authorization", "Bearer t-alice"),
    ] {
        block.push(0);
        block.push(n.len() as u8);
        block.extend_from_slice(n.as_bytes());
        block.push(v.len() as u8);
        block.extend_from_slice(v.as_bytes());
    }
    let mut body = vec![0];
    body.extend_from_slice(&(message.len() as u32).to_be_bytes());
    body.extend_from_slice(message);
    let mut out = frame(0x1, 0x4, stream, &block);
    match cut {
        Some(n) => {
            body.truncate(usize::from(n));
            out.extend(frame(0x0, 0, stream, &body));
        }
        None => out.extend(frame(0x0, 0x1, stream, &body)),
    }
    out
}

/// What the hub (`fills`) is fed and asked, on connection `id % 4`.
#[derive(Arbitrary, Debug)]
enum HubOp {
    Accept(u8),
    Data(u8, Vec<u8>),
    /// An upgrade as dave (an operator), bob, or nobody.
    Upgrade(u8, u8),
    /// A subscribe to Fills (or to no such topic), masked.
    Subscribe(u8, bool),
    Eof(u8),
    Timeout,
    /// Poll one event; on OUTPUT, write all of it when `true`.
    Poll(bool),
    CopyOutput(u8, u16),
    Consume(u8, u16),
    /// A Fill, or these bytes, on Fills.
    Publish(Option<Vec<u8>>),
    Announce(u64),
    Stop,
}

/// What the WebSocket codec connection is fed and asked.
#[derive(Arbitrary, Debug)]
enum WsOp {
    Data(Vec<u8>),
    /// A masked client frame: opcode, FIN, payload.
    Frame(u8, bool, Vec<u8>),
    Eof,
    /// Poll one event; echo a message from the event's own bytes when
    /// `true`.
    Poll(bool),
    SendText(Vec<u8>),
    SendBinary(Vec<u8>),
    Close(u16, Vec<u8>),
    CopyOutput(u16),
    Consume(u16),
}

/// A client frame (RFC 6455 § 5.2), masked, with the 7- or 16-bit length.
fn ws_frame(opcode: u8, fin: bool, payload: &[u8]) -> Vec<u8> {
    let key = [0x5a, 0x01, 0xc3, 0x7e];
    let mut f = vec![(u8::from(fin) << 7) | (opcode & 0x0f)];
    match u16::try_from(payload.len()) {
        Ok(n) if n < 126 => f.push(0x80 | n as u8),
        Ok(n) => {
            f.push(0x80 | 126);
            f.extend_from_slice(&n.to_be_bytes());
        }
        Err(_) => return f,
    }
    f.extend_from_slice(&key);
    f.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
    f
}

#[derive(Arbitrary, Debug)]
struct Reply {
    how: u8,
    body: Vec<u8>,
    deliver: bool,
}

#[derive(Arbitrary, Debug)]
struct Input {
    ops: Vec<Op>,
}

fn ok(r: limen_result) {
    assert_ne!(
        r,
        limen_result::LIMEN_RESULT_PANIC,
        "a panic crossed the ABI"
    );
}

fn lent(s: limen_str) -> Vec<u8> {
    if s.len == 0 {
        return Vec::new();
    }
    assert!(!s.ptr.is_null());
    // SAFETY: the library lends `len` readable bytes at `ptr`.
    unsafe { std::slice::from_raw_parts(s.ptr, s.len) }.to_vec()
}

fn text(p: *const std::ffi::c_char) {
    if !p.is_null() {
        // SAFETY: the library lends NUL-terminated strings.
        let _ = unsafe { CStr::from_ptr(p) }.to_bytes().len();
    }
}

/// Calls `f` with a buffer of `cap` bytes inside a larger one filled with a
/// canary, and checks the buffer convention.
fn buffered(cap: usize, f: impl FnOnce(*mut u8, usize, *mut usize) -> limen_result) {
    const PAD: usize = 16;
    let mut buf = vec![0xA5u8; cap + 2 * PAD];
    let mut written = usize::MAX;
    let r = f(buf[PAD..].as_mut_ptr(), cap, &mut written);
    ok(r);
    assert!(
        buf[..PAD].iter().all(|&b| b == 0xA5),
        "written before the buffer"
    );
    assert!(
        buf[PAD + cap..].iter().all(|&b| b == 0xA5),
        "written past the buffer"
    );
    if r == limen_result::LIMEN_RESULT_BUFFER_TOO_SMALL {
        assert!(written > cap, "too small, yet {written} fits in {cap}");
        assert!(
            buf.iter().all(|&b| b == 0xA5),
            "a buffer too small was written"
        );
    } else if r == limen_result::LIMEN_RESULT_OK {
        assert!(written <= cap);
    }
}

fuzz_target!(|input: Input| {
    let mut ids = ptr::null_mut();
    // SAFETY: every pointer below is a live handle of the library, a valid
    // slice, or an output valid for its write; handles are freed once.
    unsafe {
        ok(limen_identity_new(&mut ids));
        ok(limen_identity_add_token(
            ids,
            c"t-alice".as_ptr(),
            c"alice".as_ptr(),
            0,
        ));
        ok(limen_identity_add_grant(
            ids,
            c"alice".as_ptr(),
            c"trader".as_ptr(),
        ));
        ok(limen_identity_add_grant(
            ids,
            c"uid:1000".as_ptr(),
            c"operator".as_ptr(),
        ));
        let mut exposure = ptr::null_mut();
        ok(limen_exposure_new(
            DESK.as_ptr(),
            DESK.len(),
            c"public".as_ptr(),
            ids,
            ptr::null(),
            &mut exposure,
        ));
        assert!(!exposure.is_null());
        let mut grpc_exposure = ptr::null_mut();
        ok(limen_exposure_new_over(
            DESK.as_ptr(),
            DESK.len(),
            c"public".as_ptr(),
            limen_transport::LIMEN_TRANSPORT_GRPC as u32,
            ids,
            ptr::null(),
            &mut grpc_exposure,
        ));
        assert!(!grpc_exposure.is_null());
        let mut grpc = ptr::null_mut();
        ok(limen_identity_add_token(
            ids,
            c"t-dave".as_ptr(),
            c"dave".as_ptr(),
            0,
        ));
        ok(limen_identity_add_grant(
            ids,
            c"dave".as_ptr(),
            c"operator".as_ptr(),
        ));
        let mut hub = ptr::null_mut();
        ok(limen_hub_new(
            DESK.as_ptr(),
            DESK.len(),
            c"fills".as_ptr(),
            ids,
            ptr::null(),
            &mut hub,
        ));
        assert!(!hub.is_null());
        let mut open = std::collections::BTreeSet::new();
        let mut ws = ptr::null_mut();
        let limits = limen_ws_limits {
            binary: true,
            ..limen_ws_limits_default()
        };
        ok(limen_ws_conn_new(limits, &mut ws));
        limen_identity_free(ids);
        ok(limen_front_new_grpc(0, grpc_exposure, 3, &mut grpc));
        assert!(!grpc.is_null());
        let mut fronts = [ptr::null_mut(), ptr::null_mut()];
        ok(limen_front_new_http(0, 1, &mut fronts[0]));
        ok(limen_front_new_unix(0, 1000, 1000, 42, 2, &mut fronts[1]));
        let mut schema = ptr::null_mut();
        ok(limen_flow_schema_new(ANY.as_ptr(), ANY.len(), &mut schema));
        let mut now: u64 = 0;
        let f = |b: bool| usize::from(b);
        for op in input.ops.iter().take(256) {
            match op {
                Op::Data(b, bytes) => ok(limen_front_handle_data(
                    fronts[f(*b)],
                    now,
                    bytes.as_ptr(),
                    bytes.len(),
                )),
                Op::Template(b, t) => {
                    let t = TEMPLATES[usize::from(*t) % TEMPLATES.len()];
                    ok(limen_front_handle_data(
                        fronts[f(*b)],
                        now,
                        t.as_ptr(),
                        t.len(),
                    ))
                }
                Op::Eof(b) => ok(limen_front_handle_eof(fronts[f(*b)], now)),
                Op::Timeout(b) => ok(limen_front_handle_timeout(fronts[f(*b)], now)),
                Op::PollFront(b) => {
                    let mut k = limen_front_event::LIMEN_FRONT_EVENT_NONE;
                    ok(limen_front_poll_event(fronts[f(*b)], &mut k));
                    if k == limen_front_event::LIMEN_FRONT_EVENT_REQUEST {
                        let mut id = 0;
                        let r = limen_front_submit(fronts[f(*b)], exposure, now, now, &mut id);
                        assert_eq!(r, limen_result::LIMEN_RESULT_OK);
                    } else {
                        let r =
                            limen_front_submit(fronts[f(*b)], exposure, now, now, ptr::null_mut());
                        assert_eq!(r, limen_result::LIMEN_RESULT_INVALID_STATE);
                    }
                }
                Op::PollExposure(reply) => {
                    let mut ev = std::mem::MaybeUninit::<limen_exposure_event>::uninit();
                    ok(limen_exposure_poll_event(exposure, ev.as_mut_ptr()));
                    let ev = ev.assume_init();
                    text(ev.receiver_name);
                    text(ev.member_name);
                    text(ev.caller_mode);
                    text(ev.caller_name);
                    let _ = lent(ev.payload);
                    match ev.kind {
                        limen_exposure_event_kind::LIMEN_EXPOSURE_EVENT_DISPATCH => {
                            ok(limen_exposure_complete(
                                exposure,
                                ev.request_id,
                                u32::from(reply.how % 5),
                                reply.body.as_ptr(),
                                reply.body.len(),
                            ))
                        }
                        limen_exposure_event_kind::LIMEN_EXPOSURE_EVENT_ASK => {
                            ok(limen_exposure_receiver_born(exposure, ev.receiver, 1))
                        }
                        limen_exposure_event_kind::LIMEN_EXPOSURE_EVENT_DELIVER
                            if reply.deliver =>
                        {
                            let which = if ev.correlation == 1 { 0 } else { 1 };
                            ok(limen_front_deliver(fronts[which], exposure, now));
                        }
                        _ => {}
                    }
                }
                Op::CopyOutput(b, cap) => buffered(usize::from(*cap), |buf, cap, w| {
                    limen_front_copy_output(fronts[f(*b)], buf, cap, w)
                }),
                Op::Consume(b, n) => {
                    let mut out = limen_str::EMPTY;
                    ok(limen_front_pending_output(fronts[f(*b)], &mut out));
                    let before = out.len;
                    let r = limen_front_consume_output(fronts[f(*b)], now, usize::from(*n));
                    ok(r);
                    if usize::from(*n) > before {
                        assert_eq!(r, limen_result::LIMEN_RESULT_INVALID_ARGUMENT);
                        ok(limen_front_pending_output(fronts[f(*b)], &mut out));
                        assert_eq!(out.len, before, "a refused consume consumed");
                    }
                }
                Op::Flush(b) => {
                    let mut out = limen_str::EMPTY;
                    ok(limen_front_pending_output(fronts[f(*b)], &mut out));
                    let n = lent(out).len();
                    ok(limen_front_consume_output(fronts[f(*b)], now, n));
                }
                Op::Deliver(b) => ok(limen_front_deliver(fronts[f(*b)], exposure, now)),
                Op::Abort(b) => ok(limen_front_abort(fronts[f(*b)])),
                Op::Lost(c) => ok(limen_exposure_connection_lost(exposure, u64::from(*c % 3))),
                Op::Stop => ok(limen_exposure_stop(exposure, now)),
                Op::Teardown => ok(limen_exposure_teardown(exposure, now)),
                Op::ExposureTimeout => ok(limen_exposure_handle_timeout(exposure, now)),
                Op::Born(r, s) => ok(limen_exposure_receiver_born(
                    exposure,
                    usize::from(*r % 3),
                    u64::from(*s),
                )),
                Op::Absent(r) => ok(limen_exposure_receiver_absent(
                    exposure,
                    usize::from(*r % 3),
                )),
                Op::Complete(id, how, body) => ok(limen_exposure_complete(
                    exposure,
                    u64::from(*id),
                    u32::from(*how % 5),
                    body.as_ptr(),
                    body.len(),
                )),
                Op::Canonical(bytes, cap) => buffered(usize::from(*cap), |buf, cap, w| {
                    limen_flow_canonical(schema, bytes.as_ptr(), bytes.len(), buf, cap, w)
                }),
                Op::Refusal => {
                    let mut r = limen_flow_refusal {
                        pointer: ptr::null(),
                        reason: ptr::null(),
                    };
                    ok(limen_flow_schema_refusal(schema, &mut r));
                    text(r.pointer);
                    text(r.reason);
                }
                Op::Tick(ms) => now += u64::from(*ms) * 1_000_000,
                Op::Grpc(op) => grpc_op(op, grpc, grpc_exposure, now),
                Op::Hub(op) => hub_op(op, hub, &mut open, now),
                Op::Ws(op) => ws_op(op, ws, now),
            }
            let mut d = 0;
            let _ = limen_exposure_poll_timeout(exposure, &mut d);
            let _ = limen_front_poll_timeout(fronts[0], &mut d);
            let _ = limen_front_wants_read(fronts[1]);
            let _ = limen_front_is_closed(fronts[0]);
            let _ = limen_front_poll_timeout(grpc, &mut d);
            let _ = limen_front_wants_read(grpc);
            let _ = limen_front_is_closed(grpc);
            let _ = limen_front_streams_held(grpc);
            let _ = limen_hub_poll_timeout(hub, &mut d);
            let _ = limen_hub_is_finished(hub);
            let _ = limen_hub_subscribers(hub);
            let _ = limen_ws_conn_is_closed(ws);
        }
        limen_flow_schema_free(schema);
        limen_front_free(fronts[0]);
        limen_front_free(fronts[1]);
        limen_exposure_free(exposure);
        limen_front_free(grpc);
        limen_exposure_free(grpc_exposure);
        limen_hub_free(hub);
        limen_ws_conn_free(ws);
    }
});

/// Takes one hub event: a CLOSE frees its id; an OUTPUT is written whole
/// when `write`.
///
/// # Safety
/// `hub` is a live handle.
unsafe fn hub_poll(
    hub: *mut limen_hub,
    open: &mut std::collections::BTreeSet<u64>,
    now: u64,
    write: bool,
) {
    // SAFETY: the caller's promise; outputs valid for their writes.
    unsafe {
        let mut ev = limen_hub_event {
            kind: limen_hub_event_kind::LIMEN_HUB_EVENT_NONE,
            conn: 0,
        };
        ok(limen_hub_poll_event(hub, &mut ev));
        match ev.kind {
            limen_hub_event_kind::LIMEN_HUB_EVENT_CLOSE => {
                assert!(open.remove(&ev.conn), "CLOSE for {} not open", ev.conn);
            }
            limen_hub_event_kind::LIMEN_HUB_EVENT_OUTPUT if write => {
                let mut out = limen_str::EMPTY;
                ok(limen_hub_pending_output(hub, ev.conn, &mut out));
                let n = lent(out).len();
                ok(limen_hub_consume_output(hub, now, ev.conn, n));
            }
            _ => {}
        }
    }
}

/// One call on the hub, checked: an id is refused while open, taken again
/// after its CLOSE; an input for an id not open is NOT_FOUND.
///
/// # Safety
/// `hub` is a live handle.
unsafe fn hub_op(
    op: &HubOp,
    hub: *mut limen_hub,
    open: &mut std::collections::BTreeSet<u64>,
    now: u64,
) {
    let id = |c: &u8| u64::from(*c % 4);
    let input = |r: limen_result, c: u64, open: &std::collections::BTreeSet<u64>| {
        ok(r);
        if !open.contains(&c) {
            assert_eq!(r, limen_result::LIMEN_RESULT_NOT_FOUND);
        }
    };
    // SAFETY: the caller's promise; every other pointer is a valid slice,
    // string or output.
    unsafe {
        match op {
            HubOp::Accept(c) => {
                let r = limen_hub_accept(hub, now, id(c));
                ok(r);
                if open.insert(id(c)) {
                    assert_eq!(r, limen_result::LIMEN_RESULT_OK);
                } else {
                    assert_eq!(r, limen_result::LIMEN_RESULT_INVALID_ARGUMENT);
                }
            }
            HubOp::Data(c, bytes) => input(
                limen_hub_handle_data(hub, now, now, id(c), bytes.as_ptr(), bytes.len()),
                id(c),
                open,
            ),
            HubOp::Upgrade(c, who) => {
                let auth = [
                    "Authorization: Bearer t-dave\r\n",
                    "Authorization: Bearer t-bob\r\n",
                    "",
                ][usize::from(*who % 3)];
                let req = format!(
                    "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                     Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n{auth}\r\n"
                );
                input(
                    limen_hub_handle_data(hub, now, now, id(c), req.as_ptr(), req.len()),
                    id(c),
                    open,
                )
            }
            HubOp::Subscribe(c, known) => {
                let topic = if *known { "Fills" } else { "Quotes" };
                let f = ws_frame(
                    0x1,
                    true,
                    format!("{{\"type\":\"subscribe\",\"topic\":\"{topic}\"}}").as_bytes(),
                );
                input(
                    limen_hub_handle_data(hub, now, now, id(c), f.as_ptr(), f.len()),
                    id(c),
                    open,
                )
            }
            HubOp::Eof(c) => input(limen_hub_handle_eof(hub, now, id(c)), id(c), open),
            HubOp::Timeout => ok(limen_hub_handle_timeout(hub, now)),
            HubOp::Poll(write) => hub_poll(hub, open, now, *write),
            HubOp::CopyOutput(c, cap) => buffered(usize::from(*cap), |buf, cap, w| {
                limen_hub_copy_output(hub, id(c), buf, cap, w)
            }),
            HubOp::Consume(c, n) => {
                let mut out = limen_str::EMPTY;
                ok(limen_hub_pending_output(hub, id(c), &mut out));
                let before = out.len;
                let r = limen_hub_consume_output(hub, now, id(c), usize::from(*n));
                ok(r);
                if open.contains(&id(c)) && usize::from(*n) > before {
                    assert_eq!(r, limen_result::LIMEN_RESULT_INVALID_ARGUMENT);
                    ok(limen_hub_pending_output(hub, id(c), &mut out));
                    assert_eq!(out.len, before, "a refused consume consumed");
                }
            }
            HubOp::Publish(payload) => {
                let fill = b"{\"order\":41,\"qty\":10,\"price\":12500}".to_vec();
                let p = payload.clone().unwrap_or(fill);
                let mut offered = 0;
                ok(limen_hub_publish(
                    hub,
                    now,
                    c"Fills".as_ptr(),
                    p.as_ptr(),
                    p.len(),
                    &mut offered,
                ));
            }
            HubOp::Announce(revision) => ok(limen_hub_announce(hub, now, *revision)),
            HubOp::Stop => ok(limen_hub_stop(hub, now)),
        }
    }
}

/// One call on the codec connection.
///
/// # Safety
/// `ws` is a live handle.
unsafe fn ws_op(op: &WsOp, ws: *mut limen_ws_conn, now: u64) {
    // SAFETY: the caller's promise; every other pointer is a valid slice or
    // output, or the bytes the last event lent (an echo).
    unsafe {
        match op {
            WsOp::Data(bytes) => ok(limen_ws_conn_handle_data(
                ws,
                now,
                bytes.as_ptr(),
                bytes.len(),
            )),
            WsOp::Frame(opcode, fin, payload) => {
                let f = ws_frame(*opcode, *fin, payload);
                ok(limen_ws_conn_handle_data(ws, now, f.as_ptr(), f.len()))
            }
            WsOp::Eof => ok(limen_ws_conn_handle_eof(ws, now)),
            WsOp::Poll(echo) => {
                let mut ev = std::mem::MaybeUninit::<limen_ws_event>::uninit();
                ok(limen_ws_conn_poll_event(ws, ev.as_mut_ptr()));
                let ev = ev.assume_init();
                let _ = lent(ev.data);
                let _ = lent(ev.reason);
                if *echo {
                    match ev.kind {
                        limen_ws_event_kind::LIMEN_WS_EVENT_TEXT => {
                            let r = limen_ws_conn_send_text(ws, now, ev.data.ptr, ev.data.len);
                            assert_eq!(r, limen_result::LIMEN_RESULT_OK);
                        }
                        limen_ws_event_kind::LIMEN_WS_EVENT_BINARY => {
                            ok(limen_ws_conn_send_binary(ws, now, ev.data.ptr, ev.data.len))
                        }
                        _ => {}
                    }
                }
            }
            WsOp::SendText(b) => ok(limen_ws_conn_send_text(ws, now, b.as_ptr(), b.len())),
            WsOp::SendBinary(b) => ok(limen_ws_conn_send_binary(ws, now, b.as_ptr(), b.len())),
            WsOp::Close(code, reason) => ok(limen_ws_conn_close(
                ws,
                now,
                *code,
                reason.as_ptr(),
                reason.len(),
            )),
            WsOp::CopyOutput(cap) => buffered(usize::from(*cap), |buf, cap, w| {
                limen_ws_conn_copy_output(ws, buf, cap, w)
            }),
            WsOp::Consume(n) => {
                let mut out = limen_str::EMPTY;
                ok(limen_ws_conn_pending_output(ws, &mut out));
                let before = out.len;
                let r = limen_ws_conn_consume_output(ws, now, usize::from(*n));
                ok(r);
                if usize::from(*n) > before {
                    assert_eq!(r, limen_result::LIMEN_RESULT_INVALID_ARGUMENT);
                }
            }
        }
    }
}

/// One call on the gRPC front (correlation 3) or its exposure, checked as
/// the HTTP front's are.
///
/// # Safety
/// `grpc` and `exposure` are live handles.
unsafe fn grpc_op(op: &GrpcOp, grpc: *mut limen_front, exposure: *mut limen_exposure, now: u64) {
    // SAFETY: the caller's promise; every other pointer is a valid slice or
    // an output valid for its write.
    unsafe {
        match op {
            GrpcOp::Data(bytes) => ok(limen_front_handle_data(
                grpc,
                now,
                bytes.as_ptr(),
                bytes.len(),
            )),
            GrpcOp::Preface => {
                let mut b = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
                b.extend(frame(0x4, 0, 0, &[]));
                ok(limen_front_handle_data(grpc, now, b.as_ptr(), b.len()))
            }
            GrpcOp::Call(n, call, cut) => {
                let b = grpc_call(2 * u32::from(*n) + 1, usize::from(*call), *cut);
                ok(limen_front_handle_data(grpc, now, b.as_ptr(), b.len()))
            }
            GrpcOp::Eof => ok(limen_front_handle_eof(grpc, now)),
            GrpcOp::Timeout => ok(limen_front_handle_timeout(grpc, now)),
            GrpcOp::Poll => {
                let mut k = limen_front_event::LIMEN_FRONT_EVENT_NONE;
                ok(limen_front_poll_event(grpc, &mut k));
                let r = limen_front_submit(grpc, exposure, now, now, ptr::null_mut());
                if k == limen_front_event::LIMEN_FRONT_EVENT_REQUEST {
                    assert_eq!(r, limen_result::LIMEN_RESULT_OK);
                } else {
                    assert_eq!(r, limen_result::LIMEN_RESULT_INVALID_STATE);
                }
            }
            GrpcOp::PollExposure(reply) => {
                let mut ev = std::mem::MaybeUninit::<limen_exposure_event>::uninit();
                ok(limen_exposure_poll_event(exposure, ev.as_mut_ptr()));
                let ev = ev.assume_init();
                text(ev.receiver_name);
                text(ev.member_name);
                text(ev.caller_mode);
                text(ev.caller_name);
                let _ = lent(ev.payload);
                match ev.kind {
                    limen_exposure_event_kind::LIMEN_EXPOSURE_EVENT_DISPATCH => {
                        ok(limen_exposure_complete(
                            exposure,
                            ev.request_id,
                            u32::from(reply.how % 5),
                            reply.body.as_ptr(),
                            reply.body.len(),
                        ))
                    }
                    limen_exposure_event_kind::LIMEN_EXPOSURE_EVENT_ASK => {
                        ok(limen_exposure_receiver_born(exposure, ev.receiver, 1))
                    }
                    limen_exposure_event_kind::LIMEN_EXPOSURE_EVENT_DELIVER if reply.deliver => {
                        assert_eq!(ev.correlation, 3);
                        ok(limen_front_deliver(grpc, exposure, now));
                    }
                    _ => {}
                }
            }
            GrpcOp::CopyOutput(cap) => buffered(usize::from(*cap), |buf, cap, w| {
                limen_front_copy_output(grpc, buf, cap, w)
            }),
            GrpcOp::Consume(n) => {
                let mut out = limen_str::EMPTY;
                ok(limen_front_pending_output(grpc, &mut out));
                let before = out.len;
                let r = limen_front_consume_output(grpc, now, usize::from(*n));
                ok(r);
                if usize::from(*n) > before {
                    assert_eq!(r, limen_result::LIMEN_RESULT_INVALID_ARGUMENT);
                    ok(limen_front_pending_output(grpc, &mut out));
                    assert_eq!(out.len, before, "a refused consume consumed");
                }
            }
            GrpcOp::Flush => {
                let mut out = limen_str::EMPTY;
                ok(limen_front_pending_output(grpc, &mut out));
                let n = lent(out).len();
                ok(limen_front_consume_output(grpc, now, n));
            }
            GrpcOp::Deliver => ok(limen_front_deliver(grpc, exposure, now)),
            GrpcOp::Stop => ok(limen_front_stop(grpc, now)),
            GrpcOp::Abort => ok(limen_front_abort(grpc)),
            GrpcOp::Lost => ok(limen_exposure_connection_lost(exposure, 3)),
        }
    }
}
