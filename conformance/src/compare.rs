//! `limen-conformance compare`: each record of a corpus against the
//! reference record of the same name, as values, masked
//! ([`mask::compare_record`]).

use crate::mask;
use crate::record::{Corpus, Transport};
use crate::report::{Report, Verdict};

/// Compares every record of `ours` with the record of the same name in
/// `reference`. A record the reference has no counterpart of is listed
/// as a note, neither passed nor failed; one the reference has and `ours`
/// lacks fails when `ours` has records of its transport, since a corpus of
/// a transport is to cover the reference's records of it.
pub fn run(ours: &Corpus, reference: &Corpus) -> Report {
    let mut report = Report::default();
    for u in &ours.unreadable {
        report.push(&u.name, Verdict::Fail(u.error.clone()));
    }
    for r in &ours.records {
        match reference.record(&r.name) {
            None => report.notes.push(format!(
                "new   {}: the reference has no record of this name",
                r.name
            )),
            Some(want) => match mask::compare_record(want, r) {
                None => report.push(&r.name, Verdict::Pass),
                Some(d) => report.push(&r.name, Verdict::Fail(d)),
            },
        }
    }
    let covers = |t: &Transport| ours.records.iter().any(|r| r.transport == *t);
    for want in &reference.records {
        let missing = ours.record(&want.name).is_none()
            && !ours.unreadable.iter().any(|u| u.name == want.name);
        if missing && covers(&want.transport) {
            report.push(
                &want.name,
                Verdict::Fail("the corpus has no record of this name".into()),
            );
        }
    }
    report.lines.sort_by(|a, b| a.name.cmp(&b.name));
    report
}
