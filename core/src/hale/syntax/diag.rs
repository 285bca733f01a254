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
