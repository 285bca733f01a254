//! One test per diagnostic of the admission laws, each asserting the whole
//! rendered diagnostic — `file:line:col: message`, the source line, the
//! caret line — and that it is the program's only error. Each program is
//! a small one of its own, derived from the witness's declarations or the
//! spec's examples.

mod rows;
mod serve;
mod streams;

use super::check_source;

/// The check of `src` as the file `t.hl` (its seed `t`).
fn run(src: &str) -> super::Check {
    check_source("t.hl", src).unwrap_or_else(|d| panic!("does not parse:\n{d}"))
}

/// The errors of `src`, rendered.
fn errors(src: &str) -> Vec<String> {
    run(src).errors.iter().map(ToString::to_string).collect()
}

/// `src` is refused with exactly the one diagnostic `lines`.
#[track_caller]
fn refused(src: &str, lines: &[&str]) {
    assert_eq!(errors(src), [lines.join("\n")], "\n{src}");
}

/// `src` is admitted: no law refuses it.
#[track_caller]
fn admitted(src: &str) {
    assert_eq!(errors(src), Vec::<String>::new(), "\n{src}");
}

/// The witness's surfaces over small loci, seven lines: a served program
/// appends its main locus from line 8.
const DESK: &str = "\
role trader;
type PlaceOrder { qty: Int; }
type OrderReceipt { order: Int; }
locus Orders { fn place(o: PlaceOrder) -> OrderReceipt { return OrderReceipt { order: 1 }; } }
locus Ledger { fn rebalance() -> Int { return 0; } }
api Public { rpc Orders::place requires: [trader]; }
api Admin { rpc Orders::place; rpc Ledger::rebalance; }
";

/// [`DESK`] and the lines of a main locus, from line 8.
fn desk(lines: &[&str]) -> String {
    format!("{DESK}{}\n", lines.join("\n"))
}

#[test]
fn the_desk_serves_as_written() {
    admitted(&desk(&[
        "main locus Desk {",
        "params { orders: Orders = Orders { }; ledger: Ledger = Ledger { }; }",
        "run() {",
        "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", bound: 64, on_full: refuse);",
        "let admin = api::serve(Admin, unix::Rpc { path: \"/run/a.sock\" }, as: \"admin\", bound: 16, on_full: refuse);",
        "public.stop();",
        "admin.stop();",
        "} }",
    ]));
}

#[test]
fn a_second_declaration_of_a_name() {
    refused(
        "role trader;\nrole trader;",
        &[
            "t.hl:2:6: role `trader` is declared twice, first at line 1: a name is declared once",
            "role trader;",
            "     ^^^^^^",
        ],
    );
}

#[test]
fn findings_are_in_source_order() {
    let src = "api A { rpc X::b; rpc X::a requires: [nobody]; }";
    let found: Vec<String> = run(src).errors.iter().map(|d| d.message.clone()).collect();
    assert_eq!(
        found,
        [
            "rpc `X::b`: no locus `X` is declared",
            "rpc `X::a`: no locus `X` is declared",
            "rpc `X::a` requires `nobody`, which no `role` declares",
        ]
    );
}

/// A source text of `lines`.
fn src(lines: &[&str]) -> String {
    lines.join("\n")
}

/// A rendered diagnostic of `lines`.
fn diag(lines: &[&str]) -> String {
    lines.join("\n")
}
