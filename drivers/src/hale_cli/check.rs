//! `hale check [--api …] FILE`: the check (syntax now, the admission laws
//! through the same [`check_program_with`], imports read from the disk), law 6's notes, and the documents
//! `--api` prints from the rows: the inventory, one exposure's description
//! for one caller, or one surface's projection.

use limen_core::hale::docs::{self, DocError};
use limen_core::hale::model::Program;
use limen_core::hale::syntax::Diagnostic;
use limen_core::hale::{check_program_with, Checked};

use super::cli::usage;
use super::cli::CheckArgs;

/// A checked program, or the exit status the check ended with (its
/// diagnostics already printed). `notes`: print law 6's notes too, as
/// `hale check` does beside the members they state. The files the program
/// imports are read too ([`check_file`]).
pub fn checked(file: &str, print_notes: bool) -> Result<Program, i32> {
    let Checked {
        program,
        errors,
        notes,
        ..
    } = match check_file(file) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("hale: {e}");
            return Err(1);
        }
    };
    for n in notes.iter().filter(|_| print_notes) {
        eprintln!("{}", note(n));
    }
    for e in &errors {
        eprintln!("{e}");
    }
    match program {
        Some(p) if errors.is_empty() => Ok(p),
        _ => Err(1),
    }
}

/// Checks the program at `file` and every file it imports, read from the
/// disk by the path [`check_program_with`] resolves (against the importing
/// file's directory); `Err` when `file` itself cannot be read. An import
/// that cannot be read is a diagnostic of the check, at the `import`.
pub fn check_file(file: &str) -> Result<Checked, String> {
    let src = std::fs::read_to_string(file).map_err(|e| format!("cannot read {file}: {e}"))?;
    Ok(check_program_with(file, &src, &mut |path| {
        std::fs::read_to_string(path).map_err(|e| e.to_string())
    }))
}

/// A note as it is printed: the diagnostic's three lines, `note:` before
/// the message.
fn note(d: &Diagnostic) -> String {
    format!(
        "{}:{}:{}: note: {}\n{}\n{}",
        d.file,
        d.line,
        d.col,
        d.message,
        d.source_line,
        d.caret_line()
    )
}

/// Prints a document failure and returns its exit status.
pub fn failed(file: &str, e: &DocError) -> i32 {
    eprintln!("{file}: {e}");
    1
}

/// Runs `hale check` with its arguments.
pub fn run(a: &CheckArgs) -> i32 {
    let usage = |m: &str| usage(&["check"], m);
    let file = a.file.clone();
    let forms: Vec<&str> = [
        ("openapi", a.openapi),
        ("json-schema", a.json_schema),
        ("mcp", a.mcp),
        ("proto", a.proto),
    ]
    .into_iter()
    .filter_map(|(f, on)| on.then_some(f))
    .collect();
    let describing = a.exposure.is_some() || a.caller.is_some() || a.holds.is_some();
    let projecting = a.surface.is_some() || !forms.is_empty();
    if describing && projecting {
        return usage("an exposure's description (--exposure) or a surface's projection (--surface), not both");
    }
    if describing && (a.exposure.is_none() || a.caller.is_none()) {
        return usage("a description names --exposure NAME and --caller PRINCIPAL");
    }
    if projecting && (a.surface.is_none() || forms.len() != 1) {
        return usage(
            "a projection names --surface NAME and one of --openapi, --json-schema, --mcp, --proto",
        );
    }
    let program = match checked(&file, true) {
        Ok(p) => p,
        Err(code) => return code,
    };
    if !a.api {
        return 0;
    }
    let printed = if let (Some(exposure), Some(caller)) = (&a.exposure, &a.caller) {
        let holds: Vec<String> = a
            .holds
            .as_deref()
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(str::to_string)
            .collect();
        docs::describe_offline(&program, exposure, caller, &holds).map(|d| pretty(&d))
    } else if let Some(surface) = a.surface.as_deref() {
        match forms[0] {
            "openapi" => docs::openapi(&program, surface).map(|d| pretty(&d)),
            "json-schema" => docs::json_schema(&program, surface).map(|d| pretty(&d)),
            "mcp" => docs::mcp(&program, surface).map(|d| pretty(&d)),
            _ => docs::proto(&program, surface),
        }
    } else {
        docs::inventory(&program).map(|d| pretty(&d))
    };
    match printed {
        Ok(text) => {
            crate::cli_support::print(&text);
            0
        }
        Err(e) => failed(&file, &e),
    }
}

/// A document as `hale check` prints it: pretty, ended by one LF (equal as
/// a value to the compact form a server writes).
fn pretty(doc: &serde_json::Value) -> String {
    String::from_utf8(docs::export::pretty(doc)).unwrap_or_default()
}
