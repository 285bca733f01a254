//! `hale check`'s one entry point: a file's text to its model, its
//! diagnostics and its notes.
//!
//! Today the diagnostics are the syntax errors of [`parse_program`]; the
//! admission laws join here, so every caller (the CLI, a test, an editor)
//! asks one function and sees every law. Law 6 is a statement of a row,
//! never a refusal (§ Surfaces and their rows: a row whose error type is
//! `ClosureViolation` fails as the server error), so it is a note printed
//! beside such a member, not a diagnostic.

use super::model::{parse_program, Program};
use super::syntax::Diagnostic;

/// What checking a file found.
#[derive(Debug)]
pub struct Checked {
    /// The model, when the file parsed.
    pub program: Option<Program>,
    /// The errors, in source order: the check fails when there is one.
    pub errors: Vec<Diagnostic>,
    /// The notes (law 6), in source order: statements of rows, which
    /// fail nothing.
    pub notes: Vec<Diagnostic>,
}

impl Checked {
    /// Whether the file passed: it parsed and no law refused it.
    pub fn passed(&self) -> bool {
        self.program.is_some() && self.errors.is_empty()
    }
}

/// Checks `src`, the text of the file named `file`.
pub fn check_program(file: &str, src: &str) -> Checked {
    let program = match parse_program(file, src) {
        Ok(p) => p,
        Err(d) => {
            return Checked {
                program: None,
                errors: vec![d],
                notes: Vec::new(),
            }
        }
    };
    let notes = law6_notes(file, src, &program);
    Checked {
        program: Some(program),
        errors: Vec::new(),
        notes,
    }
}

/// Law 6's note for every row whose error type is `ClosureViolation`, at
/// the row: “rpc `Orders::place`: its error type is `ClosureViolation`, so a
/// failure is the server error; a description carries no error schema for
/// it”.
pub fn law6_notes(file: &str, src: &str, program: &Program) -> Vec<Diagnostic> {
    let mut notes: Vec<Diagnostic> = program
        .surfaces
        .iter()
        .flat_map(|s| &s.rows)
        .filter(|r| r.error_is_closure_violation())
        .map(|r| {
            Diagnostic::at(
                file,
                src,
                r.span,
                format!(
                    "rpc `{}`: its error type is `ClosureViolation`, so a failure is the server error; a description carries no error schema for it",
                    r.member
                ),
            )
        })
        .collect();
    notes.sort_by_key(|d| (d.line, d.col));
    notes.dedup();
    notes
}
