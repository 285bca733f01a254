//! A hub connection's HTTP request before any upgrade: the upgrade and the
//! credential it presents, `GET /.description`, or a refusal.

use super::*;

impl Hub {
    /// The HTTP request before any upgrade: the upgrade, or the
    /// description, or a refusal.
    pub(super) fn take_request(
        &mut self,
        now: Timestamp,
        wall: Timestamp,
        conn: &mut Conn,
        req: &HttpRequest,
    ) {
        let Phase::Http(http) = &mut conn.phase else {
            return;
        };
        let refuse = |http: &mut HttpConn, refusal: Refusal| {
            let (status, body) = Outcome::from(refusal).into_http();
            http.send_json(now, status, &body);
        };
        if self.stopped {
            return refuse(
                http,
                Refusal::new(RefusalKind::ShuttingDown, STOPPING_REASON),
            );
        }
        let path = req.target.split_once('?').map_or(&*req.target, |(p, _)| p);
        let is_upgrade = req.header("upgrade").is_some();
        if !is_upgrade {
            if req.method == "GET" && path == "/.description" {
                match self.authenticate(now, wall, req).0 {
                    Caller::Named(p) => {
                        let document = self.rules.sources.describe(&self.rules.spec, &p);
                        http.send_json(now, 200, &document);
                    }
                    Caller::Nobody(reason) => {
                        refuse(http, Refusal::new(RefusalKind::Unauthenticated, reason))
                    }
                }
                return;
            }
            return refuse(
                http,
                Refusal::new(
                    RefusalKind::Malformed,
                    format!(
                        "`{} {path}` is neither a WebSocket upgrade nor GET /.description",
                        req.method
                    ),
                ),
            );
        }
        match upgrade(req) {
            Err(refused) => {
                let refusal = Refusal::new(RefusalKind::Malformed, refused.reason);
                let (_, body) = Outcome::from(refusal).into_http();
                http.send_json(now, refused.status, &body);
            }
            Ok(head) => {
                let (caller, expires) = self.authenticate(now, wall, req);
                // Proven, or held `anonymous_wait` at most and counted
                // among the unproven until it ends.
                self.unproven.waiting.remove(&(conn.order, conn.id));
                if matches!(caller, Caller::Nobody(_)) {
                    self.unproven.anonymous.insert((conn.order, conn.id));
                    let wait = self.rules.spec.limits.anonymous_wait;
                    conn.anonymous_until = Some(now.saturating_add(wait));
                }
                conn.caller = caller;
                conn.token = req.bearer().or_else(|| access_token(&req.target));
                conn.expires = expires;
                conn.head = head;
                conn.head_at = 0;
                // What the client sent behind its request is its first
                // frames (it should have waited for the 101, RFC 6455
                // § 4.1; a client that did not loses nothing).
                let rest = http.take_rest();
                let mut ws = WsConn::new(self.rules.spec.limits.ws);
                ws.handle_data(now, &rest);
                conn.phase = Phase::Ws(ws);
            }
        }
    }

    /// Who the request's credential names (`Authorization: Bearer`, else
    /// `?access_token=`), and when it expires on the monotonic clock.
    pub(super) fn authenticate(
        &self,
        now: Timestamp,
        wall: Timestamp,
        req: &HttpRequest,
    ) -> (Caller, Option<Timestamp>) {
        let token = req.bearer().or_else(|| access_token(&req.target));
        match self.rules.sources.authenticate(now, wall, token.as_deref()) {
            Ok((p, expires)) => (Caller::Named(p), expires),
            Err(reason) => (Caller::Nobody(reason), None),
        }
    }
}

/// The `access_token` of a request target's query, percent-decoded.
fn access_token(target: &str) -> Option<String> {
    let (_, query) = target.split_once('?')?;
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        // Percent-decoded only: a `+` stays a `+` (RFC 3986), since a
        // token is often base64 and a form's `+` for a space would change
        // it.
        (k == "access_token" && !v.is_empty())
            .then(|| crate::percent::decode(v))
            .flatten()
    })
}
