//! Shared by the fuzz targets: how a machine's input is cut into pieces
//! for the split-invariance check, and the structure-aware generators
//! (codec shapes, Flow type models) built from a fuzzer's bytes.
//!
//! Every target lives in `fuzz_targets/`; `README.md` says how to run
//! them and how to add one.

pub mod grpc;
pub mod h2;
pub mod model;
pub mod shape;
pub mod tool;
pub mod value;

/// SplitMix64: a small deterministic generator, so the pieces an input is
/// cut into are a function of the input alone and a crash reproduces from
/// its bytes.
#[derive(Clone, Debug)]
pub struct SplitMix(u64);

impl SplitMix {
    /// A generator seeded by `seed`.
    pub fn new(seed: u64) -> SplitMix {
        SplitMix(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// FNV-1a over `data`: the seed of the pieces `data` is cut into.
pub fn fnv1a(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `data` cut into pieces by `seed`: mostly short pieces (1 to 8 bytes,
/// where a boundary falls inside every token), sometimes long ones, and
/// now and then an empty one (a read of nothing is still a call).
pub fn pieces(data: &[u8], seed: u64) -> Vec<&[u8]> {
    let mut rng = SplitMix::new(seed);
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let r = rng.next_u64();
        let len = match r % 16 {
            0 => 0,
            1..=11 => 1 + (r >> 8) as usize % 8,
            12..=14 => 1 + (r >> 8) as usize % 256,
            _ => 1 + (r >> 8) as usize % 4096,
        };
        let end = (at + len).min(data.len());
        out.push(&data[at..end]);
        at = end;
    }
    out
}

/// The ways a target feeds one input to a machine: whole, byte by byte
/// (the slow client: a machine must stay linear in it, so a quadratic
/// path shows as a slow unit), and cut into pieces by two seeds drawn from
/// the input.
pub fn feeds(data: &[u8]) -> Vec<Vec<&[u8]>> {
    let seed = fnv1a(data);
    let mut out = vec![vec![data]];
    out.push(data.chunks(1).collect());
    out.push(pieces(data, seed));
    out.push(pieces(data, seed ^ 0x5555_5555_5555_5555));
    out
}

/// `bytes` as lowercase hex, for a failure message that must show exactly
/// what was fed.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_feed_is_the_input_again() {
        for n in [0usize, 1, 7, 100, 5000, 20_000] {
            let data: Vec<u8> = (0..n).map(|i| i as u8).collect();
            let all = feeds(&data);
            assert!(all.len() >= 3);
            for feed in all {
                assert_eq!(feed.concat(), data);
            }
        }
    }
}
