//! The conformance runner's readers (`conformance/src/{transport,record}`):
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
//!   record that reads is masked; a record another transport's record
//!   implies (the MCP call of an HTTP call) names the same outcome and
//!   kind.
#![no_main]

use libfuzzer_sys::fuzz_target;
use limen_conformance::record::Record;
use limen_conformance::transport::FORMS;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, input)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        for form in FORMS {
            let whole = form.reply(input, true);
            let open = form.reply(input, false);
            if let Ok(Some(v)) = &open {
                // Whole without the end of the stream: the end changes
                // nothing, nor does any longer read.
                assert_eq!(
                    whole.as_ref().ok(),
                    Some(&Some(v.clone())),
                    "{}",
                    form.name()
                );
                let cut = input.len() / 2;
                if let Ok(Some(p)) = form.reply(&input[..cut], false) {
                    assert_eq!(&p, v, "{} read at {cut} of {}", form.name(), input.len());
                }
            }
            if let Ok(Some(v)) = whole {
                let _ = form.outcome(&v);
                let _ = form.mask_reply(&v, None);
            }
        }
    } else if let Ok(text) = std::str::from_utf8(input) {
        for form in FORMS {
            let Ok(record) = Record::parse(&format!("{}/fuzz", form.name()), text) else {
                continue;
            };
            let _ = record.masked();
            for other in FORMS {
                if let Some(m) = record.implied(*other, &record.exposure) {
                    assert_eq!((&m.outcome, &m.kind), (&record.outcome, &record.kind));
                }
            }
        }
    }
});
