//! `witness-tool --instance NAME`: the witness program's handlers as a
//! Flow Tool process, written with limen-toolkit, for `hale serve` to run
//! as a receiver instance's handler (`examples/witness/serve.toml`).
//!
//! It describes the Tools of the instance's locus as `hale api tools`
//! lists them (`limen_core::hale::tools::listing`: the rows' request,
//! response and error as Flow types), and answers each call with the
//! witness's own handlers (`limen-witness`, the ones `hale demo` runs in
//! process), so a served program behaves as the demo does: the same
//! state, the same violations, the same errors. One process is one
//! instance: `orders`, `partner_orders` or `ledger`, its state built from
//! the program's param literal (`partner_orders` starts at order 9001).
//!
//! A violation (`Completion::Violated`) is the declared error of a
//! `fallible(ClosureViolation)` row: a `ClosureViolation` naming the locus
//! and its closure.

use std::sync::{Arc, Mutex};

use limen_core::flow::canonical::to_canonical_vec;
use limen_core::flow::tool::{Listing, Reply};
use limen_core::flow::{decode, Limits, Value};
use limen_core::hale::runtime::{Completion, Principal, Receiver, ServedContext};
use limen_core::hale::tools;
use limen_toolkit::{serve, Context, Options};

fn main() {
    let mut args = std::env::args().skip(1);
    let instance = match (args.next().as_deref(), args.next()) {
        (Some("--instance"), Some(name)) => name,
        _ => {
            eprintln!("usage: witness-tool --instance orders|partner_orders|ledger [--rogue DIR]");
            std::process::exit(5);
        }
    };
    let rogue = match (args.next().as_deref(), args.next()) {
        (Some("--rogue"), Some(dir)) => Some(std::path::PathBuf::from(dir)),
        _ => None,
    };
    if let Some(dir) = &rogue {
        let _ = std::fs::write(
            dir.join(format!("{instance}.pid")),
            std::process::id().to_string(),
        );
        if dir.join("exit-at-start").exists() {
            eprintln!("witness-tool: exiting at start, as the test asked");
            std::process::exit(3);
        }
    }
    let program = limen_witness::program();
    let Some(locus) = tools::instance_type(&program, &instance) else {
        eprintln!("witness-tool: the witness has no receiver instance `{instance}`");
        std::process::exit(5);
    };
    let listing = tools::listing(&program, &locus).expect("the witness's rows are Tools");
    let listing = Listing::from_json(&listing).expect("the listing reads back");
    let rows = tools::receiver_rows(&program, &locus).expect("the witness's rows are Tools");
    let closure = program
        .locus(&locus)
        .and_then(|l| l.closures.first())
        .map(|c| c.name.clone())
        .unwrap_or_default();
    let instances = limen_witness::Instances::new(&program);
    // `Fills <- Fill { … }`: published through the server's control socket
    // when it gave one (`hale serve --control PATH` sets HALE_CONTROL).
    if std::env::var_os(limen_toolkit::publish::CONTROL_VAR).is_some() {
        let sink = publisher();
        instances.orders.publish_to(sink.clone());
        instances.partner_orders.publish_to(sink);
    }
    let receiver = instances
        .receiver(&format!("self.{instance}"))
        .expect("an instance of the witness");
    let service = Witness {
        rogue: rogue.is_some(),
        receiver: Mutex::new(receiver),
        tools: listing.tools.clone(),
        members: rows.iter().map(|r| r.member.clone()).collect(),
        locus,
        closure,
    };
    // One call at a time, on the thread that reads them: a receiver is
    // serial, and hale serve sends it one call at a time anyway.
    let options = Options {
        workers: 0,
        ..Options::default()
    };
    if let Err(e) = serve(listing.tools, service, options) {
        eprintln!("witness-tool: {e}");
        std::process::exit(1);
    }
}

/// A fill sink that publishes each fill on the topic `Fills` through the
/// served program's control socket (`limen_toolkit::publish`).
fn publisher() -> limen_witness::FillSink {
    limen_witness::FillSink(Arc::new(|fill| {
        if let Err(e) = limen_toolkit::publish("Fills", &fill.to_json()) {
            eprintln!("witness-tool: publish: {e}");
        }
    }))
}

struct Witness {
    /// `--rogue DIR` (tests only): a `symbol` of `HANG`, `SLOW`, `SHAPE`
    /// or `GARBAGE` (a line of garbage, then the process exits) misbehaves
    /// as it says, for the tests of what a served
    /// program does when its handler does.
    rogue: bool,
    receiver: Mutex<Box<dyn Receiver + Send>>,
    tools: Vec<Arc<limen_core::flow::tool::Tool>>,
    members: Vec<String>,
    locus: String,
    closure: String,
}

impl Witness {
    /// The JSON the witness's handler returned, as the value of `ty`.
    fn value(&self, tool: usize, bytes: &[u8], ok: bool) -> Result<Value, String> {
        let t = &self.tools[tool];
        let ty = if ok {
            &t.declaration.ok
        } else {
            &t.declaration.err
        };
        decode(bytes, ty, &t.env, &Limits::default()).map_err(|e| e.to_string())
    }
}

impl limen_toolkit::Service for Witness {
    fn call(&self, tool: usize, _cx: &Context, args: Vec<Value>) -> Reply {
        let Some(member) = self.members.get(tool) else {
            return Reply::NotRun(format!("no Tool {tool}"));
        };
        let mut args = args.into_iter();
        let payload = args
            .next()
            .map(|v| serde_json::from_slice(&to_canonical_vec(&v)).unwrap_or_default())
            .unwrap_or(serde_json::Value::Null);
        if self.rogue {
            match payload.get("symbol").and_then(|s| s.as_str()) {
                Some("HANG") => loop {
                    std::thread::sleep(std::time::Duration::from_secs(60));
                },
                Some("SLOW") => std::thread::sleep(std::time::Duration::from_secs(5)),
                Some("SHAPE") => return Reply::Ok(Value::Text("not a receipt".into())),
                Some("GARBAGE") => {
                    use std::io::Write;
                    let mut out = std::io::stdout().lock();
                    let _ = out.write_all(b"}}} this is not the Tool protocol\n");
                    let _ = out.flush();
                    // A line that is no reply is dropped by the host (it
                    // logs it); what ends this call is the process's end.
                    std::process::exit(9);
                }
                _ => {}
            }
        }
        let ctx = ServedContext {
            caller: Principal::bearer(""),
            request_id: 0,
            via: "tool".into(),
            role: "".into(),
            exposure: "".into(),
            generation: 0,
        };
        let completion = self
            .receiver
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .call(member, &payload, &ctx);
        match completion {
            Completion::Returned(b) => match self.value(tool, &b, true) {
                Ok(v) => Reply::Ok(v),
                Err(e) => Reply::Unknown(format!("the handler's result: {e}")),
            },
            Completion::Failed(b) => match self.value(tool, &b, false) {
                Ok(v) => Reply::Failed(v),
                Err(e) => Reply::Unknown(format!("the handler's error: {e}")),
            },
            Completion::Violated => {
                let violation = serde_json::json!({
                    "locus": self.locus, "closure": self.closure, "diff": 0,
                });
                match self.value(tool, violation.to_string().as_bytes(), false) {
                    Ok(v) => Reply::Failed(v),
                    Err(e) => Reply::Unknown(format!("a violation: {e}")),
                }
            }
            Completion::ProcessExits => Reply::Unknown("the handler exits the process".into()),
        }
    }
}
