//! What a datagram hub bounds, and how it groups sources.

/// A datagram source as the hub keys it: the address it answers (`Self`),
/// and the host that address belongs to, which the caps and the rate
/// limit count by, since a host that forges its source port (or owns many
/// ports) is still one host.
pub trait Address: Ord + Clone {
    /// What the caps and the answers' rate limit count per.
    type Host: Ord + Clone;
    /// The host of this address.
    fn host(&self) -> Self::Host;
}

macro_rules! own_host {
    ($($t:ty),*) => {$(
        /// A plain number is its own host (tests, the replay runner).
        impl Address for $t {
            type Host = $t;
            fn host(&self) -> $t {
                *self
            }
        }
    )*};
}
own_host!(u8, u16, u32, u64);

/// The bounds of a [`Hub`](super::Hub), each finite; the defaults are
/// choices § Over datagrams leaves open (`docs/decisions.md`, "The
/// datagram hub under attack").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The most subscribers the hub holds; a subscribe past it is refused
    /// `full`.
    pub max_subscribers: usize,
    /// The most subscribers one host holds.
    pub max_per_host: usize,
    /// The most subscribers one caller (the principal a token names)
    /// holds: a forged source can point a caller's subscription at any
    /// address, so this bounds what one credential can aim.
    pub max_per_caller: usize,
    /// The most answers (refusals, `subscribed`, descriptions) waiting for
    /// the socket; one past it is not queued, as the network may lose any
    /// datagram. `unauthorized` and `closed` are not answers: there is at
    /// most one of each per subscriber.
    pub max_answers: usize,
    /// The most bytes of answers waiting for the socket.
    pub max_answer_bytes: usize,
    /// Answer bytes one host may be sent in a burst (a token bucket per
    /// host, as a DNS server's response rate limiting).
    pub answer_burst: u64,
    /// Answer bytes one host's bucket regains per second.
    pub answer_rate: u64,
    /// The hosts whose buckets are kept; a new host past it, while every
    /// kept bucket is still refilling, is not answered.
    pub max_hosts: usize,
    /// Bytes an answer may exceed the frame it answers by when nothing
    /// vouches for the frame's source (no token, a refused one, no id, an
    /// unknown type): past it, no answer, so a forged source gains the
    /// slack at most.
    pub unverified_slack: usize,
    /// The same for a datagram that is not a JSON object at all.
    pub garbage_slack: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_subscribers: 16_384,
            max_per_host: 256,
            max_per_caller: 256,
            max_answers: 1024,
            max_answer_bytes: 1 << 20,
            answer_burst: 16 * 1024,
            answer_rate: 4 * 1024,
            max_hosts: 16_384,
            unverified_slack: 96,
            garbage_slack: 0,
        }
    }
}
