//! `limen-conformance compare`: each record of a corpus against the
//! reference record of the same name, as values, masked
//! ([`record::compare_records`]); a describe record
//! (`describe.<exposure>.<caller>`) against the reference's description
//! document of that exposure and caller
//! (`<exposure>.<caller>.description.json`, [`mask::compare_document`]).
//!
//! A record of a transport the reference has no records of is held to
//! what the reference's record of its name in another transport implies
//! ([`transport::Form::implied_by`]: an MCP record to the HTTP call, § Outcomes), or
//! by its transport's own rule ([`transport::Form::held_to_reference`]: MCP's
//! `tools_list.<caller>` to the projection `<Surface>.mcp.json` and the
//! caller's description, whose members are exactly the tools listed).

use std::path::Path;

use limen_core::hale::model::Program;
use serde_json::Value;

use crate::mask;
use crate::record::{self, Corpus, Record, Transport};
use crate::report::{Report, Verdict};
use crate::transport::{self, Reference};

/// The reference corpus, as a transport's rules read it.
struct Referenced<'a> {
    corpus: &'a Corpus,
    /// The compared corpus's program (which exposures share sources).
    program: Option<&'a Program>,
}

impl Reference for Referenced<'_> {
    fn dir(&self) -> &Path {
        &self.corpus.dir
    }

    fn document(&self, name: &str) -> Option<&Value> {
        self.corpus.document(name)
    }

    /// Itself, and the program's exposures serving the same surface under
    /// the same sources.
    fn same_sources(&self, name: &str) -> Vec<String> {
        let Some(program) = self.program else {
            return vec![name.to_owned()];
        };
        let Some(e) = crate::world::served_exposure(program, name) else {
            return vec![name.to_owned()];
        };
        let mut names = vec![name.to_owned()];
        names.extend(
            program
                .exposures
                .iter()
                .filter(|o| {
                    o.surface == e.surface && o.principals == e.principals && o.roles == e.roles
                })
                .filter_map(|o| o.name.clone()),
        );
        names
    }
}

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
    // Read once: the tools_list records ask it which exposures share sources.
    let program = ours.program_model().ok();
    let referenced = Referenced {
        corpus: reference,
        program: program.as_ref(),
    };
    for u in &ours.unreadable {
        report.push(&u.name, Verdict::Fail(u.error.clone()));
    }
    for r in &ours.records {
        let form = r.transport.form();
        // A reference record of the same stem in another transport that
        // implies this one (an MCP call, the HTTP call of its name).
        let implied = form.and_then(|f| {
            reference
                .records
                .iter()
                .filter(|h| h.stem() == r.stem() && h.transport != r.transport)
                .find_map(|h| Some((h.name.as_str(), h.implied(f, &r.exposure)?)))
        });
        let own_rule = || form.and_then(|f| f.held_to_reference(r.exchange(), &referenced));
        let verdict = if let Some(want) = reference.record(&r.name) {
            record::compare_records(want, r)
        } else if let Some((from, want)) = &implied {
            record::compare_records(want, r).map(|d| format!("{d} (as {from} implies)"))
        } else if let Some(held) = own_rule() {
            held
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
        // A corpus of MCP records covers the reference's HTTP calls too:
        // every record another transport's record implies.
        for form in transport::FORMS {
            let name = format!("{}/{}", form.name(), want.stem());
            let implies = want.implied(*form, &want.exposure).is_some();
            if implies
                && covers(&Transport::from(*form))
                && reference.record(&name).is_none()
                && !has(&name)
            {
                report.push(
                    &name,
                    Verdict::Fail(format!(
                        "the corpus has no {} record of what {} implies",
                        form.name(),
                        want.name
                    )),
                );
            }
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
