//! The `flow` command line, a dispatcher with one file per command:
//!
//! - `flow canon --schema FILE` ([`canon`]): a JSON text's canonical text at
//!   a type;
//! - `flow fingerprint LISTING` ([`fingerprint`]): each listed tool's
//!   fingerprint, checked.

pub mod canon;
pub mod fingerprint;

/// Runs `flow` with its arguments (without the program name) and returns the
/// process exit status.
pub fn main(args: Vec<String>) -> i32 {
    match args.first().map(String::as_str) {
        Some("--help") | Some("-h") => {
            println!("{USAGE}");
            0
        }
        Some("canon") => canon::run(&args[1..]),
        Some("fingerprint") => fingerprint::run(&args[1..]),
        None => {
            eprintln!("flow: no command given\n{USAGE}");
            2
        }
        Some(other) => {
            eprintln!("flow: unknown command `{other}`\n{USAGE}");
            2
        }
    }
}

/// The synopsis.
pub const USAGE: &str = "usage:
  flow canon --schema FILE [--max-bytes N] [--max-depth N] [--max-int-digits N] [--max-decimal-digits N]
             [--max-decimal-exponent N] [--max-string-bytes N] [--max-collection-len N] < TEXT
  flow fingerprint LISTING";
