//! JSON-RPC 2.0 lines (`core/src/json/jsonrpc.rs`), the framing of the Tool
//! protocol and of MCP.
//!
//! Checks: a line read as a message is one JSON object `serde_json` reads
//! too (or refuses only for a number past `f64`), and writing the message
//! back with the `encode_*` functions reads as the same message; a refusal
//! carries JSON-RPC's parse-error or invalid-request code and a reason.
#![no_main]

use libfuzzer_sys::fuzz_target;
use limen_core::json::jsonrpc::{self, Message, INVALID_REQUEST, PARSE_ERROR};

fuzz_target!(|data: &[u8]| {
    match jsonrpc::parse(data) {
        Ok(message) => {
            match serde_json::from_slice::<serde_json::Value>(data) {
                Ok(v) => assert!(v.is_object(), "a message that is not an object"),
                Err(e) => assert!(e.to_string().contains("number out of range"), "{e}"),
            }
            let mut out = Vec::new();
            match &message {
                Message::Request { id, method, params } => {
                    jsonrpc::encode_request(id, method, *params, &mut out)
                }
                Message::Notification { method, params } => {
                    jsonrpc::encode_notification(method, *params, &mut out)
                }
                Message::Response { id, result } => jsonrpc::encode_response(id, result, &mut out),
                Message::Error {
                    id, code, message, ..
                } => jsonrpc::encode_error(id, *code, message, &mut out),
            }
            let again = jsonrpc::parse(&out).unwrap_or_else(|e| {
                panic!(
                    "{} does not read back: {e:?}",
                    String::from_utf8_lossy(&out)
                )
            });
            match (&message, &again) {
                (
                    Message::Error {
                        id, code, message, ..
                    },
                    Message::Error {
                        id: id2,
                        code: code2,
                        message: message2,
                        data: None,
                    },
                ) => assert_eq!((id, code, message), (id2, code2, message2)),
                _ => assert_eq!(message, again),
            }
        }
        Err(e) => {
            assert!(e.code == PARSE_ERROR || e.code == INVALID_REQUEST, "{e:?}");
            assert!(!e.reason.is_empty());
        }
    }
});
