//! `flow toolkit rust LISTING [-o FILE]`: Rust types and a typed trait for
//! a listing's Tools (see `limen_toolkit::codegen`).

const USAGE: &str = "usage: flow toolkit rust LISTING [-o FILE]";

/// Runs `flow toolkit …` (the arguments after `toolkit`).
pub fn main(args: &[String]) -> i32 {
    let (listing, out) = match args {
        [lang, listing] if lang == "rust" => (listing, None),
        [lang, listing, o, file] if lang == "rust" && o == "-o" => (listing, Some(file)),
        _ => {
            eprintln!("{USAGE}");
            return super::tools::EXIT_USAGE;
        }
    };
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
            print!("{code}");
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
