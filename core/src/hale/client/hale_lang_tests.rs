//! The Hale client's generator: the witness's clients, the wire read back
//! out of the emitted text ([`Reader`]) against [`wire_request`], the
//! decoders against the rules, and varied surfaces, each client checked
//! beside its program as `hale check` checks it. The witness's recorded
//! wire is held in `clients/tests/hale.rs`, which reads `../shared`.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::*;
use crate::hale::check::{check_program, check_program_with};
use crate::hale::client::{generate as generate_in, made_against, ClientSurface};
use crate::hale::model::{parse_program, Program};
use crate::hale::syntax::ast::{Item, TypeBody};

const DESK: &str = include_str!("../../../../conformance/programs/desk.hl");
const SECOND: &str = include_str!("../../../../conformance/programs/second.hl");

fn program(file: &str, src: &str) -> Program {
    parse_program(file, src).unwrap_or_else(|d| panic!("{d}"))
}

fn client(p: &Program, surface: &str) -> String {
    generate_in(p, surface, Lang::Hale).unwrap_or_else(|e| panic!("{surface}: {e}"))
}

/// The checker's verdict on `main`, the file `file` (importing `client.hl` and any other
/// file of `files`), as `hale check` gives it: every diagnostic, rendered.
fn check_beside(file: &str, main: &str, files: &BTreeMap<String, String>) -> Vec<String> {
    let checked = check_program_with(file, main, &mut |path| {
        files
            .get(path)
            .cloned()
            .ok_or_else(|| format!("no file `{path}`"))
    });
    let mut out: Vec<String> = checked.errors.iter().map(ToString::to_string).collect();
    if checked.program.is_none() && out.is_empty() {
        out.push("no program".into());
    }
    out
}

/// A value of the wire form of `slot`, each scalar its kind's zero (or one,
/// so that an integer is told from a float).
fn sample(slot: &Slot, s: &ClientSurface) -> Value {
    match slot {
        Slot::Scalar(sc) => match sc.json {
            "integer" => json!(7),
            "number" => json!(0.5),
            "boolean" => json!(true),
            _ => json!("a \"quoted\" \\ text"),
        },
        Slot::Record(name) => {
            let mut m = serde_json::Map::new();
            for f in &s.records[name].fields {
                m.insert(f.key.clone(), sample(&f.slot, s));
            }
            Value::Object(m)
        }
    }
}

/// Every member's request, read back out of the client's text over every
/// transport, is [`wire_request`]'s, plus HTTP's framing headers.
fn hold_wire(s: &ClientSurface, text: &str) {
    let reader = Reader::new(text).unwrap_or_else(|e| panic!("{e}"));
    for m in &s.members {
        let payload = m
            .request
            .as_ref()
            .map_or_else(|| json!({}), |r| sample(r, s));
        let id = json!(format!("id-{}", m.function));
        for t in [Transport::Http, Transport::Unix, Transport::Ws] {
            let mut written = reader
                .written_call(t, &m.name, "t-x", &payload, &id)
                .unwrap_or_else(|e| panic!("{} over {t:?}: {e}", m.name));
            if t == Transport::Http {
                let headers = written["headers"].as_object_mut().unwrap();
                for h in HTTP_FRAMING {
                    assert!(headers.remove(*h).is_some(), "{}: no {h}", m.name);
                }
            }
            let want = wire_request(t, &m.name, "t-x", &payload, &id, &s.digest);
            assert_eq!(written, want, "{} over {t:?}", m.name);
        }
    }
}

#[test]
fn the_witness_clients_name_their_digest_and_come_out_the_same_twice() {
    let p = program("desk.hl", DESK);
    for (surface, digest) in [
        ("Public", "fnv1a64:a8930d6e7998e986"),
        ("Admin", "fnv1a64:40381db6685c9f75"),
    ] {
        let text = client(&p, surface);
        assert_eq!(text, client(&p, surface), "{surface}: the same bytes twice");
        assert_eq!(made_against(&text), Some(digest));
        let reader = Reader::new(&text).unwrap();
        assert_eq!(reader.constant("HALE_DIGEST").as_deref(), Some(digest));
        assert_eq!(reader.constant("HALE_SURFACE").as_deref(), Some(surface));
    }
}

#[test]
fn the_client_declares_the_wire_tables_constants() {
    let p = program("desk.hl", DESK);
    let reader = Reader::new(&client(&p, "Public")).unwrap();
    let consts = reader.constants();
    for (name, value) in WIRE {
        assert_eq!(
            consts.get(*name).map(String::as_str),
            Some(*value),
            "{name}"
        );
    }
    for o in Outcome::ALL {
        assert_eq!(
            consts.get(&o.constant()).map(String::as_str),
            Some(o.name())
        );
    }
    for (ty, name) in FRAMES.iter().chain([&FRAME_OTHER]) {
        assert_eq!(consts.get(*name).map(String::as_str), Some(*ty));
    }
    assert_eq!(consts["MEMBER_Orders_place"], "Orders::place");
    assert_eq!(consts["MEMBER_Orders_cancel"], "Orders::cancel");
    assert_eq!(consts["TOPIC_Fills"], "Fills");
}

#[test]
fn the_requests_read_back_from_the_text_are_the_wire_tables() {
    let p = program("desk.hl", DESK);
    for surface in ["Public", "Admin"] {
        let s = ClientSurface::read(&p, surface).unwrap();
        hold_wire(&s, &client(&p, surface));
    }
    // The witness's `wire/http/result.json` request, as written.
    let text = client(&p, "Public");
    let reader = Reader::new(&text).unwrap();
    let written = reader
        .written_call(
            Transport::Http,
            "Orders::place",
            "t-alice",
            &json!({"symbol": "ACME", "qty": 10, "limit": 12500}),
            &Value::Null,
        )
        .unwrap();
    assert_eq!(
        written,
        json!({
            "method": "POST",
            "path": "/call/Orders::place",
            "headers": {
                "Host": "127.0.0.1:8080",
                "Authorization": "Bearer t-alice",
                "Content-Type": "application/json",
                "Hale-Surface-Digest": "fnv1a64:a8930d6e7998e986",
                "Content-Length": "45",
                "Connection": "close"
            },
            "body": {"symbol": "ACME", "qty": 10, "limit": 12500}
        })
    );
    // A payload the type cannot hold (`wire/unix/refusal_malformed.json`'s
    // `"41"` for an `OrderId`) is no request the typed client writes.
    let admin = Reader::new(&client(&p, "Admin")).unwrap();
    let err = admin
        .written_call(
            Transport::Unix,
            "Orders::cancel",
            "",
            &json!({"order": "41"}),
            &json!("c-3"),
        )
        .unwrap_err();
    assert!(err.contains("std::json::int"), "{err}");
}

#[test]
fn the_other_requests_read_back_as_the_spec_writes_them() {
    let p = program("desk.hl", DESK);
    let reader = Reader::new(&client(&p, "Public")).unwrap();
    let s = |v: &str| Value::String(v.into());
    let frame = reader.call("api_subscribe_frame", &[s("Fills")]).unwrap();
    let frame: Value = serde_json::from_str(frame.as_str().unwrap()).unwrap();
    assert_eq!(frame, json!({"type": "subscribe", "topic": "Fills"}));
    let line = reader.call("api_describe_line", &[]).unwrap();
    assert_eq!(line, s("{\"describe\": true}"));
    let get = reader
        .call("api_http_describe", &[s("h:1"), s("t-dave")])
        .unwrap();
    assert_eq!(
        get,
        s("GET /.description HTTP/1.1\r\nHost: h:1\r\nAuthorization: Bearer t-dave\r\nConnection: close\r\n\r\n")
    );
}

/// The lines of the body of `fn NAME(` in `text`, trimmed.
fn body_lines<'t>(text: &'t str, name: &str) -> Vec<&'t str> {
    let start = text
        .find(&format!("fn {name}("))
        .unwrap_or_else(|| panic!("no fn {name}"));
    text[start..]
        .lines()
        .skip(1)
        .take_while(|l| *l != "}")
        .map(str::trim)
        .collect()
}

#[test]
fn the_decoders_are_the_rules_one_line_each() {
    let p = program("desk.hl", DESK);
    let text = client(&p, "Public");
    let http: Vec<String> = HTTP_OUTCOMES
        .iter()
        .map(|(w, o)| rule_line(*w, *o))
        .collect();
    assert_eq!(body_lines(&text, "api_http_outcome"), http);
    let line: Vec<String> = LINE_OUTCOMES
        .iter()
        .map(|(w, o)| rule_line(*w, *o))
        .collect();
    assert_eq!(body_lines(&text, "api_line_outcome"), line);
    let frames = body_lines(&text, "api_frame_kind");
    assert_eq!(frames.len(), FRAMES.len() + 1);
    for ((_, c), l) in FRAMES.iter().zip(&frames) {
        assert_eq!(
            *l,
            format!("if frame.get(WS_TYPE).str() == {c} {{ return {c}; }}")
        );
    }
}

#[test]
fn decode_reply_reads_every_outcome_of_both_columns() {
    let http = |status: u64, body: Value| json!({"status": status, "body": body});
    let cases = [
        (
            Transport::Http,
            http(200, json!({"order": 41})),
            Outcome::Result,
            "",
        ),
        (
            Transport::Http,
            http(422, json!({"code": "x"})),
            Outcome::HandlerError,
            "",
        ),
        (
            Transport::Http,
            http(500, json!({"refusal": {"kind": "server"}})),
            Outcome::ServerError,
            "server",
        ),
        (
            Transport::Http,
            http(
                409,
                json!({"refusal": {"kind": "digest_mismatch", "reason": "r", "served": "fnv1a64:0000000000000000"}}),
            ),
            Outcome::Refusal,
            "digest_mismatch",
        ),
        (Transport::Http, http(302, json!({})), Outcome::Lost, ""),
        (
            Transport::Unix,
            json!({"ok": true, "value": 1}),
            Outcome::Result,
            "",
        ),
        (
            Transport::Unix,
            json!({"ok": false, "error": {"code": "x"}}),
            Outcome::HandlerError,
            "",
        ),
        (
            Transport::Unix,
            json!({"ok": false, "refusal": {"kind": "server"}}),
            Outcome::ServerError,
            "server",
        ),
        (
            Transport::Ws,
            json!({"type": "reply", "ok": false, "refusal": {"kind": "unauthorized", "reason": "r", "requires": ["a", "b"]}}),
            Outcome::Refusal,
            "unauthorized",
        ),
        (
            Transport::Unix,
            json!({"request_id": 0, "id": null}),
            Outcome::Lost,
            "",
        ),
    ];
    for (t, reply, outcome, kind) in cases {
        let d = decode_reply(t, &reply);
        assert_eq!(d.outcome, outcome, "{reply}");
        assert_eq!(
            d.refusal.map(|r| r.kind).unwrap_or_default(),
            kind,
            "{reply}"
        );
    }
    let d = decode_reply(
        Transport::Unix,
        &json!({"ok": false, "refusal": {"kind": "unauthorized", "reason": "r", "requires": ["a", "b"]}}),
    );
    assert_eq!(d.refusal.unwrap().requires, ["a", "b"]);
}

/// The variants of the enum `name` the client declares.
fn variants(text: &str, name: &str) -> Vec<String> {
    let file = crate::hale::syntax::parse("client.hl", text).unwrap();
    for item in file.items {
        if let Item::Type(t) = item {
            if t.name.name == name {
                let TypeBody::Enum(vs) = t.body else {
                    panic!("{name} is no enum")
                };
                return vs
                    .iter()
                    .map(|v| {
                        let f: Vec<String> = v.fields.iter().map(|f| f.text()).collect();
                        if f.is_empty() {
                            v.name.name.clone()
                        } else {
                            format!("{}({})", v.name.name, f.join(", "))
                        }
                    })
                    .collect();
            }
        }
    }
    panic!("no type {name}")
}

#[test]
fn only_a_row_that_declares_an_error_has_a_handler_error() {
    let p = program("desk.hl", DESK);
    let text = client(&p, "Public");
    assert_eq!(
        variants(&text, "Orders_cancelOutcome"),
        [
            "Result(Cancelled)",
            "HandlerError(OrderError)",
            "Refusal(ApiRefusal)",
            "ServerError",
            "Lost(String)"
        ]
    );
    assert_eq!(
        variants(&text, "Orders_placeOutcome"),
        [
            "Result(OrderReceipt)",
            "Refusal(ApiRefusal)",
            "ServerError",
            "Lost(String)"
        ]
    );
    assert_eq!(
        variants(&text, "FillsNext"),
        [
            "Event(FillsEvent)",
            "Unauthorized(String)",
            "Closed(String)",
            "Refusal(ApiRefusal)",
            "Timeout",
            "Lost(String)"
        ]
    );
}

/// A program of one file per case, the surfaces to generate, and the
/// other files it imports.
struct Case {
    name: &'static str,
    main: &'static str,
    surfaces: &'static [&'static str],
    files: &'static [(&'static str, &'static str)],
}

const CASES: &[Case] = &[
    Case {
        name: "scalar request and response, no hub",
        main: "api Math { rpc Calc::double; rpc Calc::half requires: [r]; }
role r;
locus Calc {
    fn double(n: Int) -> Int { return n * 2; }
    fn half(x: Float) -> Float fallible(ClosureViolation) { return x / 2.0; }
}
main locus M { params { calc: Calc = Calc { }; } }
fn main() { M { }; }
",
        surfaces: &["Math"],
        files: &[],
    },
    Case {
        name: "no request, no response, a string error, defaults, json tags",
        main: "type Opt { count: Int = 3; label: String json:\"name\"; on: Bool = false; }
type Failed { why: String json:\"reason\"; }
api Ops { rpc Box::ping; rpc Box::tick; rpc Box::set; rpc Box::flag; }
locus Box {
    fn ping() { }
    fn tick(ctx: std::api::Context) -> Int { return 1; }
    fn set(o: Opt) -> Opt fallible(Failed) { return o; }
    fn flag(b: Bool) -> String fallible(String) { return \"x\"; }
}
main locus M { params { b: Box = Box { }; } }
fn main() { M { }; }
",
        surfaces: &["Ops"],
        files: &[],
    },
    Case {
        name: "nested records, and names that are Hale's own words",
        main: "type Inner { type: String; match: Int; fn: Bool; }
type Middle { self: Inner; value: Inner json:\"v\"; endpoint: Int; }
type Outer { middle: Middle; request: String; reply: Int; }
api Words { rpc Deep::match; rpc Deep::type requires: [let]; }
role let;
locus Deep {
    fn match(o: Outer) -> Middle { return o.middle; }
    fn type(i: Inner) -> Outer fallible(Inner) { return Outer { }; }
}
main locus M { params { d: Deep = Deep { }; } }
fn main() { M { }; }
",
        surfaces: &["Words"],
        files: &[],
    },
    Case {
        name: "imported types and an imported locus",
        main: "import \"lib.hl\" as lib;
api Shop { rpc lib::Store::get; rpc Local::put requires: [clerk]; }
role clerk;
type Note { item: lib::Item; text: String; }
locus Local { fn put(n: Note) -> lib::Item { return n.item; } }
main locus M { params { s: lib::Store = lib::Store { }; l: Local = Local { }; } }
fn main() { M { }; }
",
        surfaces: &["Shop", "lib::Public"],
        files: &[(
            "lib.hl",
            "type Item { id: Int; size: Size; }
type Size { w: Int; h: Int; }
api Public { rpc Store::get; }
locus Store { fn get(i: Item) -> Item { return i; } }
",
        )],
    },
    Case {
        name: "a hub with several streams, one with no role and one with two",
        main: "role viewer;
role auditor;
type Tick { n: Int; }
type Alarm { level: Int; text: String; }
topic Ticks { payload: Tick; subject: \"t.ticks\"; }
topic Alarms { payload: Alarm; }
topic Pings { payload: Tick; }
api Feed { rpc Src::last; }
locus Tokens {
    fn principal(token: String) -> std::api::Principal { return std::api::Principal { mode: \"bearer\", name: \"\" }; }
}
locus Grants { fn holds(p: std::api::Principal, r: String) -> Bool { return false; } }
locus Src {
    bus { publish Ticks; publish Alarms; publish Pings; }
    fn last() -> Tick { return Tick { n: 1 }; }
}
main locus M {
    params {
        tokens: Tokens = Tokens { };
        roles: Grants = Grants { };
        src: Src = Src { };
        hub: ws::Hub = ws::Hub { bind: \"127.0.0.1:0\", principals: self.tokens, roles: self.roles, as: \"feed\" };
    }
    bindings {
        Ticks: self.hub bound: 8, on_full: drop_new;
        Alarms: self.hub requires: [viewer, auditor], bound: 16, on_full: drop_old;
        Pings: self.hub requires: [viewer], bound: 4, on_full: drop_old;
    }
}
fn main() { M { }; }
",
        surfaces: &["Feed"],
        files: &[],
    },
];

/// A program to generate clients of: its name, its text, its surfaces and
/// the files it imports.
type Sample = (
    &'static str,
    String,
    Vec<&'static str>,
    BTreeMap<String, String>,
);

/// Every surface of every case, and the witness's and limen's second
/// program's: generated twice alike, checked beside its program with no
/// diagnostic, alone too, and every member's request read back from the
/// text is the wire table's.
#[test]
fn varied_surfaces_give_clients_that_check_beside_their_programs() {
    let mut all: Vec<Sample> = CASES
        .iter()
        .map(|c| {
            let files = c
                .files
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            (c.name, c.main.to_string(), c.surfaces.to_vec(), files)
        })
        .collect();
    all.push((
        "desk",
        DESK.into(),
        vec!["Public", "Admin"],
        BTreeMap::new(),
    ));
    all.push((
        "second",
        SECOND.into(),
        vec!["Catalog", "second"],
        BTreeMap::new(),
    ));
    for (name, main, surfaces, mut files) in all {
        // A program's default surface is named after its file (its seed).
        let file = if name == "second" {
            "second.hl"
        } else {
            "main.hl"
        };
        let before = check_beside(file, &main, &files);
        assert!(before.is_empty(), "{name}: the program itself: {before:?}");
        let checked = check_program_with(file, &main, &mut |p| {
            files.get(p).cloned().ok_or_else(|| p.to_string())
        });
        let p = checked.program.unwrap();
        for surface in surfaces {
            let text = client(&p, surface);
            assert_eq!(text, client(&p, surface), "{name} {surface}: twice alike");
            let alone = check_program("client.hl", &text);
            assert!(alone.passed(), "{name} {surface} alone: {:?}", alone.errors);
            files.insert("client.hl".into(), text.clone());
            let beside = format!("{main}\nimport \"client.hl\" as api;\n");
            let found = check_beside(file, &beside, &files);
            assert!(
                found.is_empty(),
                "{name} {surface}:\n{}\n{text}",
                found.join("\n")
            );
            let s = ClientSurface::read(&p, surface).unwrap();
            hold_wire(&s, &text);
            let reader = Reader::new(&text).unwrap();
            for (_, st) in s.ws_streams() {
                let t = ident(&st.topic);
                assert!(
                    text.contains(&format!("locus {t}Subscription {{")),
                    "{name}: {t}"
                );
                assert_eq!(
                    reader.constant(&format!("TOPIC_{t}")),
                    Some(st.topic.clone())
                );
            }
            if s.ws_streams().next().is_none() {
                assert!(!text.contains("Subscription {"), "{name}: no hub, no locus");
            }
        }
    }
}

#[test]
fn a_shape_the_codec_does_not_carry_is_refused_by_the_rows() {
    let p = program("second.hl", SECOND);
    let err = generate_in(&p, "Backoffice", Lang::Hale).unwrap_err();
    assert!(err.to_string().contains("StockError"), "{err}");
}

#[test]
fn two_names_written_alike_are_refused_naming_both() {
    let lib = "type Item { id: Int; }\nlocus Store { fn get(i: Item) -> Item { return i; } }\n";
    let main = "import \"lib.hl\" as lib;
type lib_Item { id: Int; }
api S { rpc lib::Store::get; rpc Own::put; }
locus Own { fn put(i: lib_Item) -> Int { return 1; } }
";
    let files: BTreeMap<String, String> = [("lib.hl".to_string(), lib.to_string())].into();
    let checked = check_program_with("main.hl", main, &mut |p| {
        files.get(p).cloned().ok_or_else(|| p.to_string())
    });
    let p = checked.program.unwrap();
    let err = generate_in(&p, "S", Lang::Hale).unwrap_err().to_string();
    assert!(
        err.contains("lib::Item") && err.contains("lib_Item"),
        "{err}"
    );

    // A record the program names as one of the client's own types.
    let p = program(
        "m.hl",
        "type ApiRefusal { a: Int; }\napi S { rpc L::f; }\nlocus L { fn f(r: ApiRefusal) -> Int { return 1; } }\n",
    );
    let err = generate_in(&p, "S", Lang::Hale).unwrap_err().to_string();
    assert!(err.contains("ApiRefusal"), "{err}");

    // A member whose function is one of the client's own.
    let p = program(
        "m.hl",
        "api S { rpc api::call; }\nlocus api { fn call() -> Int { return 1; } }\n",
    );
    let err = generate_in(&p, "S", Lang::Hale).unwrap_err().to_string();
    assert!(
        err.contains("api_call") && err.contains("api::call"),
        "{err}"
    );

    // Two fields under one JSON key cannot be read back.
    let p = program(
        "m.hl",
        "type T { a: Int json:\"b\"; b: Int; }\napi S { rpc L::f; }\nlocus L { fn f(t: T) -> Int { return 1; } }\n",
    );
    let err = generate_in(&p, "S", Lang::Hale).unwrap_err().to_string();
    assert!(err.contains("`a` and `b`"), "{err}");

    // Two members whose functions would be written alike.
    let p = program(
        "m.hl",
        "api S { rpc A_b::c; rpc A::b_c; }\nlocus A_b { fn c() -> Int { return 1; } }\nlocus A { fn b_c() -> Int { return 1; } }\n",
    );
    let err = generate_in(&p, "S", Lang::Hale).unwrap_err().to_string();
    assert!(err.contains("A::b_c") && err.contains("A_b::c"), "{err}");
}

#[test]
fn written_call_refuses_what_it_cannot_read() {
    assert!(Reader::new("type {").is_err());
    let r = Reader::new("const A: String = \"x\";\nfn f() -> String { let a = g(); return a; }\n")
        .unwrap();
    assert!(r.call("f", &[]).unwrap_err().contains("no fn `g`"));
    assert!(r.call("f", &[json!(1)]).is_err());
    assert!(r
        .written_call(Transport::Unix, "X::y", "", &json!({}), &json!(1))
        .unwrap_err()
        .contains("no member"));
    // Recursion is bounded.
    let r = Reader::new("fn f() -> String { let a = f(); return a; }\n").unwrap();
    assert!(r.call("f", &[]).unwrap_err().contains("deeper"));
    // The head's framing is held.
    assert!(http_request_value("POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\n{}").is_err());
    assert!(http_request_value("POST / HTTP/1.0\r\n\r\n{}").is_err());
}

#[test]
fn the_client_declares_its_own_functions_the_codecs_and_the_members_and_no_other() {
    let p = program("desk.hl", DESK);
    let text = client(&p, "Public");
    let file = crate::hale::syntax::parse("client.hl", &text).unwrap();
    let mut fns: Vec<String> = file
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Fn(f) => Some(f.name.name.clone()),
            _ => None,
        })
        .collect();
    fns.sort();
    let mut want: Vec<String> = OWN_FNS.iter().map(|f| f.to_string()).collect();
    for r in [
        "CancelOrder",
        "Cancelled",
        "Fill",
        "OrderError",
        "OrderReceipt",
        "PlaceOrder",
    ] {
        for prefix in ["encode_", "valid_", "decode_"] {
            want.push(format!("{prefix}{r}"));
        }
    }
    want.extend(["Orders_cancel".to_string(), "Orders_place".to_string()]);
    want.sort();
    assert_eq!(fns, want);
}

#[test]
fn a_response_text_decodes_as_the_client_reads_it() {
    let d = decode_http_response(
        "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\n\r\n{\"refusal\": {\"kind\": \"unauthorized\", \"reason\": \"r\", \"requires\": [\"trader\"]}}",
    );
    assert_eq!(d.outcome, Outcome::Refusal);
    assert_eq!(d.refusal.unwrap().requires, ["trader"]);
    let d = decode_http_response("HTTP/1.1 200 OK\r\n\r\n{\"order\": 41}");
    assert_eq!(
        (d.outcome, d.value),
        (Outcome::Result, Some(json!({"order": 41})))
    );
    // The connection ended first, or the answer is none of the contract's.
    for text in [
        "",
        "HTTP/1.1 200 OK\r\n",
        "HTTP/1.1 302 Found\r\n\r\n",
        "SSH-2.0\r\n\r\n",
    ] {
        assert_eq!(
            decode_http_response(text).outcome,
            Outcome::Lost,
            "{text:?}"
        );
    }
    assert_eq!(decode_line("").outcome, Outcome::Lost);
    assert_eq!(decode_line("[1]\n").outcome, Outcome::Lost);
    let d = decode_line("{\"ok\": false, \"error\": {\"code\": \"x\"}}\n");
    assert_eq!(
        (d.outcome, d.value),
        (Outcome::HandlerError, Some(json!({"code": "x"})))
    );
}

#[test]
fn a_call_goes_through_the_request_builders_the_tests_read_back() {
    let p = program("desk.hl", DESK);
    let text = client(&p, "Public");
    let call = body_lines(&text, "api_call").join("\n");
    // Each transport writes what its builder returns, and nothing else.
    for (prefix, writes) in [
        (
            "ENDPOINT_UNIX",
            "stream.write(api_line_request(member, payload, id) + \"\\n\")",
        ),
        (
            "ENDPOINT_HTTP",
            "stream.write(api_http_request(host, bearer, member, payload))",
        ),
        (
            "ENDPOINT_WS",
            "socket.send(api_ws_call_frame(member, payload, id))",
        ),
    ] {
        assert!(
            call.contains(&format!("starts_with(endpoint, {prefix})")),
            "{prefix}"
        );
        assert!(call.contains(writes), "{writes}");
    }
    assert_eq!(
        call.matches(".write(").count() + call.matches(".send(").count(),
        3
    );
    // Every member hands `api_call` its own constant and its request's codec.
    assert!(text.contains(
        "let reply = api_call(endpoint, bearer, MEMBER_Orders_place, encode_PlaceOrder(request));"
    ));
    // A subscription writes the subscribe frame the tests read back.
    assert!(text.contains("self.socket.send(api_subscribe_frame(TOPIC_Fills))"));
}
