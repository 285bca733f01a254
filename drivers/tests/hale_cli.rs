//! The `hale` binary's documents: what `hale check --api` and `hale api
//! export` print and write, against the witness fixtures and our own
//! second program (`conformance/programs/second.hl`, which no reference
//! covers, so its documents are held to the rules of § The description and
//! § gRPC's `.proto` one by one), and against validators nobody here wrote
//! (Python `jsonschema` and `openapi-spec-validator` from `.peers/venv`,
//! `protoc`). A missing peer skips with a message, unless
//! `LIMEN_REQUIRE_PEERS=1`.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{json, Value};

// ── running hale ────────────────────────────────────────────────────────

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn hale_in(dir: Option<&Path>, args: &[&str]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hale"));
    cmd.args(args);
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    let out = cmd.output().expect("run hale");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn hale(args: &[&str]) -> Run {
    hale_in(None, args)
}

fn ok(args: &[&str]) -> String {
    let r = hale(args);
    assert_eq!(r.code, 0, "hale {}: {}", args.join(" "), r.stderr);
    r.stdout
}

fn doc(args: &[&str]) -> Value {
    let out = ok(args);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("hale {}: {e}\n{out}", args.join(" ")))
}

fn repo() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn second() -> String {
    repo()
        .join("conformance/programs/second.hl")
        .display()
        .to_string()
}

fn witness() -> Option<PathBuf> {
    let dir = repo().join("../shared/hale-witness");
    if dir.join("program.hl").is_file() {
        Some(dir)
    } else {
        eprintln!(
            "skipping: the witness fixtures are absent ({} not found)",
            dir.display()
        );
        None
    }
}

macro_rules! witness_or_skip {
    () => {
        match witness() {
            Some(d) => d,
            None => return,
        }
    };
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A fresh directory under the system's temporary one.
fn scratch(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "limen-hale-cli-{}-{}-{name}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The witness's description fixtures: (path, exposure, fixture).
fn witness_descriptions(dir: &Path) -> Vec<(PathBuf, String, Value)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if let Some(stem) = name.strip_suffix(".description.json") {
            let exposure = stem.split_once('.').unwrap().0.to_string();
            let fixture = read_json(&path);
            out.push((path, exposure, fixture));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// `--caller` for a fixture's caller: a Unix peer as its principal object,
/// a bearer by name.
fn caller_of(fixture: &Value) -> String {
    let p = &fixture["caller"]["principal"];
    if p["mode"] == "unix" {
        p.to_string()
    } else {
        p["name"].as_str().unwrap().to_string()
    }
}

// ── the witness ─────────────────────────────────────────────────────────

#[test]
fn check_api_prints_the_witness_documents() {
    let dir = witness_or_skip!();
    let program = dir.join("program.hl").display().to_string();
    let r = hale(&["check", "--api", &program]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        serde_json::from_str::<Value>(&r.stdout).unwrap(),
        read_json(&dir.join("inventory.json"))
    );
    // Law 6's notes, beside the members whose error is ClosureViolation.
    assert!(r.stderr.contains("note: rpc `Orders::place`: its error type is `ClosureViolation`, so a failure is the server error; a description carries no error schema for it"), "{}", r.stderr);
    assert!(
        r.stderr.contains("note: rpc `Ledger::rebalance`"),
        "{}",
        r.stderr
    );
    for (path, exposure, fixture) in witness_descriptions(&dir) {
        let holds: Vec<&str> = fixture["caller"]["roles"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap())
            .collect();
        let holds = holds.join(",");
        let caller = caller_of(&fixture);
        let ours = doc(&[
            "check",
            "--api",
            "--exposure",
            &exposure,
            "--caller",
            &caller,
            "--holds",
            &holds,
            &program,
        ]);
        assert_eq!(ours, fixture, "{}", path.display());
    }
    for surface in ["Public", "Admin"] {
        for form in ["openapi", "json-schema", "mcp"] {
            let ours = doc(&[
                "check",
                "--api",
                "--surface",
                surface,
                &format!("--{form}"),
                &program,
            ]);
            assert_eq!(
                ours,
                read_json(&dir.join(format!("{surface}.{form}.json"))),
                "{surface} {form}"
            );
        }
        let proto = ok(&["check", "--api", "--surface", surface, "--proto", &program]);
        assert_eq!(
            proto,
            std::fs::read_to_string(dir.join(format!("{surface}.proto"))).unwrap(),
            "{surface}.proto"
        );
    }
}

#[test]
fn a_held_role_no_row_requires_is_not_the_caller_s() {
    let dir = witness_or_skip!();
    let program = dir.join("program.hl").display().to_string();
    let d = doc(&[
        "check",
        "--api",
        "--exposure",
        "public",
        "--caller",
        "bob",
        "--holds",
        "operator,nobody",
        &program,
    ]);
    assert_eq!(d["caller"]["roles"], json!([]));
    let names: Vec<&str> = d["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Orders::place"]);
    assert!(
        d["schemas"].get("CancelOrder").is_none(),
        "only what the listed members name"
    );
}

#[test]
fn export_writes_the_bundle_and_is_the_same_from_any_checkout() {
    let dir = witness_or_skip!();
    let src = std::fs::read(dir.join("program.hl")).unwrap();
    // Two checkouts at different depths, exported from different working
    // directories with different relative paths.
    let a = scratch("shallow");
    let b = scratch("deep");
    let deep = b.join("x/y/z");
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(a.join("program.hl"), &src).unwrap();
    std::fs::write(deep.join("program.hl"), &src).unwrap();
    let ra = hale_in(
        Some(&a),
        &[
            "api",
            "export",
            "--surface",
            "Public",
            "--out",
            "bundle",
            "program.hl",
        ],
    );
    assert_eq!(ra.code, 0, "{}", ra.stderr);
    let out_b = b.join("elsewhere/bundle");
    let rb = hale_in(
        Some(&b),
        &[
            "api",
            "export",
            "--surface",
            "Public",
            "--out",
            &out_b.display().to_string(),
            "x/y/z/program.hl",
        ],
    );
    assert_eq!(rb.code, 0, "{}", rb.stderr);
    let names = [
        "Public.description.json",
        "Public.openapi.json",
        "Public.json-schema.json",
        "Public.mcp.json",
        "Public.proto",
        "DIGEST",
    ];
    let mut listed: Vec<String> = std::fs::read_dir(a.join("bundle"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    listed.sort();
    let mut expect: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    expect.sort();
    assert_eq!(listed, expect);
    for name in names {
        let x = std::fs::read(a.join("bundle").join(name)).unwrap();
        let y = std::fs::read(out_b.join(name)).unwrap();
        assert_eq!(x, y, "{name} differs between checkouts");
        let text = String::from_utf8(x).unwrap();
        for p in [
            a.display().to_string(),
            b.display().to_string(),
            "program.hl".to_string(),
        ] {
            assert!(!text.contains(&p), "{name} holds a path: {p}");
        }
    }
    // Each file is the form check --api prints, and the bundle's document
    // the inventory restricted to the surface.
    assert_eq!(
        read_json(&a.join("bundle/Public.openapi.json")),
        read_json(&dir.join("Public.openapi.json"))
    );
    assert_eq!(
        read_json(&a.join("bundle/Public.json-schema.json")),
        read_json(&dir.join("Public.json-schema.json"))
    );
    assert_eq!(
        read_json(&a.join("bundle/Public.mcp.json")),
        read_json(&dir.join("Public.mcp.json"))
    );
    assert_eq!(
        std::fs::read(a.join("bundle/Public.proto")).unwrap(),
        std::fs::read(dir.join("Public.proto")).unwrap()
    );
    let digest = std::fs::read_to_string(a.join("bundle/DIGEST")).unwrap();
    let lines: Vec<&str> = digest.lines().collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0], "fnv1a64:a8930d6e7998e986");
    assert!(lines[1].starts_with("hale "), "{digest}");
    let d = read_json(&a.join("bundle/Public.description.json"));
    let inventory = read_json(&dir.join("inventory.json"));
    assert_eq!(d["inventory"], 1);
    assert_eq!(
        d["surfaces"],
        json!([inventory["surfaces"][1]]),
        "Public alone"
    );
    let exposures: Vec<&str> = d["exposures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        exposures,
        ["partner", "public"],
        "the exposures that serve Public"
    );
    assert_eq!(d["hubs"], inventory["hubs"], "every hub of the program");
    let mut names: Vec<&String> = d["schemas"].as_object().unwrap().keys().collect();
    names.sort();
    assert_eq!(
        names,
        [
            "CancelOrder",
            "Cancelled",
            "Fill",
            "OrderError",
            "OrderReceipt",
            "PlaceOrder"
        ]
    );
}

#[test]
fn export_check_names_what_drifted() {
    let dir = witness_or_skip!();
    let program = dir.join("program.hl").display().to_string();
    let out = scratch("check");
    let bundle = out.display().to_string();
    assert_eq!(
        hale(&[
            "api",
            "export",
            "--surface",
            "Admin",
            "--out",
            &bundle,
            &program
        ])
        .code,
        0
    );
    let check = || {
        hale(&[
            "api",
            "export",
            "--surface",
            "Admin",
            "--check",
            &bundle,
            &program,
        ])
    };
    let r = check();
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (0, ""),
        "a fresh bundle is current"
    );
    // Another release wrote it: the version is provenance, not compared.
    std::fs::write(out.join("DIGEST"), "fnv1a64:40381db6685c9f75\nhale 9.9.9\n").unwrap();
    assert_eq!(check().code, 0);
    // A file edited, a file removed, a digest moved: each is named.
    let openapi = out.join("Admin.openapi.json");
    let mut text = std::fs::read_to_string(&openapi).unwrap();
    text.push(' ');
    std::fs::write(&openapi, text).unwrap();
    std::fs::remove_file(out.join("Admin.proto")).unwrap();
    std::fs::write(out.join("DIGEST"), "fnv1a64:0000000000000001\nhale 0.0.1\n").unwrap();
    let r = check();
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("digest moved: DIGEST names fnv1a64:0000000000000001, the surface is fnv1a64:40381db6685c9f75"), "{}", r.stderr);
    assert!(
        r.stderr.contains("differs: Admin.openapi.json"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("missing: Admin.proto"), "{}", r.stderr);
    assert!(!r.stderr.contains("Admin.mcp.json"), "{}", r.stderr);
    // --check writes nothing.
    assert!(!out.join("Admin.proto").exists());
    let empty = scratch("empty");
    let r = hale(&[
        "api",
        "export",
        "--surface",
        "Admin",
        "--check",
        &empty.display().to_string(),
        &program,
    ]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("missing: DIGEST")
            && r.stderr.contains("missing: Admin.description.json"),
        "{}",
        r.stderr
    );
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
}

#[test]
fn the_retired_structural_path_is_refused_with_its_replacement() {
    let dir = scratch("retired");
    let old = dir.join("old.hl");
    std::fs::write(
        &old,
        "type A { n: Int; }\nlocus Desk { fn close(a: A) -> A { return a; } }\n\
         main locus M {\n    params { desk: Desk = Desk { }; }\n    \
         bindings { api: unix(\"/run/desk.sock\"); }\n    run() { }\n}\n",
    )
    .unwrap();
    let r = hale(&["check", &old.display().to_string()]);
    assert_eq!(r.code, 1);
    // One diagnostic: its three lines, naming what replaced the entry.
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 3, "{}", r.stderr);
    assert!(
        lines[0].ends_with(&format!(
            "old.hl:5:16: {}",
            limen_core::hale::syntax::RETIRED_API_ENTRY
        )),
        "{}",
        r.stderr
    );
    assert!(lines[0].contains("api::serve("), "{}", r.stderr);
    let gated = dir.join("gated.hl");
    std::fs::write(
        &gated,
        "type A { n: Int; }\nlocus Desk { @gated fn close(a: A) -> A { return a; } }\n",
    )
    .unwrap();
    let r = hale(&["check", "--api", &gated.display().to_string()]);
    assert_eq!(r.code, 1);
    assert_eq!(r.stderr.lines().count(), 3, "{}", r.stderr);
    assert!(
        r.stderr.contains("gated.hl:2:14: `@gated` is retired"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("requires"), "{}", r.stderr);
}

#[test]
fn failures_and_usage() {
    let dir = scratch("bad");
    let bad = dir.join("bad.hl");
    std::fs::write(&bad, "role trader\napi A { }\n").unwrap();
    let r = hale(&["check", "--api", &bad.display().to_string()]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("bad.hl:2:1:"), "{}", r.stderr);
    assert!(r.stdout.is_empty());
    let second = second();
    for args in [
        vec!["check", "--api", "--exposure", "web", &second],
        vec!["check", "--api", "--surface", "Catalog", &second],
        vec![
            "check",
            "--api",
            "--surface",
            "Catalog",
            "--mcp",
            "--proto",
            &second,
        ],
        vec![
            "check",
            "--api",
            "--exposure",
            "web",
            "--caller",
            "ann",
            "--surface",
            "Catalog",
            "--mcp",
            &second,
        ],
        vec!["check", "--surface", "Catalog", "--mcp", &second],
        vec!["check", "--api", "--nope", &second],
        vec!["check", "--api"],
        vec!["api", "export", "--surface", "Catalog", &second],
        vec![
            "api",
            "export",
            "--surface",
            "Catalog",
            "--out",
            "a",
            "--check",
            "b",
            &second,
        ],
        vec!["frobnicate"],
        vec![],
    ] {
        let r = hale(&args);
        assert_eq!(r.code, 5, "hale {}: {}", args.join(" "), r.stderr);
        assert!(r.stderr.contains("Usage: hale"), "{}", r.stderr);
    }
    let r = hale(&[
        "check",
        "--api",
        "--exposure",
        "nope",
        "--caller",
        "ann",
        &second,
    ]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .contains("no exposure named `nope`; its exposures: live, probe, shop-hub, web"),
        "{}",
        r.stderr
    );
    let r = hale(&["check", "--api", "--surface", "Nope", "--openapi", &second]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .contains("no surface `Nope`; its surfaces: Catalog, Backoffice, second"),
        "{}",
        r.stderr
    );
    let r = hale(&[
        "check",
        "--api",
        "--exposure",
        "web",
        "--caller",
        "{\"mode\": \"bearer\", \"name\": \"x\", \"role\": 1}",
        &second,
    ]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("not `role`"), "{}", r.stderr);
    assert_eq!(hale(&["check", "/nonexistent/x.hl"]).code, 1);
    assert_eq!(hale(&["check", &second]).code, 0, "the check without --api");
}

// ── our second program ──────────────────────────────────────────────────

#[test]
fn the_second_program_s_inventory_is_refused_for_its_enum() {
    // Backoffice names the enum StockError as an error type, which the
    // JSON codec does not carry: the inventory is refused, never
    // approximated, naming the row.
    let r = hale(&["check", "--api", &second()]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains(
            "rpc `Store::restock`: its error is `StockError`, which the JSON codec does not carry"
        ),
        "{}",
        r.stderr
    );
    assert!(r.stdout.is_empty());
}

/// second.hl without its never-served `Backoffice` block.
fn second_served() -> PathBuf {
    let src = std::fs::read_to_string(second()).unwrap();
    let start = src.find("api Backoffice {").unwrap();
    let end = start + src[start..].find('}').unwrap() + 1;
    let dir = scratch("second");
    let path = dir.join("second.hl");
    std::fs::write(&path, format!("{}{}", &src[..start], &src[end..])).unwrap();
    path
}

#[test]
fn the_second_program_s_documents_hold_the_rules() {
    let file = second();
    let served = second_served().display().to_string();
    let inventory = doc(&["check", "--api", &served]);
    assert_eq!(inventory["app"], "Shop");
    let surfaces: Vec<&str> = inventory["surfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(surfaces, ["Catalog", "second"], "surfaces by name");
    let catalog = &inventory["surfaces"][0];
    let members: Vec<&str> = catalog["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        members,
        ["Store::lookup", "Store::reset", "Store::summary"],
        "members by name"
    );
    let reset = &catalog["members"][1];
    assert_eq!(reset["request"], Value::Null, "no request");
    assert_eq!(reset["response"], Value::Null, "returns ()");
    assert_eq!(reset["error"], "ClosureViolation");
    assert_eq!(
        reset["requires"],
        json!(["editor", "auditor"]),
        "a role written twice is listed once"
    );
    assert_eq!(
        catalog["members"][2]["request"],
        Value::Null,
        "a context alone is no request"
    );
    let schemas = &inventory["schemas"];
    assert_eq!(
        schemas["Item"]["properties"]["name"],
        json!({"type": "string"}),
        "json:\"name\" renames label"
    );
    assert!(schemas["Item"]["properties"].get("label").is_none());
    assert_eq!(
        schemas["Item"]["properties"]["size"],
        json!({"$ref": "#/schemas/Size"}),
        "a nested struct by reference"
    );
    assert_eq!(
        schemas["Item"]["properties"]["weight"],
        json!({"type": "integer", "x-hale-type": "Mass", "x-hale-unit": "q(gram)"})
    );
    assert_eq!(
        schemas["Item"]["properties"]["ratio"],
        json!({"type": "number"})
    );
    assert_eq!(
        schemas["Stocked"]["properties"]["count"],
        json!({"type": "integer"}),
        "an alias is what its chain ends at"
    );
    assert!(
        schemas.get("Size").is_some(),
        "nested structs reach the schemas"
    );
    let exposures: Vec<&str> = inventory["exposures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(exposures, ["live", "probe", "web"]);
    let live = &inventory["exposures"][0];
    assert_eq!(
        live["listener"],
        json!({"transport": "ws", "address": "0.0.0.0:7000"}),
        "a surface over the hub is at the hub's listener"
    );
    let probe = &inventory["exposures"][1];
    assert_eq!(
        probe["receivers"],
        json!([{"type": "Probe", "instance": "self.probe", "binding": "explicit", "pool": "pinned:probe"}])
    );
    assert_eq!(probe["principals"], json!({"source": "kernel"}));
    let web = &inventory["exposures"][2];
    assert_eq!(web["receivers"][0]["binding"], "inferred");
    assert_eq!(web["receivers"][0]["pool"], "shop");
    let hub = &inventory["hubs"][0];
    assert_eq!(hub["name"], "shop-hub");
    let topics: Vec<&str> = hub["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["topic"].as_str().unwrap())
        .collect();
    assert_eq!(topics, ["Alerts", "Moves"], "streams by topic");
    assert!(hub["streams"][1]["loss"]
        .as_str()
        .unwrap()
        .contains("drop_new sheds the frame being published"));
    assert_eq!(hub["streams"][1]["requires"], json!([]));

    // Descriptions for callers of every transport.
    let web_ann = doc(&[
        "check",
        "--api",
        "--exposure",
        "web",
        "--caller",
        "ann",
        "--holds",
        "viewer",
        &file,
    ]);
    assert_eq!(
        web_ann["exposure"],
        format!("Catalog@{}/web", catalog["digest"].as_str().unwrap())
    );
    assert_eq!(
        web_ann["listener"],
        json!({"transport": "http", "address": "127.0.0.1:0"}),
        "offline, a bind as written"
    );
    assert_eq!(
        web_ann["caller"],
        json!({"principal": {"mode": "bearer", "name": "ann"}, "roles": ["viewer"]})
    );
    let listed: Vec<&str> = web_ann["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["Store::lookup", "Store::summary"]);
    let mut names: Vec<&String> = web_ann["schemas"].as_object().unwrap().keys().collect();
    names.sort();
    assert_eq!(
        names,
        ["Item", "Lookup", "Size", "Stocked", "Summary"],
        "what the listed members reach"
    );
    assert_eq!(web_ann["outcomes"]["transport"], "http");
    let hub_ann = doc(&[
        "check",
        "--api",
        "--exposure",
        "shop-hub",
        "--caller",
        "ann",
        "--holds",
        "auditor",
        &file,
    ]);
    assert_eq!(hub_ann["surface"], Value::Null);
    let streams: Vec<&str> = hub_ann["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["topic"].as_str().unwrap())
        .collect();
    assert_eq!(streams, ["Moves"], "Alerts needs viewer as well");
    assert_eq!(
        hub_ann["schemas"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["Moved"]
    );
    let live_ed = doc(&[
        "check",
        "--api",
        "--exposure",
        "live",
        "--caller",
        "ed",
        "--holds",
        "editor,auditor,viewer",
        &file,
    ]);
    assert_eq!(
        live_ed["outcomes"]["transport"], "unix",
        "replies over a hub carry the Unix reply's fields"
    );
    assert_eq!(
        live_ed["streams"].as_array().unwrap().len(),
        2,
        "the streams of the hub at its listener"
    );
    let probe = doc(&[
        "check",
        "--api",
        "--exposure",
        "probe",
        "--caller",
        r#"{"pid": 7, "name": "uid:0", "mode": "unix", "uid": 0}"#,
        &file,
    ]);
    assert_eq!(
        probe["caller"]["principal"],
        json!({"mode": "unix", "name": "uid:0", "uid": 0, "pid": 7})
    );
    let listed: Vec<&str> = probe["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["Probe::ping"], "echo requires auditor");
    assert_eq!(
        probe["members"][0]["response"],
        json!({"type": "integer"}),
        "a scalar response inline"
    );

    // The projections.
    let openapi = doc(&["check", "--api", "--surface", "Catalog", "--openapi", &file]);
    let reset = &openapi["paths"]["/call/Store::reset"]["post"];
    assert!(reset.get("requestBody").is_none(), "no request, no body");
    assert_eq!(
        reset["responses"]["200"],
        json!({"description": "result: the handler returned"}),
        "() has no response schema"
    );
    assert!(reset["responses"].get("500").is_some() && reset["responses"].get("422").is_none());
    let lookup = &openapi["paths"]["/call/Store::lookup"]["post"];
    assert!(
        lookup["responses"].get("500").is_none(),
        "a row that cannot violate has no server error"
    );
    assert!(openapi["components"]["schemas"].get("Size").is_some());
    assert!(openapi["components"]["schemas"]
        .get("hale.Refusal")
        .is_some());
    let schema = doc(&[
        "check",
        "--api",
        "--surface",
        "Catalog",
        "--json-schema",
        &file,
    ]);
    assert_eq!(
        schema["$defs"]["Stocked"]["properties"]["item"],
        json!({"$ref": "#/$defs/Item"})
    );
    assert_eq!(
        schema["x-hale-members"]["Store::reset"]["response"],
        Value::Null
    );
    let mcp = doc(&["check", "--api", "--surface", "Catalog", "--mcp", &file]);
    let lookup = &mcp["tools"][0];
    assert_eq!(lookup["name"], "Store__lookup");
    assert_eq!(
        lookup["inputSchema"]["properties"]["id"],
        json!({"type": "integer", "x-hale-type": "ItemId"})
    );
    let summary = &mcp["tools"][2];
    assert_eq!(
        summary["inputSchema"],
        json!({"type": "object", "properties": {}}),
        "no request: an empty object"
    );
    assert!(mcp["tools"][1]["description"]
        .as_str()
        .unwrap()
        .contains("returns nothing; a violation is the server error"));
    let mcp2 = doc(&["check", "--api", "--surface", "second", "--mcp", &file]);
    let echo = &mcp2["tools"][0];
    assert_eq!(echo["name"], "Probe__echo");
    assert!(echo["inputSchema"].get("$defs").is_none());
    let proto = ok(&["check", "--api", "--surface", "Catalog", "--proto", &file]);
    assert!(
        proto.contains("  rpc Store__reset(HaleEmpty) returns (HaleEmpty);\n"),
        "{proto}"
    );
    assert!(
        proto.contains("  rpc Store__summary(HaleEmpty) returns (Summary);\n"),
        "{proto}"
    );
    assert!(proto.contains("message HaleEmpty {}\n"), "{proto}");
    assert!(
        proto.contains("  optional string name = 2;\n"),
        "a json tag names the proto field: {proto}"
    );
    assert!(
        proto.contains("  Size size = 4;\n"),
        "a record field is a message field: {proto}"
    );
    assert!(proto.contains("  optional double ratio = 5;\n"), "{proto}");
    assert!(
        proto.contains("  optional int64 weight = 3; // Hale: Mass, q(gram)\n"),
        "{proto}"
    );
    assert!(proto.contains("  // requires editor, auditor\n"), "{proto}");
    let proto2 = ok(&["check", "--api", "--surface", "second", "--proto", &file]);
    assert!(
        proto2.contains("  rpc Probe__ping(HaleEmpty) returns (Probe__pingResponse);\n"),
        "{proto2}"
    );
    assert!(proto2.contains("// The response of `Probe::ping`, a scalar.\nmessage Probe__pingResponse {\n  optional int64 value = 1;\n}\n"), "{proto2}");
}

// ── peers ───────────────────────────────────────────────────────────────

fn required() -> bool {
    std::env::var("LIMEN_REQUIRE_PEERS").as_deref() == Ok("1")
}

fn missing(what: &str) {
    assert!(
        !required(),
        "peer missing ({what}); run scripts/install-peers"
    );
    eprintln!("skipped: peer missing ({what}); run scripts/install-peers");
}

/// Every document we can make of the witness and of second.hl, by kind.
fn all_documents() -> (Value, Option<Value>, Vec<(String, PathBuf)>) {
    let mut described = Vec::new();
    let mut openapi = Vec::new();
    let mut schemas = Vec::new();
    let mut fixture_transport = Vec::new();
    let mut protos = Vec::new();
    let mut projections = |file: &str, surface: &str, tag: &str| {
        openapi.push(json!({"name": format!("{tag} {surface}.openapi"), "doc": doc(&["check", "--api", "--surface", surface, "--openapi", file])}));
        schemas.push(json!({"name": format!("{tag} {surface}.json-schema"), "doc": doc(&["check", "--api", "--surface", surface, "--json-schema", file])}));
        let mcp = doc(&["check", "--api", "--surface", surface, "--mcp", file]);
        for t in mcp["tools"].as_array().unwrap() {
            schemas.push(json!({"name": format!("{tag} {surface} tool {}", t["name"]), "doc": t["inputSchema"]}));
        }
        let dir = scratch("proto");
        let path = dir.join(format!("{surface}.proto"));
        std::fs::write(
            &path,
            ok(&["check", "--api", "--surface", surface, "--proto", file]),
        )
        .unwrap();
        protos.push((format!("{tag} {surface}"), path));
    };
    let schema = witness().map(|dir| {
        let program = dir.join("program.hl").display().to_string();
        described.push(json!({"name": "witness inventory", "doc": doc(&["check", "--api", &program])}));
        for (path, exposure, fixture) in witness_descriptions(&dir) {
            let caller = caller_of(&fixture);
            for holds in ["", "trader", "operator", "trader,operator"] {
                described.push(json!({
                    "name": format!("witness {} --holds {holds}", path.display()),
                    "doc": doc(&["check", "--api", "--exposure", &exposure, "--caller", &caller, "--holds", holds, &program]),
                }));
            }
        }
        for s in ["Public", "Admin"] {
            projections(&program, s, "witness");
        }
        read_json(&dir.join("api-description.schema.json"))
    });
    let file = second();
    let served = second_served().display().to_string();
    described.push(json!({"name": "second inventory", "doc": doc(&["check", "--api", &served])}));
    for (exposure, caller) in [
        ("web", "ann"),
        ("live", "ed"),
        (
            "probe",
            r#"{"mode":"unix","name":"uid:0","uid":0,"gid":0,"pid":1}"#,
        ),
        ("shop-hub", "ann"),
    ] {
        for holds in ["", "viewer", "editor,auditor", "viewer,editor,auditor"] {
            described.push(json!({
                "name": format!("second {exposure} {holds}"),
                "doc": doc(&["check", "--api", "--exposure", exposure, "--caller", caller, "--holds", holds, &file]),
            }));
        }
    }
    for s in ["Catalog", "second"] {
        projections(&file, s, "second");
    }
    let bundle = scratch("bundle");
    assert_eq!(
        hale(&[
            "api",
            "export",
            "--surface",
            "Catalog",
            "--out",
            &bundle.display().to_string(),
            &file
        ])
        .code,
        0
    );
    described.push(json!({"name": "second Catalog.description.json", "doc": read_json(&bundle.join("Catalog.description.json"))}));
    // The fixture transport's description: listener test, Unix outcomes.
    let dir = scratch("fixture");
    let fixture = dir.join("fixture.hl");
    std::fs::write(&fixture, "role r;\ntype A { n: Int; }\napi T { rpc Box::get requires: [r]; }\nlocus Box { fn get(a: A) -> A { return a; } }\nlocus Grants { fn holds(p: std::api::Principal, r: String) -> Bool { return true; } }\nmain locus M {\n  params { b: Box = Box { }; g: Grants = Grants { }; }\n  run() { let t = api::serve(T, std::api::test::Rpc { roles: self.g }, as: \"fixture\", bound: 4, on_full: refuse); }\n}\n").unwrap();
    let d = doc(&[
        "check",
        "--api",
        "--exposure",
        "fixture",
        "--caller",
        "ann",
        "--holds",
        "r",
        &fixture.display().to_string(),
    ]);
    assert_eq!(
        d["listener"],
        json!({"transport": "test", "address": "in-process"})
    );
    assert_eq!(d["outcomes"]["transport"], "unix");
    fixture_transport.push(json!({"name": "fixture transport", "doc": d}));
    let job = json!({
        "description_schema": schema,
        "described": described,
        "fixture_transport": fixture_transport,
        "openapi": openapi,
        "json_schema": schemas,
    });
    (job, None, protos)
}

#[test]
fn the_documents_pass_jsonschema_and_openapi_spec_validator() {
    let python = repo().join(".peers/venv/bin/python");
    if !python.exists() {
        return missing(&format!("{} is not there", python.display()));
    }
    let (job, _, _) = all_documents();
    assert!(job["described"].as_array().unwrap().len() > 40);
    let mut child = Command::new(&python)
        .arg(repo().join("drivers/tests/peer/hale_docs_check.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the checker");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(job.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    if out.status.code() == Some(77) {
        return missing(stderr.trim());
    }
    assert!(out.status.success(), "{stdout}{stderr}");
    eprintln!("{}", stdout.trim());
}

#[test]
fn the_proto_files_compile_with_protoc() {
    if Command::new("protoc").arg("--version").output().is_err() {
        return missing("protoc is not on PATH");
    }
    let (_, _, protos) = all_documents();
    assert!(protos.len() >= 2);
    for (name, path) in protos {
        let dir = path.parent().unwrap();
        let out = Command::new("protoc")
            .arg(format!("--proto_path={}", dir.display()))
            .arg(format!(
                "--descriptor_set_out={}",
                dir.join("set.pb").display()
            ))
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name}: protoc: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn api_tools_lists_a_locus_s_rows_as_declarations_the_toolkit_generates_from() {
    let desk = repo()
        .join("conformance/programs/desk.hl")
        .display()
        .to_string();
    let listing = doc(&["api", "tools", "--locus", "Orders", &desk]);
    let read = limen_core::flow::tool::Listing::from_json(&listing).expect("a listing");
    let names: Vec<String> = read
        .tools
        .iter()
        .map(|t| t.identity().to_string())
        .collect();
    assert_eq!(
        names,
        ["hale.api@0/Orders.cancel", "hale.api@0/Orders.place"]
    );
    // `flow toolkit rust` generates an implementation's types from it.
    let dir = scratch("api-tools");
    let file = dir.join("orders.json");
    std::fs::write(&file, listing.to_string()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_flow"))
        .args(["toolkit", "rust"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let code = String::from_utf8_lossy(&out.stdout);
    assert!(code.contains("pub struct PlaceOrder {"), "{code}");
    assert!(code.contains("fn place("), "{code}");
    let r = hale(&["api", "tools", "--locus", "Tokens", &desk]);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        "hale api tools: no surface of the program has a row of the locus `Tokens`\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn serve_without_handlers_names_each_thing_missing_and_exits_2() {
    let desk = repo()
        .join("conformance/programs/desk.hl")
        .display()
        .to_string();
    let r = hale(&["serve", &desk, "--check-config"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    for missing in [
        "hale serve: the program's exposures read the source `bearer`: give [sources.bearer]",
        "hale serve: the receiver instance `orders` (Orders) has no handler: give [handlers.orders] command = [...]",
        "hale serve: the receiver instance `ledger` (Ledger) has no handler",
    ] {
        assert!(r.stderr.contains(missing), "{missing}:\n{}", r.stderr);
    }
    let r = hale(&["serve", &desk, "--bind", "nowhere"]);
    assert_eq!(r.code, 5, "{}", r.stderr);
    assert!(r.stderr.contains("is NAME=ADDR"), "{}", r.stderr);
    let r = hale(&["serve", "--help"]);
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains("--check-config"), "{}", r.stdout);
}

// ── a program of two files ──────────────────────────────────────────────

/// A program that imports a library from a folder beside it: `hale check`,
/// `hale check --api` and `hale api export` read both files, the imported
/// type is `lib::Item` in every document (§ The determinism rule) and
/// `lib_Item` in the `.proto`, no document holds a path, the library's
/// own surface exports as `lib::Public` (its `.proto` compiles with
/// protoc), an imported main locus the program constructs is refused with
/// the spec's words, and an import that cannot be read is refused at the
/// `import`; each refusal exits 1.
#[test]
fn a_program_of_two_files() {
    let dir = scratch("imports");
    std::fs::create_dir_all(dir.join("lib")).unwrap();
    std::fs::write(
        dir.join("lib/lib.hl"),
        "role trader;\n\
         unit cent;\n\
         type Money = quantity Int in cent;\n\
         type Item { sku: String; price: Money; }\n\
         locus Orders { fn place(i: Item) -> Item { return i; } }\n\
         api Public { rpc Orders::place requires: [trader]; }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("app.hl"),
        "import \"lib/lib.hl\" as lib;\n\
         type Ack { ok: Bool; }\n\
         locus Shop { fn buy(i: lib::Item) -> Ack { return Ack { ok: true }; } }\n\
         api Front { rpc Shop::buy requires: [trader]; }\n\
         main locus App {\n\
         params { shop: Shop = Shop { }; orders: lib::Orders = lib::Orders { }; }\n\
         run() {\n\
         let front = api::serve(Front, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"front\", bound: 8, on_full: refuse);\n\
         let public = api::serve(lib::Public, unix::Rpc { path: \"/tmp/p\" }, as: \"public\", bound: 8, on_full: refuse);\n\
         front.stop(); public.stop();\n\
         } }\n",
    )
    .unwrap();
    let app = dir.join("app.hl").display().to_string();
    let r = hale(&["check", &app]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // From another working directory, by a relative path: the import is
    // resolved against the importing file's folder.
    let r = hale_in(Some(&dir.join("lib")), &["check", "../app.hl"]);
    assert_eq!(r.code, 0, "{}", r.stderr);

    let inventory = doc(&["check", "--api", &app]);
    let text = inventory.to_string();
    assert!(text.contains("\"lib::Item\""), "{text}");
    assert!(text.contains("lib::Orders::place"), "{text}");
    assert!(!text.contains("lib/lib.hl"), "{text}");
    let openapi = doc(&["check", "--api", "--surface", "Front", "--openapi", &app]);
    assert!(
        openapi["components"]["schemas"]["lib::Item"].is_object(),
        "{openapi}"
    );

    let out = dir.join("bundle");
    let r = hale(&[
        "api",
        "export",
        "--surface",
        "Front",
        "--out",
        &out.display().to_string(),
        &app,
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let openapi = read_json(&out.join("Front.openapi.json"));
    let schemas = &openapi["components"]["schemas"];
    assert!(schemas["lib::Item"].is_object(), "{openapi}");
    assert_eq!(
        schemas["lib::Item"]["properties"]["price"]["x-hale-type"],
        "lib::Money"
    );
    assert!(openapi
        .to_string()
        .contains("#/components/schemas/lib::Item"));
    let schema = read_json(&out.join("Front.json-schema.json")).to_string();
    assert!(schema.contains("\"lib::Item\""), "{schema}");
    let proto = std::fs::read_to_string(out.join("Front.proto")).unwrap();
    assert!(proto.contains("message lib_Item {"), "{proto}");
    for name in [
        "Front.description.json",
        "Front.openapi.json",
        "Front.mcp.json",
    ] {
        let t = std::fs::read_to_string(out.join(name)).unwrap();
        assert!(!t.contains("lib/lib.hl") && !t.contains(&dir.display().to_string()));
    }

    // The library's own surface, served by the program, exports under its
    // program name; its `.proto` service is `lib_Public`, which protoc
    // compiles.
    let r = hale(&[
        "api",
        "export",
        "--surface",
        "lib::Public",
        "--out",
        &out.display().to_string(),
        &app,
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let proto = std::fs::read_to_string(out.join("lib::Public.proto")).unwrap();
    assert!(proto.contains("service lib_Public {"), "{proto}");
    assert!(
        proto.contains("rpc lib__Orders__place(lib_Item) returns (lib_Item);"),
        "{proto}"
    );
    if Command::new("protoc").arg("--version").output().is_ok() {
        std::fs::write(dir.join("public.proto"), &proto).unwrap();
        let r = Command::new("protoc")
            .arg(format!("--proto_path={}", dir.display()))
            .arg("--descriptor_set_out=/dev/null")
            .arg(dir.join("public.proto"))
            .output()
            .unwrap();
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    } else {
        missing("protoc is not on PATH");
    }

    // A main locus the library declares with a serve site, constructed by
    // the program: refused where the program writes it.
    std::fs::write(
        dir.join("head.hl"),
        "import \"lib/lib.hl\" as lib;\n\
         main locus Head {\n\
         params { orders: lib::Orders = lib::Orders { }; }\n\
         run() { let p = api::serve(lib::Public, unix::Rpc { path: \"/tmp/h\" }, as: \"p\", bound: 8, on_full: refuse); p.stop(); }\n\
         }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("wraps.hl"),
        "import \"head.hl\" as app;\nfn main() { app::Head { }; }\n",
    )
    .unwrap();
    let wraps = dir.join("wraps.hl").display().to_string();
    let r = hale(&["check", &wraps]);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        format!(
            "{wraps}:2:13: api::serve in app::Head, a main locus the program imports: only the entry program’s main locus serves; serve from the entry’s main locus or hold the exposure there\n\
             fn main() {{ app::Head {{ }}; }}\n\
             \x20           ^^^^^^^^^\n"
        )
    );

    // An import that cannot be read.
    std::fs::remove_file(dir.join("lib/lib.hl")).unwrap();
    let r = hale(&["check", &app]);
    assert_eq!(r.code, 1);
    let lib = dir.join("lib/lib.hl").display().to_string();
    assert!(
        r.stderr.starts_with(&format!(
            "{app}:1:1: import of `{lib}`: cannot read it: No such file or directory"
        )),
        "{}",
        r.stderr
    );
}
