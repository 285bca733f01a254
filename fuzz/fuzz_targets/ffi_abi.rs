//! The C ABI (`ffi/`) driven as a C program drives it: an arbitrary
//! sequence of calls on one exposure handle, its HTTP and Unix fronts and a
//! Flow schema handle, with arbitrary bytes, buffer sizes, lengths to
//! consume, completions and clocks.
//!
//! Checks: no call panics (`LIMEN_RESULT_PANIC` is a finding); a buffer
//! too small is `LIMEN_RESULT_BUFFER_TOO_SMALL` with the length needed
//! written out and not one byte of the buffer touched; an output that fits
//! is written within the buffer and nowhere past it; consuming more than is
//! pending is refused and consumes nothing; every pointer an event lends is
//! readable for its length; and, under AddressSanitizer, no call leaks
//! (every handle is freed at the end of the input).
#![no_main]

use std::ffi::CStr;
use std::ptr;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use limen_ffi::exposure::*;
use limen_ffi::flow::*;
use limen_ffi::front::*;
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
        limen_identity_free(ids);
        assert!(!exposure.is_null());
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
            }
            let mut d = 0;
            let _ = limen_exposure_poll_timeout(exposure, &mut d);
            let _ = limen_front_poll_timeout(fronts[0], &mut d);
            let _ = limen_front_wants_read(fronts[1]);
            let _ = limen_front_is_closed(fronts[0]);
        }
        limen_flow_schema_free(schema);
        limen_front_free(fronts[0]);
        limen_front_free(fronts[1]);
        limen_exposure_free(exposure);
    }
});
