//! Response rate limiting: a token bucket of answer bytes per host, in a
//! table of bounded size, on the machine's clock.

use std::collections::{BTreeMap, BTreeSet};

use crate::{Timestamp, SECOND};

#[derive(Clone, Copy, Debug)]
struct Bucket {
    /// Bytes it held at `at`.
    level: u64,
    at: Timestamp,
    /// When it is full again: a bucket full is one never charged, so it
    /// may be forgotten.
    full_at: Timestamp,
}

/// The buckets of the hosts answered lately.
#[derive(Debug)]
pub(super) struct Buckets<H: Ord + Clone> {
    burst: u64,
    rate: u64,
    max: usize,
    buckets: BTreeMap<H, Bucket>,
    /// Each bucket by when it is full again, so the one to forget is the
    /// first, in O(log n).
    by_full: BTreeSet<(Timestamp, H)>,
}

impl<H: Ord + Clone> Buckets<H> {
    pub(super) fn new(burst: u64, rate: u64, max: usize) -> Buckets<H> {
        Buckets {
            burst,
            rate,
            max,
            buckets: BTreeMap::new(),
            by_full: BTreeSet::new(),
        }
    }

    fn level(&self, b: &Bucket, now: Timestamp) -> u64 {
        let gained =
            u128::from(now.saturating_sub(b.at)) * u128::from(self.rate) / u128::from(SECOND);
        u64::try_from(u128::from(b.level) + gained)
            .unwrap_or(u64::MAX)
            .min(self.burst)
    }

    fn full_at(&self, level: u64, now: Timestamp) -> Timestamp {
        if level >= self.burst {
            return now;
        }
        if self.rate == 0 {
            return Timestamp::MAX;
        }
        let missing = u128::from(self.burst - level) * u128::from(SECOND);
        let wait = missing.div_ceil(u128::from(self.rate));
        now.saturating_add(u64::try_from(wait).unwrap_or(u64::MAX))
    }

    /// Takes `cost` bytes from `host`'s bucket at `now`: whether it held
    /// them. A host not kept starts full; when the table is full and no
    /// kept bucket is full again yet, a new host is refused.
    pub(super) fn charge(&mut self, host: &H, now: Timestamp, cost: u64) -> bool {
        let level = match self.buckets.get(host) {
            Some(b) => self.level(b, now),
            None => {
                if self.buckets.len() >= self.max {
                    // Forget the bucket full soonest, if it is full by now.
                    match self.by_full.first() {
                        Some((at, _)) if *at <= now => {
                            let (_, old) = self.by_full.pop_first().expect("first");
                            self.buckets.remove(&old);
                        }
                        _ => return false,
                    }
                }
                self.burst
            }
        };
        if level < cost {
            return false;
        }
        let level = level - cost;
        let full_at = self.full_at(level, now);
        if let Some(old) = self.buckets.insert(
            host.clone(),
            Bucket {
                level,
                at: now,
                full_at,
            },
        ) {
            self.by_full.remove(&(old.full_at, host.clone()));
        }
        self.by_full.insert((full_at, host.clone()));
        true
    }

    /// The buckets kept.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.buckets.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_spends_its_burst_then_its_rate() {
        let mut b = Buckets::new(1000, 100, 4);
        assert!(b.charge(&1u8, 0, 600));
        assert!(b.charge(&1, 0, 400));
        assert!(!b.charge(&1, 0, 1));
        // A second later, the rate's 100 bytes.
        assert!(!b.charge(&1, SECOND, 101));
        assert!(b.charge(&1, SECOND, 100));
        // Another host has its own.
        assert!(b.charge(&2, SECOND, 1000));
    }

    #[test]
    fn the_table_forgets_only_buckets_full_again() {
        let mut b = Buckets::new(1000, 1000, 2);
        assert!(b.charge(&1u8, 0, 1000));
        assert!(b.charge(&2, 0, 500));
        // Both refilling: a third host is refused.
        assert!(!b.charge(&3, 0, 1));
        // Host 2 is full at 0.5 s: forgotten for host 3.
        assert!(b.charge(&3, SECOND / 2, 1));
        assert_eq!(b.len(), 2);
        // Host 1 was kept, still nearly empty.
        assert!(!b.charge(&1, SECOND / 2, 501));
    }
}
