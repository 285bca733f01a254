//! `hale check`'s one entry point: a file's text to its model, its
//! diagnostics and its notes, so every caller (the CLI, a test, an editor)
//! asks one function and sees every law.
//!
//! The errors are the syntax errors of [`parse_program`](super::model::parse_program),
//! an import that cannot be read ([`imports::load`]), and then the
//! admission laws ([`laws::check_in`]). Law 6 is a statement of a row,
//! never a refusal (§ Surfaces and their rows), so it is a note printed
//! beside such a member, not an error.

use super::imports;
use super::laws;
use super::model::Program;
use super::syntax::{Diagnostic, Sources};

/// What checking a file found.
#[derive(Debug)]
pub struct Checked {
    /// The model, when the file (and every file it imports) parsed.
    pub program: Option<Program>,
    /// The errors, in source order: the check fails when there is one.
    pub errors: Vec<Diagnostic>,
    /// The notes (law 6), in source order: statements of rows, which
    /// fail nothing.
    pub notes: Vec<Diagnostic>,
    /// The texts of the program's files, the entry first.
    pub sources: Sources,
}

impl Checked {
    /// Whether the file passed: it parsed and no law refused it.
    pub fn passed(&self) -> bool {
        self.program.is_some() && self.errors.is_empty()
    }
}

/// Checks `src`, the text of the file named `file`, a program of one file:
/// an `import` in it is refused, as an import no file answers (a caller
/// that can read files calls [`check_program_with`]).
pub fn check_program(file: &str, src: &str) -> Checked {
    check_program_with(file, src, &mut |path| {
        Err(format!("this check reads one file and not `{path}`"))
    })
}

/// Checks `src`, the text of the file named `file`, and every file it
/// imports, each asked of `loader` by its resolved path
/// ([`imports::resolve`]); the loader's `Err` is the reason an import
/// cannot be read.
pub fn check_program_with(
    file: &str,
    src: &str,
    loader: &mut dyn FnMut(&str) -> Result<String, String>,
) -> Checked {
    let imports::Loaded { program, sources } = match imports::load(file, src, loader) {
        Ok(l) => l,
        Err(d) => {
            return Checked {
                program: None,
                errors: vec![d],
                notes: Vec::new(),
                sources: Sources::single(file, src),
            }
        }
    };
    let laws::Check { errors, notes } = laws::check_in(&program, &sources);
    Checked {
        program: Some(program),
        errors,
        notes,
        sources,
    }
}
