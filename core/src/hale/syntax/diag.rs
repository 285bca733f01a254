//! Diagnostics: what was wrong and exactly where, as `file:line:col`, the
//! message, the source line and a caret line under the offending text.

use std::fmt;

/// A position in a source text. `line` and `col` are 1-based; `col` counts
/// Unicode scalar values, so a caret lines up under the character an editor
/// shows at that column.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pos {
    /// Byte offset into the source text.
    pub offset: usize,
    /// Line, from 1.
    pub line: u32,
    /// Column, from 1, in characters.
    pub col: u32,
}

/// A half-open range of source text, `start` included, `end` excluded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span {
    /// The first character.
    pub start: Pos,
    /// Just past the last character.
    pub end: Pos,
}

impl Span {
    /// The span from the start of `self` to the end of `other`.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start,
            end: other.end,
        }
    }
}

/// One error in a source text, with everything needed to show it.
///
/// Its [`Display`](fmt::Display) form is three lines:
///
/// ```text
/// second.hl:4:12: expected `;` after the role `admin`, found `{`
/// role admin {
///            ^
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file name as the caller gave it.
    pub file: String,
    /// Line of the offending text, from 1.
    pub line: u32,
    /// Column of the offending text, from 1, in characters.
    pub col: u32,
    /// What was wrong, in one sentence without a trailing period.
    pub message: String,
    /// The whole source line the error is on, without its line ending.
    pub source_line: String,
    /// How many characters of the line the caret line marks (at least 1).
    pub width: usize,
}

impl Diagnostic {
    /// A diagnostic for `span` of `src`, the text of `file`.
    pub fn at(file: &str, src: &str, span: Span, message: impl Into<String>) -> Diagnostic {
        let start = span.start.offset.min(src.len());
        let line_start = src[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = src[start..].find('\n').map_or(src.len(), |i| start + i);
        let source_line = src[line_start..line_end].trim_end_matches('\r').to_string();
        let end = span.end.offset.clamp(start, line_end);
        let width = src[start..end].chars().count().max(1);
        Diagnostic {
            file: file.to_string(),
            line: span.start.line.max(1),
            col: span.start.col.max(1),
            message: message.into(),
            source_line,
            width,
        }
    }

    /// The caret line: blanks (tabs kept, so the caret lines up under a
    /// tab-indented source line) up to the column, then the carets.
    pub fn caret_line(&self) -> String {
        let mut out: String = self
            .source_line
            .chars()
            .take(self.col as usize - 1)
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        let have = out.chars().count();
        out.extend(std::iter::repeat_n(
            ' ',
            (self.col as usize - 1).saturating_sub(have),
        ));
        out.extend(std::iter::repeat_n('^', self.width));
        out
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}\n{}\n{}",
            self.file,
            self.line,
            self.col,
            self.message,
            self.source_line,
            self.caret_line()
        )
    }
}

impl std::error::Error for Diagnostic {}

/// The texts of a program of several files, each at the base its spans are
/// counted from ([`parse_at`](super::parse_at)): one offset names one
/// place in one file, so a span the model keeps is rendered in the file it
/// was written in, whichever file the law that refuses it reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sources {
    files: Vec<SourceFile>,
}

/// One file of [`Sources`].
#[derive(Clone, Debug, PartialEq, Eq)]
struct SourceFile {
    file: String,
    src: String,
    base: usize,
}

impl Sources {
    /// The sources of a program of one file, `src` the text of `file`.
    pub fn single(file: &str, src: &str) -> Sources {
        let mut s = Sources::default();
        s.push(file, src);
        s
    }

    /// The base the next file pushed is parsed at: past the end of the
    /// last one, with a byte to spare so an empty file's end names it alone.
    pub fn next_base(&self) -> usize {
        self.files.last().map_or(0, |f| f.base + f.src.len() + 1)
    }

    /// Adds `src`, the text of `file`, at [`next_base`](Self::next_base);
    /// returns that base.
    pub fn push(&mut self, file: &str, src: &str) -> usize {
        let base = self.next_base();
        self.files.push(SourceFile {
            file: file.to_string(),
            src: src.to_string(),
            base,
        });
        base
    }

    /// The files' names, the entry first, then in the order they were read.
    pub fn files(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|f| f.file.as_str())
    }

    /// The file a span that starts at `offset` is in (the entry when none
    /// was pushed after it).
    pub fn file_at(&self, offset: usize) -> Option<&str> {
        self.index_at(offset).map(|i| self.files[i].file.as_str())
    }

    fn index_at(&self, offset: usize) -> Option<usize> {
        // The bases ascend: the file is the last one starting at or before it.
        let after = self.files.partition_point(|f| f.base <= offset);
        after.checked_sub(1)
    }

    /// A diagnostic for `span`, in the file it was written in.
    pub fn diagnostic(&self, span: Span, message: impl Into<String>) -> Diagnostic {
        let Some(f) = self.index_at(span.start.offset).map(|i| &self.files[i]) else {
            return Diagnostic::at("", "", span, message);
        };
        let mut local = span;
        local.start.offset -= f.base;
        local.end.offset = local.end.offset.saturating_sub(f.base);
        Diagnostic::at(&f.file, &f.src, local, message)
    }
}
