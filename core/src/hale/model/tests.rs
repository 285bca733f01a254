//! The model's rules, one program fragment each.

use super::*;
use crate::hale::syntax::ast::FnKind;

fn program(src: &str) -> Program {
    parse_program("t.hl", src).unwrap_or_else(|d| panic!("{d}"))
}

#[test]
fn the_seed_is_the_file_stem() {
    assert_eq!(seed_of("program.hl"), "program");
    assert_eq!(seed_of("conformance/programs/second.hl"), "second");
    assert_eq!(seed_of("C:\\work\\desk.hl"), "desk");
    assert_eq!(seed_of("noext"), "noext");
}

#[test]
fn wire_subjects_join_their_parents_root_first() {
    let p = program(
        "type M { n: Int; }
         topic Org { payload: M; subject: \"org\"; }
         topic Metrics : Org { payload: M; subject: \"metrics\"; }
         topic Plain { payload: M; }
         topic Orphan : Missing { payload: M; subject: \"o\"; }
         topic Loop : Loop { payload: M; subject: \"l\"; }",
    );
    let wire = |t: &str| {
        (
            p.topic(t).unwrap().wire_subject.as_str(),
            p.topic(t).unwrap().broken_chain,
        )
    };
    assert_eq!(wire("Metrics"), ("org.metrics", false));
    assert_eq!(wire("Org"), ("org", false));
    assert_eq!(
        wire("Plain"),
        ("Plain", false),
        "a topic with no subject contributes its name"
    );
    assert_eq!(wire("Orphan"), ("o", true));
    assert_eq!(wire("Loop"), ("l", true));
}

#[test]
fn a_row_names_a_member_fn_or_says_what_it_names() {
    let p = program(
        "api S {
             rpc Nope::f;
             rpc L::nope;
             rpc L::run;
             rpc L::on_failure;
             rpc L::bulk;
             rpc L::f;
         }
         locus L {
             run() { }
             mode bulk() { }
             on_failure(x: L, err: ClosureViolation) { }
             fn f() -> Int { return 1; }
         }",
    );
    let handlers: Vec<Handler> = p
        .surface("S")
        .unwrap()
        .rows
        .iter()
        .map(|r| r.handler)
        .collect();
    assert_eq!(
        handlers,
        [
            Handler::NoLocus,
            Handler::NoFn,
            Handler::NotMember(FnKind::Lifecycle),
            Handler::NotMember(FnKind::OnFailure),
            Handler::NotMember(FnKind::Mode),
            Handler::Member,
        ]
    );
    assert_eq!(
        p.surface_digest("S"),
        Err(DigestError::Unresolved {
            member: "Nope::f".to_string(),
            handler: Handler::NoLocus
        })
    );
    assert_eq!(
        p.surface_digest("T"),
        Err(DigestError::NoSurface("T".to_string()))
    );
}

#[test]
fn a_handler_takes_one_request_beside_a_trailing_context() {
    let p = program(
        "type A { n: Int; }
         api S { rpc L::two; rpc L::lead; rpc L::none; }
         locus L {
             fn two(a: A, b: A, ctx: std::api::Context) -> A { return a; }
             fn lead(ctx: std::api::Context, a: A) -> A { return a; }
             fn none(ctx: std::api::ServedContext) -> () { }
         }",
    );
    let rows = &p.surface("S").unwrap().rows;
    assert_eq!(
        (
            rows[0].value_params,
            rows[0].request.is_none(),
            rows[0].context
        ),
        (2, true, Some(ContextKind::Context))
    );
    // A context that is not trailing is a value parameter like any other.
    assert_eq!((rows[1].value_params, rows[1].context), (2, None));
    assert_eq!(
        (rows[2].value_params, rows[2].response.is_none()),
        (0, true),
        "`-> ()` is no response"
    );
    assert_eq!(
        p.surface_digest("S"),
        Err(DigestError::Requests {
            member: "L::two".to_string(),
            count: 2
        })
    );
}

#[test]
fn rpc_attributes_make_the_seed_s_default_surface() {
    let p = parse_program(
        "desk.hl",
        "role r;
         api desk { rpc L::a; }
         api Other { rpc L::a; }
         locus L {
             fn a() -> Int { return 1; }
             @rpc(requires: [r, r])
             fn b() -> Int { return 2; }
             @rpc
             run() { }
         }
         @rpc fn helper() { }",
    )
    .unwrap();
    // A block bearing the seed's name takes the @rpc rows after its own.
    let members: Vec<(&str, Vec<&str>, Handler)> = p
        .surface("desk")
        .unwrap()
        .rows
        .iter()
        .map(|r| (r.member.as_str(), r.requires_names(), r.handler))
        .collect();
    assert_eq!(
        members,
        [
            ("L::a", vec![], Handler::Member),
            ("L::b", vec!["r", "r"], Handler::Member),
            ("L::run", vec![], Handler::NotMember(FnKind::Lifecycle)),
        ]
    );
    assert_eq!(p.surface("Other").unwrap().rows.len(), 1);
    // `@rpc` on a free fn joins no surface; the attribute stays for the law.
    assert_eq!(p.free_fns[0].attrs[0].name.name, "rpc");
}

#[test]
fn second_declarations_are_duplicates() {
    let p = program(
        "role a; role a; type T { x: Int; } type T { y: Int; } api S { } api S { }
         topic X { payload: T; } topic X { payload: T; } locus L { } locus L { }",
    );
    let kinds: Vec<(&str, &str)> = p
        .duplicates
        .iter()
        .map(|d| (d.kind, d.name.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("role", "a"),
            ("type", "T"),
            ("api", "S"),
            ("topic", "X"),
            ("locus", "L")
        ]
    );
    assert_eq!(
        p.contract_shape(&p.types.get("T").map(|_| named("T")).unwrap())
            .unwrap(),
        "x:i",
        "the first wins"
    );
    assert_eq!(p.duplicates[0].first.start.col, 6);
    assert_eq!(p.duplicates[0].second.start.col, 14);
}

fn named(name: &str) -> crate::hale::syntax::ast::TypeExpr {
    let f = crate::hale::syntax::parse("t.hl", &format!("type N = {name};")).unwrap();
    let crate::hale::syntax::ast::Item::Type(t) = &f.items[0] else {
        panic!()
    };
    let crate::hale::syntax::ast::TypeBody::Alias(ty) = &t.body else {
        panic!()
    };
    ty.clone()
}

#[test]
fn pools_come_from_the_main_locus_s_placement() {
    let p = program(
        "type A { n: Int; }
         api S { rpc L::f; rpc K::g; rpc J::h; }
         locus L { fn f(a: A) -> A { return a; } }
         locus K { fn g(a: A) -> A { return a; } }
         locus J { fn h(a: A) -> A { return a; } }
         main locus M {
             params { l: L = L { }; k = K { }; j: J = J { }; }
             placement { l: cooperative(pool = fast); j: cooperative; }
             run() { let s = api::serve(S, std::api::test::Rpc { }, as: \"s\", bound: 1, on_full: refuse); }
         }",
    );
    let e = p.exposure("s").unwrap();
    let pools: Vec<(&str, Binding, Option<&str>)> = e
        .receivers
        .iter()
        .map(|r| (r.ty.as_str(), r.binding, r.pool.as_deref()))
        .collect();
    // `k` has no placement entry and no declared type: its literal types it, and it runs on `main`.
    assert_eq!(
        pools,
        [
            ("L", Binding::Inferred, Some("fast")),
            ("K", Binding::Inferred, Some("main")),
            ("J", Binding::Inferred, Some("main"))
        ]
    );
    assert_eq!(e.listener.as_ref().unwrap().transport, TransportKind::Test);
    assert_eq!(e.listener.as_ref().unwrap().address, None);
    assert_eq!(
        (e.principals.clone(), e.roles.clone()),
        (Source::None, Source::None)
    );
    let served: Vec<Option<&str>> = p.served_rows(e).iter().map(|s| s.pool).collect();
    assert_eq!(served, [Some("fast"), Some("main"), Some("main")]);
}

#[test]
fn serve_sites_keep_what_the_laws_read() {
    let p = program(
        "type A { n: Int; }
         api S { rpc L::f; }
         locus L { fn f(a: A) -> A { return a; } }
         locus Desk {
             params { t = quic::Rpc { bind: \"x\" }; }
             run() {
                 let ledger = L { };
                 let h = api::serve(S, self.t, as: \"q\", receivers: { L: ledger, Extra: self.nothing }, bound: n, on_full: drop_old, extra: 1);
                 h.stop();
             }
         }
         fn serve_it() { api::serve(S, http::Rpc { bind: \"127.0.0.1:1\", codec: protobuf }, bound: 2); }",
    );
    assert_eq!(p.serve_sites.len(), 2);
    let q = p.exposure("q").unwrap();
    let site = &p.serve_sites[q.site];
    assert!(
        matches!(&site.enclosing, Enclosing::Locus { locus, is_main: false, function, kind: FnKind::Lifecycle } if locus == "Desk" && function == "run")
    );
    assert_eq!(
        q.listener.as_ref().unwrap().transport,
        TransportKind::Other("quic::Rpc".to_string())
    );
    let receivers: Vec<(&str, Instance, Option<&str>)> = q
        .receivers
        .iter()
        .map(|r| (r.ty.as_str(), r.instance.clone(), r.pool.as_deref()))
        .collect();
    assert_eq!(
        receivers,
        [
            ("L", Instance::Let("ledger".to_string()), None),
            ("Extra", Instance::Param("nothing".to_string()), None)
        ]
    );
    assert_eq!(
        (q.bound, q.on_full.as_deref()),
        (None, Some("drop_old")),
        "a bound that is no integer is none"
    );
    assert_eq!(site.other.len(), 1);
    let body = p.serve_body(site).unwrap();
    assert_eq!(body.lets[0].name.name, "ledger");
    assert_eq!(body.stops[0].target.name, "h");
    // The free fn's site: no serving locus, so nothing is inferred.
    let free = &p.exposures[1];
    assert!(
        matches!(&p.serve_sites[free.site].enclosing, Enclosing::Free { function } if function == "serve_it")
    );
    assert_eq!((free.name.clone(), free.codec.as_str()), (None, "protobuf"));
    assert_eq!(
        free.unbound,
        [Unbound {
            ty: "L".to_string(),
            candidates: vec![]
        }]
    );
}

#[test]
fn a_stream_s_direction_is_what_the_program_does_with_its_topic() {
    let p = program(
        "type M { n: Int; }
         topic Out { payload: M; } topic In { payload: M; } topic Idle { payload: M; }
         locus P { bus { publish Out; subscribe In as on_in; } fn on_in(m: M) { } }
         main locus D {
             params { hub: ws::Hub = ws::Hub { bind: \"127.0.0.1:1\", as: \"h\" }; }
             bindings {
                 Out: self.hub bound: 1, on_full: drop_old;
                 In: self.hub bound: 1, on_full: drop_old;
                 Idle: self.hub bound: 1, on_full: drop_old;
                 Other: unix(\"/tmp/x\", role: listen);
             }
         }",
    );
    let h = p.hub("h").unwrap();
    let dirs: Vec<(&str, Option<Direction>)> = h
        .streams
        .iter()
        .map(|s| (s.topic.name.as_str(), s.direction))
        .collect();
    assert_eq!(
        dirs,
        [
            ("Out", Some(Direction::Out)),
            ("In", Some(Direction::In)),
            ("Idle", None)
        ]
    );
    assert_eq!(
        p.hub_digest("h"),
        Err(DigestError::Stream {
            topic: "Idle".to_string(),
            missing: "direction"
        })
    );
    assert_eq!(
        h.literal.principals,
        Source::None,
        "a ws hub has no kernel credentials"
    );
}

#[test]
fn a_role_may_include_others() {
    let p = program("role operator; role admin includes [operator, auditor]; role auditor;");
    let admin = p.role("admin").unwrap();
    let includes: Vec<&str> = admin.includes.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(includes, ["operator", "auditor"]);
    assert!(p.role("operator").unwrap().includes.is_empty());
}

#[test]
fn a_large_program_builds_with_every_lookup_indexed() {
    let n = 5_000;
    let mut src = String::from("type A { n: Int; }\ntopic T0 { payload: A; }\n");
    let mut rows = String::new();
    let mut params = String::new();
    let mut serves = String::new();
    for i in 0..n {
        src.push_str(&format!(
            "role r{i};\nlocus L{i} {{ fn f(a: A) -> A {{ return a; }} }}\n"
        ));
        src.push_str(&format!("topic T{} : T{i} {{ payload: A; }}\n", i + 1));
        rows.push_str(&format!("rpc L{i}::f requires: [r{i}];\n"));
        params.push_str(&format!("p{i}: L{i} = L{i} {{ }};\n"));
    }
    for i in 0..2_000 {
        serves.push_str(&format!(
            "let s{i} = api::serve(Small, std::api::test::Rpc {{ }}, as: \"s{i}\", bound: 1, on_full: refuse);\n"
        ));
    }
    serves.push_str("let big = api::serve(S, std::api::test::Rpc { }, as: \"big\", bound: 1, on_full: refuse);\n");
    src.push_str(&format!("api Small {{ rpc L7::f; }}\napi S {{ {rows} }}\nmain locus M {{ params {{ {params} }} run() {{ {serves} }} }}\n"));
    let p = program(&src);
    assert_eq!(p.surface("S").unwrap().rows.len(), n);
    assert!(p
        .surface("S")
        .unwrap()
        .rows
        .iter()
        .all(|r| r.handler == Handler::Member));
    assert_eq!(p.exposures.len(), 2_001);
    assert_eq!(
        p.exposures[1999].receivers[0].instance,
        Instance::Param("p7".to_string())
    );
    let big = p.exposure("big").unwrap();
    assert_eq!(
        big.receivers.len(),
        n,
        "every row's type inferred from its one param"
    );
    assert!(p.undeclared_roles().is_empty());
    assert!(p.surface_digest("S").is_ok());
    // A parent chain is read 64 levels deep, and no deeper.
    let deep = p.topic(&format!("T{n}")).unwrap();
    assert!(deep.broken_chain);
    assert_eq!(
        deep.wire_subject.split('.').count(),
        hub::MAX_TOPIC_DEPTH + 1
    );
    assert!(!p.topic("T10").unwrap().broken_chain);
    assert_eq!(p.topic("T3").unwrap().wire_subject, "T0.T1.T2.T3");
}
