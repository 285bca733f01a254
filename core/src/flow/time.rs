//! [`Instant`] and [`Duration`] values.
//!
//! Both are held exactly, to the nanosecond (see `docs/decisions.md`): an
//! instant as nanoseconds since 1970-01-01T00:00:00Z on the proleptic
//! Gregorian calendar with no leap seconds, a duration as signed
//! nanoseconds.

/// A point on the UTC time line, in nanoseconds since the Unix epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant {
    /// Nanoseconds since 1970-01-01T00:00:00Z (negative before it).
    pub nanos: i128,
}

/// A signed length of time, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration {
    /// Nanoseconds, negative for a negative duration.
    pub nanos: i128,
}

impl Instant {
    /// The instant `nanos` nanoseconds after the Unix epoch.
    pub fn from_unix_nanos(nanos: i128) -> Instant {
        Instant { nanos }
    }
}

impl Duration {
    /// A duration of `nanos` nanoseconds.
    pub fn from_nanos(nanos: i128) -> Duration {
        Duration { nanos }
    }
}
