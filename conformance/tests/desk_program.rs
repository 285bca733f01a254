//! The project's own copy of the witness declarations
//! (`programs/desk.hl`) is the witness's contract: the same rows, serve
//! sites, hub and digests as ../shared/hale-witness/program.hl, and it
//! passes the laws with the same notes.

use limen_core::hale::laws;
use limen_core::hale::model::{parse_program, Program};

const DESK: &str = include_str!("../programs/desk.hl");

fn witness() -> Option<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/hale-witness/program.hl"
    );
    match std::fs::read_to_string(path) {
        Ok(s) => Some(s),
        Err(_) => {
            eprintln!("skipped: ../shared/hale-witness/program.hl is absent");
            None
        }
    }
}

fn contract(p: &Program) -> Vec<String> {
    let mut out = Vec::new();
    for s in &p.surfaces {
        out.push(format!(
            "surface {} {}",
            s.name,
            p.surface_digest(&s.name).unwrap()
        ));
        for r in &s.rows {
            out.push(format!(
                "  {} {:?} {:?} {:?} {:?}",
                r.member,
                r.request.as_ref().map(|t| t.text()),
                r.response.as_ref().map(|t| t.text()),
                r.error.as_ref().map(|t| t.text()),
                r.requires_names()
            ));
        }
    }
    for e in &p.exposures {
        let receivers: Vec<String> = e
            .receivers
            .iter()
            .map(|r| format!("{}={}({})", r.ty, r.instance.text(), r.binding.as_str()))
            .collect();
        out.push(format!(
            "exposure {} {:?} {:?} {} {} {} {:?} {:?} {:?}",
            p.exposure_id(e).unwrap(),
            e.listener,
            e.codec,
            e.principals.text(),
            e.roles.text(),
            receivers.join(","),
            e.bound,
            e.on_full,
            e.unbound
        ));
    }
    for h in &p.hubs {
        let name = h.name().unwrap();
        out.push(format!(
            "hub {} {:?}",
            p.hub_exposure_id(name).unwrap(),
            p.hub_input(name).unwrap()
        ));
    }
    out
}

#[test]
fn desk_is_the_witness_contract() {
    let Some(src) = witness() else { return };
    let theirs = parse_program("program.hl", &src).unwrap();
    let ours = parse_program("desk.hl", DESK).unwrap();
    assert_eq!(contract(&ours), contract(&theirs));
}

#[test]
fn desk_passes_the_laws_with_the_witness_notes() {
    let check = laws::check_source("desk.hl", DESK).unwrap();
    assert!(check.errors.is_empty(), "{:?}", check.errors);
    let notes: Vec<String> = check.notes.iter().map(|n| n.message.clone()).collect();
    assert_eq!(
        notes,
        [
            "rpc `Orders::place`: its error type is `ClosureViolation`, so a failure is the server error; a description carries no error schema for it",
            "rpc `Ledger::rebalance`: its error type is `ClosureViolation`, so a failure is the server error; a description carries no error schema for it",
        ]
    );
}
