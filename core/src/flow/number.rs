//! Exact numbers: [`Int`] of any size and normalized [`Decimal`].
//!
//! Neither ever passes through binary floating point. A decimal is held as a
//! coefficient and a power-of-ten exponent, normalized so that equal values
//! have equal representations (1.50 and 1.5 are one value), and written in
//! plain decimal notation by `Display`, which is its canonical text.

use std::fmt;

use dashu_int::IBig;

/// An exact integer of any size.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Int(pub IBig);

impl Int {
    /// Zero.
    pub fn zero() -> Int {
        Int(IBig::ZERO)
    }
}

impl From<i64> for Int {
    fn from(v: i64) -> Int {
        Int(IBig::from(v))
    }
}

impl From<i128> for Int {
    fn from(v: i128) -> Int {
        Int(IBig::from(v))
    }
}

impl From<IBig> for Int {
    fn from(v: IBig) -> Int {
        Int(v)
    }
}

impl fmt::Display for Int {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// An exact decimal, `coefficient × 10^exponent`, always normalized: the
/// coefficient has no trailing decimal zero, and zero is `0 × 10^0`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Decimal {
    coefficient: IBig,
    exponent: i64,
}

impl Decimal {
    /// `coefficient × 10^exponent`, normalized.
    ///
    /// Normalizing strips trailing zeros from the coefficient; callers that
    /// read untrusted input bound the coefficient's digits first (the decoder's
    /// `Limits`), so this never works on an unbounded number.
    pub fn new(coefficient: IBig, exponent: i64) -> Decimal {
        if coefficient == IBig::ZERO {
            return Decimal::zero();
        }
        let ten = IBig::from(10u8);
        let mut c = coefficient;
        let mut e = exponent;
        loop {
            let (q, r) = (&c / &ten, &c % &ten);
            if r != IBig::ZERO {
                break;
            }
            c = q;
            e += 1;
        }
        Decimal {
            coefficient: c,
            exponent: e,
        }
    }

    /// Zero.
    pub fn zero() -> Decimal {
        Decimal {
            coefficient: IBig::ZERO,
            exponent: 0,
        }
    }

    /// The normalized coefficient.
    pub fn coefficient(&self) -> &IBig {
        &self.coefficient
    }

    /// The normalized power-of-ten exponent.
    pub fn exponent(&self) -> i64 {
        self.exponent
    }

    /// Whether the value is a whole number.
    pub fn is_integer(&self) -> bool {
        self.exponent >= 0
    }
}

impl From<Int> for Decimal {
    fn from(v: Int) -> Decimal {
        Decimal::new(v.0, 0)
    }
}

impl fmt::Display for Decimal {
    /// Plain decimal notation: no exponent, no `+`, no leading zeros, no
    /// trailing zeros after the point, no point when whole, `0` for zero.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let negative = self.coefficient < IBig::ZERO;
        let digits = if negative {
            (-&self.coefficient).to_string()
        } else {
            self.coefficient.to_string()
        };
        if negative {
            f.write_str("-")?;
        }
        if self.exponent >= 0 {
            f.write_str(&digits)?;
            for _ in 0..self.exponent {
                f.write_str("0")?;
            }
            return Ok(());
        }
        let fraction = self.exponent.unsigned_abs() as usize;
        if digits.len() > fraction {
            let (whole, frac) = digits.split_at(digits.len() - fraction);
            write!(f, "{whole}.{frac}")
        } else {
            f.write_str("0.")?;
            for _ in 0..fraction - digits.len() {
                f.write_str("0")?;
            }
            f.write_str(&digits)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(c: i64, e: i64) -> Decimal {
        Decimal::new(IBig::from(c), e)
    }

    #[test]
    fn normalizes_so_equal_values_are_equal() {
        assert_eq!(d(150, -2), d(15, -1));
        assert_eq!(d(0, 7), Decimal::zero());
        assert_eq!(d(1500, 0).exponent(), 2);
    }

    #[test]
    fn writes_plain_decimal_notation() {
        assert_eq!(d(15, -1).to_string(), "1.5");
        assert_eq!(d(150, -2).to_string(), "1.5");
        assert_eq!(d(-25, -3).to_string(), "-0.025");
        assert_eq!(d(12, 3).to_string(), "12000");
        assert_eq!(d(0, -4).to_string(), "0");
        assert_eq!(d(-7, 0).to_string(), "-7");
    }
}
