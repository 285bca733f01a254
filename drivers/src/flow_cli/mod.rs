//! The `flow` command line: `flow canon`, `flow fingerprint`, `flow tools …`.

pub mod toolkit;
pub mod tools;

/// Runs `flow` with its arguments (without the program name) and returns the
/// process exit status.
pub fn main(args: Vec<String>) -> i32 {
    match args.first().map(String::as_str) {
        Some("--help") | Some("-h") | None => {
            println!("{USAGE}");
            if args.is_empty() {
                2
            } else {
                0
            }
        }
        Some("tools") => tools::main(&args[1..]),
        Some("toolkit") => toolkit::main(&args[1..]),
        Some(other) => {
            eprintln!("flow: unknown command `{other}`\n{USAGE}");
            2
        }
    }
}

const USAGE: &str = "usage: flow <command> …";
