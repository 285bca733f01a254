//! `flow toolkit python` over random listings (`support/random_listing.rs`):
//! the generated module passes `mypy --strict` for every type the listing
//! grammar can produce, imports, and converts values both ways — each
//! echo Tool's handler, over an implementation answering its argument,
//! turns a value core decoded into the generated classes and back to the
//! same canonical text. The fixture listing's module (committed) passes
//! `mypy --strict` too.
//!
//! Python and mypy are peers (`.peers/venv`): absent, the tests skip
//! (`LIMEN_REQUIRE_PEERS=1` fails instead). The generated code imports
//! `limen_toolkit.serve`; until that module is in the package the checks
//! that run Python skip with a message.

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

/// Python and mypy, and the toolkit's serve module the generated code
/// imports; `None` after a skip message.
fn peers() -> Option<(PathBuf, PathBuf)> {
    let (python, mypy) = (limen_clients::python()?, limen_clients::mypy()?);
    if !package().join("limen_toolkit/serve.py").is_file() {
        eprintln!("skipped: limen_toolkit/serve.py is absent, and the generated code imports it");
        return None;
    }
    Some((python, mypy))
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn mypy_strict(mypy: &Path, files: &[PathBuf]) {
    let out = Command::new(mypy)
        .args(["--strict", "--no-incremental", "--cache-dir=/dev/null"])
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

#[test]
fn the_fixture_module_is_mypy_strict_clean() {
    let Some((_, mypy)) = peers() else {
        return;
    };
    mypy_strict(
        &mypy,
        &[root().join("toolkits/python/tests/fixture/echo_tools.py")],
    );
}
