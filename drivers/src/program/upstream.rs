//! A receiver instance answered by an upstream HTTP service (`http =
//! "http://host:port/prefix"` in `serve.toml`): limen as a
//! contract-enforcing gateway in front of a service that already exists.
//!
//! An admitted call — authenticated, authorized, its payload decoded by
//! the row's shape — is forwarded as `POST <prefix>/<member>` with the
//! decoded payload as its JSON body, the caller's name in `Hale-Caller` and
//! the exposure's request id in `Hale-Request-Id`. A 200 is the result and
//! a 422 the handler error, each held to the row's shape; anything else —
//! another status, a body that is not the row's, a connection refused or
//! silent past the reply deadline — is the row's structural failure: the
//! server error, and the receiver's next generation (as for a Tool
//! process, `docs/decisions.md`). One request a connection, one call at a
//! time per receiver.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use limen_core::hale::codec;
use limen_core::hale::runtime::{Completion, Receiver, ServedContext, Supervision};
use limen_core::hale::tools::{RowError, RowTool};
use limen_core::wire::http1::client::write_request;

use super::config::Upstream;
use super::control::{wait_open, Gate};

/// The receiver.
pub struct UpstreamReceiver {
    instance: String,
    upstream: Upstream,
    rows: BTreeMap<String, RowTool>,
    timeout: Duration,
    gate: Gate,
    restart: Arc<AtomicUsize>,
    absorbs_violations: bool,
}

impl UpstreamReceiver {
    /// A receiver of `rows` forwarding to `upstream`, each reply awaited
    /// at most `timeout`.
    pub fn new(
        instance: &str,
        upstream: Upstream,
        rows: &[RowTool],
        timeout: Duration,
        gate: Gate,
        absorbs_violations: bool,
    ) -> UpstreamReceiver {
        UpstreamReceiver {
            instance: instance.to_owned(),
            upstream,
            rows: rows.iter().map(|r| (r.member.clone(), r.clone())).collect(),
            timeout,
            gate,
            restart: Arc::new(AtomicUsize::new(0)),
            absorbs_violations,
        }
    }

    /// The on_failure its worker runs: a structural failure restarts the
    /// receiver; a violation the upstream answered (a 422 on a
    /// `fallible(ClosureViolation)` row) is absorbed when the program has
    /// an on_failure for the locus.
    pub fn on_failure(&self) -> crate::serve::worker::OnFailure {
        let restart = self.restart.clone();
        let absorbs = self.absorbs_violations;
        Arc::new(move |_| {
            let structural = restart
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
                .is_ok();
            if structural || !absorbs {
                Supervision::Restart
            } else {
                Supervision::Absorb
            }
        })
    }

    fn failed(&self, member: &str, why: String) -> Completion {
        eprintln!(
            "hale serve: the upstream of `{}` failed: `{member}`: {why}",
            self.instance
        );
        self.restart.fetch_add(1, Ordering::AcqRel);
        Completion::Violated
    }
}

impl Receiver for UpstreamReceiver {
    fn call(
        &mut self,
        member: &str,
        payload: &serde_json::Value,
        ctx: &ServedContext,
    ) -> Completion {
        wait_open(&self.gate);
        let Some(row) = self.rows.get(member) else {
            return self.failed(member, "no row".into());
        };
        let body = payload.to_string();
        let path = format!("{}/{member}", self.upstream.prefix);
        let request_id = ctx.request_id.to_string();
        let headers = [
            ("Host", self.upstream.authority.as_str()),
            ("Content-Type", "application/json"),
            ("Hale-Caller", &*ctx.caller.name),
            ("Hale-Request-Id", request_id.as_str()),
        ];
        let request = match write_request("POST", &path, &headers, Some(body.as_bytes())) {
            Ok(r) => r,
            Err(e) => return self.failed(member, e),
        };
        let response = match crate::client::wire::exchange(
            &self.upstream.authority,
            "POST",
            &request,
            self.timeout,
        ) {
            Ok(r) => r,
            Err(e) => return self.failed(member, format!("{}: {e}", self.upstream.authority)),
        };
        let held = |shape: Option<&codec::Shape>, what: &str| match shape {
            Some(shape) => codec::decode(shape, &response.body)
                .map(|v| v.to_string().into_bytes())
                .map_err(|e| format!("the {what} is not the row's: {e}")),
            None => Ok(b"null".to_vec()),
        };
        match (response.status, &row.error) {
            (200, _) => match held(row.response.as_ref(), "result") {
                Ok(b) => Completion::Returned(b),
                Err(e) => self.failed(member, e),
            },
            (422, RowError::Declared(shape)) => match held(Some(shape), "error") {
                Ok(b) => Completion::Failed(b),
                Err(e) => self.failed(member, e),
            },
            (422, RowError::Violation) => Completion::Violated,
            (status, _) => self.failed(member, format!("the upstream answered {status}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upstream_is_plain_http_with_a_path_prefix() {
        assert_eq!(
            Upstream::parse("http://127.0.0.1:9000/desk/").unwrap(),
            Upstream {
                authority: "127.0.0.1:9000".into(),
                prefix: "/desk".into()
            }
        );
        assert_eq!(Upstream::parse("http://h:1").unwrap().prefix, "");
        assert!(Upstream::parse("https://h:1/x")
            .unwrap_err()
            .contains("not an http:// URL"));
        assert!(Upstream::parse("http:///x")
            .unwrap_err()
            .contains("no host:port"));
        assert!(Upstream::parse("http://h:1/x?y").is_err());
    }
}
