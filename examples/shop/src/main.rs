//! `shop-tool --instance catalog|cart`: the shop's handlers, one process
//! per receiver instance, written with limen-toolkit against the code
//! `flow toolkit rust` generated from the rows (`src/catalog_tools.rs`,
//! `src/cart_tools.rs`; README.md says how).
//!
//! The catalog keeps its stock; a cart per customer (the caller the
//! served program admitted, in the call's context) keeps its lines; a
//! checkout publishes `OrderPlaced` on the topic `Orders` through the
//! server's control socket (`limen_toolkit::publish`). State lives in the
//! process: when the server starts a new one (a new generation, after a
//! failure), it starts from the shelf again.

use std::collections::BTreeMap;
use std::sync::Mutex;

use limen_toolkit::{Context, Error, Int, Options};

#[allow(dead_code, clippy::all)]
mod catalog {
    include!("catalog_tools.rs");
}

#[allow(dead_code, clippy::all)]
mod cart {
    include!("cart_tools.rs");
}

/// The shelf: sku, name, price in cent, on hand.
const SHELF: &[(i64, &str, i64, i64)] = &[
    (1, "tea", 450, 10),
    (2, "cup", 1200, 3),
    (3, "pot", 3900, 1),
];

fn int(v: &Int) -> Result<i64, String> {
    i64::try_from(&v.0).map_err(|_| "a number past 64 bits".to_owned())
}

fn shop_error<T>(code: &str, reason: String) -> Result<T, Error<catalog::ShopError>> {
    Err(Error::Failed(catalog::ShopError {
        code: code.to_owned(),
        reason,
    }))
}

struct Catalog {
    /// sku → (name, price, on hand).
    items: Mutex<BTreeMap<i64, (String, i64, i64)>>,
}

impl Catalog {
    fn item(sku: i64, (name, price, on_hand): &(String, i64, i64)) -> catalog::CatalogItem {
        catalog::CatalogItem {
            sku: Int::from(sku),
            name: name.clone(),
            price: Int::from(*price),
            on_hand: Int::from(*on_hand),
        }
    }
}

impl catalog::Tools for Catalog {
    fn lookup(
        &self,
        _cx: &Context,
        l: catalog::CatalogLookup,
    ) -> Result<catalog::CatalogItem, Error<catalog::ShopError>> {
        let sku = int(&l.sku).map_err(Error::NotRun)?;
        let items = self.items.lock().unwrap_or_else(|e| e.into_inner());
        match items.get(&sku) {
            Some(entry) => Ok(Catalog::item(sku, entry)),
            None => shop_error("unknown_sku", format!("no sku {sku}")),
        }
    }

    fn restock(
        &self,
        _cx: &Context,
        r: catalog::Restock,
    ) -> Result<catalog::CatalogItem, Error<catalog::ShopError>> {
        let (sku, qty) = (
            int(&r.sku).map_err(Error::NotRun)?,
            int(&r.qty).map_err(Error::NotRun)?,
        );
        if qty <= 0 {
            return shop_error(
                "bad_quantity",
                format!("restock {qty}: a quantity is positive"),
            );
        }
        let mut items = self.items.lock().unwrap_or_else(|e| e.into_inner());
        match items.get_mut(&sku) {
            Some(entry) => {
                entry.2 += qty;
                Ok(Catalog::item(sku, entry))
            }
            None => shop_error("unknown_sku", format!("no sku {sku}")),
        }
    }
}

struct Cart {
    /// customer → (lines, total in cent).
    carts: Mutex<BTreeMap<String, (i64, i64)>>,
    next_order: Mutex<i64>,
}

fn cart_error<T>(code: &str, reason: String) -> Result<T, Error<cart::ShopError>> {
    Err(Error::Failed(cart::ShopError {
        code: code.to_owned(),
        reason,
    }))
}

impl cart::Tools for Cart {
    fn add(
        &self,
        _cx: &Context,
        a: cart::AddToCart,
        ctx: cart::Context,
    ) -> Result<cart::CartView, Error<cart::ShopError>> {
        let (sku, qty) = (
            int(&a.sku).map_err(Error::NotRun)?,
            int(&a.qty).map_err(Error::NotRun)?,
        );
        let Some(&(_, _, price, _)) = SHELF.iter().find(|(s, ..)| *s == sku) else {
            return cart_error("unknown_sku", format!("no sku {sku}"));
        };
        if qty <= 0 {
            return cart_error("bad_quantity", format!("{qty}: a quantity is positive"));
        }
        let mut carts = self.carts.lock().unwrap_or_else(|e| e.into_inner());
        let line = carts.entry(ctx.caller.name).or_default();
        line.0 += 1;
        line.1 += price * qty;
        Ok(cart::CartView {
            lines: Int::from(line.0),
            total: Int::from(line.1),
        })
    }

    fn checkout(
        &self,
        _cx: &Context,
        ctx: cart::Context,
    ) -> Result<cart::Receipt, Error<cart::ShopError>> {
        let customer = ctx.caller.name;
        let total = {
            let mut carts = self.carts.lock().unwrap_or_else(|e| e.into_inner());
            match carts.remove(&customer) {
                Some((_, total)) => total,
                None => return cart_error("empty_cart", format!("{customer}'s cart is empty")),
            }
        };
        let order = {
            let mut next = self.next_order.lock().unwrap_or_else(|e| e.into_inner());
            *next += 1;
            *next - 1
        };
        // `Orders <- OrderPlaced { … }`, through the server.
        let event = format!(
            "{{\"order\":{order},\"customer\":{},\"total\":{total}}}",
            quoted(&customer)
        );
        if let Err(e) = limen_toolkit::publish("Orders", &event) {
            eprintln!("shop-tool: the order {order} was placed, its event not published: {e}");
        }
        Ok(cart::Receipt {
            order: Int::from(order),
            total: Int::from(total),
        })
    }
}

/// `s` as a JSON string.
fn quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn main() {
    let mut args = std::env::args().skip(1);
    let options = Options {
        // A receiver runs one call at a time.
        workers: 0,
        ..Options::default()
    };
    let served = match (args.next().as_deref(), args.next().as_deref()) {
        (Some("--instance"), Some("catalog")) => catalog::serve(
            Catalog {
                items: Mutex::new(
                    SHELF
                        .iter()
                        .map(|&(sku, name, price, on_hand)| {
                            (sku, (name.to_owned(), price, on_hand))
                        })
                        .collect(),
                ),
            },
            options,
        ),
        (Some("--instance"), Some("cart")) => cart::serve(
            Cart {
                carts: Mutex::default(),
                next_order: Mutex::new(1),
            },
            options,
        ),
        _ => {
            eprintln!("usage: shop-tool --instance catalog|cart");
            std::process::exit(5);
        }
    };
    if let Err(e) = served {
        eprintln!("shop-tool: {e}");
        std::process::exit(1);
    }
}
