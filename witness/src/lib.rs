//! limen-witness: the witness program's loci, implemented in Rust, and
//! the exposures derived from it — what `hale demo` (limen-drivers) serves
//! and what the conformance replay drives, in a crate of their own so the
//! deterministic replay links no I/O (no mio, no threads, no sockets).
//!
//! The declarations are the project's own copy, `conformance/programs/desk.hl`; the
//! behaviour follows the program's bodies: `Orders` numbers orders from its
//! `next` (41 unless its literal says otherwise), violates its position
//! limit above a quantity of 10000 and fails `unknown_order` on a cancel
//! outside the placed range; `Ledger::rebalance` moves 1500 cent and
//! violates on an empty book; `Tokens` names alice, bob, carol and dave;
//! each `Grants` literal grants the role its field names to the principal
//! its value names. Each receiver counts its calls, so a test can tell that
//! a refused request never reached it.
//!
//! Besides the handlers here: [`sources`], the role and bearer sources a
//! served hub shares with the control that changes them, and
//! [`exposures`], the serve sites the demo adds to the program (`mcp`,
//! `grpc`, `desk` over the hub).
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod exposures;
pub mod sources;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use limen_core::hale::model::{parse_program, Program};
use limen_core::hale::runtime::{Completion, Receiver, RoleTable, ServedContext, TokenTable};
use limen_core::hale::syntax::ast::Expr;

/// The witness declarations, as limen ships them.
pub const DESK: &str = include_str!("../../conformance/programs/desk.hl");

/// The witness program's model.
pub fn program() -> Program {
    parse_program("desk.hl", DESK).expect("desk.hl parses")
}

/// What the bearer source `Tokens` answers a token it does not know.
pub const REFUSED_TOKEN: &str = "no such token";

/// The (token, principal name) pairs `Tokens` knows: `t-<name>` names
/// `<name>` for alice, bob, carol and dave.
pub fn token_pairs() -> Vec<(String, String)> {
    ["alice", "bob", "carol", "dave"]
        .into_iter()
        .map(|name| (format!("t-{name}"), name.to_owned()))
        .collect()
}

/// The bearer source `Tokens`: [`token_pairs`]; anything else is refused
/// [`REFUSED_TOKEN`].
pub fn tokens() -> TokenTable {
    token_pairs()
        .into_iter()
        .fold(TokenTable::new(Some(REFUSED_TOKEN)), |t, (token, name)| {
            t.with(&token, &name)
        })
}

/// The role source a `Grants { role: "principal", … }` param builds.
pub fn grants(program: &Program, param: &str) -> RoleTable {
    grant_pairs(program, param)
        .into_iter()
        .fold(RoleTable::new(), |t, (role, holder)| {
            t.grant(&holder, &role)
        })
}

/// The (role, principal name) pairs a `Grants` literal states, in order;
/// an empty name grants nothing.
pub fn grant_pairs(program: &Program, param: &str) -> Vec<(String, String)> {
    literal_fields(program, param)
        .into_iter()
        .filter_map(|(role, holder)| match holder {
            Expr::Str(name, _) if !name.is_empty() => Some((role, name)),
            _ => None,
        })
        .collect()
}

/// The fields of the literal that builds the main locus's param `param`.
fn literal_fields(program: &Program, param: &str) -> Vec<(String, Expr)> {
    let Some(Expr::Struct { fields, .. }) = program
        .main_locus()
        .and_then(|m| m.param(param))
        .and_then(|p| p.literal())
    else {
        return Vec::new();
    };
    fields
        .iter()
        .map(|f| (f.name.name.clone(), f.value.clone()))
        .collect()
}

/// An integer field of a param's literal, else the locus param's default.
fn int_param(program: &Program, param: &str, field: &str, locus: &str) -> i64 {
    let from = |e: &Expr| match e {
        Expr::Number(n, _) => n.replace('_', "").parse().ok(),
        _ => None,
    };
    literal_fields(program, param)
        .iter()
        .find(|(name, _)| name == field)
        .and_then(|(_, e)| from(e))
        .or_else(|| {
            program
                .locus(locus)
                .and_then(|l| l.param(field))
                .and_then(|p| p.default.as_ref())
                .and_then(from)
        })
        .unwrap_or(0)
}

/// A fill, as `Orders::place` publishes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fill {
    /// The order.
    pub order: i64,
    /// Its quantity.
    pub qty: i64,
    /// Its price, in cent.
    pub price: i64,
}

/// Where an `Orders` instance publishes its fills (`Fills <- Fill { … }`):
/// the topic's subscribers, a hub among them.
#[derive(Clone)]
pub struct FillSink(pub Arc<dyn Fn(&Fill) + Send + Sync>);

impl std::fmt::Debug for FillSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FillSink")
    }
}

impl Fill {
    /// The fill by the `Fills` topic's JSON codec.
    pub fn to_json(&self) -> String {
        serde_json::json!({"order": self.order, "qty": self.qty, "price": self.price}).to_string()
    }
}

/// How many of its latest fills an `Orders` instance keeps: the program's
/// `Fills` binding's `bound: 64` (`desk.hl`), the most a subscriber of the
/// hub can still have queued. The program keeps no fill (`place` publishes
/// one and forgets it: `bus { publish Fills; }`); the ones kept here are for
/// a test or an operator to look at, and an older one is dropped as a new
/// one comes, so an instance's memory does not grow with its orders.
pub const FILLS_KEPT: usize = 64;

/// The state of one `Orders` instance.
#[derive(Debug, Default)]
pub struct OrdersState {
    /// The next order id.
    pub next: i64,
    /// Open orders.
    pub open: i64,
    /// Calls that reached the handler.
    pub calls: u64,
    /// The latest fills published, oldest first: at most [`FILLS_KEPT`].
    pub fills: VecDeque<Fill>,
    /// How many fills were published in all.
    pub published: u64,
    /// Who else hears each fill as it is published.
    pub sinks: Vec<FillSink>,
}

/// An `Orders` instance; clones share it, as two exposures bound to one
/// instance do.
#[derive(Clone, Debug)]
pub struct Orders(pub Arc<Mutex<OrdersState>>);

impl Orders {
    /// The instance the main locus's param `param` builds.
    pub fn from_param(program: &Program, param: &str) -> Orders {
        Orders(Arc::new(Mutex::new(OrdersState {
            next: int_param(program, param, "next", "Orders"),
            ..OrdersState::default()
        })))
    }

    /// How many calls reached the handler.
    pub fn calls(&self) -> u64 {
        self.0.lock().map(|s| s.calls).unwrap_or(0)
    }

    /// Every fill this instance publishes from now on also goes to `sink`.
    pub fn publish_to(&self, sink: FillSink) {
        if let Ok(mut s) = self.0.lock() {
            s.sinks.push(sink);
        }
    }
}

fn int(v: &serde_json::Value, key: &str) -> i64 {
    v.get(key).and_then(serde_json::Value::as_i64).unwrap_or(0)
}

fn json(v: serde_json::Value) -> Vec<u8> {
    v.to_string().into_bytes()
}

impl Receiver for Orders {
    fn call(
        &mut self,
        member: &str,
        payload: &serde_json::Value,
        _ctx: &ServedContext,
    ) -> Completion {
        let mut s = self.0.lock().expect("orders state");
        s.calls += 1;
        match member {
            "Orders::place" => {
                let qty = int(payload, "qty");
                let limit = int(payload, "limit");
                if qty > 10_000 {
                    return Completion::Violated;
                }
                let Some(notional) = limit.checked_mul(qty) else {
                    return Completion::Violated;
                };
                let order = s.next;
                s.next += 1;
                s.open += 1;
                let fill = Fill {
                    order,
                    qty,
                    price: limit,
                };
                for sink in &s.sinks {
                    (sink.0)(&fill);
                }
                if s.fills.len() == FILLS_KEPT {
                    s.fills.pop_front();
                }
                s.fills.push_back(fill);
                s.published += 1;
                Completion::Returned(json(
                    serde_json::json!({"order": order, "notional": notional}),
                ))
            }
            "Orders::cancel" => {
                let n = int(payload, "order");
                if n < 41 || n >= s.next {
                    return Completion::Failed(json(serde_json::json!({
                        "code": "unknown_order",
                        "reason": format!("no order {n}"),
                    })));
                }
                s.open -= 1;
                Completion::Returned(json(serde_json::json!({"order": n, "was_open": true})))
            }
            _ => Completion::ProcessExits,
        }
    }
}

/// The state of one `Ledger` instance.
#[derive(Debug, Default)]
pub struct LedgerState {
    /// Cent moved so far.
    pub moved: i64,
    /// Calls that reached the handler.
    pub calls: u64,
}

/// A `Ledger` instance; clones share it.
#[derive(Clone, Debug)]
pub struct Ledger(pub Arc<Mutex<LedgerState>>);

impl Ledger {
    /// The instance the main locus's param `param` builds.
    pub fn from_param(program: &Program, param: &str) -> Ledger {
        Ledger(Arc::new(Mutex::new(LedgerState {
            moved: int_param(program, param, "moved", "Ledger"),
            calls: 0,
        })))
    }

    /// How many calls reached the handler.
    pub fn calls(&self) -> u64 {
        self.0.lock().map(|s| s.calls).unwrap_or(0)
    }
}

impl Receiver for Ledger {
    fn call(
        &mut self,
        member: &str,
        payload: &serde_json::Value,
        _ctx: &ServedContext,
    ) -> Completion {
        let mut s = self.0.lock().expect("ledger state");
        s.calls += 1;
        match member {
            "Ledger::rebalance" => {
                let book = payload.get("book").and_then(|b| b.as_str()).unwrap_or("");
                if book.is_empty() {
                    return Completion::Violated;
                }
                s.moved += 1500;
                // A constant answer, written as its bytes: building a JSON
                // map for it was most of the handler's cost on the Unix
                // bench's path.
                Completion::Returned(br#"{"moved":1500}"#.to_vec())
            }
            _ => Completion::ProcessExits,
        }
    }
}

/// The receiver instances of the witness's main locus, by param name, so
/// every exposure bound to one instance shares it.
#[derive(Clone, Debug)]
pub struct Instances {
    /// `self.orders`.
    pub orders: Orders,
    /// `self.partner_orders`.
    pub partner_orders: Orders,
    /// `self.ledger`.
    pub ledger: Ledger,
}

impl Instances {
    /// The instances the program's params build.
    pub fn new(program: &Program) -> Instances {
        Instances {
            orders: Orders::from_param(program, "orders"),
            partner_orders: Orders::from_param(program, "partner_orders"),
            ledger: Ledger::from_param(program, "ledger"),
        }
    }

    /// The receiver an exposure names as `self.<param>`.
    pub fn receiver(&self, instance: &str) -> Option<Box<dyn Receiver + Send>> {
        match instance {
            "self.orders" => Some(Box::new(self.orders.clone())),
            "self.partner_orders" => Some(Box::new(self.partner_orders.clone())),
            "self.ledger" => Some(Box::new(self.ledger.clone())),
            _ => None,
        }
    }
}
