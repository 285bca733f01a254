//! Strings: scanned eight bytes at a time, sliced from the input's
//! validated UTF-8 when they hold no escape, decoded into a new `String`
//! when they do (RFC 8259 § 7, with lone surrogates refused).

use std::borrow::Cow;

use super::error::{Error, ErrorKind};
use super::swar::stops;
use super::tokenizer::Tokenizer;

/// Bytes a string scan must stop at: `"`, `\` and the control characters.
static STOP: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// The offset of the first byte at or after `i` that a JSON string cannot
/// hold as itself (`"`, `\`, U+0000..U+001F), or `bytes.len()`. Reads eight
/// bytes at a time; shared by the tokenizer and the canonical writer.
#[inline]
pub(crate) fn scan_plain(bytes: &[u8], mut i: usize) -> usize {
    while let Some(chunk) = bytes.get(i..i + 8) {
        let word = u64::from_le_bytes([
            chunk[0], chunk[1], chunk[2], chunk[3], chunk[4], chunk[5], chunk[6], chunk[7],
        ]);
        if stops(word) != 0 {
            break;
        }
        i += 8;
    }
    while i < bytes.len() && !STOP[bytes[i] as usize] {
        i += 1;
    }
    i
}

impl<'a> Tokenizer<'a> {
    /// Reads the string whose `"` is at `pos`.
    #[inline]
    pub(super) fn string(&mut self) -> Result<Cow<'a, str>, Error> {
        let start = self.pos + 1;
        let end = self.scan(start);
        match self.input.get(end) {
            Some(b'"') => {
                let s = self.utf8(start, end)?;
                self.pos = end + 1;
                Ok(Cow::Borrowed(s))
            }
            Some(b'\\') => self.escaped_string(start, end).map(Cow::Owned),
            Some(&b) => self.fail(end, ErrorKind::ControlCharacter(b)),
            None => {
                let pos = self.pos;
                self.fail(pos, ErrorKind::UnterminatedString)
            }
        }
    }

    /// The offset of the first `"`, `\` or control byte at or after `i`.
    #[inline]
    fn scan(&self, i: usize) -> usize {
        scan_plain(self.input, i)
    }

    /// The text of `start..end`, both at ASCII bytes of a string; refused
    /// when the range reaches past the input's valid UTF-8.
    #[inline]
    pub(super) fn utf8(&mut self, start: usize, end: usize) -> Result<&'a str, Error> {
        let text = self.text;
        match text.get(start..end) {
            Some(s) => Ok(s),
            None => self.fail(text.len().max(start), ErrorKind::InvalidUtf8),
        }
    }

    /// Finishes a string whose first escape is at `i`.
    fn escaped_string(&mut self, start: usize, mut i: usize) -> Result<String, Error> {
        let mut out = String::with_capacity(i - start + 16);
        out.push_str(self.utf8(start, i)?);
        loop {
            // `i` is at a backslash.
            i = self.escape(i, &mut out)?;
            let end = self.scan(i);
            out.push_str(self.utf8(i, end)?);
            match self.input.get(end) {
                Some(b'"') => {
                    self.pos = end + 1;
                    return Ok(out);
                }
                Some(b'\\') => i = end,
                Some(&b) => return self.fail(end, ErrorKind::ControlCharacter(b)),
                None => {
                    let pos = self.pos;
                    return self.fail(pos, ErrorKind::UnterminatedString);
                }
            }
        }
    }

    /// Decodes the escape whose backslash is at `i`; returns the offset
    /// after it.
    fn escape(&mut self, i: usize, out: &mut String) -> Result<usize, Error> {
        let Some(&c) = self.input.get(i + 1) else {
            let pos = self.pos;
            return self.fail(pos, ErrorKind::UnterminatedString);
        };
        let decoded = match c {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => return self.unicode_escape(i, out),
            _ => {
                let found = self.char_at(i + 1);
                return self.fail(i, ErrorKind::InvalidEscape(found));
            }
        };
        out.push(decoded);
        Ok(i + 2)
    }

    fn hex4(&mut self, at: usize) -> Result<u16, Error> {
        let digits = self.input.get(at..at + 4);
        let value = digits.and_then(|d| {
            d.iter().try_fold(0u16, |acc, &b| {
                let v = (b as char).to_digit(16)?;
                Some(acc << 4 | v as u16)
            })
        });
        match value {
            Some(v) => Ok(v),
            None => self.fail(at - 2, ErrorKind::InvalidUnicodeEscape),
        }
    }

    fn unicode_escape(&mut self, i: usize, out: &mut String) -> Result<usize, Error> {
        let unit = self.hex4(i + 2)?;
        let scalar = match unit {
            0xd800..=0xdbff => {
                let follows = self.input.get(i + 6..i + 8) == Some(b"\\u");
                let low = if follows {
                    Some(self.hex4(i + 8)?)
                } else {
                    None
                };
                match low {
                    Some(low @ 0xdc00..=0xdfff) => {
                        let c = 0x10000
                            + ((u32::from(unit) - 0xd800) << 10)
                            + (u32::from(low) - 0xdc00);
                        out.push(char::from_u32(c).unwrap_or('\u{fffd}'));
                        return Ok(i + 12);
                    }
                    _ => return self.fail(i, ErrorKind::LoneSurrogate(unit)),
                }
            }
            0xdc00..=0xdfff => return self.fail(i, ErrorKind::LoneSurrogate(unit)),
            _ => u32::from(unit),
        };
        out.push(char::from_u32(scalar).unwrap_or('\u{fffd}'));
        Ok(i + 6)
    }
}
