//! Numbers read by their value, not their spelling.
//!
//! A token is first taken apart ([`crate::json::Number::scientific`]): significant digits
//! and a power of ten, counted but not converted. The limits are checked on
//! those counts, so `1e5000` at Int, or `1e-999999999` at Decimal, is refused
//! before a single digit is built.

use dashu_int::IBig;

use super::error::{DecodeError, DecodeErrorKind};
use super::limits::Limits;
use crate::flow::number::{Decimal, Int};
use crate::json::Scientific;

/// How long a number's canonical text is: sign, digits, point, zeros.
pub(crate) fn canonical_len(s: &Scientific<'_>) -> u64 {
    if s.is_zero() {
        return 1;
    }
    let digits = s.digit_count() as u64;
    let sign = u64::from(s.negative);
    let e = s.exponent;
    let body = if e >= 0 {
        digits + e as u64
    } else {
        let fraction = e.unsigned_abs();
        if digits > fraction {
            digits + 1
        } else {
            fraction + 2
        }
    };
    sign + body
}

/// Past this an exponent may have saturated (see
/// [`crate::json::Number::EXPONENT_SATURATION`]), so messages say only "over 10^14".
const HUGE: u64 = 100_000_000_000_000;

fn limit(message: String) -> DecodeError {
    DecodeError::new(DecodeErrorKind::Limit, message)
}

/// The significant digits as a big integer (the count is already bounded).
fn big_digits(s: &Scientific<'_>) -> IBig {
    if let Some(small) = s.small_digits() {
        return IBig::from(small);
    }
    let mut text = String::with_capacity(s.digit_count());
    text.push_str(s.high);
    text.push_str(s.low);
    // The digits are ASCII decimal by the tokenizer's grammar.
    IBig::from_str_radix(&text, 10).unwrap_or(IBig::ZERO)
}

/// The Decimal a token stands for, within the limits.
#[inline]
pub(crate) fn decimal(s: &Scientific<'_>, limits: &Limits) -> Result<Decimal, DecodeError> {
    let s = *s;
    if s.is_zero() {
        return Ok(Decimal::zero());
    }
    if s.digit_count() > limits.max_decimal_digits {
        return Err(limit(format!(
            "the number has {} significant digits, past the limit of {}",
            s.digit_count(),
            limits.max_decimal_digits
        )));
    }
    if s.exponent.unsigned_abs() > limits.max_decimal_exponent {
        let size = if s.exponent.unsigned_abs() >= HUGE {
            "is over 10^14 in size".to_owned()
        } else {
            format!("is {}", s.exponent)
        };
        return Err(limit(format!(
            "the number's exponent {size}, past the limit of ±{}",
            limits.max_decimal_exponent
        )));
    }
    if let Some(small) = s.small_digits() {
        if let Ok(c) = i64::try_from(small) {
            let c = if s.negative { -c } else { c };
            return Ok(Decimal::from_normalized_i64(c, s.exponent));
        }
    }
    let c = big_digits(&s);
    let c = if s.negative { -c } else { c };
    Ok(Decimal::from_normalized(c, s.exponent))
}

/// The Int a token stands for, within the limits: any spelling of a whole
/// number (`100`, `1e2`, `100.0`) is that Int.
pub(crate) fn int(s: &Scientific<'_>, raw: &str, limits: &Limits) -> Result<Int, DecodeError> {
    let s = *s;
    if s.is_zero() {
        return Ok(Int::zero());
    }
    if s.exponent < 0 {
        return Err(DecodeError::new(
            DecodeErrorKind::Mismatch,
            format!("expected Int, found {}, which is not whole", short(raw)),
        ));
    }
    let written = s.digit_count() as u64 + s.exponent as u64;
    if written > limits.max_int_digits as u64 {
        let digits = if s.exponent as u64 >= HUGE {
            "over 10^14".to_owned()
        } else {
            written.to_string()
        };
        return Err(limit(format!(
            "the Int has {digits} digits, past the limit of {}",
            limits.max_int_digits
        )));
    }
    let mut v = big_digits(&s);
    if s.exponent > 0 {
        v *= IBig::from(10u8).pow(s.exponent as usize);
    }
    Ok(Int(if s.negative { -v } else { v }))
}

fn short(raw: &str) -> String {
    if raw.len() > 40 {
        format!("{}…", &raw[..40])
    } else {
        raw.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::{Event, Number, Tokenizer};

    fn with<T>(text: &str, f: impl FnOnce(&Number<'_>) -> T) -> T {
        match Tokenizer::new(text.as_bytes()).next_event() {
            Ok(Some(Event::Number(n))) => f(&n),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn canonical_length_is_exact() {
        for text in [
            "0",
            "-0.0",
            "1",
            "-1",
            "1.5",
            "-0.025",
            "12e3",
            "1e-1",
            "123.456",
            "1E22",
            "0.000120",
            "-65.613616999999977",
        ] {
            let len = with(text, |n| canonical_len(&n.scientific()));
            let written = with(text, |n| {
                decimal(&n.scientific(), &Limits::default())
                    .unwrap()
                    .to_string()
            });
            assert_eq!(len, written.len() as u64, "{text} → {written}");
        }
    }

    #[test]
    fn whole_numbers_in_any_spelling_are_ints() {
        let limits = Limits::default();
        for (text, want) in [
            ("100", 100),
            ("1e2", 100),
            ("100.0", 100),
            ("-0", 0),
            ("1000e-1", 100),
        ] {
            let got = with(text, |n| int(&n.scientific(), n.raw(), &limits));
            assert_eq!(got.unwrap(), Int::from(want as i64), "{text}");
        }
        assert!(with("1.5", |n| int(&n.scientific(), n.raw(), &limits)).is_err());
    }
}
