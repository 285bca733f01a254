//! The `flow` command line, read by `clap` ([`cli`]) and run with one file
//! per command:
//!
//! - `flow canon --schema FILE` ([`canon`]): a JSON text's canonical text at
//!   a type;
//! - `flow fingerprint LISTING` ([`fingerprint`]): each listed tool's
//!   fingerprint, checked;
//! - `flow tools describe | check | call` ([`tools`]): an implementation's
//!   describe, a listing's binding, one call;
//! - `flow toolkit rust LISTING` ([`toolkit`]): Rust types and a typed
//!   trait for a listing's Tools; `flow toolkit python LISTING` a Python
//!   module of dataclasses, tagged unions and a typed `Tools` protocol;
//! - `flow toolkit typescript LISTING` ([`toolkit`]): TypeScript types and
//!   an interface `Tools` over the TypeScript toolkit (`toolkits/typescript`);
//! - `flow completions SHELL`: a completion script.
//!
//! Every command answers `--help` (exit 0, on stdout) and `flow --version`
//! prints the version. A usage error names the flag and shows the
//! command's usage line; it exits 64 under `flow tools` and `flow toolkit`,
//! 2 elsewhere.

pub mod canon;
pub mod cli;
pub mod fingerprint;
pub mod toolkit;
pub mod tools;

use clap::CommandFactory;

use cli::{Cli, Command, ToolkitCommand, ToolsCommand};

/// The exit status of a usage error of `flow canon`, `flow fingerprint` and
/// `flow` itself.
pub const EXIT_USAGE: i32 = 2;

/// Runs `flow` with its arguments (without the program name) and returns the
/// process exit status.
pub fn main(args: Vec<String>) -> i32 {
    let cli: Cli = match crate::cli_support::parse("flow", args, usage_exit) {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    match cli.command {
        Command::Canon(a) => canon::run(&a),
        Command::Fingerprint(a) => fingerprint::run(&a),
        Command::Tools(ToolsCommand::Describe(a)) => tools::describe(&a),
        Command::Tools(ToolsCommand::Check(a)) => tools::check(&a),
        Command::Tools(ToolsCommand::Call(a)) => tools::call(&a),
        Command::Toolkit(ToolkitCommand::Rust(a)) => {
            toolkit::generate("rust", limen_toolkit::codegen::rust, &a)
        }
        Command::Toolkit(ToolkitCommand::Python(a)) => {
            toolkit::generate("python", limen_toolkit::codegen::python, &a)
        }
        Command::Toolkit(ToolkitCommand::Typescript(a)) => {
            toolkit::generate("typescript", limen_toolkit::codegen::typescript, &a)
        }
        Command::Completions(a) => {
            crate::cli_support::print_completions(a.shell, Cli::command(), "flow")
        }
    }
}

/// The exit status of a usage error of the command at `path`.
fn usage_exit(path: &[String]) -> i32 {
    match path.first().map(String::as_str) {
        Some("tools" | "toolkit") => tools::EXIT_USAGE,
        _ => EXIT_USAGE,
    }
}

/// Prints a usage error of the command at `path` (`["tools", "call"]`) with
/// its usage line, and returns its exit status.
pub fn usage(path: &[&str], message: &str) -> i32 {
    crate::cli_support::usage_error(Cli::command(), path, message);
    let path: Vec<String> = path.iter().map(|p| p.to_string()).collect();
    usage_exit(&path)
}
