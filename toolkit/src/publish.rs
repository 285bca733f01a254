//! Publishing an event from a handler that `hale serve` runs.
//!
//! `hale serve --control PATH` gives each handler process the control
//! socket's path in `HALE_CONTROL`; an event is one line on it, `publish
//! TOPIC JSON`, answered `ok` or `error: …` once the server has held the
//! payload to the topic's shape and offered it to every hub that streams
//! the topic. One connection is kept for the life of the process.

use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::sync::Mutex;

/// The variable a served handler finds the control socket's path in.
pub const CONTROL_VAR: &str = "HALE_CONTROL";

static CONNECTION: Mutex<Option<BufReader<UnixStream>>> = Mutex::new(None);

/// Publishes `payload` (JSON text) on `topic` through the server's control
/// socket. An error when the process was not given one (`HALE_CONTROL`
/// unset: the server runs without `--control`), when it cannot be reached,
/// or when the server refused the event (an unknown topic, a payload not
/// of the topic's shape: the server's reason).
pub fn publish(topic: &str, payload: &str) -> io::Result<()> {
    if topic.contains(char::is_whitespace) || payload.contains('\n') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a topic is one word and a payload one line",
        ));
    }
    let mut conn = CONNECTION.lock().unwrap_or_else(|e| e.into_inner());
    if conn.is_none() {
        let path = std::env::var_os(CONTROL_VAR).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                "HALE_CONTROL is not set: the server was started without --control",
            )
        })?;
        *conn = Some(BufReader::new(UnixStream::connect(path)?));
    }
    let Some(c) = conn.as_mut() else {
        return Err(io::Error::other("no connection"));
    };
    let mut answer = String::new();
    let sent = c
        .get_mut()
        .write_all(format!("publish {topic} {payload}\n").as_bytes())
        .and_then(|()| c.read_line(&mut answer));
    match sent {
        Ok(0) => {
            *conn = None;
            Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the control socket",
            ))
        }
        Ok(_) if answer.trim() == "ok" => Ok(()),
        Ok(_) => Err(io::Error::other(
            answer
                .trim()
                .strip_prefix("error: ")
                .unwrap_or(answer.trim())
                .to_owned(),
        )),
        Err(e) => {
            *conn = None;
            Err(e)
        }
    }
}
