//! The project's corpus held to the reference records of the same name as
//! values, masked: every record the project writes says what the reference
//! says.

mod common;

use common::*;
use limen_conformance::compare;
use limen_conformance::record::Corpus;
use limen_conformance::report::Verdict;

/// `compare --corpus CORPUS --reference REFERENCE`: its status and output.
fn compare_with(corpus: &std::path::Path, reference: &std::path::Path) -> (i32, String) {
    let (code, out, _) = run(&[
        "compare",
        "--corpus",
        s(corpus),
        "--reference",
        s(reference),
    ]);
    (code, out)
}

#[test]
fn every_record_equals_the_reference_record_of_its_name() {
    let Some(reference) = reference() else { return };
    let ours = Corpus::open(&project()).unwrap();
    let theirs = Corpus::open(&reference).unwrap();
    let report = compare::run(&ours, &theirs);
    let failed: Vec<_> = report
        .lines
        .iter()
        .filter(|l| l.verdict != Verdict::Pass)
        .collect();
    assert!(failed.is_empty(), "{}", report.render());
    // Every reference record has a project record of its name.
    for t in ["unix", "http"] {
        for name in reference_names(&reference, t) {
            assert!(ours.record(&name).is_some(), "{name}");
        }
    }
    // Every description document has its describe record, held to it:
    // the hub's (ws) too, answered at its listener's GET /.description.
    for (doc, value) in &theirs.documents {
        let transport = value["listener"]["transport"].as_str().unwrap();
        let name = format!("{transport}/describe.{doc}");
        assert!(ours.record(&name).is_some(), "{name}");
    }
    // Every reference HTTP call has its MCP record, held to what it
    // implies (§ Outcomes), and the caller's tools/list is listed.
    for name in reference_names(&reference, "http") {
        let stem = name.strip_prefix("http/").unwrap();
        assert!(ours.record(&format!("mcp/{stem}")).is_some(), "mcp/{stem}");
    }
    // And its gRPC record (§ Outcomes: the recorded HTTP calls as unary
    // calls, the bodies in messages and details), held to it the same way.
    for name in reference_names(&reference, "http") {
        let stem = name.strip_prefix("http/").unwrap();
        if stem.starts_with("describe.") {
            continue;
        }
        let grpc = format!("grpc/{stem}");
        assert!(
            report
                .lines
                .iter()
                .any(|l| l.name == grpc && l.verdict == Verdict::Pass),
            "{grpc}: {}",
            report.render()
        );
    }
    for caller in ["alice", "bob"] {
        let name = format!("mcp/tools_list.{caller}");
        assert!(
            report
                .lines
                .iter()
                .any(|l| l.name == name && l.verdict == Verdict::Pass),
            "{name}: {}",
            report.render()
        );
    }
    let n = ours.records.len();
    assert_eq!(
        n, 100,
        "ten outcomes and the describes per transport, what only MCP has, and the transport failures; over gRPC the ten outcomes, Public's two describes and three calls under +proto and the stop's transport failure; the hubs' (over ws 21 sequences, desk's calls among them, and three describes; over udp 7 sequences)"
    );
    let (code, out, _) = run(&["compare", "--reference", s(&reference)]);
    assert_eq!(code, 0, "{out}");
    // The MCP records the reference implies nothing of are new, not passed.
    let new = out.lines().filter(|l| l.starts_with("new ")).count();
    assert!(
        out.ends_with(&format!("{} passed, 0 failed\n", n - new)),
        "{out}"
    );
}

#[test]
fn an_mcp_record_is_held_to_what_the_http_record_implies() {
    let Some(reference) = reference() else { return };
    let tmp = Temp::new("compare-mcp");
    select(
        &project(),
        &[
            "mcp/refusal_unauthorized",
            "mcp/tools_list.bob",
            "mcp/result",
        ],
        &desk(),
        &tmp.0,
    );
    edit(&tmp.0, "mcp/refusal_unauthorized", |v| {
        v["reply"]["body"]["error"]["code"] = (-32602).into();
    });
    edit(&tmp.0, "mcp/tools_list.bob", |v| {
        v["reply"]["body"]["result"]["tools"][0]["description"] = "places an order".into();
    });
    // The text of a result is compared as the JSON it holds.
    edit(&tmp.0, "mcp/result", |v| {
        let p = "/reply/body/result/content/0/text";
        let text = v.pointer(p).unwrap().as_str().unwrap().to_owned();
        let reread: serde_json::Value = serde_json::from_str(&text).unwrap();
        *v.pointer_mut(p).unwrap() = serde_json::to_string_pretty(&reread).unwrap().into();
    });
    let (code, out) = compare_with(&tmp.0, &reference);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("pass  mcp/result\n"), "{out}");
    assert!(
        out.contains("FAIL  mcp/refusal_unauthorized: $.reply.body.error.code: expected -32005, got -32602 (as http/refusal_unauthorized implies)"),
        "{out}"
    );
    assert!(
        out.contains("FAIL  mcp/tools_list.bob: tool `Orders__place` $.description: expected"),
        "{out}"
    );
    // The corpus covers mcp, so the reference calls it has no record of fail.
    assert!(
        out.contains("FAIL  mcp/handler_error: the corpus has no mcp record of what http/handler_error implies"),
        "{out}"
    );
}

#[test]
fn a_description_that_says_otherwise_fails_the_comparison() {
    let Some(reference) = reference() else { return };
    let tmp = Temp::new("compare-describe");
    select(&project(), &["http/describe.public.bob"], &desk(), &tmp.0);
    edit(&tmp.0, "http/describe.public.bob", |v| {
        v["reply"]["body"]["caller"]["roles"] = serde_json::json!(["trader"]);
    });
    let (code, out) = compare_with(&tmp.0, &reference);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(
            "FAIL  http/describe.public.bob: the document $.caller.roles: expected 0 items, got 1"
        ),
        "{out}"
    );
}

#[test]
fn the_project_records_state_their_review() {
    // Each record says where it came from: recorded and reviewed, or
    // written by hand and why.
    let ours = Corpus::open(&project()).unwrap();
    for r in &ours.records {
        let note = r.scenario.as_ref().and_then(|s| s.note.as_deref());
        assert!(
            note.is_some_and(|n| !n.is_empty()),
            "{} has no note",
            r.name
        );
    }
}

#[test]
fn a_record_that_says_otherwise_fails_the_comparison() {
    let Some(reference) = reference() else { return };
    let tmp = Temp::new("compare");
    select(
        &project(),
        &["unix/refusal_unauthorized", "unix/result"],
        &desk(),
        &tmp.0,
    );
    let path = tmp.0.join("wire/unix/refusal_unauthorized.json");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("\"operator\"\n", "\"trader\"\n");
    std::fs::write(&path, text).unwrap();
    let (code, out) = compare_with(&tmp.0, &reference);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FAIL  unix/refusal_unauthorized: $.reply.refusal.requires[0]: expected \"operator\", got \"trader\""),
        "{out}"
    );
    // The corpus covers unix, so the unix records it lacks fail; it has no
    // http record, so the http ones are not asked of it.
    assert!(out.contains("FAIL  unix/handler_error: the corpus has no record of this name"));
    assert!(out.contains(
        "FAIL  unix/describe.admin.uid-1000: the corpus has no describe record of admin.uid-1000.description.json"
    ));
    assert!(!out.contains("http/"), "{out}");
    assert!(out.ends_with("1 passed, 11 failed\n"), "{out}");
}

/// A corpus whose program imports another file reads as `hale check` reads
/// it: the imported file resolved against the program's folder, its types
/// under their alias; an import that is not there names itself.
#[test]
fn a_corpus_program_of_several_files_is_read_with_its_imports() {
    let dir = std::env::temp_dir().join(format!("limen-corpus-imports-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("wire")).unwrap();
    let shop = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/shop");
    for f in ["shop.hl", "catalog.hl"] {
        std::fs::copy(shop.join(f), dir.join(f)).unwrap();
    }
    std::fs::write(
        dir.join("corpus.json"),
        r#"{"corpus": 1, "program": "shop.hl"}"#,
    )
    .unwrap();
    let corpus = Corpus::open(&dir).unwrap();
    let program = corpus.program_model().unwrap();
    assert!(program.surface("Storefront").is_some());
    assert!(
        program.types.get("catalog::Item").is_some(),
        "the imported types are named under their alias"
    );
    // Without the imported file, the import names what is missing.
    std::fs::remove_file(dir.join("catalog.hl")).unwrap();
    let err = corpus.program_model().unwrap_err().to_string();
    assert!(err.contains("catalog.hl"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
