//! The HTTP transport (§ The HTTP transport): Hale's framing of HTTP/1.1,
//! one request to a connection, on the HTTP/1.1 machine
//! ([`crate::wire::http1`]).
//!
//! Its module has the shape of every transport's under `wire`:
//!
//! - the framing step, [`frame`] (and [`frame_malformed`] for a request
//!   the machine could not read whole): `POST /call/<member>` and
//!   `GET /.description` become exposure [`Request`]s;
//! - the answer step, [`encode`]: an [`Outcome`] becomes the status and
//!   body of § Outcomes' HTTP column;
//! - the front, [`HttpFront`]: one connection, the HTTP/1.1 machine between
//!   the two.
//!
//! Beside the spec's two routes, every HTTP/1.1 front (MCP's too) answers
//! `GET /.health` itself, for a balancer: [`health`] (docs/decisions.md,
//! "Rpc exposures behind a balancer").

use crate::hale::runtime::{Correlation, Credential, Delivery, Outcome, Request, RequestKind};
use crate::wire::front::{machine_through, Front, FrontEvent, FrontKind, RawRequest};
use crate::wire::http1::{self, HttpConn, HttpEvent, HttpRequest};
use crate::wire::machine::Machine;
use crate::Timestamp;

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

/// The path of the health check a front answers itself, never the
/// exposure: outside `/call/`, so no member can be named by it, and
/// dot-prefixed as `/.description` is.
pub const HEALTH_PATH: &str = "/.health";

/// Whether `request` is the health check: `GET /.health` (a query is
/// ignored).
pub fn is_health(method: &str, target: &str) -> bool {
    method == "GET" && path(target) == HEALTH_PATH
}

/// The health check's answer: 200 `{"status": "serving"}` while the node
/// serves, 503 with the `shutting_down` refusal once it drains (its
/// `stop()` is near: a balancer takes it out now, before its queue is
/// refused). It carries no caller and asks no source: a balancer holds no
/// bearer, and the answer tells nothing but whether the node serves.
pub fn health(draining: bool) -> (u16, &'static [u8]) {
    if draining {
        (
            503,
            br#"{"refusal": {"kind": "shutting_down", "reason": "draining: this node stops soon"}}"#,
        )
    } else {
        (200, br#"{"status": "serving"}"#)
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

/// The steps a transport over HTTP/1.1 (one request to a connection)
/// brings to [`Http1Front`]: how the connection's request is framed, and
/// how its outcome is answered. HTTP's is [`HttpSteps`];
/// MCP's is [`crate::wire::mcp::McpSteps`]. Whatever the request framing
/// leaves to its answer (MCP's JSON-RPC id) is kept in the steps.
pub trait Steps {
    /// The front's kind.
    const KIND: FrontKind;
    /// The name its `Debug` shows.
    const NAME: &'static str;
    /// Frames the request the machine read whole.
    fn frame(&mut self, request: &HttpRequest, correlation: Correlation) -> Request;
    /// Frames a request the machine could not read whole (`head` when its
    /// head was read).
    fn frame_malformed(
        &mut self,
        reason: &str,
        head: Option<&HttpRequest>,
        correlation: Correlation,
    ) -> Request;
    /// The request as kept for a recording.
    fn raw(request: HttpRequest) -> RawRequest;
    /// Writes the answer to `outcome` on `conn` at `now`.
    fn answer(&mut self, conn: &mut HttpConn, now: Timestamp, outcome: Outcome);
}

/// One HTTP/1.1 connection between its bytes and an exposure, with the
/// framing and answer steps of `S`. See [`crate::wire::front`] for the
/// order of calls.
pub struct Http1Front<S> {
    conn: HttpConn,
    steps: S,
    correlation: Correlation,
    keep_raw: bool,
    /// Whether the health check answers 503 ([`Front::set_draining`]).
    draining: bool,
    /// The time of the last input, for the health check's answer, which
    /// the front writes as it frames.
    now: Timestamp,
}

impl<S: Steps> std::fmt::Debug for Http1Front<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct(S::NAME)
            .field("correlation", &self.correlation)
            .finish_non_exhaustive()
    }
}

impl<S: Steps> Http1Front<S> {
    /// A connection with `steps`, accepted at `now`.
    pub fn with_steps(
        now: Timestamp,
        limits: http1::Limits,
        steps: S,
        correlation: Correlation,
    ) -> Http1Front<S> {
        Http1Front {
            conn: HttpConn::new(now, limits),
            steps,
            correlation,
            keep_raw: false,
            draining: false,
            now,
        }
    }
}

machine_through!(Http1Front<S>, conn, now; S: Steps);

impl<S: Steps> Front for Http1Front<S> {
    fn kind(&self) -> FrontKind {
        S::KIND
    }

    fn correlation(&self) -> Correlation {
        self.correlation
    }

    fn set_keep_raw(&mut self, keep: bool) {
        self.keep_raw = keep;
    }

    /// The next event, if any: the connection's one request, framed as it
    /// is taken (malformed when the machine could not read it whole).
    fn poll_event(&mut self) -> Option<FrontEvent> {
        Some(match self.conn.poll_event()? {
            // Answered here: the exposure never sees a health check, so it
            // takes no unit of the bound and asks no source.
            HttpEvent::Request(req) if is_health(&req.method, &req.target) => {
                let (status, body) = health(self.draining);
                self.conn.send_json(self.now, status, body);
                return self.poll_event();
            }
            HttpEvent::Request(req) => {
                let request = self.steps.frame(&req, self.correlation);
                let raw = self.keep_raw.then(|| Box::new(S::raw(req)));
                FrontEvent::Request { request, raw }
            }
            HttpEvent::Malformed { reason, head } => FrontEvent::Request {
                request: self
                    .steps
                    .frame_malformed(&reason, head.as_ref(), self.correlation),
                raw: None,
            },
            HttpEvent::Lost => FrontEvent::Lost,
            HttpEvent::Close => FrontEvent::Closed,
        })
    }

    /// Writes the answer of the steps' column of § Outcomes at `now`.
    /// Returns how many bytes were queued.
    fn deliver(&mut self, now: Timestamp, delivery: Delivery) -> usize {
        let before = self.conn.pending_output().len();
        self.steps.answer(&mut self.conn, now, delivery.outcome);
        self.conn.pending_output().len().saturating_sub(before)
    }

    fn abort(&mut self) {
        self.conn.abort();
    }

    fn set_draining(&mut self, draining: bool) {
        self.draining = draining;
    }

    /// Whether closing the connection now should linger (RFC 9112 § 9.6):
    /// a request refused before its end was read, its answer written
    /// ([`HttpConn::lingers`]).
    fn lingers(&self) -> bool {
        self.conn.lingers()
    }
}

/// The HTTP transport's steps: [`frame`], [`frame_malformed`] and
/// [`encode`].
#[derive(Clone, Copy, Debug, Default)]
pub struct HttpSteps;

impl Steps for HttpSteps {
    const KIND: FrontKind = FrontKind::Http;
    const NAME: &'static str = "HttpFront";

    fn frame(&mut self, request: &HttpRequest, correlation: Correlation) -> Request {
        frame(request, correlation)
    }

    fn frame_malformed(
        &mut self,
        reason: &str,
        head: Option<&HttpRequest>,
        correlation: Correlation,
    ) -> Request {
        frame_malformed(reason, head, correlation)
    }

    fn raw(request: HttpRequest) -> RawRequest {
        RawRequest::Http(request)
    }

    /// § Outcomes' HTTP column.
    fn answer(&mut self, conn: &mut HttpConn, now: Timestamp, outcome: Outcome) {
        let (status, body) = encode(outcome);
        conn.send_json(now, status, &body);
    }
}

/// One HTTP/1.1 connection of the HTTP transport.
pub type HttpFront = Http1Front<HttpSteps>;

impl HttpFront {
    /// A connection accepted at `now`.
    pub fn new(now: Timestamp, limits: http1::Limits, correlation: Correlation) -> HttpFront {
        Http1Front::with_steps(now, limits, HttpSteps, correlation)
    }
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
    use crate::hale::runtime::{Principal, Refusal, RefusalKind};
    use crate::wire::front::Machine;

    fn events(f: &mut dyn Front) -> Vec<FrontEvent> {
        std::iter::from_fn(|| f.poll_event()).collect()
    }

    fn write_all(f: &mut dyn Front, now: Timestamp) -> Vec<u8> {
        let out = f.pending_output().to_vec();
        f.consume_output(now, out.len());
        out
    }

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

    #[test]
    fn the_health_check_is_answered_by_the_front_serving_then_draining() {
        for (draining, status, kind) in [(false, 200, "serving"), (true, 503, "shutting_down")] {
            let mut f = HttpFront::new(0, http1::Limits::default(), 4);
            f.set_draining(draining);
            f.handle_data(5, b"GET /.health?from=haproxy HTTP/1.1\r\nHost: n1\r\n\r\n");
            // No request reaches the exposure; the answer is queued, and the
            // connection closes once it is written.
            assert_eq!(events(&mut f), []);
            let text = String::from_utf8(write_all(&mut f, 5)).unwrap();
            assert!(text.starts_with(&format!("HTTP/1.1 {status} ")), "{text}");
            assert!(text.contains(kind), "{text}");
            assert_eq!(events(&mut f), [FrontEvent::Closed]);
        }
        // Only GET: another method on the path is the spec's malformed.
        assert!(matches!(
            frame(&req("POST", "/.health", b"{}"), 1).kind,
            RequestKind::Malformed { .. }
        ));
    }

    #[test]
    fn an_http_call_is_framed_and_its_outcome_written_by_the_http_column() {
        let mut f = HttpFront::new(0, http1::Limits::default(), 3);
        f.handle_data(
            0,
            b"POST /call/Orders%3A%3Aplace HTTP/1.1\r\nAuthorization: Bearer t\r\nContent-Length: 2\r\n\r\n{}",
        );
        assert!(!f.wants_read());
        let e = events(&mut f);
        let [FrontEvent::Request { request, raw: None }] = &e[..] else {
            panic!("{e:?}");
        };
        assert_eq!(
            request.kind,
            RequestKind::Call {
                member: "Orders::place".into(),
                payload: crate::hale::runtime::Payload::Json(b"{}".to_vec())
            }
        );
        assert_eq!(request.credential, Credential::Bearer(Some("t".into())));
        let outcome = Outcome::from(Refusal::new(RefusalKind::Full, "full"));
        let (status, body) = outcome.http();
        f.deliver(
            0,
            Delivery {
                member: None,
                accepted: 0,
                correlation: 3,
                request_id: 1,
                client_id: None,
                caller: Principal::bearer("alice"),
                outcome,
            },
        );
        let out = write_all(&mut f, 0);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with(&format!("HTTP/1.1 {status} ")), "{text}");
        assert!(text.ends_with(std::str::from_utf8(&body).unwrap()));
        assert_eq!(events(&mut f), [FrontEvent::Closed]);
    }
}
