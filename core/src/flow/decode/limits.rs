//! The bounds every decoded value is held to.

/// Bounds on a decoded text and the value it holds, checked as the text is
/// read, before anything past a bound is built.
///
/// Each bound is finite by default (see `docs/decisions.md`, "Flow values:
/// canonical text and decoding"); a host may tighten or loosen any of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The most bytes a text may have. The canonical text of the decoded
    /// value is held to it too: a number written out longer than its token
    /// (`1e999` is 1000 digits) counts the difference against this bound.
    pub max_bytes: usize,
    /// The deepest nesting of arrays and objects. Values past
    /// [`Limits::DEPTH_CEILING`] are treated as the ceiling.
    pub max_depth: usize,
    /// The most decimal digits an Int may have, counted as written out
    /// (`1e5000` has 5001).
    pub max_int_digits: usize,
    /// The most significant digits a Decimal (or a json.Value number) may
    /// have, counted after normalizing (`1.50` has 2).
    pub max_decimal_digits: usize,
    /// The largest magnitude of a Decimal's normalized power-of-ten exponent
    /// (`1e-5000` has 5000).
    pub max_decimal_exponent: u64,
    /// The most UTF-8 bytes one string or key may hold once unescaped.
    pub max_string_bytes: usize,
    /// The most elements one array or members one object may hold.
    pub max_collection_len: usize,
}

impl Limits {
    /// The depth no setting can exceed. Decoding at a type recurses once per
    /// level (types are recursive), and so do dropping and writing a value:
    /// typed decoding takes about 1.5 KB of stack a level in a release build
    /// and 5.5 KB in a debug build, so 256 levels stay well inside the 2 MiB
    /// stack a spawned Rust thread gets by default.
    pub const DEPTH_CEILING: usize = 256;

    /// The depth actually enforced: `max_depth`, at most the ceiling.
    pub fn depth(&self) -> usize {
        self.max_depth.min(Self::DEPTH_CEILING)
    }
}

impl Default for Limits {
    /// 16 MiB of text, depth 128, 4300-digit Ints, Decimals of 4300
    /// significant digits and exponents within ±1000, 1 MiB strings and a
    /// million elements per collection.
    fn default() -> Limits {
        Limits {
            max_bytes: 16 << 20,
            max_depth: 128,
            max_int_digits: 4300,
            max_decimal_digits: 4300,
            max_decimal_exponent: 1000,
            max_string_bytes: 1 << 20,
            max_collection_len: 1 << 20,
        }
    }
}
