//! A receiver's rows as Tools (`core/src/hale/tools.rs`): a Tool any
//! process could describe held to the witness's rows, and any reply it
//! could send read as the exposure reads it.
//!
//! The first input byte picks the mode:
//! - even: the rest is a JSON document read as a described `"signature"`;
//!   the declaration it reads as is held to every row of the witness
//!   (never a panic; a Tool read back from a row's own listing holds).
//! - odd: the rest builds a Tool declaration over the type model, held to
//!   every row, then the bytes left are decoded as a reply at each row's
//!   own response type: an outcome the exposure takes as the result is
//!   JSON of the row's response shape.
#![no_main]

use std::sync::{Arc, OnceLock};

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use limen_core::flow::tool::{Outcome, Tool};
use limen_core::flow::{decode, Declaration, Identity, Limits};
use limen_core::hale::codec;
use limen_core::hale::model::{parse_program, Program};
use limen_core::hale::tools::{self, Answer, CompletionBytes, RowTool};
use limen_fuzz::model::declaration;
use serde_json::Value;

const DESK: &str = include_str!("../../conformance/programs/desk.hl");

/// The witness's rows, made once: parsing the program for every input
/// cost most of each run.
fn rows() -> &'static [RowTool] {
    static ROWS: OnceLock<Vec<RowTool>> = OnceLock::new();
    ROWS.get_or_init(|| {
        let program: Program = parse_program("desk.hl", DESK).expect("desk.hl parses");
        ["Orders", "Ledger"]
            .iter()
            .flat_map(|l| tools::receiver_rows(&program, l).expect("the witness's rows are Tools"))
            .collect()
    })
}

fn identity() -> Identity {
    Identity::in_repository("example.com/shop", "1.0.0", "orders.flow", "place")
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let rows = rows();
    for row in rows {
        // A row's own declaration always holds.
        assert!(tools::hold(row, &row.tool).is_ok(), "{}", row.member);
    }
    if mode % 2 == 0 {
        let Ok(listed) = serde_json::from_slice::<Value>(rest) else {
            return;
        };
        let Ok((decl, env)) = Declaration::from_signature(identity(), &listed) else {
            return;
        };
        let Ok(tool) = Tool::new(decl, env) else {
            return;
        };
        let tool = Arc::new(tool);
        for row in rows {
            let _ = tools::hold(row, &tool);
        }
    } else {
        let mut u = Unstructured::new(rest);
        if let Ok((decl, env)) = declaration(&mut u) {
            if let Ok(tool) = Tool::new(decl, env) {
                let tool = Arc::new(tool);
                for row in rows {
                    let _ = tools::hold(row, &tool);
                }
            }
        }
        let reply = u.take_rest();
        for row in rows {
            let d = &row.tool.declaration;
            for (ty, failed) in [(&d.ok, false), (&d.err, true)] {
                let Ok(value) = decode(reply, ty, &row.tool.env, &Limits::default()) else {
                    continue;
                };
                let outcome = if failed {
                    Outcome::Failed(value)
                } else {
                    Outcome::Ok(value)
                };
                match tools::answer(row, outcome) {
                    Answer::Completed(CompletionBytes::Returned(b)) => {
                        let shape = row.response.as_ref().expect("a response");
                        assert!(codec::decode(shape, &b).is_ok(), "{}", row.member);
                    }
                    Answer::Completed(CompletionBytes::Failed(b)) => {
                        let tools::RowError::Declared(shape) = &row.error else {
                            panic!("a handler error on a row without one");
                        };
                        assert!(codec::decode(shape, &b).is_ok(), "{}", row.member);
                    }
                    Answer::Violated => assert!(failed),
                    Answer::Failed(_) => {}
                }
            }
        }
    }
});
