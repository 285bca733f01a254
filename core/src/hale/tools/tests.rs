//! The rows of the witness program (conformance/programs/desk.hl, the
//! fixture's program) as Tools, held against declarations written by hand.

use std::sync::Arc;

use super::*;
use crate::flow::tool::Listing;
use crate::flow::{Int, Value};
use crate::hale::model::parse_program;
use crate::hale::runtime::Principal;

const DESK: &str = include_str!("../../../../conformance/programs/desk.hl");

fn desk() -> Program {
    parse_program("desk.hl", DESK).expect("desk.hl parses")
}

fn row(member: &str) -> RowTool {
    let locus = member.split("::").next().unwrap();
    receiver_rows(&desk(), locus)
        .unwrap()
        .into_iter()
        .find(|r| r.member == member)
        .unwrap()
}

/// A Tool declared by an implementation: another identity, the same shape.
fn implementation(params: Vec<Param>, ok: Type, err: Type, env: TypeEnv) -> Arc<Tool> {
    let identity = Identity::in_repository("example.com/shop", "1.0.0", "orders.flow", "place");
    Arc::new(Tool::new(Declaration::new(identity, params, ok, err), env).unwrap())
}

fn record(env: &mut TypeEnv, name: &str, fields: &[(&str, Type)]) -> Type {
    let identity = Identity::in_repository("example.com/shop", "1.0.0", "orders.flow", name);
    env.declare(TypeDecl::record(
        identity.clone(),
        fields
            .iter()
            .map(|(n, t)| Field::new(n, t.clone()))
            .collect(),
    ));
    Type::named(identity)
}

fn place_tool(limit: Type, err: Type) -> Arc<Tool> {
    let mut env = TypeEnv::new();
    let request = record(
        &mut env,
        "Order",
        &[("qty", Type::Int), ("symbol", Type::Text), ("limit", limit)],
    );
    let receipt = record(
        &mut env,
        "Receipt",
        &[("order", Type::Int), ("notional", Type::Int)],
    );
    implementation(vec![Param::new("o", request)], receipt, err, env)
}

fn violation(env: &mut TypeEnv) -> Type {
    record(
        env,
        "Violation",
        &[
            ("locus", Type::Text),
            ("closure", Type::Text),
            ("diff", Type::Int),
        ],
    )
}

#[test]
fn the_witness_instances_and_their_rows() {
    let p = desk();
    assert_eq!(
        instances(&p),
        [
            ("orders".to_owned(), "Orders".to_owned()),
            ("partner_orders".to_owned(), "Orders".to_owned()),
            ("ledger".to_owned(), "Ledger".to_owned()),
        ]
    );
    let rows = receiver_rows(&p, "Orders").unwrap();
    let members: Vec<&str> = rows.iter().map(|r| r.member.as_str()).collect();
    assert_eq!(members, ["Orders::cancel", "Orders::place"]);
    let place = &rows[1];
    assert_eq!(place.error, RowError::Violation);
    assert!(!place.context);
    assert!(rows[0].context, "cancel declares ctx: std::api::Context");
    assert!(matches!(rows[0].error, RowError::Declared(_)));
    assert!(has_on_failure(&p, "Orders") && has_on_failure(&p, "Ledger"));
    assert!(!has_on_failure(&p, "Tokens"));
}

#[test]
fn the_listing_reads_back_as_the_declarations_it_lists() {
    let p = desk();
    let listing = listing(&p, "Orders").unwrap();
    let read = Listing::from_json(&listing).unwrap();
    let names: Vec<String> = read
        .tools
        .iter()
        .map(|t| t.identity().to_string())
        .collect();
    assert_eq!(
        names,
        ["hale.api@0/Orders.cancel", "hale.api@0/Orders.place"]
    );
    // The request's fields are its JSON keys, typed as the codec carries
    // them: `limit` is a `Money`, a quantity of `Int`.
    let place = &listing["tools"][1]["signature"];
    assert_eq!(place["params"][0][0], "o");
    let text = place.to_string();
    assert!(text.contains("\"limit\":{\"type\":\"integer\"}"), "{text}");
    // Each row held to its own declaration read back.
    for (row, tool) in receiver_rows(&p, "Orders").unwrap().iter().zip(&read.tools) {
        let held = hold(row, tool).unwrap();
        assert_eq!(held.takes_context, row.context);
    }
    assert!(listing_of_nothing().is_err());
}

fn listing_of_nothing() -> Result<serde_json::Value, ToolsError> {
    listing(&desk(), "Tokens")
}

#[test]
fn a_tool_of_the_same_shape_under_other_names_is_held() {
    let mut env = TypeEnv::new();
    let err = violation(&mut env);
    let tool = place_tool(Type::Int, Type::Never);
    assert!(
        hold(&row("Orders::place"), &tool).is_ok(),
        "Never: it never violates"
    );
    let _ = err;
    let mut env = TypeEnv::new();
    let request = record(
        &mut env,
        "Order",
        &[
            ("qty", Type::Int),
            ("symbol", Type::Text),
            ("limit", Type::Int),
        ],
    );
    let receipt = record(
        &mut env,
        "Receipt",
        &[("order", Type::Int), ("notional", Type::Int)],
    );
    let err = violation(&mut env);
    let tool = implementation(vec![Param::new("o", request)], receipt, err, env);
    assert!(hold(&row("Orders::place"), &tool).is_ok());
}

#[test]
fn a_mismatch_names_the_member_the_field_and_both_types() {
    let tool = place_tool(Type::Text, Type::Never);
    let e = hold(&row("Orders::place"), &tool).unwrap_err().0;
    assert!(e.contains("`Orders::place`"), "{e}");
    assert!(
        e.contains("the request.limit: the row has `Int`, the Tool has `Text`"),
        "{e}"
    );

    let mut env = TypeEnv::new();
    let request = record(
        &mut env,
        "Order",
        &[("qty", Type::Int), ("symbol", Type::Text)],
    );
    let receipt = record(
        &mut env,
        "Receipt",
        &[("order", Type::Int), ("notional", Type::Int)],
    );
    let tool = implementation(vec![Param::new("o", request)], receipt, Type::Never, env);
    let e = hold(&row("Orders::place"), &tool).unwrap_err().0;
    assert!(
        e.contains("the request.limit: the row has `Int`, the Tool has no such field"),
        "{e}"
    );

    let tool = place_tool(Type::Int, Type::Text);
    let e = hold(&row("Orders::place"), &tool).unwrap_err().0;
    assert!(
        e.contains("the error: the row has `ClosureViolation`"),
        "{e}"
    );
    assert!(e.contains("the Tool has `Text`"), "{e}");

    let mut env = TypeEnv::new();
    let receipt = record(
        &mut env,
        "Receipt",
        &[("order", Type::Int), ("notional", Type::Int)],
    );
    let tool = implementation(Vec::new(), receipt, Type::Never, env);
    let e = hold(&row("Orders::place"), &tool).unwrap_err().0;
    assert!(
        e.contains("the row takes 1 argument(s), the Tool takes 0"),
        "{e}"
    );
}

fn served_context() -> ServedContext {
    ServedContext {
        caller: Principal::bearer("alice"),
        request_id: 7,
        via: "http".into(),
        role: "trader".into(),
        exposure: "public".into(),
        generation: 0,
    }
}

#[test]
fn a_call_carries_the_payload_and_the_context() {
    let p = desk();
    let rows = receiver_rows(&p, "Orders").unwrap();
    let cancel = hold(&rows[0], &rows[0].tool).unwrap();
    let limits = crate::flow::Limits::default();
    let args = arguments(
        &cancel,
        &serde_json::json!({"order": 41}),
        &served_context(),
        &limits,
    )
    .unwrap();
    assert_eq!(args.len(), 2);
    let text = crate::flow::canonical::to_canonical_string(&args[1]);
    assert_eq!(
        text,
        r#"{"caller":{"mode":"bearer","name":"alice"},"request_id":7,"role":"trader","via":"http"}"#
    );
    let place = hold(&rows[1], &rows[1].tool).unwrap();
    let e = arguments(
        &place,
        &serde_json::json!({"symbol": 1}),
        &served_context(),
        &limits,
    )
    .unwrap_err();
    assert!(e.starts_with("the request as `o`"), "{e}");
}

#[test]
fn each_outcome_is_the_exposures() {
    let place = row("Orders::place");
    let cancel = row("Orders::cancel");
    let receipt = Value::Record(
        [
            ("notional".to_owned(), Value::Int(Int::from(125_000i64))),
            ("order".to_owned(), Value::Int(Int::from(41i64))),
        ]
        .into_iter()
        .collect(),
    );
    assert_eq!(
        answer(&place, Outcome::Ok(receipt.clone())),
        Answer::Completed(CompletionBytes::Returned(
            br#"{"order":41,"notional":125000}"#.to_vec()
        ))
    );
    // A reply missing a field the response declares is outside the row.
    let short = Value::Record(
        [("order".to_owned(), Value::Int(Int::from(41i64)))]
            .into_iter()
            .collect(),
    );
    assert!(
        matches!(answer(&place, Outcome::Ok(short)), Answer::Failed(e) if e.contains("missing_field: notional"))
    );
    assert_eq!(answer(&place, Outcome::Failed(receipt)), Answer::Violated);
    let error = Value::Record(
        [
            ("code".to_owned(), Value::Text("unknown_order".into())),
            ("reason".to_owned(), Value::Text("no order 7".into())),
        ]
        .into_iter()
        .collect(),
    );
    assert_eq!(
        answer(&cancel, Outcome::Failed(error)),
        Answer::Completed(CompletionBytes::Failed(
            br#"{"code":"unknown_order","reason":"no order 7"}"#.to_vec()
        ))
    );
    for outcome in [
        Outcome::NotRun("x".into()),
        Outcome::Unknown("x".into()),
        Outcome::BadReply("x".into()),
    ] {
        assert!(matches!(answer(&place, outcome), Answer::Failed(_)));
    }
}
