//! What a runner prints: one line per record, then a summary line.

use std::fmt::Write as _;

/// What became of one record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The reply was the recorded one.
    Pass,
    /// It was not, or the record could not be run: why.
    Fail(String),
    /// The exchange needs what this run could not arrange: what.
    NotProvoked(String),
}

/// One record's line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// `<transport>/<name>`.
    pub name: String,
    /// What became of it.
    pub verdict: Verdict,
}

/// A run's lines, in the order run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Notes printed before the records (what a check described).
    pub notes: Vec<String>,
    /// One per record.
    pub lines: Vec<Line>,
}

impl Report {
    /// Adds a record's line.
    pub fn push(&mut self, name: &str, verdict: Verdict) {
        self.lines.push(Line {
            name: name.to_owned(),
            verdict,
        });
    }

    /// How many passed.
    pub fn passed(&self) -> usize {
        self.count(|v| *v == Verdict::Pass)
    }

    /// How many failed.
    pub fn failed(&self) -> usize {
        self.count(|v| matches!(v, Verdict::Fail(_)))
    }

    /// How many could not be provoked.
    pub fn not_provoked(&self) -> usize {
        self.count(|v| matches!(v, Verdict::NotProvoked(_)))
    }

    fn count(&self, f: impl Fn(&Verdict) -> bool) -> usize {
        self.lines.iter().filter(|l| f(&l.verdict)).count()
    }

    /// The text printed: the notes, a line per record (`pass  unix/result`,
    /// `FAIL  unix/result: why`, `not provoked  unix/…: what`), and the
    /// summary `N passed, N failed` (with `, N not provoked` when a run
    /// could not provoke some).
    pub fn render(&self) -> String {
        let mut out = String::new();
        for n in &self.notes {
            let _ = writeln!(out, "{n}");
        }
        for l in &self.lines {
            let _ = match &l.verdict {
                Verdict::Pass => writeln!(out, "pass  {}", l.name),
                Verdict::Fail(why) => writeln!(out, "FAIL  {}: {why}", l.name),
                Verdict::NotProvoked(what) => writeln!(out, "not provoked  {}: {what}", l.name),
            };
        }
        let _ = write!(out, "{} passed, {} failed", self.passed(), self.failed());
        if self.not_provoked() > 0 {
            let _ = write!(out, ", {} not provoked", self.not_provoked());
        }
        out.push('\n');
        out
    }

    /// The exit status: 1 when anything failed, else 0.
    pub fn status(&self) -> i32 {
        i32::from(self.failed() > 0)
    }
}
