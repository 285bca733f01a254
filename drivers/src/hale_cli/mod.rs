//! The `hale` command line: `hale check`, `hale api …`, `hale demo`.

/// Runs `hale` with its arguments (without the program name) and returns the
/// process exit status.
pub fn main(args: Vec<String>) -> i32 {
    match args.first().map(String::as_str) {
        Some("--help") | Some("-h") => {
            println!("{USAGE}");
            0
        }
        None => {
            eprintln!("{USAGE}");
            5
        }
        Some(other) => {
            eprintln!("hale: unknown command `{other}`\n{USAGE}");
            5
        }
    }
}

const USAGE: &str = "usage: hale <command> …";
