//! Unit tests of the documents over small programs: the rules neither the
//! witness nor `second.hl` reaches.

use serde_json::json;

use super::*;
use crate::hale::model::{parse_program, Program, TransportKind};
use crate::hale::runtime::{Describer, Principal};

fn program(src: &str) -> Program {
    parse_program("t.hl", src).unwrap_or_else(|d| panic!("{d}"))
}

/// A surface `S` of one row `B::f`, the handler's signature `sig`, over the
/// types `types`.
fn one_row(types: &str, sig: &str) -> Program {
    program(&format!(
        "role r;\n{types}\napi S {{ rpc B::f requires: [r]; }}\nlocus B {{ fn f{sig} {{ }} }}\n"
    ))
}

#[test]
fn a_request_that_is_no_object_is_wrapped_under_the_parameter_s_name() {
    let p = one_row("type Ack { ok: Bool; }", "(count: Int) -> Ack");
    let tool = &mcp(&p, "S").unwrap()["tools"][0];
    assert_eq!(
        tool["inputSchema"],
        json!({"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]})
    );
    // The other forms carry the scalar inline, and the .proto in a wrapper.
    let o = openapi(&p, "S").unwrap();
    assert_eq!(
        o["paths"]["/call/B::f"]["post"]["requestBody"]["content"]["application/json"]["schema"],
        json!({"type": "integer"})
    );
    let text = proto(&p, "S").unwrap();
    assert!(
        text.contains("rpc B__f(B__fRequest) returns (Ack);"),
        "{text}"
    );
    assert!(
        text.contains("message B__fRequest {\n  optional int64 value = 1;\n}"),
        "{text}"
    );
}

#[test]
fn a_scalar_error_is_carried_in_its_error_message() {
    let p = one_row(
        "unit cent; type Money = quantity Int in cent;",
        "(m: Money) -> Money fallible(String)",
    );
    let text = proto(&p, "S").unwrap();
    assert!(
        text.contains("rpc B__f(B__fRequest) returns (B__fResponse);"),
        "{text}"
    );
    assert!(
        text.contains("// handler error: status 9, a detail of type type.hale.dev/B__fError"),
        "{text}"
    );
    assert!(
        text.contains("message B__fError {\n  optional string value = 1;\n}"),
        "{text}"
    );
    assert!(
        text.contains("optional int64 value = 1; // Hale: Money, q(cent)"),
        "{text}"
    );
    assert!(
        !text.contains("HaleEmpty"),
        "no row lacks a request or a response"
    );
    let o = openapi(&p, "S").unwrap();
    assert_eq!(
        o["paths"]["/call/B::f"]["post"]["responses"]["422"]["description"],
        "handler error: String"
    );
}

#[test]
fn two_fields_of_one_proto3_json_name_are_refused_naming_both() {
    for (fields, a, b, jn) in [
        ("a_b: Int; aB: Int;", "a_b", "aB", "aB"),
        ("a: Int; _a: Int;", "a", "_a", "a"),
        ("x_y: Int; xY: Int json:\"other\";", "", "", ""),
    ] {
        let p = one_row(&format!("type T {{ {fields} }}"), "(t: T)");
        let err = proto(&p, "S");
        if a.is_empty() {
            assert!(err.is_ok(), "a json tag renames the field: {err:?}");
            continue;
        }
        let msg = err.unwrap_err().to_string();
        assert!(
            msg.contains(&format!("`{a}` and `{b}`")) && msg.contains(&format!("`{jn}`")),
            "{msg}"
        );
        // A rule of the protobuf form only: the JSON forms are still made.
        assert!(openapi(&p, "S").is_ok() && json_schema(&p, "S").is_ok() && mcp(&p, "S").is_ok());
    }
}

#[test]
fn a_name_two_messages_would_share_is_refused() {
    let p = one_row("type HaleRefusal { x: Int; }", "(t: HaleRefusal)");
    let msg = proto(&p, "S").unwrap_err().to_string();
    assert!(msg.contains("`HaleRefusal` is named twice"), "{msg}");
    let p = one_row("type S { x: Int; }", "(t: S)");
    assert!(proto(&p, "S")
        .unwrap_err()
        .to_string()
        .contains("`S` is named twice"));
}

#[test]
fn a_shape_the_codec_does_not_carry_is_refused_by_slot_and_path() {
    let p = one_row(
        "type Raw { data: Bytes; } type Inner { raw: Raw; } type Export { n: Int; inner: Inner; }",
        "() -> Export",
    );
    let msg = json_schema(&p, "S").unwrap_err().to_string();
    assert_eq!(
        msg,
        "rpc `B::f`: its response `Export` has a field `inner.raw.data: Bytes`, which the JSON codec does not carry"
    );
    let p = one_row("", "(b: Bytes)");
    assert_eq!(
        proto(&p, "S").unwrap_err().to_string(),
        "rpc `B::f`: its request is `Bytes`, which the JSON codec does not carry"
    );
    for ty in ["[Int]", "Uint", "Decimal", "Time", "std::api::Principal"] {
        let p = one_row(&format!("type T {{ x: {ty}; }}"), "(t: T)");
        assert!(openapi(&p, "S").is_err(), "{ty} is not carried");
    }
}

#[test]
fn a_default_makes_a_field_optional_and_builtins_are_their_records() {
    let p = one_row("type T { a: Int = 3; b: String; }", "(t: T) -> RangeError");
    let s = json_schema(&p, "S").unwrap();
    assert_eq!(s["$defs"]["T"]["required"], json!(["b"]));
    assert_eq!(
        s["$defs"]["RangeError"]["required"],
        json!(["kind", "value", "low", "high"])
    );
}

#[test]
fn mutually_recursive_records_are_referenced_and_self_contained() {
    let p = one_row("type A { b: B; n: Int; } type B { a: A; }", "(a: A)");
    let tool = &mcp(&p, "S").unwrap()["tools"][0];
    let input = &tool["inputSchema"];
    assert_eq!(input["properties"]["b"], json!({"$ref": "#/$defs/B"}));
    assert_eq!(
        input["$defs"]["B"]["properties"]["a"],
        json!({"$ref": "#/$defs/A"})
    );
    assert!(
        input["$defs"].get("A").is_some(),
        "the root is in $defs when B refers back to it"
    );
    assert!(proto(&p, "S")
        .unwrap()
        .contains("message A {\n  B b = 1;\n  optional int64 n = 2;\n}"));
    let p = one_row("type N { next: N; }", "(n: N)");
    let input = &mcp(&p, "S").unwrap()["tools"][0]["inputSchema"];
    assert_eq!(input["properties"]["next"], json!({"$ref": "#/$defs/N"}));
    assert!(
        input["$defs"].get("N").is_some(),
        "a root that names itself"
    );
}

#[test]
fn a_long_chain_of_nested_records_costs_no_stack() {
    let mut types = String::new();
    for i in 0..5000 {
        types.push_str(&format!("type T{i} {{ next: T{}; }}\n", i + 1));
    }
    types.push_str("type T5000 { x: Int; }\n");
    let p = one_row(&types, "(t: T0)");
    // The digest bounds a shape's depth; the documents walk without recursion.
    let mut book = book::TypeBook::new();
    let row = &p.surface("S").unwrap().rows[0];
    book.slot(&p.types, row.request.as_ref().unwrap(), "rpc", "request")
        .unwrap();
    assert_eq!(book.records().len(), 5001);
}

#[test]
fn tool_names_never_collide() {
    use super::rows::tool_name;
    assert_eq!(tool_name("Orders::place"), "Orders__place");
    assert_eq!(tool_name("lib::Orders::place"), "lib__Orders__place");
    assert_eq!(tool_name("a_b::c"), "a_b__c");
    assert_eq!(tool_name("a__b::c"), "a_-_-b__c");
    assert_eq!(tool_name("a::_b"), "a___-b");
    assert_ne!(tool_name("a::b__c"), tool_name("a__b::c"));
}

#[test]
fn a_caller_is_a_name_or_a_principal_object() {
    let p = caller_principal("alice", &TransportKind::Http).unwrap();
    assert_eq!(p.to_json(), json!({"mode": "bearer", "name": "alice"}));
    let p = caller_principal("uid:7", &TransportKind::Unix).unwrap();
    assert_eq!(p.to_json(), json!({"mode": "unix", "name": "uid:7"}));
    let p = caller_principal(
        r#"{"pid": 3, "uid": 1, "mode": "unix", "name": "uid:1", "gid": 2}"#,
        &TransportKind::Http,
    )
    .unwrap();
    assert_eq!(
        serde_json::to_string(&p.to_json()).unwrap(),
        r#"{"mode":"unix","name":"uid:1","uid":1,"gid":2,"pid":3}"#,
        "the schema's field order"
    );
    for bad in [
        r#"{"mode": "bearer"}"#,
        r#"{"mode": "x", "name": "a"}"#,
        r#"{"mode": "bearer", "name": "a", "team": 1}"#,
        "{nope",
    ] {
        assert!(
            caller_principal(bad, &TransportKind::Http).is_err(),
            "{bad}"
        );
    }
}

const SERVED: &str = "role a; role b;\n\
    type Q { n: Int; } type R { m: Int; } type E { why: String; } type P { t: Int; }\n\
    topic Ticks { payload: P; }\n\
    api S { rpc B::one requires: [a]; rpc B::two requires: [b, a]; rpc B::three; }\n\
    locus B { bus { publish Ticks; } fn one(q: Q) -> R fallible(E) { } fn two(q: Q) -> Q { } fn three() { } }\n\
    locus G { fn holds(p: std::api::Principal, r: String) -> Bool { return true; } }\n\
    main locus M {\n\
      params { b: B = B { }; g: G = G { }; h: udp::Hub = udp::Hub { bind: \"127.0.0.1:0\", roles: self.g, as: \"ticks\" }; }\n\
      bindings { Ticks: self.h requires: [b], bound: 4, on_full: drop_new; }\n\
      run() { let s = api::serve(S, mcp::Rpc { bind: \"127.0.0.1:0\", roles: self.g }, as: \"tools\", bound: 4, on_full: refuse); }\n\
    }\n";

#[test]
fn the_live_describer_lists_what_admission_decided() {
    let p = program(SERVED);
    let d = ExposureDescriber::new(&p, "tools", Some("127.0.0.1:39001")).unwrap();
    assert_eq!(d.plan().required_roles(), ["a", "b"]);
    // Members are indexed in the surface's row order: one, two, three.
    let doc: serde_json::Value =
        serde_json::from_slice(&d.describe(&Principal::bearer("x"), &["a".into()], &[0, 2]))
            .unwrap();
    let names: Vec<&str> = doc["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["B::one", "B::three"], "by name");
    assert_eq!(doc["caller"]["roles"], json!(["a"]));
    assert_eq!(
        doc["listener"],
        json!({"transport": "mcp", "address": "127.0.0.1:39001"})
    );
    assert_eq!(doc["outcomes"]["transport"], "mcp");
    assert_eq!(doc["outcomes"]["refusal"]["code"]["unavailable"], -32008);
    let mut names: Vec<&String> = doc["schemas"].as_object().unwrap().keys().collect();
    names.sort();
    assert_eq!(names, ["E", "Q", "R"], "what the listed members reach");
    // Offline, the same builder from --holds.
    let offline = describe_offline(&p, "tools", "x", &["a".into(), "zzz".into()]).unwrap();
    let mut live = doc.clone();
    live["listener"]["address"] = "127.0.0.1:0".into();
    assert_eq!(offline, live);
}

#[test]
fn a_datagram_hub_states_its_frames_and_its_losses() {
    let p = program(SERVED);
    let none = describe_offline(&p, "ticks", "x", &[]).unwrap();
    assert_eq!(none["streams"], json!([]));
    assert_eq!(
        none["schemas"],
        json!({}),
        "no payload schema for a caller who may subscribe to nothing"
    );
    let d = describe_offline(&p, "ticks", "x", &["b".into()]).unwrap();
    assert_eq!(d["outcomes"]["transport"], "udp");
    assert_eq!(
        d["outcomes"]["subscribe"]["fields"],
        json!(["topic", "id", "token"])
    );
    assert_eq!(d["members"], json!([]));
    let loss = d["streams"][0]["loss"].as_str().unwrap();
    assert!(
        loss.contains("drop_new sheds the frame being published") && loss.contains("shed or lost"),
        "{loss}"
    );
    assert!(d["exposure"].as_str().unwrap().starts_with("hub@fnv1a64:"));
}

#[test]
fn a_grpc_exposure_is_described_with_the_grpc_outcome_encoding() {
    let src = SERVED.replace("mcp::Rpc", "grpc::Rpc");
    let d = describe_offline(&program(&src), "tools", "x", &[]).unwrap();
    assert_eq!(d["listener"]["transport"], "grpc");
    let o = &d["outcomes"];
    assert_eq!(o["transport"], "grpc");
    // § Outcomes' gRPC column, kind by kind, in its own words, and where
    // each value travels: the response message, or the status's details.
    assert_eq!(o["result"], json!({"status": "OK", "message": "response"}));
    assert_eq!(
        o["handler_error"],
        json!({"status": "FAILED_PRECONDITION", "details": "error"})
    );
    assert_eq!(
        o["server_error"],
        json!({"status": "INTERNAL", "details": "refusal"})
    );
    assert_eq!(
        o["refusal"],
        json!({"details": "refusal", "status": {
            "malformed": "INVALID_ARGUMENT", "digest_mismatch": "FAILED_PRECONDITION",
            "unauthenticated": "UNAUTHENTICATED", "unauthorized": "PERMISSION_DENIED",
            "full": "RESOURCE_EXHAUSTED", "shutting_down": "UNAVAILABLE",
            "unavailable": "UNAVAILABLE"}})
    );
    // The HTTP form's shape: the same members, the same order.
    let http = super::outcomes::Encoding::Http.document();
    let keys = |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(o), keys(&http));
    assert_eq!(
        keys(&o["refusal"]["status"]),
        keys(&http["refusal"]["status"])
    );
    assert!(inventory(&program(&src)).is_ok());
}

#[test]
fn a_bundle_check_compares_the_digest_line_and_the_bytes() {
    let p = program(SERVED);
    let b = bundle(&p, "S", "1.0").unwrap();
    let names: Vec<&str> = b.files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "S.description.json",
            "S.openapi.json",
            "S.json-schema.json",
            "S.mcp.json",
            "S.proto",
            "DIGEST"
        ]
    );
    let files: std::collections::BTreeMap<String, Vec<u8>> = b.files.iter().cloned().collect();
    assert!(b.check(|n| files.get(n).cloned()).is_current());
    let other = bundle(&p, "S", "2.0").unwrap();
    assert!(
        other.check(|n| files.get(n).cloned()).is_current(),
        "the version is provenance"
    );
    let drift = b.check(|n| match n {
        "DIGEST" => Some(b"not a digest\n".to_vec()),
        "S.mcp.json" => None,
        _ => files.get(n).cloned(),
    });
    assert_eq!(drift.digest_moved, Some(None));
    assert_eq!(drift.missing, ["S.mcp.json"]);
    assert_eq!(drift.differs, ["DIGEST"]);
}

#[test]
fn law_6_notes_every_closure_violation_row_once() {
    let src = "api S { rpc B::f; rpc B::g; }\nlocus B { fn f() fallible(ClosureViolation) { } fn g() { } }\n";
    let checked = crate::hale::check_program("t.hl", src);
    assert!(checked.passed());
    assert_eq!(checked.notes.len(), 1);
    assert!(checked.notes[0]
        .message
        .starts_with("rpc `B::f`: its error type is `ClosureViolation`"));
    assert_eq!((checked.notes[0].line, checked.notes[0].col), (1, 13));
    let bad = crate::hale::check_program("t.hl", "role");
    assert!(!bad.passed() && bad.program.is_none() && bad.errors.len() == 1);
}

/// A surface of four rows: a record request reaching a nested record, a
/// scalar request, no request, and a record that refers back to itself;
/// served over MCP under a role source.
const TOOLS: &str = "role r;\n\
    type In { n: Int; inner: Deep; } type Deep { s: String; } type Out { ok: Bool; } type E { why: String; }\n\
    type Loop { next: Loop; }\n\
    api S { rpc B::rec requires: [r]; rpc B::scalar; rpc B::none; rpc B::_odd__name; rpc B::looped; }\n\
    locus B { fn rec(i: In) -> Out fallible(E) { } fn scalar(count: Int) -> Out { } fn none() { }\n\
              fn _odd__name(i: In) -> Int fallible(ClosureViolation) { } fn looped(l: Loop) -> Loop { } }\n\
    locus G { fn holds(p: std::api::Principal, r: String) -> Bool { return true; } }\n\
    main locus M {\n\
      params { b: B = B { }; g: G = G { }; }\n\
      run() { let s = api::serve(S, mcp::Rpc { bind: \"127.0.0.1:0\", roles: self.g }, as: \"tools\", bound: 4, on_full: refuse); }\n\
    }\n";

fn tool_names(tools: &[serde_json::Value]) -> Vec<&str> {
    tools.iter().map(|t| t["name"].as_str().unwrap()).collect()
}

#[test]
fn the_mcp_describer_lists_the_callers_object_tools_by_name() {
    let p = program(TOOLS);
    let e = p.exposure("tools").unwrap();
    let d = McpDescriber::new(&p, e).unwrap();
    let spec = crate::hale::serving::exposure_spec(&p, e, "mcp").unwrap();
    let all: Vec<usize> = (0..spec.members.len()).collect();
    let listed: serde_json::Value =
        serde_json::from_slice(&d.describe(&Principal::bearer("x"), &[], &all)).unwrap();
    let listed = listed["tools"].as_array().unwrap().clone();
    // Name order; the scalar request has no tool; `_odd__name` escapes.
    assert_eq!(
        tool_names(&listed),
        ["B___-odd_-_-name", "B__looped", "B__none", "B__rec"]
    );
    // Each is the --mcp form's tool, as a value.
    let projection = mcp(&p, "S").unwrap();
    for t in &listed {
        let same = projection["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == t["name"])
            .unwrap();
        assert_eq!(t, same);
    }
    // A caller who may call only `B::none` (spec index 2) sees only it.
    let rec = spec.member_index("B::rec").unwrap();
    let none = spec.member_index("B::none").unwrap();
    let only: serde_json::Value =
        serde_json::from_slice(&d.describe(&Principal::bearer("x"), &[], &[none])).unwrap();
    assert_eq!(tool_names(only["tools"].as_array().unwrap()), ["B__none"]);
    let nothing = d.describe(&Principal::bearer("x"), &[], &[]);
    assert_eq!(nothing, b"{\"tools\":[]}");
    assert_ne!(rec, none);
}

#[test]
fn tools_from_a_description_are_the_mcp_forms_tools() {
    let p = program(TOOLS);
    let doc = describe_offline(&p, "tools", "x", &["r".into()]).unwrap();
    let bridged = tools_from_description(&doc);
    let projection = mcp(&p, "S").unwrap();
    let expected: Vec<&serde_json::Value> = projection["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"] != "B__scalar")
        .collect();
    assert_eq!(bridged.iter().collect::<Vec<_>>(), expected);
    // Self-contained: the nested record under $defs, the self-referring
    // root too.
    let rec = bridged.iter().find(|t| t["name"] == "B__rec").unwrap();
    assert_eq!(
        rec["inputSchema"]["properties"]["inner"],
        json!({"$ref": "#/$defs/Deep"})
    );
    assert!(rec["inputSchema"]["$defs"].get("In").is_none());
    let looped = bridged.iter().find(|t| t["name"] == "B__looped").unwrap();
    assert!(looped["inputSchema"]["$defs"].get("Loop").is_some());
    // Without the role, the description lists less, and so do the tools.
    let doc = describe_offline(&p, "tools", "x", &[]).unwrap();
    assert!(!tool_names(&tools_from_description(&doc)).contains(&"B__rec"));
}
