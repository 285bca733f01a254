//! The five outcomes a caller sees (§ Outcomes) and their refusal kinds.
//!
//! The runtime decides the outcome; each transport encodes it by the fixed
//! mapping of § Outcomes. The HTTP column ([`Outcome::into_http`]) is here;
//! the Unix reply line is [`super::unix_reply`]'s.

use std::fmt;

use crate::json::write_string;

/// Why a request was not accepted, or was accepted and did not run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RefusalKind {
    /// Not a request; no such member; a payload that does not decode.
    Malformed,
    /// The request's digest is not the served one.
    DigestMismatch,
    /// The sources name nobody.
    Unauthenticated,
    /// The caller does not hold the row's `requires`.
    Unauthorized,
    /// The exposure holds its bound of requests accepted and not answered.
    Full,
    /// The exposure is stopping; the request did not run.
    ShuttingDown,
    /// The member's receiver is draining, dissolved or restarting; the
    /// request did not run.
    Unavailable,
}

impl RefusalKind {
    /// Every kind, in the order of § Outcomes' table.
    pub const ALL: [RefusalKind; 7] = [
        RefusalKind::Malformed,
        RefusalKind::DigestMismatch,
        RefusalKind::Unauthenticated,
        RefusalKind::Unauthorized,
        RefusalKind::Full,
        RefusalKind::ShuttingDown,
        RefusalKind::Unavailable,
    ];

    /// The kind as the wire names it (`"digest_mismatch"`).
    pub fn as_str(self) -> &'static str {
        match self {
            RefusalKind::Malformed => "malformed",
            RefusalKind::DigestMismatch => "digest_mismatch",
            RefusalKind::Unauthenticated => "unauthenticated",
            RefusalKind::Unauthorized => "unauthorized",
            RefusalKind::Full => "full",
            RefusalKind::ShuttingDown => "shutting_down",
            RefusalKind::Unavailable => "unavailable",
        }
    }

    /// The kind named `name` on the wire.
    pub fn parse(name: &str) -> Option<RefusalKind> {
        RefusalKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// The HTTP status of § Outcomes' refusal table.
    pub fn http_status(self) -> u16 {
        match self {
            RefusalKind::Malformed => 400,
            RefusalKind::DigestMismatch => 409,
            RefusalKind::Unauthenticated => 401,
            RefusalKind::Unauthorized => 403,
            RefusalKind::Full => 429,
            RefusalKind::ShuttingDown | RefusalKind::Unavailable => 503,
        }
    }
}

impl fmt::Display for RefusalKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refusal: its kind, its reason, and what the kind carries.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Refusal {
    /// The kind.
    pub kind: RefusalKind,
    /// The reason, in the exposure's words.
    pub reason: String,
    /// On `digest_mismatch`: the digest the exposure serves.
    pub served: Option<String>,
    /// On `unauthorized`: the roles the row requires, as written.
    pub requires: Option<Vec<String>>,
}

impl Refusal {
    /// A refusal of `kind` with `reason` and nothing else.
    pub fn new(kind: RefusalKind, reason: impl Into<String>) -> Refusal {
        Refusal {
            kind,
            reason: reason.into(),
            served: None,
            requires: None,
        }
    }

    /// The refusal object `{"kind", "reason", ["served" | "requires"]}`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut object = serde_json::Map::new();
        object.insert("kind".into(), self.kind.as_str().into());
        object.insert("reason".into(), self.reason.clone().into());
        if let Some(served) = &self.served {
            object.insert("served".into(), served.clone().into());
        }
        if let Some(requires) = &self.requires {
            object.insert("requires".into(), requires.clone().into());
        }
        serde_json::Value::Object(object)
    }

    /// Writes the text of [`to_json`](Refusal::to_json) (its keys in that
    /// order, compact, strings escaped as `serde_json` escapes them) without
    /// building the value: a refusal past the bound is the cheapest answer
    /// an exposure gives, and building a map for it was most of its cost.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"kind\":\"");
        out.extend_from_slice(self.kind.as_str().as_bytes());
        out.extend_from_slice(b"\",\"reason\":");
        write_string(&self.reason, out);
        if let Some(served) = &self.served {
            out.extend_from_slice(b",\"served\":");
            write_string(served, out);
        }
        if let Some(requires) = &self.requires {
            out.extend_from_slice(b",\"requires\":[");
            for (i, role) in requires.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(role, out);
            }
            out.push(b']');
        }
        out.push(b'}');
    }
}

/// What the exposure answers a request with.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The handler returned: the response, encoded by the codec.
    Result(Vec<u8>),
    /// The handler failed with its declared `E`, encoded by the codec.
    HandlerError(Vec<u8>),
    /// The request was refused, or accepted and did not run. Boxed: an
    /// outcome travels in every reply's event, from the worker's thread to
    /// the loop's, and the refusal (with its reason and the rare `served`
    /// and `requires`) would make every one of them three times the size
    /// of the others.
    Refusal(Box<Refusal>),
    /// The handler failed with `ClosureViolation`.
    ServerError,
    /// A describe's answer: the description document, as compact JSON.
    Description(Vec<u8>),
}

impl From<Refusal> for Outcome {
    fn from(refusal: Refusal) -> Outcome {
        Outcome::Refusal(Box::new(refusal))
    }
}

impl Outcome {
    /// The outcome's name in the witness records: `result`,
    /// `handler_error`, `refusal`, `server_error` (a description is a
    /// `result`).
    pub fn name(&self) -> &'static str {
        match self {
            Outcome::Result(_) | Outcome::Description(_) => "result",
            Outcome::HandlerError(_) => "handler_error",
            Outcome::Refusal(_) => "refusal",
            Outcome::ServerError => "server_error",
        }
    }

    /// The HTTP status and body of § Outcomes' HTTP column.
    pub fn http(&self) -> (u16, Vec<u8>) {
        self.clone().into_http()
    }

    /// [`http`](Outcome::http), consuming the outcome so a body is moved,
    /// not copied.
    pub fn into_http(self) -> (u16, Vec<u8>) {
        match self {
            Outcome::Result(body) | Outcome::Description(body) => (200, body),
            Outcome::HandlerError(body) => (422, body),
            Outcome::Refusal(r) => {
                let mut body = Vec::with_capacity(48 + r.reason.len());
                body.extend_from_slice(b"{\"refusal\":");
                r.write_json(&mut body);
                body.push(b'}');
                (r.kind.http_status(), body)
            }
            Outcome::ServerError => (500, SERVER_ERROR_BODY.to_vec()),
        }
    }
}

/// The body of the server error over HTTP.
pub const SERVER_ERROR_BODY: &[u8] = br#"{"refusal":{"kind":"server"}}"#;

/// The reasons the exposure gives, in one place so every transport says the
/// same words.
pub mod reasons {
    /// A bearer source that states no reason of its own.
    pub const NOBODY: &str = "the sources name nobody";
    /// A Unix peer the kernel would not name.
    pub const UNNAMED_PEER: &str = "the kernel did not name the peer";
    /// A credential past its expiry, refused a call (§ The HTTP
    /// transport, § Identity sources).
    pub const EXPIRED: &str = "expired";
    /// A credential past its expiry, refused a hub's subscribe: § Streams'
    /// words for it ("a spent credential admits nothing new").
    pub const SPENT: &str = "the bearer token is refused: expired";
    /// A request while the exposure stops.
    pub const SHUTTING_DOWN: &str = "the exposure is stopping";
    /// A request past the bound.
    pub const FULL: &str = "the exposure holds its bound of requests accepted and not yet answered";

    /// A digest that is not the served one.
    pub fn digest_mismatch(sent: &str) -> String {
        format!("the request was generated against {sent}")
    }

    /// A member the surface does not have.
    pub fn unknown_member(member: &str) -> String {
        format!("unknown_member: {member}")
    }

    /// A caller without the row's roles.
    pub fn unauthorized(member: &str, requires: &[String]) -> String {
        format!("{member} requires {}", requires.join(", "))
    }

    /// A member whose receiver is unavailable.
    pub fn unavailable(member: &str) -> String {
        format!("the receiver of {member} is unavailable; the call did not run")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusals_text_is_serde_jsons_text_of_its_value() {
        let reasons = [
            "full",
            "a \"quoted\" \\ reason\n\t\u{1}\u{7f} é \u{2028} 🎉 </x>",
            "",
        ];
        for kind in RefusalKind::ALL {
            for reason in reasons {
                for (served, requires) in [
                    (None, None),
                    (Some("fnv1a64:0\u{0}".to_owned()), None),
                    (None, Some(vec![])),
                    (None, Some(vec!["trader".to_owned(), "a\"b".to_owned()])),
                ] {
                    let r = Refusal {
                        kind,
                        reason: reason.to_owned(),
                        served,
                        requires,
                    };
                    let mut text = Vec::new();
                    r.write_json(&mut text);
                    assert_eq!(String::from_utf8(text).unwrap(), r.to_json().to_string());
                }
            }
        }
    }

    #[test]
    fn http_statuses_follow_the_table() {
        let statuses: Vec<u16> = RefusalKind::ALL.iter().map(|k| k.http_status()).collect();
        assert_eq!(statuses, [400, 409, 401, 403, 429, 503, 503]);
        assert_eq!(Outcome::ServerError.http().0, 500);
        assert_eq!(Outcome::HandlerError(b"{}".to_vec()).http().0, 422);
    }
}
