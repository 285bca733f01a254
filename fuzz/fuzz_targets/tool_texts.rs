//! The Tool protocol's text parsers: `flow-tool.toml`
//! (`core/src/flow/tool/config.rs`), a `flow tools` listing and a describe
//! result (`core/src/flow/tool/listing.rs`), a command line
//! (`split_command`) and a data version.
//!
//! The first input byte picks the parser; the rest is its text. Checks:
//! nothing panics; a data version writes its own text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use limen_core::flow::tool::{split_command, DataVersion, Described, Listing, ToolConfig};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let text = std::str::from_utf8(rest).ok();
    match mode % 5 {
        0 => {
            if let Some(text) = text {
                let _ = ToolConfig::parse("flow-tool.toml", text);
            }
        }
        1 => {
            let _ = Listing::parse(rest);
        }
        2 => {
            let _ = Described::parse(rest);
        }
        3 => {
            if let Some(text) = text {
                if let Ok(words) = split_command(text) {
                    assert!(words
                        .iter()
                        .all(|w| !w.is_empty() || text.contains(['"', '\''])));
                }
            }
        }
        _ => {
            if let Some(text) = text {
                if let Some(v) = DataVersion::parse(text) {
                    assert_eq!(v.to_string(), text);
                }
            }
        }
    }
});
