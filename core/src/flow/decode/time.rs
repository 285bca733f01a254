//! Instants (RFC 3339 date-times) and durations (`PT<seconds>S`) read back.
//!
//! What is accepted beyond the canonical spelling is listed, with reasons,
//! in `docs/decisions.md`: any RFC 3339 offset, lowercase `t` and `z`, any
//! number of fractional digits as long as the value is exact to the
//! nanosecond; never a leap second, a space for `T`, or a calendar-dependent
//! duration.

use crate::flow::time::{Duration, Instant};

const NANOS: i128 = 1_000_000_000;

/// Days from 1970-01-01 to `year-month-day` (proleptic Gregorian).
fn days_from_civil(year: i128, month: u32, day: u32) -> i128 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i128::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i128::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn is_leap(year: i128) -> bool {
    year.rem_euclid(4) == 0 && (year.rem_euclid(100) != 0 || year.rem_euclid(400) == 0)
}

fn days_in_month(year: i128, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// A cursor over an ASCII spelling.
struct Cursor<'s> {
    b: &'s [u8],
    i: usize,
}

impl Cursor<'_> {
    fn digits(&mut self, n: usize, what: &str) -> Result<u32, String> {
        let field = self
            .b
            .get(self.i..self.i + n)
            .filter(|d| d.iter().all(u8::is_ascii_digit))
            .ok_or_else(|| format!("expected {n} digits of {what}"))?;
        self.i += n;
        Ok(field
            .iter()
            .fold(0, |acc, &d| acc * 10 + u32::from(d - b'0')))
    }

    fn expect(&mut self, c: u8, what: &str) -> Result<(), String> {
        if self.b.get(self.i) == Some(&c) {
            self.i += 1;
            Ok(())
        } else {
            Err(format!("expected {what}"))
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// Up to nine fraction digits as nanoseconds; later digits must be 0.
    fn fraction(&mut self) -> Result<i128, String> {
        let start = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        let digits = &self.b[start..self.i];
        if digits.is_empty() {
            return Err("expected digits after `.`".into());
        }
        if digits.iter().skip(9).any(|&d| d != b'0') {
            return Err("it is finer than a nanosecond".into());
        }
        let mut nanos: i128 = 0;
        for k in 0..9 {
            nanos = nanos * 10 + digits.get(k).map_or(0, |&d| i128::from(d - b'0'));
        }
        Ok(nanos)
    }
}

/// Reads an RFC 3339 date-time as an instant.
pub(crate) fn instant(s: &str) -> Result<Instant, String> {
    let mut c = Cursor {
        b: s.as_bytes(),
        i: 0,
    };
    // The year: four digits, or a sign and the canonical digits of a year
    // outside 0000..9999 (at least four, no extra leading zero).
    let signed = match c.peek() {
        Some(b'+') => Some(false),
        Some(b'-') => Some(true),
        _ => None,
    };
    if signed.is_some() {
        c.i += 1;
    }
    let year_start = c.i;
    while matches!(c.peek(), Some(b'0'..=b'9')) {
        c.i += 1;
    }
    let year_digits = &c.b[year_start..c.i];
    let year = match signed {
        None if year_digits.len() == 4 => year_digits
            .iter()
            .fold(0i128, |a, &d| a * 10 + i128::from(d - b'0')),
        None => return Err("expected a four-digit year".into()),
        Some(negative) => {
            if year_digits.len() < 4 || (year_digits.len() > 4 && year_digits[0] == b'0') {
                return Err(
                    "a signed year has at least four digits and no extra leading zero".into(),
                );
            }
            if year_digits.len() > 30 {
                return Err("the year is out of range".into());
            }
            let v = year_digits
                .iter()
                .fold(0i128, |a, &d| a * 10 + i128::from(d - b'0'));
            if (0..=9999).contains(&v) && !(negative && v > 0) {
                return Err("a year within 0000..9999 is written without a sign".into());
            }
            if negative {
                -v
            } else {
                v
            }
        }
    };
    c.expect(b'-', "`-` after the year")?;
    let month = c.digits(2, "the month")?;
    c.expect(b'-', "`-` after the month")?;
    let day = c.digits(2, "the day")?;
    if !(1..=12).contains(&month) {
        return Err(format!("month {month:02} does not exist"));
    }
    if day < 1 || day > days_in_month(year, month) {
        return Err(format!("day {day:02} does not exist in that month"));
    }
    match c.peek() {
        Some(b'T' | b't') => c.i += 1,
        _ => return Err("expected `T` after the date".into()),
    }
    let hour = c.digits(2, "the hour")?;
    c.expect(b':', "`:` after the hour")?;
    let minute = c.digits(2, "the minute")?;
    c.expect(b':', "`:` after the minute")?;
    let second = c.digits(2, "the second")?;
    if hour > 23 || minute > 59 {
        return Err("the time of day does not exist".into());
    }
    if second == 60 {
        return Err("a leap second does not exist on a time line without leap seconds".into());
    }
    if second > 59 {
        return Err("the time of day does not exist".into());
    }
    let nanos = if c.peek() == Some(b'.') {
        c.i += 1;
        c.fraction()?
    } else {
        0
    };
    let offset_seconds: i128 = match c.peek() {
        Some(b'Z' | b'z') => {
            c.i += 1;
            0
        }
        Some(sign @ (b'+' | b'-')) => {
            c.i += 1;
            let h = c.digits(2, "the offset's hours")?;
            c.expect(b':', "`:` in the offset")?;
            let m = c.digits(2, "the offset's minutes")?;
            if h > 23 || m > 59 {
                return Err("the offset does not exist".into());
            }
            let v = i128::from(h * 3600 + m * 60);
            if sign == b'-' {
                -v
            } else {
                v
            }
        }
        _ => return Err("expected `Z` or an offset such as `+01:00`".into()),
    };
    if c.i != c.b.len() {
        return Err("unexpected text after the offset".into());
    }
    let out_of_range = || "the instant is out of range".to_owned();
    let days = days_from_civil(year, month, day);
    let seconds = days
        .checked_mul(86_400)
        .and_then(|s| s.checked_add(i128::from(hour * 3600 + minute * 60 + second)))
        .and_then(|s| s.checked_sub(offset_seconds))
        .ok_or_else(out_of_range)?;
    // Below the epoch, step through the next second up so that the
    // earliest representable instant does not overflow on the way.
    let total = if seconds < 0 && nanos > 0 {
        (seconds + 1)
            .checked_mul(NANOS)
            .and_then(|n| n.checked_sub(NANOS - nanos))
    } else {
        seconds
            .checked_mul(NANOS)
            .and_then(|n| n.checked_add(nanos))
    }
    .ok_or_else(out_of_range)?;
    Ok(Instant::from_unix_nanos(total))
}

/// Reads `PT<seconds>S`, the seconds a plain decimal number.
pub(crate) fn duration(s: &str) -> Result<Duration, String> {
    let b = s.as_bytes();
    let body = b
        .strip_prefix(b"PT")
        .and_then(|r| r.strip_suffix(b"S"))
        .ok_or("expected `PT<seconds>S`")?;
    let (negative, body) = match body.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, body),
    };
    let whole_len = body.iter().take_while(|d| d.is_ascii_digit()).count();
    let whole = &body[..whole_len];
    if whole.is_empty() {
        return Err("expected `PT<seconds>S`, the seconds a plain decimal number".into());
    }
    if whole.len() > 1 && whole[0] == b'0' {
        return Err("the seconds have a leading zero".into());
    }
    let mut c = Cursor {
        b: body,
        i: whole_len,
    };
    let nanos = match c.peek() {
        None => 0,
        Some(b'.') => {
            c.i += 1;
            let n = c.fraction()?;
            if c.i != body.len() {
                return Err("expected `PT<seconds>S`, the seconds a plain decimal number".into());
            }
            n
        }
        Some(_) => {
            return Err("expected `PT<seconds>S`, the seconds a plain decimal number".into())
        }
    };
    let out_of_range = || "the duration is out of range".to_owned();
    if whole.len() > 30 {
        return Err(out_of_range());
    }
    let seconds = whole
        .iter()
        .fold(0u128, |a, &d| a * 10 + u128::from(d - b'0'));
    let magnitude = seconds
        .checked_mul(NANOS as u128)
        .and_then(|n| n.checked_add(nanos as u128))
        .ok_or_else(out_of_range)?;
    // The magnitude of the most negative duration is one past i128::MAX.
    let nanos = if negative {
        0i128.checked_sub_unsigned(magnitude)
    } else {
        i128::try_from(magnitude).ok()
    };
    nanos.map(Duration::from_nanos).ok_or_else(out_of_range)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::canonical::{civil_from_days, write_duration, write_instant};

    #[test]
    fn days_from_civil_inverts_civil_from_days() {
        for days in (-800_000..800_000).step_by(997) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }

    fn canonical_instant(s: &str) -> String {
        let mut out = Vec::new();
        write_instant(instant(s).unwrap(), &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn accepted_spellings_of_an_instant() {
        assert_eq!(
            canonical_instant("2024-02-29T12:00:00Z"),
            "2024-02-29T12:00:00Z"
        );
        assert_eq!(
            canonical_instant("2024-02-29t12:00:00z"),
            "2024-02-29T12:00:00Z"
        );
        assert_eq!(
            canonical_instant("2024-03-01T01:30:00+02:00"),
            "2024-02-29T23:30:00Z"
        );
        assert_eq!(
            canonical_instant("2024-02-29T23:30:00-00:00"),
            "2024-02-29T23:30:00Z"
        );
        assert_eq!(
            canonical_instant("1970-01-01T00:00:00.500Z"),
            "1970-01-01T00:00:00.5Z"
        );
        assert_eq!(
            canonical_instant("1970-01-01T00:00:00.123456789000Z"),
            "1970-01-01T00:00:00.123456789Z"
        );
        assert_eq!(
            canonical_instant("+10000-01-01T00:00:00Z"),
            "+10000-01-01T00:00:00Z"
        );
        assert_eq!(
            canonical_instant("-0001-12-31T00:00:00Z"),
            "-0001-12-31T00:00:00Z"
        );
    }

    #[test]
    fn refused_spellings_of_an_instant() {
        for (s, why) in [
            (
                "2023-02-29T00:00:00Z",
                "day 29 does not exist in that month",
            ),
            ("2024-13-01T00:00:00Z", "month 13 does not exist"),
            ("2024-01-01 00:00:00Z", "expected `T` after the date"),
            (
                "2016-12-31T23:59:60Z",
                "a leap second does not exist on a time line without leap seconds",
            ),
            (
                "2024-01-01T00:00:00",
                "expected `Z` or an offset such as `+01:00`",
            ),
            (
                "2024-01-01T00:00:00.0000000001Z",
                "it is finer than a nanosecond",
            ),
            (
                "+2024-01-01T00:00:00Z",
                "a year within 0000..9999 is written without a sign",
            ),
            (
                "-0000-01-01T00:00:00Z",
                "a year within 0000..9999 is written without a sign",
            ),
            (
                "+010000-01-01T00:00:00Z",
                "a signed year has at least four digits and no extra leading zero",
            ),
            ("24-01-01T00:00:00Z", "expected a four-digit year"),
            ("2024-01-01T00:00:00+0100", "`:` in the offset"),
            ("2024-01-01T24:00:00Z", "the time of day does not exist"),
            ("2024-01-01T00:00:00Z ", "unexpected text after the offset"),
        ] {
            let got = instant(s).unwrap_err();
            assert!(got.ends_with(why), "{s}: {got}");
        }
    }

    #[test]
    fn durations() {
        let d = |s: &str| {
            let mut out = Vec::new();
            write_duration(duration(s).unwrap(), &mut out);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(d("PT90S"), "PT90S");
        assert_eq!(d("PT0.25S"), "PT0.25S");
        assert_eq!(d("PT-5S"), "PT-5S");
        assert_eq!(d("PT1.50S"), "PT1.5S");
        assert_eq!(d("PT-0S"), "PT0S");
        for s in [
            "PT1M",
            "P1D",
            "PT1e3S",
            "PT+1S",
            "PT01S",
            "pt1s",
            "PT1.S",
            "PT.5S",
            "PT1.0000000001S",
            "PTS",
        ] {
            assert!(duration(s).is_err(), "{s}");
        }
    }
}
