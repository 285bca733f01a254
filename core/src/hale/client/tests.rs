//! The client model over the witness program and over small programs, and
//! the header every client starts with.

use super::*;
use crate::hale::docs::book::Slot;
use crate::hale::docs::rows::ErrorSlot;
use crate::hale::model::{parse_program, TransportKind};

const DESK: &str = include_str!("../../../../conformance/programs/desk.hl");

fn desk() -> Program {
    parse_program("desk.hl", DESK).unwrap_or_else(|d| panic!("{d}"))
}

fn record(name: &str) -> Slot {
    Slot::Record(name.to_string())
}

#[test]
fn the_witness_public_surface_reads_as_its_description_lists_it() {
    let s = ClientSurface::read(&desk(), "Public").unwrap();
    assert_eq!(s.app, "Desk");
    // The digest the witness's recorded wire sends (wire/http/result.json).
    assert_eq!(s.digest, "fnv1a64:a8930d6e7998e986");
    let names: Vec<&str> = s.members.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["Orders::cancel", "Orders::place"]);
    let cancel = &s.members[0];
    assert_eq!(
        (cancel.locus.as_str(), cancel.function.as_str()),
        ("Orders", "cancel")
    );
    assert_eq!(cancel.request, Some(record("CancelOrder")));
    assert_eq!(cancel.handler_error(), Some(&record("OrderError")));
    assert_eq!(cancel.requires, ["trader"]);
    // `place` may violate: a structural failure, no handler error a client
    // could match.
    let place = &s.members[1];
    assert_eq!(place.error, ErrorSlot::ClosureViolation);
    assert_eq!(place.handler_error(), None);
    // The records the rows and the hub's stream reach, by name.
    let records: Vec<&str> = s.records.keys().map(String::as_str).collect();
    assert_eq!(
        records,
        [
            "CancelOrder",
            "Cancelled",
            "Fill",
            "OrderError",
            "OrderReceipt",
            "PlaceOrder"
        ]
    );
    let exposures: Vec<(&str, &TransportKind)> = s
        .exposures
        .iter()
        .map(|e| (e.name.as_str(), &e.transport))
        .collect();
    assert_eq!(
        exposures,
        [
            ("partner", &TransportKind::Http),
            ("public", &TransportKind::Http)
        ]
    );
    assert_eq!(
        s.exposures[1].identity,
        "Public@fnv1a64:a8930d6e7998e986/public"
    );
    let streams: Vec<(&str, &str)> = s
        .ws_streams()
        .map(|(h, st)| (h.name.as_str(), st.topic.as_str()))
        .collect();
    assert_eq!(streams, [("fills", "Fills")]);
    let (hub, fills) = s.ws_streams().next().unwrap();
    assert_eq!(hub.identity, "hub@fnv1a64:26970854397ab154/fills");
    assert_eq!(fills.payload, Some(record("Fill")));
    assert_eq!((fills.bound, fills.on_full.as_str()), (64, "drop_old"));
    assert_eq!(fills.requires, ["operator"]);
}

#[test]
fn a_surface_no_program_declares_is_refused_naming_those_there_are() {
    let err = ClientSurface::read(&desk(), "Nope").unwrap_err();
    let text = err.to_string();
    assert!(text.contains("Nope") && text.contains("Public"), "{text}");
}

#[test]
fn a_shape_the_json_codec_does_not_carry_is_refused_naming_the_row_and_field() {
    let p = parse_program(
        "t.hl",
        "role r;\ntype Blob { raw: Bytes; }\napi S { rpc B::f requires: [r]; }\nlocus B { fn f(b: Blob) -> Int { } }\n",
    )
    .unwrap_or_else(|d| panic!("{d}"));
    let text = ClientSurface::read(&p, "S").unwrap_err().to_string();
    assert!(text.contains("B::f") && text.contains("raw"), "{text}");
}

#[test]
fn the_header_names_the_digest_and_made_against_reads_it_back() {
    let s = ClientSurface::read(&desk(), "Admin").unwrap();
    for lang in Lang::ALL {
        let h = header(&s, lang);
        assert!(h.starts_with(lang.comment()), "{h}");
        assert_eq!(made_against(&h), Some(s.digest.as_str()));
        assert_eq!(Lang::parse(lang.name()), Some(lang));
    }
    assert_eq!(made_against("// no digest here\n"), None);
    assert_eq!(made_against("// fnv1a64:0123\n"), None);
    assert_eq!(made_against("// fnv1a64:0123456789ABCDEF\n"), None);
    assert_eq!(made_against(""), None);
}
