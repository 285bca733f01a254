//! `flow canon --schema FILE [--max-… N]`: one JSON text on stdin, decoded
//! at the type FILE's schema describes, printed as its canonical text.
//!
//! The schema is read as people write them
//! ([`type_from_plain_schema`]): a root without `$schema` is draft
//! 2020-12, an object schema written inline an anonymous record, an inline
//! `oneOf` an anonymous enum.
//!
//! Exit 0 with the text and a newline; a refusal prints
//! `refused: <path>: <reason>` on stderr and exits 1; a usage error (or a
//! schema that is not one limen reads) exits 2.

use std::io::{Read, Write};

use limen_core::flow::canonical::write_canonical;
use limen_core::flow::{decode, type_from_plain_schema, Limits};

use super::cli::CanonArgs;

/// Runs `flow canon` with its arguments.
pub fn run(a: &CanonArgs) -> i32 {
    let mut limits = Limits::default();
    let set = |slot: &mut usize, v: Option<usize>| {
        if let Some(v) = v {
            *slot = v;
        }
    };
    set(&mut limits.max_bytes, a.max_bytes);
    set(&mut limits.max_depth, a.max_depth);
    set(&mut limits.max_int_digits, a.max_int_digits);
    set(&mut limits.max_decimal_digits, a.max_decimal_digits);
    if let Some(n) = a.max_decimal_exponent {
        limits.max_decimal_exponent = n;
    }
    set(&mut limits.max_string_bytes, a.max_string_bytes);
    set(&mut limits.max_collection_len, a.max_collection_len);
    let schema_path = a.schema.display().to_string();
    let schema_text = match std::fs::read(&schema_path) {
        Ok(t) => t,
        Err(e) => return usage(&format!("cannot read {schema_path}: {e}")),
    };
    let schema: serde_json::Value = match serde_json::from_slice(&schema_text) {
        Ok(s) => s,
        Err(e) => return usage(&format!("{schema_path} is not JSON: {e}")),
    };
    let (ty, env) = match type_from_plain_schema(&schema) {
        Ok(t) => t,
        Err(e) => return usage(&format!("{schema_path}: {e}")),
    };
    let mut input = Vec::new();
    if std::io::stdin().read_to_end(&mut input).is_err() {
        return usage("stdin could not be read");
    }
    match decode(&input, &ty, &env, &limits) {
        Ok(value) => {
            let mut out = Vec::with_capacity(input.len() + 1);
            write_canonical(&value, &mut out);
            out.push(b'\n');
            let _ = std::io::stdout().write_all(&out);
            0
        }
        Err(e) => {
            eprintln!("refused: {e}");
            1
        }
    }
}

fn usage(message: &str) -> i32 {
    super::usage(&["canon"], message)
}
