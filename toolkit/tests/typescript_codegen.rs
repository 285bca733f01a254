//! `flow toolkit typescript`, held by the real compiler:
//!
//! - the committed fixture module (`toolkits/typescript/test/fixture/echo-tools.ts`,
//!   which the TypeScript fixture Tool `echo-tool.ts` is written over) is
//!   what the generator writes today (`LIMEN_BLESS=1` writes it again);
//! - `tsc --strict` passes on it, over the toolkit's own types, and its
//!   types are the toolkit's values (a `$tag` union takes a bigint, not a
//!   number);
//! - `tsc --strict` passes on the module generated for listings that reach
//!   every type the listing grammar can produce, names TypeScript reserves
//!   or the module uses, and clashes: a hand-made one and [`SEEDS`] random
//!   ones (`support/random_listing.rs`, shared with the Python generator's
//!   test); one tsc run over all of them, then one node run that imports
//!   every module and finds its `LISTING` the listing;
//! - values through node: [`VALUE_SEEDS`] of the random listings served by
//!   their module with every method answering its argument, a random value
//!   of each declared type sent to its echo Tool comes back the same value.
//!
//! Every tsc run adds [`AUTHOR_FLAGS`] to `--strict`: the generated module
//! is compiled with an author's code, under the author's tsconfig.
//!
//! tsc and node are peers: absent, the tests skip (`LIMEN_REQUIRE_PEERS=1`
//! fails instead).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use limen_core::flow::tool::listing::describe_result;
use limen_core::flow::tool::Tool;
use limen_core::flow::{Constructor, Declaration, Field, Identity, Param, Type, TypeDecl, TypeEnv};

#[path = "support/random_listing.rs"]
mod random_listing;

/// The stricter checks an author's tsconfig may turn on beside `--strict`
/// (it compiles the generated module with the author's code): the
/// generated code passes them too.
const AUTHOR_FLAGS: &[&str] = &[
    "--noUnusedLocals",
    "--noUnusedParameters",
    "--noImplicitReturns",
    "--exactOptionalPropertyTypes",
    "--noUncheckedIndexedAccess",
    "--noPropertyAccessFromIndexSignature",
    "--verbatimModuleSyntax",
    "--isolatedModules",
];

/// How many random listings the property test generates and compiles
/// (one tsc run over all of them).
const SEEDS: u64 = 100;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The committed generated module of the fixture listing.
fn fixture_module() -> PathBuf {
    root().join("toolkits/typescript/test/fixture/echo-tools.ts")
}

fn fixture_listing() -> String {
    std::fs::read_to_string(root().join("toolkit/tests/fixtures/listing.json")).unwrap()
}

#[test]
fn the_committed_fixture_module_is_what_the_generator_writes() {
    let code = limen_toolkit::codegen::typescript(&fixture_listing()).unwrap();
    let path = fixture_module();
    if std::env::var_os("LIMEN_BLESS").is_some() {
        std::fs::write(&path, &code).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == code,
        "{} is not what the code writes; run with LIMEN_BLESS=1 to write it again",
        path.display()
    );
}

/// A fresh folder inside the compiled toolkit's (so `limen-toolkit`
/// resolves as installed), removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(toolkit: &Path, tag: &str) -> Scratch {
        let dir = toolkit.join(format!("{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::env::var_os("KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// What a consumer of the fixture module may and may not write: the
/// representation of TOOLKITS.md, checked by the compiler.
const FIXTURE_CONSUMER: &str = r#"
import * as limen from "limen-toolkit";
import type { EchoError, Note, Page, Shape, Tools, Tree } from "./echo-tools.js";

export const refused: EchoError = { $tag: "Refused", value: "no" };
export const tooBig: EchoError = { $tag: "TooBig", limit: 1n };
// @ts-expect-error an Int is a bigint, never a number
export const notBig: EchoError = { $tag: "TooBig", limit: 1 };
export const dot: Shape = { $tag: "Dot" };
// @ts-expect-error a Decimal is the toolkit's, never a number
export const circle: Shape = { $tag: "Circle", value: 1.5 };
export const tree: Tree = { label: "a", children: [], parent: { some: { label: "b", children: [], parent: null } } };
export const page: Page<limen.JsonValue> = { items: [1n, "x", null, [true]], next: null };
export function tags(n: Note): string[] {
  return n.tags === null ? [] : n.tags.some;
}
export type Add = ReturnType<Tools["add"]>;
export const sum: Add = 3n;
"#;

#[test]
fn tsc_strict_passes_on_the_fixture_module() {
    let Some(toolkit) = limen_clients::ts_toolkit() else {
        return;
    };
    let dir = Scratch::new(&toolkit, "fixture-check");
    std::fs::copy(fixture_module(), dir.0.join("echo-tools.ts")).unwrap();
    std::fs::write(dir.0.join("consumer.ts"), FIXTURE_CONSUMER).unwrap();
    let mut args = AUTHOR_FLAGS.to_vec();
    args.extend(["--noEmit", "echo-tools.ts", "consumer.ts"]);
    if let Err(why) = limen_clients::run_tsc(&dir.0, &args) {
        panic!("{why}");
    }
}

fn id(file: &str, name: &str) -> Identity {
    Identity::in_repository("example.com/names", "1.0.0", file, name)
}

/// The listing of `decls` over `env`.
fn listing(env: &TypeEnv, decls: Vec<Declaration>) -> String {
    let tools: Vec<Arc<Tool>> = decls
        .into_iter()
        .map(|d| Arc::new(Tool::new(d, env.clone()).unwrap()))
        .collect();
    serde_json::to_string_pretty(&describe_result(&tools)).unwrap()
}

/// Listings made by hand: every type constructor, nested where a naive
/// writer would lose a parenthesis (an Option in a List, a Result in an
/// Option), generic declarations applied to each other, an empty enum, a
/// record with no field, recursion through an enum, and names TypeScript
/// reserves, the module uses, or two files share.
fn hand_made() -> Vec<String> {
    let a = |n: &str| id("a.flow", n);
    let b = |n: &str| id("b-two.flow", n);
    let mut env = TypeEnv::new();
    env.declare(
        TypeDecl::record(
            a("Map"),
            vec![
                Field::new("default", Type::option(Type::option(Type::Int)))
                    .doc("A doc comment that says */ and /* and @throws."),
                Field::new("class", Type::list(Type::option(Type::Text))),
                Field::new(
                    "constructor",
                    Type::option(Type::result(Type::Int, Type::list(Type::Bool))),
                ),
                Field::new("r", Type::list(Type::result(Type::Text, Type::Never))),
            ],
        )
        .doc("Named as the module's own Map.\n\nTwo paragraphs."),
    );
    env.declare(TypeDecl::record(a("Item"), vec![]));
    env.declare(TypeDecl::record(
        b("Item"),
        vec![Field::new("self", Type::named(a("Item")))],
    ));
    env.declare(TypeDecl::record(a("T"), vec![]));
    env.declare(
        TypeDecl::enumeration(
            a("Either"),
            vec![
                Constructor::value("Left", Type::param("T")),
                Constructor::value("Right", Type::param("string")),
                Constructor::fields(
                    "Both",
                    vec![
                        Field::new("l", Type::param("T")),
                        Field::new("r", Type::list(Type::param("string"))),
                        Field::new("t", Type::named(a("T"))),
                    ],
                ),
                Constructor::unit("Neither").doc("No side."),
            ],
        )
        .generic(&["T", "string"]),
    );
    env.declare(TypeDecl::enumeration(a("Void"), vec![]).generic(&["X"]));
    env.declare(TypeDecl::enumeration(
        a("Expr"),
        vec![
            Constructor::value("Lit", Type::Decimal),
            Constructor::value(
                "Add",
                Type::Tuple(vec![Type::named(a("Expr")), Type::named(a("Expr"))]),
            ),
            Constructor::fields(
                "Let",
                vec![
                    Field::new("bind", Type::dict(Type::Text, Type::named(a("Expr")))),
                    Field::new("in", Type::option(Type::named(a("Expr")))),
                ],
            ),
        ],
    ));
    env.declare(TypeDecl::record(a("Promise"), vec![]));
    env.declare(TypeDecl::record(a("Tools"), vec![]));
    let every = Type::Tuple(vec![
        Type::Int,
        Type::Decimal,
        Type::Text,
        Type::Bool,
        Type::Bytes,
        Type::Instant,
        Type::Duration,
        Type::list(Type::set(Type::Text)),
        Type::dict(Type::Int, Type::option(Type::Decimal)),
        Type::dict(Type::Text, Type::Tuple(vec![])),
        Type::dict(Type::named(a("Item")), Type::Tuple(vec![Type::Int])),
        Type::option(Type::result(Type::Json, Type::HostToken)),
        Type::Never,
        Type::applied(
            a("Either"),
            vec![
                Type::named(a("Map")),
                Type::applied(a("Either"), vec![Type::Int, Type::option(Type::Text)]),
            ],
        ),
        Type::applied(a("Void"), vec![Type::Int]),
        Type::named(b("Item")),
        Type::named(a("Promise")),
        Type::named(a("Tools")),
        Type::named(a("T")),
    ]);
    let decls = vec![
        Declaration::new(
            a("every"),
            vec![
                Param::new("delete", every.clone()),
                Param::new("cx", Type::Int),
                Param::new("limen", Type::Int),
                Param::new("arguments", Type::option(Type::Text)),
            ],
            every,
            Type::named(a("Expr")),
        )
        .doc("Every type."),
        Declaration::new(a("item"), vec![], Type::named(a("Item")), Type::Never),
        Declaration::new(b("item"), vec![], Type::named(b("Item")), Type::Never),
        Declaration::new(
            a("constructor"),
            vec![Param::new("x", Type::param("T"))],
            Type::applied(a("Either"), vec![Type::param("T"), Type::Text]),
            Type::option(Type::Int),
        )
        .generic(&["T"]),
        Declaration::new(
            a("get_user_name"),
            vec![Param::new("new", Type::result(Type::Int, Type::Text))],
            Type::option(Type::Text),
            Type::result(Type::Int, Type::Text),
        ),
    ];
    vec![listing(&env, decls)]
}

/// The module of listing `i`, and for the random ones a Tool process over
/// it (`serve{i}.ts`) whose every method answers its first argument, so
/// each echo Tool `(value: T) -> T` answers its value.
fn serve_script(i: usize) -> String {
    format!(
        "import {{ serve }} from \"./m{i}.js\";\n\
         import type {{ Tools }} from \"./m{i}.js\";\n\
         const echo = new Proxy({{}}, {{ get: () => (_cx: unknown, value: unknown) => value }});\n\
         await serve(echo as Tools);\n"
    )
}

#[test]
fn tsc_strict_passes_on_every_listing() {
    let mut listings = vec![fixture_listing()];
    listings.extend(hand_made());
    let first_random = listings.len();
    let randoms: Vec<random_listing::Listing> =
        (0..SEEDS).map(random_listing::random_listing).collect();
    listings.extend(randoms.iter().map(|l| l.text.clone()));
    let Some(toolkit) = limen_clients::ts_toolkit() else {
        return;
    };
    let node = limen_clients::node().unwrap();
    let dir = Scratch::new(&toolkit, "codegen");
    let mut files = Vec::new();
    let mut check = String::from("import { strict as assert } from \"node:assert\";\n");
    for (i, text) in listings.iter().enumerate() {
        let code = limen_toolkit::codegen::typescript(text)
            .unwrap_or_else(|e| panic!("listing {i} does not generate: {e}\n{text}"));
        let file = format!("m{i}.ts");
        std::fs::write(dir.0.join(&file), code).unwrap();
        files.push(file);
        let compact =
            serde_json::to_string(&serde_json::from_str::<serde_json::Value>(text).unwrap())
                .unwrap();
        check.push_str(&format!(
            "import * as m{i} from \"./m{i}.js\";\n\
             assert.equal(m{i}.LISTING, {});\n\
             assert.equal(typeof m{i}.serve, \"function\");\n",
            serde_json::to_string(&compact).unwrap()
        ));
        if i >= first_random && i < first_random + VALUE_SEEDS {
            let file = format!("serve{i}.ts");
            std::fs::write(dir.0.join(&file), serve_script(i)).unwrap();
            files.push(file);
        }
    }
    check.push_str("console.log(\"checked\");\n");
    std::fs::write(dir.0.join("check.ts"), check).unwrap();
    files.push("check.ts".into());
    let mut args = AUTHOR_FLAGS.to_vec();
    args.extend(files.iter().map(String::as_str));
    if let Err(why) = limen_clients::run_tsc(&dir.0, &args) {
        panic!("{why}");
    }
    let out = Command::new(&node)
        .arg(dir.0.join("check.js"))
        .output()
        .unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("checked"),
        "node check.js: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Values through node: a random value of every declared type, sent to
    // its echo Tool, comes back the same value.
    let mut crossed = 0;
    for (k, listing) in randoms.iter().take(VALUE_SEEDS).enumerate() {
        crossed += echo_values(
            &node,
            &dir.0.join(format!("serve{}.js", first_random + k)),
            listing,
            k as u64,
        );
    }
    eprintln!("{crossed} values crossed");
    assert!(crossed > VALUE_SEEDS, "only {crossed} values crossed");
}

/// How many of the random listings' Tool processes are sent values.
const VALUE_SEEDS: usize = 12;

/// Sends a random value of each echo Tool's type of `listing` to the Tool
/// process `script` and checks each comes back the value it was (its
/// canonical text, by core's decoding); how many were sent.
fn echo_values(node: &Path, script: &Path, listing: &random_listing::Listing, seed: u64) -> usize {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;

    use limen_core::flow::canonical::to_canonical_string;
    use limen_core::flow::decode::{decode, Limits};

    let mut rng = random_listing::Rng::new(seed);
    let mut sent = Vec::new();
    let mut lines = String::new();
    for echo in &listing.echoes {
        let tool = listing.tools.iter().find(|t| t.identity() == echo).unwrap();
        let ty = &tool.declaration.params[0].ty;
        let Some(text) = random_listing::random_value(&mut rng, ty, &listing.env, &[], 0) else {
            continue;
        };
        // What core refuses is no value of the type (the random writer's
        // fault, not the toolkit's): not sent.
        let Ok(value) = decode(text.as_bytes(), ty, &tool.env, &Limits::default()) else {
            eprintln!("{echo}: core refuses the random value {text}: not sent");
            continue;
        };
        lines.push_str(&format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"call\",\"params\":{{\"runId\":\"r\",\"callId\":\"{}\",\"tool\":{},\"args\":{{\"value\":{text}}}}}}}\n",
            sent.len(),
            serde_json::to_string(&echo.to_string()).unwrap()
        ));
        sent.push((tool.clone(), text, to_canonical_string(&value)));
    }
    let mut child = Command::new(node)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(lines.as_bytes())
        .unwrap();
    let replies: Vec<String> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|l| l.unwrap())
        .collect();
    let status = child.wait().unwrap();
    assert!(status.success(), "{}: {status}", script.display());
    assert_eq!(
        replies.len(),
        sent.len(),
        "{}: {replies:?}",
        script.display()
    );
    for reply in replies {
        // The outcome is the reply's last member: `..."outcome":{"Ok":X}}}`.
        let call: usize = reply
            .split("\"callId\":\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("{reply}"));
        let (tool, text, want) = &sent[call];
        let ok = reply
            .split_once("\"outcome\":{\"Ok\":")
            .and_then(|(_, rest)| rest.strip_suffix("}}}"))
            .unwrap_or_else(|| panic!("{}: {text}: {reply}", tool.identity()));
        let ty = &tool.declaration.ok;
        let have = decode(ok.as_bytes(), ty, &tool.env, &Limits::default())
            .unwrap_or_else(|e| panic!("{}: {ok}: {e}", tool.identity()));
        assert_eq!(
            &to_canonical_string(&have),
            want,
            "{}: sent {text}",
            tool.identity()
        );
    }
    sent.len()
}
