//! `limen-conformance replay`: the project's corpus and the reference
//! records through limen's machines, byte for byte the same output every
//! run and in every split of the input; and the runner failing what it
//! should.

mod common;

use common::*;
use limen_conformance::record::Corpus;
use limen_conformance::scenario::Step;
use limen_conformance::steps;
use limen_core::hale::serving::exposure_spec;

fn pass_lines(out: &str) -> usize {
    out.lines().filter(|l| l.starts_with("pass  ")).count()
}

#[test]
fn the_project_corpus_replays_whole() {
    let (code, out, err) = run(&["replay"]);
    assert_eq!(code, 0, "{out}{err}");
    let corpus = Corpus::open(&project()).unwrap();
    let n = corpus.records.len();
    assert!(corpus.unreadable.is_empty(), "{:?}", corpus.unreadable);
    assert!(
        n >= 20,
        "the corpus holds every reference outcome per transport"
    );
    assert_eq!(pass_lines(&out), n, "{out}");
    assert!(out.ends_with(&format!("{n} passed, 0 failed\n")), "{out}");
}

#[test]
fn the_reference_records_replay_whole() {
    let Some(reference) = reference() else { return };
    let (code, out, err) = run(&["replay", "--corpus", s(&reference)]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(pass_lines(&out), 20, "{out}");
    assert!(out.ends_with("20 passed, 0 failed\n"), "{out}");
}

#[test]
fn replay_is_deterministic_and_split_invariant() {
    let mut corpora = vec![project()];
    corpora.extend(reference());
    for corpus in corpora {
        let whole = run(&["replay", "--corpus", s(&corpus)]);
        let again = run(&["replay", "--corpus", s(&corpus)]);
        let bytes = run(&["replay", "--corpus", s(&corpus), "--feed", "bytes"]);
        assert_eq!(whole, again, "two runs over {}", corpus.display());
        assert_eq!(
            whole,
            bytes,
            "whole and byte by byte over {}",
            corpus.display()
        );
    }
}

#[test]
fn without_its_state_the_recorded_result_is_not_the_reply() {
    // The reference result cancels order 41: only the project's scenario
    // (an order placed through public first) makes it so.
    let Some(reference) = reference() else { return };
    let (code, out, _) = run(&["replay", "--corpus", s(&reference), "--scenarios", "none"]);
    assert_eq!(code, 1, "{out}");
    let failed: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert_eq!(
        failed,
        ["FAIL  unix/result: reply $.ok: expected true, got false"],
        "{out}"
    );
    assert!(out.ends_with("19 passed, 1 failed\n"), "{out}");
}

#[test]
fn derived_scenarios_provoke_what_the_outcome_needs() {
    let Some(reference) = reference() else { return };
    let corpus = Corpus::open(&reference).unwrap();
    let program =
        limen_core::hale::model::parse_program("program.hl", &corpus.program_source().unwrap())
            .unwrap();
    let derived = |name: &str| {
        let r = corpus.record(name).unwrap();
        let e = program
            .exposure(limen_conformance::record::exposure_name(&r.exposure))
            .unwrap();
        let spec = exposure_spec(&program, e, r.transport.as_str()).unwrap();
        steps::derive(r, &spec)
    };
    let gate = |r: &str| Step::Gate(r.into());
    assert_eq!(
        derived("unix/refusal_full"),
        [gate("self.ledger"), Step::Copies(16), Step::Exchange]
    );
    assert_eq!(
        derived("http/refusal_full"),
        [gate("self.orders"), Step::Copies(64), Step::Exchange]
    );
    assert_eq!(
        derived("http/refusal_shutting_down"),
        [
            gate("self.orders"),
            Step::Copies(1),
            Step::Exchange,
            Step::Stop
        ]
    );
    assert_eq!(
        derived("unix/refusal_unavailable"),
        [Step::Drain("self.ledger".into()), Step::Exchange]
    );
    assert_eq!(derived("unix/refusal_unauthenticated"), [Step::Exchange]);
    // Over MCP the member is the tool's, found through the rows.
    let mcp = corpus
        .record("http/refusal_unavailable")
        .unwrap()
        .implied(
            &limen_conformance::transport::mcp::Mcp,
            "Public@fnv1a64:a8930d6e7998e986/public",
        )
        .unwrap();
    assert_eq!(mcp.name, "mcp/refusal_unavailable");
    let e = program.exposure("public").unwrap();
    let spec = exposure_spec(&program, e, "mcp").unwrap();
    assert_eq!(
        steps::derive(&mcp, &spec),
        [Step::Drain("self.orders".into()), Step::Exchange]
    );
    assert_eq!(derived("http/result"), [Step::Exchange]);
}

/// The project's corpus copied into `dir` with its program beside it.
fn copy_project(dir: &std::path::Path) {
    let names: Vec<String> = Corpus::open(&project())
        .unwrap()
        .records
        .iter()
        .map(|r| r.name.clone())
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    select(&project(), &names, &desk(), dir);
}

#[test]
fn a_record_the_machines_do_not_answer_fails_with_its_path() {
    let tmp = Temp::new("replay-tampered");
    copy_project(&tmp.0);
    edit(&tmp.0, "http/refusal_full", |v| {
        v["reply"]["body"]["refusal"]["reason"] = "the queue is long".into();
    });
    edit(&tmp.0, "unix/handler_error", |v| {
        v["reply"]["error"]["code"] = "no_such_order".into();
    });
    edit(&tmp.0, "http/result", |v| {
        v["reply"]["headers"]["Content-Type"] = "text/plain".into();
    });
    // Without its gate, the bound is never full: the scenario matters.
    edit(&tmp.0, "unix/refusal_full", |v| {
        v["scenario"] = serde_json::json!({"steps": [{"exchange": true}]});
    });
    // A record that contradicts itself is refused before it replays.
    edit(&tmp.0, "unix/server_error", |v| {
        v["outcome"] = "result".into();
    });
    // Over MCP: the handler's error is the data, and the bound needs its gate.
    edit(&tmp.0, "mcp/handler_error", |v| {
        v["reply"]["body"]["error"]["data"]["code"] = "no_such_order".into();
    });
    edit(&tmp.0, "mcp/refusal_full", |v| {
        v["scenario"] = serde_json::json!({"steps": [{"exchange": true}]});
    });
    // Over gRPC: the details' bytes are held exactly, and a protobuf
    // message is its bytes.
    edit(&tmp.0, "grpc/refusal_unauthorized", |v| {
        let bin = v["reply"]["headers"]["grpc-status-details-bin"]
            .as_str()
            .unwrap()
            .replacen("CAcS", "CAgS", 1);
        v["reply"]["headers"]["grpc-status-details-bin"] = bin.into();
    });
    edit(&tmp.0, "grpc/result.proto", |v| {
        v["reply"]["message_base64"] = "CCoQyNAH".into();
    });
    std::fs::write(tmp.0.join("wire/unix/broken.json"), "{\"wire\": 1,").unwrap();
    let (code, out, _) = run(&["replay", "--corpus", s(&tmp.0)]);
    assert_eq!(code, 1, "{out}");
    let failed: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert_eq!(
        failed,
        [
            "FAIL  grpc/refusal_unauthorized: reply $.headers.grpc-status-details-bin: expected \"CAgSHk9yZGVyczo6Y2FuY2VsIHJlcXVpcmVzIHRyYWRlchp5Ch50eXBlLmhhbGUuZGV2L2hhbGUuYXBpLlJlZnVzYWwS..., got \"CAcSHk9yZGVyczo6Y2FuY2VsIHJlcXVpcmVzIHRyYWRlchp5Ch50eXBlLmhhbGUuZGV2L2hhbGUuYXBpLlJlZnVzYWwS...",
            "FAIL  grpc/result.proto: reply $.message_base64: expected \"CCoQyNAH\", got \"CCkQyNAH\"",
            "FAIL  http/refusal_full: reply $.body.refusal.reason: expected \"the queue is long\", got \"the exposure holds its bound of requests accepted and not yet answered\"",
            "FAIL  http/result: reply $.headers.content-type: expected \"text/plain\", got \"application/json\"",
            "FAIL  mcp/handler_error: reply $.body.error.data.code: expected \"no_such_order\", got \"unknown_order\"",
            "FAIL  mcp/refusal_full: reply $.body.error: expected {\"code\":-32006,\"message\":\"full\",\"data\":{\"kind\":\"full\",\"reason\":\"the exposure holds its bound ..., got nothing",
            "FAIL  unix/broken: $: not JSON: EOF while parsing a value at line 1 column 11",
            "FAIL  unix/handler_error: reply $.error.code: expected \"no_such_order\", got \"unknown_order\"",
            "FAIL  unix/refusal_full: reply $.ok: expected false, got true",
            "FAIL  unix/server_error: $.reply: the reply encodes server_error, the record says result",
        ],
        "{out}"
    );
    assert!(out.ends_with("91 passed, 10 failed\n"), "{out}");
}

#[test]
fn a_timer_fires_at_its_instant_and_not_before() {
    // The transport failures: each passes as recorded, and fails when its
    // silence stops short of the spec's deadline or its request is whole in
    // time, so the records hold the timers to their instants.
    let names = [
        "http/transport_failure.silence",
        "http/transport_failure.trickle",
        "mcp/transport_failure.silence",
        "unix/transport_failure.stop_wait",
    ];
    let tmp = Temp::new("replay-timers");
    select(&project(), &names, &desk(), &tmp.0);
    for feed in ["whole", "bytes"] {
        let (code, out, _) = run(&["replay", "--corpus", s(&tmp.0), "--feed", feed]);
        assert_eq!(code, 0, "{out}");
        assert!(out.ends_with("4 passed, 0 failed\n"), "{out}");
    }
    // A millisecond short of 5 s of silence, the request is still read.
    edit(&tmp.0, "http/transport_failure.silence", |v| {
        v["scenario"]["steps"][1]["wait_ms"] = 4999.into();
    });
    // The whole request in 9 s: answered, not cut off.
    edit(&tmp.0, "http/transport_failure.trickle", |v| {
        v["scenario"]["steps"][6]["send"] = 10.into();
    });
    // Stop's wait is 10 s: at 9.999 s the call is still the handler's.
    edit(&tmp.0, "unix/transport_failure.stop_wait", |v| {
        v["scenario"]["steps"][3]["wait_ms"] = 9999.into();
    });
    // A send after the connection ended fails the record.
    edit(&tmp.0, "mcp/transport_failure.silence", |v| {
        v["scenario"]["steps"] =
            serde_json::json!([{"exchange": {"withhold": 1}}, {"wait_ms": 5000}, {"send": 1}]);
    });
    let (code, out, _) = run(&["replay", "--corpus", s(&tmp.0)]);
    assert_eq!(code, 1, "{out}");
    let failed: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert_eq!(
        failed,
        [
            "FAIL  http/transport_failure.silence: no reply, and the connection is still open: a transport failure ends it",
            "FAIL  http/transport_failure.trickle: a reply, where the connection was to end with none (a transport failure): {\"status\":200,\"headers\":{\"Content-Type\":\"application/json\",\"Cache-Control\":\"no-store\"},\"body\"...",
            "FAIL  mcp/transport_failure.silence: step 3 ({\"send\":1}): the connection ended before this step",
            "FAIL  unix/transport_failure.stop_wait: no reply, and the connection is still open: a transport failure ends it",
        ],
        "{out}"
    );
}

#[test]
fn a_transport_without_a_machine_is_not_passed() {
    // quic::Rpc is a transport the spec names and limen has no machine for.
    let tmp = Temp::new("replay-quic");
    select(&project(), &["http/result"], &desk(), &tmp.0);
    let record = std::fs::read_to_string(tmp.0.join("wire/http/result.json"))
        .unwrap()
        .replace("\"transport\": \"http\"", "\"transport\": \"quic\"");
    std::fs::create_dir_all(tmp.0.join("wire/quic")).unwrap();
    std::fs::write(tmp.0.join("wire/quic/result.json"), record).unwrap();
    let (code, out, _) = run(&["replay", "--corpus", s(&tmp.0)]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FAIL  quic/result: limen has no `quic` machine to replay through yet"),
        "{out}"
    );
    assert!(out.ends_with("1 passed, 1 failed\n"), "{out}");
}

#[test]
fn the_mcp_records_replay_through_the_mcp_framing() {
    // Every MCP record of the project's corpus, alone: the exposure `mcp`
    // the demo adds is served from the program by the world as well.
    let tmp = Temp::new("replay-mcp");
    let names: Vec<String> = Corpus::open(&project())
        .unwrap()
        .records
        .iter()
        .filter(|r| r.transport.as_str() == "mcp")
        .map(|r| r.name.clone())
        .collect();
    assert!(names.len() >= 20, "{names:?}");
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    select(&project(), &names, &desk(), &tmp.0);
    for feed in ["whole", "bytes"] {
        let (code, out, _) = run(&["replay", "--corpus", s(&tmp.0), "--feed", feed]);
        assert_eq!(code, 0, "{out}");
        assert!(
            out.ends_with(&format!("{} passed, 0 failed\n", names.len())),
            "{out}"
        );
    }
    // A tool call whose id is 0 or a string is answered with that id.
    edit(&tmp.0, "mcp/result", |v| {
        v["request"]["body"]["id"] = 0.into();
    });
    let (code, out, _) = run(&["replay", "--corpus", s(&tmp.0)]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FAIL  mcp/result: reply $.body.id: expected 1, got 0"),
        "{out}"
    );
}

#[test]
fn usage_and_corpus_errors_exit_2() {
    assert_eq!(run(&[]).0, 2);
    assert_eq!(run(&["replay", "--feed", "halves"]).0, 2);
    let (code, _, err) = run(&["replay", "--corpus", "/nonexistent/corpus"]);
    assert_eq!(code, 2);
    assert!(err.contains("is not a corpus folder"), "{err}");
    let (code, out, _) = run(&["--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("replay") && out.contains("check") && out.contains("compare"));
}

#[test]
fn the_hub_records_replay_through_the_hub_machines_and_fail_when_tampered() {
    let names = [
        "ws/events.gap_after_shedding",
        "ws/unauthorized.revoked",
        "ws/unauthorized.expired",
        "ws/call.result",
        "ws/refusal_shutting_down",
        "udp/subscribe",
        "udp/closed.stop",
    ];
    let tmp = Temp::new("replay-hub");
    select(&project(), &names, &desk(), &tmp.0);
    let (code, out, _) = run(&["replay", "--corpus", s(&tmp.0)]);
    assert_eq!(code, 0, "{out}");
    assert!(out.ends_with("7 passed, 0 failed\n"), "{out}");
    // A reader that sees no gap where drop_old shed seq 2.
    edit(&tmp.0, "ws/events.gap_after_shedding", |v| {
        let n = v["frames"].as_array().unwrap().len();
        v["frames"][n - 64]["frame"]["seq"] = 2.into();
    });
    // Without the revision, no unauthorized frame.
    edit(&tmp.0, "ws/unauthorized.revoked", |v| {
        v["frames"].as_array_mut().unwrap().remove(4);
    });
    // Expiry is a timer at the credential's instant: 900 ms of 1000 see
    // nothing.
    edit(&tmp.0, "ws/unauthorized.expired", |v| {
        v["frames"][3]["wait_ms"] = 900.into();
    });
    // The reply before the fill its call published.
    edit(&tmp.0, "ws/call.result", |v| {
        v["frames"].as_array_mut().unwrap().swap(3, 4);
    });
    // stop()'s closed before what was queued.
    edit(&tmp.0, "ws/refusal_shutting_down", |v| {
        v["frames"].as_array_mut().unwrap().swap(8, 9);
    });
    // A freed id whose seq goes on.
    edit(&tmp.0, "udp/subscribe", |v| {
        v["datagrams"][11]["datagram"]["seq"] = 2.into();
    });
    let (code, out, _) = run(&["replay", "--corpus", s(&tmp.0)]);
    assert_eq!(code, 1, "{out}");
    let failed: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert_eq!(
        failed,
        [
            "FAIL  udp/subscribe: datagrams[11]: datagram $.seq: expected 2, got 1",
            "FAIL  ws/call.result: frames[3]: frame $.type: expected \"reply\", got \"event\"",
            "FAIL  ws/events.gap_after_shedding: frames[71]: frame $.seq: expected 2, got 3",
            "FAIL  ws/refusal_shutting_down: frames[8]: frame $.type: expected \"closed\", got \"refusal\"",
            "FAIL  ws/unauthorized.expired: frames[4]: the hub wrote nothing more",
            "FAIL  ws/unauthorized.revoked: frames[4]: the hub wrote nothing more",
        ],
        "{out}"
    );
    assert!(out.ends_with("1 passed, 6 failed\n"), "{out}");
}
