//! Shapes, hash inputs and digests, against the witness fixtures
//! (`../shared/hale-witness/`: `program.hl`, `digest.md`, `inventory.json`)
//! and against our own second program (`conformance/programs/second.hl`),
//! folded by hand below.
//!
//! The witness tests read `digest.md` and `inventory.json` themselves, so
//! what they hold the model to is the fixture, not numbers copied here; they
//! skip with a message on stderr when `../shared` is absent.

use std::collections::BTreeMap;
use std::path::PathBuf;

use limen_core::hale::digest::{fnv1a64, hex16, Digest};
use limen_core::hale::model::{
    parse_program, Binding, ContextKind, Direction, Exposure, Handler, Instance, Program, Resolved,
    Source, TransportKind,
};
use limen_core::hale::syntax::ast::TypeExpr;
use serde_json::Value;

// ── fixtures ────────────────────────────────────────────────────────────

fn witness_dir() -> Option<PathBuf> {
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
        match witness_dir() {
            Some(d) => d,
            None => return,
        }
    };
}

fn read(path: PathBuf) -> String {
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn witness_program(dir: &std::path::Path) -> (String, Program) {
    let src = read(dir.join("program.hl"));
    let program = parse_program("program.hl", &src).unwrap_or_else(|d| panic!("{d}"));
    (src, program)
}

/// A type expression naming `name`, as a row would.
fn named(name: &str) -> TypeExpr {
    let f = limen_core::hale::syntax::parse("t.hl", &format!("type T = {name};")).unwrap();
    match &f.items[0] {
        limen_core::hale::syntax::ast::Item::Type(t) => match &t.body {
            limen_core::hale::syntax::ast::TypeBody::Alias(ty) => ty.clone(),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

/// The blocks of `digest.md`: the shapes block, each hash input with the
/// digest the text states after it, and the "before violation" digests.
struct DigestMd {
    /// (type, shape, shape hash), one per line of the shapes block.
    shapes: Vec<(String, String, String)>,
    /// input name (`Public`, `Admin`, `hub fills`) → (bytes, digest).
    inputs: BTreeMap<String, (Vec<u8>, Digest)>,
    /// surface name → (digest, byte count), from the last section.
    before: BTreeMap<String, (Digest, usize)>,
}

/// The lines of the first ```text fence after `at`, and where it ends.
fn fence_after(text: &str, at: usize) -> (Vec<&str>, usize) {
    let open = at + text[at..].find("```text\n").expect("a ```text fence") + "```text\n".len();
    let close = open + text[open..].find("```").expect("a closing fence");
    (text[open..close].lines().collect(), close + 3)
}

/// The first `fnv1a64:` digest after `at`.
fn digest_after(text: &str, at: usize) -> (Digest, usize) {
    let i = at + text[at..].find("fnv1a64:").expect("a digest");
    let d = Digest::parse(&text[i..i + "fnv1a64:".len() + 16]).expect("a well-formed digest");
    (d, i + 24)
}

fn read_digest_md(text: &str) -> DigestMd {
    let at = text.find("<!-- shapes:").expect("the shapes block");
    let (lines, _) = fence_after(text, at);
    let shapes = lines
        .iter()
        .map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(cols.len(), 3, "a shapes line is type, shape, hash: {l}");
            (
                cols[0].to_string(),
                cols[1].to_string(),
                cols[2].to_string(),
            )
        })
        .collect();
    let mut inputs = BTreeMap::new();
    let mut from = 0;
    while let Some(i) = text[from..].find("<!-- input: ") {
        let start = from + i + "<!-- input: ".len();
        let name = &text[start..start + text[start..].find(" -->").unwrap()];
        let (lines, end) = fence_after(text, start);
        let hex: String = lines.concat();
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|k| u8::from_str_radix(&hex[k..k + 2], 16).expect("hex"))
            .collect();
        let (digest, _) = digest_after(text, end);
        inputs.insert(name.to_string(), (bytes, digest));
        from = end;
    }
    let mut before = BTreeMap::new();
    let section = text
        .find("## Declaring a violation moves the digest")
        .expect("the last section");
    let mut at = section;
    while let Some(i) = text[at..].find("fnv1a64:") {
        let (d, end) = digest_after(text, at + i);
        // "`fnv1a64:…` (`Public`, 144 bytes)"
        let rest = &text[end..];
        let name_at = rest.find("(`").unwrap() + 2;
        let name = &rest[name_at..name_at + rest[name_at..].find('`').unwrap()];
        let count_at = name_at + name.len() + 3;
        let count: usize = rest[count_at..]
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        before.insert(name.to_string(), (d, count));
        at = end;
    }
    DigestMd {
        shapes,
        inputs,
        before,
    }
}

// ── the witness ─────────────────────────────────────────────────────────

#[test]
fn witness_shapes_are_digest_md_s() {
    let dir = witness_or_skip!();
    let (_, program) = witness_program(&dir);
    let md = read_digest_md(&read(dir.join("digest.md")));
    assert_eq!(md.shapes.len(), 9, "the shapes block lists nine types");
    for (ty, shape, hash) in &md.shapes {
        assert_eq!(
            hex16(fnv1a64(shape.as_bytes())),
            *hash,
            "the fixture folds {ty}'s shape to its hash"
        );
        let t = named(ty);
        assert_eq!(
            program.contract_shape(&t).unwrap(),
            *shape,
            "the contract shape of {ty}"
        );
        assert_eq!(
            hex16(program.shape_hash(&t).unwrap()),
            *hash,
            "the shape hash of {ty}"
        );
    }
}

#[test]
fn witness_hash_inputs_and_digests_are_digest_md_s() {
    let dir = witness_or_skip!();
    let (_, program) = witness_program(&dir);
    let md = read_digest_md(&read(dir.join("digest.md")));
    assert_eq!(
        md.inputs.keys().collect::<Vec<_>>(),
        ["Admin", "Public", "hub fills"]
    );
    for (name, (bytes, digest)) in &md.inputs {
        assert_eq!(
            Digest(fnv1a64(bytes)),
            *digest,
            "the fixture folds its {name} input to its digest"
        );
        let (input, ours) = match name.strip_prefix("hub ") {
            Some(hub) => (
                program.hub_input(hub).unwrap(),
                program.hub_digest(hub).unwrap(),
            ),
            None => (
                program.surface_input(name).unwrap(),
                program.surface_digest(name).unwrap(),
            ),
        };
        assert_eq!(
            input,
            String::from_utf8(bytes.clone()).unwrap(),
            "the {name} hash input, byte for byte"
        );
        assert_eq!(ours, *digest, "the {name} digest");
    }
    // The digests every document carries, as the spec states them.
    assert_eq!(
        program.surface_digest("Public").unwrap().to_string(),
        "fnv1a64:a8930d6e7998e986"
    );
    assert_eq!(
        program.surface_digest("Admin").unwrap().to_string(),
        "fnv1a64:40381db6685c9f75"
    );
    assert_eq!(
        program.hub_exposure_id("fills").unwrap(),
        "hub@fnv1a64:26970854397ab154/fills"
    );
}

#[test]
fn witness_declaring_a_violation_moves_the_digest() {
    let dir = witness_or_skip!();
    let (src, program) = witness_program(&dir);
    let md = read_digest_md(&read(dir.join("digest.md")));
    // The program as it was before `Orders::place` and `Ledger::rebalance`
    // were declared `fallible(ClosureViolation)`.
    let declared = src.matches(" fallible(ClosureViolation)").count();
    assert_eq!(declared, 2);
    let before = parse_program(
        "program.hl",
        &src.replace(" fallible(ClosureViolation)", ""),
    )
    .unwrap();
    assert_eq!(md.before.len(), 2);
    for (surface, (digest, count)) in &md.before {
        let input = before.surface_input(surface).unwrap();
        assert_eq!(
            input.len(),
            *count,
            "{surface}: the input's length in bytes"
        );
        assert_eq!(
            before.surface_digest(surface).unwrap(),
            *digest,
            "{surface} before the violation"
        );
        assert_ne!(
            program.surface_digest(surface).unwrap(),
            *digest,
            "declaring it moved {surface}'s digest"
        );
    }
    assert_eq!(
        md.before["Public"].0.to_string(),
        "fnv1a64:fe65e6d3036ee1eb"
    );
    assert_eq!(md.before["Admin"].0.to_string(), "fnv1a64:98daa4b3e265ed98");
}

/// A source as the inventory writes it.
fn source_json(s: &Source) -> Value {
    match s.ty() {
        Some(ty) => serde_json::json!({ "source": s.text(), "type": ty }),
        None => serde_json::json!({ "source": s.text() }),
    }
}

/// A `{"$ref": "#/schemas/T"}` or a bare string, as the type name it names.
fn ref_name(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        _ => v["$ref"]
            .as_str()
            .unwrap()
            .trim_start_matches("#/schemas/")
            .to_string(),
    }
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect()
}

#[test]
fn witness_rows_are_the_inventory_s() {
    let dir = witness_or_skip!();
    let (_, program) = witness_program(&dir);
    let inv: Value = serde_json::from_str(&read(dir.join("inventory.json"))).unwrap();
    let surfaces = inv["surfaces"].as_array().unwrap();
    assert_eq!(surfaces.len(), program.surfaces.len());
    for s in surfaces {
        let name = s["name"].as_str().unwrap();
        let surface = program
            .surface(name)
            .unwrap_or_else(|| panic!("no surface {name}"));
        assert_eq!(
            program.surface_digest(name).unwrap().to_string(),
            s["digest"]
        );
        let members = s["members"].as_array().unwrap();
        let mut rows: Vec<_> = surface.rows.iter().collect();
        rows.sort_by(|a, b| a.member.cmp(&b.member));
        assert_eq!(rows.len(), members.len(), "{name}: one member per row");
        for (row, m) in rows.iter().zip(members) {
            assert_eq!(row.member, m["name"]);
            assert_eq!(row.handler, Handler::Member);
            assert_eq!(
                row.request.as_ref().map(TypeExpr::text),
                Some(ref_name(&m["request"]))
            );
            assert_eq!(
                row.response.as_ref().map(TypeExpr::text),
                Some(ref_name(&m["response"]))
            );
            assert_eq!(
                row.error_is_closure_violation(),
                m["error"] == "ClosureViolation",
                "{}",
                row.member
            );
            assert_eq!(
                row.error.as_ref().map(TypeExpr::text),
                Some(ref_name(&m["error"]))
            );
            assert_eq!(
                row.requires_names(),
                strings(&m["requires"]),
                "{}: requires",
                row.member
            );
        }
    }
}

fn exposure_json(program: &Program, e: &Exposure) -> Value {
    let listener = e.listener.as_ref().unwrap();
    let receivers: Vec<Value> = e
        .receivers
        .iter()
        .map(|r| {
            serde_json::json!({
                "type": r.ty,
                "instance": r.instance.text(),
                "binding": r.binding.as_str(),
                "pool": r.pool,
            })
        })
        .collect();
    serde_json::json!({
        "exposure": program.exposure_id(e).unwrap(),
        "name": e.name,
        "surface": e.surface,
        "digest": program.surface_digest(e.surface.as_deref().unwrap()).unwrap().to_string(),
        "listener": { "transport": listener.transport.as_str(), "address": listener.address },
        "codec": e.codec,
        "principals": source_json(&e.principals),
        "roles": source_json(&e.roles),
        "receivers": receivers,
    })
}

#[test]
fn witness_serve_sites_are_the_inventory_s() {
    let dir = witness_or_skip!();
    let (_, program) = witness_program(&dir);
    let inv: Value = serde_json::from_str(&read(dir.join("inventory.json"))).unwrap();
    let exposures = inv["exposures"].as_array().unwrap();
    assert_eq!(exposures.len(), program.exposures.len());
    for want in exposures {
        let name = want["name"].as_str().unwrap();
        let e = program
            .exposure(name)
            .unwrap_or_else(|| panic!("no exposure {name}"));
        assert_eq!(exposure_json(&program, e), *want, "exposure {name}");
        assert!(e.unbound.is_empty());
        assert_eq!(
            (e.bound, e.on_full.as_deref()),
            (Some(if name == "admin" { 16 } else { 64 }), Some("refuse"))
        );
        let site = &program.serve_sites[e.site];
        assert_eq!(
            site.handle.as_ref().unwrap().name,
            name,
            "the handle is let-bound under the exposure's name"
        );
        // The pool column of each row, as this exposure serves it.
        for served in program.served_rows(e) {
            let pool = want["receivers"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["type"] == served.row.locus.as_str())
                .map(|r| r["pool"].as_str().unwrap());
            assert_eq!(served.pool, pool);
        }
    }
    let hubs = inv["hubs"].as_array().unwrap();
    assert_eq!(hubs.len(), program.hubs.len());
    for want in hubs {
        let name = want["name"].as_str().unwrap();
        let h = program.hub(name).unwrap();
        let streams: Vec<Value> = h
            .streams
            .iter()
            .map(|s| {
                serde_json::json!({
                    "topic": s.topic.name,
                    "subject": s.subject,
                    "direction": s.direction.unwrap().as_str(),
                    "payload": { "$ref": format!("#/schemas/{}", s.payload.as_ref().unwrap().text()) },
                    "codec": s.codec,
                    "bound": s.bound,
                    "on_full": s.on_full,
                    "replay": s.replay,
                    "requires": s.requires.iter().map(|r| r.name.clone()).collect::<Vec<_>>(),
                })
            })
            .collect();
        let got = serde_json::json!({
            "exposure": program.hub_exposure_id(name).unwrap(),
            "name": h.name(),
            "digest": program.hub_digest(name).unwrap().to_string(),
            "instance": h.instance(),
            "listener": { "transport": h.literal.kind.as_str(), "address": h.literal.address },
            "codec": h.literal.codec,
            "principals": source_json(&h.literal.principals),
            "roles": source_json(&h.literal.roles),
            "streams": streams,
        });
        // The loss statement is the description's text, not a row's column.
        let mut want = want.clone();
        for s in want["streams"].as_array_mut().unwrap() {
            s.as_object_mut().unwrap().remove("loss");
        }
        assert_eq!(got, want, "hub {name}");
    }
}

#[test]
fn every_truncation_of_the_witness_parses_or_is_refused() {
    let dir = witness_or_skip!();
    let (src, _) = witness_program(&dir);
    let mut refused = 0;
    for end in (0..=src.len()).filter(|&i| src.is_char_boundary(i)) {
        match parse_program("program.hl", &src[..end]) {
            Ok(p) => {
                // Whatever was built, the digests answer or say why not.
                for s in &p.surfaces {
                    let _ = p.surface_digest(&s.name);
                }
                for h in &p.hubs {
                    let _ = h.name().map(|n| p.hub_digest(n));
                }
            }
            Err(d) => {
                assert!(!d.message.is_empty() && d.caret_line().ends_with('^'));
                refused += 1;
            }
        }
    }
    assert!(refused > src.len() / 2, "most truncations are refused");
}

#[test]
fn mutated_witnesses_parse_or_are_refused() {
    let dir = witness_or_skip!();
    let (src, _) = witness_program(&dir);
    // A fixed xorshift stream: reproducible, and no entropy in the test.
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let alphabet = b"{}()[];:,.=<>-\"/*@ \nxA0";
    for _ in 0..400 {
        let mut bytes = src.clone().into_bytes();
        for _ in 0..1 + next() % 4 {
            let at = (next() % bytes.len() as u64) as usize;
            bytes[at] = alphabet[(next() % alphabet.len() as u64) as usize];
        }
        let text = String::from_utf8_lossy(&bytes);
        if let Ok(p) = parse_program("program.hl", &text) {
            for s in &p.surfaces {
                let _ = p.surface_digest(&s.name);
            }
        }
    }
}

// ── our second program ──────────────────────────────────────────────────

fn second() -> Program {
    let path = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../conformance/programs/second.hl"
    ));
    parse_program("second.hl", &read(path)).unwrap_or_else(|d| panic!("{d}"))
}

// The shapes of second.hl, folded by hand (§ The contract digest): a field
// of a nested struct or enum is `#` and that type's own shape hash; an alias
// (`Count`) is what it stands for; a `json:"key"` tag renames the key the
// codec carries and leaves the shape, which names the declared field.
//
//   type              contract shape                                              shape hash
//   Size              width:i;height:i                                            58bfc7d12e39e839
//   Item              id:i;label:s;weight:q(gram);size:#58bfc7d12e39e839;ratio:f  49600d00f7f25cd6
//   Stocked           item:#49600d00f7f25cd6;count:i                              925486d6c39a38c8
//   Lookup            id:i                                                        9fa414c54a04ddc5
//   Restock           id:i;add:i                                                  c735783f4d01abf8
//   Summary           items:i;heaviest:q(gram)                                    b79b332b01e3154d
//   StockError        =enum(Unknown|Short(i)|Locked)                              a0df4025876d98bc
//   Moved             id:i;to:s                                                   bdfa733d84a20a24
//   Int               =i                                                          08063307b4c5a493
//   ClosureViolation  locus:s;closure:s;diff:i                                    36c7f0561125943e
//
// `Catalog`'s rows in canonical order (member names as bytes), each TAB
// written `→`; `Store::summary` takes only a context, so no request;
// `Store::reset` returns () and is fallible(ClosureViolation); its
// requires, `[editor, auditor, editor]`, is the set `auditor,editor`:
//
//   hale-api-surface 1
//   Store::lookup→9fa414c54a04ddc5→925486d6c39a38c8→-→viewer
//   Store::reset→-→-→36c7f0561125943e→auditor,editor
//   Store::summary→-→b79b332b01e3154d→-→-
//
// 163 bytes, folding to fnv1a64:0070c25d9bd1988b.
//
//   hale-api-surface 1                                   (Backoffice)
//   Store::lookup→9fa414c54a04ddc5→925486d6c39a38c8→-→auditor
//   Store::restock→c735783f4d01abf8→925486d6c39a38c8→a0df4025876d98bc→editor
//
// 150 bytes, folding to fnv1a64:3d15c210c8e2a377.
//
//   hale-api-surface 1                                   (second, the @rpc rows)
//   Probe::echo→bdfa733d84a20a24→bdfa733d84a20a24→-→auditor
//   Probe::ping→-→08063307b4c5a493→-→-
//
// 110 bytes, folding to fnv1a64:76152f21e2855578.
//
//   hale-api-hub 1                                       (the hub shop-hub)
//   Alerts→b79b332b01e3154d→out→json→128→drop_old→0→auditor,viewer
//   Moves→bdfa733d84a20a24→out→json→8→drop_new→0→-
//
// 125 bytes, folding to fnv1a64:d3a8adfe2fa57108.
//
// The hashes were folded once, from the texts above and nothing else, with:
//
//   python3 -c 'import sys
//   def f(s):
//     h = 0xcbf29ce484222325
//     for b in s.encode(): h = ((h ^ b) * 0x100000001b3) % 2**64
//     return "%016x" % h
//   for s in sys.argv[1:]: print(f(s.replace("→", "\t").replace("¶", "\n")), s)' \
//     'width:i;height:i' 'id:i;label:s;weight:q(gram);size:#58bfc7d12e39e839;ratio:f' …
//
// (each hash input passed with its TABs as `→` and its LFs as `¶`).

const SECOND_SHAPES: &[(&str, &str, &str)] = &[
    ("Size", "width:i;height:i", "58bfc7d12e39e839"),
    (
        "Item",
        "id:i;label:s;weight:q(gram);size:#58bfc7d12e39e839;ratio:f",
        "49600d00f7f25cd6",
    ),
    (
        "Stocked",
        "item:#49600d00f7f25cd6;count:i",
        "925486d6c39a38c8",
    ),
    ("Lookup", "id:i", "9fa414c54a04ddc5"),
    ("Restock", "id:i;add:i", "c735783f4d01abf8"),
    ("Summary", "items:i;heaviest:q(gram)", "b79b332b01e3154d"),
    (
        "StockError",
        "=enum(Unknown|Short(i)|Locked)",
        "a0df4025876d98bc",
    ),
    ("Moved", "id:i;to:s", "bdfa733d84a20a24"),
    ("Int", "=i", "08063307b4c5a493"),
    (
        "ClosureViolation",
        "locus:s;closure:s;diff:i",
        "36c7f0561125943e",
    ),
];

#[test]
fn second_shapes_are_the_hand_folded_ones() {
    let p = second();
    for (ty, shape, hash) in SECOND_SHAPES {
        let t = named(ty);
        assert_eq!(
            p.contract_shape(&t).unwrap(),
            *shape,
            "the contract shape of {ty}"
        );
        assert_eq!(
            hex16(p.shape_hash(&t).unwrap()),
            *hash,
            "the shape hash of {ty}"
        );
    }
    // An alias is what its chain ends at, a quantity its unit.
    assert!(matches!(
        p.types.resolve(&named("Count")),
        Resolved::Prim(limen_core::hale::model::Prim::Int)
    ));
    assert!(
        matches!(p.types.resolve(&named("Mass")), Resolved::Quantity("Mass", ref d) if d == "gram")
    );
    assert!(matches!(
        p.types.resolve(&named("ItemId")),
        Resolved::Identity("ItemId")
    ));
    // A json tag renames the key, not the field.
    let item = named("Item");
    let Resolved::Struct(_, fields) = p.types.resolve(&item) else {
        panic!()
    };
    let keys: Vec<(&str, &str)> = fields.iter().map(|f| (f.name(), f.json_key())).collect();
    assert_eq!(
        keys,
        [
            ("id", "id"),
            ("label", "name"),
            ("weight", "weight"),
            ("size", "size"),
            ("ratio", "ratio")
        ]
    );
}

#[test]
fn second_hash_inputs_and_digests_are_the_hand_folded_ones() {
    let p = second();
    let catalog = "hale-api-surface 1\n\
        Store::lookup\t9fa414c54a04ddc5\t925486d6c39a38c8\t-\tviewer\n\
        Store::reset\t-\t-\t36c7f0561125943e\tauditor,editor\n\
        Store::summary\t-\tb79b332b01e3154d\t-\t-\n";
    let backoffice = "hale-api-surface 1\n\
        Store::lookup\t9fa414c54a04ddc5\t925486d6c39a38c8\t-\tauditor\n\
        Store::restock\tc735783f4d01abf8\t925486d6c39a38c8\ta0df4025876d98bc\teditor\n";
    let default = "hale-api-surface 1\n\
        Probe::echo\tbdfa733d84a20a24\tbdfa733d84a20a24\t-\tauditor\n\
        Probe::ping\t-\t08063307b4c5a493\t-\t-\n";
    let hub = "hale-api-hub 1\n\
        Alerts\tb79b332b01e3154d\tout\tjson\t128\tdrop_old\t0\tauditor,viewer\n\
        Moves\tbdfa733d84a20a24\tout\tjson\t8\tdrop_new\t0\t-\n";
    for (surface, input, len, digest) in [
        ("Catalog", catalog, 163, "fnv1a64:0070c25d9bd1988b"),
        ("Backoffice", backoffice, 150, "fnv1a64:3d15c210c8e2a377"),
        ("second", default, 110, "fnv1a64:76152f21e2855578"),
    ] {
        assert_eq!(input.len(), len);
        assert_eq!(
            p.surface_input(surface).unwrap(),
            input,
            "{surface}'s hash input"
        );
        assert_eq!(
            p.surface_digest(surface).unwrap().to_string(),
            digest,
            "{surface}'s digest"
        );
    }
    assert_eq!(hub.len(), 125);
    assert_eq!(p.hub_input("shop-hub").unwrap(), hub);
    assert_eq!(
        p.hub_digest("shop-hub").unwrap().to_string(),
        "fnv1a64:d3a8adfe2fa57108"
    );
    assert_eq!(
        p.hub_exposure_id("shop-hub").unwrap(),
        "hub@fnv1a64:d3a8adfe2fa57108/shop-hub"
    );
    let web = p.exposure("web").unwrap();
    assert_eq!(
        p.exposure_id(web).unwrap(),
        "Catalog@fnv1a64:0070c25d9bd1988b/web"
    );
}

#[test]
fn second_rows_have_the_spec_s_columns() {
    let p = second();
    assert_eq!(p.seed, "second");
    let names: Vec<&str> = p.surfaces.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["Catalog", "Backoffice", "second"]);
    let catalog = p.surface("Catalog").unwrap();
    let cols: Vec<_> = catalog
        .rows
        .iter()
        .map(|r| {
            (
                r.member.as_str(),
                r.request.as_ref().map(TypeExpr::text),
                r.response.as_ref().map(TypeExpr::text),
                r.error.as_ref().map(TypeExpr::text),
                r.requires_names(),
                r.context,
            )
        })
        .collect();
    let s = |x: &str| Some(x.to_string());
    assert_eq!(
        cols,
        [
            (
                "Store::lookup",
                s("Lookup"),
                s("Stocked"),
                None,
                vec!["viewer"],
                None
            ),
            (
                "Store::summary",
                None,
                s("Summary"),
                None,
                vec![],
                Some(ContextKind::Context)
            ),
            (
                "Store::reset",
                None,
                None,
                s("ClosureViolation"),
                vec!["editor", "auditor", "editor"],
                Some(ContextKind::ServedContext)
            ),
        ]
    );
    assert!(catalog.rows[2].error_is_closure_violation());
    let restock = &p.surface("Backoffice").unwrap().rows[0];
    assert_eq!(restock.error.as_ref().map(TypeExpr::text), s("StockError"));
    assert!(!restock.error_is_closure_violation());
    let default = p.surface("second").unwrap();
    assert_eq!(
        default.declared, None,
        "the default surface is made of @rpc rows"
    );
    let members: Vec<(&str, Vec<&str>)> = default
        .rows
        .iter()
        .map(|r| (r.member.as_str(), r.requires_names()))
        .collect();
    assert_eq!(
        members,
        [("Probe::ping", vec![]), ("Probe::echo", vec!["auditor"])]
    );
    assert!(p.undeclared_roles().is_empty());
}

#[test]
fn second_serve_sites_and_hub_are_read_as_written() {
    let p = second();
    let summary: Vec<_> = p
        .exposures
        .iter()
        .map(|e| {
            let l = e.listener.as_ref().unwrap();
            (
                e.name.as_deref().unwrap(),
                e.surface.as_deref().unwrap(),
                l.transport.clone(),
                l.address.as_deref().unwrap(),
                e.principals.text(),
                e.roles.text(),
                e.bound,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                "web",
                "Catalog",
                TransportKind::Http,
                "127.0.0.1:0",
                "self.tokens".into(),
                "self.shop_roles".into(),
                Some(32)
            ),
            (
                "live",
                "Catalog",
                TransportKind::Ws,
                "0.0.0.0:7000",
                "self.tokens".into(),
                "self.hub_roles".into(),
                Some(8)
            ),
            (
                "probe",
                "second",
                TransportKind::Unix,
                "/tmp/shop.sock",
                "kernel".into(),
                "self.shop_roles".into(),
                Some(4)
            ),
        ]
    );
    let receivers = |name: &str| -> Vec<(String, Instance, Binding, Option<String>)> {
        p.exposure(name)
            .unwrap()
            .receivers
            .iter()
            .map(|r| (r.ty.clone(), r.instance.clone(), r.binding, r.pool.clone()))
            .collect()
    };
    let store = |b| {
        (
            "Store".to_string(),
            Instance::Param("store".into()),
            b,
            Some("shop".to_string()),
        )
    };
    assert_eq!(receivers("web"), [store(Binding::Inferred)]);
    assert_eq!(receivers("live"), [store(Binding::Explicit)]);
    assert_eq!(
        receivers("probe"),
        [(
            "Probe".to_string(),
            Instance::Param("probe".into()),
            Binding::Explicit,
            Some("pinned:probe".to_string())
        )]
    );
    assert_eq!(p.exposure("probe").unwrap().principals, Source::Kernel);
    let hub = p.hub("shop-hub").unwrap();
    assert_eq!(
        (hub.instance(), hub.literal.kind.clone()),
        ("self.hub".to_string(), TransportKind::Ws)
    );
    let streams: Vec<_> = hub
        .streams
        .iter()
        .map(|s| {
            (
                s.topic.name.as_str(),
                s.subject.as_deref(),
                s.direction,
                s.bound,
                s.on_full.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        streams,
        [
            (
                "Moves",
                Some("store.moves"),
                Some(Direction::Out),
                Some(8),
                Some("drop_new")
            ),
            (
                "Alerts",
                Some("Alerts"),
                Some(Direction::Out),
                Some(128),
                Some("drop_old")
            ),
        ]
    );
}

#[test]
fn a_serve_site_that_cannot_infer_keeps_the_gap() {
    // Two `Probe`s are held: a serve of the default surface that binds
    // neither leaves the type unbound, naming both, for the law to refuse.
    let src = read(PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../conformance/programs/second.hl"
    )));
    let src = src.replace("receivers: { Probe: self.probe }, ", "");
    let p = parse_program("second.hl", &src).unwrap();
    let probe = p.exposure("probe").unwrap();
    assert!(probe.receivers.is_empty());
    assert_eq!(probe.unbound.len(), 1);
    assert_eq!(probe.unbound[0].ty, "Probe");
    assert_eq!(probe.unbound[0].candidates, ["self.probe", "self.spare"]);
}
