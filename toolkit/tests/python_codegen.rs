//! `flow toolkit python` over random listings (`support/random_listing.rs`):
//! the generated module passes `mypy --strict` for every type the listing
//! grammar can produce, imports, and converts values both ways — each
//! echo Tool's handler, over an implementation answering its argument,
//! turns a value core decoded into the generated classes and back to the
//! same canonical text, called directly and through `limen_toolkit.serve`
//! (which also answers describe with the module's `LISTING`). The fixture
//! listing's module (committed) passes `mypy --strict` too, mypy refuses
//! an implementation of its `Tools` with wrong types, and its conversions
//! refuse values they cannot take with a `TypeError` saying why.
//!
//! Python and mypy are peers (`.peers/venv`): absent, the tests skip
//! (`LIMEN_REQUIRE_PEERS=1` fails instead).

#[path = "support/random_listing.rs"]
mod random_listing;

use std::path::{Path, PathBuf};
use std::process::Command;

use limen_core::flow::canonical::to_canonical_string;
use limen_core::flow::decode::{decode, Limits};
use limen_core::flow::Type;
use serde_json::json;

use random_listing::{random_listing, random_value, Rng};

/// How many random listings: one mypy run over all of them stays well
/// under a minute on two cores.
const SEEDS: u64 = 48;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn package() -> PathBuf {
    root().join("toolkits/python/src")
}

/// Python and mypy; `None` after a skip message.
fn peers() -> Option<(PathBuf, PathBuf)> {
    Some((limen_clients::python()?, limen_clients::mypy()?))
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `mypy --strict` for the oldest Python the package supports (3.10).
fn mypy_strict(mypy: &Path, files: &[PathBuf]) {
    let out = Command::new(mypy)
        .args([
            "--strict",
            "--python-version=3.10",
            "--no-incremental",
            "--cache-dir=/dev/null",
        ])
        .args(files)
        .env("MYPYPATH", package())
        .output()
        .expect("mypy runs");
    assert!(
        out.status.success(),
        "mypy --strict: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn random_listings_generate_the_same_module_every_time() {
    for seed in 0..SEEDS {
        let listing = random_listing(seed);
        assert_eq!(listing.text, random_listing(seed).text, "seed {seed}");
        let a = limen_toolkit::codegen::python(&listing.text)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let b = limen_toolkit::codegen::python(&listing.text).unwrap();
        assert_eq!(a, b, "seed {seed}");
    }
}

/// The Python script: for each case, the echo Tool's handler over an
/// implementation answering its argument (checked to be the generated
/// class, not a generic value); the result is encoded and compared.
const ROUND_TRIP: &str = r#"
import asyncio, importlib, json, sys
from typing import Any
from limen_toolkit import RecordValue, Variant, decode, encode, type_from_schema

class Echo:
    def __getattr__(self, name: str) -> Any:
        async def method(cx: Any, *args: Any) -> Any:
            if isinstance(args[0], (RecordValue, Variant)):
                raise AssertionError(f"{name} got a generic value: {args[0]!r}")
            return args[0]
        return method

async def main() -> None:
    cases = json.load(open(sys.argv[1]))
    for case in cases:
        module = importlib.import_module(case["module"])
        handlers = module.handlers(Echo())
        ty, env = type_from_schema(case["schema"])
        value = decode(case["text"], ty, env)
        out = await handlers[case["tool"]](None, [value])
        text = encode(out, ty, env)
        if text != case["canonical"]:
            raise AssertionError(f"{case['module']} {case['tool']}: {text} != {case['canonical']}")
    print(f"{len(cases)} round trips")

asyncio.run(main())

# The same cases through the serve loop, one run per module: describe
# answers the listing, and each call's reply is the value's canonical text.
from decimal import Decimal
import io
from limen_toolkit.serve import serve

def parse(text: str) -> Any:
    return json.loads(text, parse_float=Decimal)

by_module: dict[str, list[Any]] = {}
for case in json.load(open(sys.argv[1])):
    by_module.setdefault(case["module"], []).append(case)
for name, cases in by_module.items():
    module = importlib.import_module(name)
    lines = ['{"jsonrpc":"2.0","id":1,"method":"describe"}']
    for i, case in enumerate(cases):
        lines.append(
            '{"jsonrpc":"2.0","method":"call","params":{"runId":"r","callId":"%d","tool":%s,"args":{"value":%s}}}'
            % (i, json.dumps(case["tool"]), case["text"])
        )
    out = io.BytesIO()
    serve(module.LISTING, module.handlers(Echo()), stdin=io.BytesIO(("\n".join(lines) + "\n").encode()), stdout=out)
    replies = [parse(line) for line in out.getvalue().decode().splitlines()]
    described = [r for r in replies if r.get("id") == 1]
    if described != [{"jsonrpc": "2.0", "id": 1, "result": parse(module.LISTING)}]:
        raise AssertionError(f"{name}: describe answered {described}")
    outcomes = {r["params"]["callId"]: r["params"]["outcome"] for r in replies if r.get("method") == "reply"}
    for i, case in enumerate(cases):
        if outcomes.get(str(i)) != {"Ok": parse(case["canonical"])}:
            raise AssertionError(f"{name} {case['tool']}: {outcomes.get(str(i))} for {case['text']}")
print(f"{len(by_module)} modules served")
"#;

#[test]
fn generated_python_is_mypy_strict_clean_and_round_trips_values() {
    let Some((python, mypy)) = peers() else {
        return;
    };
    let dir = scratch("python_codegen");
    let mut files = Vec::new();
    let mut cases = Vec::new();
    for seed in 0..SEEDS {
        let listing = random_listing(seed);
        let code = limen_toolkit::codegen::python(&listing.text)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let module = format!("listing_{seed}");
        let file = dir.join(format!("{module}.py"));
        std::fs::write(&file, code).unwrap();
        files.push(file);
        let mut rng = Rng::new(seed);
        for tool in listing
            .tools
            .iter()
            .filter(|t| listing.echoes.contains(&t.declaration.identity))
        {
            let ty: &Type = &tool.declaration.params[0].ty;
            for _ in 0..2 {
                let Some(text) = random_value(&mut rng, ty, &listing.env, &[], 0) else {
                    continue;
                };
                let value = decode(text.as_bytes(), ty, &listing.env, &Limits::default())
                    .unwrap_or_else(|e| panic!("seed {seed}: {text} at {ty:?}: {e}"));
                cases.push(json!({
                    "module": module,
                    "tool": tool.declaration.identity.to_string(),
                    "schema": tool.signature["params"][0][1],
                    "text": text,
                    "canonical": to_canonical_string(&value),
                }));
            }
        }
    }
    mypy_strict(&mypy, &files);
    let plan = dir.join("cases.json");
    std::fs::write(&plan, serde_json::to_string(&cases).unwrap()).unwrap();
    let script = dir.join("round_trip.py");
    std::fs::write(&script, ROUND_TRIP).unwrap();
    let path = std::env::join_paths([dir.clone(), package()]).unwrap();
    let out = Command::new(python)
        .arg(&script)
        .arg(&plan)
        .env("PYTHONPATH", path)
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "the round trips: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(cases.len() > SEEDS as usize * 4, "{} cases", cases.len());
}

/// Methods of the fixture's `Tools` with their types wrong: `add`
/// answering a `float` (never an Int), `reshape` taking the generic
/// `Variant` for the generated union.
const WRONG_TOOLS: &str = r#"
from echo_tools import Tools
from limen_toolkit.serve import Context
from limen_toolkit.values import Variant

class Wrong(Tools):
    async def add(self, cx: Context, a: int, b: int) -> float:
        return a / b

    async def reshape(self, cx: Context, shape: Variant) -> Variant:
        return shape
"#;

#[test]
fn the_fixture_module_is_mypy_strict_clean_and_types_what_an_author_writes() {
    let Some((_, mypy)) = peers() else {
        return;
    };
    let fixture = root().join("toolkits/python/tests/fixture");
    mypy_strict(&mypy, &[fixture.join("echo_tools.py")]);
    // The protocol is typed, not `Any`: a wrong implementation is refused.
    let dir = scratch("python_codegen_wrong");
    let wrong = dir.join("wrong_tools.py");
    std::fs::write(&wrong, WRONG_TOOLS).unwrap();
    let path = std::env::join_paths([package(), fixture]).unwrap();
    let out = Command::new(&mypy)
        .args(["--strict", "--no-incremental", "--cache-dir=/dev/null"])
        .arg(&wrong)
        .env("MYPYPATH", path)
        .output()
        .expect("mypy runs");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success(),
        "mypy took a wrong implementation: {said}"
    );
    assert!(
        said.contains("\"add\" incompatible with")
            && said.contains("\"reshape\" incompatible with"),
        "{said}"
    );
}

/// The fixture module's conversions on values they cannot take: each
/// raises `TypeError` saying what it expected (`limen_toolkit.glue`).
const REFUSALS: &str = r#"
import sys
from echo_tools import note_from_value, shape_from_value, shape_to_value, tree_from_value
from limen_toolkit.values import RecordValue, Variant

SHAPE = "example.com/limen-fixtures@0.3.0/echo.flow.Shape"
NOTE = "example.com/limen-fixtures@0.3.0/echo.flow.Note"
cases = [
    (lambda: note_from_value(42), "expected a record value of " + NOTE),
    (lambda: tree_from_value(RecordValue(NOTE, ())), "expected a record value of"),
    (lambda: shape_from_value(RecordValue(SHAPE, ())), "expected an enum value of " + SHAPE),
    (lambda: shape_from_value(Variant(SHAPE, "Hexagon")), SHAPE + " has no constructor 'Hexagon'"),
    (lambda: shape_to_value("round"), "expected a value of Shape, found a Python str"),
]
for call, want in cases:
    try:
        call()
    except TypeError as e:
        if want not in str(e):
            sys.exit(f"{want!r} not in {e}")
    else:
        sys.exit(f"no TypeError; wanted {want!r}")
"#;

#[test]
fn the_generated_conversions_refuse_what_they_cannot_take() {
    let Some((python, _)) = peers() else {
        return;
    };
    let path =
        std::env::join_paths([package(), root().join("toolkits/python/tests/fixture")]).unwrap();
    let out = Command::new(python)
        .args(["-c", REFUSALS])
        .env("PYTHONPATH", path)
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The seeds together reach what the property test is for: every kind of
/// constructor, an enum without any, generic and recursive declarations,
/// one name declared in two files, generic Tools, Tool names that meet.
#[test]
fn the_random_listings_reach_every_form() {
    use limen_core::flow::{Payload, TypeBody};
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..SEEDS {
        let listing = random_listing(seed);
        let mut names = std::collections::BTreeSet::new();
        for decl in listing.env.iter() {
            if !names.insert(decl.identity.name.clone()) {
                seen.insert("a type name in two files");
            }
            if !decl.params.is_empty() {
                seen.insert(match decl.body {
                    TypeBody::Record(_) => "a generic record",
                    TypeBody::Enum(_) => "a generic enum",
                });
            }
            let own = format!("{:?}", decl.identity);
            let body = format!("{:?}", decl.body);
            if body.contains(&own) {
                seen.insert("a declaration naming itself");
            }
            if let TypeBody::Enum(cs) = &decl.body {
                if cs.is_empty() {
                    seen.insert("an enum without constructors");
                }
                for c in cs {
                    seen.insert(match c.payload {
                        Payload::Unit => "a constructor without payload",
                        Payload::Value(_) => "a positional payload",
                        Payload::Fields(_) => "named fields",
                    });
                }
            }
        }
        let mut tools = std::collections::BTreeSet::new();
        for tool in &listing.tools {
            if !tool.declaration.generic.is_empty() {
                seen.insert("a generic Tool");
            }
            if !tools.insert(tool.declaration.identity.name.clone()) {
                seen.insert("a Tool name in two files");
            }
        }
    }
    assert_eq!(seen.len(), 10, "{seen:?}");
}
