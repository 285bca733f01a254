//! Exact numbers: [`Int`] of any size and normalized [`Decimal`].
//!
//! Neither ever passes through binary floating point. A decimal is held as a
//! coefficient and a power-of-ten exponent, normalized so that equal values
//! have equal representations (1.50 and 1.5 are one value), and written in
//! plain decimal notation by `Display`, which is its canonical text.
//!
//! Most decimals met in practice have a coefficient that fits an `i64`; those
//! are held inline, without a big integer, so that parsing and writing JSON
//! numbers costs no allocation. The representation is still unique (a value
//! is held inline exactly when it fits), so derived equality and hashing are
//! value equality.

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
pub struct Decimal(Repr);

/// Invariant: `Small` exactly when the normalized coefficient fits an `i64`
/// and the exponent an `i32`; otherwise `Big`. This keeps the representation
/// unique, so derived `Eq` and `Hash` are value equality.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Repr {
    Small { coefficient: i64, exponent: i32 },
    Big(Box<BigDecimal>),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct BigDecimal {
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
        if let Ok(small) = i64::try_from(&coefficient) {
            return Decimal::from_i64_parts(small, exponent);
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
            if let Ok(small) = i64::try_from(&c) {
                return Decimal::from_i64_parts(small, e);
            }
        }
        Decimal::from_normalized(c, e)
    }

    /// `coefficient × 10^exponent`, normalized, without a big integer.
    pub fn from_i64_parts(coefficient: i64, exponent: i64) -> Decimal {
        if coefficient == 0 {
            return Decimal::zero();
        }
        let mut c = coefficient;
        let mut e = exponent;
        while c % 10 == 0 {
            c /= 10;
            e += 1;
        }
        match i32::try_from(e) {
            Ok(exponent) => Decimal(Repr::Small {
                coefficient: c,
                exponent,
            }),
            Err(_) => Decimal(Repr::Big(Box::new(BigDecimal {
                coefficient: IBig::from(c),
                exponent: e,
            }))),
        }
    }

    /// A decimal from an `i64` coefficient already free of trailing zeros.
    #[inline]
    pub(crate) fn from_normalized_i64(coefficient: i64, exponent: i64) -> Decimal {
        debug_assert!(coefficient % 10 != 0 || (coefficient == 0 && exponent == 0));
        match i32::try_from(exponent) {
            Ok(exponent) => Decimal(Repr::Small {
                coefficient,
                exponent,
            }),
            Err(_) => Decimal(Repr::Big(Box::new(BigDecimal {
                coefficient: IBig::from(coefficient),
                exponent,
            }))),
        }
    }

    /// A decimal from a coefficient already free of trailing zeros.
    pub(crate) fn from_normalized(coefficient: IBig, exponent: i64) -> Decimal {
        debug_assert!(coefficient != IBig::ZERO || exponent == 0);
        if let (Ok(c), Ok(e)) = (i64::try_from(&coefficient), i32::try_from(exponent)) {
            return Decimal(Repr::Small {
                coefficient: c,
                exponent: e,
            });
        }
        Decimal(Repr::Big(Box::new(BigDecimal {
            coefficient,
            exponent,
        })))
    }

    /// Zero.
    pub fn zero() -> Decimal {
        Decimal(Repr::Small {
            coefficient: 0,
            exponent: 0,
        })
    }

    /// The normalized coefficient.
    pub fn coefficient(&self) -> IBig {
        match &self.0 {
            Repr::Small { coefficient, .. } => IBig::from(*coefficient),
            Repr::Big(b) => b.coefficient.clone(),
        }
    }

    /// The normalized power-of-ten exponent.
    pub fn exponent(&self) -> i64 {
        match &self.0 {
            Repr::Small { exponent, .. } => i64::from(*exponent),
            Repr::Big(b) => b.exponent,
        }
    }

    /// Whether the value is a whole number.
    pub fn is_integer(&self) -> bool {
        self.exponent() >= 0
    }

    /// Whether the value is below zero.
    pub fn is_negative(&self) -> bool {
        match &self.0 {
            Repr::Small { coefficient, .. } => *coefficient < 0,
            Repr::Big(b) => b.coefficient < IBig::ZERO,
        }
    }

    /// Appends the canonical text (plain decimal notation) to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        match &self.0 {
            Repr::Small {
                coefficient,
                exponent,
            } => {
                if *coefficient < 0 {
                    out.push(b'-');
                }
                let mut buf = [0u8; 20];
                let digits = u64_digits(coefficient.unsigned_abs(), &mut buf);
                place_point(digits, i64::from(*exponent), out);
            }
            Repr::Big(b) => {
                let digits = if b.coefficient < IBig::ZERO {
                    out.push(b'-');
                    (-&b.coefficient).to_string()
                } else {
                    b.coefficient.to_string()
                };
                place_point(digits.as_bytes(), b.exponent, out);
            }
        }
    }
}

/// The decimal digits of `v`, written into the end of `buf`.
pub(crate) fn u64_digits(mut v: u64, buf: &mut [u8; 20]) -> &[u8] {
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
        2021222324252627282930313233343536373839\
        4041424344454647484950515253545556575859\
        6061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899";
    let mut i = buf.len();
    while v >= 100 {
        let pair = (v % 100) as usize * 2;
        v /= 100;
        i -= 2;
        buf[i] = PAIRS[pair];
        buf[i + 1] = PAIRS[pair + 1];
    }
    if v >= 10 {
        let pair = v as usize * 2;
        i -= 2;
        buf[i] = PAIRS[pair];
        buf[i + 1] = PAIRS[pair + 1];
    } else {
        i -= 1;
        buf[i] = b'0' + v as u8;
    }
    &buf[i..]
}

/// Writes `digits × 10^exponent` in plain notation.
fn place_point(digits: &[u8], exponent: i64, out: &mut Vec<u8>) {
    if exponent >= 0 {
        out.extend_from_slice(digits);
        out.resize(out.len() + exponent as usize, b'0');
        return;
    }
    let fraction = exponent.unsigned_abs() as usize;
    if digits.len() > fraction {
        let (whole, frac) = digits.split_at(digits.len() - fraction);
        out.extend_from_slice(whole);
        out.push(b'.');
        out.extend_from_slice(frac);
    } else {
        out.extend_from_slice(b"0.");
        out.resize(out.len() + (fraction - digits.len()), b'0');
        out.extend_from_slice(digits);
    }
}

impl From<Int> for Decimal {
    fn from(v: Int) -> Decimal {
        Decimal::new(v.0, 0)
    }
}

impl From<i64> for Decimal {
    fn from(v: i64) -> Decimal {
        Decimal::from_i64_parts(v, 0)
    }
}

impl fmt::Display for Decimal {
    /// Plain decimal notation: no exponent, no `+`, no leading zeros, no
    /// trailing zeros after the point, no point when whole, `0` for zero.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = Vec::new();
        self.write_to(&mut out);
        // The text is ASCII digits, `-` and `.`.
        f.write_str(std::str::from_utf8(&out).map_err(|_| fmt::Error)?)
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
        assert_eq!(Decimal::from_i64_parts(150, -2), d(15, -1));
    }

    #[test]
    fn inline_and_big_forms_never_overlap() {
        // 10^20 does not fit an i64, but normalizes to 1 × 10^20, which does.
        let big = IBig::from(10u8).pow(20);
        assert_eq!(Decimal::new(big, 0), Decimal::from_i64_parts(1, 20));
        // An exponent past i32 is held big, and still equal to itself built
        // another way.
        let far = Decimal::from_i64_parts(7, 1 << 40);
        assert_eq!(far, Decimal::new(IBig::from(70u8), (1 << 40) - 1));
        assert_eq!(far.exponent(), 1 << 40);
        // A coefficient past i64 stays big.
        let wide = IBig::from(u64::MAX) * IBig::from(3u8);
        let w = Decimal::new(wide.clone(), -3);
        assert_eq!(w.coefficient(), wide);
        assert_eq!(w.to_string(), "55340232221128654.845");
    }

    #[test]
    fn writes_plain_decimal_notation() {
        assert_eq!(d(15, -1).to_string(), "1.5");
        assert_eq!(d(150, -2).to_string(), "1.5");
        assert_eq!(d(-25, -3).to_string(), "-0.025");
        assert_eq!(d(12, 3).to_string(), "12000");
        assert_eq!(d(0, -4).to_string(), "0");
        assert_eq!(d(-7, 0).to_string(), "-7");
        assert_eq!(d(i64::MIN, 0).to_string(), i64::MIN.to_string());
        assert_eq!(d(-123_456, -3).to_string(), "-123.456");
    }
}
