//! The Tools of the Tool-protocol targets: the core's own Echo
//! (`flow::tool::fuzz_echo_tool`, `Echo(text: Text) -> Result<Out, Text>`,
//! `Out` a record of an Int and an optional list of Text) and a generic
//! `Pick<T>(items: List<T>) -> Result<T, Text>`.

use std::sync::Arc;

use limen_core::flow::tool::{fuzz_echo_tool, Tool};
use limen_core::flow::{Declaration, Identity, Param, Type};

/// The Tools the targets serve or call: the core's Echo, and Pick.
pub fn tools() -> Vec<Arc<Tool>> {
    let echo = fuzz_echo_tool();
    let pick = Declaration::new(
        Identity::in_repository("fuzz", "1", "f.flow", "Pick"),
        vec![Param::new("items", Type::list(Type::param("T")))],
        Type::param("T"),
        Type::Text,
    )
    .generic(&["T"]);
    let pick = Tool::new(pick, echo.env.clone()).expect("a well-formed declaration");
    vec![echo, Arc::new(pick)]
}
