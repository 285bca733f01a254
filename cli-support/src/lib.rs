//! What `hale` and `flow` share on top of `clap`: help and the version on
//! stdout with exit 0, a usage error on stderr with the usage line of the
//! command it belongs to, and an exit status each command fixes.
//!
//! A crate of its own (it was `limen_drivers::cli_support`, still
//! re-exported there) so that `limen-conformance` built without its `live`
//! feature, the deterministic replay alone, links no I/O crate.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

use clap::{Command, Parser};

/// The names of the (sub)commands `args` (without the program name) walk
/// down `cmd`, until the first word that names none.
pub fn command_path(cmd: &Command, args: &[String]) -> Vec<String> {
    let mut path = Vec::new();
    let mut at = cmd;
    for a in args {
        if a.starts_with('-') {
            continue;
        }
        match at.find_subcommand(a) {
            Some(sub) => {
                path.push(a.clone());
                at = sub;
            }
            None => break,
        }
    }
    path
}

/// The usage line of the command at `path` under `cmd`, as its `--help`
/// shows it.
pub fn usage_line(mut cmd: Command, path: &[&str]) -> String {
    cmd.build();
    let mut sub = &mut cmd;
    for p in path {
        if sub.find_subcommand(p).is_none() {
            break;
        }
        sub = sub.find_subcommand_mut(p).expect("found above");
    }
    sub.render_usage().to_string()
}

/// Reads `args` (without the program name) as `T`, the program `name`. On
/// `--help` or `--version` prints them and gives `Err(0)`; on a usage error
/// prints it, with the usage line of the command it belongs to, and gives
/// `Err(exit(path))`, `path` the commands named before the error.
pub fn parse<T: Parser>(
    name: &str,
    args: Vec<String>,
    exit: impl Fn(&[String]) -> i32,
) -> Result<T, i32> {
    let path = command_path(&T::command(), &args);
    match T::try_parse_from(std::iter::once(name.to_owned()).chain(args)) {
        Ok(t) => Ok(t),
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            Err(0)
        }
        Err(e) => {
            let mut text = e.render().to_string();
            if !text.contains("Usage:") {
                // Errors about a value carry no usage line: give the
                // command's, before the pointer to --help.
                let names: Vec<&str> = path.iter().map(String::as_str).collect();
                let line = format!("{}\n\n", usage_line(T::command(), &names));
                let at = text.find("For more information").unwrap_or(text.len());
                text.insert_str(at, &line);
            }
            eprint!("{text}");
            Err(exit(&path))
        }
    }
}

/// Prints a usage error found after parsing (a combination of flags the
/// command refuses) for the command at `path` under `cmd`.
pub fn usage_error(cmd: Command, path: &[&str], message: &str) {
    eprintln!(
        "error: {message}\n\n{}\n\nFor more information, try '--help'.",
        usage_line(cmd, path)
    );
}

/// Prints `cmd`'s completion script for `shell` on stdout. A reader that
/// stops early (`| head`) is not an error: the script is written whole or
/// until the pipe closes, and the exit status is 0 either way.
pub fn print_completions(shell: clap_complete::Shell, mut cmd: Command, name: &str) -> i32 {
    use std::io::Write as _;
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, name, &mut script);
    match std::io::stdout().write_all(&script) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("{name}: cannot write the completion script: {e}");
            1
        }
        _ => 0,
    }
}

/// Writes `text` to stdout. A reader that closed the pipe (`| head`) has
/// read all it wanted: the process ends quietly with status 0, instead of
/// the panic `print!` makes; another write error is said on stderr and
/// ends it with 1.
pub fn print(text: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => {
            eprintln!("cannot write to stdout: {e}");
            std::process::exit(1);
        }
    }
}
