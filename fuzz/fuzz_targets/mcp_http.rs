//! The MCP transport (`core/src/wire/mcp.rs`, `mcp/message.rs`): a peer's
//! bytes read by the HTTP/1.1 machine, framed for the exposure as `POST
//! /mcp` messages, and answered with every kind of outcome.
//!
//! Checks: `classify` takes any body; framing takes any request the HTTP
//! machine reads (or refuses); every answer's body is empty or one JSON
//! value (RFC 8259, read by the project's tokenizer: an id echoed verbatim
//! may be a number past serde_json's range), under a status the HTTP column
//! can write.
#![no_main]

use libfuzzer_sys::fuzz_target;
use limen_core::hale::runtime::sim;
use limen_core::hale::runtime::{Outcome, Refusal, RefusalKind};
use limen_core::json::Tokenizer;
use limen_core::wire::http1::{HttpConn, HttpEvent, Limits};
use limen_core::wire::machine::Machine;
use limen_core::wire::mcp::{classify, Framing};

fn outcomes() -> Vec<Outcome> {
    vec![
        Outcome::Result(b"{\"n\":1}".to_vec()),
        Outcome::HandlerError(b"{\"code\":\"x\"}".to_vec()),
        Outcome::ServerError,
        Outcome::Description(b"{\"tools\":[]}".to_vec()),
        Outcome::from(Refusal::new(RefusalKind::Malformed, "bad")),
        Outcome::from(Refusal::new(RefusalKind::Unauthenticated, "who")),
        Outcome::from(Refusal::new(RefusalKind::Full, "full")),
    ]
}

fuzz_target!(|data: &[u8]| {
    let _ = classify(data);
    let exposure = sim::exposure();
    let framing = Framing::new(exposure.spec());
    let mut c = HttpConn::new(0, Limits::default());
    c.handle_data(0, data);
    c.handle_eof(0);
    for event in std::iter::from_fn(|| c.poll_event()) {
        let (_, reply) = match &event {
            HttpEvent::Request(r) => {
                let _ = classify(&r.body);
                framing.frame(r, 1)
            }
            HttpEvent::Malformed { reason, head } => {
                framing.frame_malformed(reason, head.as_ref(), 1)
            }
            _ => continue,
        };
        for outcome in outcomes() {
            let answer = framing.answer(&reply, outcome);
            assert!((200..600).contains(&answer.status), "{}", answer.status);
            if !answer.body.is_empty() {
                // Read by the project's RFC 8259 tokenizer, not serde_json:
                // the request's id is echoed verbatim (§ The MCP
                // transport), and a number such as 21e400 is JSON that
                // serde_json refuses as past an f64's range.
                assert!(
                    Tokenizer::new(&answer.body).read_to_end().is_ok(),
                    "an answer that is not JSON: {}",
                    String::from_utf8_lossy(&answer.body)
                );
            }
        }
    }
});
