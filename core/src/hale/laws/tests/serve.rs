//! The laws of a serve site (§ Serving) and the paragraphs after them. Most
//! programs are [`DESK`](super::DESK) — the witness's `Public` and `Admin`
//! over small `Orders` and `Ledger` loci — and a main locus from line 8.

use super::{admitted, desk, diag, errors, refused};

/// An exposure is named once, among the serve sites' `as:` and the hubs'
/// `as:`: the later name is refused.
#[test]
fn an_exposure_is_named_once() {
    refused(
        &desk(&[
            "main locus Desk {",
            "params { orders: Orders = Orders { }; ledger: Ledger = Ledger { }; }",
            "run() {",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", bound: 64, on_full: refuse);",
            "let again = api::serve(Admin, unix::Rpc { path: \"/a\" }, as: \"public\", bound: 16, on_full: refuse);",
            "public.stop(); again.stop();",
            "} }",
        ]),
        &[
            "t.hl:12:61: exposure `public` is served twice: `as:` names one exposure; name this one apart",
            "let again = api::serve(Admin, unix::Rpc { path: \"/a\" }, as: \"public\", bound: 16, on_full: refuse);",
            "                                                            ^^^^^^^^",
        ],
    );
    refused(
        &desk(&[
            "topic Fills { payload: PlaceOrder; }",
            "main locus Desk {",
            "params { orders: Orders = Orders { }; hub: ws::Hub = ws::Hub { bind: \"127.0.0.1:9000\", as: \"public\" }; }",
            "bus { publish Fills; }",
            "bindings { Fills: self.hub bound: 8, on_full: drop_old; }",
            "run() {",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", bound: 64, on_full: refuse);",
            "public.stop();",
            "} }",
        ]),
        &[
            "t.hl:14:75: exposure `public` is served twice: `as:` names one exposure; name this one apart",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", bound: 64, on_full: refuse);",
            "                                                                          ^^^^^^^^",
        ],
    );
}

/// Every receiver type is bound: two instances and no binding is an error
/// naming both (the witness's unbound case), three naming all three.
#[test]
fn a_receiver_type_held_twice_and_bound_by_neither() {
    refused(
        &desk(&[
            "main locus Desk {",
            "params { orders: Orders = Orders { }; partner_orders: Orders = Orders { }; }",
            "run() {",
            "let partner = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8081\" }, as: \"partner\", bound: 64, on_full: refuse);",
            "partner.stop();",
            "} }",
        ]),
        &[
            "t.hl:11:15: serve of `Public` as `partner`: `Orders` is held twice, as `self.orders` and `self.partner_orders`, and the serve binds neither: name the one that answers (`receivers: { Orders: self.orders }`)",
            "let partner = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8081\" }, as: \"partner\", bound: 64, on_full: refuse);",
            "              ^^^^^^^^^^",
        ],
    );
    refused(
        &desk(&[
            "main locus Desk {",
            "params { a: Orders = Orders { }; b: Orders = Orders { }; c: Orders = Orders { }; }",
            "run() {",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", bound: 64, on_full: refuse);",
            "public.stop();",
            "} }",
        ]),
        &[
            "t.hl:11:14: serve of `Public` as `public`: `Orders` is held three times, as `self.a`, `self.b` and `self.c`, and the serve binds none of them: name the one that answers (`receivers: { Orders: self.a }`)",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", bound: 64, on_full: refuse);",
            "             ^^^^^^^^^^",
        ],
    );
}

/// A type the serving locus does not hold at all is the same error with no
/// instance to name.
#[test]
fn a_receiver_type_held_by_none() {
    refused(
        &desk(&[
            "main locus Desk {",
            "params { ledger: Ledger = Ledger { }; }",
            "run() {",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", bound: 64, on_full: refuse);",
            "public.stop();",
            "} }",
        ]),
        &[
            "t.hl:11:14: serve of `Public` as `public`: `Orders` is not held by `Desk`, and the serve binds none: hold one as a param of `Desk` and name it (`receivers: { Orders: self.<param> }`)",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", bound: 64, on_full: refuse);",
            "             ^^^^^^^^^^",
        ],
    );
}

/// A receiver outlives its exposure: a let-bound child that dissolves
/// before the handle's `stop()` is refused; one stopped inside its block is
/// admitted.
#[test]
fn a_let_bound_receiver_dissolves_before_stop() {
    refused(
        &desk(&[
            "main locus Desk {",
            "params { orders: Orders = Orders { }; }",
            "run() {",
            "if ready {",
            "let ledger = Ledger { };",
            "let admin = api::serve(Admin, unix::Rpc { path: \"/a\" }, as: \"admin\", receivers: { Ledger: ledger }, bound: 16, on_full: refuse);",
            "}",
            "admin.stop();",
            "} }",
        ]),
        &[
            "t.hl:13:91: serve of `Admin`: `ledger` is `let`-bound and dissolves at the end of this block, before `admin.stop()`; hold it as a param",
            "let admin = api::serve(Admin, unix::Rpc { path: \"/a\" }, as: \"admin\", receivers: { Ledger: ledger }, bound: 16, on_full: refuse);",
            "                                                                                          ^^^^^^",
        ],
    );
    refused(
        &desk(&[
            "main locus Desk {",
            "params { orders: Orders = Orders { }; }",
            "run() {",
            "let ledger = Ledger { };",
            "let admin = api::serve(Admin, unix::Rpc { path: \"/a\" }, as: \"admin\", receivers: { Ledger: ledger }, bound: 16, on_full: refuse);",
            "std::api::run_until_stopped(admin);",
            "} }",
        ]),
        &[
            "t.hl:12:91: serve of `Admin`: `ledger` is `let`-bound and dissolves at the end of this block, while its exposure is served; hold it as a param",
            "let admin = api::serve(Admin, unix::Rpc { path: \"/a\" }, as: \"admin\", receivers: { Ledger: ledger }, bound: 16, on_full: refuse);",
            "                                                                                          ^^^^^^",
        ],
    );
    admitted(&desk(&[
            "main locus Desk {",
            "params { orders: Orders = Orders { }; }",
            "run() {",
            "let ledger = Ledger { };",
            "let admin = api::serve(Admin, unix::Rpc { path: \"/a\" }, as: \"admin\", receivers: { Ledger: ledger }, bound: 16, on_full: refuse);",
            "admin.stop();",
            "} }",
        ]));
}

/// A bound type is one the rows name.
#[test]
fn a_bound_type_no_row_names() {
    refused(
        &desk(&[
            "main locus Desk {",
            "params { orders: Orders = Orders { }; ledger: Ledger = Ledger { }; }",
            "run() {",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", receivers: { Orders: self.orders, Ledger: self.ledger }, bound: 64, on_full: refuse);",
            "public.stop();",
            "} }",
        ]),
        &[
            "t.hl:11:119: serve of `Public`: `receivers:` binds `Ledger`, which no row of `Public` names",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", receivers: { Orders: self.orders, Ledger: self.ledger }, bound: 64, on_full: refuse);",
            "                                                                                                                      ^^^^^^",
        ],
    );
}

/// A serve site states `bound:` (a positive integer) and `on_full: refuse`;
/// the diagnostic points at what is written wrong, else at the call.
#[test]
fn a_serve_site_states_its_queue() {
    refused(
        &desk(&[
            "main locus Desk {",
            "params { orders: Orders = Orders { }; }",
            "run() {",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\");",
            "public.stop();",
            "} }",
        ]),
        &[
            "t.hl:11:14: serve of `Public` as `public`: a serve site states `bound:`, the requests it holds accepted and not yet answered, and `on_full: refuse`, the one policy for a request",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\");",
            "             ^^^^^^^^^^",
        ],
    );
    refused(
        &desk(&[
            "main locus Desk {",
            "params { orders: Orders = Orders { }; }",
            "run() {",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", bound: 64, on_full: drop_old);",
            "public.stop();",
            "} }",
        ]),
        &[
            "t.hl:11:105: serve of `Public` as `public`: a serve site states `bound:`, the requests it holds accepted and not yet answered, and `on_full: refuse`, the one policy for a request",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", bound: 64, on_full: drop_old);",
            "                                                                                                        ^^^^^^^^",
        ],
    );
    refused(
        &desk(&[
            "main locus Desk {",
            "params { orders: Orders = Orders { }; }",
            "run() {",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", bound: 0, on_full: refuse);",
            "public.stop();",
            "} }",
        ]),
        &[
            "t.hl:11:92: serve of `Public` as `public`: a serve site states `bound:`, the requests it holds accepted and not yet answered, and `on_full: refuse`, the one policy for a request",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", bound: 0, on_full: refuse);",
            "                                                                                           ^",
        ],
    );
}

/// A surface no `api` block (or `@rpc` handler) declares.
#[test]
fn an_undeclared_surface() {
    refused(
        &desk(&[
            "main locus Desk {",
            "params { orders: Orders = Orders { }; }",
            "run() {",
            "let public = api::serve(Pubic, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", bound: 64, on_full: refuse);",
            "public.stop();",
            "} }",
        ]),
        &[
            "t.hl:11:25: serve of `Pubic`: no surface `Pubic` is declared; did you mean `Public`?",
            "let public = api::serve(Pubic, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", bound: 64, on_full: refuse);",
            "                        ^^^^^",
        ],
    );
}

/// A serve site names its exposure with `as:`, a string.
#[test]
fn a_serve_site_without_as() {
    refused(
        &desk(&[
            "main locus Desk {",
            "params { orders: Orders = Orders { }; }",
            "run() {",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, bound: 64, on_full: refuse);",
            "public.stop();",
            "} }",
        ]),
        &[
            "t.hl:11:14: serve of `Public`: a serve site names its exposure with `as:`",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, bound: 64, on_full: refuse);",
            "             ^^^^^^^^^^",
        ],
    );
    refused(
        &desk(&[
            "main locus Desk {",
            "params { orders: Orders = Orders { }; }",
            "run() {",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: public, bound: 64, on_full: refuse);",
            "public.stop();",
            "} }",
        ]),
        &[
            "t.hl:11:75: serve of `Public`: a serve site names its exposure with `as:`",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: public, bound: 64, on_full: refuse);",
            "                                                                          ^^^^^^",
        ],
    );
}

/// A serve site names its transport instance: a literal, or a param a
/// literal builds.
#[test]
fn a_serve_site_without_a_transport_instance() {
    refused(
        &desk(&[
            "main locus Desk {",
            "params { orders: Orders = Orders { }; }",
            "run() {",
            "let public = api::serve(Public, as: \"public\", bound: 64, on_full: refuse);",
            "public.stop();",
            "} }",
        ]),
        &[
            "t.hl:11:14: serve of `Public`: a serve site names the transport instance it serves over, as its second argument (a literal such as `unix::Rpc { … }`, or a param a literal builds)",
            "let public = api::serve(Public, as: \"public\", bound: 64, on_full: refuse);",
            "             ^^^^^^^^^^",
        ],
    );
    refused(
        &desk(&[
            "main locus Desk {",
            "params { orders: Orders = Orders { }; }",
            "run() {",
            "let public = api::serve(Public, self.web, as: \"public\", bound: 64, on_full: refuse);",
            "public.stop();",
            "} }",
        ]),
        &[
            "t.hl:11:38: serve of `Public`: `self.web` is no transport instance: serve over a transport literal, or a param a literal builds",
            "let public = api::serve(Public, self.web, as: \"public\", bound: 64, on_full: refuse);",
            "                                     ^^^",
        ],
    );
    refused(
        &desk(&[
            "main locus Desk {",
            "params { orders: Orders = Orders { }; }",
            "run() {",
            "let public = api::serve(Public, web, as: \"public\", bound: 64, on_full: refuse);",
            "public.stop();",
            "} }",
        ]),
        &[
            "t.hl:11:33: serve of `Public`: `web` is no transport instance: serve over a transport literal, or a param a literal builds",
            "let public = api::serve(Public, web, as: \"public\", bound: 64, on_full: refuse);",
            "                                ^^^",
        ],
    );
}

/// The serve numbers a receiver in the literal that builds it: a param
/// without one is refused, bound or inferred.
#[test]
fn a_receiver_param_not_built_by_a_literal() {
    refused(
        &desk(&[
            "main locus Desk {",
            "params { orders: Orders: inferred; }",
            "run() {",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", receivers: { Orders: self.orders }, bound: 64, on_full: refuse);",
            "public.stop();",
            "} }",
        ]),
        &[
            "t.hl:11:106: serve of `Public`: `orders` is not built by a literal in a param of `Desk`: the serve numbers the instance in the literal that builds it",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", receivers: { Orders: self.orders }, bound: 64, on_full: refuse);",
            "                                                                                                         ^^^^^^^^^^^",
        ],
    );
    refused(
        &desk(&[
            "main locus Desk {",
            "params { orders: Orders: inferred; }",
            "run() {",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", bound: 64, on_full: refuse);",
            "public.stop();",
            "} }",
        ]),
        &[
            "t.hl:11:14: serve of `Public`: `orders` is not built by a literal in a param of `Desk`: the serve numbers the instance in the literal that builds it",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", bound: 64, on_full: refuse);",
            "             ^^^^^^^^^^",
        ],
    );
    refused(
        &desk(&[
            "main locus Desk {",
            "params { orders: Orders = Orders { }; }",
            "run() {",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", receivers: { Orders: Orders { } }, bound: 64, on_full: refuse);",
            "public.stop();",
            "} }",
        ]),
        &[
            "t.hl:11:106: serve of `Public`: `Orders { }` is not built by a literal in a param of `Desk`: the serve numbers the instance in the literal that builds it",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", receivers: { Orders: Orders { } }, bound: 64, on_full: refuse);",
            "                                                                                                         ^^^^^^^^^^",
        ],
    );
}

/// A receiver named `self.<param>` is a param of the serving locus holding
/// the bound type (the params holding it are the names offered), and a type
/// is bound once.
#[test]
fn a_receiver_that_is_no_param() {
    refused(
        &desk(&[
            "main locus Desk {",
            "params { orders: Orders = Orders { }; ordr: Ledger = Ledger { }; }",
            "run() {",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", receivers: { Orders: self.ordrs }, bound: 64, on_full: refuse);",
            "public.stop();",
            "} }",
        ]),
        &[
            "t.hl:11:111: serve of `Public`: `Desk` has no param `ordrs`; did you mean `orders`?",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", receivers: { Orders: self.ordrs }, bound: 64, on_full: refuse);",
            "                                                                                                              ^^^^^",
        ],
    );
    refused(
        &desk(&[
            "main locus Desk {",
            "params { orders: Orders = Orders { }; ledger: Ledger = Ledger { }; }",
            "run() {",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", receivers: { Orders: self.ledger }, bound: 64, on_full: refuse);",
            "public.stop();",
            "} }",
        ]),
        &[
            "t.hl:11:106: serve of `Public`: `receivers:` binds `Orders` to `self.ledger`, which holds a `Ledger`",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", receivers: { Orders: self.ledger }, bound: 64, on_full: refuse);",
            "                                                                                                         ^^^^^^^^^^^",
        ],
    );
    refused(
        &desk(&[
            "main locus Desk {",
            "params { orders: Orders = Orders { }; ledger: Ledger = Ledger { }; }",
            "run() {",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", receivers: { Orders: self.orders, Orders: self.orders }, bound: 64, on_full: refuse);",
            "public.stop();",
            "} }",
        ]),
        &[
            "t.hl:11:119: serve of `Public`: `receivers:` binds `Orders` twice: a type is bound to one instance",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", receivers: { Orders: self.orders, Orders: self.orders }, bound: 64, on_full: refuse);",
            "                                                                                                                      ^^^^^^",
        ],
    );
}

/// A serve site belongs to a locus's body; the laws that need no serving
/// locus still hold (here, none is broken).
#[test]
fn a_serve_site_in_a_free_fn() {
    refused(
        &desk(&[
            "fn serve_it() {",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", bound: 64, on_full: refuse);",
            "}",
        ]),
        &[
            "t.hl:9:14: `api::serve` in `serve_it`: a serve site belongs to a locus’s body, since its exposure is a param of the serving locus; serve from the locus that holds the receivers",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", bound: 64, on_full: refuse);",
            "             ^^^^^^^^^^",
        ],
    );
}

/// A serve site's first argument is the surface it serves.
#[test]
fn a_serve_site_names_its_surface() {
    refused(
        &desk(&[
            "main locus Desk {",
            "params { orders: Orders = Orders { }; }",
            "run() {",
            "let public = api::serve(\"Public\", http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", bound: 64, on_full: refuse);",
            "public.stop();",
            "} }",
        ]),
        &[
            "t.hl:11:14: `api::serve`: a serve site names the surface it serves, as its first argument",
            "let public = api::serve(\"Public\", http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", bound: 64, on_full: refuse);",
            "             ^^^^^^^^^^",
        ],
    );
}

/// A serve over a transport the build does not ship and the program does
/// not declare; one the program declares is served.
#[test]
fn a_transport_this_build_does_not_ship() {
    refused(
        &desk(&[
            "main locus Desk {",
            "params { orders: Orders = Orders { }; }",
            "run() {",
            "let public = api::serve(Public, quic::Rpc { bind: \"127.0.0.1:8443\" }, as: \"public\", bound: 64, on_full: refuse);",
            "public.stop();",
            "} }",
        ]),
        &[
            "t.hl:11:33: `api::serve` over `quic::Rpc`: this compiler serves a surface over `std::api::test::Rpc`, the in-process transport, `unix::Rpc`, `http::Rpc`, `mcp::Rpc`, `grpc::Rpc`, `ws::Hub`, `udp::Hub`, or a transport the program declares; the other transports follow",
            "let public = api::serve(Public, quic::Rpc { bind: \"127.0.0.1:8443\" }, as: \"public\", bound: 64, on_full: refuse);",
            "                                ^^^^^^^^^",
        ],
    );
    admitted(&desk(&[
        "locus Carrier { fn attach(exposure: Int) -> String { return \"carrier\"; } }",
        "main locus Desk {",
        "params { orders: Orders = Orders { }; }",
        "run() {",
        "let public = api::serve(Public, Carrier { }, as: \"public\", bound: 64, on_full: refuse);",
        "public.stop();",
        "} }",
    ]));
}

/// Requests over datagrams are not framed in this release: a serve over a
/// `udp::Hub` is refused, saying so.
#[test]
fn a_surface_over_a_datagram_hub() {
    refused(
        &desk(&[
            "main locus Desk {",
            "params { orders: Orders = Orders { }; hub: udp::Hub = udp::Hub { bind: \"127.0.0.1:9001\", as: \"dgrams\" }; }",
            "run() {",
            "let public = api::serve(Public, self.hub, as: \"public\", bound: 64, on_full: refuse);",
            "public.stop();",
            "} }",
        ]),
        &[
            "t.hl:11:38: `api::serve` over `udp::Hub`: a request and its reply over datagrams are not framed in this release, so a surface is not served over a datagram hub; serve it over `ws::Hub` or an Rpc transport",
            "let public = api::serve(Public, self.hub, as: \"public\", bound: 64, on_full: refuse);",
            "                                     ^^^",
        ],
    );
}

/// A hub is the main locus's param its literal builds; a serve site names
/// it, and does not build one.
#[test]
fn a_hub_literal_at_a_serve_site() {
    refused(
        &desk(&[
            "main locus Desk {",
            "params { orders: Orders = Orders { }; }",
            "run() {",
            "let public = api::serve(Public, ws::Hub { bind: \"127.0.0.1:9000\", as: \"desk\" }, as: \"public\", bound: 64, on_full: refuse);",
            "public.stop();",
            "} }",
        ]),
        &[
            "t.hl:11:33: `api::serve` over `ws::Hub`: a hub is a param of the main locus, built by its literal there; serve over it by name (`self.<param>`)",
            "let public = api::serve(Public, ws::Hub { bind: \"127.0.0.1:9000\", as: \"desk\" }, as: \"public\", bound: 64, on_full: refuse);",
            "                                ^^^^^^^",
        ],
    );
}

/// A socket's listener runs on a pool only the main locus places: a serve
/// over one from another locus is refused, written at the site or held as a
/// param; the in-process transport is served anywhere.
#[test]
fn a_socket_served_from_a_locus_that_is_not_main() {
    assert_eq!(
        errors(&desk(&[
            "locus Desk {",
            "params { orders: Orders = Orders { }; web: http::Rpc = http::Rpc { bind: \"127.0.0.1:8080\" }; }",
            "run() {",
            "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", bound: 64, on_full: refuse);",
            "let admin = api::serve(Public, self.web, as: \"admin\", bound: 64, on_full: refuse);",
            "let local = api::serve(Public, std::api::test::Rpc { }, as: \"local\", bound: 64, on_full: refuse);",
            "public.stop(); admin.stop(); local.stop();",
            "} }",
            "main locus App { params { desk: Desk = Desk { }; } }",
        ])),
        [
            diag(&[
                "t.hl:11:33: `api::serve` over `http::Rpc` in `Desk`: a socket’s listener runs on a pool of its own, which only the main locus places; serve from the main locus",
                "let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", bound: 64, on_full: refuse);",
                "                                ^^^^^^^^^",
            ]),
            diag(&[
                "t.hl:12:37: `api::serve` over `http::Rpc` in `Desk`: a socket’s listener runs on a pool of its own, which only the main locus places; serve from the main locus",
                "let admin = api::serve(Public, self.web, as: \"admin\", bound: 64, on_full: refuse);",
                "                                    ^^^",
            ]),
        ]
    );
}
