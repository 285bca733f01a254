//! Percent-encoding (RFC 3986 § 2.1), the one decoder every parser here
//! shares: an HTTP request target's member, a JSON pointer token in a
//! schema's `$ref`.

/// Decodes `%XX` escapes (`Orders%3A%3Aplace`); `None` for a broken escape
/// or bytes that are not UTF-8.
pub fn decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            // Two hex digits: `from_str_radix` alone would also take a sign,
            // `%+A` for a newline.
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::decode;

    #[test]
    fn escapes_are_two_hex_digits() {
        assert_eq!(
            decode("Orders%3A%3Aplace").as_deref(),
            Some("Orders::place")
        );
        assert_eq!(decode("a%3a").as_deref(), Some("a:"));
        for broken in ["%", "%3", "%+A", "%-1", "%zz", "%C3"] {
            assert_eq!(decode(broken), None, "{broken}");
        }
    }
}
