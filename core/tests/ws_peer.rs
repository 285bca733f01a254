//! The WebSocket codec held to tungstenite 0.30, the differential oracle
//! the issue names: client frames tungstenite writes (masked, of every
//! length form) are read as tungstenite means them, in any split; what the
//! codec writes tungstenite reads back as the same messages; and the
//! accept key is tungstenite's.

use limen_core::wire::machine::Machine;
use limen_core::wire::ws::{accept_key, Limits, WsConn, WsEvent};
use tungstenite::protocol::frame::coding::{Control, Data, OpCode};
use tungstenite::protocol::frame::{Frame, FrameHeader};

/// SplitMix64.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Text of `len` characters, some of them multi-byte.
fn text(rng: &mut Rng, len: usize) -> String {
    let pool = ['a', '{', '"', 'é', '日', '🦀', ' ', '\n'];
    (0..len)
        .map(|_| pool[(rng.next() % pool.len() as u64) as usize])
        .collect()
}

/// tungstenite's bytes of a client frame, masked with `mask`.
fn client_frame(opcode: OpCode, payload: &[u8], mask: [u8; 4]) -> Vec<u8> {
    let mut frame = match opcode {
        OpCode::Control(Control::Ping) => Frame::ping(payload.to_vec()),
        _ => Frame::message(payload.to_vec(), opcode, true),
    };
    frame.header_mut().mask = Some(mask);
    let mut out = Vec::new();
    frame.format(&mut out).unwrap();
    out
}

#[test]
fn client_frames_tungstenite_writes_are_read_as_it_means_them() {
    let mut rng = Rng(7);
    for round in 0..200 {
        let mut input = Vec::new();
        let mut want = Vec::new();
        let mut pongs = Vec::new();
        for _ in 0..(1 + rng.next() % 5) {
            let mask = (rng.next() as u32).to_be_bytes();
            if rng.next() % 4 == 0 {
                let payload: Vec<u8> = (0..rng.next() % 126).map(|_| rng.next() as u8).collect();
                input.extend(client_frame(OpCode::Control(Control::Ping), &payload, mask));
                pongs.push(payload);
            } else {
                // Lengths in each of the three forms: 7-bit, 16-bit, 64-bit.
                let len = match rng.next() % 3 {
                    0 => (rng.next() % 100) as usize,
                    1 => 126 + (rng.next() % 2000) as usize,
                    _ => 16_000 + (rng.next() % 2000) as usize,
                };
                let t = text(&mut rng, len);
                if t.len() > 65536 {
                    continue;
                }
                input.extend(client_frame(OpCode::Data(Data::Text), t.as_bytes(), mask));
                want.push(WsEvent::Text(t));
            }
        }
        let mut conn = WsConn::new(Limits::default());
        let mut at = 0;
        while at < input.len() {
            let n = 1 + (rng.next() % 4096) as usize;
            let end = (at + n).min(input.len());
            conn.handle_data(0, &input[at..end]);
            at = end;
        }
        let got: Vec<WsEvent> = std::iter::from_fn(|| conn.poll_event()).collect();
        assert_eq!(got, want, "round {round}");
        // Each ping is answered by a pong with its payload, in order, and
        // tungstenite reads the pongs.
        let out = conn.pending_output().to_vec();
        let read = read_server_frames(&out);
        let got_pongs: Vec<Vec<u8>> = read
            .into_iter()
            .filter(|(op, _)| *op == OpCode::Control(Control::Pong))
            .map(|(_, p)| p)
            .collect();
        assert_eq!(got_pongs, pongs, "round {round}");
    }
}

/// The frames in `bytes` as tungstenite parses them: each unmasked, and
/// whole.
fn read_server_frames(bytes: &[u8]) -> Vec<(OpCode, Vec<u8>)> {
    let mut cursor = std::io::Cursor::new(bytes);
    let mut frames = Vec::new();
    while (cursor.position() as usize) < bytes.len() {
        let (header, len): (FrameHeader, u64) = FrameHeader::parse(&mut cursor)
            .unwrap()
            .expect("a whole header");
        assert!(header.mask.is_none(), "a server frame is never masked");
        assert!(header.is_final, "a server message is one frame");
        let start = cursor.position() as usize;
        let end = start + len as usize;
        frames.push((header.opcode, bytes[start..end].to_vec()));
        cursor.set_position(end as u64);
    }
    frames
}

#[test]
fn messages_the_codec_writes_tungstenite_reads_back() {
    let mut rng = Rng(11);
    let mut conn = WsConn::new(Limits::default());
    let mut sent = Vec::new();
    for len in [0, 1, 125, 126, 127, 65535, 65536, 70_000] {
        let t: String = text(&mut rng, len);
        conn.send_text(0, &t);
        sent.push(t);
    }
    conn.close(0, 1001, "stopping");
    let frames = read_server_frames(conn.pending_output());
    let texts: Vec<String> = frames
        .iter()
        .filter(|(op, _)| *op == OpCode::Data(Data::Text))
        .map(|(_, p)| String::from_utf8(p.clone()).unwrap())
        .collect();
    assert_eq!(texts, sent);
    let (op, close) = frames.last().unwrap();
    assert_eq!(*op, OpCode::Control(Control::Close));
    assert_eq!(&close[..2], 1001u16.to_be_bytes());
    assert_eq!(&close[2..], b"stopping");
}

#[test]
fn the_accept_key_is_tungstenites() {
    let mut rng = Rng(3);
    for _ in 0..50 {
        let nonce: Vec<u8> = (0..16).map(|_| rng.next() as u8).collect();
        use base64::Engine as _;
        let key = base64::engine::general_purpose::STANDARD.encode(&nonce);
        assert_eq!(
            accept_key(&key),
            tungstenite::handshake::derive_accept_key(key.as_bytes())
        );
    }
}
