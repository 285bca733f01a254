//! The hashers core uses for its own in-memory maps, below every other
//! layer so that flow and hale share one.
//!
//! Only map hashing lives here. The digests a specification fixes are the
//! layer's that defines them: the contract digest's FNV-1a fold is
//! `hale::digest::fnv1a64`, a signature fingerprint is SHA-256 in
//! `flow::fingerprint`.

/// The hasher of a map or set whose keys no adversary chooses freely
/// (FxHash's word-at-a-time multiply, unkeyed): `HashMap<K, V, Fixed>`.
///
/// Core reads no entropy, so it cannot seed a keyed hash (SipHash with a
/// random key) itself; it uses this one only where a fixed hash is safe.
/// Its keys are the program's own: numbers it assigns itself (the
/// exposure's request ids) or keys of its own making (the host's call keys,
/// which a process's reply only looks up; the address of a declaration),
/// so there is nothing for a peer to flood. Where a peer does name the key
/// (a toolkit's open calls, named by its one host), colliding keys only
/// slow that peer's own calls. SipHash cost more than the rest of a call's
/// bookkeeping.
pub type Fixed = std::hash::BuildHasherDefault<FxHasher>;

/// The hasher [`Fixed`] builds; see there for why it may be unkeyed.
#[derive(Clone, Copy, Debug, Default)]
pub struct FxHasher {
    hash: u64,
}

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl std::hash::Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let word: [u8; 8] = chunk.try_into().unwrap_or_default();
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            // The tail as a little-endian word, zero-padded, assembled from
            // fixed-size reads: a copy of a variable length is a call to
            // `memcpy`, which cost more than the hashing of a short key.
            let (mut word, mut shift, mut tail) = (0u64, 0, rest);
            if let Some((four, more)) = tail.split_first_chunk::<4>() {
                word = u64::from(u32::from_le_bytes(*four));
                (shift, tail) = (32, more);
            }
            if let Some((two, more)) = tail.split_first_chunk::<2>() {
                word |= u64::from(u16::from_le_bytes(*two)) << shift;
                shift += 16;
                tail = more;
            }
            if let Some(&byte) = tail.first() {
                word |= u64::from(byte) << shift;
            }
            self.add(word ^ ((rest.len() as u64) << 59));
        }
    }

    #[inline]
    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

#[cfg(test)]
mod tests {
    use std::hash::Hasher;

    use super::FxHasher;

    /// The tail is hashed as the zero-padded little-endian word of its
    /// bytes, whatever its length: the reads that assemble it lose nothing.
    #[test]
    fn a_tail_hashes_as_its_zero_padded_word() {
        let bytes: Vec<u8> = (1..=23).map(|b| b * 11).collect();
        for len in 0..=bytes.len() {
            let text = &bytes[..len];
            let mut h = FxHasher::default();
            h.write(text);
            let mut want = FxHasher::default();
            for chunk in text.chunks(8) {
                let mut word = [0u8; 8];
                word[..chunk.len()].copy_from_slice(chunk);
                let tail = if chunk.len() < 8 {
                    (chunk.len() as u64) << 59
                } else {
                    0
                };
                want.add(u64::from_le_bytes(word) ^ tail);
            }
            assert_eq!(h.finish(), want.finish(), "{len} bytes");
        }
    }
}
