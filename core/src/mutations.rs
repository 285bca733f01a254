//! Texts one byte away from a sample, for the differential tests that hold
//! a fast path to its general path on near misses.

/// Every text one change away from `base` over `alphabet`: each byte of the
/// alphabet inserted at each position and put in place of each byte, and
/// each byte removed.
pub(crate) fn one_byte_changes(base: &[u8], alphabet: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for i in 0..=base.len() {
        for &b in alphabet {
            let mut t = base.to_vec();
            t.insert(i, b);
            out.push(t);
            if i < base.len() {
                let mut t = base.to_vec();
                t[i] = b;
                out.push(t);
            }
        }
        if i < base.len() {
            let mut t = base.to_vec();
            t.remove(i);
            out.push(t);
        }
    }
    out
}
