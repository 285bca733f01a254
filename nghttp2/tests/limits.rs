//! The session's bounds on what a peer sends (issue 26): a header list
//! counted as decoded (an HPACK bomb, with and without END_HEADERS), a
//! budget of frames that make no progress, and the reset after an early
//! response. Hand-written frames, so each attack is exactly the one named.

use limen_nghttp2::{code, H2Event, Limits, Session};

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const DATA: u8 = 0;
const HEADERS: u8 = 1;
const RST_STREAM: u8 = 3;
const SETTINGS: u8 = 4;
const GOAWAY: u8 = 7;
const WINDOW_UPDATE: u8 = 8;
const CONTINUATION: u8 = 9;
const END_STREAM: u8 = 1;
const END_HEADERS: u8 = 4;
const SECOND: u64 = 1_000_000_000;

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = (payload.len() as u32).to_be_bytes()[1..].to_vec();
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

fn frames(mut bytes: &[u8]) -> Vec<(u8, u8, u32, Vec<u8>)> {
    let mut out = Vec::new();
    while bytes.len() >= 9 {
        let len = u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]]) as usize;
        let stream = u32::from_be_bytes(bytes[5..9].try_into().unwrap()) & 0x7fff_ffff;
        out.push((bytes[3], bytes[4], stream, bytes[9..9 + len].to_vec()));
        bytes = &bytes[9 + len..];
    }
    out
}

fn int(out: &mut Vec<u8>, prefix_bits: u8, first: u8, mut n: usize) {
    let max = (1usize << prefix_bits) - 1;
    if n < max {
        out.push(first | n as u8);
        return;
    }
    out.push(first | max as u8);
    n -= max;
    while n >= 128 {
        out.push((n % 128) as u8 | 0x80);
        n /= 128;
    }
    out.push(n as u8);
}

/// A request's pseudo-headers, literal without indexing.
fn head() -> Vec<u8> {
    let mut out = Vec::new();
    for (n, v) in [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/S/m"),
        (":authority", "x"),
    ] {
        out.push(0);
        int(&mut out, 7, 0, n.len());
        out.extend_from_slice(n.as_bytes());
        int(&mut out, 7, 0, v.len());
        out.extend_from_slice(v.as_bytes());
    }
    out
}

/// The HPACK bomb: one field of 4000 bytes put in the dynamic table
/// (literal with incremental indexing), then `refs` one-byte references to
/// it (index 62, the newest dynamic entry), each decoding to 4033 bytes.
fn bomb(refs: usize) -> Vec<u8> {
    let mut out = head();
    out.push(0x40);
    int(&mut out, 7, 0, 1);
    out.push(b'x');
    int(&mut out, 7, 0, 4000);
    out.extend(std::iter::repeat_n(b'a', 4000));
    out.extend(std::iter::repeat_n(0xbe, refs));
    out
}

fn server() -> Session {
    let mut s = Session::server(Limits::default()).unwrap();
    s.handle_data(0, PREFACE).unwrap();
    s.handle_data(0, &frame(SETTINGS, 0, 0, &[])).unwrap();
    s
}

/// Everything the session has to write, written.
fn written(s: &mut Session) -> Vec<u8> {
    let mut all = Vec::new();
    loop {
        let out = {
            s.flush().unwrap();
            s.pending_output()
        }
        .to_vec();
        if out.is_empty() {
            return all;
        }
        s.consume_output(0, out.len());
        all.extend(out);
    }
}

fn events(s: &mut Session) -> Vec<H2Event> {
    std::iter::from_fn(|| s.poll_event()).collect()
}

#[test]
fn an_hpack_bomb_is_refused_by_its_decoded_size_not_kept() {
    let mut s = server();
    // 16,000 references: 16 KB on the wire, 64 MB decoded.
    let block = bomb(16_000);
    s.handle_data(0, &frame(HEADERS, 0, 1, &block[..16_000]))
        .unwrap();
    let _ = s.handle_data(0, &frame(CONTINUATION, END_HEADERS, 1, &block[16_000..]));
    let got = events(&mut s);
    assert_eq!(
        got,
        vec![H2Event::HeadersTooLarge {
            stream: 1,
            end_stream: false
        }],
        "{got:?}"
    );
    assert_eq!(s.header_bytes_held(), 0);
    // The connection is usable: the next request is read whole.
    let mut ok = head();
    ok.push(0xbe); // the bomb's entry is in the table: HPACK stayed in step
    s.handle_data(0, &frame(HEADERS, END_HEADERS | END_STREAM, 3, &ok))
        .unwrap();
    let got = events(&mut s);
    assert!(
        matches!(&got[..], [H2Event::Headers { stream: 3, fields, end_stream: true }]
            if fields.last().is_some_and(|(n, v)| n == b"x" && v.len() == 4000)),
        "{got:?}"
    );
}

#[test]
fn an_hpack_bomb_left_without_end_headers_holds_at_most_the_limit() {
    let mut s = server();
    let limit = Limits::default().max_header_list_size as usize;
    let block = bomb(16_000);
    // HEADERS and CONTINUATION, never END_HEADERS: the block stays open.
    s.handle_data(0, &frame(HEADERS, 0, 1, &block[..12_000]))
        .unwrap();
    let held = s.header_bytes_held();
    assert!(held <= limit, "{held} bytes held, over {limit}");
    let _ = s.handle_data(0, &frame(CONTINUATION, 0, 1, &block[12_000..]));
    let held = s.header_bytes_held();
    assert!(held <= limit, "{held} bytes held, over {limit}");
    assert!(events(&mut s).is_empty());
}

#[test]
fn a_window_update_flood_is_goaway_enhance_your_calm() {
    let mut s = server();
    written(&mut s);
    let one = frame(WINDOW_UPDATE, 0, 0, &1u32.to_be_bytes());
    let burst = Limits::default().unproductive_burst as usize;
    let flood: Vec<u8> = one.repeat(burst + 10);
    let failed = s.handle_data(SECOND, &flood);
    assert!(
        failed.is_err(),
        "a flood of {} frames was taken",
        burst + 10
    );
    let out = written(&mut s);
    let goaway = frames(&out)
        .into_iter()
        .find(|f| f.0 == GOAWAY)
        .unwrap_or_else(|| panic!("no GOAWAY: {:?}", frames(&out)));
    assert_eq!(
        u32::from_be_bytes(goaway.3[4..8].try_into().unwrap()),
        code::ENHANCE_YOUR_CALM
    );
    // And nothing more is read.
    assert!(s.handle_data(SECOND, &one).is_err());
}

#[test]
fn window_updates_at_a_steady_pace_or_beside_requests_are_not_a_flood() {
    let mut s = server();
    let one = frame(WINDOW_UPDATE, 0, 0, &1u32.to_be_bytes());
    let per_second = Limits::default().unproductive_per_second as u64;
    // Ten minutes of the refill rate, a frame at a time.
    for i in 0..per_second * 600 {
        s.handle_data(i * SECOND / per_second, &one).unwrap();
    }
    // Each request (HEADERS, DATA) earns back what its frames cost.
    let now = 700 * SECOND;
    for i in 0..3000u32 {
        let stream = 2 * i + 1;
        s.handle_data(now, &frame(HEADERS, END_HEADERS, stream, &head()))
            .unwrap();
        s.handle_data(now, &frame(DATA, END_STREAM, stream, b"x"))
            .unwrap();
        s.handle_data(now, &one).unwrap();
        s.handle_data(now, &frame(RST_STREAM, 0, stream, &[0, 0, 0, 8]))
            .unwrap_or_else(|e| panic!("request {i}: {e}"));
        events(&mut s);
        written(&mut s);
    }
}

#[test]
fn an_answer_before_the_request_ends_resets_the_stream_no_error_after_it() {
    let mut s = server();
    s.handle_data(0, &frame(HEADERS, END_HEADERS, 1, &head()))
        .unwrap();
    events(&mut s);
    s.respond_headers_only(1, &[(b":status", b"200"), (b"grpc-status", b"8")])
        .unwrap();
    s.reset_after_response(1);
    let out = written(&mut s);
    let got: Vec<(u8, u8, u32)> = frames(&out)
        .into_iter()
        .filter(|f| f.2 == 1)
        .map(|f| (f.0, f.1, f.2))
        .collect();
    // The answer first, then the reset: never the reset alone.
    assert_eq!(
        got,
        vec![(HEADERS, END_HEADERS | END_STREAM, 1), (RST_STREAM, 0, 1)],
        "{out:02x?}"
    );
    let rst = frames(&out)
        .into_iter()
        .find(|f| f.0 == RST_STREAM)
        .unwrap();
    assert_eq!(rst.3, code::NO_ERROR.to_be_bytes());
    // DATA the peer still sends is a closed stream's: no event, no window
    // to open.
    events(&mut s);
    let _ = s.handle_data(0, &frame(DATA, 0, 1, &[0u8; 1000]));
    assert!(!events(&mut s)
        .iter()
        .any(|e| matches!(e, H2Event::Data { .. })),);
}

#[test]
fn hpack_bombs_one_after_another_are_goaway_enhance_your_calm() {
    let mut s = server();
    written(&mut s);
    let block = bomb(12_000);
    let mut ended = None;
    for i in 0..100u32 {
        let stream = 2 * i + 1;
        let sent = s.handle_data(SECOND, &frame(HEADERS, END_HEADERS, stream, &block));
        events(&mut s);
        if sent.is_err() {
            ended = Some(i);
            break;
        }
    }
    // Each costs a hundred frames' worth of the budget: the eleventh ends
    // the connection.
    let burst = Limits::default().unproductive_burst;
    assert_eq!(ended, Some(burst / 100), "bombs taken before GOAWAY");
    let out = written(&mut s);
    let goaway = frames(&out).into_iter().find(|f| f.0 == GOAWAY).unwrap();
    assert_eq!(
        u32::from_be_bytes(goaway.3[4..8].try_into().unwrap()),
        code::ENHANCE_YOUR_CALM
    );
}
