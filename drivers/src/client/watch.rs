//! `hale watch WS-ENDPOINT TOPIC [--token T]` (§ The clients): reads the
//! hub's description, refuses a topic the caller may not subscribe to (its
//! description does not list it), subscribes and prints each frame as one
//! JSON line until the hub ends it: `closed` exits 0, a refusal or an
//! `unauthorized` frame exits 1, a connection that ends without `closed`
//! is a transport failure (4), usage 5. A socket or an HTTP endpoint is
//! refused, naming `ws://`.
//!
//! The connection is `hub_conn`'s, shared with `hale mcp --app ws://…`:
//! the core's client codec, the nonce and the masks drawn there.

use std::io::Write;

use serde_json::Value;

use super::hub_conn::{HubConn, Incoming, ENDED};
use super::{wire, EXIT_TRANSPORT, EXIT_USAGE};

/// `closed`: the hub stopped.
pub const EXIT_CLOSED: i32 = 0;
/// A refusal, an `unauthorized` frame, or a topic the description does not
/// list for this caller.
pub const EXIT_ENDED: i32 = 1;

/// The `host:port` of `ws://host:port[/]`, or why the endpoint is refused.
pub fn ws_authority(endpoint: &str) -> Result<String, String> {
    let forms = "a stream is the hub's: name its listener as ws://host:port";
    let Some(rest) = endpoint.strip_prefix("ws://") else {
        return Err(format!("`{endpoint}` is not a hub's listener; {forms}"));
    };
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    let valid = authority
        .rsplit_once(':')
        .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
    if !valid || authority.contains('/') {
        return Err(format!("`{endpoint}` is not ws://host:port; {forms}"));
    }
    Ok(authority.to_owned())
}

/// Runs `hale watch`; the exit status.
pub fn main(endpoint: &str, topic: &str, token: Option<String>) -> i32 {
    let token = token.or_else(|| {
        std::env::var("HALE_API_TOKEN")
            .ok()
            .filter(|t| !t.is_empty())
    });
    let authority = match ws_authority(endpoint) {
        Ok(a) => a,
        Err(e) => {
            crate::hale_cli::cli::usage(&["watch"], &e);
            return EXIT_USAGE;
        }
    };
    // The description first: a topic it does not list is not subscribed.
    let headers = super::bearer_header(token.as_deref());
    let reply = match wire::http_exchange(&authority, "GET", "/.description", &headers, b"") {
        Ok(r) => r,
        Err(e) => return transport(&format!("{endpoint} did not answer: {e}")),
    };
    if reply.status != 200 {
        eprintln!("{}", String::from_utf8_lossy(&reply.body));
        return EXIT_ENDED;
    }
    let Ok(doc) = serde_json::from_slice::<Value>(&reply.body) else {
        return transport(&format!("{endpoint} answered, but not with a description"));
    };
    let listed: Vec<&str> = doc["streams"]
        .as_array()
        .map(|s| s.iter().filter_map(|s| s["topic"].as_str()).collect())
        .unwrap_or_default();
    if !listed.contains(&topic) {
        let listed = if listed.is_empty() {
            "none".to_owned()
        } else {
            listed.join(", ")
        };
        eprintln!(
            "hale watch: `{topic}` is not a stream this caller may subscribe to at {endpoint} (its description lists: {listed})"
        );
        return EXIT_ENDED;
    }
    match watch(&authority, topic, token.as_deref()) {
        Ok(code) => code,
        Err(e) => transport(&format!("{endpoint}: {e}")),
    }
}

fn transport(message: &str) -> i32 {
    eprintln!("hale watch: {message}");
    EXIT_TRANSPORT
}

/// Subscribes and prints every frame; the exit status, or the transport
/// failure.
fn watch(authority: &str, topic: &str, token: Option<&str>) -> Result<i32, String> {
    let mut conn = HubConn::connect(authority, token, None)?;
    let subscribe = serde_json::json!({"type": "subscribe", "topic": topic}).to_string();
    conn.send(&subscribe)?;
    let stdout = std::io::stdout();
    loop {
        let text = match conn.next() {
            Ok(Incoming::Text(text)) => text,
            Ok(Incoming::Closed(code)) => {
                return Err(format!(
                    "the hub closed the connection ({code}) without closed"
                ))
            }
            Err(e) if e == ENDED => return Err(format!("{e} without closed")),
            Err(e) => return Err(e),
        };
        let mut out = stdout.lock();
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
        let kind = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v["type"].as_str().map(str::to_owned));
        match kind.as_deref() {
            // `closed`: answer the close frame that follows, then go.
            Some("closed") => {
                conn.close();
                return Ok(EXIT_CLOSED);
            }
            Some("refusal" | "unauthorized") => {
                conn.close();
                return Ok(EXIT_ENDED);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_hubs_listener_is_watched() {
        assert_eq!(
            ws_authority("ws://127.0.0.1:9000").unwrap(),
            "127.0.0.1:9000"
        );
        assert_eq!(ws_authority("ws://h:1/").unwrap(), "h:1");
        for bad in [
            "http://h:1",
            "unix:/tmp/s",
            "/tmp/s",
            "ws://h",
            "ws://h:1/x",
        ] {
            let e = ws_authority(bad).unwrap_err();
            assert!(e.contains("ws://"), "{bad}: {e}");
        }
    }
}
