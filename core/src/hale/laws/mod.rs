//! The admission laws (§ Surfaces and their rows, § Serving, § Codecs,
//! § Streams): what `hale check` refuses before anything is served, each in
//! the specification's words.
//!
//! [`check`] holds a [`Program`] to every law and returns a [`Check`]: the
//! errors, and the notes law 6 states beside a member whose error type is
//! `ClosureViolation`. Each is a [`Diagnostic`] at what it is about — the
//! row, the role, the serve site, the argument, the binding — rendered as
//! `file:line:col: message`, the source line and a caret line. The model
//! keeps everything unresolved as written ([`Handler`],
//! [`Unbound`](super::model::Unbound), a stream's missing direction); these
//! laws are where it is refused. [`note_for`] is law 6's statement of one
//! row, for a document printed beside the rows.
//!
//! The laws run in four groups, each in a file of its own: laws 1–7 over
//! every surface's rows and `@rpc` on a free fn (`rows.rs`); the laws of a
//! serve site and the paragraphs after them (`serve.rs`); the hub and
//! stream-row rules (`streams.rs`); and second declarations of a name.
//! [`codec`] is law 5's judgment, whether the JSON codec carries a type, and
//! [`suggest`] the "did you mean", by edit distance over the declared names.
//!
//! ```
//! use limen_core::hale::laws::check_source;
//!
//! let src = "role trader;\n\
//!            type Ask { n: Int; }\n\
//!            api Desk { rpc Book::ask requires: [tradr]; }\n\
//!            locus Book { fn ask(a: Ask) -> Int { return a.n; } }";
//! let check = check_source("desk.hl", src).unwrap();
//! assert_eq!(
//!     check.errors[0].to_string(),
//!     "desk.hl:3:37: rpc `Book::ask` requires `tradr`, which no `role` declares; did you mean `trader`?\n\
//!      api Desk { rpc Book::ask requires: [tradr]; }\n\
//!      \x20                                   ^^^^^"
//! );
//! ```

pub mod codec;
mod rows;
mod serve;
mod streams;
pub mod suggest;

pub use streams::MAX_STREAM_ROWS;

#[cfg(test)]
mod tests;

use super::model::{parse_program, Handler, Program, Row};
use super::syntax::{Diagnostic, Pos, Sources, Span};

/// What the check found: the errors that refuse the program, and the notes
/// it prints beside members. A program is admitted when `errors` is empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Check {
    /// Every law a row, serve site, hub or stream breaks, in source order.
    pub errors: Vec<Diagnostic>,
    /// Law 6's statement for every row whose error type is
    /// `ClosureViolation`, in source order.
    pub notes: Vec<Diagnostic>,
}

impl Check {
    /// Whether the program is admitted: no law refuses it.
    pub fn is_ok(&self) -> bool {
        self.errors.is_empty()
    }
}

/// Holds `program`, the model of `src` (the text of `file`), to the
/// admission laws.
pub fn check(program: &Program, file: &str, src: &str) -> Check {
    check_in(program, &Sources::single(file, src))
}

/// Holds `program`, the model of the files of `sources` (a program and
/// the files it imports), to the admission laws; each finding is rendered
/// in the file its span is in.
pub fn check_in(program: &Program, sources: &Sources) -> Check {
    let mut laws = Laws {
        p: program,
        errors: Vec::new(),
        notes: Vec::new(),
    };
    laws.duplicates();
    rows::check(&mut laws);
    serve::check(&mut laws);
    streams::check(&mut laws);
    let render = |mut found: Vec<(Span, String)>| {
        // Stable: two findings at one place keep the order the laws run in.
        found.sort_by_key(|(span, _)| span.start.offset);
        found
            .into_iter()
            .map(|(span, message)| sources.diagnostic(span, message))
            .collect()
    };
    Check {
        errors: render(laws.errors),
        notes: render(laws.notes),
    }
}

/// Parses `src`, the text of the file named `file`, builds its model and
/// checks it; a syntax error is the `Err`.
pub fn check_source(file: &str, src: &str) -> Result<Check, Diagnostic> {
    let program = parse_program(file, src)?;
    Ok(check(&program, file, src))
}

/// Law 6's statement of a row whose handler's error type is
/// `ClosureViolation` — the note `hale check --api` prints beside such a
/// member — and none for any other row.
pub fn note_for(row: &Row) -> Option<String> {
    (row.handler == Handler::Member && row.error_is_closure_violation()).then(|| {
        format!(
            "rpc `{}`: its error type is `ClosureViolation`, so a failure is the server error; a description carries no error schema for it",
            row.member
        )
    })
}

/// The findings of one check, before they are rendered.
struct Laws<'a> {
    p: &'a Program,
    errors: Vec<(Span, String)>,
    notes: Vec<(Span, String)>,
}

impl Laws<'_> {
    fn error(&mut self, span: Span, message: String) {
        self.errors.push((span, message));
    }

    fn note(&mut self, span: Span, message: String) {
        self.notes.push((span, message));
    }

    /// A second declaration of a name its kind declares: the model keeps
    /// the first and lists the second, which is refused here.
    fn duplicates(&mut self) {
        for d in &self.p.duplicates {
            self.error(
                d.second,
                format!(
                    "{} `{}` is declared twice, first at line {}: a name is declared once",
                    d.kind, d.name, d.first.start.line
                ),
            );
        }
    }
}

/// The span of the first `len` characters at `start`, on its line (a serve
/// site's `api::serve`).
fn head(start: Pos, len: usize) -> Span {
    Span {
        start,
        end: Pos {
            offset: start.offset + len,
            line: start.line,
            col: start.col + len as u32,
        },
    }
}

/// A count in words, as the spec writes them (`two`), digits past twelve.
fn count_word(n: usize) -> String {
    const WORDS: [&str; 13] = [
        "none", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve",
    ];
    WORDS
        .get(n)
        .map_or_else(|| n.to_string(), |w| (*w).to_string())
}
