//! A number token, kept as its raw text.
//!
//! The tokenizer checks the RFC 8259 grammar and nothing else: what a number
//! means (an exact integer, a decimal, too large for a limit) is the
//! consumer's call, made from the parts below without converting anything.

/// A JSON number token: its exact text and where its parts are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Number<'a> {
    raw: &'a str,
    // Offsets into `raw`, as u32 to keep events small (the tokenizer
    // refuses a number token of 4 GiB or more).
    int_end: u32,
    frac_end: u32,
}

impl<'a> Number<'a> {
    /// A token already checked against the grammar: `int_end` is where the
    /// integer digits end, `frac_end` where the fraction (if any) ends.
    pub(crate) fn new(raw: &'a str, int_end: u32, frac_end: u32) -> Number<'a> {
        Number {
            raw,
            int_end,
            frac_end,
        }
    }

    fn int_end(&self) -> usize {
        self.int_end as usize
    }

    fn frac_end(&self) -> usize {
        self.frac_end as usize
    }

    /// The token exactly as written, e.g. `-1.50e+3`.
    pub fn raw(&self) -> &'a str {
        self.raw
    }

    /// Whether the token starts with `-` (so `-0` is negative here).
    pub fn is_negative(&self) -> bool {
        self.raw.as_bytes()[0] == b'-'
    }

    /// The digits before any `.` or exponent, without the sign.
    pub fn integer_digits(&self) -> &'a str {
        let start = usize::from(self.is_negative());
        &self.raw[start..self.int_end()]
    }

    /// The digits after the `.`, empty when there is no fraction.
    pub fn fraction_digits(&self) -> &'a str {
        if self.frac_end > self.int_end {
            &self.raw[self.int_end() + 1..self.frac_end()]
        } else {
            ""
        }
    }

    /// The exponent after `e` or `E`, with its sign if written (`+3`, `-7`,
    /// `12`), or `None`.
    pub fn exponent_text(&self) -> Option<&'a str> {
        (self.frac_end() < self.raw.len()).then(|| &self.raw[self.frac_end() + 1..])
    }

    /// Whether the token has neither fraction nor exponent: the spelling the
    /// Hale codec requires of an Int.
    pub fn is_plain_integer(&self) -> bool {
        self.int_end() == self.raw.len()
    }

    /// The exponent's value, saturated at ±[`Number::EXPONENT_SATURATION`]:
    /// past that every consumer's limit is long exceeded, and saturating
    /// keeps arithmetic on it from overflowing.
    pub fn exponent(&self) -> i64 {
        let Some(text) = self.exponent_text() else {
            return 0;
        };
        let (negative, digits) = match text.as_bytes()[0] {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let mut v: i64 = 0;
        for b in digits.bytes() {
            v = v * 10 + i64::from(b - b'0');
            if v >= Self::EXPONENT_SATURATION {
                v = Self::EXPONENT_SATURATION;
                break;
            }
        }
        if negative {
            -v
        } else {
            v
        }
    }

    /// Where [`Number::exponent`] saturates: 10^15, far past any size
    /// limit, small enough that adding any digit count cannot overflow.
    pub const EXPONENT_SATURATION: i64 = 1_000_000_000_000_000;

    /// The number as significant digits and a power of ten, without
    /// building anything: `-1.500e3` is negative, digits `15`, exponent 2.
    #[inline]
    pub fn scientific(&self) -> Scientific<'a> {
        let int = self.integer_digits();
        let frac = self.fraction_digits();
        // Leading zeros of the digit string int ++ frac.
        let int_lead = int.bytes().take_while(|&b| b == b'0').count();
        let (int_sig, frac_sig) = if int_lead == int.len() {
            let frac_lead = frac.bytes().take_while(|&b| b == b'0').count();
            ("", &frac[frac_lead..])
        } else {
            (&int[int_lead..], frac)
        };
        // Trailing zeros, which move into the exponent.
        let frac_trail = frac_sig.bytes().rev().take_while(|&b| b == b'0').count();
        let (int_sig, frac_sig, trailing) = if frac_trail == frac_sig.len() {
            let int_trail = int_sig.bytes().rev().take_while(|&b| b == b'0').count();
            (
                &int_sig[..int_sig.len() - int_trail],
                "",
                int_trail as i64 + frac.len() as i64,
            )
        } else {
            (
                int_sig,
                &frac_sig[..frac_sig.len() - frac_trail],
                frac_trail as i64,
            )
        };
        let digit_count = int_sig.len() + frac_sig.len();
        let exponent = if digit_count == 0 {
            0
        } else {
            self.exponent() - frac.len() as i64 + trailing
        };
        Scientific {
            negative: self.is_negative() && digit_count > 0,
            high: int_sig,
            low: frac_sig,
            exponent,
        }
    }
}

/// A number as `±digits × 10^exponent`, the digits free of leading and
/// trailing zeros (so zero has no digits and exponent 0).
///
/// The digits are the concatenation `high ++ low`: the token's integer and
/// fraction digits are not contiguous in its text, and nothing is copied to
/// join them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scientific<'a> {
    /// Whether the value is below zero (`-0` is not).
    pub negative: bool,
    /// The significant digits from the integer part.
    pub high: &'a str,
    /// The significant digits from the fraction.
    pub low: &'a str,
    /// The power of ten the digits are multiplied by, saturated as
    /// [`Number::exponent`] is.
    pub exponent: i64,
}

impl Scientific<'_> {
    /// How many significant digits.
    pub fn digit_count(&self) -> usize {
        self.high.len() + self.low.len()
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.digit_count() == 0
    }

    /// The significant digits, in order.
    pub fn digits(&self) -> impl Iterator<Item = u8> + '_ {
        self.high.bytes().chain(self.low.bytes()).map(|b| b - b'0')
    }

    /// The value's digits as a `u64` when there are at most 19 of them
    /// (19 decimal digits always fit).
    #[inline]
    pub fn small_digits(&self) -> Option<u64> {
        if self.digit_count() > 19 {
            return None;
        }
        let mut v: u64 = 0;
        for &b in self.high.as_bytes().iter().chain(self.low.as_bytes()) {
            v = v * 10 + u64::from(b - b'0');
        }
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::{Event, Tokenizer};

    fn num(text: &str) -> Number<'_> {
        match Tokenizer::new(text.as_bytes()).next_event() {
            Ok(Some(Event::Number(n))) => n,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn parts_of_a_token() {
        let n = num("-12.50e+3");
        assert_eq!(n.raw(), "-12.50e+3");
        assert!(n.is_negative());
        assert_eq!(n.integer_digits(), "12");
        assert_eq!(n.fraction_digits(), "50");
        assert_eq!(n.exponent_text(), Some("+3"));
        assert_eq!(n.exponent(), 3);
        assert!(!n.is_plain_integer());
        assert!(num("-7").is_plain_integer());
        assert_eq!(num("1E-2").exponent(), -2);
    }

    #[test]
    fn scientific_strips_zeros_into_the_exponent() {
        let s = num("-12.50e+3").scientific();
        assert_eq!(
            (s.negative, s.high, s.low, s.exponent),
            (true, "12", "5", 2)
        );
        let s = num("0.000120").scientific();
        assert_eq!((s.high, s.low, s.exponent), ("", "12", -5));
        let s = num("1200").scientific();
        assert_eq!((s.high, s.low, s.exponent), ("12", "", 2));
        let s = num("100.000").scientific();
        assert_eq!((s.high, s.low, s.exponent), ("1", "", 2));
        let s = num("-0.0e99").scientific();
        assert!(s.is_zero() && !s.negative && s.exponent == 0);
        assert_eq!(num("1e99999999999999999999").scientific().exponent, {
            Number::EXPONENT_SATURATION
        });
        assert_eq!(num("123.456").scientific().small_digits(), Some(123_456));
    }
}
