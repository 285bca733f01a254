//! The bearer check (§ The HTTP transport, § Identity sources, § Streams):
//! one [`authenticate`] for every exposure and hub that takes a bearer
//! credential, so each names a caller, and refuses one, the same way.
//!
//! The reason texts are [`reasons`]'. The spec words a spent credential
//! twice: a call is refused `expired` (§ The HTTP transport: "a credential
//! past its expiry is refused with the reason expired"; § Identity
//! sources), a hub's subscribe `the bearer token is refused: expired`
//! (§ Streams: "A spent credential admits nothing new"). Both are kept,
//! each where the spec states it: [`BearerRefusal::reason`] and
//! [`BearerRefusal::subscribe_reason`].

use super::outcome::reasons;
use super::sources::{is_expired, BearerSource, Principal};
use crate::Timestamp;

/// Why a bearer credential names nobody.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BearerRefusal {
    /// No bearer source, or no credential presented.
    Nobody,
    /// The source names nobody for the token; its own reason
    /// (`refused()`), when it states one.
    Refused(Option<String>),
    /// The credential names this principal, and is past its expiry.
    Expired(Principal),
}

impl BearerRefusal {
    /// The unauthenticated reason of a call: the source's own reason, else
    /// `the sources name nobody`; `expired` for a spent credential.
    pub fn reason(&self) -> String {
        match self {
            BearerRefusal::Nobody | BearerRefusal::Refused(None) => reasons::NOBODY.to_owned(),
            BearerRefusal::Refused(Some(reason)) => reason.clone(),
            BearerRefusal::Expired(_) => reasons::EXPIRED.to_owned(),
        }
    }

    /// The unauthenticated reason of a hub's subscribe: a call's, but a
    /// spent credential's in § Streams' words ([`reasons::SPENT`]).
    pub fn subscribe_reason(&self) -> String {
        match self {
            BearerRefusal::Expired(_) => reasons::SPENT.to_owned(),
            other => other.reason(),
        }
    }
}

/// Who `token` names under `source` at `wall` (nanoseconds since the Unix
/// epoch, the clock the source states expiries on), and the instant its
/// credential expires when it states one (`None`: never). A principal with
/// an empty name names nobody; a credential at or past its expiry is
/// refused, naming whom it named.
pub fn authenticate<S: BearerSource + ?Sized>(
    source: Option<&S>,
    token: Option<&str>,
    wall: Timestamp,
) -> Result<(Principal, Option<u64>), BearerRefusal> {
    let (Some(source), Some(token)) = (source, token) else {
        return Err(BearerRefusal::Nobody);
    };
    match source.principal(token) {
        Some(p) if !p.name.is_empty() => {
            let expiry = source.expiry(token);
            if is_expired(expiry, wall) {
                Err(BearerRefusal::Expired(p))
            } else {
                Ok((p, expiry.filter(|&e| e != 0)))
            }
        }
        _ => Err(BearerRefusal::Refused(source.refused())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hale::runtime::TokenTable;

    #[test]
    fn one_check_two_words_for_a_spent_credential() {
        let table = TokenTable::new(Some("no such token"))
            .with("t-alice", "alice")
            .with_expiry("t-dave", "dave", 10)
            .with("t-none", "");
        let check = |token: Option<&str>, wall| authenticate(Some(&table), token, wall);
        assert_eq!(check(Some("t-alice"), 99).unwrap().1, None);
        assert_eq!(check(Some("t-dave"), 9).unwrap().1, Some(10));
        let spent = check(Some("t-dave"), 10).unwrap_err();
        assert_eq!(spent.reason(), "expired");
        assert_eq!(
            spent.subscribe_reason(),
            "the bearer token is refused: expired"
        );
        for refused in [check(Some("t-mallory"), 0), check(Some("t-none"), 0)] {
            let r = refused.unwrap_err();
            assert_eq!(
                (r.reason(), r.subscribe_reason()),
                ("no such token".into(), "no such token".into())
            );
        }
        assert_eq!(check(None, 0).unwrap_err().reason(), reasons::NOBODY);
        let none: Option<&TokenTable> = None;
        assert_eq!(
            authenticate(none, Some("t-alice"), 0),
            Err(BearerRefusal::Nobody)
        );
        let silent = TokenTable::new(None);
        assert_eq!(
            authenticate(Some(&silent), Some("x"), 0)
                .unwrap_err()
                .reason(),
            reasons::NOBODY
        );
    }
}
