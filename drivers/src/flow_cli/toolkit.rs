//! `flow toolkit LANG LISTING [-o FILE]`: a language's types and a typed
//! interface for a listing's Tools (see `limen_toolkit::codegen`).

use super::cli::ListingArgs;

/// A generator: the listing's JSON text in, the code (or why not) out.
pub type Generator = fn(&str) -> Result<String, String>;

/// Runs `flow toolkit LANG` (`lang` names it in messages) with `generate`.
pub fn generate(lang: &str, generate: Generator, a: &ListingArgs) -> i32 {
    let (listing, out) = (&a.listing, &a.out);
    let text = match std::fs::read_to_string(listing) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("flow toolkit {lang}: {listing}: {e}");
            return 1;
        }
    };
    let code = match generate(&text) {
        Ok(code) => code,
        Err(why) => {
            eprintln!("flow toolkit {lang}: {listing}: {why}");
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
                eprintln!("flow toolkit {lang}: {file}: {e}");
                1
            }
        },
    }
}
