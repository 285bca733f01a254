//! Why and where a JSON text was refused.

use std::fmt;

/// A refusal of the tokenizer: what was wrong and the exact byte where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// The byte offset of the offending byte (or of the construct it ends).
    pub offset: usize,
    /// The 1-based line of `offset`.
    pub line: usize,
    /// The 1-based column of `offset`, counted in characters.
    pub column: usize,
    /// What was wrong.
    pub kind: ErrorKind,
}

/// What the tokenizer refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The input ended inside a value, or held no value at all.
    UnexpectedEnd,
    /// A character that cannot stand here; `expected` says what could.
    Unexpected {
        /// The character found (U+FFFD when the byte is not UTF-8).
        found: char,
        /// What the grammar allows at this point.
        expected: &'static str,
    },
    /// Bytes that are not UTF-8.
    InvalidUtf8,
    /// A byte order mark at the start of the text (RFC 8259 § 8.1).
    ByteOrderMark,
    /// An unescaped control character (U+0000..U+001F) in a string.
    ControlCharacter(u8),
    /// A backslash followed by something that is not an escape.
    InvalidEscape(char),
    /// `\u` not followed by four hex digits.
    InvalidUnicodeEscape,
    /// A `\u` escape of a UTF-16 surrogate that is not half of a pair.
    LoneSurrogate(u16),
    /// A string not closed before the input ended.
    UnterminatedString,
    /// A number that breaks RFC 8259's grammar; says how.
    InvalidNumber(&'static str),
    /// Content after the one top-level value.
    TrailingContent,
    /// Arrays and objects nested deeper than the limit.
    TooDeep {
        /// The deepest nesting allowed.
        limit: usize,
    },
}

impl Error {
    /// An error of `kind` at `offset` of `input`, with its line and column.
    pub fn at(input: &[u8], offset: usize, kind: ErrorKind) -> Error {
        let (line, column) = line_column(input, offset);
        Error {
            offset,
            line,
            column,
            kind,
        }
    }
}

/// The 1-based line and column (in characters) of byte `offset` of `input`.
pub fn line_column(input: &[u8], offset: usize) -> (usize, usize) {
    let before = &input[..offset.min(input.len())];
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
    // Count characters by their first bytes; a stray continuation byte is
    // not a character, so an invalid sequence counts as at most its lead.
    let column = 1 + before[line_start..]
        .iter()
        .filter(|&&b| (b & 0xc0) != 0x80)
        .count();
    (line, column)
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::UnexpectedEnd => f.write_str("the text ends before the value does"),
            ErrorKind::Unexpected { found, expected } => {
                write!(f, "expected {expected}, found {}", Shown(*found))
            }
            ErrorKind::InvalidUtf8 => f.write_str("the text is not valid UTF-8"),
            ErrorKind::ByteOrderMark => f.write_str("a byte order mark is not allowed"),
            ErrorKind::ControlCharacter(b) => {
                write!(f, "control character U+{b:04X} must be escaped in a string")
            }
            ErrorKind::InvalidEscape(c) => write!(f, "invalid escape `\\{c}`"),
            ErrorKind::InvalidUnicodeEscape => {
                f.write_str("`\\u` must be followed by four hex digits")
            }
            ErrorKind::LoneSurrogate(u) => {
                write!(f, "lone surrogate `\\u{u:04X}` is not a character")
            }
            ErrorKind::UnterminatedString => f.write_str("the string is never closed"),
            ErrorKind::InvalidNumber(why) => write!(f, "invalid number: {why}"),
            ErrorKind::TrailingContent => f.write_str("unexpected content after the value"),
            ErrorKind::TooDeep { limit } => {
                write!(f, "arrays and objects nest deeper than {limit} levels")
            }
        }
    }
}

/// A character as an error shows it: printable ones quoted, others by code.
struct Shown(char);

impl fmt::Display for Shown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = self.0;
        if c.is_control() || c.is_whitespace() || c == '\u{feff}' {
            write!(f, "U+{:04X}", c as u32)
        } else {
            write!(f, "`{c}`")
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.kind)
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns_count_characters() {
        let text = "{\n  \"é\": x".as_bytes();
        let x = text.iter().position(|&b| b == b'x').unwrap();
        assert_eq!(line_column(text, x), (2, 8));
        assert_eq!(line_column(text, 0), (1, 1));
    }
}
