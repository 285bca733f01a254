//! Hale's framing of HTTP/1.1 (§ The HTTP transport): `POST /call/<member>`
//! and `GET /.description` become exposure [`Request`]s, and outcomes go
//! back as § Outcomes' HTTP column.

use crate::hale::runtime::{Correlation, Credential, Outcome, Request, RequestKind};
use crate::wire::http1::HttpRequest;

/// Frames a whole HTTP request for the exposure.
pub fn frame(request: &HttpRequest, correlation: Correlation) -> Request {
    let kind = match (request.method.as_str(), path(&request.target)) {
        ("POST", path) if path.starts_with("/call/") => match percent_decode(&path[6..]) {
            Some(member) if !member.is_empty() => {
                if request.body.is_empty() {
                    RequestKind::Malformed {
                        reason: "a call carries its payload as the body, and this body is empty"
                            .into(),
                    }
                } else {
                    RequestKind::Call {
                        member,
                        payload: crate::hale::runtime::Payload::Json(request.body.clone()),
                    }
                }
            }
            _ => RequestKind::Malformed {
                reason: format!("`{path}` names no member"),
            },
        },
        ("GET", "/.description") => RequestKind::Describe,
        (method, path) => RequestKind::Malformed {
            reason: format!(
                "`{method} {path}` is neither POST /call/<member> nor GET /.description"
            ),
        },
    };
    Request {
        correlation,
        kind,
        digest: digest(request),
        credential: Credential::Bearer(request.bearer()),
        client_id: None,
    }
}

/// Frames a request the HTTP machine could not read whole as malformed.
pub fn frame_malformed(
    reason: &str,
    head: Option<&HttpRequest>,
    correlation: Correlation,
) -> Request {
    Request {
        correlation,
        kind: RequestKind::Malformed {
            reason: reason.to_owned(),
        },
        digest: head.and_then(digest),
        credential: Credential::Bearer(head.and_then(HttpRequest::bearer)),
        client_id: None,
    }
}

/// The status and body of an outcome (§ Outcomes' HTTP column).
pub fn encode(outcome: Outcome) -> (u16, Vec<u8>) {
    outcome.into_http()
}

fn digest(request: &HttpRequest) -> Option<String> {
    let value = std::str::from_utf8(request.header("hale-surface-digest")?).ok()?;
    Some(value.trim().to_owned())
}

/// The target's path, without a query.
fn path(target: &str) -> &str {
    target.split_once('?').map_or(target, |(p, _)| p)
}

/// Decodes `%XX` escapes (`Orders%3A%3Aplace`); `None` for a broken escape
/// or bytes that are not UTF-8.
pub fn percent_decode(s: &str) -> Option<String> {
    crate::percent::decode(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(method: &str, target: &str, body: &[u8]) -> HttpRequest {
        HttpRequest {
            method: method.into(),
            target: target.into(),
            headers: vec![
                ("Authorization".into(), b"Bearer t-alice".to_vec()),
                (
                    "Hale-Surface-Digest".into(),
                    b"fnv1a64:a8930d6e7998e986".to_vec(),
                ),
            ],
            body: body.to_vec(),
        }
    }

    #[test]
    fn a_call_names_its_member_either_way() {
        for target in [
            "/call/Orders::place",
            "/call/Orders%3A%3Aplace",
            "/call/Orders%3a%3aplace",
        ] {
            let r = frame(&req("POST", target, b"{}"), 7);
            assert_eq!(
                r.kind,
                RequestKind::Call {
                    member: "Orders::place".into(),
                    payload: crate::hale::runtime::Payload::Json(b"{}".to_vec())
                }
            );
            assert_eq!(r.digest.as_deref(), Some("fnv1a64:a8930d6e7998e986"));
            assert_eq!(r.credential, Credential::Bearer(Some("t-alice".into())));
        }
    }

    #[test]
    fn describe_and_what_is_neither() {
        assert_eq!(
            frame(&req("GET", "/.description", b""), 1).kind,
            RequestKind::Describe
        );
        for (m, t, b) in [
            ("GET", "/call/Orders::place", &b"{}"[..]),
            ("POST", "/other", b"{}"),
            ("POST", "/call/Orders::place", b""),
            ("POST", "/call/", b"{}"),
            ("POST", "/call/%zz", b"{}"),
            // Found by fuzz/fuzz_targets/http1_conn.rs's RFC 3986 check:
            // `%+A` decoded as a newline, `%-0` as NUL.
            ("POST", "/call/A%+A", b"{}"),
            ("POST", "/call/A%-0", b"{}"),
            ("DELETE", "/.description", b""),
        ] {
            assert!(
                matches!(frame(&req(m, t, b), 1).kind, RequestKind::Malformed { .. }),
                "{m} {t}"
            );
        }
    }
}
