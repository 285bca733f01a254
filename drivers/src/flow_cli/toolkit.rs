//! `flow toolkit rust LISTING [-o FILE]`: Rust types and a typed trait for
//! a listing's Tools (see `limen_toolkit::codegen`).

use super::cli::RustArgs;

/// Runs `flow toolkit rust` with its arguments.
pub fn rust(a: &RustArgs) -> i32 {
    let (listing, out) = (&a.listing, &a.out);
    let text = match std::fs::read_to_string(listing) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("flow toolkit rust: {listing}: {e}");
            return 1;
        }
    };
    let code = match limen_toolkit::codegen::rust(&text) {
        Ok(code) => code,
        Err(why) => {
            eprintln!("flow toolkit rust: {listing}: {why}");
            return 1;
        }
    };
    match out {
        None => {
            crate::cli_support::print(&code);
            0
        }
        Some(file) => match std::fs::write(file, code) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("flow toolkit rust: {file}: {e}");
                1
            }
        },
    }
}
