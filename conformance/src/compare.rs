//! `limen-conformance compare`: each record of a corpus against the
//! reference record of the same name, as values, masked
//! ([`mask::compare_record`]); a describe record
//! (`describe.<exposure>.<caller>`) against the reference's description
//! document of that exposure and caller
//! (`<exposure>.<caller>.description.json`, [`mask::compare_document`]).
//!
//! The reference has no MCP records: an MCP record is held to what the
//! reference's HTTP record of its name implies ([`crate::mcp::from_http`],
//! § Outcomes), and a `tools_list.<caller>` record to the reference's MCP
//! projection of the surface (`<Surface>.mcp.json`) and the caller's
//! description, whose members are exactly the tools listed.

use limen_core::hale::model::Program;
use serde_json::Value;

use crate::mask;
use crate::record::{Corpus, Record, Transport};
use crate::report::{Report, Verdict};

/// The `<Surface>@<digest>` of an exposure identity.
fn surface_of(identity: &str) -> &str {
    identity.split_once('/').map_or(identity, |(s, _)| s)
}

/// The exposures of the corpus's program that a caller's description of the
/// exposure `name` stands for: itself, and those serving the same surface
/// under the same sources (the demo's `mcp` serves Public under public's).
fn same_sources(program: Option<&Program>, name: &str) -> Vec<String> {
    let Some(program) = program else {
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

/// Holds a `tools_list.<caller>` record's tools to the reference: the
/// names are the members of the caller's description of the exposure (or
/// of one serving the surface under the same sources), as tools, and each
/// tool is the projection's tool of its name.
fn compare_tools(
    r: &Record,
    caller: &str,
    program: Option<&Program>,
    reference: &Corpus,
) -> Option<String> {
    let surface_digest = surface_of(&r.exposure);
    let Some((surface, _)) = surface_digest.split_once('@') else {
        return Some("the record's exposure names no surface".into());
    };
    let projection_file = reference.dir.join(format!("{surface}.mcp.json"));
    let projection: Value = match std::fs::read_to_string(&projection_file)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
    {
        Ok(v) => v,
        Err(e) => return Some(format!("{}: {e}", projection_file.display())),
    };
    let description = same_sources(program, crate::record::exposure_name(&r.exposure))
        .into_iter()
        .find_map(|n| {
            let doc = format!("{n}.{caller}");
            let d = reference.document(&doc)?;
            let of = d.get("exposure").and_then(Value::as_str)?;
            (surface_of(of) == surface_digest).then_some((doc, d))
        });
    let Some((doc_name, description)) = description else {
        return Some(format!(
            "the reference describes {} under its sources to no caller `{caller}`",
            r.exposure
        ));
    };
    let Some(listed) = r
        .reply
        .pointer("/body/result/tools")
        .and_then(Value::as_array)
    else {
        return Some("reply $.body.result.tools: expected the tools listed".into());
    };
    let names: Vec<&str> = listed
        .iter()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
        .collect();
    let mut members: Vec<String> = description
        .get("members")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| m.get("name").and_then(Value::as_str))
        .map(limen_core::hale::docs::rows::tool_name)
        .collect();
    members.sort();
    let mut sorted = names.clone();
    sorted.sort();
    if sorted != members {
        return Some(format!(
            "the tools listed are {sorted:?}, and {doc_name}.description.json's members are {members:?}"
        ));
    }
    for tool in listed {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
        let want = projection
            .get("tools")
            .and_then(Value::as_array)
            .and_then(|ts| ts.iter().find(|t| t.get("name") == tool.get("name")));
        let Some(want) = want else {
            return Some(format!("{surface}.mcp.json has no tool `{name}`"));
        };
        if let Some(d) = mask::first_difference(want, tool) {
            return Some(format!("tool `{name}` {d} ({surface}.mcp.json)"));
        }
    }
    None
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
    let program = ours.program_source().ok().and_then(|src| {
        limen_core::hale::model::parse_program(&ours.program.to_string_lossy(), &src).ok()
    });
    for u in &ours.unreadable {
        report.push(&u.name, Verdict::Fail(u.error.clone()));
    }
    for r in &ours.records {
        let implied = (r.transport == Transport::Mcp)
            .then(|| reference.record(&format!("http/{}", r.stem())))
            .flatten()
            .and_then(|h| crate::mcp::from_http(h, &r.exposure));
        let caller = (r.transport == Transport::Mcp && r.outcome == "result")
            .then(|| r.stem().strip_prefix("tools_list."))
            .flatten();
        let verdict = if let Some(want) = reference.record(&r.name) {
            mask::compare_record(want, r)
        } else if let Some(want) = &implied {
            mask::compare_record(want, r).map(|d| format!("{d} (as http/{} implies)", r.stem()))
        } else if let Some(caller) = caller {
            compare_tools(r, caller, program.as_ref(), reference)
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
        // A corpus of MCP records covers the reference's HTTP calls too.
        let name = format!("mcp/{}", want.stem());
        let implies = crate::mcp::from_http(want, &want.exposure).is_some();
        if implies && covers(&Transport::Mcp) && reference.record(&name).is_none() && !has(&name) {
            report.push(
                &name,
                Verdict::Fail(format!(
                    "the corpus has no mcp record of what {} implies",
                    want.name
                )),
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
