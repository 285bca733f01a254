//! `hale demo`'s `Orders` (drivers/src/demo/witness.rs): what an instance
//! holds stays bounded however many orders it takes.

use limen_core::hale::runtime::{Completion, Principal, Receiver, ServedContext};
use limen_witness::{program, Orders, FILLS_KEPT};

fn ctx() -> ServedContext {
    ServedContext {
        caller: Principal::bearer("alice"),
        request_id: 0,
        via: "http".into(),
        role: "".into(),
        exposure: "public".into(),
        generation: 1,
    }
}

/// Every accepted place publishes a fill; the instance keeps only the
/// latest few, so 20,000 orders leave it holding what 64 did.
#[test]
fn an_orders_instance_keeps_a_bounded_number_of_fills() {
    let program = program();
    let mut orders = Orders::from_param(&program, "orders");
    let ctx = ctx();
    for i in 0..20_000i64 {
        let payload = serde_json::json!({"qty": 1 + i % 100, "limit": 125_000});
        let done = orders.call("Orders::place", &payload, &ctx);
        assert!(matches!(done, Completion::Returned(_)), "{done:?}");
    }
    let s = orders.0.lock().unwrap();
    assert_eq!(s.next, 41 + 20_000, "every order was numbered");
    assert_eq!(FILLS_KEPT, 64, "the Fills binding's bound");
    assert!(
        s.fills.len() <= FILLS_KEPT,
        "an Orders instance holds {} fills after 20,000 orders",
        s.fills.len()
    );
    assert_eq!(s.fills.len(), FILLS_KEPT, "the latest are kept");
    assert_eq!(s.published, 20_000, "every fill was published");
    // The latest fill is the last order's, the oldest kept the 64th last.
    assert_eq!(s.fills.back().map(|f| f.order), Some(41 + 19_999));
    assert_eq!(s.fills.front().map(|f| f.order), Some(41 + 20_000 - 64));
}
