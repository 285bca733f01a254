//! The documents of Hale contracts against the witness fixtures
//! (`../shared/hale-witness/`): the inventory, every description for its
//! caller (offline from `--holds`, and live through the runtime's describer
//! fed what admission computes), the three JSON projections as values and
//! the `.proto` byte for byte. Skips with a message when the fixtures are
//! absent.

use std::path::{Path, PathBuf};

use limen_core::hale::docs::{self, describe_offline, ExposureDescriber};
use limen_core::hale::model::{parse_program, Instance, Program, TransportKind};
use limen_core::hale::runtime::fixture::bearer;
use limen_core::hale::runtime::*;
use limen_core::hale::syntax::ast::Expr;
use serde_json::Value;

fn witness() -> Option<PathBuf> {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/hale-witness"
    ));
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

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&read(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn program(dir: &Path) -> Program {
    parse_program("program.hl", &read(&dir.join("program.hl"))).unwrap_or_else(|d| panic!("{d}"))
}

/// The description fixtures: (file, exposure, caller file-part).
fn descriptions(dir: &Path) -> Vec<(PathBuf, String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if let Some(stem) = name.strip_suffix(".description.json") {
            let (exposure, caller) = stem.split_once('.').unwrap();
            out.push((path.clone(), exposure.to_string(), caller.to_string()));
        }
    }
    out.sort();
    assert!(out.len() >= 8, "the witness has eight descriptions");
    out
}

/// The role source a main-locus param of the witness is: its `Grants {
/// role: "holder" }` literal, each field a role its holder holds (the
/// witness's `Grants::holds` is `p.name == self.<role>`).
fn grants(program: &Program, source: &str) -> RoleTable {
    let param = source.strip_prefix("self.").unwrap();
    let main = program.main_locus().unwrap();
    let literal = main.param(param).unwrap().literal().unwrap();
    let mut table = RoleTable::new();
    if let Expr::Struct { fields, .. } = literal {
        for f in fields {
            if let Some(name) = f.value.str_value().filter(|n| !n.is_empty()) {
                table = table.grant(name, &f.name.name);
            }
        }
    }
    table
}

/// The principal a fixture's caller is, as the exposure would establish it.
fn caller_arg(fixture: &Value) -> String {
    let p = &fixture["caller"]["principal"];
    if p["mode"] == "unix" {
        p.to_string()
    } else {
        p["name"].as_str().unwrap().to_string()
    }
}

#[test]
fn the_inventory_is_the_fixture() {
    let dir = witness_or_skip!();
    let ours = docs::inventory(&program(&dir)).unwrap();
    assert_eq!(ours, json(&dir.join("inventory.json")));
}

#[test]
fn every_offline_description_is_its_fixture() {
    let dir = witness_or_skip!();
    let p = program(&dir);
    for (path, exposure, _) in descriptions(&dir) {
        let fixture = json(&path);
        // --holds: what the exposure's role source grants the caller.
        let source = if let Some(e) = p.exposure(&exposure) {
            e.roles.text()
        } else {
            p.hub(&exposure).unwrap().literal.roles.text()
        };
        let table = grants(&p, &source);
        let principal = Principal::from_json(&fixture["caller"]["principal"]).unwrap();
        let holds: Vec<String> = ["trader", "operator"]
            .iter()
            .filter(|r| table.holds(&principal, r))
            .map(|r| r.to_string())
            .collect();
        let ours = describe_offline(&p, &exposure, &caller_arg(&fixture), &holds).unwrap();
        assert_eq!(ours, fixture, "{}", path.display());
    }
}

/// An exposure of the witness served over the fixture transport: its rows,
/// its receivers, its sources, and the model's describer.
fn served(p: &Program, name: &str) -> FixtureRpc {
    let e = p.exposure(name).unwrap();
    let surface = p.surface(e.surface.as_deref().unwrap()).unwrap();
    let receivers: Vec<String> = e.receivers.iter().map(|r| r.instance.text()).collect();
    let members = surface
        .rows
        .iter()
        .map(|row| MemberSpec {
            name: row.member.clone(),
            receiver: e.receivers.iter().position(|r| r.ty == row.locus).unwrap(),
            requires: row.requires.iter().map(|r| r.name.clone()).collect(),
        })
        .collect();
    let spec = ExposureSpec {
        name: name.to_string(),
        surface: surface.name.clone(),
        digest: p.surface_digest(&surface.name).unwrap().to_string(),
        via: e.listener.as_ref().unwrap().transport.as_str().to_string(),
        members,
        receivers: receivers.clone(),
        bound: e.bound.unwrap() as usize,
        hierarchy: RoleHierarchy::flat(),
        limits: ExposureLimits::default(),
    };
    let bearer: Option<Box<dyn BearerSource + Send>> =
        if e.listener.as_ref().unwrap().transport == TransportKind::Unix {
            None
        } else {
            Some(Box::new(
                TokenTable::new(Some("no such token"))
                    .with("t-alice", "alice")
                    .with("t-bob", "bob")
                    .with("t-carol", "carol")
                    .with("t-dave", "dave"),
            ))
        };
    struct NoCodec;
    impl PayloadCodec for NoCodec {
        fn decode(&self, _: usize, _: &[u8]) -> Result<Value, String> {
            Err("wrong_type: payload".into())
        }
    }
    let describer = ExposureDescriber::new(p, name, None).unwrap();
    let exposure = Exposure::new(
        spec,
        bearer,
        Box::new(grants(p, &e.roles.text())),
        Box::new(NoCodec),
        Box::new(describer),
    );
    struct Idle;
    impl limen_core::hale::runtime::Receiver for Idle {
        fn call(&mut self, _: &str, _: &Value, _: &ServedContext) -> Completion {
            Completion::Violated
        }
    }
    let idle: Vec<Box<dyn limen_core::hale::runtime::Receiver + Send>> =
        receivers.iter().map(|_| Box::new(Idle) as _).collect();
    assert!(e
        .receivers
        .iter()
        .all(|r| matches!(r.instance, Instance::Param(_))));
    FixtureRpc::new(exposure, idle)
}

#[test]
fn every_live_description_is_its_fixture() {
    let dir = witness_or_skip!();
    let p = program(&dir);
    for (path, exposure, _) in descriptions(&dir) {
        let fixture = json(&path);
        let principal = Principal::from_json(&fixture["caller"]["principal"]).unwrap();
        let doc: Value = if p.exposure(&exposure).is_some() {
            let mut rpc = served(&p, &exposure);
            let credential = if &*principal.mode == "unix" {
                let field = |k: &str| principal.fields.iter().find(|(f, _)| f == k).unwrap().1;
                Credential::Peer(PeerCredentials {
                    uid: field("uid"),
                    gid: field("gid"),
                    pid: field("pid"),
                    groups: None,
                })
            } else {
                bearer(&format!("t-{}", principal.name))
            };
            rpc.describe(1, credential);
            let line: Value = serde_json::from_str(&rpc.outcome(1).unwrap()).unwrap();
            assert_eq!(line["ok"], true, "{line}");
            line["value"].clone()
        } else {
            // A hub's exposure: the roles its role source grants, read as
            // admission reads them.
            let hub = p.hub(&exposure).unwrap();
            let table = grants(&p, &hub.literal.roles.text());
            let describer = ExposureDescriber::new(&p, &exposure, None).unwrap();
            let held = HeldRoles::read(&table, &principal);
            let roles: Vec<String> = describer
                .plan()
                .required_roles()
                .iter()
                .filter(|r| held.holds(&table, &RoleHierarchy::flat(), &principal, r))
                .cloned()
                .collect();
            let bytes = describer.describe(&principal, &roles, &[]);
            serde_json::from_slice(&bytes).unwrap()
        };
        assert_eq!(doc, fixture, "{}", path.display());
    }
}

#[test]
fn a_live_description_is_compact_in_the_schema_s_key_order() {
    let dir = witness_or_skip!();
    let p = program(&dir);
    let d = ExposureDescriber::new(&p, "public", Some("127.0.0.1:41234")).unwrap();
    let bytes = d.describe(&Principal::bearer("alice"), &["trader".into()], &[0, 1]);
    let text = String::from_utf8(bytes).unwrap();
    assert!(text.starts_with(r#"{"description":1,"exposure":"Public@fnv1a64:a8930d6e7998e986/public","name":"public","surface":"Public","digest":"#), "{text}");
    // Compact: exactly what a compact writer makes of the value it reads as.
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(text, serde_json::to_string(&v).unwrap());
    assert!(!text.contains('\n'));
    // A bind of port 0 is described by the port the kernel gave.
    assert_eq!(v["listener"]["address"], "127.0.0.1:41234");
}

#[test]
fn the_projections_are_the_fixtures() {
    let dir = witness_or_skip!();
    let p = program(&dir);
    for surface in ["Public", "Admin"] {
        let at = |form: &str| dir.join(format!("{surface}.{form}"));
        assert_eq!(
            docs::openapi(&p, surface).unwrap(),
            json(&at("openapi.json")),
            "{surface} openapi"
        );
        assert_eq!(
            docs::json_schema(&p, surface).unwrap(),
            json(&at("json-schema.json")),
            "{surface} json-schema"
        );
        assert_eq!(
            docs::mcp(&p, surface).unwrap(),
            json(&at("mcp.json")),
            "{surface} mcp"
        );
        let ours = docs::proto(&p, surface).unwrap();
        let theirs = read(&at("proto"));
        if ours != theirs {
            for (i, (a, b)) in ours.lines().zip(theirs.lines()).enumerate() {
                assert_eq!(a, b, "{surface}.proto line {}", i + 1);
            }
            panic!(
                "{surface}.proto: {} lines, the fixture {}",
                ours.lines().count(),
                theirs.lines().count()
            );
        }
    }
}

#[test]
fn mcp_tools_for_each_caller_are_the_projections_tools() {
    let dir = witness_or_skip!();
    let p = program(&dir);
    let projection = json(&dir.join("Public.mcp.json"));
    let all = projection["tools"].as_array().unwrap();
    // alice holds trader under public: both tools; bob holds nothing: the
    // one that requires no role. From her served description (the bridge)
    // and from the live MCP describer alike.
    let public = p.exposure("public").unwrap();
    let spec = limen_core::hale::serving::exposure_spec(&p, public, "mcp").unwrap();
    let live = docs::McpDescriber::new(&p, public).unwrap();
    for (caller, names) in [
        ("alice", &["Orders__cancel", "Orders__place"][..]),
        ("bob", &["Orders__place"][..]),
    ] {
        let expected: Vec<&Value> = all
            .iter()
            .filter(|t| names.contains(&t["name"].as_str().unwrap()))
            .collect();
        let doc = json(&dir.join(format!("public.{caller}.description.json")));
        let bridged = docs::tools_from_description(&doc);
        assert_eq!(bridged.iter().collect::<Vec<_>>(), expected, "{caller}");
        let members: Vec<usize> = doc["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| spec.member_index(m["name"].as_str().unwrap()).unwrap())
            .collect();
        let listed: Value =
            serde_json::from_slice(&live.describe(&Principal::bearer(caller), &[], &members))
                .unwrap();
        assert_eq!(
            listed["tools"]
                .as_array()
                .unwrap()
                .iter()
                .collect::<Vec<_>>(),
            expected,
            "{caller} live"
        );
    }
}
