//! The C ABI driven as C drives it: through the exported functions and raw
//! pointers, checked against independent sources (the RFC 8785 vectors, the
//! toolkit's listing fixture with the fingerprints its implementation
//! states, the witness program served over HTTP bytes).

use std::ffi::{c_char, CStr, CString};
use std::path::{Path, PathBuf};
use std::ptr;

use limen_ffi::exposure::*;
use limen_ffi::flow::*;
use limen_ffi::front::*;
use limen_ffi::hale::*;
use limen_ffi::{limen_last_error, limen_result, limen_str, limen_version};

use limen_result::*;
use limen_transport::*;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn last_error() -> String {
    // SAFETY: limen_last_error returns a NUL-terminated string valid until
    // the next call on this thread.
    unsafe { CStr::from_ptr(limen_last_error()) }
        .to_string_lossy()
        .into_owned()
}

fn c(p: *const c_char) -> String {
    // SAFETY: the library lends NUL-terminated strings.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// Calls `f(buf, cap, written)` as a C caller would: first with no buffer,
/// then with one of the length asked for.
fn grow(mut f: impl FnMut(*mut u8, usize, *mut usize) -> limen_result) -> (limen_result, Vec<u8>) {
    let mut written = 0usize;
    let r = f(ptr::null_mut(), 0, &mut written);
    if r != LIMEN_RESULT_BUFFER_TOO_SMALL {
        return (r, Vec::new());
    }
    let mut buf = vec![0u8; written];
    let r = f(buf.as_mut_ptr(), buf.len(), &mut written);
    buf.truncate(written);
    (r, buf)
}

#[test]
fn the_version_is_the_crates() {
    assert_eq!(c(limen_version()), env!("CARGO_PKG_VERSION"));
}

const DIALECT: &str = r#""$schema":"https://json-schema.org/draft/2020-12/schema""#;

fn schema(body: &str) -> *mut limen_flow_schema {
    let text = if body == "{}" {
        format!("{{{DIALECT}}}")
    } else {
        format!("{{{DIALECT},{}", &body[1..])
    };
    let mut h = ptr::null_mut();
    // SAFETY: a valid slice and output pointer.
    let r = unsafe { limen_flow_schema_new(text.as_ptr(), text.len(), &mut h) };
    assert_eq!(r, LIMEN_RESULT_OK, "{}", last_error());
    h
}

#[test]
fn canonical_text_agrees_with_the_rfc_8785_vectors() {
    let dir = root().join("../shared/data/json-canonicalization");
    if !dir.is_dir() {
        eprintln!("skipped: {} is absent", dir.display());
        return;
    }
    let s = schema("{}");
    for name in [
        "arrays.json",
        "french.json",
        "structures.json",
        "unicode.json",
    ] {
        let input = std::fs::read(dir.join("input").join(name)).unwrap();
        let expected = std::fs::read(dir.join("output").join(name)).unwrap();
        let (r, out) = grow(|buf, cap, w| {
            // SAFETY: live handle, valid slices.
            unsafe { limen_flow_canonical(s, input.as_ptr(), input.len(), buf, cap, w) }
        });
        assert_eq!(r, LIMEN_RESULT_OK, "{name}: {}", last_error());
        assert_eq!(out, expected, "{name}");
    }
    // SAFETY: the handle is live and freed once.
    unsafe { limen_flow_schema_free(s) };
}

#[test]
fn a_buffer_too_small_writes_nothing_and_says_the_length() {
    let s = schema("{}");
    let text = b"{\"b\": 1, \"a\": [true]}";
    let mut buf = [0xAAu8; 8];
    let mut written = 0;
    // SAFETY: live handle, valid slices.
    let r = unsafe {
        limen_flow_canonical(
            s,
            text.as_ptr(),
            text.len(),
            buf.as_mut_ptr(),
            8,
            &mut written,
        )
    };
    assert_eq!(r, LIMEN_RESULT_BUFFER_TOO_SMALL);
    assert_eq!(written, br#"{"a":[true],"b":1}"#.len());
    assert_eq!(buf, [0xAAu8; 8], "nothing is written to a buffer too small");
    // SAFETY: the handle is live and freed once.
    unsafe { limen_flow_schema_free(s) };
}

#[test]
fn a_refusal_names_its_json_pointer_and_reason() {
    let s = schema(
        r#"{"type":"object","additionalProperties":{"type":"array","items":{"type":"integer"}}}"#,
    );
    let text = br#"{"hits":[1,2,"x"]}"#;
    let mut written = 0;
    // SAFETY: live handle, valid slices; no buffer with capacity 0.
    let r = unsafe {
        limen_flow_canonical(
            s,
            text.as_ptr(),
            text.len(),
            ptr::null_mut(),
            0,
            &mut written,
        )
    };
    assert_eq!(r, LIMEN_RESULT_REFUSED);
    assert!(last_error().starts_with("$.hits[2]: "), "{}", last_error());
    let mut refusal = limen_flow_refusal {
        pointer: ptr::null(),
        reason: ptr::null(),
    };
    // SAFETY: live handle, valid output.
    assert_eq!(
        unsafe { limen_flow_schema_refusal(s, &mut refusal) },
        LIMEN_RESULT_OK
    );
    assert_eq!(c(refusal.pointer), "/hits/2");
    assert!(last_error().ends_with(&c(refusal.reason)));
    // SAFETY: the handle is live and freed once.
    unsafe { limen_flow_schema_free(s) };
}

#[test]
fn a_listings_fingerprints_are_the_ones_it_states() {
    let text = std::fs::read(root().join("toolkit/tests/fixtures/listing.json")).unwrap();
    let listing: serde_json::Value = serde_json::from_slice(&text).unwrap();
    let (r, out) = grow(|buf, cap, w| {
        // SAFETY: valid slices.
        unsafe { limen_flow_listing_fingerprints(text.as_ptr(), text.len(), buf, cap, w) }
    });
    assert_eq!(r, LIMEN_RESULT_OK, "{}", last_error());
    let expected: String = listing["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            format!(
                "{} {}\n",
                t["tool"].as_str().unwrap(),
                t["fingerprint"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(String::from_utf8(out).unwrap(), expected);
    // One signature alone, and a listing that states a wrong fingerprint.
    let first = &listing["tools"][0];
    let sig = first["signature"].to_string();
    let (r, out) = grow(|buf, cap, w| {
        // SAFETY: valid slices.
        unsafe { limen_flow_fingerprint(sig.as_ptr(), sig.len(), buf, cap, w) }
    });
    assert_eq!(r, LIMEN_RESULT_OK);
    assert_eq!(out, first["fingerprint"].as_str().unwrap().as_bytes());
    let mut wrong = listing.clone();
    wrong["tools"][0]["fingerprint"] = listing["tools"][1]["fingerprint"].clone();
    let wrong = wrong.to_string();
    let (r, _) = grow(|buf, cap, w| {
        // SAFETY: valid slices.
        unsafe { limen_flow_listing_fingerprints(wrong.as_ptr(), wrong.len(), buf, cap, w) }
    });
    assert_eq!(r, LIMEN_RESULT_REFUSED);
    assert!(last_error().contains(first["tool"].as_str().unwrap()));
}

fn desk() -> String {
    std::fs::read_to_string(root().join("conformance/programs/desk.hl")).unwrap()
}

#[test]
fn the_witness_passes_its_check_and_a_broken_program_says_where() {
    let file = CString::new("desk.hl").unwrap();
    let src = desk();
    let mut h = ptr::null_mut();
    // SAFETY: valid strings and output.
    assert_eq!(
        unsafe { limen_hale_check(file.as_ptr(), src.as_ptr(), src.len(), &mut h) },
        LIMEN_RESULT_OK
    );
    // SAFETY: live handle.
    assert!(unsafe { limen_hale_checked_passed(h) });
    let surface = CString::new("Public").unwrap();
    let (r, doc) = grow(|buf, cap, w| {
        // SAFETY: live handle, valid strings.
        unsafe { limen_hale_project(h, 0, surface.as_ptr(), buf, cap, w) }
    });
    assert_eq!(r, LIMEN_RESULT_OK, "{}", last_error());
    let doc: serde_json::Value = serde_json::from_slice(&doc).unwrap();
    assert!(doc["paths"]
        .as_object()
        .unwrap()
        .keys()
        .any(|k| k.contains("Orders::place")));
    // SAFETY: freed once.
    unsafe { limen_hale_checked_free(h) };

    let broken = src.replacen("locus Orders {", "locus Orders {{", 1);
    let line = broken
        .lines()
        .position(|l| l.contains("locus Orders {{"))
        .unwrap()
        + 1;
    let mut h = ptr::null_mut();
    // SAFETY: valid strings and output.
    assert_eq!(
        unsafe { limen_hale_check(file.as_ptr(), broken.as_ptr(), broken.len(), &mut h) },
        LIMEN_RESULT_OK
    );
    // SAFETY: live handle.
    assert!(!unsafe { limen_hale_checked_passed(h) });
    // SAFETY: live handle.
    assert!(unsafe { limen_hale_checked_count(h) } >= 1);
    let mut d = std::mem::MaybeUninit::<limen_hale_diagnostic>::uninit();
    // SAFETY: live handle, valid output.
    assert_eq!(
        unsafe { limen_hale_checked_diagnostic(h, 0, d.as_mut_ptr()) },
        LIMEN_RESULT_OK
    );
    // SAFETY: written by the call above.
    let d = unsafe { d.assume_init() };
    assert_eq!(d.line as usize, line);
    assert_eq!(c(d.file), "desk.hl");
    assert!(!c(d.message).is_empty());
    // SAFETY: live handle; past the end is NOT_FOUND.
    let past = unsafe { limen_hale_checked_diagnostic(h, 1 << 20, ptr::null_mut()) };
    assert_eq!(past, LIMEN_RESULT_NOT_FOUND);
    // SAFETY: freed once.
    unsafe { limen_hale_checked_free(h) };
}

struct Served {
    exposure: *mut limen_exposure,
    front: *mut limen_front,
}

impl Drop for Served {
    fn drop(&mut self) {
        // SAFETY: both handles are live and freed once.
        unsafe {
            limen_front_free(self.front);
            limen_exposure_free(self.exposure);
        }
    }
}

/// The exposure `public` of the program `src`, with the identity sources
/// of `ids` (not freed here).
fn public_exposure(src: &str, ids: *mut limen_identity) -> *mut limen_exposure {
    let mut exposure = ptr::null_mut();
    let name = CString::new("public").unwrap();
    // SAFETY: valid strings and handles.
    let r = unsafe {
        limen_exposure_new(
            src.as_ptr(),
            src.len(),
            name.as_ptr(),
            ids,
            ptr::null(),
            &mut exposure,
        )
    };
    assert_eq!(r, LIMEN_RESULT_OK, "{}", last_error());
    exposure
}

fn serve_public() -> Served {
    let src = desk();
    let mut ids = ptr::null_mut();
    // SAFETY: valid output.
    assert_eq!(unsafe { limen_identity_new(&mut ids) }, LIMEN_RESULT_OK);
    let s = |t: &str| CString::new(t).unwrap();
    // SAFETY: live handle, valid strings.
    unsafe {
        assert_eq!(
            limen_identity_add_token(ids, s("t-alice").as_ptr(), s("alice").as_ptr(), 0),
            LIMEN_RESULT_OK
        );
        assert_eq!(
            limen_identity_add_token(ids, s("t-bob").as_ptr(), s("bob").as_ptr(), 0),
            LIMEN_RESULT_OK
        );
        assert_eq!(
            limen_identity_set_refused(ids, s("no such token").as_ptr()),
            LIMEN_RESULT_OK
        );
        assert_eq!(
            limen_identity_add_grant(ids, s("alice").as_ptr(), s("trader").as_ptr()),
            LIMEN_RESULT_OK
        );
    }
    let exposure = public_exposure(&src, ids);
    // SAFETY: freed once; the exposure keeps nothing of it.
    unsafe { limen_identity_free(ids) };
    // SAFETY: live handle.
    assert_eq!(
        unsafe { limen_exposure_transport(exposure) },
        limen_transport::LIMEN_TRANSPORT_HTTP
    );
    let mut front = ptr::null_mut();
    // SAFETY: valid output.
    assert_eq!(
        unsafe { limen_front_new_http(0, 7, &mut front) },
        LIMEN_RESULT_OK
    );
    Served { exposure, front }
}

fn event(e: *mut limen_exposure) -> limen_exposure_event {
    let mut ev = std::mem::MaybeUninit::uninit();
    // SAFETY: live handle, valid output.
    assert_eq!(
        unsafe { limen_exposure_poll_event(e, ev.as_mut_ptr()) },
        LIMEN_RESULT_OK
    );
    // SAFETY: written by the call above.
    unsafe { ev.assume_init() }
}

fn lent(s: limen_str) -> Vec<u8> {
    if s.len == 0 {
        return Vec::new();
    }
    // SAFETY: the library lends `len` bytes at `ptr`.
    unsafe { std::slice::from_raw_parts(s.ptr, s.len) }.to_vec()
}

/// Feeds one HTTP request and takes the front's REQUEST into the exposure.
fn send(sv: &Served, request: &str) {
    // SAFETY: live handles, valid slices and outputs.
    unsafe {
        assert_eq!(
            limen_front_handle_data(sv.front, 1, request.as_ptr(), request.len()),
            LIMEN_RESULT_OK
        );
        let mut k = limen_front_event::LIMEN_FRONT_EVENT_NONE;
        assert_eq!(limen_front_poll_event(sv.front, &mut k), LIMEN_RESULT_OK);
        assert_eq!(k, limen_front_event::LIMEN_FRONT_EVENT_REQUEST);
        let mut id = 0;
        assert_eq!(
            limen_front_submit(sv.front, sv.exposure, 1, 0, &mut id),
            LIMEN_RESULT_OK
        );
        assert!(id > 0);
        // The request is handed over once.
        assert_eq!(
            limen_front_submit(sv.front, sv.exposure, 1, 0, ptr::null_mut()),
            LIMEN_RESULT_INVALID_STATE
        );
    }
}

fn written(sv: &Served) -> String {
    let mut out = limen_str::EMPTY;
    // SAFETY: live handle, valid output.
    assert_eq!(
        unsafe { limen_front_pending_output(sv.front, &mut out) },
        LIMEN_RESULT_OK
    );
    let bytes = lent(out);
    // SAFETY: live handle; consumes exactly what was pending.
    assert_eq!(
        unsafe { limen_front_consume_output(sv.front, 2, bytes.len()) },
        LIMEN_RESULT_OK
    );
    String::from_utf8(bytes).unwrap()
}

#[test]
fn the_witness_public_exposure_serves_a_call_over_http_bytes() {
    let sv = serve_public();
    let body = r#"{"symbol":"ACME","qty":10,"limit":12500}"#;
    send(
        &sv,
        &format!(
            "POST /call/Orders::place HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t-alice\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    );
    // The receiver is asked for, announced, then handed the call.
    let ask = event(sv.exposure);
    assert_eq!(
        ask.kind,
        limen_exposure_event_kind::LIMEN_EXPOSURE_EVENT_ASK
    );
    assert_eq!(c(ask.receiver_name), "self.orders");
    // SAFETY: live handle.
    assert_eq!(
        unsafe { limen_exposure_receiver_born(sv.exposure, ask.receiver, 1) },
        LIMEN_RESULT_OK
    );
    let d = event(sv.exposure);
    assert_eq!(
        d.kind,
        limen_exposure_event_kind::LIMEN_EXPOSURE_EVENT_DISPATCH
    );
    assert_eq!(c(d.member_name), "Orders::place");
    assert_eq!(c(d.caller_name), "alice");
    let payload: serde_json::Value = serde_json::from_slice(&lent(d.payload)).unwrap();
    assert_eq!(
        payload,
        serde_json::json!({"symbol":"ACME","qty":10,"limit":12500})
    );
    assert_eq!(
        event(sv.exposure).kind,
        limen_exposure_event_kind::LIMEN_EXPOSURE_EVENT_NONE
    );
    let receipt = br#"{"order":41,"notional":125000}"#;
    // SAFETY: live handle, valid slice.
    let r = unsafe {
        limen_exposure_complete(
            sv.exposure,
            d.request_id,
            0,
            receipt.as_ptr(),
            receipt.len(),
        )
    };
    assert_eq!(r, LIMEN_RESULT_OK);
    let deliver = event(sv.exposure);
    assert_eq!(
        deliver.kind,
        limen_exposure_event_kind::LIMEN_EXPOSURE_EVENT_DELIVER
    );
    assert_eq!(deliver.correlation, 7);
    // SAFETY: live handles.
    assert_eq!(
        unsafe { limen_front_deliver(sv.front, sv.exposure, 2) },
        LIMEN_RESULT_OK
    );
    let reply = written(&sv);
    assert!(reply.starts_with("HTTP/1.1 200 "), "{reply}");
    assert!(
        reply.ends_with(std::str::from_utf8(receipt).unwrap()),
        "{reply}"
    );
}

#[test]
fn an_unknown_token_is_refused_without_reaching_a_receiver() {
    let sv = serve_public();
    send(
        &sv,
        "POST /call/Orders::place HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t-nobody\r\nContent-Length: 2\r\n\r\n{}",
    );
    let deliver = event(sv.exposure);
    assert_eq!(
        deliver.kind,
        limen_exposure_event_kind::LIMEN_EXPOSURE_EVENT_DELIVER
    );
    // SAFETY: live handles.
    assert_eq!(
        unsafe { limen_front_deliver(sv.front, sv.exposure, 2) },
        LIMEN_RESULT_OK
    );
    // A delivery is taken once.
    // SAFETY: live handles.
    assert_eq!(
        unsafe { limen_front_deliver(sv.front, sv.exposure, 2) },
        LIMEN_RESULT_INVALID_STATE
    );
    let reply = written(&sv);
    assert!(reply.starts_with("HTTP/1.1 401 "), "{reply}");
    assert!(reply.contains("no such token"), "{reply}");
}

#[test]
fn null_handles_are_an_error_not_a_crash() {
    let mut w = 0;
    // SAFETY: NULL handles are what is tested.
    unsafe {
        assert_eq!(
            limen_flow_canonical(ptr::null_mut(), ptr::null(), 0, ptr::null_mut(), 0, &mut w),
            LIMEN_RESULT_INVALID_ARGUMENT
        );
        assert_eq!(
            limen_front_handle_eof(ptr::null_mut(), 0),
            LIMEN_RESULT_INVALID_ARGUMENT
        );
        assert_eq!(
            limen_exposure_stop(ptr::null_mut(), 0),
            LIMEN_RESULT_INVALID_ARGUMENT
        );
        assert_eq!(
            limen_front_stop(ptr::null_mut(), 0),
            LIMEN_RESULT_INVALID_ARGUMENT
        );
        assert!(limen_front_is_closed(ptr::null()));
        assert!(!limen_front_poll_timeout(ptr::null(), &mut 0));
        limen_front_free(ptr::null_mut());
        assert_eq!(
            limen_ffi::hub::limen_hub_stop(ptr::null_mut(), 0),
            LIMEN_RESULT_INVALID_ARGUMENT
        );
        assert!(limen_ffi::hub::limen_hub_is_finished(ptr::null()));
        assert!(!limen_ffi::hub::limen_hub_wants_read(ptr::null(), 1));
        limen_ffi::hub::limen_hub_free(ptr::null_mut());
        limen_front_free(ptr::null_mut());
        limen_exposure_free(ptr::null_mut());
        limen_flow_schema_free(ptr::null_mut());
        limen_hale_checked_free(ptr::null_mut());
    }
    assert_eq!(last_error(), "the handle is NULL");
}

mod tools {
    use super::*;
    use limen_ffi::tool::*;

    const ECHO: &str = "example.com/limen-fixtures@0.3.0/echo.flow.echo";
    const FAIL: &str = "example.com/limen-fixtures@0.3.0/echo.flow.fail";

    fn listing() -> Vec<u8> {
        std::fs::read(root().join("toolkit/tests/fixtures/listing.json")).unwrap()
    }

    /// Moves every pending byte of `from` into `to` (a pipe that takes all).
    fn pipe(
        take: impl Fn(*mut limen_str) -> limen_result,
        consume: impl Fn(usize) -> limen_result,
        feed: impl Fn(&[u8]) -> limen_result,
    ) -> usize {
        let mut out = limen_str::EMPTY;
        assert_eq!(take(&mut out), LIMEN_RESULT_OK);
        let bytes = lent(out);
        if !bytes.is_empty() {
            assert_eq!(consume(bytes.len()), LIMEN_RESULT_OK);
            assert_eq!(feed(&bytes), LIMEN_RESULT_OK);
        }
        bytes.len()
    }

    /// A host and a toolkit over the same listing, wired back to back: each
    /// call's outcome as the host closes it.
    #[test]
    fn a_host_and_a_toolkit_talk_through_the_abi() {
        let l = listing();
        let (mut host, mut kit) = (ptr::null_mut(), ptr::null_mut());
        // SAFETY: valid slices and outputs; handles freed once at the end.
        unsafe {
            assert_eq!(
                limen_tool_host_new(l.as_ptr(), l.len(), &mut host),
                LIMEN_RESULT_OK
            );
            assert_eq!(
                limen_toolkit_new(l.as_ptr(), l.len(), &mut kit),
                LIMEN_RESULT_OK
            );
            let s = |t: &str| CString::new(t).unwrap();
            for (call, tool, args) in [
                ("1", ECHO, r#"{"text":"hi"}"#),
                ("2", FAIL, r#"{"reason":"no"}"#),
            ] {
                let r = limen_tool_host_call(
                    host,
                    0,
                    s("run").as_ptr(),
                    s(call).as_ptr(),
                    s(tool).as_ptr(),
                    args.as_ptr(),
                    args.len(),
                );
                assert_eq!(r, LIMEN_RESULT_OK, "{}", last_error());
            }
            // A key already open, args that do not decode, an unknown Tool.
            let dup = limen_tool_host_call(
                host,
                0,
                s("run").as_ptr(),
                s("1").as_ptr(),
                s(ECHO).as_ptr(),
                b"{\"text\":\"x\"}".as_ptr(),
                12,
            );
            assert_eq!(dup, LIMEN_RESULT_INVALID_STATE);
            let bad = limen_tool_host_call(
                host,
                0,
                s("run").as_ptr(),
                s("3").as_ptr(),
                s(ECHO).as_ptr(),
                b"{\"text\":1}".as_ptr(),
                10,
            );
            assert_eq!(bad, LIMEN_RESULT_REFUSED);
            let unknown = "example.com/limen-fixtures@0.3.0/echo.flow.nothing";
            let none = limen_tool_host_call(
                host,
                0,
                s("run").as_ptr(),
                s("4").as_ptr(),
                s(unknown).as_ptr(),
                b"{}".as_ptr(),
                2,
            );
            assert_eq!(none, LIMEN_RESULT_NOT_FOUND);

            let mut closed = Vec::new();
            for _ in 0..64 {
                loop {
                    let mut ev = std::mem::MaybeUninit::<limen_tool_event>::uninit();
                    assert_eq!(
                        limen_tool_host_poll_event(host, ev.as_mut_ptr()),
                        LIMEN_RESULT_OK
                    );
                    let ev = ev.assume_init();
                    match ev.kind {
                        limen_tool_event_kind::LIMEN_TOOL_EVENT_NONE => break,
                        limen_tool_event_kind::LIMEN_TOOL_EVENT_START => {
                            assert_eq!(limen_tool_host_started(host, 0), LIMEN_RESULT_OK)
                        }
                        limen_tool_event_kind::LIMEN_TOOL_EVENT_CLOSED => {
                            closed.push((c(ev.call), String::from_utf8(lent(ev.text)).unwrap()))
                        }
                        _ => {}
                    }
                }
                loop {
                    let mut ev = std::mem::MaybeUninit::<limen_toolkit_event>::uninit();
                    assert_eq!(
                        limen_toolkit_poll_event(kit, ev.as_mut_ptr()),
                        LIMEN_RESULT_OK
                    );
                    let ev = ev.assume_init();
                    if ev.kind == limen_toolkit_event_kind::LIMEN_TOOLKIT_EVENT_NONE {
                        break;
                    }
                    assert_eq!(ev.kind, limen_toolkit_event_kind::LIMEN_TOOLKIT_EVENT_CALL);
                    let args: serde_json::Value = serde_json::from_slice(&lent(ev.text)).unwrap();
                    let (how, body) = if c(ev.tool_name) == ECHO {
                        // A value not of the Tool's type is refused, the call still open.
                        let wrong =
                            limen_toolkit_reply(kit, 0, ev.run, ev.call, 0, b"1".as_ptr(), 1);
                        assert_eq!(wrong, LIMEN_RESULT_REFUSED);
                        (0, args["text"].to_string())
                    } else {
                        (1, format!("{{\"Refused\":{}}}", args["reason"]))
                    };
                    let r = limen_toolkit_reply(
                        kit,
                        0,
                        ev.run,
                        ev.call,
                        how,
                        body.as_ptr(),
                        body.len(),
                    );
                    assert_eq!(r, LIMEN_RESULT_OK, "{}", last_error());
                    // Answered once.
                    let again = limen_toolkit_reply(
                        kit,
                        0,
                        ev.run,
                        ev.call,
                        how,
                        body.as_ptr(),
                        body.len(),
                    );
                    assert_eq!(again, LIMEN_RESULT_NOT_FOUND);
                }
                let to_kit = pipe(
                    |o| limen_tool_host_pending_output(host, o),
                    |n| limen_tool_host_consume_output(host, 0, n),
                    |b| limen_toolkit_handle_data(kit, 0, b.as_ptr(), b.len()),
                );
                let to_host = pipe(
                    |o| limen_toolkit_pending_output(kit, o),
                    |n| limen_toolkit_consume_output(kit, 0, n),
                    |b| limen_tool_host_handle_data(host, 0, b.as_ptr(), b.len()),
                );
                if closed.len() == 2 && to_kit == 0 && to_host == 0 {
                    break;
                }
            }
            closed.sort();
            assert_eq!(
                closed,
                [
                    ("1".to_owned(), r#"{"Ok":"hi"}"#.to_owned()),
                    ("2".to_owned(), r#"{"Failed":{"Refused":"no"}}"#.to_owned())
                ]
            );
            assert_eq!(limen_tool_host_open_calls(host), 0);
            assert_eq!(limen_toolkit_open_calls(kit), 0);
            limen_tool_host_free(host);
            limen_toolkit_free(kit);
        }
    }
}

/// The bearer callback: `t-cb` names `carol`, `t-dave` names `dave`, every
/// other token nobody. `user_data` counts the questions.
unsafe extern "C" fn bearer_cb(
    user_data: *mut std::ffi::c_void,
    token: *const c_char,
    name: *mut u8,
    name_cap: usize,
    name_len: *mut usize,
    expires: *mut u64,
) -> limen_result {
    // SAFETY: the library passes the counter it was given and valid
    // pointers, per the callback's contract.
    unsafe {
        *(user_data as *mut usize) += 1;
        let who: &[u8] = match CStr::from_ptr(token).to_bytes() {
            b"t-cb" => b"carol",
            b"t-dave" => b"dave",
            _ => return LIMEN_RESULT_NOT_FOUND,
        };
        assert!(who.len() <= name_cap);
        ptr::copy_nonoverlapping(who.as_ptr(), name, who.len());
        *name_len = who.len();
        *expires = 0;
    }
    LIMEN_RESULT_OK
}

/// The role callback: `carol` holds `trader`, nobody else holds anything.
unsafe extern "C" fn role_cb(
    _user_data: *mut std::ffi::c_void,
    mode: *const c_char,
    principal: *const c_char,
    role: *const c_char,
) -> bool {
    // SAFETY: three NUL-terminated texts, per the callback's contract.
    unsafe {
        CStr::from_ptr(mode).to_bytes() == b"bearer"
            && CStr::from_ptr(principal).to_bytes() == b"carol"
            && CStr::from_ptr(role).to_bytes() == b"trader"
    }
}

#[test]
fn the_identity_sources_may_be_callbacks_asked_at_admission() {
    let src = desk();
    let mut asked = 0usize;
    let mut ids = ptr::null_mut();
    // SAFETY: valid output; callbacks that follow their contracts; the
    // counter outlives the exposure.
    unsafe {
        assert_eq!(limen_identity_new(&mut ids), LIMEN_RESULT_OK);
        assert_eq!(
            limen_identity_set_callbacks(
                ids,
                Some(bearer_cb),
                Some(role_cb),
                &mut asked as *mut usize as *mut std::ffi::c_void,
            ),
            LIMEN_RESULT_OK
        );
    }
    let exposure = public_exposure(&src, ids);
    // SAFETY: freed once; the exposure keeps the callbacks, not the table.
    unsafe { limen_identity_free(ids) };
    let mut front = ptr::null_mut();
    // SAFETY: valid output.
    assert_eq!(
        unsafe { limen_front_new_http(0, 7, &mut front) },
        LIMEN_RESULT_OK
    );
    let sv = Served { exposure, front };
    let cancel = |token: &str| {
        format!(
            "POST /call/Orders::cancel HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Length: 11\r\n\r\n{{\"order\":1}}"
        )
    };
    // carol, named by the callback, holds trader: the call reaches the
    // receiver as hers.
    send(&sv, &cancel("t-cb"));
    let ask = event(sv.exposure);
    assert_eq!(
        ask.kind,
        limen_exposure_event_kind::LIMEN_EXPOSURE_EVENT_ASK
    );
    // SAFETY: live handle.
    unsafe { limen_exposure_receiver_born(sv.exposure, ask.receiver, 1) };
    let d = event(sv.exposure);
    assert_eq!(
        d.kind,
        limen_exposure_event_kind::LIMEN_EXPOSURE_EVENT_DISPATCH
    );
    assert_eq!(c(d.caller_name), "carol");
    assert!(asked >= 1);
    // dave is named but holds nothing: unauthorized; an unknown token:
    // unauthenticated. Each on a front of its own.
    for (token, status) in [("t-dave", "403"), ("t-nobody", "401")] {
        let mut front = ptr::null_mut();
        // SAFETY: valid output.
        assert_eq!(
            unsafe { limen_front_new_http(0, 8, &mut front) },
            LIMEN_RESULT_OK
        );
        let other = Served {
            exposure: sv.exposure,
            front,
        };
        send(&other, &cancel(token));
        let deliver = event(sv.exposure);
        assert_eq!(
            deliver.kind,
            limen_exposure_event_kind::LIMEN_EXPOSURE_EVENT_DELIVER
        );
        // SAFETY: live handles.
        assert_eq!(
            unsafe { limen_front_deliver(other.front, sv.exposure, 2) },
            LIMEN_RESULT_OK
        );
        let reply = written(&other);
        assert!(reply.starts_with(&format!("HTTP/1.1 {status} ")), "{reply}");
        // The exposure is freed by `sv` alone.
        // SAFETY: live handle, freed once.
        unsafe { limen_front_free(other.front) };
        std::mem::forget(other);
    }
}

#[test]
fn an_mcp_exposure_answers_tools_call_through_the_mcp_front() {
    // The witness with Public served over MCP instead of HTTP.
    let src = desk().replacen(
        "api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\"",
        "api::serve(Public, mcp::Rpc { bind: \"127.0.0.1:8090\"",
        1,
    );
    assert!(
        src.contains("mcp::Rpc"),
        "the witness's public serve site moved"
    );
    let mut ids = ptr::null_mut();
    let s = |t: &str| CString::new(t).unwrap();
    // SAFETY: valid output, live handle, valid strings.
    unsafe {
        assert_eq!(limen_identity_new(&mut ids), LIMEN_RESULT_OK);
        assert_eq!(
            limen_identity_add_token(ids, s("t-alice").as_ptr(), s("alice").as_ptr(), 0),
            LIMEN_RESULT_OK
        );
    }
    let exposure = public_exposure(&src, ids);
    // SAFETY: freed once.
    unsafe { limen_identity_free(ids) };
    // SAFETY: live handle.
    assert_eq!(
        unsafe { limen_exposure_transport(exposure) },
        limen_transport::LIMEN_TRANSPORT_MCP
    );
    let mut front = ptr::null_mut();
    // SAFETY: live exposure, valid output.
    assert_eq!(
        unsafe { limen_front_new_mcp(0, exposure, 9, &mut front) },
        LIMEN_RESULT_OK
    );
    let sv = Served { exposure, front };
    let body = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"Orders__place","arguments":{"symbol":"ACME","qty":10,"limit":12500}}}"#;
    send(
        &sv,
        &format!(
            "POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t-alice\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    );
    let ask = event(sv.exposure);
    assert_eq!(
        ask.kind,
        limen_exposure_event_kind::LIMEN_EXPOSURE_EVENT_ASK
    );
    // SAFETY: live handle.
    unsafe { limen_exposure_receiver_born(sv.exposure, ask.receiver, 1) };
    let d = event(sv.exposure);
    assert_eq!(
        d.kind,
        limen_exposure_event_kind::LIMEN_EXPOSURE_EVENT_DISPATCH
    );
    assert_eq!(c(d.member_name), "Orders::place");
    let receipt = br#"{"order":41,"notional":125000}"#;
    // SAFETY: live handle, valid slice.
    unsafe {
        assert_eq!(
            limen_exposure_complete(
                sv.exposure,
                d.request_id,
                0,
                receipt.as_ptr(),
                receipt.len()
            ),
            LIMEN_RESULT_OK
        );
    }
    assert_eq!(
        event(sv.exposure).kind,
        limen_exposure_event_kind::LIMEN_EXPOSURE_EVENT_DELIVER
    );
    // SAFETY: live handles.
    assert_eq!(
        unsafe { limen_front_deliver(sv.front, sv.exposure, 2) },
        LIMEN_RESULT_OK
    );
    let reply = written(&sv);
    assert!(reply.starts_with("HTTP/1.1 200 "), "{reply}");
    let json: serde_json::Value =
        serde_json::from_str(&reply[reply.find("\r\n\r\n").unwrap() + 4..]).unwrap();
    // § The MCP transport: the result's structuredContent is the response.
    assert_eq!(json["id"], 5);
    assert_eq!(json["result"]["isError"], false);
    assert_eq!(
        json["result"]["structuredContent"],
        serde_json::json!({"order":41,"notional":125000})
    );
}

/// The exposure `name` of the program `src`, served over `transport` (a
/// `limen_transport` number), with an empty identity table: the result
/// and the handle (NULL unless OK).
fn exposure_over(src: &str, name: &str, transport: u32) -> (limen_result, *mut limen_exposure) {
    let mut ids = ptr::null_mut();
    // SAFETY: valid output.
    assert_eq!(unsafe { limen_identity_new(&mut ids) }, LIMEN_RESULT_OK);
    let mut exposure = ptr::null_mut();
    let name = CString::new(name).unwrap();
    // SAFETY: valid strings and handles.
    let r = unsafe {
        limen_exposure_new_over(
            src.as_ptr(),
            src.len(),
            name.as_ptr(),
            transport,
            ids,
            ptr::null(),
            &mut exposure,
        )
    };
    // SAFETY: freed once; the exposure keeps nothing of it.
    unsafe { limen_identity_free(ids) };
    (r, exposure)
}

/// An HTTP/2 frame's header (RFC 9113 § 4.1): its length, type and stream.
fn frame_header(b: &[u8]) -> (usize, u8, u32) {
    let len = (usize::from(b[0]) << 16) | (usize::from(b[1]) << 8) | usize::from(b[2]);
    let stream = u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff;
    (len, b[3], stream)
}

#[test]
fn public_over_grpc_makes_grpc_fronts_which_open_with_settings() {
    let src = desk();
    let (r, grpc) = exposure_over(&src, "public", LIMEN_TRANSPORT_GRPC as u32);
    assert_eq!(r, LIMEN_RESULT_OK, "{}", last_error());
    // SAFETY: live handle.
    assert_eq!(
        unsafe { limen_exposure_transport(grpc) },
        LIMEN_TRANSPORT_GRPC
    );
    // Unix lines is not a transport a TCP serve site is moved to; the admin
    // exposure's principals are the kernel's, which gRPC has none of.
    let (r, e) = exposure_over(&src, "public", LIMEN_TRANSPORT_UNIX as u32);
    assert_eq!((r, e), (LIMEN_RESULT_INVALID_ARGUMENT, ptr::null_mut()));
    let (r, e) = exposure_over(&src, "public", 99);
    assert_eq!((r, e), (LIMEN_RESULT_INVALID_ARGUMENT, ptr::null_mut()));
    let (r, e) = exposure_over(&src, "admin", LIMEN_TRANSPORT_GRPC as u32);
    assert_eq!((r, e), (LIMEN_RESULT_UNREADABLE, ptr::null_mut()));
    let (r, e) = exposure_over(&src, "nobody", LIMEN_TRANSPORT_GRPC as u32);
    assert_eq!((r, e), (LIMEN_RESULT_NOT_FOUND, ptr::null_mut()));

    // An HTTP exposure has no gRPC framing to make a front of.
    let (r, http) = exposure_over(&src, "public", LIMEN_TRANSPORT_HTTP as u32);
    assert_eq!(r, LIMEN_RESULT_OK, "{}", last_error());
    let mut front = ptr::null_mut();
    // SAFETY: live handle, valid output.
    let r = unsafe { limen_front_new_grpc(0, http, 7, &mut front) };
    assert_eq!((r, front), (LIMEN_RESULT_INVALID_ARGUMENT, ptr::null_mut()));

    // SAFETY: live handle, valid output.
    let r = unsafe { limen_front_new_grpc(0, grpc, 7, &mut front) };
    assert_eq!(r, LIMEN_RESULT_OK, "{}", last_error());
    // SAFETY: live handle.
    unsafe {
        assert_eq!(limen_front_correlation(front), 7);
        assert!(limen_front_wants_read(front));
        assert!(!limen_front_is_closed(front));
        assert_eq!(limen_front_streams_held(front), 0);
    }
    // RFC 9113 § 3.4: the server's connection preface is a SETTINGS frame,
    // on stream 0, first of what it writes.
    let mut out = limen_str::EMPTY;
    // SAFETY: live handle, valid output.
    assert_eq!(
        unsafe { limen_front_pending_output(front, &mut out) },
        LIMEN_RESULT_OK
    );
    let preface = lent(out);
    let (len, kind, stream) = frame_header(&preface);
    assert_eq!((kind, stream), (0x4, 0));
    assert_eq!(len % 6, 0, "SETTINGS carries 6-byte settings");
    // The copying form says the same bytes, and a short buffer gets none.
    let mut small = [0u8; 4];
    let mut written = 0;
    // SAFETY: live handle, valid buffer and output.
    let r = unsafe { limen_front_copy_output(front, small.as_mut_ptr(), 4, &mut written) };
    assert_eq!(
        (r, written, small),
        (LIMEN_RESULT_BUFFER_TOO_SMALL, preface.len(), [0; 4])
    );
    // SAFETY: live handle; more than is pending consumes nothing.
    let r = unsafe { limen_front_consume_output(front, 1, preface.len() + 1) };
    assert_eq!(r, LIMEN_RESULT_INVALID_ARGUMENT);
    // SAFETY: live handle.
    let r = unsafe { limen_front_consume_output(front, 1, preface.len()) };
    assert_eq!(r, LIMEN_RESULT_OK);

    // Not the client's preface (an HTTP/1.1 request): a connection error
    // (RFC 9113 § 3.4), and the connection ends once its output is written.
    let junk = b"GET / HTTP/1.1\r\nhost: x\r\n\r\n";
    // SAFETY: live handle, valid bytes.
    let r = unsafe { limen_front_handle_data(front, 2, junk.as_ptr(), junk.len()) };
    assert_eq!(r, LIMEN_RESULT_OK);
    // SAFETY: live handle.
    assert!(!unsafe { limen_front_wants_read(front) });
    let mut events = Vec::new();
    for _ in 0..8 {
        // SAFETY: live handle, valid output.
        unsafe {
            assert_eq!(limen_front_pending_output(front, &mut out), LIMEN_RESULT_OK);
            let n = out.len;
            assert_eq!(limen_front_consume_output(front, 3, n), LIMEN_RESULT_OK);
            let mut k = limen_front_event::LIMEN_FRONT_EVENT_NONE;
            assert_eq!(limen_front_poll_event(front, &mut k), LIMEN_RESULT_OK);
            if k != limen_front_event::LIMEN_FRONT_EVENT_NONE {
                events.push(k);
            }
        }
    }
    assert_eq!(events, [limen_front_event::LIMEN_FRONT_EVENT_CLOSED]);
    // SAFETY: live handle.
    assert!(unsafe { limen_front_is_closed(front) });
    // Submitting with no REQUEST event held is out of turn.
    // SAFETY: live handles.
    let r = unsafe { limen_front_submit(front, grpc, 4, 0, ptr::null_mut()) };
    assert_eq!(r, LIMEN_RESULT_INVALID_STATE);
    // SAFETY: each freed once.
    unsafe {
        limen_front_free(front);
        limen_exposure_free(http);
        limen_exposure_free(grpc);
    }
}

mod hub {
    use super::*;
    use limen_ffi::hub::*;

    /// The witness's hub `fills`, its identity sources the program's: the
    /// bearer tokens t-<name>, and hub_roles making dave an operator.
    fn fills() -> *mut limen_hub {
        let src = desk();
        let mut ids = ptr::null_mut();
        let mut hub = ptr::null_mut();
        // SAFETY: valid strings, handles and outputs; the table is freed
        // once, the hub keeping nothing of it.
        unsafe {
            assert_eq!(limen_identity_new(&mut ids), LIMEN_RESULT_OK);
            for name in [c"alice", c"bob", c"dave"] {
                let token = CString::new(format!("t-{}", name.to_str().unwrap())).unwrap();
                let r = limen_identity_add_token(ids, token.as_ptr(), name.as_ptr(), 0);
                assert_eq!(r, LIMEN_RESULT_OK);
            }
            let r = limen_identity_add_grant(ids, c"dave".as_ptr(), c"operator".as_ptr());
            assert_eq!(r, LIMEN_RESULT_OK);
            let r = limen_hub_new(
                src.as_ptr(),
                src.len(),
                c"fills".as_ptr(),
                ids,
                ptr::null(),
                &mut hub,
            );
            assert_eq!(r, LIMEN_RESULT_OK, "{}", last_error());
            let mut none = ptr::null_mut();
            let r = limen_hub_new(
                src.as_ptr(),
                src.len(),
                c"quotes".as_ptr(),
                ids,
                ptr::null(),
                &mut none,
            );
            assert_eq!((r, none), (LIMEN_RESULT_NOT_FOUND, ptr::null_mut()));
            limen_identity_free(ids);
        }
        hub
    }

    /// A client's text frame (RFC 6455 § 5.2): FIN, opcode 1, masked.
    fn client_text(text: &str) -> Vec<u8> {
        let key = [0x37, 0xfa, 0x21, 0x3d];
        let mut f = vec![0x81, 0x80 | u8::try_from(text.len()).unwrap()];
        f.extend_from_slice(&key);
        f.extend(text.bytes().enumerate().map(|(i, b)| b ^ key[i % 4]));
        f
    }

    /// The events until NONE, and every byte each OUTPUT let out (the
    /// socket takes all).
    fn drain(hub: *mut limen_hub, now: u64) -> (Vec<(limen_hub_event_kind, u64)>, Vec<u8>) {
        let (mut events, mut written) = (Vec::new(), Vec::new());
        loop {
            let mut ev = limen_hub_event {
                kind: limen_hub_event_kind::LIMEN_HUB_EVENT_NONE,
                conn: 0,
            };
            // SAFETY: live handle, valid output.
            assert_eq!(
                unsafe { limen_hub_poll_event(hub, &mut ev) },
                LIMEN_RESULT_OK
            );
            if ev.kind == limen_hub_event_kind::LIMEN_HUB_EVENT_NONE {
                return (events, written);
            }
            events.push((ev.kind, ev.conn));
            if ev.kind == limen_hub_event_kind::LIMEN_HUB_EVENT_OUTPUT {
                loop {
                    let mut out = limen_str::EMPTY;
                    // SAFETY: live handle, valid output.
                    let r = unsafe { limen_hub_pending_output(hub, ev.conn, &mut out) };
                    assert_eq!(r, LIMEN_RESULT_OK);
                    let bytes = lent(out);
                    if bytes.is_empty() {
                        break;
                    }
                    written.extend_from_slice(&bytes);
                    // SAFETY: live handle.
                    let r = unsafe { limen_hub_consume_output(hub, now, ev.conn, bytes.len()) };
                    assert_eq!(r, LIMEN_RESULT_OK);
                }
            }
        }
    }

    /// Server frames (unmasked, RFC 6455 § 5.1) as (opcode, payload).
    fn server_frames(mut b: &[u8]) -> Vec<(u8, Vec<u8>)> {
        let mut out = Vec::new();
        while b.len() >= 2 {
            assert_eq!(b[1] & 0x80, 0, "a server frame is not masked");
            let (len, at) = match b[1] & 0x7f {
                126 => (usize::from(u16::from_be_bytes([b[2], b[3]])), 4),
                n => (usize::from(n), 2),
            };
            out.push((b[0] & 0x0f, b[at..at + len].to_vec()));
            b = &b[at + len..];
        }
        out
    }

    fn json(b: &[u8]) -> serde_json::Value {
        serde_json::from_slice(b).unwrap()
    }

    #[test]
    fn the_witness_hub_upgrades_subscribes_publishes_and_closes_at_stop() {
        let hub = fills();
        let mut written = 0;
        let mut id = [0u8; 128];
        // SAFETY: live handle, valid buffer and output.
        let r = unsafe { limen_hub_identity(hub, id.as_mut_ptr(), id.len(), &mut written) };
        assert_eq!(r, LIMEN_RESULT_OK);
        let id = std::str::from_utf8(&id[..written]).unwrap();
        assert!(id.starts_with("hub@") && id.ends_with("/fills"), "{id}");

        // SAFETY: live handle; an id in use is refused, one unknown not found.
        unsafe {
            assert_eq!(limen_hub_accept(hub, 0, 7), LIMEN_RESULT_OK);
            assert_eq!(limen_hub_accept(hub, 0, 7), LIMEN_RESULT_INVALID_ARGUMENT);
            assert_eq!(limen_hub_handle_eof(hub, 0, 8), LIMEN_RESULT_NOT_FOUND);
        }
        // RFC 6455 § 1.3's sample key, and its accept.
        let upgrade = "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
            Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
            Authorization: Bearer t-dave\r\n\r\n";
        // SAFETY: live handle, valid bytes.
        let r = unsafe { limen_hub_handle_data(hub, 1, 0, 7, upgrade.as_ptr(), upgrade.len()) };
        assert_eq!(r, LIMEN_RESULT_OK);
        let (events, out) = drain(hub, 1);
        assert_eq!(events, [(limen_hub_event_kind::LIMEN_HUB_EVENT_OUTPUT, 7)]);
        let head = String::from_utf8(out).unwrap();
        assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
        assert!(head.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"));
        // SAFETY: live handle.
        assert_eq!(unsafe { limen_hub_connections(hub) }, 1);

        let sub = client_text(r#"{"type":"subscribe","topic":"Fills"}"#);
        // SAFETY: live handle, valid bytes.
        let r = unsafe { limen_hub_handle_data(hub, 2, 0, 7, sub.as_ptr(), sub.len()) };
        assert_eq!(r, LIMEN_RESULT_OK);
        let (_, out) = drain(hub, 2);
        let frames = server_frames(&out);
        assert_eq!(frames.len(), 1);
        assert_eq!(frames[0].0, 0x1);
        assert_eq!(
            json(&frames[0].1),
            serde_json::json!({"type": "subscribed", "topic": "Fills"})
        );
        // SAFETY: live handle.
        assert_eq!(unsafe { limen_hub_subscribers(hub) }, 1);

        let fill = r#"{"order":41,"qty":10,"price":12500}"#;
        let mut offered = 0;
        // SAFETY: live handle, valid strings and output.
        unsafe {
            let r = limen_hub_publish(hub, 3, c"Fills".as_ptr(), b"{".as_ptr(), 1, &mut offered);
            assert_eq!(r, LIMEN_RESULT_INVALID_ARGUMENT);
            let r = limen_hub_publish(
                hub,
                3,
                c"Quotes".as_ptr(),
                fill.as_ptr(),
                fill.len(),
                ptr::null_mut(),
            );
            assert_eq!(r, LIMEN_RESULT_NOT_FOUND);
            let r = limen_hub_publish(
                hub,
                3,
                c"Fills".as_ptr(),
                fill.as_ptr(),
                fill.len(),
                &mut offered,
            );
            assert_eq!((r, offered), (LIMEN_RESULT_OK, 1));
            assert_eq!(limen_hub_events(hub), 1);
        }
        let (_, out) = drain(hub, 3);
        let frames = server_frames(&out);
        assert_eq!(
            json(&frames[0].1),
            serde_json::json!({"type": "event", "topic": "Fills", "seq": 1,
                               "payload": {"order": 41, "qty": 10, "price": 12500}})
        );

        // stop(): `closed`, then the close frame with 1001 (going away);
        // nothing more is published.
        // SAFETY: live handle, valid strings.
        unsafe {
            assert_eq!(limen_hub_stop(hub, 4), LIMEN_RESULT_OK);
            let r = limen_hub_publish(
                hub,
                4,
                c"Fills".as_ptr(),
                fill.as_ptr(),
                fill.len(),
                ptr::null_mut(),
            );
            assert_eq!(r, LIMEN_RESULT_INVALID_STATE);
        }
        let (_, out) = drain(hub, 4);
        let frames = server_frames(&out);
        assert_eq!(frames.len(), 2, "{frames:?}");
        assert_eq!(
            json(&frames[0].1),
            serde_json::json!({"type": "closed", "reason": "shutting_down"})
        );
        assert_eq!(frames[1].0, 0x8);
        assert_eq!(frames[1].1[..2], 1001u16.to_be_bytes());
        // SAFETY: live handle.
        assert!(!unsafe { limen_hub_is_finished(hub) });
        // The peer answers the close: the connection is done, the id free.
        let mut close = vec![0x88, 0x82, 1, 2, 3, 4];
        close.extend(
            1001u16
                .to_be_bytes()
                .iter()
                .zip([1u8, 2])
                .map(|(b, k)| b ^ k),
        );
        // SAFETY: live handle, valid bytes.
        let r = unsafe { limen_hub_handle_data(hub, 5, 0, 7, close.as_ptr(), close.len()) };
        assert_eq!(r, LIMEN_RESULT_OK);
        let (events, _) = drain(hub, 5);
        assert!(
            events.contains(&(limen_hub_event_kind::LIMEN_HUB_EVENT_CLOSE, 7)),
            "{events:?}"
        );
        // SAFETY: live handle; freed once.
        unsafe {
            assert!(limen_hub_is_finished(hub));
            assert_eq!(limen_hub_accept(hub, 6, 7), LIMEN_RESULT_OK);
            limen_hub_free(hub);
        }
    }
}

mod ws_codec {
    use super::*;
    use limen_ffi::ws::*;

    /// A client frame (RFC 6455 § 5.2): FIN, `opcode`, masked.
    fn client_frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
        let key = [0x12, 0x9a, 0x00, 0xfe];
        let mut f = vec![0x80 | opcode, 0x80 | u8::try_from(payload.len()).unwrap()];
        f.extend_from_slice(&key);
        f.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
        f
    }

    fn feed(conn: *mut limen_ws_conn, bytes: &[u8]) {
        // SAFETY: live handle, valid bytes.
        let r = unsafe { limen_ws_conn_handle_data(conn, 0, bytes.as_ptr(), bytes.len()) };
        assert_eq!(r, LIMEN_RESULT_OK);
    }

    /// The next event's kind, data (or reason) and code, copied.
    fn next(conn: *mut limen_ws_conn) -> (limen_ws_event_kind, Vec<u8>, u16) {
        let mut ev = std::mem::MaybeUninit::<limen_ws_event>::uninit();
        // SAFETY: live handle, valid output; the event's bytes are read
        // before the next call.
        unsafe {
            assert_eq!(
                limen_ws_conn_poll_event(conn, ev.as_mut_ptr()),
                LIMEN_RESULT_OK
            );
            let ev = ev.assume_init();
            let bytes = if ev.kind == limen_ws_event_kind::LIMEN_WS_EVENT_CLOSED {
                lent(ev.reason)
            } else {
                lent(ev.data)
            };
            (ev.kind, bytes, ev.code)
        }
    }

    /// Takes every pending byte.
    fn written(conn: *mut limen_ws_conn) -> Vec<u8> {
        let mut out = limen_str::EMPTY;
        // SAFETY: live handle, valid output.
        unsafe {
            assert_eq!(
                limen_ws_conn_pending_output(conn, &mut out),
                LIMEN_RESULT_OK
            );
            let bytes = lent(out);
            let r = limen_ws_conn_consume_output(conn, 0, bytes.len());
            assert_eq!(r, LIMEN_RESULT_OK);
            bytes
        }
    }

    #[test]
    fn the_accept_key_is_rfc_6455s() {
        let key = "dGhlIHNhbXBsZSBub25jZQ==";
        let (r, accept) = grow(|buf, cap, w| {
            // SAFETY: valid key, buffer and output.
            unsafe { limen_ws_accept_key(key.as_ptr(), key.len(), buf, cap, w) }
        });
        assert_eq!(r, LIMEN_RESULT_OK);
        assert_eq!(accept, b"s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    }

    #[test]
    fn a_message_is_read_answered_and_the_close_handshake_ends_it() {
        let mut conn = ptr::null_mut();
        // SAFETY: valid output.
        let r = unsafe { limen_ws_conn_new(limen_ws_limits_default(), &mut conn) };
        assert_eq!(r, LIMEN_RESULT_OK);
        feed(conn, &client_frame(0x1, "héllo".as_bytes()));
        let (kind, data, _) = next(conn);
        assert_eq!(kind, limen_ws_event_kind::LIMEN_WS_EVENT_TEXT);
        assert_eq!(data, "héllo".as_bytes());
        assert_eq!(next(conn).0, limen_ws_event_kind::LIMEN_WS_EVENT_NONE);
        // A ping is answered by a pong carrying its payload (§ 5.5.2).
        feed(conn, &client_frame(0x9, b"p"));
        assert_eq!(written(conn), [0x8a, 1, b'p']);
        // SAFETY: live handle; text that is not UTF-8 is refused, sending
        // nothing.
        unsafe {
            let bad = [0xff];
            let r = limen_ws_conn_send_text(conn, 0, bad.as_ptr(), 1);
            assert_eq!(r, LIMEN_RESULT_INVALID_ARGUMENT);
            let r = limen_ws_conn_send_text(conn, 0, b"ok".as_ptr(), 2);
            assert_eq!(r, LIMEN_RESULT_OK);
        }
        // Unmasked, one frame: FIN and text, length 2.
        assert_eq!(written(conn), [0x81, 2, b'o', b'k']);
        // SAFETY: live handle, valid reason.
        let r = unsafe { limen_ws_conn_close(conn, 0, 1000, b"bye".as_ptr(), 3) };
        assert_eq!(r, LIMEN_RESULT_OK);
        assert_eq!(written(conn), [0x88, 5, 0x03, 0xe8, b'b', b'y', b'e']);
        // SAFETY: live handle.
        assert!(!unsafe { limen_ws_conn_is_closed(conn) });
        // The peer's answer ends it.
        feed(conn, &client_frame(0x8, &1000u16.to_be_bytes()));
        assert_eq!(
            next(conn),
            (limen_ws_event_kind::LIMEN_WS_EVENT_CLOSED, Vec::new(), 1000)
        );
        // SAFETY: live handle; freed once.
        unsafe {
            assert!(limen_ws_conn_is_closed(conn));
            limen_ws_conn_free(conn);
        }
    }

    #[test]
    fn binary_is_refused_1003_unless_the_limits_take_it() {
        for binary in [false, true] {
            let mut conn = ptr::null_mut();
            let limits = limen_ws_limits {
                binary,
                ..limen_ws_limits_default()
            };
            // SAFETY: valid output.
            assert_eq!(
                unsafe { limen_ws_conn_new(limits, &mut conn) },
                LIMEN_RESULT_OK
            );
            feed(conn, &client_frame(0x2, &[0, 1, 2]));
            let (kind, data, code) = next(conn);
            if binary {
                assert_eq!(kind, limen_ws_event_kind::LIMEN_WS_EVENT_BINARY);
                assert_eq!(data, [0, 1, 2]);
            } else {
                assert_eq!(
                    (kind, code),
                    (limen_ws_event_kind::LIMEN_WS_EVENT_CLOSED, 1003)
                );
                // Its close frame goes out as the event is taken.
                assert_eq!(written(conn)[..4], [0x88, written_len(&data), 0x03, 0xeb]);
            }
            // SAFETY: freed once.
            unsafe { limen_ws_conn_free(conn) };
        }
    }

    /// A close frame's payload length: the code and the reason.
    fn written_len(reason: &[u8]) -> u8 {
        u8::try_from(2 + reason.len().min(123)).unwrap()
    }
}
