//! `flow canon --schema FILE [--max-… N]`: one JSON text on stdin, decoded
//! at the type FILE's schema describes, printed as its canonical text.
//!
//! Exit 0 with the text and a newline; a refusal prints
//! `refused: <path>: <reason>` on stderr and exits 1; a usage error (or a
//! schema that is not one limen reads) exits 2.

use std::io::{Read, Write};

use limen_core::flow::canonical::write_canonical;
use limen_core::flow::{decode, type_from_schema, Limits};

/// The usage line.
pub const USAGE: &str = "flow canon --schema FILE [--max-bytes N] [--max-depth N] [--max-int-digits N] \
[--max-decimal-digits N] [--max-decimal-exponent N] [--max-string-bytes N] [--max-collection-len N] < TEXT";

/// Runs `flow canon` with the arguments after `canon`.
pub fn run(args: &[String]) -> i32 {
    let mut schema = None;
    let mut limits = Limits::default();
    let mut i = 0;
    while i < args.len() {
        let (flag, inline) = match args[i].split_once('=') {
            Some((f, v)) => (f.to_owned(), Some(v.to_owned())),
            None => (args[i].clone(), None),
        };
        let value = match inline {
            Some(v) => Some(v),
            None => {
                i += 1;
                args.get(i).cloned()
            }
        };
        let Some(value) = value else {
            return usage(&format!("{flag} needs a value"));
        };
        let number = || {
            value
                .parse::<u64>()
                .map_err(|_| format!("{flag} takes a whole number, not `{value}`"))
        };
        let set = match flag.as_str() {
            "--schema" => {
                schema = Some(value.clone());
                Ok(())
            }
            "--max-bytes" => number().map(|n| limits.max_bytes = n as usize),
            "--max-depth" => number().map(|n| limits.max_depth = n as usize),
            "--max-int-digits" => number().map(|n| limits.max_int_digits = n as usize),
            "--max-decimal-digits" => number().map(|n| limits.max_decimal_digits = n as usize),
            "--max-decimal-exponent" => number().map(|n| limits.max_decimal_exponent = n),
            "--max-string-bytes" => number().map(|n| limits.max_string_bytes = n as usize),
            "--max-collection-len" => number().map(|n| limits.max_collection_len = n as usize),
            other => Err(format!("unknown flag `{other}`")),
        };
        if let Err(e) = set {
            return usage(&e);
        }
        i += 1;
    }
    let Some(schema_path) = schema else {
        return usage("--schema FILE is required");
    };
    let schema_text = match std::fs::read(&schema_path) {
        Ok(t) => t,
        Err(e) => return usage(&format!("cannot read {schema_path}: {e}")),
    };
    let schema: serde_json::Value = match serde_json::from_slice(&schema_text) {
        Ok(s) => s,
        Err(e) => return usage(&format!("{schema_path} is not JSON: {e}")),
    };
    let (ty, env) = match type_from_schema(&schema) {
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
    eprintln!("flow canon: {message}\nusage: {USAGE}");
    2
}
