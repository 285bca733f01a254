//! The fixture listing and the code generated from it are what the code
//! says they are: `LIMEN_BLESS=1` writes them again.
//!
//! The listing (`fixtures/listing.json`) is built here from Rust
//! declarations; `fixtures/tools.rs` is `flow toolkit rust` of it, which the
//! fixture Tool process (`drivers/src/bin/tool-fixture-echo.rs`) and
//! `codegen.rs` include; `toolkits/python/tests/fixture/echo_tools.py` is
//! `flow toolkit python` of it, which the Python fixture Tool imports.

use std::sync::Arc;

use limen_core::flow::tool::listing::describe_result;
use limen_core::flow::tool::Tool;
use limen_core::flow::{Constructor, Declaration, Field, Identity, Param, Type, TypeDecl, TypeEnv};

const REPO: &str = "example.com/limen-fixtures";
const VERSION: &str = "0.3.0";

fn id(name: &str) -> Identity {
    Identity::in_repository(REPO, VERSION, "echo.flow", name)
}

/// The fixture declarations: every kind of type a Tool signature can hold.
pub fn fixture_tools() -> Vec<Arc<Tool>> {
    let mut env = TypeEnv::new();
    env.declare(
        TypeDecl::record(
            id("Note"),
            vec![
                Field::new("text", Type::Text).doc("What the note says."),
                Field::new("tags", Type::option(Type::list(Type::Text))),
                Field::new("weight", Type::Decimal),
            ],
        )
        .doc("A short note."),
    );
    env.declare(TypeDecl::enumeration(
        id("Shape"),
        vec![
            Constructor::unit("Dot"),
            Constructor::value("Circle", Type::Decimal).doc("By its radius."),
            Constructor::fields(
                "Rect",
                vec![Field::new("w", Type::Int), Field::new("h", Type::Int)],
            ),
        ],
    ));
    env.declare(
        TypeDecl::record(
            id("Page"),
            vec![
                Field::new("items", Type::list(Type::param("T"))),
                Field::new("next", Type::option(Type::Text)),
            ],
        )
        .generic(&["T"]),
    );
    env.declare(TypeDecl::record(
        id("Tree"),
        vec![
            Field::new("label", Type::Text),
            Field::new("children", Type::list(Type::named(id("Tree")))),
            Field::new("parent", Type::option(Type::named(id("Tree")))),
        ],
    ));
    env.declare(TypeDecl::enumeration(
        id("EchoError"),
        vec![
            Constructor::value("Refused", Type::Text),
            Constructor::fields("TooBig", vec![Field::new("limit", Type::Int)]),
        ],
    ));
    let err = || Type::named(id("EchoError"));
    let everything = Type::Tuple(vec![
        Type::Bytes,
        Type::Instant,
        Type::Duration,
        Type::set(Type::Int),
        Type::dict(Type::Int, Type::Text),
        Type::dict(Type::Text, Type::Int),
        Type::Json,
        Type::HostToken,
    ]);
    let decls = vec![
        Declaration::new(
            id("echo"),
            vec![Param::new("text", Type::Text)],
            Type::Text,
            err(),
        )
        .doc("Answers its text."),
        Declaration::new(
            id("add"),
            vec![Param::new("a", Type::Int), Param::new("b", Type::Int)],
            Type::Int,
            err(),
        )
        .doc("Adds two integers exactly."),
        Declaration::new(
            id("note"),
            vec![Param::new("note", Type::named(id("Note")))],
            Type::named(id("Note")),
            err(),
        ),
        Declaration::new(
            id("reshape"),
            vec![Param::new("shape", Type::named(id("Shape")))],
            Type::named(id("Shape")),
            err(),
        ),
        Declaration::new(
            id("fail"),
            vec![Param::new("reason", Type::Text)],
            Type::Text,
            err(),
        )
        .doc("Fails with the declared error."),
        Declaration::new(
            id("crash"),
            vec![Param::new("how", Type::Text)],
            Type::Text,
            err(),
        )
        .doc("Panics, or fails with an error that is not the declared one."),
        Declaration::new(
            id("identity"),
            vec![Param::new("value", Type::param("T"))],
            Type::applied(id("Page"), vec![Type::param("T")]),
            err(),
        )
        .generic(&["T"])
        .doc("Answers a page holding its value."),
        Declaration::new(
            id("grow"),
            vec![Param::new("tree", Type::named(id("Tree")))],
            Type::named(id("Tree")),
            err(),
        ),
        Declaration::new(
            id("everything"),
            vec![Param::new("all", everything.clone())],
            everything,
            Type::Never,
        ),
    ];
    decls
        .into_iter()
        .map(|d| Arc::new(Tool::new(d, env.clone()).unwrap()))
        .collect()
}

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn check(name: &str, want: &str) {
    check_at(&fixture(name), want);
}

fn check_at(path: &str, want: &str) {
    if std::env::var_os("LIMEN_BLESS").is_some() {
        std::fs::write(path, want).unwrap();
    }
    let have = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        have == want,
        "{path} is not what the code writes; run with LIMEN_BLESS=1 to write it again"
    );
}

#[test]
fn the_fixture_listing_is_the_declarations_describe_result() {
    let tools = fixture_tools();
    let listing = serde_json::to_string_pretty(&describe_result(&tools)).unwrap() + "\n";
    check("listing.json", &listing);
}

#[test]
fn the_generated_code_is_codegen_of_the_listing() {
    let listing = std::fs::read_to_string(fixture("listing.json")).unwrap();
    let code = limen_toolkit::codegen::rust(&listing).unwrap();
    check("tools.rs", &code);
}

#[test]
fn the_generated_python_is_codegen_of_the_listing() {
    let listing = std::fs::read_to_string(fixture("listing.json")).unwrap();
    let code = limen_toolkit::codegen::python(&listing).unwrap();
    check_at(
        &format!(
            "{}/../toolkits/python/tests/fixture/echo_tools.py",
            env!("CARGO_MANIFEST_DIR")
        ),
        &code,
    );
}
