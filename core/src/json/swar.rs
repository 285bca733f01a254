//! Eight bytes at a time: the word tests the string scan, the whitespace
//! skip and the plain reader share (a module of their own below all
//! three, so the tokenizer and the string scan need not import each
//! other).

/// `0x01` in each of a word's eight bytes: times a byte, that byte in
/// every lane.
pub(super) const LANES: u64 = 0x0101_0101_0101_0101;
/// The high bit of each of a word's eight bytes.
pub(super) const HIGH: u64 = 0x8080_8080_8080_8080;

/// The high bit of every byte of `word` that is `"`, `\` or below 0x20
/// (non-ASCII bytes never match, so UTF-8 passes through to validation);
/// 0 when none is.
#[inline]
pub(super) fn stops(word: u64) -> u64 {
    let has_zero = |v: u64| v.wrapping_sub(LANES) & !v & HIGH;
    let quote = has_zero(word ^ (LANES * u64::from(b'"')));
    let backslash = has_zero(word ^ (LANES * u64::from(b'\\')));
    let control = word.wrapping_sub(LANES * 0x20) & !word & HIGH;
    quote | backslash | control
}
