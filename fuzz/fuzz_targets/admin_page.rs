//! `hale admin`'s page as the core reads it (`core/src/wire/admin.rs`):
//! the input as a browser's (or an attacker's) bytes, read by the HTTP/1.1
//! machine, each request then judged by the gate, routed, and a call's body
//! read.
//!
//! Checks: no panic; the gate admits a request only when a `Cookie` header
//! carries the page's cookie with the token, on the page's own Host, from
//! no foreign Origin (an independent reading of the rule, below); a launch
//! only for `GET /?token=<the token>`; a refusal never spells the token;
//! a route is one of the page's, and a call it reads names a member that
//! is an identifier path (nothing that could break a request line).
#![no_main]

use libfuzzer_sys::fuzz_target;
use limen_core::wire::admin::{parse_call, route, Gate, LaunchToken, Route, Verdict};
use limen_core::wire::http1::{HttpConn, HttpEvent, HttpRequest, Limits};
use limen_core::wire::machine::Machine;

const PORT: u16 = 7473;

fn token() -> LaunchToken {
    LaunchToken::from_bytes(&[0x5a; 32])
}

/// Whether the request carries the cookie, read independently: any
/// `Cookie` header, any `;`-separated pair whose trimmed name is the
/// page's and whose trimmed value is the token.
fn carries_cookie(r: &HttpRequest, token: &str) -> bool {
    let name = format!("hale-admin-{PORT}");
    r.headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("cookie"))
        .any(|(_, v)| {
            String::from_utf8_lossy(v).split(';').any(|pair| {
                pair.split_once('=')
                    .is_some_and(|(k, val)| k.trim() == name && val.trim() == token)
            })
        })
}

fn judge(gate: &Gate, r: &HttpRequest) {
    let token = token();
    let verdict = gate.check(r);
    let host_ok = r.header("host") == Some(format!("127.0.0.1:{PORT}").as_bytes());
    let origin_ok = r
        .header("origin")
        .is_none_or(|o| o == format!("http://127.0.0.1:{PORT}").as_bytes());
    match &verdict {
        Verdict::Admitted => {
            assert!(host_ok && origin_ok, "{r:?}");
            assert!(carries_cookie(r, token.as_str()), "{r:?}");
        }
        Verdict::Launch { set_cookie } => {
            assert!(host_ok && origin_ok && r.method == "GET", "{r:?}");
            assert_eq!(r.target, format!("/?token={}", token.as_str()));
            assert!(set_cookie.contains("HttpOnly") && set_cookie.contains("SameSite=Strict"));
        }
        Verdict::Refused(why) => assert!(!why.contains(token.as_str()), "{why}"),
    }
    if verdict != Verdict::Admitted {
        return;
    }
    match route(r) {
        Route::Call => {
            if let Ok(call) = parse_call(r) {
                assert!(call
                    .member
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':'));
            }
        }
        Route::Stream { topic } => assert!(!topic.is_empty()),
        Route::Error(status, _) => assert!(matches!(status, 400 | 404 | 405)),
        Route::Page | Route::Script | Route::Style | Route::Description => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let gate = Gate::new(PORT, token());
    // The input as sent, and with the page's cookie and Host spliced in
    // after the request line, so the paths past the gate are reached.
    let mut admitted = Vec::new();
    if let Some(end) = data.windows(2).position(|w| w == b"\r\n") {
        admitted.extend_from_slice(&data[..end + 2]);
        admitted.extend_from_slice(
            format!(
                "Host: 127.0.0.1:{PORT}\r\nCookie: hale-admin-{PORT}={}\r\n",
                token().as_str()
            )
            .as_bytes(),
        );
        admitted.extend_from_slice(&data[end + 2..]);
    }
    for input in [data, &admitted[..]] {
        let mut conn = HttpConn::new(0, Limits::default());
        conn.handle_data(0, input);
        conn.handle_eof(0);
        while let Some(event) = conn.poll_event() {
            match event {
                HttpEvent::Request(r) => judge(&gate, &r),
                HttpEvent::Malformed { head: Some(r), .. } => {
                    // A malformed request is answered 400 before the gate;
                    // the gate must still take its head without panicking.
                    let _ = gate.check(&r);
                }
                _ => {}
            }
        }
    }
});
