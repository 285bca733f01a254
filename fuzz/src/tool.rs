//! A small Tool for the Tool-protocol targets, the same shape as the
//! core's own (`flow::tool::fuzz_host_replies`): `Echo(text: Text) ->
//! Result<Out, Text>`, `Out` a record of an Int and an optional list of
//! Text; and a generic `Pick<T>(items: List<T>) -> Result<T, Text>`.

use std::sync::Arc;

use limen_core::flow::tool::Tool;
use limen_core::flow::{Declaration, Field, Identity, Param, Type, TypeDecl, TypeEnv};

/// The Tools the targets serve or call.
pub fn tools() -> Vec<Arc<Tool>> {
    let out = Identity::in_repository("fuzz", "1", "f.flow", "Out");
    let mut env = TypeEnv::new();
    env.declare(TypeDecl::record(
        out.clone(),
        vec![
            Field::new("n", Type::Int),
            Field::new("tags", Type::option(Type::list(Type::Text))),
        ],
    ));
    let echo = Declaration::new(
        Identity::in_repository("fuzz", "1", "f.flow", "Echo"),
        vec![Param::new("text", Type::Text)],
        Type::named(out),
        Type::Text,
    );
    let pick = Declaration::new(
        Identity::in_repository("fuzz", "1", "f.flow", "Pick"),
        vec![Param::new("items", Type::list(Type::param("T")))],
        Type::param("T"),
        Type::Text,
    )
    .generic(&["T"]);
    [echo, pick]
        .into_iter()
        .map(|d| Arc::new(Tool::new(d, env.clone()).expect("a well-formed declaration")))
        .collect()
}
