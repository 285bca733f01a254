//! The lexer: the text of a `.hl` file to tokens with exact positions.
//!
//! Every word is an identifier (Hale's keywords are contextual, so the parser
//! decides what a word means where it stands). Comments are `//` to the end
//! of the line and `/* … */`, which does not nest. A number keeps its text as
//! written, a unit or duration suffix included (`1500cent`, `100ms`); a string
//! is decoded.

use super::diag::{Diagnostic, Pos, Span};

/// What a token is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tok {
    /// A word: `[A-Za-z_][A-Za-z0-9_]*`.
    Ident(String),
    /// A number as written: digits (underscores allowed), an optional
    /// fraction and exponent, and an optional unit suffix (`100ms`).
    Number(String),
    /// A string literal, its escapes decoded.
    Str(String),
    /// Punctuation, one of [`PUNCTS`].
    Punct(&'static str),
    /// The end of the text.
    Eof,
}

/// One token and where it stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    /// What it is.
    pub tok: Tok,
    /// Where it is.
    pub span: Span,
}

/// Every punctuation token, longest first so the first match is the one.
pub const PUNCTS: &[&str] = &[
    "..=", "::", "->", "<-", "==", "!=", "<=", ">=", "&&", "||", "..", "+=", "-=", "*=", "/=",
    "%=", "~~", "{", "}", "(", ")", "[", "]", ";", ":", ",", ".", "=", "<", ">", "+", "-", "*",
    "/", "%", "!", "&", "|", "^", "@", "?", "~", "#",
];

struct Lexer<'a> {
    file: &'a str,
    src: &'a str,
    offset: usize,
    line: u32,
    col: u32,
}

impl<'a> Lexer<'a> {
    fn pos(&self) -> Pos {
        Pos {
            offset: self.offset,
            line: self.line,
            col: self.col,
        }
    }

    fn peek(&self) -> Option<char> {
        self.src[self.offset..].chars().next()
    }

    fn peek2(&self) -> Option<char> {
        let mut it = self.src[self.offset..].chars();
        it.next();
        it.next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.offset += c.len_utf8();
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }

    fn error(&self, start: Pos, end: Pos, message: impl Into<String>) -> Diagnostic {
        Diagnostic::at(self.file, self.src, Span { start, end }, message)
    }

    /// Skips blanks and comments; refuses an unterminated block comment.
    fn skip_trivia(&mut self) -> Result<(), Diagnostic> {
        loop {
            match (self.peek(), self.peek2()) {
                (Some(c), _) if c.is_whitespace() => {
                    self.bump();
                }
                (Some('/'), Some('/')) => {
                    while let Some(c) = self.peek() {
                        if c == '\n' {
                            break;
                        }
                        self.bump();
                    }
                }
                (Some('/'), Some('*')) => {
                    let start = self.pos();
                    self.bump();
                    self.bump();
                    loop {
                        match (self.peek(), self.peek2()) {
                            (Some('*'), Some('/')) => {
                                self.bump();
                                self.bump();
                                break;
                            }
                            (Some(_), _) => {
                                self.bump();
                            }
                            (None, _) => {
                                let mut end = start;
                                end.offset += 2;
                                end.col += 2;
                                return Err(self.error(start, end, "unterminated block comment"));
                            }
                        }
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn ident(&mut self) -> Tok {
        let start = self.offset;
        while matches!(self.peek(), Some(c) if c.is_ascii_alphanumeric() || c == '_') {
            self.bump();
        }
        Tok::Ident(self.src[start..self.offset].to_string())
    }

    fn number(&mut self) -> Tok {
        let start = self.offset;
        let digits = |l: &mut Lexer<'_>, hex: bool| {
            while matches!(l.peek(), Some(c) if c.is_ascii_digit() || c == '_' || (hex && c.is_ascii_hexdigit()))
            {
                l.bump();
            }
        };
        if self.peek() == Some('0') && matches!(self.peek2(), Some('x' | 'X')) {
            self.bump();
            self.bump();
            digits(self, true);
        } else {
            digits(self, false);
            if self.peek() == Some('.') && matches!(self.peek2(), Some(c) if c.is_ascii_digit()) {
                self.bump();
                digits(self, false);
            }
            if matches!(self.peek(), Some('e' | 'E')) {
                let rest = &self.src[self.offset + 1..];
                let signed = rest.starts_with(['+', '-']);
                let after = if signed { &rest[1..] } else { rest };
                if after.starts_with(|c: char| c.is_ascii_digit()) {
                    self.bump();
                    if signed {
                        self.bump();
                    }
                    digits(self, false);
                }
            }
        }
        // A unit or duration suffix: `1500cent`, `100ms`.
        while matches!(self.peek(), Some(c) if c.is_ascii_alphanumeric() || c == '_') {
            self.bump();
        }
        Tok::Number(self.src[start..self.offset].to_string())
    }

    fn string(&mut self) -> Result<Tok, Diagnostic> {
        let open = self.pos();
        self.bump();
        let mut out = String::new();
        loop {
            let at = self.pos();
            match self.bump() {
                None => {
                    let mut end = open;
                    end.offset += 1;
                    end.col += 1;
                    return Err(self.error(open, end, "unterminated string literal"));
                }
                Some('"') => return Ok(Tok::Str(out)),
                Some('\\') => {
                    let c = self.bump();
                    match c {
                        Some('n') => out.push('\n'),
                        Some('t') => out.push('\t'),
                        Some('r') => out.push('\r'),
                        Some('0') => out.push('\0'),
                        Some('\\') => out.push('\\'),
                        Some('"') => out.push('"'),
                        Some('\'') => out.push('\''),
                        Some('u') => out.push(self.unicode_escape(at)?),
                        Some(other) => {
                            return Err(self.error(
                                at,
                                self.pos(),
                                format!(
                                    "unknown escape `\\{}` in a string literal",
                                    other.escape_debug()
                                ),
                            ))
                        }
                        None => {
                            let mut end = open;
                            end.offset += 1;
                            end.col += 1;
                            return Err(self.error(open, end, "unterminated string literal"));
                        }
                    }
                }
                Some(c) => out.push(c),
            }
        }
    }

    /// `\u{XXXX}`: one to six hex digits naming a Unicode scalar value.
    fn unicode_escape(&mut self, at: Pos) -> Result<char, Diagnostic> {
        let bad = |l: &Lexer<'_>| {
            l.error(
                at,
                l.pos(),
                "a unicode escape is `\\u{…}` with one to six hex digits naming a character",
            )
        };
        if self.peek() != Some('{') {
            return Err(bad(self));
        }
        self.bump();
        let start = self.offset;
        while matches!(self.peek(), Some(c) if c.is_ascii_hexdigit()) {
            self.bump();
        }
        let hex = &self.src[start..self.offset];
        if self.peek() != Some('}') || hex.is_empty() || hex.len() > 6 {
            return Err(bad(self));
        }
        self.bump();
        u32::from_str_radix(hex, 16)
            .ok()
            .and_then(char::from_u32)
            .ok_or_else(|| bad(self))
    }

    fn punct(&mut self) -> Option<Tok> {
        let rest = &self.src[self.offset..];
        let p = PUNCTS.iter().find(|p| rest.starts_with(**p))?;
        for _ in 0..p.len() {
            self.bump();
        }
        Some(Tok::Punct(p))
    }
}

/// The tokens of `src`, the text of `file`, ending in one [`Tok::Eof`] whose
/// span is empty and sits just after the last token.
pub fn lex(file: &str, src: &str) -> Result<Vec<Token>, Diagnostic> {
    let mut l = Lexer {
        file,
        src,
        offset: 0,
        line: 1,
        col: 1,
    };
    let mut out: Vec<Token> = Vec::new();
    loop {
        l.skip_trivia()?;
        let start = l.pos();
        let Some(c) = l.peek() else {
            let at = out.last().map_or(start, |t| t.span.end);
            out.push(Token {
                tok: Tok::Eof,
                span: Span { start: at, end: at },
            });
            return Ok(out);
        };
        let tok = if c.is_ascii_alphabetic() || c == '_' {
            l.ident()
        } else if c.is_ascii_digit() {
            l.number()
        } else if c == '"' {
            l.string()?
        } else if let Some(p) = l.punct() {
            p
        } else {
            l.bump();
            let shown = if c.is_control() || c.is_whitespace() {
                format!("U+{:04X}", c as u32)
            } else {
                format!("`{c}`")
            };
            return Err(l.error(start, l.pos(), format!("unexpected character {shown}")));
        };
        out.push(Token {
            tok,
            span: Span {
                start,
                end: l.pos(),
            },
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(src: &str) -> Vec<Tok> {
        lex("t.hl", src)
            .unwrap()
            .into_iter()
            .map(|t| t.tok)
            .collect()
    }

    #[test]
    fn numbers_keep_their_suffix_and_ranges_are_not_fractions() {
        assert_eq!(
            toks("1500cent 100ms 0..64 1.5 1_000 0x1F"),
            vec![
                Tok::Number("1500cent".into()),
                Tok::Number("100ms".into()),
                Tok::Number("0".into()),
                Tok::Punct(".."),
                Tok::Number("64".into()),
                Tok::Number("1.5".into()),
                Tok::Number("1_000".into()),
                Tok::Number("0x1F".into()),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn strings_decode_escapes_and_comments_vanish() {
        assert_eq!(
            toks("\"a\\\"b\\n\\u{e9}\" /* x \" */ // y\nz"),
            vec![
                Tok::Str("a\"b\n\u{e9}".into()),
                Tok::Ident("z".into()),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn positions_count_lines_and_characters() {
        let t = lex("t.hl", "\"é\"\n  ab::c").unwrap();
        assert_eq!((t[1].span.start.line, t[1].span.start.col), (2, 3));
        assert_eq!(t[2].tok, Tok::Punct("::"));
        assert_eq!((t[2].span.start.line, t[2].span.start.col), (2, 5));
        assert_eq!(t.last().unwrap().span.start, t[3].span.end);
    }
}
