//! The hub and stream-row rules of § Streams that are check errors, over
//! the witness's hub half: one `Fills` stream through a `ws::Hub`.

use super::{admitted, refused, src};

/// The base of these tests, the witness's hub, is admitted.
#[test]
fn the_witness_hub_half_is_admitted() {
    admitted(&src(&[
            "role operator;",
            "type Fill { qty: Int; }",
            "topic Fills { payload: Fill; subject: \"desk.fills\"; }",
            "locus Orders { bus { publish Fills; } }",
            "main locus Desk {",
            "params { orders: Orders = Orders { }; hub: ws::Hub = ws::Hub { bind: \"127.0.0.1:9000\", as: \"fills\" }; }",
            "bindings { Fills: self.hub requires: [operator], bound: 64, on_full: drop_old; }",
            "}",
            "fn main() { Desk { }; }",
        ]));
}

/// The hub literal is the param's default and the only hub: a construction
/// that supplies the param is refused, in a body or in a param's default.
#[test]
fn a_construction_supplies_the_hub() {
    refused(
        &src(&[
            "role operator;",
            "type Fill { qty: Int; }",
            "topic Fills { payload: Fill; subject: \"desk.fills\"; }",
            "locus Orders { bus { publish Fills; } }",
            "main locus Desk {",
            "params { orders: Orders = Orders { }; hub: ws::Hub = ws::Hub { bind: \"127.0.0.1:9000\", as: \"fills\" }; }",
            "bindings { Fills: self.hub bound: 64, on_full: drop_old; }",
            "}",
            "fn main() { Desk { hub: ws::Hub { bind: \"127.0.0.1:9001\", as: \"other\" } }; }",
        ]),
        &[
            "t.hl:9:20: param hub is a hub that streams are bound to; its default is the hub, and a construction cannot supply another",
            "fn main() { Desk { hub: ws::Hub { bind: \"127.0.0.1:9001\", as: \"other\" } }; }",
            "                   ^^^",
        ],
    );
    refused(
        &src(&[
            "role operator;",
            "type Fill { qty: Int; }",
            "topic Fills { payload: Fill; subject: \"desk.fills\"; }",
            "locus Orders { bus { publish Fills; } }",
            "main locus Desk {",
            "params { orders: Orders = Orders { }; hub: ws::Hub = ws::Hub { bind: \"127.0.0.1:9000\", as: \"fills\" }; }",
            "bindings { Fills: self.hub bound: 64, on_full: drop_old; }",
            "}",
            "locus Outer { params { desk: Desk = Desk { hub: self.spare }; } }",
        ]),
        &[
            "t.hl:9:44: param hub is a hub that streams are bound to; its default is the hub, and a construction cannot supply another",
            "locus Outer { params { desk: Desk = Desk { hub: self.spare }; } }",
            "                                           ^^^",
        ],
    );
}

/// A hub has at most sixteen stream rows: the seventeenth is refused.
#[test]
fn a_hub_has_at_most_sixteen_stream_rows() {
    refused(
        &src(&[
            "role operator;",
            "type Fill { qty: Int; }",
            "topic T0 { payload: Fill; } topic T1 { payload: Fill; } topic T2 { payload: Fill; } topic T3 { payload: Fill; } topic T4 { payload: Fill; } topic T5 { payload: Fill; } topic T6 { payload: Fill; } topic T7 { payload: Fill; } topic T8 { payload: Fill; } topic T9 { payload: Fill; } topic T10 { payload: Fill; } topic T11 { payload: Fill; } topic T12 { payload: Fill; } topic T13 { payload: Fill; } topic T14 { payload: Fill; } topic T15 { payload: Fill; } topic T16 { payload: Fill; }",
            "locus Orders { bus { publish T0; publish T1; publish T2; publish T3; publish T4; publish T5; publish T6; publish T7; publish T8; publish T9; publish T10; publish T11; publish T12; publish T13; publish T14; publish T15; publish T16; } }",
            "main locus Desk {",
            "params { orders: Orders = Orders { }; hub: ws::Hub = ws::Hub { bind: \"127.0.0.1:9000\", as: \"fills\" }; }",
            "bindings {",
            "T0: self.hub bound: 8, on_full: drop_old;",
            "T1: self.hub bound: 8, on_full: drop_old;",
            "T2: self.hub bound: 8, on_full: drop_old;",
            "T3: self.hub bound: 8, on_full: drop_old;",
            "T4: self.hub bound: 8, on_full: drop_old;",
            "T5: self.hub bound: 8, on_full: drop_old;",
            "T6: self.hub bound: 8, on_full: drop_old;",
            "T7: self.hub bound: 8, on_full: drop_old;",
            "T8: self.hub bound: 8, on_full: drop_old;",
            "T9: self.hub bound: 8, on_full: drop_old;",
            "T10: self.hub bound: 8, on_full: drop_old;",
            "T11: self.hub bound: 8, on_full: drop_old;",
            "T12: self.hub bound: 8, on_full: drop_old;",
            "T13: self.hub bound: 8, on_full: drop_old;",
            "T14: self.hub bound: 8, on_full: drop_old;",
            "T15: self.hub bound: 8, on_full: drop_old;",
            "T16: self.hub bound: 8, on_full: drop_old;",
            "}",
            "}",
        ]),
        &[
            "t.hl:24:1: hub `self.hub` binds 17 streams: a hub has at most sixteen stream rows",
            "T16: self.hub bound: 8, on_full: drop_old;",
            "^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        ],
    );
    admitted(&src(&[
            "role operator;",
            "type Fill { qty: Int; }",
            "topic T0 { payload: Fill; } topic T1 { payload: Fill; } topic T2 { payload: Fill; } topic T3 { payload: Fill; } topic T4 { payload: Fill; } topic T5 { payload: Fill; } topic T6 { payload: Fill; } topic T7 { payload: Fill; } topic T8 { payload: Fill; } topic T9 { payload: Fill; } topic T10 { payload: Fill; } topic T11 { payload: Fill; } topic T12 { payload: Fill; } topic T13 { payload: Fill; } topic T14 { payload: Fill; } topic T15 { payload: Fill; } topic T16 { payload: Fill; }",
            "locus Orders { bus { publish T0; publish T1; publish T2; publish T3; publish T4; publish T5; publish T6; publish T7; publish T8; publish T9; publish T10; publish T11; publish T12; publish T13; publish T14; publish T15; publish T16; } }",
            "main locus Desk {",
            "params { orders: Orders = Orders { }; hub: ws::Hub = ws::Hub { bind: \"127.0.0.1:9000\", as: \"fills\" }; }",
            "bindings {",
            "T0: self.hub bound: 8, on_full: drop_old;",
            "T1: self.hub bound: 8, on_full: drop_old;",
            "T2: self.hub bound: 8, on_full: drop_old;",
            "T3: self.hub bound: 8, on_full: drop_old;",
            "T4: self.hub bound: 8, on_full: drop_old;",
            "T5: self.hub bound: 8, on_full: drop_old;",
            "T6: self.hub bound: 8, on_full: drop_old;",
            "T7: self.hub bound: 8, on_full: drop_old;",
            "T8: self.hub bound: 8, on_full: drop_old;",
            "T9: self.hub bound: 8, on_full: drop_old;",
            "T10: self.hub bound: 8, on_full: drop_old;",
            "T11: self.hub bound: 8, on_full: drop_old;",
            "T12: self.hub bound: 8, on_full: drop_old;",
            "T13: self.hub bound: 8, on_full: drop_old;",
            "T14: self.hub bound: 8, on_full: drop_old;",
            "T15: self.hub bound: 8, on_full: drop_old;",
            "}",
            "}",
        ]));
}

/// A stream carries what the program publishes: a row for a topic nothing
/// publishes, or one the program only subscribes to, is refused.
#[test]
fn a_stream_for_a_topic_nothing_publishes() {
    refused(
        &src(&[
            "role operator;",
            "type Fill { qty: Int; }",
            "topic Fills { payload: Fill; subject: \"desk.fills\"; }",
            "locus Orders { bus { publish Fills; } }",
            "topic Quotes { payload: Fill; }",
            "main locus Desk {",
            "params { orders: Orders = Orders { }; hub: ws::Hub = ws::Hub { bind: \"127.0.0.1:9000\", as: \"fills\" }; }",
            "bindings { Fills: self.hub bound: 64, on_full: drop_old; Quotes: self.hub bound: 8, on_full: drop_new; }",
            "}",
            "fn main() { Desk { }; }",
        ]),
        &[
            "t.hl:8:58: stream `Quotes` on `self.hub`: nothing publishes `Quotes`, and a stream carries what the program publishes",
            "bindings { Fills: self.hub bound: 64, on_full: drop_old; Quotes: self.hub bound: 8, on_full: drop_new; }",
            "                                                         ^^^^^^",
        ],
    );
    refused(
        &src(&[
            "role operator;",
            "type Fill { qty: Int; }",
            "topic Fills { payload: Fill; subject: \"desk.fills\"; }",
            "locus Orders { bus { publish Fills; } }",
            "topic Quotes { payload: Fill; }",
            "locus Quoter { bus { subscribe Quotes as on_quote; } }",
            "main locus Desk {",
            "params { orders: Orders = Orders { }; hub: ws::Hub = ws::Hub { bind: \"127.0.0.1:9000\", as: \"fills\" }; }",
            "bindings { Fills: self.hub bound: 64, on_full: drop_old; Quotes: self.hub bound: 8, on_full: drop_new; }",
            "}",
            "fn main() { Desk { }; }",
        ]),
        &[
            "t.hl:9:58: stream `Quotes` on `self.hub`: nothing publishes `Quotes`, and a stream carries what the program publishes",
            "bindings { Fills: self.hub bound: 64, on_full: drop_old; Quotes: self.hub bound: 8, on_full: drop_new; }",
            "                                                         ^^^^^^",
        ],
    );
}

/// `refuse` is not a policy of a stream.
#[test]
fn a_stream_row_stating_refuse() {
    refused(
        &src(&[
            "role operator;",
            "type Fill { qty: Int; }",
            "topic Fills { payload: Fill; subject: \"desk.fills\"; }",
            "locus Orders { bus { publish Fills; } }",
            "main locus Desk {",
            "params { orders: Orders = Orders { }; hub: ws::Hub = ws::Hub { bind: \"127.0.0.1:9000\", as: \"fills\" }; }",
            "bindings { Fills: self.hub bound: 64, on_full: refuse; }",
            "}",
            "fn main() { Desk { }; }",
        ]),
        &[
            "t.hl:7:48: stream `Fills` on `self.hub`: `refuse` is not a policy of a stream: a subscriber that cannot keep up loses events, never the subscription; state `on_full: drop_old` or `on_full: drop_new`",
            "bindings { Fills: self.hub bound: 64, on_full: refuse; }",
            "                                               ^^^^^^",
        ],
    );
}

/// A stream row states a positive `bound:` and `on_full: drop_old` or
/// `drop_new`; the diagnostic points at what is written wrong, else at the
/// row's topic.
#[test]
fn a_stream_row_states_bound_and_on_full() {
    refused(
        &src(&[
            "role operator;",
            "type Fill { qty: Int; }",
            "topic Fills { payload: Fill; subject: \"desk.fills\"; }",
            "locus Orders { bus { publish Fills; } }",
            "main locus Desk {",
            "params { orders: Orders = Orders { }; hub: ws::Hub = ws::Hub { bind: \"127.0.0.1:9000\", as: \"fills\" }; }",
            "bindings { Fills: self.hub requires: [operator], on_full: drop_old; }",
            "}",
            "fn main() { Desk { }; }",
        ]),
        &[
            "t.hl:7:12: stream `Fills` on `self.hub`: a stream row states `bound:`, the events it holds for each subscriber, and `on_full:`, `drop_old` or `drop_new`",
            "bindings { Fills: self.hub requires: [operator], on_full: drop_old; }",
            "           ^^^^^",
        ],
    );
    refused(
        &src(&[
            "role operator;",
            "type Fill { qty: Int; }",
            "topic Fills { payload: Fill; subject: \"desk.fills\"; }",
            "locus Orders { bus { publish Fills; } }",
            "main locus Desk {",
            "params { orders: Orders = Orders { }; hub: ws::Hub = ws::Hub { bind: \"127.0.0.1:9000\", as: \"fills\" }; }",
            "bindings { Fills: self.hub bound: 64; }",
            "}",
            "fn main() { Desk { }; }",
        ]),
        &[
            "t.hl:7:12: stream `Fills` on `self.hub`: a stream row states `bound:`, the events it holds for each subscriber, and `on_full:`, `drop_old` or `drop_new`",
            "bindings { Fills: self.hub bound: 64; }",
            "           ^^^^^",
        ],
    );
    refused(
        &src(&[
            "role operator;",
            "type Fill { qty: Int; }",
            "topic Fills { payload: Fill; subject: \"desk.fills\"; }",
            "locus Orders { bus { publish Fills; } }",
            "main locus Desk {",
            "params { orders: Orders = Orders { }; hub: ws::Hub = ws::Hub { bind: \"127.0.0.1:9000\", as: \"fills\" }; }",
            "bindings { Fills: self.hub bound: 64, on_full: block; }",
            "}",
            "fn main() { Desk { }; }",
        ]),
        &[
            "t.hl:7:48: stream `Fills` on `self.hub`: a stream row states `bound:`, the events it holds for each subscriber, and `on_full:`, `drop_old` or `drop_new`",
            "bindings { Fills: self.hub bound: 64, on_full: block; }",
            "                                               ^^^^^",
        ],
    );
    refused(
        &src(&[
            "role operator;",
            "type Fill { qty: Int; }",
            "topic Fills { payload: Fill; subject: \"desk.fills\"; }",
            "locus Orders { bus { publish Fills; } }",
            "main locus Desk {",
            "params { orders: Orders = Orders { }; hub: ws::Hub = ws::Hub { bind: \"127.0.0.1:9000\", as: \"fills\" }; }",
            "bindings { Fills: self.hub bound: 0, on_full: drop_new; }",
            "}",
            "fn main() { Desk { }; }",
        ]),
        &[
            "t.hl:7:35: stream `Fills` on `self.hub`: a stream row states `bound:`, the events it holds for each subscriber, and `on_full:`, `drop_old` or `drop_new`",
            "bindings { Fills: self.hub bound: 0, on_full: drop_new; }",
            "                                  ^",
        ],
    );
}

/// A stream row binds a declared topic.
#[test]
fn a_stream_for_an_undeclared_topic() {
    refused(
        &src(&[
            "role operator;",
            "type Fill { qty: Int; }",
            "topic Fills { payload: Fill; subject: \"desk.fills\"; }",
            "locus Orders { bus { publish Fills; } }",
            "main locus Desk {",
            "params { orders: Orders = Orders { }; hub: ws::Hub = ws::Hub { bind: \"127.0.0.1:9000\", as: \"fills\" }; }",
            "bindings { Fills: self.hub bound: 64, on_full: drop_old; Fils: self.hub bound: 8, on_full: drop_old; }",
            "}",
            "fn main() { Desk { }; }",
        ]),
        &[
            "t.hl:7:58: stream `Fils` on `self.hub`: no topic `Fils` is declared; did you mean `Fills`?",
            "bindings { Fills: self.hub bound: 64, on_full: drop_old; Fils: self.hub bound: 8, on_full: drop_old; }",
            "                                                         ^^^^",
        ],
    );
}

/// A role a stream row requires is declared, as a surface row's is.
#[test]
fn a_stream_requires_a_declared_role() {
    refused(
        &src(&[
            "role operator;",
            "type Fill { qty: Int; }",
            "topic Fills { payload: Fill; subject: \"desk.fills\"; }",
            "locus Orders { bus { publish Fills; } }",
            "main locus Desk {",
            "params { orders: Orders = Orders { }; hub: ws::Hub = ws::Hub { bind: \"127.0.0.1:9000\", as: \"fills\" }; }",
            "bindings { Fills: self.hub requires: [opertor], bound: 64, on_full: drop_old; }",
            "}",
            "fn main() { Desk { }; }",
        ]),
        &[
            "t.hl:7:39: stream `Fills` requires `opertor`, which no `role` declares; did you mean `operator`?",
            "bindings { Fills: self.hub requires: [opertor], bound: 64, on_full: drop_old; }",
            "                                      ^^^^^^^",
        ],
    );
}

/// A topic bound to one hub twice is refused at the second row.
#[test]
fn a_topic_is_one_stream_row_of_its_hub() {
    refused(
        &src(&[
            "role operator;",
            "type Fill { qty: Int; }",
            "topic Fills { payload: Fill; subject: \"desk.fills\"; }",
            "locus Orders { bus { publish Fills; } }",
            "main locus Desk {",
            "params { orders: Orders = Orders { }; hub: ws::Hub = ws::Hub { bind: \"127.0.0.1:9000\", as: \"fills\" }; }",
            "bindings { Fills: self.hub bound: 64, on_full: drop_old; Fills: self.hub bound: 8, on_full: drop_new; }",
            "}",
            "fn main() { Desk { }; }",
        ]),
        &[
            "t.hl:7:58: stream `Fills` on `self.hub`: `Fills` is bound to `self.hub` twice: a topic is one stream row of its hub",
            "bindings { Fills: self.hub bound: 64, on_full: drop_old; Fills: self.hub bound: 8, on_full: drop_new; }",
            "                                                         ^^^^^",
        ],
    );
}

/// A hub is built by a literal in the main locus's params, and names its
/// exposure with `as:`.
#[test]
fn a_hub_is_a_param_of_the_main_locus() {
    refused(
        &src(&[
            "type Fill { qty: Int; }",
            "topic Fills { payload: Fill; }",
            "locus Orders {",
            "bus { publish Fills; }",
            "params { feed: ws::Hub = ws::Hub { bind: \"127.0.0.1:9000\", as: \"fills\" }; }",
            "bindings { Fills: self.feed bound: 64, on_full: drop_old; }",
            "}",
        ]),
        &[
            "t.hl:5:10: hub `self.feed` of `Orders`: a hub is a param of the main locus, since its listener runs on a pool of its own, which only the main locus places",
            "params { feed: ws::Hub = ws::Hub { bind: \"127.0.0.1:9000\", as: \"fills\" }; }",
            "         ^^^^",
        ],
    );
    refused(
        &src(&[
            "role operator;",
            "type Fill { qty: Int; }",
            "topic Fills { payload: Fill; subject: \"desk.fills\"; }",
            "locus Orders { bus { publish Fills; } }",
            "main locus Desk {",
            "params { orders: Orders = Orders { }; hub: ws::Hub = ws::Hub { bind: \"127.0.0.1:9000\" }; }",
            "bindings { Fills: self.hub bound: 64, on_full: drop_old; }",
            "}",
            "fn main() { Desk { }; }",
        ]),
        &[
            "t.hl:6:39: hub `self.hub`: a hub names its exposure with `as:`",
            "params { orders: Orders = Orders { }; hub: ws::Hub = ws::Hub { bind: \"127.0.0.1:9000\" }; }",
            "                                      ^^^",
        ],
    );
}
