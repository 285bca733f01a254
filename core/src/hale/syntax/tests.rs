//! Syntax errors, one test per kind, each asserting the whole diagnostic:
//! `file:line:col: message`, the source line, and the caret line.

use super::{parse, MAX_NESTING};
use proptest::prelude::*;

/// The diagnostic `src` is refused with, rendered.
fn diag(src: &str) -> String {
    match parse("t.hl", src) {
        Ok(_) => panic!("parsed, but should not have:\n{src}"),
        Err(d) => d.to_string(),
    }
}

#[track_caller]
fn refused(src: &str, lines: &[&str]) {
    assert_eq!(diag(src), lines.join("\n"));
}

#[test]
fn an_unexpected_character() {
    refused(
        "role a;\nrole $b;",
        &["t.hl:2:6: unexpected character `$`", "role $b;", "     ^"],
    );
    refused(
        "role\u{7}a;",
        &[
            "t.hl:1:5: unexpected character U+0007",
            "role\u{7}a;",
            "    ^",
        ],
    );
}

#[test]
fn an_unterminated_string() {
    refused(
        "topic T { payload: X; subject: \"abc",
        &[
            "t.hl:1:32: unterminated string literal",
            "topic T { payload: X; subject: \"abc",
            "                               ^",
        ],
    );
}

#[test]
fn an_unknown_escape() {
    refused(
        "topic T { subject: \"a\\qb\"; }",
        &[
            "t.hl:1:22: unknown escape `\\q` in a string literal",
            "topic T { subject: \"a\\qb\"; }",
            "                     ^^",
        ],
    );
}

#[test]
fn an_unterminated_block_comment() {
    refused(
        "role a; /* x",
        &[
            "t.hl:1:9: unterminated block comment",
            "role a; /* x",
            "        ^^",
        ],
    );
}

#[test]
fn a_missing_semicolon() {
    refused(
        "role trader {",
        &[
            "t.hl:1:13: expected `;` after the role `trader`, found `{`",
            "role trader {",
            "            ^",
        ],
    );
}

#[test]
fn an_unknown_declaration() {
    refused(
        "roles trader;",
        &[
            "t.hl:1:1: expected a declaration (`role`, `unit`, `type`, `topic`, `api`, `locus`, `main locus`, \
             `fn`, `const` or `import`), found `roles`",
            "roles trader;",
            "^^^^^",
        ],
    );
}

#[test]
fn an_unclosed_locus() {
    refused(
        "locus A {\n  params { x: Int = 1; }\n",
        &[
            "t.hl:2:25: unexpected end of the file: the locus `A` opened at 1:9 is never closed",
            "  params { x: Int = 1; }",
            "                        ^",
        ],
    );
}

#[test]
fn a_mismatched_bracket_in_a_body() {
    refused(
        "fn f() {\n    g(1];\n}",
        &[
            "t.hl:2:8: mismatched `]`: the `(` at 2:6 is closed by `)`",
            "    g(1];",
            "       ^",
        ],
    );
}

#[test]
fn an_unclosed_body() {
    refused(
        "fn f() {\n  if x {\n",
        &[
            "t.hl:2:9: unexpected end of the file: the `{` at 2:8 is never closed",
            "  if x {",
            "        ^",
        ],
    );
}

#[test]
fn a_row_without_its_locus() {
    refused(
        "api P { rpc place; }",
        &[
            "t.hl:1:13: a row names its handler as `Locus::fn`, and `place` names no locus",
            "api P { rpc place; }",
            "            ^^^^^",
        ],
    );
}

#[test]
fn a_serve_argument_that_is_no_expression() {
    refused(
        "locus A { run() { api::serve(P, http::Rpc { bind: }, as: \"x\"); } }",
        &[
            "t.hl:1:51: expected an expression, found `}`",
            "locus A { run() { api::serve(P, http::Rpc { bind: }, as: \"x\"); } }",
            "                                                  ^",
        ],
    );
}

#[test]
fn a_json_tag_without_its_key() {
    refused(
        "type T { a: Int json:key; }",
        &[
            "t.hl:1:22: expected the key of the `json:\"key\"` tag (a string literal), found `key`",
            "type T { a: Int json:key; }",
            "                     ^^^",
        ],
    );
}

#[test]
fn an_unknown_locus_member() {
    refused(
        "locus A { field x; }",
        &[
            "t.hl:1:11: expected a member of the locus `A` (`params`, `bus`, `closure`, `placement`, `bindings`, \
             `fn`, a lifecycle method, `mode`, `on_failure`, `type` or `const`) or `}`, found `field`",
            "locus A { field x; }",
            "          ^^^^^",
        ],
    );
}

#[test]
fn a_unit_without_its_factor() {
    refused(
        "unit kilo = gram;",
        &[
            "t.hl:1:13: expected the factor of the unit `kilo` (a positive integer or a ratio), found `gram`",
            "unit kilo = gram;",
            "            ^^^^",
        ],
    );
}

#[test]
fn an_attribute_on_something_else() {
    refused(
        "@rpc\nrole a;",
        &[
            "t.hl:2:1: expected a `fn` or a `locus` after its attributes, found `role`",
            "role a;",
            "^^^^",
        ],
    );
}

#[test]
fn a_fractional_denomination() {
    refused(
        "type M = quantity Int in 1.5cent;",
        &[
            "t.hl:1:26: expected a denomination after `in` (a unit, or a positive integer multiple of one), \
             found `1.5cent`",
            "type M = quantity Int in 1.5cent;",
            "                         ^^^^^^^",
        ],
    );
}

#[test]
fn a_binding_option_without_its_colon() {
    refused(
        "main locus D { bindings { Fills: self.hub requires: [operator], on_full drop_old; } }",
        &[
            "t.hl:1:65: expected an option (`name: value`), `where …` or `;` in the binding of `Fills`, \
             found `on_full`",
            "main locus D { bindings { Fills: self.hub requires: [operator], on_full drop_old; } }",
            "                                                                ^^^^^^^",
        ],
    );
}

#[test]
fn the_caret_keeps_the_tabs_of_its_line() {
    refused(
        "\tlocus A {\n\t\tbus { publish; }\n\t}",
        &[
            "t.hl:2:16: expected a topic or a literal subject, found `;`",
            "\t\tbus { publish; }",
            "\t\t             ^",
        ],
    );
}

#[test]
fn nesting_past_the_limit_is_refused() {
    let deep = format!(
        "locus A {{ params {{ x: Int = {}1{}; }} }}",
        "[".repeat(200),
        "]".repeat(200)
    );
    let d = parse("t.hl", &deep).unwrap_err();
    assert_eq!(
        d.message,
        format!("this nests deeper than the {MAX_NESTING} levels a declaration may")
    );
    // The first `[` is at column 29; the 64th is the deepest admitted level.
    assert_eq!((d.line, d.col), (1, 29 + MAX_NESTING as u32));
    // A long chain of operators is nesting too: its tree is as deep as it is long.
    let chain = format!(
        "locus A {{ params {{ n: Int = 1{}; }} }}",
        " + 1".repeat(500)
    );
    assert!(parse("t.hl", &chain)
        .unwrap_err()
        .message
        .starts_with("this nests deeper"));
    let fields = format!("locus A {{ params {{ n: Int = a{}; }} }}", ".b".repeat(500));
    assert!(parse("t.hl", &fields)
        .unwrap_err()
        .message
        .starts_with("this nests deeper"));
    // A constant's value that is no declaration expression is skipped, not refused.
    let deep_const = format!("const N: Int = 1{};", " + 1".repeat(500));
    let f = parse("t.hl", &deep_const).unwrap();
    assert!(matches!(&f.items[0], crate::hale::syntax::ast::Item::Const(c) if c.value.is_none()));
    let types = format!("type T = {}Int{};", "[".repeat(500), "]".repeat(500));
    assert!(parse("t.hl", &types)
        .unwrap_err()
        .message
        .starts_with("this nests deeper"));
}

#[test]
fn a_body_nests_as_deep_as_it_likes() {
    let n = 100_000;
    let src = format!("fn f() {{ {}{} }}", "{ (".repeat(n), ") }".repeat(n));
    assert!(parse("t.hl", &src).is_ok());
    let open = format!("fn f() {{ {}", "[".repeat(n));
    assert!(parse("t.hl", &open)
        .unwrap_err()
        .message
        .contains("is never closed"));
}

#[test]
fn bodies_are_skipped_but_their_serve_sites_read() {
    let src = r#"
        fn helper() -> String { return "} /* not a comment \" }"; } // }
        main locus D {
            run() {
                /* } */ let ledger = Ledger { };
                if true { let inner = 1; }
                let h = api::serve(S, unix::Rpc { path: "/p" }, as: "a", bound: 1, on_full: refuse);
                api::serve(S, self.hub, as: "b");
                h.stop();
            }
        }
    "#;
    let f = parse("t.hl", src).unwrap();
    let crate::hale::syntax::ast::Item::Locus(d) = &f.items[1] else {
        panic!()
    };
    let crate::hale::syntax::ast::LocusMember::Fn(run) = &d.members[0] else {
        panic!()
    };
    let b = &run.body;
    assert_eq!(b.serves.len(), 2);
    assert_eq!(
        b.serves[0].handle.as_ref().map(|h| h.name.as_str()),
        Some("h")
    );
    assert_eq!(b.serves[1].handle, None);
    let lets: Vec<&str> = b.lets.iter().map(|l| l.name.name.as_str()).collect();
    assert_eq!(lets, ["ledger", "inner", "h"]);
    assert!(
        matches!(&b.lets[0].init, Some(crate::hale::syntax::ast::Expr::Struct { path, .. }) if path.text() == "Ledger")
    );
    // `inner` dissolves at the `}` of its `if` block, line 6; `ledger` at the body's end, line 10.
    assert_eq!(b.lets[1].scope_end.line, 6);
    assert_eq!(b.lets[0].scope_end.line, 10);
    assert_eq!(b.stops.len(), 1);
    assert_eq!(b.stops[0].target.name, "h");
}

#[test]
fn bodies_record_violations_and_literals() {
    let src = r#"
        fn f() {
            if x.qty > 1 { violate position_limit; }
            while !self.draining { sleep(1); }
            if ready { done }
            Desk { hub: ws::Hub { bind: "a" } };
            let o = Orders { next: 1 };
            return a.b { };
        }
    "#;
    let f = parse("t.hl", src).unwrap();
    let crate::hale::syntax::ast::Item::Fn(f) = &f.items[0] else {
        panic!()
    };
    let b = &f.body;
    assert_eq!(b.violates.len(), 1);
    assert_eq!(b.violates[0].closure.name, "position_limit");
    assert_eq!(
        (b.violates[0].span.start.line, b.violates[0].span.start.col),
        (3, 28)
    );
    let built: Vec<String> = b
        .literals
        .iter()
        .map(|e| match e {
            crate::hale::syntax::ast::Expr::Struct { path, .. } => path.text(),
            _ => panic!("a literal is a struct"),
        })
        .collect();
    // `ready { done }` reads as a literal too; `draining {` and `b { }`
    // continue a path, so they start none. A nested literal is listed again.
    assert_eq!(built, ["ready", "Desk", "ws::Hub", "Orders"]);
    assert!(b.literals[1].struct_field("hub").is_some());
}

/// The structural path before surfaces (§ What this replaced): the
/// `api` entry bound on the main locus and `@gated` handlers.
const RETIRED: &str = "type A { n: Int; }
locus Desk {
    @gated(operator) fn close(a: A) -> A { return a; }
}
main locus M {
    params { desk: Desk = Desk { }; }
    bindings { api: unix(\"/run/desk.sock\"); }
    run() { }
}
";

#[test]
fn the_retired_api_entry_is_refused_naming_its_replacement() {
    let src = RETIRED.replace("@gated(operator) ", "");
    refused(
        &src,
        &[
            &format!("t.hl:7:16: {}", super::RETIRED_API_ENTRY),
            "    bindings { api: unix(\"/run/desk.sock\"); }",
            "               ^^^",
        ],
    );
    for replacement in [
        "`api` block",
        "@rpc(requires:",
        "api::serve(",
        "bound to a hub",
    ] {
        assert!(
            super::RETIRED_API_ENTRY.contains(replacement),
            "{replacement}"
        );
    }
    // A topic binding to a hub is no entry, and parses.
    let hub = src.replace(
        "bindings { api: unix(\"/run/desk.sock\"); }",
        "bindings { Fills: self.hub bound: 8, on_full: drop_old; }",
    );
    parse("t.hl", &hub).unwrap();
}

#[test]
fn gated_is_refused_naming_its_replacement() {
    let src = RETIRED.replace("bindings { api: unix(\"/run/desk.sock\"); }\n", "");
    refused(
        &src,
        &[
            &format!("t.hl:3:5: {}", super::RETIRED_GATED),
            "    @gated(operator) fn close(a: A) -> A { return a; }",
            "    ^^^^^^",
        ],
    );
    assert!(super::RETIRED_GATED.contains("requires"));
    // Bare, on a function at the top level, the same.
    let bare = diag("type A { n: Int; }\n@gated\nfn f(a: A) -> A { return a; }\n");
    assert!(
        bare.starts_with(&format!("t.hl:2:1: {}", super::RETIRED_GATED)),
        "{bare}"
    );
    // `@rpc` with `requires` is the replacement, and parses.
    parse(
        "t.hl",
        &src.replace("@gated(operator)", "@rpc(requires: [operator])"),
    )
    .unwrap();
}

#[test]
fn a_program_of_the_retired_path_gets_one_diagnostic() {
    // The check stops at the first: one diagnostic, the first retired form.
    let checked = crate::hale::check_program("t.hl", RETIRED);
    assert!(checked.program.is_none());
    assert_eq!(checked.errors.len(), 1);
    assert!(
        checked.errors[0].message.contains("`@gated` is retired"),
        "{}",
        checked.errors[0]
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    /// Any text is a file or a diagnostic, never a panic.
    #[test]
    fn any_text_is_parsed_or_refused(src in "\\PC{0,200}") {
        let _ = parse("t.hl", &src);
    }

    /// Text made of the language's own words and brackets reaches deeper
    /// into the parser than arbitrary text; it too never panics.
    #[test]
    fn any_token_soup_is_parsed_or_refused(words in proptest::collection::vec(
        prop_oneof![
            Just("role"), Just("type"), Just("locus"), Just("main"), Just("fn"), Just("api"), Just("rpc"),
            Just("topic"), Just("unit"), Just("params"), Just("bus"), Just("bindings"), Just("placement"),
            Just("run"), Just("let"), Just("api::serve("), Just("{"), Just("}"), Just("("), Just(")"),
            Just("["), Just("]"), Just(";"), Just(":"), Just(","), Just("="), Just("x"), Just("Int"),
            Just("\"s\""), Just("64"), Just("self.x"), Just("@rpc"), Just("json:\"k\""), Just("enum"),
            Just("quantity"), Just("in"), Just("->"), Just("fallible("), Just("requires:"),
        ],
        0..60,
    )) {
        let _ = parse("t.hl", &words.join(" "));
    }
}
