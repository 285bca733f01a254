//! The WebSocket codec (`core/src/wire/ws.rs`) against tungstenite 0.30's
//! frame parser, the differential oracle: the input's bytes (after a split
//! byte) fed in pieces, and the same bytes read frame by frame by
//! tungstenite's `FrameHeader::parse` under the hub's rules (masked, final,
//! text or control, at most 64 KiB, UTF-8).
//!
//! Checks: the text messages are the ones tungstenite reads, in order, up
//! to the first frame the rules refuse, where the codec closes (or up to a
//! close frame, or to the end of whole frames; a text frame cut where its
//! bytes so far can no longer be UTF-8 is refused at once); after `Closed`
//! no event; every frame the codec writes is unmasked, final and whole.
#![no_main]

use libfuzzer_sys::fuzz_target;
use limen_core::wire::machine::Machine;
use limen_core::wire::ws::{Limits, WsConn, WsEvent};
use tungstenite::protocol::frame::coding::{Control, Data, OpCode};
use tungstenite::protocol::frame::FrameHeader;

/// What tungstenite reads under the hub's rules: the texts before the end,
/// and whether the input ends in a close of either side (a refusal or the
/// peer's close frame) rather than a cut or the end of whole frames.
fn oracle(bytes: &[u8]) -> (Vec<String>, bool) {
    let mut texts = Vec::new();
    let mut cursor = std::io::Cursor::new(bytes);
    loop {
        let start = cursor.position();
        let Ok(Some((header, len))) = FrameHeader::parse(&mut cursor) else {
            // A header tungstenite refuses (a reserved opcode), or a cut
            // one, which the codec refuses already when its first two
            // bytes show a reserved bit or no mask.
            let rest = &bytes[start as usize..];
            let refused = FrameHeader::parse(&mut std::io::Cursor::new(rest)).is_err()
                || refused_before_the_mask(rest);
            return (texts, refused);
        };
        let control = matches!(header.opcode, OpCode::Control(_));
        let Some(mask) = header.mask else {
            return (texts, true);
        };
        if header.rsv1 || header.rsv2 || header.rsv3 {
            return (texts, true);
        }
        if control && (!header.is_final || len > 125) {
            return (texts, true);
        }
        if !control && (!header.is_final || header.opcode == OpCode::Data(Data::Continue)) {
            return (texts, true);
        }
        if len > 65536 {
            return (texts, true);
        }
        let at = cursor.position() as usize;
        if bytes.len() < at + len as usize {
            // Cut: refused only when the text so far can no longer be
            // UTF-8 (the codec fails fast, RFC 6455 § 8.1).
            let so_far: Vec<u8> = bytes[at.min(bytes.len())..]
                .iter()
                .enumerate()
                .map(|(i, b)| b ^ mask[i % 4])
                .collect();
            let invalid = header.opcode == OpCode::Data(Data::Text)
                && std::str::from_utf8(&so_far).is_err_and(|e| e.error_len().is_some());
            return (texts, invalid);
        }
        let payload: Vec<u8> = bytes[at..at + len as usize]
            .iter()
            .enumerate()
            .map(|(i, b)| b ^ mask[i % 4])
            .collect();
        cursor.set_position((at + len as usize) as u64);
        match header.opcode {
            OpCode::Data(Data::Text) => match String::from_utf8(payload) {
                Ok(t) => texts.push(t),
                Err(_) => return (texts, true),
            },
            OpCode::Control(Control::Close) => return (texts, true),
            OpCode::Data(_) => return (texts, true),
            _ => {}
        }
    }
}

/// Whether a header cut before its mask key already breaks the rules in
/// what it shows (the codec refuses as early as it can): a reserved bit or
/// opcode, no mask, and once the length is known, a control frame not final or
/// over 125 bytes, a fragment, a message over 64 KiB, a 64-bit length with
/// its top bit set.
fn refused_before_the_mask(rest: &[u8]) -> bool {
    if rest.len() < 2 {
        return false;
    }
    let fin = rest[0] & 0x80 != 0;
    let opcode = rest[0] & 0x0f;
    let reserved = !matches!(opcode, 0x0 | 0x1 | 0x2 | 0x8 | 0x9 | 0xa);
    if rest[0] & 0x70 != 0 || reserved || rest[1] & 0x80 == 0 {
        return true;
    }
    let extra = match rest[1] & 0x7f {
        126 => 2,
        127 => 8,
        _ => 0,
    };
    if rest.len() < 2 + extra {
        return false;
    }
    let len = match extra {
        2 => u64::from(u16::from_be_bytes([rest[2], rest[3]])),
        8 => u64::from_be_bytes(rest[2..10].try_into().unwrap()),
        _ => u64::from(rest[1] & 0x7f),
    };
    let control = opcode & 0x8 != 0;
    len >> 63 != 0
        || (control && (!fin || len > 125))
        || (!control && (!fin || opcode == 0))
        || len > 65536
}

fuzz_target!(|data: &[u8]| {
    let Some((&split, data)) = data.split_first() else {
        return;
    };
    let piece = usize::from(split % 64) + 1;
    let mut conn = WsConn::new(Limits::default());
    let mut events = Vec::new();
    for chunk in data.chunks(piece) {
        conn.handle_data(0, chunk);
        events.extend(std::iter::from_fn(|| conn.poll_event()));
    }
    let closed_at = events
        .iter()
        .position(|e| matches!(e, WsEvent::Closed { .. }));
    if let Some(at) = closed_at {
        assert_eq!(at, events.len() - 1, "an event after Closed: {events:?}");
    }
    let texts: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            WsEvent::Text(t) => Some(t.clone()),
            _ => None,
        })
        .collect();
    let (want, ends_closed) = oracle(data);
    assert_eq!(texts, want);
    assert_eq!(closed_at.is_some(), ends_closed, "{events:?}");
    // Output: unmasked, final, whole frames.
    let out = conn.pending_output();
    let mut cursor = std::io::Cursor::new(out);
    while (cursor.position() as usize) < out.len() {
        let (header, len) = FrameHeader::parse(&mut cursor)
            .expect("a frame tungstenite reads")
            .expect("a whole header");
        assert!(header.mask.is_none() && header.is_final);
        let end = cursor.position() + len;
        assert!(end as usize <= out.len(), "a cut frame");
        cursor.set_position(end);
    }
});
