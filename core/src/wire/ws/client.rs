//! The client's side of RFC 6455, as `hale watch` speaks to a hub: the
//! upgrade request and the check of its answer, masked frames out,
//! unmasked server frames in. Sans-I/O: the nonce and every mask come in
//! as arguments (the driver draws them), so a recording replays.

use base64::Engine as _;

use super::{accept_key, OP_CLOSE, OP_PING, OP_PONG, OP_TEXT};
use crate::wire::http1::client::{Limits, ResponseReader};

/// The `Sec-WebSocket-Key` of a 16-byte nonce.
pub fn key(nonce: [u8; 16]) -> String {
    base64::engine::general_purpose::STANDARD.encode(nonce)
}

/// The upgrade request for `path` at `host`, with `key` and, when given,
/// the credential as `Authorization: Bearer`.
pub fn upgrade_request(host: &str, path: &str, key: &str, bearer: Option<&str>) -> Vec<u8> {
    let mut r = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: {key}\r\n"
    );
    if let Some(token) = bearer {
        r.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    r.push_str("\r\n");
    r.into_bytes()
}

/// Reads the answer to an upgrade: `Ok(Some(n))` once its head (`n`
/// bytes) is whole and is a 101 carrying the accept key of `key`, `Ok(None)`
/// while it is partial, or why the upgrade failed. The head is read by the
/// one HTTP/1.1 response reader ([`ResponseReader`]); a status other than
/// 101 is refused at its head, whatever body may follow.
pub fn upgrade_answer(bytes: &[u8], key: &str) -> Result<Option<usize>, String> {
    let mut reader = ResponseReader::new("GET", Limits::default());
    reader
        .handle_data(bytes)
        .map_err(|e| format!("the answer is not an HTTP response: {e}"))?;
    let Some(head) = reader.head() else {
        return Ok(None);
    };
    if head.status != 101 {
        return Err(format!("the upgrade was answered {}, not 101", head.status));
    }
    let accept = head
        .header("sec-websocket-accept")
        .map(|v| String::from_utf8_lossy(v).trim().to_owned());
    if accept.as_deref() != Some(accept_key(key).as_str()) {
        return Err("the answer's Sec-WebSocket-Accept is not the key's".into());
    }
    // A 101 is final: what follows its head is the new protocol's.
    Ok(Some(bytes.len() - reader.take_rest().len()))
}

/// One final masked frame of `opcode` carrying `payload`, masked with
/// `mask`.
fn masked(opcode: u8, payload: &[u8], mask: [u8; 4]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 14);
    out.push(0x80 | opcode);
    let len = payload.len();
    if len < 126 {
        out.push(0x80 | len as u8);
    } else if len <= usize::from(u16::MAX) {
        out.push(0x80 | 126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0x80 | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    out.extend_from_slice(&mask);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    out
}

/// A text message, masked with `mask`.
pub fn text(text: &str, mask: [u8; 4]) -> Vec<u8> {
    masked(OP_TEXT, text.as_bytes(), mask)
}

/// A close frame with `code`, masked with `mask`.
pub fn close(code: u16, mask: [u8; 4]) -> Vec<u8> {
    masked(OP_CLOSE, &code.to_be_bytes(), mask)
}

/// A pong answering a ping's `payload`, masked with `mask`.
pub fn pong(payload: &[u8], mask: [u8; 4]) -> Vec<u8> {
    masked(OP_PONG, payload, mask)
}

/// A frame a server sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerFrame {
    /// A text message.
    Text(String),
    /// A ping, to answer with a pong of its payload.
    Ping(Vec<u8>),
    /// A pong.
    Pong,
    /// The server's close, with its code (1005 when it gave none).
    Close(u16),
}

/// Reads a server's frames from bytes in any split. A server's frame is
/// unmasked; a fragmented message, a binary one or a masked frame is a
/// protocol error here (a hub sends none).
#[derive(Debug, Default)]
pub struct ServerReader {
    buf: Vec<u8>,
}

impl ServerReader {
    /// Takes bytes read.
    pub fn handle_data(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    /// The next whole frame, `None` until one is, or what is wrong.
    pub fn poll_frame(&mut self) -> Result<Option<ServerFrame>, String> {
        let b = &self.buf;
        if b.len() < 2 {
            return Ok(None);
        }
        if b[0] & 0x80 == 0 || b[0] & 0x70 != 0 {
            return Err("a fragmented frame, or one with a reserved bit".into());
        }
        if b[1] & 0x80 != 0 {
            return Err("a server's frame is not masked".into());
        }
        let (len, at) = match b[1] & 0x7f {
            126 if b.len() >= 4 => (u64::from(u16::from_be_bytes([b[2], b[3]])), 4),
            127 if b.len() >= 10 => (u64::from_be_bytes(b[2..10].try_into().expect("8")), 10),
            126 | 127 => return Ok(None),
            n => (u64::from(n), 2),
        };
        let Ok(len) = usize::try_from(len) else {
            return Err("a frame too long".into());
        };
        if b.len() < at + len {
            return Ok(None);
        }
        let payload = b[at..at + len].to_vec();
        let opcode = b[0] & 0x0f;
        self.buf.drain(..at + len);
        Ok(Some(match opcode {
            OP_TEXT => ServerFrame::Text(
                String::from_utf8(payload).map_err(|_| "a text message that is not UTF-8")?,
            ),
            OP_PING => ServerFrame::Ping(payload),
            OP_PONG => ServerFrame::Pong,
            OP_CLOSE if payload.len() >= 2 => {
                ServerFrame::Close(u16::from_be_bytes([payload[0], payload[1]]))
            }
            OP_CLOSE => ServerFrame::Close(super::close_code::NO_STATUS),
            other => return Err(format!("a frame of opcode {other:#x}")),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::http1::HttpRequest;
    use crate::wire::machine::Machine;
    use crate::wire::ws::{upgrade, Limits, WsConn, WsEvent};

    #[test]
    fn the_client_and_the_server_codec_read_each_other_in_any_split() {
        let key = key([7; 16]);
        let request = upgrade_request("h:1", "/", &key, Some("t-dave"));
        let mut headers = [httparse::EMPTY_HEADER; 16];
        let mut parsed = httparse::Request::new(&mut headers);
        parsed.parse(&request).unwrap();
        let request = HttpRequest {
            method: parsed.method.unwrap().into(),
            target: parsed.path.unwrap().into(),
            headers: parsed
                .headers
                .iter()
                .map(|h| (h.name.to_owned(), h.value.to_vec()))
                .collect(),
            body: Vec::new(),
        };
        assert_eq!(request.bearer().as_deref(), Some("t-dave"));
        let answer = upgrade(&request).unwrap();
        assert_eq!(upgrade_answer(&answer, &key), Ok(Some(answer.len())));
        assert_eq!(upgrade_answer(&answer[..10], &key), Ok(None));
        assert!(upgrade_answer(&answer, "other").is_err());

        let mut server = WsConn::new(Limits::default());
        let long = "x".repeat(70_000 / 2);
        server.handle_data(0, &text("{\"type\":\"subscribe\"}", [1, 2, 3, 4]));
        server.handle_data(0, &text(&long, [9, 8, 7, 6]));
        assert_eq!(
            server.poll_event(),
            Some(WsEvent::Text("{\"type\":\"subscribe\"}".into()))
        );
        assert_eq!(server.poll_event(), Some(WsEvent::Text(long.clone())));
        server.send_text(0, "hi");
        server.send_text(0, &long);
        server.close(0, 1001, "bye");
        let out = server.pending_output().to_vec();
        for split in [0, 1, 3, out.len() / 2, out.len()] {
            let mut reader = ServerReader::default();
            reader.handle_data(&out[..split]);
            let mut frames = Vec::new();
            while let Some(f) = reader.poll_frame().unwrap() {
                frames.push(f);
            }
            reader.handle_data(&out[split..]);
            while let Some(f) = reader.poll_frame().unwrap() {
                frames.push(f);
            }
            assert_eq!(
                frames,
                [
                    ServerFrame::Text("hi".into()),
                    ServerFrame::Text(long.clone()),
                    ServerFrame::Close(1001)
                ]
            );
        }
    }
}
