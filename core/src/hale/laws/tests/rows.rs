//! Laws 1–7 over surface rows (§ Surfaces and their rows), and `@rpc` on a
//! free fn. Generated expectations are the spec's sentences; the programs
//! are the witness's declarations cut down to the case.

use super::{admitted, diag, errors, refused, run, src};

/// Law 1: `Locus::fn` resolves to a member fn; the nearest fn is offered
/// when one is near enough, and none otherwise.
#[test]
fn an_unknown_handler_fn() {
    assert_eq!(
        errors(&src(&[
            "type PlaceOrder { qty: Int; }",
            "locus Orders { fn place(o: PlaceOrder) -> Int { return 1; } run() { } }",
            "api Public { rpc Orders::plcae; rpc Orders::zzz; rpc Orders::rn; }",
        ])),
        [
            diag(&[
                "t.hl:3:18: rpc `Orders::plcae`: `Orders` declares no fn `plcae`; did you mean `place`?",
                "api Public { rpc Orders::plcae; rpc Orders::zzz; rpc Orders::rn; }",
                "                 ^^^^^^^^^^^^^",
            ]),
            diag(&[
                "t.hl:3:37: rpc `Orders::zzz`: `Orders` declares no fn `zzz`",
                "api Public { rpc Orders::plcae; rpc Orders::zzz; rpc Orders::rn; }",
                "                                    ^^^^^^^^^^^",
            ]),
            diag(&[
                "t.hl:3:54: rpc `Orders::rn`: `Orders` declares no fn `rn`",
                "api Public { rpc Orders::plcae; rpc Orders::zzz; rpc Orders::rn; }",
                "                                                     ^^^^^^^^^^",
            ]),
        ]
    );
}

/// Law 1: the locus part names a declared locus.
#[test]
fn an_unknown_locus() {
    assert_eq!(
        errors(&src(&[
            "locus Orders { fn place() -> Int { return 1; } }",
            "api Public { rpc Ordrs::place; rpc Books::place; }",
        ])),
        [
            diag(&[
                "t.hl:2:18: rpc `Ordrs::place`: no locus `Ordrs` is declared; did you mean `Orders`?",
                "api Public { rpc Ordrs::place; rpc Books::place; }",
                "                 ^^^^^^^^^^^^",
            ]),
            diag(&[
                "t.hl:2:36: rpc `Books::place`: no locus `Books` is declared",
                "api Public { rpc Ordrs::place; rpc Books::place; }",
                "                                   ^^^^^^^^^^^^",
            ]),
        ]
    );
}

/// Law 1: a lifecycle method is no handler, whether a row or `@rpc` names
/// it.
#[test]
fn a_lifecycle_method_is_no_handler() {
    refused(
        &src(&[
            "locus Orders { run() { } }",
            "api Public { rpc Orders::run; }",
        ]),
        &[
            "t.hl:2:18: rpc `Orders::run`: `run` is a lifecycle method of `Orders`, and a handler is a member fn",
            "api Public { rpc Orders::run; }",
            "                 ^^^^^^^^^^^",
        ],
    );
    refused(
        &src(&[
            "locus Orders {",
            "@rpc",
            "birth() { }",
            "}",
        ]),
        &[
            "t.hl:3:1: rpc `Orders::birth`: `birth` is a lifecycle method of `Orders`, and a handler is a member fn",
            "birth() { }",
            "^^^^^",
        ],
    );
}

/// Law 1: a mode is named so.
#[test]
fn a_mode_is_no_handler() {
    refused(
        &src(&[
            "locus Orders { mode bulk() { } }",
            "api Public { rpc Orders::bulk; }",
        ]),
        &[
            "t.hl:2:18: rpc `Orders::bulk`: `bulk` is a mode of `Orders`, and a handler is a member fn",
            "api Public { rpc Orders::bulk; }",
            "                 ^^^^^^^^^^^^",
        ],
    );
}

/// Law 1: a failure handler is named so.
#[test]
fn a_failure_handler_is_no_handler() {
    refused(
        &src(&[
            "locus Orders { on_failure(o: Orders, err: ClosureViolation) { } }",
            "api Public { rpc Orders::on_failure; }",
        ]),
        &[
            "t.hl:2:18: rpc `Orders::on_failure`: `on_failure` is a failure handler of `Orders`, and a handler is a member fn",
            "api Public { rpc Orders::on_failure; }",
            "                 ^^^^^^^^^^^^^^^^^^",
        ],
    );
}

/// Law 1: `@rpc` goes on a locus fn.
#[test]
fn rpc_on_a_free_fn() {
    refused(
        &src(&[
            "@rpc(requires: [trader])",
            "fn helper() -> Int { return 1; }",
            "role trader;",
        ]),
        &[
            "t.hl:1:1: `@rpc` on `helper`: a handler is a member fn of a locus, and `helper` is a free fn",
            "@rpc(requires: [trader])",
            "^^^^^^^^^^^^^^^^^^^^^^^^",
        ],
    );
}

/// Law 2: at most one value parameter beside a trailing context; a context
/// anywhere else is a value parameter. A handler in two surfaces is refused
/// once, at the first row naming it.
#[test]
fn a_handler_takes_one_request() {
    assert_eq!(
        errors(&src(&[
            "locus Orders {",
            "fn fill(a: Int, b: Int) -> Int { return a; }",
            "fn sweep(c: std::api::Context, a: Int, b: Int) -> Int { return a; }",
            "fn one(a: Int, ctx: std::api::Context) -> Int { return a; }",
            "}",
            "api Public { rpc Orders::fill; rpc Orders::sweep; rpc Orders::one; }",
            "api Admin { rpc Orders::fill; }",
        ])),
        [
            diag(&[
                "t.hl:6:18: rpc `Orders::fill`: a handler takes its request as one parameter, and `fill` takes two: declare a type for the request",
                "api Public { rpc Orders::fill; rpc Orders::sweep; rpc Orders::one; }",
                "                 ^^^^^^^^^^^^",
            ]),
            diag(&[
                "t.hl:6:36: rpc `Orders::sweep`: a handler takes its request as one parameter, and `sweep` takes three: declare a type for the request",
                "api Public { rpc Orders::fill; rpc Orders::sweep; rpc Orders::one; }",
                "                                   ^^^^^^^^^^^^^",
            ]),
        ]
    );
}

/// Law 3: the second row of a member is refused; the same member in
/// another surface is another row.
#[test]
fn a_member_is_one_row_of_its_surface() {
    refused(
        &src(&[
            "role operator;",
            "locus Orders { fn cancel() -> Int { return 1; } }",
            "api Public { rpc Orders::cancel; }",
            "api Admin { rpc Orders::cancel requires: [operator]; rpc Orders::cancel; }",
        ]),
        &[
            "t.hl:4:58: rpc `Orders::cancel` is in `Admin` twice: a member is one row; keep one, with the roles it requires",
            "api Admin { rpc Orders::cancel requires: [operator]; rpc Orders::cancel; }",
            "                                                         ^^^^^^^^^^^^^^",
        ],
    );
    refused(
        &src(&[
            "locus Orders {",
            "@rpc",
            "fn cancel() -> Int { return 1; }",
            "}",
            "api t { rpc Orders::cancel; }",
        ]),
        &[
            "t.hl:3:4: rpc `Orders::cancel` is in `t` twice: a member is one row; keep one, with the roles it requires",
            "fn cancel() -> Int { return 1; }",
            "   ^^^^^^",
        ],
    );
}

/// Law 4: every role a row requires is declared, in an `api` row and in
/// `@rpc(requires: …)`.
#[test]
fn a_required_role_is_declared() {
    assert_eq!(
        errors(&src(&[
            "role trader;",
            "role operator;",
            "locus Orders { fn cancel() -> Int { return 1; } }",
            "api Public { rpc Orders::cancel requires: [tradr, operator, auditor]; }",
        ])),
        [
            diag(&[
                "t.hl:4:44: rpc `Orders::cancel` requires `tradr`, which no `role` declares; did you mean `trader`?",
                "api Public { rpc Orders::cancel requires: [tradr, operator, auditor]; }",
                "                                           ^^^^^",
            ]),
            diag(&[
                "t.hl:4:61: rpc `Orders::cancel` requires `auditor`, which no `role` declares",
                "api Public { rpc Orders::cancel requires: [tradr, operator, auditor]; }",
                "                                                            ^^^^^^^",
            ]),
        ]
    );
    refused(
        &src(&[
            "role trader;",
            "locus Orders {",
            "@rpc(requires: [Trader])",
            "fn cancel() -> Int { return 1; }",
            "}",
        ]),
        &[
            "t.hl:3:17: rpc `Orders::cancel` requires `Trader`, which no `role` declares; did you mean `trader`?",
            "@rpc(requires: [Trader])",
            "                ^^^^^^",
        ],
    );
}

/// Law 5: a field the codec does not carry is named by its path from the
/// row's type, a nested struct's field by `inner.raw`.
#[test]
fn a_field_the_json_codec_does_not_carry() {
    refused(
        &src(&[
            "type Export { n: Int; raw: Bytes; }",
            "locus Ledger { fn dump() -> Export { return Export { n: 1 }; } }",
            "api Books { rpc Ledger::dump; }",
            "main locus Desk {",
            "params { ledger: Ledger = Ledger { }; }",
            "run() { let h = api::serve(Books, std::api::test::Rpc { }, as: \"books\", bound: 1, on_full: refuse); h.stop(); }",
            "}",
        ]),
        &[
            "t.hl:3:17: rpc `Ledger::dump`: its response `Export` has a field `raw: Bytes`, which the JSON codec does not carry",
            "api Books { rpc Ledger::dump; }",
            "                ^^^^^^^^^^^^",
        ],
    );
    refused(
        &src(&[
            "type Inner { ok: Bool; raw: Bytes; }",
            "type Export { n: Int; inner: Inner; }",
            "locus Ledger { fn dump(e: Export) -> Int { return 1; } }",
            "api Books { rpc Ledger::dump; }",
            "main locus Desk {",
            "params { ledger: Ledger = Ledger { }; }",
            "run() { let h = api::serve(Books, std::api::test::Rpc { }, as: \"books\", bound: 1, on_full: refuse); h.stop(); }",
            "}",
        ]),
        &[
            "t.hl:4:17: rpc `Ledger::dump`: its request `Export` has a field `inner.raw: Bytes`, which the JSON codec does not carry",
            "api Books { rpc Ledger::dump; }",
            "                ^^^^^^^^^^^^",
        ],
    );
}

/// Law 5: a request, response or error that is itself no type the codec
/// carries: `Bytes`, and (§ Codecs) an enum, a list, a map, an optional, a
/// point.
#[test]
fn a_type_the_json_codec_does_not_carry() {
    refused(
        &src(&[
            "locus Ledger { fn dump(b: Bytes) -> Int { return 1; } }",
            "api Books { rpc Ledger::dump; }",
            "main locus Desk {",
            "params { ledger: Ledger = Ledger { }; }",
            "run() { let h = api::serve(Books, std::api::test::Rpc { }, as: \"books\", bound: 1, on_full: refuse); h.stop(); }",
            "}",
        ]),
        &[
            "t.hl:2:17: rpc `Ledger::dump`: its request is `Bytes`, which the JSON codec does not carry",
            "api Books { rpc Ledger::dump; }",
            "                ^^^^^^^^^^^^",
        ],
    );
    refused(
        &src(&[
            "type Side = enum { Buy, Sell };",
            "locus Ledger { fn dump() -> Int fallible(Side) { return 1; } }",
            "api Books { rpc Ledger::dump; }",
            "main locus Desk {",
            "params { ledger: Ledger = Ledger { }; }",
            "run() { let h = api::serve(Books, std::api::test::Rpc { }, as: \"books\", bound: 1, on_full: refuse); h.stop(); }",
            "}",
        ]),
        &[
            "t.hl:3:17: rpc `Ledger::dump`: its error is `Side`, which the JSON codec does not carry",
            "api Books { rpc Ledger::dump; }",
            "                ^^^^^^^^^^^^",
        ],
    );
    refused(
        &src(&[
            "locus Ledger { fn dump() -> [Int] { return [1]; } }",
            "api Books { rpc Ledger::dump; }",
            "main locus Desk {",
            "params { ledger: Ledger = Ledger { }; }",
            "run() { let h = api::serve(Books, std::api::test::Rpc { }, as: \"books\", bound: 1, on_full: refuse); h.stop(); }",
            "}",
        ]),
        &[
            "t.hl:2:17: rpc `Ledger::dump`: its response is `[Int]`, which the JSON codec does not carry",
            "api Books { rpc Ledger::dump; }",
            "                ^^^^^^^^^^^^",
        ],
    );
    assert_eq!(
        errors(&src(&[
            "locus Ledger { fn dump(m: Map<String, Int>) -> Option<Int> { return 1; } }",
            "api Books { rpc Ledger::dump; }",
            "main locus Desk {",
            "params { ledger: Ledger = Ledger { }; }",
            "run() { let h = api::serve(Books, std::api::test::Rpc { }, as: \"books\", bound: 1, on_full: refuse); h.stop(); }",
            "}",
        ])),
        [
            diag(&[
                "t.hl:2:17: rpc `Ledger::dump`: its request is `Map<String, Int>`, which the JSON codec does not carry",
                "api Books { rpc Ledger::dump; }",
                "                ^^^^^^^^^^^^",
            ]),
            diag(&[
                "t.hl:2:17: rpc `Ledger::dump`: its response is `Option<Int>`, which the JSON codec does not carry",
                "api Books { rpc Ledger::dump; }",
                "                ^^^^^^^^^^^^",
            ]),
        ]
    );
    refused(
        &src(&[
            "unit ns;",
            "type Stamp = point Int in ns;",
            "type At { when: Stamp; }",
            "locus Ledger { fn dump(a: At) -> Int { return 1; } }",
            "api Books { rpc Ledger::dump; }",
            "main locus Desk {",
            "params { ledger: Ledger = Ledger { }; }",
            "run() { let h = api::serve(Books, std::api::test::Rpc { }, as: \"books\", bound: 1, on_full: refuse); h.stop(); }",
            "}",
        ]),
        &[
            "t.hl:5:17: rpc `Ledger::dump`: its request `At` has a field `when: Stamp`, which the JSON codec does not carry",
            "api Books { rpc Ledger::dump; }",
            "                ^^^^^^^^^^^^",
        ],
    );
}

/// Law 5 over a type the program does not declare: the row cannot be given
/// a form, and the nearest declared type is offered.
#[test]
fn a_type_no_declaration_names() {
    refused(
        &src(&[
            "type Money = Int;",
            "type Order { limit: Mony; }",
            "locus Ledger { fn dump(o: Order) -> Int { return 1; } }",
            "api Books { rpc Ledger::dump; }",
            "main locus Desk {",
            "params { ledger: Ledger = Ledger { }; }",
            "run() { let h = api::serve(Books, std::api::test::Rpc { }, as: \"books\", bound: 1, on_full: refuse); h.stop(); }",
            "}",
        ]),
        &[
            "t.hl:4:17: rpc `Ledger::dump`: its request `Order` has a field `limit: Mony`, and no type `Mony` is declared; did you mean `Money`?",
            "api Books { rpc Ledger::dump; }",
            "                ^^^^^^^^^^^^",
        ],
    );
    refused(
        &src(&[
            "locus Ledger { fn dump(o: Ordr) -> Int { return 1; } }",
            "api Books { rpc Ledger::dump; }",
            "main locus Desk {",
            "params { ledger: Ledger = Ledger { }; }",
            "run() { let h = api::serve(Books, std::api::test::Rpc { }, as: \"books\", bound: 1, on_full: refuse); h.stop(); }",
            "}",
        ]),
        &[
            "t.hl:2:17: rpc `Ledger::dump`: its request is `Ordr`, and no type `Ordr` is declared",
            "api Books { rpc Ledger::dump; }",
            "                ^^^^^^^^^^^^",
        ],
    );
}

/// Law 5 holds a row to its serve sites' codec: a surface nobody serves is
/// asked no form (a library's surface, for an application to serve), and a
/// `ClosureViolation` error is asked none anywhere.
#[test]
fn law_5_asks_no_form_of_what_nobody_serves() {
    admitted(&src(&[
        "type Export { raw: Bytes; }",
        "locus Ledger { fn dump() -> Export { return Export { }; } }",
        "api Books { rpc Ledger::dump; }",
    ]));
    admitted(&src(&[
            "locus Ledger { fn dump() -> Int fallible(ClosureViolation) { return 1; } }",
            "api Books { rpc Ledger::dump; }",
            "main locus Desk {",
            "params { ledger: Ledger = Ledger { }; }",
            "run() { let h = api::serve(Books, std::api::test::Rpc { }, as: \"books\", bound: 1, on_full: refuse); h.stop(); }",
            "}",
        ]));
}

/// Law 5 is the handler's: a handler served in two surfaces is refused at
/// the first served row.
#[test]
fn a_shape_law_5_refuses_once_per_handler() {
    refused(
        &src(&[
            "type Export { raw: Bytes; }",
            "locus Ledger { fn dump() -> Export { return Export { }; } }",
            "api Books { rpc Ledger::dump; }",
            "api Audit { rpc Ledger::dump; }",
            "main locus Desk {",
            "params { ledger: Ledger = Ledger { }; }",
            "run() {",
            "let a = api::serve(Audit, std::api::test::Rpc { }, as: \"audit\", bound: 1, on_full: refuse);",
            "let b = api::serve(Books, std::api::test::Rpc { }, as: \"books\", bound: 1, on_full: refuse);",
            "a.stop(); b.stop();",
            "} }",
        ]),
        &[
            "t.hl:3:17: rpc `Ledger::dump`: its response `Export` has a field `raw: Bytes`, which the JSON codec does not carry",
            "api Books { rpc Ledger::dump; }",
            "                ^^^^^^^^^^^^",
        ],
    );
}

/// Law 7: a handler that may violate and returns nothing is
/// `fallible(ClosureViolation)` too; declared so, it is admitted.
#[test]
fn a_handler_that_may_violate_and_returns_nothing() {
    refused(
        &src(&[
            "locus Orders {",
            "closure stale { captures: n; epoch inline; }",
            "fn flush() { if true { violate stale; } }",
            "}",
            "api Public { rpc Orders::flush; }",
        ]),
        &[
            "t.hl:5:18: rpc `Orders::flush` may violate (`violate stale`) and returns nothing: an rpc handler that may violate is `fallible(ClosureViolation)`, so its caller receives the server error instead of a result",
            "api Public { rpc Orders::flush; }",
            "                 ^^^^^^^^^^^^^",
        ],
    );
    admitted(&src(&[
        "locus Orders {",
        "fn flush() fallible(ClosureViolation) { violate stale; }",
        "}",
        "api Public { rpc Orders::flush; }",
    ]));
}

/// F.42: a method that returns a value and may violate is
/// `fallible(ClosureViolation)`; a handler that is not is refused before its
/// row is admitted.
#[test]
fn a_handler_that_may_violate_and_returns_a_value() {
    refused(
        &src(&[
            "type Receipt { order: Int; }",
            "locus Orders {",
            "fn place() -> Receipt { violate position_limit; return Receipt { order: 1 }; }",
            "}",
            "api Public { rpc Orders::place; }",
        ]),
        &[
            "t.hl:5:18: rpc `Orders::place` may violate (`violate position_limit`) and returns `Receipt`: a method that returns a value and may violate is `fallible(ClosureViolation)` (F.42), so its caller receives the server error instead of a result",
            "api Public { rpc Orders::place; }",
            "                 ^^^^^^^^^^^^^",
        ],
    );
}

/// F.42: a fn has one error type, and one that may violate declares
/// `ClosureViolation`; `fallible(E)` with another `E` is refused, whatever it
/// returns.
#[test]
fn a_handler_that_may_violate_declares_no_other_error() {
    assert_eq!(
        errors(&src(&[
            "type OrderError { code: String; }",
            "locus Orders {",
            "fn cancel() -> Int fallible(OrderError) { violate open_orders; return 1; }",
            "fn purge() fallible(OrderError) { violate open_orders; }",
            "}",
            "api Public { rpc Orders::cancel; rpc Orders::purge; }",
        ])),
        [
            diag(&[
                "t.hl:6:18: rpc `Orders::cancel` may violate (`violate open_orders`) and is `fallible(OrderError)`: a fn has one error type, and a fn that may violate declares `fallible(ClosureViolation)` (F.42)",
                "api Public { rpc Orders::cancel; rpc Orders::purge; }",
                "                 ^^^^^^^^^^^^^^",
            ]),
            diag(&[
                "t.hl:6:38: rpc `Orders::purge` may violate (`violate open_orders`) and is `fallible(OrderError)`: a fn has one error type, and a fn that may violate declares `fallible(ClosureViolation)` (F.42)",
                "api Public { rpc Orders::cancel; rpc Orders::purge; }",
                "                                     ^^^^^^^^^^^^^",
            ]),
        ]
    );
}

/// Law 6 is a statement of the row, not a refusal: a note beside every row
/// whose error type is `ClosureViolation`, in every surface it is in, and
/// none beside a row with another error type.
#[test]
fn a_closure_violation_row_is_noted() {
    let check = run(&src(&[
        "type OrderError { code: String; }",
        "locus Orders {",
        "fn place() -> Int fallible(ClosureViolation) { return 1; }",
        "fn cancel() -> Int fallible(OrderError) { return 1; }",
        "@rpc",
        "fn flush() fallible(ClosureViolation) { }",
        "}",
        "api Public { rpc Orders::place; rpc Orders::cancel; }",
        "api Admin { rpc Orders::place; }",
    ]));
    assert_eq!(check.errors, []);
    let notes: Vec<String> = check.notes.iter().map(ToString::to_string).collect();
    assert_eq!(
        notes,
        [
            diag(&[
                "t.hl:6:4: rpc `Orders::flush`: its error type is `ClosureViolation`, so a failure is the server error; a description carries no error schema for it",
                "fn flush() fallible(ClosureViolation) { }",
                "   ^^^^^",
            ]),
            diag(&[
                "t.hl:8:18: rpc `Orders::place`: its error type is `ClosureViolation`, so a failure is the server error; a description carries no error schema for it",
                "api Public { rpc Orders::place; rpc Orders::cancel; }",
                "                 ^^^^^^^^^^^^^",
            ]),
            diag(&[
                "t.hl:9:17: rpc `Orders::place`: its error type is `ClosureViolation`, so a failure is the server error; a description carries no error schema for it",
                "api Admin { rpc Orders::place; }",
                "                ^^^^^^^^^^^^^",
            ]),
        ]
    );
}
