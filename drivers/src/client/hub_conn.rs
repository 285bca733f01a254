//! One client connection to a hub's listener (`ws://host:port`), as `hale
//! watch` and `hale mcp --app ws://…` speak it: the upgrade with the
//! credential, masked text frames out, the hub's frames in, a ping
//! answered. The WebSocket is the core's client codec
//! ([`limen_core::wire::ws::client`]); this file draws the nonce and the
//! masks and moves the bytes.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use limen_core::wire::ws::client::{self, ServerFrame, ServerReader};
use serde_json::Value;

/// Unpredictable bytes for the nonce and the masks (RFC 6455 § 5.3 asks
/// that a mask not be guessable): the process's random hasher keys, fed a
/// counter.
struct Entropy {
    state: RandomState,
    n: u64,
}

impl Entropy {
    fn next(&mut self) -> u64 {
        self.n += 1;
        let mut h = self.state.build_hasher();
        h.write_u64(self.n);
        h.finish()
    }

    fn mask(&mut self) -> [u8; 4] {
        let b = self.next().to_le_bytes();
        [b[0], b[1], b[2], b[3]]
    }

    fn nonce(&mut self) -> [u8; 16] {
        let mut out = [0; 16];
        out[..8].copy_from_slice(&self.next().to_le_bytes());
        out[8..].copy_from_slice(&self.next().to_le_bytes());
        out
    }
}

/// Why [`HubConn::next`] failed when the hub ended the connection (an EOF)
/// rather than a read failing.
pub(crate) const ENDED: &str = "the connection ended";

/// What the hub sent next.
pub(crate) enum Incoming {
    /// A text message: one of the hub's JSON frames.
    Text(String),
    /// The hub's close frame, with its code.
    Closed(u16),
}

/// Upgrades `stream` to a WebSocket on `path` with `key` (from
/// [`client::key`]), presenting `bearer` as `Authorization: Bearer`, and
/// reads until the hub's answer is whole, using `buf` for the reads. The
/// returned reader already holds whatever the hub sent past its answer,
/// so no frame written straight after the upgrade is lost. The caller
/// sets the stream's timeouts: a read that times out here fails the
/// upgrade. Shared by `hale`'s hub clients and the conformance checker's,
/// so both speak one handshake.
pub fn upgrade<S: Read + Write>(
    stream: &mut S,
    authority: &str,
    path: &str,
    key: &str,
    bearer: Option<&str>,
    buf: &mut [u8],
) -> Result<ServerReader, String> {
    stream
        .write_all(&client::upgrade_request(authority, path, key, bearer))
        .map_err(|e| e.to_string())?;
    let mut head = Vec::new();
    let rest = loop {
        let n = stream.read(buf).map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the connection ended during the upgrade".into());
        }
        head.extend_from_slice(&buf[..n]);
        if let Some(at) = client::upgrade_answer(&head, key)? {
            break head.split_off(at);
        }
    };
    let mut reader = ServerReader::default();
    reader.handle_data(&rest);
    Ok(reader)
}

/// An upgraded connection to a hub.
pub(crate) struct HubConn {
    stream: TcpStream,
    reader: ServerReader,
    entropy: Entropy,
    buf: Vec<u8>,
}

impl HubConn {
    /// Connects to `authority` (`host:port`) and upgrades, presenting
    /// `token` as `Authorization: Bearer`; `timeout` bounds each read and
    /// write when given.
    pub(crate) fn connect(
        authority: &str,
        token: Option<&str>,
        timeout: Option<Duration>,
    ) -> Result<HubConn, String> {
        let mut entropy = Entropy {
            state: RandomState::new(),
            n: 0,
        };
        let mut stream = TcpStream::connect(authority).map_err(|e| e.to_string())?;
        stream
            .set_read_timeout(timeout)
            .map_err(|e| e.to_string())?;
        stream
            .set_write_timeout(timeout)
            .map_err(|e| e.to_string())?;
        let key = client::key(entropy.nonce());
        let mut buf = vec![0u8; 64 * 1024];
        let reader = upgrade(&mut stream, authority, "/", &key, token, &mut buf)?;
        Ok(HubConn {
            stream,
            reader,
            entropy,
            buf,
        })
    }

    /// Sends one frame (a text message).
    pub(crate) fn send(&mut self, frame: &str) -> Result<(), String> {
        let bytes = client::text(frame, self.entropy.mask());
        self.stream.write_all(&bytes).map_err(|e| e.to_string())
    }

    /// The next text message or the close frame, answering pings on the
    /// way; `Err` when the connection ends or fails first.
    pub(crate) fn next(&mut self) -> Result<Incoming, String> {
        loop {
            while let Some(frame) = self.reader.poll_frame()? {
                match frame {
                    ServerFrame::Text(text) => return Ok(Incoming::Text(text)),
                    ServerFrame::Ping(payload) => {
                        let pong = client::pong(&payload, self.entropy.mask());
                        self.stream.write_all(&pong).map_err(|e| e.to_string())?;
                    }
                    ServerFrame::Pong => {}
                    ServerFrame::Close(code) => return Ok(Incoming::Closed(code)),
                }
            }
            let n = self.stream.read(&mut self.buf).map_err(|e| e.to_string())?;
            if n == 0 {
                return Err(ENDED.into());
            }
            self.reader.handle_data(&self.buf[..n]);
        }
    }

    /// A second handle on the connection's socket, so another thread can
    /// shut it down and so end a [`next`](HubConn::next) that waits (`hale
    /// admin` does when the page that asked for a stream goes away).
    pub(crate) fn socket(&self) -> std::io::Result<TcpStream> {
        self.stream.try_clone()
    }

    /// Sends the close frame (1000); what follows is not read.
    pub(crate) fn close(&mut self) {
        let close = client::close(1000, self.entropy.mask());
        let _ = self.stream.write_all(&close);
    }
}

/// Sends one frame to the hub at `authority` on a connection of its own
/// (upgraded with `bearer`) and reads the hub's answer to it: the `reply`
/// frame echoing `id`, or a `refusal` frame (a hub that carries no
/// surface refuses a `call` frame). Each read waits at most `timeout`. The
/// exchange `hale mcp --app ws://…` and `hale admin ws://…` make for a
/// call or a describe; `Err` says why nothing answered.
pub(crate) fn exchange(
    authority: &str,
    bearer: Option<&str>,
    frame: &str,
    id: &str,
    timeout: Duration,
) -> Result<Vec<u8>, String> {
    let failed = |e: String| format!("ws://{authority} did not answer: {e}");
    let mut conn = HubConn::connect(authority, bearer, Some(timeout)).map_err(failed)?;
    conn.send(frame).map_err(failed)?;
    loop {
        let text = match conn.next().map_err(failed)? {
            Incoming::Text(text) => text,
            Incoming::Closed(code) => {
                return Err(failed(format!("the hub closed the connection ({code})")))
            }
        };
        let v: Value =
            serde_json::from_str(&text).map_err(|_| failed("a frame that is not JSON".into()))?;
        let ours = v["id"] == Value::String(id.to_owned());
        match v["type"].as_str() {
            Some("reply") if ours => {
                conn.close();
                return Ok(text.into_bytes());
            }
            Some("refusal") => {
                conn.close();
                return Ok(text.into_bytes());
            }
            // Nothing is subscribed on this connection; any other frame is
            // not the answer.
            _ => {}
        }
    }
}
