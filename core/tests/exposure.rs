//! The exposure runtime held to § Serving and § The request lifecycle over
//! the fixture transport: admission's order, the actor discipline, the five
//! guarantees, shutdown and generations. The witness program's own
//! exchanges are held in limen-conformance's tests.

use std::sync::{Arc, Mutex};

use limen_core::hale::runtime::fixture::bearer;
use limen_core::hale::runtime::*;
use limen_core::SECOND;

const DIGEST: &str = "fnv1a64:00000000000000aa";

/// A strict test codec: the payload must be `{"n": <integer>}`.
struct NCodec;
impl PayloadCodec for NCodec {
    fn decode(&self, _member: usize, payload: &[u8]) -> Result<serde_json::Value, String> {
        let v: serde_json::Value =
            serde_json::from_slice(payload).map_err(|_| "wrong_type: payload".to_owned())?;
        match v.get("n") {
            None => Err("missing_field: n".into()),
            Some(n) if n.is_i64() => Ok(v),
            Some(_) => Err("wrong_type: n".into()),
        }
    }
}

/// Describes by listing the members and roles it was given.
struct ListDoc(Vec<String>);
impl Describer for ListDoc {
    fn describe(&self, caller: &Principal, roles: &[String], members: &[usize]) -> Vec<u8> {
        let names: Vec<&str> = members.iter().map(|&m| self.0[m].as_str()).collect();
        serde_json::json!({"caller": &*caller.name, "roles": roles, "members": names})
            .to_string()
            .into_bytes()
    }
}

/// Counts its calls; `bump` returns the count, `fail` fails, `boom`
/// violates.
#[derive(Clone, Default)]
struct Counter {
    calls: Arc<Mutex<Vec<ServedContext>>>,
}
impl Receiver for Counter {
    fn call(
        &mut self,
        member: &str,
        payload: &serde_json::Value,
        ctx: &ServedContext,
    ) -> Completion {
        let mut calls = self.calls.lock().unwrap();
        calls.push(ctx.clone());
        let n = calls.len();
        match member {
            "Counter::fail" => Completion::Failed(br#"{"code":"nope"}"#.to_vec()),
            "Counter::boom" => Completion::Violated,
            _ => Completion::Returned(
                serde_json::json!({"count": n, "n": payload["n"]})
                    .to_string()
                    .into_bytes(),
            ),
        }
    }
}
impl Counter {
    fn count(&self) -> usize {
        self.calls.lock().unwrap().len()
    }
}

struct Setup {
    rpc: FixtureRpc,
    counter: Counter,
    other: Counter,
}

fn member(name: &str, receiver: usize, requires: &[&str]) -> MemberSpec {
    MemberSpec {
        name: name.into(),
        receiver,
        requires: requires.iter().map(|r| r.to_string()).collect(),
    }
}

fn setup(bound: usize) -> Setup {
    let members = vec![
        member("Counter::bump", 0, &[]),
        member("Counter::guarded", 0, &["admin"]),
        member("Counter::fail", 0, &[]),
        member("Counter::boom", 0, &[]),
        member("Other::work", 1, &["ops", "admin"]),
    ];
    let names = members.iter().map(|m| m.name.clone()).collect();
    let mut hierarchy = RoleHierarchy::flat();
    hierarchy.include("admin", "ops");
    let spec = ExposureSpec {
        name: "t".into(),
        surface: "T".into(),
        digest: DIGEST.into(),
        via: "test".into(),
        members,
        receivers: vec!["self.counter".into(), "self.other".into()],
        bound,
        hierarchy,
        limits: ExposureLimits::default(),
    };
    let tokens = TokenTable::new(Some("no such token"))
        .with("t-ann", "ann")
        .with("t-bo", "bo")
        .with_expiry("t-eve", "eve", 100 * SECOND);
    let roles = RoleTable::new().grant("ann", "admin");
    let exposure = Exposure::new(
        spec,
        Some(Box::new(tokens)),
        Box::new(roles),
        Box::new(NCodec),
        Box::new(ListDoc(names)),
    );
    let counter = Counter::default();
    let other = Counter::default();
    let rpc = FixtureRpc::new(
        exposure,
        vec![Box::new(counter.clone()), Box::new(other.clone())],
    );
    Setup {
        rpc,
        counter,
        other,
    }
}

fn call(s: &mut Setup, conn: u64, member: &str, payload: &str, token: &str) {
    s.rpc.call(
        conn,
        member,
        payload,
        bearer(token),
        Some(DIGEST),
        Some("\"x\""),
    );
}

fn reply(s: &mut Setup, conn: u64) -> serde_json::Value {
    let line = s.rpc.outcome(conn).expect("an outcome was delivered");
    serde_json::from_str(&line).unwrap()
}

fn refusal(s: &mut Setup, conn: u64) -> (String, String) {
    let r = reply(s, conn);
    let refusal = &r["refusal"];
    (
        refusal["kind"].as_str().unwrap().to_owned(),
        refusal["reason"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn a_result_carries_the_value_the_id_and_the_caller() {
    let mut s = setup(8);
    call(&mut s, 1, "Counter::bump", r#"{"n":7}"#, "t-ann");
    let r = reply(&mut s, 1);
    assert_eq!(
        r,
        serde_json::json!({"request_id": 1, "id": "x", "ok": true,
            "value": {"count": 1, "n": 7}, "caller": {"mode": "bearer", "name": "ann"}})
    );
}

#[test]
fn each_check_refuses_with_its_kind_and_the_handler_never_hears_of_it() {
    let mut s = setup(8);
    type Case<'a> = (
        &'a str,
        &'a str,
        &'a str,
        Option<&'a str>,
        (&'a str, &'a str),
    );
    let cases: Vec<Case> = vec![
        (
            "Counter::bump",
            "{\"n\":1}",
            "t-mallory",
            Some(DIGEST),
            ("unauthenticated", "no such token"),
        ),
        (
            "Counter::bump",
            "{\"n\":1}",
            "t-ann",
            Some("fnv1a64:ffffffffffffffff"),
            (
                "digest_mismatch",
                "the request was generated against fnv1a64:ffffffffffffffff",
            ),
        ),
        (
            "Counter::nope",
            "{\"n\":1}",
            "t-ann",
            None,
            ("malformed", "unknown_member: Counter::nope"),
        ),
        (
            "Counter::guarded",
            "{\"n\":1}",
            "t-bo",
            None,
            ("unauthorized", "Counter::guarded requires admin"),
        ),
        (
            "Counter::bump",
            "{}",
            "t-ann",
            None,
            ("malformed", "missing_field: n"),
        ),
        (
            "Counter::bump",
            "{\"n\":\"1\"}",
            "t-ann",
            None,
            ("malformed", "wrong_type: n"),
        ),
    ];
    for (i, (m, payload, token, digest, (kind, reason))) in cases.into_iter().enumerate() {
        let conn = 10 + i as u64;
        s.rpc.call(conn, m, payload, bearer(token), digest, None);
        assert_eq!(
            refusal(&mut s, conn),
            (kind.to_owned(), reason.to_owned()),
            "case {i}"
        );
    }
    assert_eq!(s.counter.count(), 0);
}

#[test]
fn the_first_failing_check_is_the_refusal() {
    let mut s = setup(8);
    // Unauthenticated and a wrong digest and an unknown member: the caller
    // is established before the digest or the member is looked at.
    s.rpc.call(
        1,
        "No::such",
        "nope",
        bearer("t-x"),
        Some("fnv1a64:1"),
        None,
    );
    assert_eq!(refusal(&mut s, 1).0, "unauthenticated");
    // A wrong digest before an unknown member.
    s.rpc.call(
        2,
        "No::such",
        "nope",
        bearer("t-ann"),
        Some("fnv1a64:1"),
        None,
    );
    let r = reply(&mut s, 2);
    assert_eq!(r["refusal"]["kind"], "digest_mismatch");
    assert_eq!(r["refusal"]["served"], DIGEST);
    // An unauthorized caller before a payload that does not decode.
    s.rpc
        .call(3, "Counter::guarded", "nope", bearer("t-bo"), None, None);
    let r = reply(&mut s, 3);
    assert_eq!(r["refusal"]["kind"], "unauthorized");
    assert_eq!(r["refusal"]["requires"], serde_json::json!(["admin"]));
    // A payload that does not decode before shutting_down (while stop()
    // waits for an executing call).
    s.rpc.gate(0);
    s.rpc
        .call(9, "Counter::bump", "{\"n\":1}", bearer("t-ann"), None, None);
    s.rpc.stop();
    s.rpc
        .call(4, "Counter::bump", "nope", bearer("t-ann"), None, None);
    assert_eq!(refusal(&mut s, 4).0, "malformed");
    s.rpc
        .call(5, "Counter::bump", "{\"n\":1}", bearer("t-ann"), None, None);
    assert_eq!(refusal(&mut s, 5).0, "shutting_down");
    s.rpc.open(0);
    assert_eq!(reply(&mut s, 9)["ok"], true);
    // The listener is released once nothing executes: the network refuses.
    s.rpc
        .call(6, "Counter::bump", "{\"n\":1}", bearer("t-ann"), None, None);
    assert!(s.rpc.was_closed(6));
    assert_eq!(s.counter.count(), 1);
}

#[test]
fn a_role_is_held_directly_or_through_a_role_that_includes_it() {
    let mut s = setup(8);
    // Other::work requires ops and admin; ann holds admin, which includes ops.
    call(&mut s, 1, "Other::work", r#"{"n":1}"#, "t-ann");
    assert_eq!(reply(&mut s, 1)["ok"], true);
    call(&mut s, 2, "Other::work", r#"{"n":1}"#, "t-bo");
    let r = reply(&mut s, 2);
    assert_eq!(r["refusal"]["reason"], "Other::work requires ops, admin");
    assert_eq!(
        r["refusal"]["requires"],
        serde_json::json!(["ops", "admin"])
    );
}

#[test]
fn an_expired_credential_is_refused_against_the_time_passed_in() {
    let mut s = setup(8);
    s.rpc.set_time(99 * SECOND);
    call(&mut s, 1, "Counter::bump", r#"{"n":1}"#, "t-eve");
    assert_eq!(reply(&mut s, 1)["ok"], true);
    s.rpc.set_time(100 * SECOND);
    call(&mut s, 2, "Counter::bump", r#"{"n":1}"#, "t-eve");
    assert_eq!(
        refusal(&mut s, 2),
        ("unauthenticated".into(), "expired".into())
    );
}

#[test]
fn a_peer_the_kernel_does_not_name_is_unauthenticated() {
    let mut s = setup(8);
    s.rpc.call(
        1,
        "Counter::bump",
        "{\"n\":1}",
        Credential::Peer(PeerCredentials::UNNAMED),
        None,
        None,
    );
    let r = reply(&mut s, 1);
    assert_eq!(r["refusal"]["reason"], "the kernel did not name the peer");
    assert_eq!(r["caller"]["name"], "uid:-1");
}

#[test]
fn the_context_carries_caller_role_via_exposure_and_generation() {
    let mut s = setup(8);
    call(&mut s, 1, "Other::work", r#"{"n":1}"#, "t-ann");
    let ctx = s.other.calls.lock().unwrap()[0].clone();
    assert_eq!(ctx.caller, Principal::bearer("ann"));
    assert_eq!(&*ctx.role, "ops");
    assert_eq!(&*ctx.via, "test");
    assert_eq!(&*ctx.exposure, "t");
    assert_eq!(ctx.generation, 1);
    assert_eq!(ctx.request_id, 1);
}

#[test]
fn a_receiver_is_an_actor_and_receivers_run_in_parallel() {
    let mut s = setup(8);
    s.rpc.gate(0);
    s.rpc.gate(1);
    for conn in 1..=3 {
        call(&mut s, conn, "Counter::bump", r#"{"n":1}"#, "t-ann");
    }
    call(&mut s, 4, "Other::work", r#"{"n":1}"#, "t-ann");
    // One call handed to each receiver; the rest wait in the exposure.
    assert_eq!(s.rpc.waiting(0), 1);
    assert_eq!(s.rpc.waiting(1), 1);
    assert_eq!(s.rpc.exposure().pending_len(), 4);
    // They run in the order accepted.
    s.rpc.open(0);
    let counts: Vec<_> = (1..=3)
        .map(|c| reply(&mut s, c)["value"]["count"].clone())
        .collect();
    assert_eq!(counts, [1, 2, 3]);
    assert!(s.rpc.outcome(4).is_none());
    s.rpc.open(1);
    assert_eq!(reply(&mut s, 4)["ok"], true);
}

#[test]
fn full_is_the_bound_of_requests_accepted_and_not_yet_answered() {
    let mut s = setup(2);
    s.rpc.gate(0);
    call(&mut s, 1, "Counter::bump", r#"{"n":1}"#, "t-ann");
    call(&mut s, 2, "Counter::bump", r#"{"n":1}"#, "t-ann");
    call(&mut s, 3, "Counter::bump", r#"{"n":1}"#, "t-ann");
    assert_eq!(
        refusal(&mut s, 3),
        (
            "full".into(),
            "the exposure holds its bound of requests accepted and not yet answered".into()
        )
    );
    s.rpc.open(0);
    call(&mut s, 4, "Counter::bump", r#"{"n":1}"#, "t-ann");
    assert_eq!(reply(&mut s, 4)["ok"], true);
}

// § The request lifecycle: the five guarantees.

#[test]
fn waiting_permits_supervision_to_progress() {
    // A violating call's owner runs on_failure before the exposure answers,
    // while other calls wait: the wait is pending state, not a parked pool.
    let mut s = setup(8);
    let ran = Arc::new(Mutex::new(Vec::new()));
    let log = ran.clone();
    s.rpc.on_failure(move |r| {
        log.lock().unwrap().push(r);
        Supervision::Absorb
    });
    s.rpc.gate(0);
    call(&mut s, 1, "Counter::boom", r#"{"n":1}"#, "t-ann");
    call(&mut s, 2, "Counter::bump", r#"{"n":1}"#, "t-ann");
    s.rpc.step(0);
    assert_eq!(*ran.lock().unwrap(), [0]);
    assert_eq!(
        reply(&mut s, 1),
        serde_json::json!({"request_id": 1, "id": "x", "ok": false,
            "refusal": {"kind": "server"}, "caller": {"mode": "bearer", "name": "ann"}})
    );
    s.rpc.open(0);
    assert_eq!(reply(&mut s, 2)["ok"], true);
}

#[test]
fn requests_and_replies_outlive_their_connection() {
    // Lost before completion: the work still runs, once; its reply is
    // dropped and the transport told once it is finished with the
    // connection; the unit is released.
    let mut s = setup(8);
    s.rpc.gate(0);
    call(&mut s, 1, "Counter::bump", r#"{"n":5}"#, "t-ann");
    s.rpc.lose(1);
    assert_eq!(s.rpc.exposure().pending_len(), 1);
    s.rpc.open(0);
    assert_eq!(s.counter.count(), 1);
    assert!(s.rpc.outcome(1).is_none());
    assert!(s.rpc.was_closed(1));
    assert_eq!(s.rpc.exposure().pending_len(), 0);
}

#[test]
fn a_reply_written_before_the_loss_is_not_unwritten() {
    let mut s = setup(8);
    call(&mut s, 1, "Counter::bump", r#"{"n":5}"#, "t-ann");
    s.rpc.lose(1);
    assert_eq!(reply(&mut s, 1)["ok"], true);
    assert!(!s.rpc.was_closed(1));
    assert_eq!(s.counter.count(), 1);
}

#[test]
fn completion_and_capacity_are_accounted_for_once() {
    let mut s = setup(1);
    s.rpc.gate(0);
    call(&mut s, 1, "Counter::bump", r#"{"n":1}"#, "t-ann");
    s.rpc.lose(1);
    // Still executing after the loss: it holds its unit.
    call(&mut s, 2, "Counter::bump", r#"{"n":1}"#, "t-ann");
    assert_eq!(refusal(&mut s, 2).0, "full");
    s.rpc.open(0);
    assert_eq!(s.rpc.exposure().pending_len(), 0);
    call(&mut s, 3, "Counter::bump", r#"{"n":1}"#, "t-ann");
    assert_eq!(reply(&mut s, 3)["ok"], true);
    assert!(s.rpc.outcome(3).is_none(), "one outcome per request");
}

#[test]
fn no_implicit_rollback_or_retry_and_stop_refuses_the_queue() {
    let mut s = setup(8);
    s.rpc.gate(0);
    for conn in 1..=3 {
        call(&mut s, conn, "Counter::bump", r#"{"n":1}"#, "t-ann");
    }
    s.rpc.stop();
    // The queued calls did not run: shutting_down.
    for conn in 2..=3 {
        assert_eq!(
            refusal(&mut s, conn),
            ("shutting_down".into(), "the exposure is stopping".into())
        );
    }
    // A request while stop() waits is refused too.
    call(&mut s, 4, "Counter::bump", r#"{"n":1}"#, "t-ann");
    assert_eq!(refusal(&mut s, 4).0, "shutting_down");
    assert!(s.rpc.is_listening());
    // The executing call finishes and is delivered; then the listener goes.
    s.rpc.open(0);
    assert_eq!(reply(&mut s, 1)["ok"], true);
    assert!(!s.rpc.is_listening());
    assert_eq!(s.counter.count(), 1);
    // stop() again is safe.
    s.rpc.stop();
    assert!(s.rpc.outcome(1).is_none());
}

#[test]
fn f42_stands_a_violation_is_the_server_error_and_an_exit_a_transport_failure() {
    let mut s = setup(8);
    s.rpc.on_failure(|_| Supervision::ExitProcess);
    call(&mut s, 1, "Counter::boom", r#"{"n":1}"#, "t-ann");
    assert!(s.rpc.exited());
    assert!(
        s.rpc.outcome(1).is_none(),
        "never a swallowed structural failure"
    );
    assert!(s.rpc.was_closed(1), "the caller sees the connection end");
    assert_eq!(s.rpc.exposure().pending_len(), 0);
}

#[test]
fn a_handler_error_is_its_declared_error() {
    let mut s = setup(8);
    call(&mut s, 1, "Counter::fail", r#"{"n":1}"#, "t-ann");
    let r = reply(&mut s, 1);
    assert_eq!(r["ok"], false);
    assert_eq!(r["error"], serde_json::json!({"code": "nope"}));
}

#[test]
fn stop_waits_ten_seconds_then_abandons_with_a_transport_failure() {
    let mut s = setup(8);
    s.rpc.set_time(1_000 * SECOND);
    s.rpc.gate(0);
    call(&mut s, 1, "Counter::bump", r#"{"n":1}"#, "t-ann");
    s.rpc.stop();
    assert_eq!(s.rpc.exposure().poll_timeout(), Some(1_010 * SECOND));
    s.rpc.set_time(1_009 * SECOND);
    assert!(s.rpc.is_listening());
    s.rpc.set_time(1_010 * SECOND);
    assert!(!s.rpc.is_listening());
    assert!(s.rpc.was_closed(1));
    assert!(s.rpc.outcome(1).is_none());
    // The abandoned call ends later: nothing changes.
    s.rpc.open(0);
    assert!(s.rpc.outcome(1).is_none());
}

#[test]
fn a_teardown_waits_one_second_and_shortens_a_running_stop() {
    let mut s = setup(8);
    s.rpc.gate(0);
    call(&mut s, 1, "Counter::bump", r#"{"n":1}"#, "t-ann");
    s.rpc.stop();
    assert_eq!(s.rpc.exposure().poll_timeout(), Some(10 * SECOND));
    s.rpc.teardown();
    assert_eq!(s.rpc.exposure().poll_timeout(), Some(SECOND));
    s.rpc.set_time(SECOND);
    assert!(!s.rpc.is_listening());
    assert!(s.rpc.was_closed(1));
}

// § Receiver failure and generations.

#[test]
fn a_draining_receiver_refuses_its_members_while_others_serve_on() {
    let mut s = setup(8);
    s.rpc.gate(0);
    call(&mut s, 1, "Counter::bump", r#"{"n":1}"#, "t-ann");
    call(&mut s, 2, "Counter::bump", r#"{"n":1}"#, "t-ann");
    s.rpc.drain(0);
    // The queued call settles unavailable; the executing one runs.
    assert_eq!(
        refusal(&mut s, 2),
        (
            "unavailable".into(),
            "the receiver of Counter::bump is unavailable; the call did not run".into()
        )
    );
    call(&mut s, 3, "Counter::bump", r#"{"n":1}"#, "t-ann");
    assert_eq!(refusal(&mut s, 3).0, "unavailable");
    call(&mut s, 4, "Other::work", r#"{"n":1}"#, "t-ann");
    assert_eq!(reply(&mut s, 4)["ok"], true);
    s.rpc.open(0);
    assert_eq!(reply(&mut s, 1)["ok"], true);
    assert_eq!(s.counter.count(), 1);
    // Back after a restart: asked again at the next request, a new
    // generation.
    s.rpc.restart(0);
    call(&mut s, 5, "Counter::bump", r#"{"n":1}"#, "t-ann");
    assert_eq!(reply(&mut s, 5)["ok"], true);
    let last = s.counter.calls.lock().unwrap().last().unwrap().generation;
    assert!(last > 1);
}

#[test]
fn a_call_accepted_under_one_generation_never_executes_under_the_next() {
    // Driven without the fixture, so a call can be executing when the
    // receiver restarts.
    let s = setup(8);
    drop(s);
    let members = vec![member("R::go", 0, &[])];
    let spec = ExposureSpec {
        name: "g".into(),
        surface: "G".into(),
        digest: DIGEST.into(),
        via: "test".into(),
        members: members.clone(),
        receivers: vec!["self.r".into()],
        bound: 8,
        hierarchy: RoleHierarchy::flat(),
        limits: ExposureLimits::default(),
    };
    let mut ex = Exposure::new(
        spec,
        Some(Box::new(TokenTable::new(None).with("t", "t"))),
        Box::new(RoleTable::new()),
        Box::new(NCodec),
        Box::new(ListDoc(vec!["R::go".into()])),
    );
    ex.receiver_born(0, 7);
    let req = |c| Request {
        correlation: c,
        kind: RequestKind::Call {
            member: "R::go".into(),
            payload: Payload::Json(br#"{"n":1}"#.to_vec()),
        },
        digest: None,
        credential: bearer("t"),
        client_id: None,
    };
    let a = ex.handle_request(0, 0, req(1));
    let b = ex.handle_request(0, 0, req(2));
    let Some(Event::Dispatch(d)) = ex.poll_event() else {
        panic!("a is handed over");
    };
    assert_eq!((d.request_id, d.generation, d.stamp), (a, 1, 7));
    assert!(ex.poll_event().is_none(), "b waits: one call at a time");
    // A restart: b, queued under generation 1, is refused unavailable.
    ex.receiver_born(0, 8);
    let Some(Event::Deliver(refused)) = ex.poll_event() else {
        panic!("b settles");
    };
    assert_eq!(refused.request_id, b);
    assert!(
        matches!(refused.outcome, Outcome::Refusal(ref r) if r.kind == RefusalKind::Unavailable)
    );
    // a completes under the generation that ran it.
    ex.handle_completion(a, Completion::Returned(b"{}".to_vec()));
    let Some(Event::Deliver(done)) = ex.poll_event() else {
        panic!("a is delivered");
    };
    assert_eq!(
        (done.request_id, done.outcome),
        (a, Outcome::Result(b"{}".to_vec()))
    );
    // A new call runs under generation 2, at the new stamp.
    let c = ex.handle_request(0, 0, req(3));
    let Some(Event::Dispatch(d)) = ex.poll_event() else {
        panic!("c is handed over");
    };
    assert_eq!((d.request_id, d.generation, d.stamp), (c, 2, 8));
    // Announcing the known incarnation again changes nothing; the departure
    // of a replaced one is news to nobody.
    ex.receiver_born(0, 8);
    ex.receiver_dissolved(0, 7);
    assert_eq!(ex.generation(0), 2);
    assert!(ex.poll_event().is_none());
}

#[test]
fn a_receiver_not_yet_known_is_asked_and_its_calls_wait() {
    let spec = ExposureSpec {
        name: "g".into(),
        surface: "G".into(),
        digest: DIGEST.into(),
        via: "test".into(),
        members: vec![member("R::go", 0, &[])],
        receivers: vec!["self.r".into()],
        bound: 8,
        hierarchy: RoleHierarchy::flat(),
        limits: ExposureLimits::default(),
    };
    let mut ex = Exposure::new(
        spec,
        Some(Box::new(TokenTable::new(None).with("t", "t"))),
        Box::new(RoleTable::new()),
        Box::new(NCodec),
        Box::new(ListDoc(vec!["R::go".into()])),
    );
    let req = Request {
        correlation: 1,
        kind: RequestKind::Call {
            member: "R::go".into(),
            payload: Payload::Json(br#"{"n":1}"#.to_vec()),
        },
        digest: None,
        credential: bearer("t"),
        client_id: None,
    };
    let a = ex.handle_request(0, 0, req.clone());
    assert_eq!(ex.poll_event(), Some(Event::Ask(0)));
    assert!(ex.poll_event().is_none());
    ex.receiver_absent(0);
    let Some(Event::Deliver(d)) = ex.poll_event() else {
        panic!("a settles unavailable");
    };
    assert_eq!(d.request_id, a);
    // Found unavailable: the next request is refused and the receiver asked
    // again; when it answers, it serves.
    ex.handle_request(
        0,
        0,
        Request {
            correlation: 2,
            ..req.clone()
        },
    );
    assert!(matches!(ex.poll_event(), Some(Event::Ask(0))));
    assert!(matches!(ex.poll_event(), Some(Event::Deliver(_))));
    ex.receiver_born(0, 3);
    ex.handle_request(
        0,
        0,
        Request {
            correlation: 3,
            ..req
        },
    );
    assert!(matches!(ex.poll_event(), Some(Event::Dispatch(_))));
}

#[test]
fn describing_reads_the_rows_and_sources_admission_reads() {
    let mut s = setup(8);
    s.rpc.describe(1, bearer("t-ann"));
    let doc = reply(&mut s, 1)["value"].clone();
    assert_eq!(doc["roles"], serde_json::json!(["admin", "ops"]));
    assert_eq!(
        doc["members"],
        serde_json::json!([
            "Counter::bump",
            "Counter::guarded",
            "Counter::fail",
            "Counter::boom",
            "Other::work"
        ])
    );
    s.rpc.describe(2, bearer("t-bo"));
    let doc = reply(&mut s, 2)["value"].clone();
    assert_eq!(doc["roles"], serde_json::json!([]));
    assert_eq!(
        doc["members"],
        serde_json::json!(["Counter::bump", "Counter::fail", "Counter::boom"])
    );
    // Nobody: the same refusal a call gets.
    s.rpc.describe(3, bearer("t-x"));
    assert_eq!(refusal(&mut s, 3).0, "unauthenticated");
}

/// An exposure handing up to `ahead` calls ahead to its one receiver,
/// known, and a way to send `A::open` on connection `conn`.
mod ahead {
    use super::*;

    pub fn exposure(ahead: usize) -> Exposure {
        let spec = ExposureSpec {
            name: "ahead".into(),
            surface: "A".into(),
            digest: DIGEST.into(),
            via: "test".into(),
            members: vec![member("A::open", 0, &[])],
            receivers: vec!["self.a".into()],
            bound: 8,
            hierarchy: RoleHierarchy::flat(),
            limits: ExposureLimits {
                dispatch_ahead: ahead,
                ..ExposureLimits::default()
            },
        };
        let mut ex = Exposure::new(
            spec,
            Some(Box::new(TokenTable::new(None).with("t-ann", "ann"))),
            Box::new(RoleTable::new()),
            Box::new(NCodec),
            Box::new(ListDoc(vec!["A::open".into()])),
        );
        ex.receiver_born(0, 1);
        assert!(ex.poll_event().is_none());
        ex
    }

    pub fn open(ex: &mut Exposure, conn: u64) -> RequestId {
        let id = ex.handle_request(
            0,
            0,
            Request {
                correlation: conn,
                kind: RequestKind::Call {
                    member: "A::open".into(),
                    payload: Payload::Json(br#"{"n":1}"#.to_vec()),
                },
                digest: None,
                credential: bearer("t-ann"),
                client_id: None,
            },
        );
        assert!(ex.is_pending(id), "A::open is accepted");
        id
    }

    pub fn events(ex: &mut Exposure) -> Vec<Event> {
        std::iter::from_fn(|| ex.poll_event()).collect()
    }

    pub fn dispatched(events: &[Event]) -> Vec<RequestId> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Dispatch(d) => Some(d.request_id),
                _ => None,
            })
            .collect()
    }

    pub fn recalls(events: &[Event]) -> Vec<RequestId> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Recall { request_id, .. } => Some(*request_id),
                _ => None,
            })
            .collect()
    }

    /// Each delivered request with its refusal kind, or `None` for an
    /// outcome that is not a refusal.
    pub fn delivered(events: &[Event]) -> Vec<(RequestId, Option<RefusalKind>)> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Deliver(d) => Some((
                    d.request_id,
                    match &d.outcome {
                        Outcome::Refusal(r) => Some(r.kind),
                        _ => None,
                    },
                )),
                _ => None,
            })
            .collect()
    }
}

#[test]
fn with_calls_handed_ahead_a_receiver_is_handed_its_next_calls_in_order() {
    let mut ex = ahead::exposure(2);
    let ids: Vec<RequestId> = (0..4).map(|c| ahead::open(&mut ex, c)).collect();
    // One to run and two ahead; the fourth waits in the exposure's queue.
    assert_eq!(ahead::dispatched(&ahead::events(&mut ex)), ids[..3]);
    ex.handle_completion(ids[0], Completion::Returned(b"{}".to_vec()));
    let events = ahead::events(&mut ex);
    assert_eq!(ahead::delivered(&events), [(ids[0], None)]);
    assert_eq!(ahead::dispatched(&events), [ids[3]]);
}

#[test]
fn without_calls_handed_ahead_nothing_is_ever_recalled() {
    let mut ex = ahead::exposure(0);
    let a = ahead::open(&mut ex, 1);
    let b = ahead::open(&mut ex, 2);
    assert_eq!(ahead::dispatched(&ahead::events(&mut ex)), [a]);
    ex.stop(0);
    let events = ahead::events(&mut ex);
    assert!(ahead::recalls(&events).is_empty());
    // The handed call executes; the queued one is refused.
    assert_eq!(
        ahead::delivered(&events),
        [(b, Some(RefusalKind::ShuttingDown))]
    );
}

#[test]
fn at_stop_a_call_handed_ahead_and_not_started_is_refused_as_queued() {
    let mut ex = ahead::exposure(2);
    let ids: Vec<RequestId> = (0..4).map(|c| ahead::open(&mut ex, c)).collect();
    ahead::events(&mut ex);
    ex.stop(0);
    let events = ahead::events(&mut ex);
    // The queued one is refused at once; every handed one is asked back.
    assert_eq!(
        ahead::delivered(&events),
        [(ids[3], Some(RefusalKind::ShuttingDown))]
    );
    assert_eq!(ahead::recalls(&events), ids[..3]);
    // The first had started: its worker keeps it and it completes. The
    // other two were taken back.
    ex.recalled(ids[1]);
    ex.recalled(ids[2]);
    ex.handle_completion(ids[0], Completion::Returned(b"{}".to_vec()));
    let events = ahead::events(&mut ex);
    assert_eq!(
        ahead::delivered(&events),
        [
            (ids[1], Some(RefusalKind::ShuttingDown)),
            (ids[2], Some(RefusalKind::ShuttingDown)),
            (ids[0], None),
        ]
    );
    assert!(matches!(events.last(), Some(Event::StopListening)));
    assert_eq!(ex.pending_len(), 0);
    // A recall answered twice, or for a call never asked back, is nothing.
    ex.recalled(ids[1]);
    ex.recalled(99);
    assert!(ex.poll_event().is_none());
}

#[test]
fn a_draining_receiver_takes_back_its_calls_handed_ahead_as_unavailable() {
    let mut ex = ahead::exposure(1);
    let a = ahead::open(&mut ex, 1);
    let b = ahead::open(&mut ex, 2);
    let c = ahead::open(&mut ex, 3);
    assert_eq!(ahead::dispatched(&ahead::events(&mut ex)), [a, b]);
    ex.receiver_draining(0, 1);
    let events = ahead::events(&mut ex);
    assert_eq!(
        ahead::delivered(&events),
        [(c, Some(RefusalKind::Unavailable))]
    );
    assert_eq!(ahead::recalls(&events), [a, b]);
    // Neither had started.
    ex.recalled(a);
    ex.recalled(b);
    assert_eq!(
        ahead::delivered(&ahead::events(&mut ex)),
        [
            (a, Some(RefusalKind::Unavailable)),
            (b, Some(RefusalKind::Unavailable)),
        ]
    );
    assert_eq!(ex.pending_len(), 0);
}

#[test]
fn a_call_recalled_that_had_started_still_completes_once() {
    let mut ex = ahead::exposure(1);
    let a = ahead::open(&mut ex, 1);
    let b = ahead::open(&mut ex, 2);
    ahead::events(&mut ex);
    ex.receiver_draining(0, 1);
    assert_eq!(ahead::recalls(&ahead::events(&mut ex)), [a, b]);
    // `a` had started and completes; `b` reported not taken by its worker
    // (it could no longer run it) instead of taken back.
    ex.handle_completion(a, Completion::Failed(b"{\"code\":\"x\"}".to_vec()));
    ex.dispatch_not_taken(b);
    let events = ahead::events(&mut ex);
    assert_eq!(
        ahead::delivered(&events),
        [(a, None), (b, Some(RefusalKind::Unavailable))]
    );
    ex.recalled(b);
    ex.handle_completion(a, Completion::Returned(b"{}".to_vec()));
    assert!(ex.poll_event().is_none());
}
