//! `flow toolkit rust|python|typescript` (`limen_toolkit::codegen`): a
//! listing of up to three Tools built over the type model (names with
//! spaces, `$`, letters outside ASCII, keyword look-alikes; generic and
//! recursive types; two named types of one name in different files) is
//! generated in each language: never a panic, and the same code every
//! time.
#![no_main]

use std::sync::Arc;

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use limen_core::flow::tool::listing::describe_result;
use limen_core::flow::tool::Tool;
use limen_core::flow::Identity;
use limen_fuzz::model::declaration;

const TOOL_NAMES: &[&str] = &["search", "class", "def", "x y", "é", "Tools", "serve", "cx"];

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(n) = u.int_in_range(1..=3usize) else {
        return;
    };
    let mut tools = Vec::new();
    for i in 0..n {
        let Ok((mut decl, env)) = declaration(&mut u) else {
            return;
        };
        let pick = u.arbitrary::<u8>().unwrap_or(0) as usize;
        let name = TOOL_NAMES[(i + pick) % TOOL_NAMES.len()];
        decl.identity =
            Identity::in_repository("github.com/acme/tools", "1.4.0", "search.flow", name);
        match Tool::new(decl, env) {
            Ok(tool) => tools.push(Arc::new(tool)),
            Err(_) => return,
        }
    }
    let listing = serde_json::to_string(&describe_result(&tools)).expect("a listing writes");
    let generators: [fn(&str) -> Result<String, String>; 3] = [
        limen_toolkit::codegen::rust,
        limen_toolkit::codegen::python,
        limen_toolkit::codegen::typescript,
    ];
    for generate in generators {
        let first = generate(&listing);
        assert_eq!(
            first,
            generate(&listing),
            "two runs, one listing: {listing}"
        );
    }
});
