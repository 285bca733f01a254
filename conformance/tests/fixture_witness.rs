//! The witness's Admin exposure over the fixture transport, held to the
//! recorded Unix exchanges of the reference fixtures: every outcome and
//! refusal kind, each refusal leaving the handler's counter where it was.

use std::path::PathBuf;

use limen_core::hale::model::{Program, Source};
use limen_core::hale::runtime::*;
use limen_core::hale::serving::{exposure_spec, ShapeCodec};
use limen_witness::{self as witness, Instances};

fn shared() -> Option<PathBuf> {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/hale-witness"
    ));
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("skipped: ../shared/hale-witness is absent");
        None
    }
}

struct NoDoc;
impl Describer for NoDoc {
    fn describe(&self, _: &Principal, _: &[String], _: &[usize]) -> Vec<u8> {
        b"{}".to_vec()
    }
}

fn role_param(program: &Program, exposure: &str) -> String {
    match &program.exposure(exposure).unwrap().roles {
        Source::Param { param, .. } => param.clone(),
        other => panic!("the witness's role sources are params, not {other:?}"),
    }
}

/// The fixture serving one exposure of the witness, with the shared
/// instances.
fn fixture(
    program: &Program,
    name: &str,
    via: &str,
    inst: &Instances,
    bound: Option<usize>,
) -> FixtureRpc {
    let e = program.exposure(name).unwrap();
    let mut spec = exposure_spec(program, e, via).unwrap();
    if let Some(b) = bound {
        spec.bound = b;
    }
    let receivers = spec
        .receivers
        .iter()
        .map(|r| inst.receiver(r).unwrap())
        .collect();
    let bearer: Option<Box<dyn BearerSource + Send>> = match e.principals {
        Source::Kernel => None,
        _ => Some(Box::new(witness::tokens())),
    };
    let roles = witness::grants(program, &role_param(program, name));
    let codec = ShapeCodec::new(program, e).unwrap();
    FixtureRpc::new(
        Exposure::new(
            spec,
            bearer,
            Box::new(roles),
            Box::new(codec),
            Box::new(NoDoc),
        ),
        receivers,
    )
}

fn peer_of(record: &serde_json::Value) -> Credential {
    let p = &record["peer"];
    Credential::Peer(PeerCredentials {
        uid: p["uid"].as_i64().unwrap(),
        gid: p["gid"].as_i64().unwrap(),
        pid: p["pid"].as_i64().unwrap(),
        groups: None,
    })
}

fn send(rpc: &mut FixtureRpc, conn: u64, record: &serde_json::Value) {
    let req = &record["request"];
    rpc.call(
        conn,
        req["call"].as_str().unwrap(),
        &req["payload"].to_string(),
        peer_of(record),
        req["digest"].as_str(),
        Some(&req["id"].to_string()),
    );
}

/// The reply with what differs between runs masked: the request id.
fn masked(mut v: serde_json::Value) -> serde_json::Value {
    v["request_id"] = serde_json::Value::Null;
    v
}

fn check(rpc: &mut FixtureRpc, conn: u64, record: &serde_json::Value) {
    let line = rpc.outcome(conn).expect("an outcome was delivered");
    let got: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(
        masked(got),
        masked(record["reply"].clone()),
        "{}",
        record["outcome"]
    );
}

#[test]
fn every_recorded_unix_exchange_over_the_fixture_transport() {
    let Some(dir) = shared() else { return };
    let program = witness::program();
    let record = |name: &str| -> serde_json::Value {
        let text =
            std::fs::read_to_string(dir.join("wire/unix").join(format!("{name}.json"))).unwrap();
        serde_json::from_str(&text).unwrap()
    };
    let inst = Instances::new(&program);
    let mut admin = fixture(&program, "admin", "unix", &inst, None);
    let mut public = fixture(&program, "public", "http", &inst, None);

    // An order placed through public is the order admin cancels: one
    // instance, two exposures.
    public.call(
        1,
        "Orders::place",
        r#"{"symbol":"ACME","qty":10,"limit":12500}"#,
        fixture::bearer("t-alice"),
        None,
        None,
    );
    assert!(public
        .outcome(1)
        .unwrap()
        .contains(r#""value":{"order":41,"notional":125000}"#));

    check_after(&mut admin, &record("result"), &inst, 1);
    check_after(&mut admin, &record("handler_error"), &inst, 1);
    // Refusals never reach the handler.
    for kind in [
        "refusal_malformed",
        "refusal_digest_mismatch",
        "refusal_unauthenticated",
        "refusal_unauthorized",
    ] {
        check_after(&mut admin, &record(kind), &inst, 0);
    }
    check_after(&mut admin, &record("server_error"), &inst, 1);
}

/// Sends a record, checks the reply, and that the handlers' counters moved
/// by `moved`.
fn check_after(rpc: &mut FixtureRpc, record: &serde_json::Value, inst: &Instances, moved: u64) {
    let before = inst.orders.calls() + inst.ledger.calls();
    send(rpc, 10, record);
    check(rpc, 10, record);
    assert_eq!(
        inst.orders.calls() + inst.ledger.calls() - before,
        moved,
        "{}",
        record["outcome"]
    );
}

#[test]
fn full_shutting_down_and_unavailable_as_recorded() {
    let Some(dir) = shared() else { return };
    let program = witness::program();
    let record = |name: &str| -> serde_json::Value {
        let text =
            std::fs::read_to_string(dir.join("wire/unix").join(format!("{name}.json"))).unwrap();
        serde_json::from_str(&text).unwrap()
    };
    let ledger = 1; // Admin's receivers: self.orders, then self.ledger.

    // full: a gated ledger holds the bound's requests.
    let inst = Instances::new(&program);
    let mut admin = fixture(&program, "admin", "unix", &inst, None);
    assert_eq!(admin.exposure().spec().receivers[ledger], "self.ledger");
    admin.gate(ledger);
    let full = record("refusal_full");
    for conn in 100..116 {
        send(&mut admin, conn, &full);
    }
    send(&mut admin, 1, &full);
    check(&mut admin, 1, &full);

    // shutting_down: one executing, the recorded one queued, then stop().
    let inst = Instances::new(&program);
    let mut admin = fixture(&program, "admin", "unix", &inst, None);
    admin.gate(ledger);
    let down = record("refusal_shutting_down");
    send(&mut admin, 100, &down);
    send(&mut admin, 1, &down);
    admin.stop();
    check(&mut admin, 1, &down);
    assert_eq!(inst.ledger.calls(), 0, "the queued call did not run");

    // unavailable: the ledger drains; its members are refused while
    // Orders serves on.
    let inst = Instances::new(&program);
    let mut admin = fixture(&program, "admin", "unix", &inst, None);
    admin.drain(ledger);
    let gone = record("refusal_unavailable");
    send(&mut admin, 1, &gone);
    check(&mut admin, 1, &gone);
    assert_eq!(inst.ledger.calls(), 0);
    let handler_error = record("handler_error");
    send(&mut admin, 2, &handler_error);
    check(&mut admin, 2, &handler_error);
}
