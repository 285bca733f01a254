//! `hale check`'s one entry point: a file's text to its model, its
//! diagnostics and its notes, so every caller (the CLI, a test, an editor)
//! asks one function and sees every law.
//!
//! The errors are the syntax errors of [`parse_program`] and then the
//! admission laws ([`laws::check`](super::laws::check)). Law 6 is a
//! statement of a row, never a refusal (§ Surfaces and their rows), so it is
//! a note printed beside such a member, not an error.

use super::laws;
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
    let laws::Check { errors, notes } = laws::check(&program, file, src);
    Checked {
        program: Some(program),
        errors,
        notes,
    }
}
