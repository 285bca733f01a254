//! The conformance runner's readers (`conformance/src/{wire,record,mcp}.rs`):
//! `limen-conformance check` reads a live server's bytes, which may be
//! anything, and every command reads record files someone else wrote.
//!
//! Mode byte, then the input:
//! - even: a server's bytes, read as a reply of each transport (a Unix
//!   line, an HTTP response, an MCP answer), with and without the end of
//!   the stream. Checks: a reply read whole is what any longer read of the
//!   same bytes reads (a reply, once whole, does not change as more bytes
//!   arrive); its outcome and its masked form are computed without panic.
//! - odd: a record's text, read as a record of each transport. Checks: a
//!   record that reads is masked; the MCP record an HTTP call implies
//!   names the same outcome and kind.
#![no_main]

use libfuzzer_sys::fuzz_target;
use limen_conformance::mask;
use limen_conformance::mcp;
use limen_conformance::record::{Record, Transport};
use limen_conformance::replay::reply_of;
use limen_conformance::wire;

fn transports() -> [Transport; 3] {
    [Transport::Unix, Transport::Http, Transport::Mcp]
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, input)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        for t in transports() {
            let whole = reply_of(&t, input, true);
            let open = reply_of(&t, input, false);
            if let Ok(Some(v)) = &open {
                // Whole without the end of the stream: the end changes
                // nothing, nor does any longer read.
                assert_eq!(
                    whole.as_ref().ok(),
                    Some(&Some(v.clone())),
                    "{}",
                    t.as_str()
                );
                let cut = input.len() / 2;
                if let Ok(Some(p)) = reply_of(&t, &input[..cut], false) {
                    assert_eq!(&p, v, "{} read at {cut} of {}", t.as_str(), input.len());
                }
            }
            if let Ok(Some(v)) = whole {
                let _ = wire::outcome_of(&t, &v);
                let _ = mask::reply(&t, &v, None);
            }
        }
    } else if let Ok(text) = std::str::from_utf8(input) {
        for t in transports() {
            let Ok(record) = Record::parse(&format!("{}/fuzz", t.as_str()), text) else {
                continue;
            };
            let _ = mask::record(&record);
            if let Some(m) = mcp::from_http(&record, &record.exposure) {
                assert_eq!((&m.outcome, &m.kind), (&record.outcome, &record.kind));
            }
        }
    }
});
