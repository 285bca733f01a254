//! A reader of plain JSON, for fast paths in front of the [`Tokenizer`].
//!
//! Plain JSON is what nearly every message on a hot path is: ASCII, strings
//! without escapes, a few levels of nesting. [`Plain`] reads exactly that
//! subset in one pass over the bytes, with no events and no UTF-8
//! validation to do. It never accepts a text the tokenizer refuses, and it
//! gives up (`None`) on anything outside the subset — an escape, a byte
//! past ASCII, a deep nesting, or any error — so its caller falls back to
//! its general path, which reads the text with the tokenizer and judges it.
//! A fast path built on it must therefore answer exactly what its general
//! path answers for every text the fast path takes, which its tests hold
//! differentially.
//!
//! [`Tokenizer`]: super::Tokenizer

use super::swar::{stops, HIGH};

/// The bytes a plain string holds as themselves: ASCII from the space up,
/// but `"` and `\\`.
static PLAIN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0x20;
    while b < 0x80 {
        t[b] = b != b'"' as usize && b != b'\\' as usize;
        b += 1;
    }
    t
};

/// Whether all eight bytes of `word` are [`PLAIN`] (the tokenizer's
/// eight-at-a-time test of its string scan, plus the bytes past ASCII).
#[inline]
fn plain_word(word: u64) -> bool {
    (stops(word) | (word & HIGH)) == 0
}

/// A cursor over a text, reading its plain JSON.
#[derive(Clone, Debug)]
pub(crate) struct Plain<'a> {
    bytes: &'a [u8],
    pos: usize,
}

/// The nesting a [`Plain::skip_value`] reads before giving up: far below
/// every limit of the tokenizer's callers, and a bound on the recursion.
pub(crate) const PLAIN_DEPTH: usize = 32;

impl<'a> Plain<'a> {
    /// A cursor at the start of `bytes`.
    pub(crate) fn new(bytes: &'a [u8]) -> Plain<'a> {
        Plain { bytes, pos: 0 }
    }

    /// Where the cursor is.
    #[inline]
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// The byte at the cursor.
    #[inline]
    pub(crate) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// Passes over JSON whitespace (space, tab, CR, LF).
    #[inline]
    pub(crate) fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\r' | b'\n') = self.peek() {
            self.pos += 1;
        }
    }

    /// Consumes `b` if it is at the cursor.
    #[inline]
    pub(crate) fn eat(&mut self, b: u8) -> Option<()> {
        (self.peek() == Some(b)).then(|| self.pos += 1)
    }

    /// Consumes and returns the byte at the cursor.
    #[inline]
    pub(crate) fn bump(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.pos += 1;
        Some(b)
    }

    /// An object member's key at the cursor and the colon after it,
    /// whitespace passed over: the key's bytes (plain, as
    /// [`string_bytes`](Plain::string_bytes) reads them).
    #[inline]
    pub(crate) fn key(&mut self) -> Option<&'a [u8]> {
        let key = self.string_bytes()?;
        self.ws();
        self.eat(b':')?;
        self.ws();
        Some(key)
    }

    /// After an object member's value: `true` when a comma says another
    /// member follows (the cursor at its key), `false` at the object's
    /// closing brace (the cursor past it).
    #[inline]
    pub(crate) fn more_members(&mut self) -> Option<bool> {
        self.ws();
        match self.bump()? {
            b',' => {
                self.ws();
                Some(true)
            }
            b'}' => Some(false),
            _ => None,
        }
    }

    /// Whether only whitespace is left.
    pub(crate) fn at_end(&mut self) -> bool {
        self.ws();
        self.pos == self.bytes.len()
    }

    /// The string at the cursor (its `"`), without its quotes: ASCII, no
    /// escape, no control character, or `None`.
    #[inline]
    pub(crate) fn string(&mut self) -> Option<&'a str> {
        // ASCII, so valid UTF-8: the check is a formality the type needs.
        std::str::from_utf8(self.string_bytes()?).ok()
    }

    /// [`string`](Plain::string)'s bytes, for a reader that only compares
    /// or passes over them.
    #[inline]
    pub(crate) fn string_bytes(&mut self) -> Option<&'a [u8]> {
        if self.peek() != Some(b'"') {
            return None;
        }
        let bytes = self.bytes;
        let start = self.pos + 1;
        let mut i = start;
        // Eight bytes at a time while none of them ends the run.
        while let Some(chunk) = bytes.get(i..i + 8) {
            let word = u64::from_le_bytes([
                chunk[0], chunk[1], chunk[2], chunk[3], chunk[4], chunk[5], chunk[6], chunk[7],
            ]);
            if !plain_word(word) {
                break;
            }
            i += 8;
        }
        while PLAIN[usize::from(*bytes.get(i)?)] {
            i += 1;
        }
        // Stopped at the closing quote, or at an escape, a control
        // character or a byte past ASCII: not plain.
        if bytes[i] != b'"' {
            return None;
        }
        self.pos = i + 1;
        Some(&bytes[start..i])
    }

    /// The number at the cursor, as its token, read by RFC 8259's grammar
    /// (`-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`), or `None`.
    /// Whether the token ends where it should is its container's to check
    /// (by what follows it), as for every scalar here.
    pub(crate) fn number(&mut self) -> Option<&'a str> {
        // ASCII digits and signs: the check is a formality the type needs.
        std::str::from_utf8(self.number_bytes()?).ok()
    }

    /// [`number`](Plain::number)'s bytes, for a reader that passes over
    /// them or reads the digits itself.
    pub(crate) fn number_bytes(&mut self) -> Option<&'a [u8]> {
        let bytes = self.bytes;
        let digit = |i: usize| matches!(bytes.get(i), Some(b'0'..=b'9'));
        let start = self.pos;
        let mut i = start;
        if bytes.get(i) == Some(&b'-') {
            i += 1;
        }
        match bytes.get(i)? {
            b'0' => {
                i += 1;
                if digit(i) {
                    return None;
                }
            }
            b'1'..=b'9' => {
                while digit(i) {
                    i += 1;
                }
            }
            _ => return None,
        }
        if bytes.get(i) == Some(&b'.') {
            i += 1;
            if !digit(i) {
                return None;
            }
            while digit(i) {
                i += 1;
            }
        }
        if let Some(b'e' | b'E') = bytes.get(i) {
            i += 1;
            if let Some(b'+' | b'-') = bytes.get(i) {
                i += 1;
            }
            if !digit(i) {
                return None;
            }
            while digit(i) {
                i += 1;
            }
        }
        self.pos = i;
        Some(&bytes[start..i])
    }

    /// `true`, `false` or `null` at the cursor, as the word.
    pub(crate) fn literal(&mut self) -> Option<&'static str> {
        let word = match self.peek()? {
            b't' => "true",
            b'f' => "false",
            b'n' => "null",
            _ => return None,
        };
        if !self.bytes[self.pos..].starts_with(word.as_bytes()) {
            return None;
        }
        self.pos += word.len();
        Some(word)
    }

    /// Passes over one value of plain JSON nesting at most `depth` arrays
    /// and objects, leaving the cursor just past it.
    pub(crate) fn skip_value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'"' => self.string_bytes().map(drop),
            b'-' | b'0'..=b'9' => self.number_bytes().map(drop),
            b't' | b'f' | b'n' => self.literal().map(drop),
            b'{' => {
                let depth = depth.checked_sub(1)?;
                self.pos += 1;
                self.ws();
                if self.eat(b'}').is_some() {
                    return Some(());
                }
                loop {
                    self.key()?;
                    self.skip_value(depth)?;
                    if !self.more_members()? {
                        return Some(());
                    }
                }
            }
            b'[' => {
                let depth = depth.checked_sub(1)?;
                self.pos += 1;
                self.ws();
                if self.eat(b']').is_some() {
                    return Some(());
                }
                loop {
                    self.skip_value(depth)?;
                    self.ws();
                    match self.bump()? {
                        b',' => self.ws(),
                        b']' => return Some(()),
                        _ => return None,
                    }
                }
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::Tokenizer;

    /// Whether the tokenizer reads `text` as one JSON value.
    fn tokenizer_reads(text: &[u8]) -> bool {
        Tokenizer::new(text).read_to_end().is_ok()
    }

    /// Whether `Plain` reads `text` as one value and nothing else.
    fn plain_reads(text: &[u8]) -> bool {
        let mut p = Plain::new(text);
        p.ws();
        p.skip_value(PLAIN_DEPTH).is_some() && p.at_end()
    }

    #[test]
    fn plain_json_is_read_and_the_rest_given_up() {
        for text in [
            &b"1"[..],
            b"-0",
            b"-0.5e+3",
            b"12E-1",
            b" {\"a\" : [1, true, null, {\"b\":\"c\"}], \"d\":\"\x7f\"} ",
            b"[]",
            b"{}",
            b"\"\"",
        ] {
            assert!(plain_reads(text), "{}", String::from_utf8_lossy(text));
            assert!(tokenizer_reads(text), "{}", String::from_utf8_lossy(text));
        }
        for text in [
            &b"01"[..],
            b"1.",
            b"1e",
            b"-",
            b".5",
            b"+1",
            b"tru",
            b"truex",
            b"nul",
            b"{\"a\":1,}",
            b"[1,]",
            b"{\"a\" 1}",
            b"{1:2}",
            b"\"a\\nb\"",
            b"\"\x01\"",
            b"\"\xc3\xa9\"",
            b"\"open",
            b"[1] [2]",
            b"\xef\xbb\xbf1",
            b"\x0c1",
        ] {
            assert!(!plain_reads(text), "{}", String::from_utf8_lossy(text));
        }
        let deep = format!("{}{}", "[".repeat(PLAIN_DEPTH), "]".repeat(PLAIN_DEPTH));
        assert!(plain_reads(deep.as_bytes()));
        let deeper = format!("[{deep}]");
        assert!(!plain_reads(deeper.as_bytes()));
    }

    #[test]
    fn whatever_plain_reads_the_tokenizer_reads_alike() {
        // Every text over a small alphabet up to four bytes, and mutations
        // of a larger one: Plain reads none the tokenizer refuses, and ends
        // a value where the tokenizer's skip ends it.
        let alphabet = b"{}[]\":,01-.e tfnrul\\a";
        let mut texts: Vec<Vec<u8>> = vec![Vec::new()];
        let mut last = texts.clone();
        for _ in 0..4 {
            last = last
                .iter()
                .flat_map(|t| {
                    alphabet.iter().map(move |&b| {
                        let mut t = t.clone();
                        t.push(b);
                        t
                    })
                })
                .collect();
            texts.extend(last.iter().cloned());
        }
        let base = br#"{"call":"Ledger::rebalance","payload":{"book":"main","n":[1,-2.5e3,true,null]},"id":1}"#;
        for i in 0..base.len() {
            for &b in alphabet.iter().chain(b"\x00\x80\xff") {
                let mut t = base.to_vec();
                t[i] = b;
                texts.push(t.clone());
                t.remove(i);
                texts.push(t);
            }
        }
        let mut read = 0;
        for text in &texts {
            if plain_reads(text) {
                read += 1;
                assert!(tokenizer_reads(text), "{}", String::from_utf8_lossy(text));
                let mut p = Plain::new(text);
                p.ws();
                let start = p.pos();
                p.skip_value(PLAIN_DEPTH).unwrap();
                let mut t = Tokenizer::new(text);
                let first = t.next_event().unwrap().unwrap();
                assert_eq!(t.event_offset(), start);
                assert_eq!(t.skip_value(&first).unwrap(), p.pos());
            }
        }
        // Not a test that passes by reading nothing.
        assert!(read > 1000, "{read} of {} read", texts.len());
    }
}
