//! § Identity and fingerprints: each "moves when" and "does not move for"
//! clause as its own test, over a declaration two levels deep.

use serde_json::{json, Map, Value};

use super::*;
use crate::flow::schema::DIALECT;
use crate::flow::types::{Constructor, Field, Payload, TypeBody, TypeDecl};

const VERSION: &str = "1.4.0";

fn id_at(version: &str, name: &str) -> Identity {
    Identity::in_repository("github.com/acme/tools", version, "search.flow", name)
}

fn id(name: &str) -> Identity {
    id_at(VERSION, name)
}

/// `search(query: Text, limit: Int) -> Result<List<Hit>, SearchError>`,
/// where Hit reaches Source, which reaches Origin; every declaration at
/// `version`.
fn fixture_at(version: &str) -> (Declaration, TypeEnv) {
    let id = |name| id_at(version, name);
    let mut env = TypeEnv::new();
    env.declare(
        TypeDecl::record(
            id("Hit"),
            vec![
                Field::new("title", Type::Text).doc("The page title."),
                Field::new("score", Type::Decimal),
                Field::new("source", Type::named(id("Source"))),
            ],
        )
        .doc("A search hit."),
    );
    env.declare(TypeDecl::record(
        id("Source"),
        vec![
            Field::new("url", Type::Text),
            Field::new("origin", Type::named(id("Origin"))),
        ],
    ));
    env.declare(TypeDecl::record(
        id("Origin"),
        vec![Field::new("host", Type::Text)],
    ));
    env.declare(TypeDecl::enumeration(
        id("SearchError"),
        vec![
            Constructor::unit("RateLimited").doc("Try again later."),
            Constructor::fields(
                "Failed",
                vec![Field::new("reason", Type::Text).doc("Why it failed.")],
            ),
            Constructor::value("Other", Type::Text),
        ],
    ));
    let decl = Declaration::new(
        id("search"),
        vec![
            Param::new("query", Type::Text).doc("What to look for."),
            Param::new("limit", Type::Int),
        ],
        Type::list(Type::named(id("Hit"))),
        Type::named(id("SearchError")),
    )
    .doc("Searches the web.");
    (decl, env)
}

fn fixture() -> (Declaration, TypeEnv) {
    fixture_at(VERSION)
}

fn fp(decl: &Declaration, env: &TypeEnv) -> Fingerprint {
    let declared = decl.fingerprint(env).unwrap();
    // The listed signature gives the same fingerprint.
    let listed = fingerprint_of_signature(&decl.signature(env).unwrap()).unwrap();
    assert_eq!(declared, listed);
    declared
}

fn base() -> Fingerprint {
    let (decl, env) = fixture();
    fp(&decl, &env)
}

/// Changes the declaration `name` in `env`.
fn edit(env: &mut TypeEnv, name: &str, change: impl FnOnce(&mut TypeDecl)) {
    let mut decl = env.get(&id(name)).unwrap().clone();
    change(&mut decl);
    env.declare(decl);
}

fn record_fields(decl: &mut TypeDecl) -> &mut Vec<Field> {
    match &mut decl.body {
        TypeBody::Record(fields) => fields,
        TypeBody::Enum(_) => panic!("not a record"),
    }
}

fn constructors(decl: &mut TypeDecl) -> &mut Vec<Constructor> {
    match &mut decl.body {
        TypeBody::Enum(c) => c,
        TypeBody::Record(_) => panic!("not an enum"),
    }
}

// --- moves when ---

#[test]
fn moves_when_a_parameter_is_added() {
    let (mut decl, env) = fixture();
    decl.params.push(Param::new("safe", Type::Bool));
    assert_ne!(fp(&decl, &env), base());
}

#[test]
fn moves_when_a_parameter_is_removed() {
    let (mut decl, env) = fixture();
    decl.params.pop();
    assert_ne!(fp(&decl, &env), base());
}

#[test]
fn moves_when_a_parameter_is_renamed() {
    let (mut decl, env) = fixture();
    decl.params[1].name = "max".into();
    assert_ne!(fp(&decl, &env), base());
}

#[test]
fn moves_when_a_parameter_is_retyped() {
    let (mut decl, env) = fixture();
    decl.params[1].ty = Type::Decimal;
    assert_ne!(fp(&decl, &env), base());
}

#[test]
fn moves_when_parameters_are_reordered() {
    let (mut decl, env) = fixture();
    decl.params.swap(0, 1);
    assert_ne!(fp(&decl, &env), base());
}

#[test]
fn moves_when_the_success_type_changes() {
    let (mut decl, env) = fixture();
    decl.ok = Type::set(Type::named(id("Hit")));
    assert_ne!(fp(&decl, &env), base());
}

#[test]
fn moves_when_the_error_type_changes() {
    let (mut decl, env) = fixture();
    decl.err = Type::Text;
    assert_ne!(fp(&decl, &env), base());
}

#[test]
fn moves_when_a_type_two_levels_down_gains_a_field() {
    let (decl, mut env) = fixture();
    edit(&mut env, "Origin", |d| {
        record_fields(d).push(Field::new("port", Type::option(Type::Int)))
    });
    assert_ne!(fp(&decl, &env), base());
}

#[test]
fn moves_when_a_reached_field_changes_from_required_to_option() {
    let (decl, mut env) = fixture();
    edit(&mut env, "Origin", |d| {
        record_fields(d)[0].ty = Type::option(Type::Text)
    });
    assert_ne!(fp(&decl, &env), base());
}

#[test]
fn moves_when_a_reached_enum_gains_a_constructor() {
    let (decl, mut env) = fixture();
    edit(&mut env, "SearchError", |d| {
        constructors(d).push(Constructor::unit("Banned"))
    });
    assert_ne!(fp(&decl, &env), base());
}

#[test]
fn moves_when_a_generic_parameter_is_renamed() {
    let (decl, env) = fixture();
    let generic = |name: &str| {
        let mut d = decl.clone().generic(&[name]);
        d.params.push(Param::new("extra", Type::param(name)));
        d
    };
    assert_ne!(fp(&generic("T"), &env), fp(&generic("U"), &env));
}

// --- does not move for ---

#[test]
fn does_not_move_for_a_doc_comment_on_a_type() {
    let (decl, mut env) = fixture();
    edit(&mut env, "Hit", |d| d.doc = Some("Another word.".into()));
    edit(&mut env, "Origin", |d| d.doc = Some("New.".into()));
    assert_ne!(
        decl.signature(&env).unwrap(),
        fixture().0.signature(&fixture().1).unwrap()
    );
    assert_eq!(fp(&decl, &env), base());
}

#[test]
fn does_not_move_for_a_doc_comment_on_a_field() {
    let (decl, mut env) = fixture();
    edit(&mut env, "Hit", |d| record_fields(d)[0].doc = None);
    edit(&mut env, "Origin", |d| {
        record_fields(d)[0].doc = Some("The host name.".into())
    });
    assert_eq!(fp(&decl, &env), base());
}

#[test]
fn does_not_move_for_a_doc_comment_on_a_constructor() {
    let (decl, mut env) = fixture();
    edit(&mut env, "SearchError", |d| {
        let c = constructors(d);
        c[0].doc = Some("Slow down.".into());
        c[2].doc = Some("Anything else.".into());
    });
    assert_eq!(fp(&decl, &env), base());
}

#[test]
fn does_not_move_for_a_doc_comment_on_a_named_payload_field() {
    let (decl, mut env) = fixture();
    edit(&mut env, "SearchError", |d| {
        if let Payload::Fields(fields) = &mut constructors(d)[1].payload {
            fields[0].doc = Some("The reason, in words.".into());
        }
    });
    assert_eq!(fp(&decl, &env), base());
}

#[test]
fn does_not_move_for_a_doc_comment_on_a_parameter_or_the_tool() {
    let (mut decl, env) = fixture();
    decl.params[0].doc = None;
    decl.params[1].doc = Some("At most this many.".into());
    decl.doc = Some("Finds pages.".into());
    assert_eq!(fp(&decl, &env), base());
}

/// `v` with every object's keys in reverse order.
fn reversed(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, v) in m.iter().rev() {
                out.insert(k.clone(), reversed(v));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(reversed).collect()),
        other => other.clone(),
    }
}

/// `json` with whitespace after every structural character outside strings.
fn spread(json: &str) -> String {
    let (mut out, mut in_string, mut escaped) = (String::new(), false, false);
    for c in json.chars() {
        out.push(c);
        if in_string {
            (in_string, escaped) = (escaped || c != '"', !escaped && c == '\\');
        } else if c == '"' {
            in_string = true;
        } else if "{[,:".contains(c) {
            out.push_str(" \r\n\t ");
        }
    }
    out
}

#[test]
fn does_not_move_for_formatting() {
    let (decl, env) = fixture();
    let listed = decl.signature(&env).unwrap();
    let compact = serde_json::to_string(&listed).unwrap();
    // Every object's keys in reverse order, whitespace around every token.
    let spaced = spread(&serde_json::to_string(&reversed(&listed)).unwrap());
    assert_ne!(compact, spaced);
    let read: Value = serde_json::from_str(&spaced).unwrap();
    assert_eq!(fingerprint_of_signature(&read).unwrap(), base());
}

#[test]
fn does_not_move_for_a_new_repository_version_with_the_same_signature() {
    let (old, old_env) = fixture_at("1.4.0");
    let (new, new_env) = fixture_at("1.5.0");
    let (old_listed, new_listed) = (
        old.signature(&old_env).unwrap(),
        new.signature(&new_env).unwrap(),
    );
    // The listings differ: versions are included there.
    assert_ne!(old_listed, new_listed);
    assert!(new_listed["ok"]["$defs"]
        .get("github.com/acme/tools@1.5.0/search.flow.Hit")
        .is_some());
    assert_eq!(fp(&old, &old_env), fp(&new, &new_env));
}

#[test]
fn a_field_named_description_stays_and_renaming_it_moves() {
    let with = |name: &str, doc: Option<&str>| {
        let (decl, mut env) = fixture();
        edit(&mut env, "Origin", |d| {
            let mut f = Field::new(name, Type::Text);
            f.doc = doc.map(str::to_owned);
            record_fields(d).push(f);
        });
        (decl, env)
    };
    let (decl, env) = with("description", Some("What the origin is."));
    let canonical = decl.canonical_signature(&env).unwrap();
    let origin = &canonical["ok"]["$defs"]["github.com/acme/tools/search.flow.Origin"];
    assert_eq!(
        origin["properties"]["description"],
        json!({"type": "string"}),
        "{canonical:#}"
    );
    assert_eq!(origin["required"], json!(["host", "description"]));
    // The listed one, stripped, keeps it too.
    assert_eq!(
        canonical_signature(&decl.signature(&env).unwrap()).unwrap(),
        canonical
    );
    let described = fp(&decl, &env);
    assert_ne!(described, base());
    assert_eq!(
        fp(&with("description", None).0, &with("description", None).1),
        described
    );
    let (renamed, renamed_env) = with("summary", Some("What the origin is."));
    assert_ne!(fp(&renamed, &renamed_env), described);
}

// --- the signatures themselves ---

#[test]
fn the_canonical_signature_of_a_small_declaration() {
    let ping = Declaration::new(
        Identity::at_path("/home/me/run.flow", "ping"),
        vec![Param::new("times", Type::Int).doc("How often.")],
        Type::Bool,
        Type::Never,
    )
    .doc("Pings.");
    let env = TypeEnv::new();
    assert_eq!(
        canonical_json_text(&ping.canonical_signature(&env).unwrap()),
        format!(
            r#"{{"err":{{"$schema":"{DIALECT}","not":{{}}}},"generic":[],"ok":{{"$schema":"{DIALECT}","type":"boolean"}},"params":[["times",{{"$schema":"{DIALECT}","type":"integer"}}]]}}"#
        )
    );
    assert_eq!(
        ping.signature(&env).unwrap(),
        json!({
            "description": "Pings.",
            "params": [["times", {"$schema": DIALECT, "description": "How often.", "type": "integer"}]],
            "ok": {"$schema": DIALECT, "type": "boolean"},
            "err": {"$schema": DIALECT, "not": {}},
            "generic": []
        })
    );
}

#[test]
fn the_canonical_signature_names_types_without_versions() {
    let (decl, env) = fixture();
    let canonical = decl.canonical_signature(&env).unwrap();
    assert_eq!(
        canonical["ok"]["items"]["$ref"],
        "#/$defs/github.com~1acme~1tools~1search.flow.Hit"
    );
    let text = canonical_json_text(&canonical);
    assert!(!text.contains("1.4.0"), "{text}");
    assert!(!text.contains("\"description\""), "{text}");
    assert_eq!(
        canonical_signature(&decl.signature(&env).unwrap()).unwrap(),
        canonical
    );
}

#[test]
fn a_describe_entry_lists_identity_fingerprint_and_signature() {
    let (decl, env) = fixture();
    let entry = decl.describe_entry(&env).unwrap();
    let keys: Vec<&String> = entry.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["tool", "fingerprint", "signature"]);
    assert_eq!(
        entry["tool"],
        "github.com/acme/tools@1.4.0/search.flow.search"
    );
    assert_eq!(entry["fingerprint"], base().to_string());
    assert_eq!(entry["signature"], decl.signature(&env).unwrap());
}

#[test]
fn a_signature_reads_back_as_its_declaration() {
    let (decl, env) = fixture();
    let listed = decl.signature(&env).unwrap();
    let (read, read_env) = Declaration::from_signature(decl.identity.clone(), &listed).unwrap();
    assert_eq!(read, decl);
    assert_eq!(read_env, env);
    assert_eq!(read.signature(&read_env).unwrap(), listed);
}

#[test]
fn a_generic_tool_reads_back_and_refuses_an_undeclared_parameter() {
    let (decl, env) = fixture();
    let decl = Declaration {
        generic: vec!["T".into()],
        params: vec![Param::new("items", Type::list(Type::param("T")))],
        ok: Type::param("T"),
        ..decl
    };
    let listed = decl.signature(&env).unwrap();
    assert_eq!(listed["ok"], json!({"$schema": DIALECT, "$param": "T"}));
    let (read, _) = Declaration::from_signature(decl.identity.clone(), &listed).unwrap();
    assert_eq!(read, decl);

    let mut wrong = listed.clone();
    wrong["generic"] = json!(["U"]);
    let e = Declaration::from_signature(decl.identity.clone(), &wrong).unwrap_err();
    assert_eq!(e.pointer, "/params/0/1/items/$param");

    let undeclared = Declaration {
        generic: vec![],
        ..decl
    };
    let e = undeclared.signature(&env).unwrap_err();
    assert!(e.reason.contains("`T` is not declared"), "{e}");
}

#[test]
fn one_type_at_two_versions_has_no_canonical_signature() {
    let (decl, mut env) = fixture();
    let old = id_at("1.3.0", "Origin");
    env.declare(TypeDecl::record(old.clone(), vec![]));
    edit(&mut env, "Source", |d| {
        record_fields(d).push(Field::new("was", Type::named(old)))
    });
    let e = decl.canonical_signature(&env).unwrap_err();
    assert!(e.reason.contains("one type at two versions"), "{e}");
    // The listing exists; its canonical signature is refused the same way.
    let listed = decl.signature(&env).unwrap();
    let e = canonical_signature(&listed).unwrap_err();
    assert!(e.pointer.starts_with("/ok/$defs/"), "{e}");
    assert!(e.reason.contains("at another version"), "{e}");
}

#[test]
fn a_listed_signature_that_is_not_one_is_refused_at_its_pointer() {
    let (decl, env) = fixture();
    let listed = decl.signature(&env).unwrap();
    let with = |pointer: &str, v: Value| {
        let mut s = listed.clone();
        *s.pointer_mut(pointer).unwrap() = v;
        s
    };
    let mut extra = listed.clone();
    extra["generics"] = json!([]);
    let cases = [
        (extra, "/generics"),
        (with("/params/0", json!(["query"])), "/params/0"),
        (with("/generic", json!(["T", "T"])), "/generic/1"),
        (
            with("/ok/items/$ref", json!("#/definitions/Hit")),
            "/ok/items/$ref",
        ),
    ];
    for (signature, pointer) in cases {
        let e = fingerprint_of_signature(&signature).unwrap_err();
        assert_eq!(e.pointer, pointer, "{e}");
    }
}

#[test]
fn a_fingerprint_is_sha256_and_lowercase_hex() {
    let f = base();
    let text = f.to_string();
    assert_eq!(text.len(), "sha256:".len() + 64);
    assert!(text.starts_with("sha256:"));
    assert!(text[7..]
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
    assert_eq!(Fingerprint::parse(&text), Ok(f));
    assert!(Fingerprint::parse(&text.to_uppercase()).is_err());
    assert!(Fingerprint::parse(&text[..text.len() - 1]).is_err());
    assert!(Fingerprint::parse(&text.replace("sha256:", "sha1:")).is_err());
}

#[test]
fn a_parameter_is_not_a_record_field_so_an_option_is_in_enum_form() {
    let decl = Declaration::new(
        id("f"),
        vec![Param::new("limit", Type::option(Type::Int))],
        Type::Bool,
        Type::Never,
    );
    let listed = decl.signature(&TypeEnv::new()).unwrap();
    assert_eq!(listed["params"][0][1]["oneOf"][0], json!({"const": "None"}));
}

#[test]
fn two_schemas_declaring_one_type_differently_are_refused() {
    let (decl, env) = fixture();
    let decl = Declaration {
        params: vec![Param::new("like", Type::named(id("Hit")))],
        ..decl
    };
    let mut listed = decl.signature(&env).unwrap();
    let hit = "github.com/acme/tools@1.4.0/search.flow.Hit";
    listed["params"][0][1]["$defs"][hit]["description"] = json!("Another word.");
    let e = Declaration::from_signature(decl.identity.clone(), &listed).unwrap_err();
    assert_eq!(
        e.pointer,
        "/ok/$defs/github.com~1acme~1tools@1.4.0~1search.flow.Hit"
    );
    assert!(e.reason.contains("declared differently"), "{e}");
}
