//! The contract digest (§ The contract digest) and the stream digest
//! (§ Streams, the hub exposure): the 64-bit FNV-1a fold, and the hash input
//! texts it folds, byte for byte.
//!
//! This module knows the framing only; what each line holds (a row's shape
//! hashes, a stream's bound) is the model's to say
//! ([`Program::surface_lines`](crate::hale::model::Program::surface_lines),
//! [`Program::hub_lines`](crate::hale::model::Program::hub_lines)).

use std::fmt;

/// The FNV-1a offset basis (64-bit).
pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
/// The FNV-1a prime (64-bit).
pub const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// The header line of a surface digest's input.
pub const SURFACE_HEADER: &str = "hale-api-surface 1";
/// The header line of a stream digest's input.
pub const HUB_HEADER: &str = "hale-api-hub 1";

/// The 64-bit FNV-1a fold of `bytes`: each byte xor-ed in, then multiplied
/// by the prime.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(FNV_OFFSET, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(FNV_PRIME)
    })
}

/// A hash written as sixteen lowercase hex digits, as a shape hash is.
pub fn hex16(h: u64) -> String {
    format!("{h:016x}")
}

/// A digest: written `fnv1a64:` and sixteen lowercase hex digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Digest(pub u64);

impl Digest {
    /// The digest of a hash input text.
    pub fn of(input: &str) -> Digest {
        Digest(fnv1a64(input.as_bytes()))
    }

    /// Reads `fnv1a64:` and sixteen lowercase hex digits.
    pub fn parse(s: &str) -> Option<Digest> {
        let hex = s.strip_prefix("fnv1a64:")?;
        if hex.len() != 16
            || !hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return None;
        }
        u64::from_str_radix(hex, 16).ok().map(Digest)
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fnv1a64:{:016x}", self.0)
    }
}

/// Roles as a line holds them: sorted as bytes, each once, joined by `,`,
/// or `-` when there are none.
pub fn roles_field<S: AsRef<str>>(roles: &[S]) -> String {
    let mut set: Vec<&str> = roles.iter().map(AsRef::as_ref).collect();
    set.sort_unstable();
    set.dedup();
    if set.is_empty() {
        "-".to_string()
    } else {
        set.join(",")
    }
}

fn hash_field(h: Option<u64>) -> String {
    h.map_or_else(|| "-".to_string(), hex16)
}

/// One row of a surface reduced to what its digest covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SurfaceLine {
    /// The member as a caller names it (`Orders::cancel`).
    pub member: String,
    /// The request's shape hash; none when the handler takes no request.
    pub request: Option<u64>,
    /// The response's shape hash; none when the handler returns `()`.
    pub response: Option<u64>,
    /// The error type's shape hash; none when the handler is not fallible.
    pub error: Option<u64>,
    /// The required roles as written (the line sorts and dedups them).
    pub requires: Vec<String>,
}

/// A surface digest's hash input: the header line, then one line per row
/// ordered by member name as bytes, five fields joined by TAB, every line
/// ended by LF.
pub fn surface_input(lines: &[SurfaceLine]) -> String {
    let mut rows: Vec<&SurfaceLine> = lines.iter().collect();
    rows.sort_by(|a, b| a.member.as_bytes().cmp(b.member.as_bytes()));
    let mut out = format!("{SURFACE_HEADER}\n");
    for r in rows {
        out.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\n",
            r.member,
            hash_field(r.request),
            hash_field(r.response),
            hash_field(r.error),
            roles_field(&r.requires)
        ));
    }
    out
}

/// One stream row of a hub reduced to what its digest covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HubLine {
    /// The topic's name.
    pub topic: String,
    /// The payload's shape hash.
    pub payload: u64,
    /// `out` or `in`.
    pub direction: String,
    /// The codec (`json`).
    pub codec: String,
    /// The subscriber queue's bound.
    pub bound: u64,
    /// `drop_old` or `drop_new`.
    pub on_full: String,
    /// Whether the binding replays.
    pub replay: bool,
    /// The required roles as written (the line sorts and dedups them).
    pub requires: Vec<String>,
}

/// A stream digest's hash input: the header line, then one line per stream
/// row ordered by topic name as bytes, eight fields joined by TAB, every
/// line ended by LF.
pub fn hub_input(lines: &[HubLine]) -> String {
    let mut rows: Vec<&HubLine> = lines.iter().collect();
    rows.sort_by(|a, b| a.topic.as_bytes().cmp(b.topic.as_bytes()));
    let mut out = format!("{HUB_HEADER}\n");
    for r in rows {
        out.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
            r.topic,
            hex16(r.payload),
            r.direction,
            r.codec,
            r.bound,
            r.on_full,
            u8::from(r.replay),
            roles_field(&r.requires)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The published FNV-1a/64 vectors (the reference's test suite for the
    /// 64-bit variant): the empty input is the offset basis.
    #[test]
    fn the_fold_is_fnv1a64() {
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn a_digest_is_written_and_read_back() {
        let d = Digest(0xa8930d6e7998e986);
        assert_eq!(d.to_string(), "fnv1a64:a8930d6e7998e986");
        assert_eq!(Digest::parse("fnv1a64:a8930d6e7998e986"), Some(d));
        assert_eq!(
            Digest::parse("fnv1a64:A8930D6E7998E986"),
            None,
            "hex is lowercase"
        );
        assert_eq!(Digest::parse("fnv1a64:a8930d6e7998e98"), None);
        assert_eq!(Digest::parse("fnv1a32:a8930d6e7998e986"), None);
    }

    #[test]
    fn lines_sort_by_bytes_and_roles_are_a_set() {
        let line = |m: &str, r: &[&str]| SurfaceLine {
            member: m.to_string(),
            request: None,
            response: Some(1),
            error: None,
            requires: r.iter().map(|s| s.to_string()).collect(),
        };
        let input = surface_input(&[
            line("b::x", &["z", "a", "z"]),
            line("B::x", &[]),
            line("a::y", &[]),
        ]);
        assert_eq!(
            input,
            "hale-api-surface 1\nB::x\t-\t0000000000000001\t-\t-\na::y\t-\t0000000000000001\t-\t-\n\
             b::x\t-\t0000000000000001\t-\ta,z\n"
        );
    }
}
