//! `limen-conformance compare`: each record of a corpus against the
//! reference record of the same name, as values, masked
//! ([`mask::compare_record`]); a describe record
//! (`describe.<exposure>.<caller>`) against the reference's description
//! document of that exposure and caller
//! (`<exposure>.<caller>.description.json`, [`mask::compare_document`]).

use crate::mask;
use crate::record::{Corpus, Record, Transport};
use crate::report::{Report, Verdict};

/// The reference document a describe record is held to, by name.
fn document_name(r: &Record) -> Option<&str> {
    r.stem().strip_prefix("describe.")
}

/// Compares every record of `ours` with its reference counterpart. A record
/// the reference has no counterpart of is listed as a note, neither passed
/// nor failed; a reference record (or description document) `ours` lacks
/// fails when `ours` has records of its transport, since a corpus of a
/// transport is to cover the reference's records of it.
pub fn run(ours: &Corpus, reference: &Corpus) -> Report {
    let mut report = Report::default();
    for u in &ours.unreadable {
        report.push(&u.name, Verdict::Fail(u.error.clone()));
    }
    for r in &ours.records {
        let verdict = if let Some(want) = reference.record(&r.name) {
            mask::compare_record(want, r)
        } else if let Some(want) = document_name(r).and_then(|d| reference.document(d)) {
            match r.document() {
                None => Some("the record's reply carries no description".into()),
                Some(doc) => {
                    mask::compare_document(want, doc, r.peer).map(|d| format!("the document {d}"))
                }
            }
        } else {
            report.notes.push(format!(
                "new   {}: the reference has no record of this name",
                r.name
            ));
            continue;
        };
        match verdict {
            None => report.push(&r.name, Verdict::Pass),
            Some(d) => report.push(&r.name, Verdict::Fail(d)),
        }
    }
    let covers = |t: &Transport| ours.records.iter().any(|r| r.transport == *t);
    let has =
        |name: &str| ours.record(name).is_some() || ours.unreadable.iter().any(|u| u.name == name);
    for want in &reference.records {
        if covers(&want.transport) && !has(&want.name) {
            report.push(
                &want.name,
                Verdict::Fail("the corpus has no record of this name".into()),
            );
        }
    }
    for (doc, value) in &reference.documents {
        let transport = value
            .pointer("/listener/transport")
            .and_then(|t| t.as_str())
            .map(Transport::parse);
        let Some(transport) = transport else { continue };
        let name = format!("{}/describe.{doc}", transport.as_str());
        if covers(&transport) && !has(&name) {
            report.push(
                &name,
                Verdict::Fail(format!(
                    "the corpus has no describe record of {doc}.description.json"
                )),
            );
        }
    }
    report.lines.sort_by(|a, b| a.name.cmp(&b.name));
    report
}
