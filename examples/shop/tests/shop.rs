//! The shop (`examples/shop/shop.hl`, a program of two files) served by
//! `hale serve` with its handlers a Tool process written with
//! limen-toolkit from generated code, driven by peers nobody here wrote:
//! curl on the storefront, the MCP Python SDK and grpcio on the same
//! surface over MCP and gRPC, Python `websockets` on the order stream,
//! and `hale call` on the back office's Unix socket.

use limen_clients::{absent, banner_endpoint, read_banner, workspace_bin};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

fn here() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

struct Shop {
    child: Child,
    dir: PathBuf,
    banner: String,
}

impl Shop {
    fn start() -> Shop {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("hale-shop-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // The example's configuration, its handler built here.
        let tool = env!("CARGO_BIN_EXE_shop-tool");
        let config = std::fs::read_to_string(here().join("serve.toml"))
            .unwrap()
            .replace("../../target/release/shop-tool", tool)
            .replace(
                "/tmp/shop/back.sock",
                &dir.join("back.sock").display().to_string(),
            );
        std::fs::write(dir.join("serve.toml"), config).unwrap();
        std::fs::copy(here().join("customers.toml"), dir.join("customers.toml")).unwrap();
        let me = String::from_utf8(Command::new("id").arg("-u").output().unwrap().stdout).unwrap();
        let mut child = Command::new(workspace_bin("hale"))
            .arg("serve")
            .arg(here().join("shop.hl"))
            .arg("--config")
            .arg(dir.join("serve.toml"))
            .args([
                "--bind",
                "store=127.0.0.1:0",
                "--bind",
                "orders=127.0.0.1:0",
                "--bind",
                "store_mcp=127.0.0.1:0",
                "--bind",
                "store_grpc=127.0.0.1:0",
            ])
            .arg("--grant")
            .arg(format!("back_roles.clerk=uid:{}", me.trim()))
            .arg("--control")
            .arg(dir.join("control"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("hale serve starts");
        let banner = read_banner(&mut child, "hale serve");
        Shop { child, dir, banner }
    }

    fn endpoint(&self, name: &str) -> String {
        banner_endpoint(&self.banner, name)
    }
}

impl Drop for Shop {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// curl's POST of `body` to `member` as `token`: the status and the body.
fn curl(store: &str, token: &str, member: &str, body: &str) -> (u16, serde_json::Value) {
    let out = Command::new("curl")
        .args(["-s", "-w", "\n%{http_code}", "-H"])
        .arg(format!("Authorization: Bearer {token}"))
        .args([
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            body,
        ])
        .arg(format!("{store}/call/{member}"))
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, status) = text.rsplit_once('\n').expect("a status line");
    (
        status.trim().parse().unwrap(),
        serde_json::from_str(body).unwrap_or(serde_json::Value::Null),
    )
}

fn peers_python(module: &str) -> Option<PathBuf> {
    let python = here().join("../../.peers/venv/bin/python");
    let ok = Command::new(&python)
        .args(["-c", &format!("import {module}")])
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        Some(python)
    } else {
        absent(&format!("{module} is not installed"));
        None
    }
}

#[test]
fn a_customer_buys_and_the_order_reaches_the_stream() {
    let shop = Shop::start();
    let store = shop.endpoint("store");
    // The storefront: an imported record (`catalog::Item`) as the result.
    let (status, item) = curl(&store, "t-ann", "Catalog::lookup", r#"{"sku":1}"#);
    assert_eq!(status, 200, "{item}");
    assert_eq!(
        item,
        serde_json::json!({"sku": 1, "name": "tea", "price": 450, "on_hand": 10})
    );
    let (status, e) = curl(&store, "t-ann", "Catalog::lookup", r#"{"sku":9}"#);
    assert_eq!((status, e["code"].as_str()), (422, Some("unknown_sku")));
    // Refused by the contract before any handler runs.
    let (status, e) = curl(&store, "t-nobody", "Cart::add", r#"{"sku":1,"qty":1}"#);
    assert_eq!(
        (status, e["refusal"]["kind"].as_str()),
        (401, Some("unauthenticated"))
    );
    let (status, e) = curl(&store, "t-ann", "Cart::add", r#"{"sku":"one","qty":1}"#);
    assert_eq!(
        (status, e["refusal"]["kind"].as_str()),
        (400, Some("malformed"))
    );

    let watcher = peers_python("websockets.sync.client").map(|python| {
        let mut child = Command::new(python)
            .arg(here().join("tests/watch_orders.py"))
            .args([&shop.endpoint("orders"), "t-ann"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().unwrap().unwrap();
        assert!(first.contains(r#""type": "subscribed""#), "{first}");
        (child, lines)
    });

    let (status, view) = curl(&store, "t-ann", "Cart::add", r#"{"sku":2,"qty":2}"#);
    assert_eq!(
        (status, view),
        (200, serde_json::json!({"lines": 1, "total": 2400}))
    );
    let (status, receipt) = curl(&store, "t-ann", "Cart::checkout", "{}");
    assert_eq!(
        (status, receipt),
        (200, serde_json::json!({"order": 1, "total": 2400}))
    );
    let (status, e) = curl(&store, "t-ann", "Cart::checkout", "{}");
    assert_eq!((status, e["code"].as_str()), (422, Some("empty_cart")));

    if let Some((mut child, mut lines)) = watcher {
        let event: serde_json::Value =
            serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        assert_eq!(event["type"], "event");
        assert_eq!(
            event["payload"],
            serde_json::json!({"order": 1, "customer": "ann", "total": 2400})
        );
        // ann is no customer once the file says so: her stream ends.
        std::fs::write(shop.dir.join("customers.toml"), "customer = [\"ben\"]\n").unwrap();
        let end: serde_json::Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        assert_eq!(end["type"], "unauthorized", "{end}");
        assert_eq!(end["reason"], "revoked", "{end}");
        let _ = child.wait();
        // And the storefront refuses her too: both sources read the file
        // in the pass that announced the revision the hub acted on.
        let (status, _) = curl(&store, "t-ann", "Cart::add", r#"{"sku":1,"qty":1}"#);
        assert_eq!(status, 403);
    }

    // The back office, over its Unix socket, as the clerk.
    let back = shop.endpoint("back");
    let out = Command::new(workspace_bin("hale"))
        .args([
            "call",
            &back,
            "Catalog::restock",
            "--sku",
            "3",
            "--qty",
            "4",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let item: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(item["on_hand"], 5);
}

#[test]
fn the_storefront_answers_the_mcp_sdk_and_grpcio() {
    let shop = Shop::start();
    // The MCP Python SDK's client (drivers/tests/peer/mcp_client.py).
    if let Some(python) = peers_python("mcp") {
        let url = shop.endpoint("store_mcp").replace("mcp://", "http://");
        let plan = serde_json::json!({
            "transport": "http", "url": format!("{url}/mcp"), "token": "t-ben",
            "calls": [
                {"label": "lookup", "name": "Catalog__lookup", "arguments": {"sku": 2}},
                {"label": "add", "name": "Cart__add", "arguments": {"sku": 2, "qty": 1}},
            ],
        });
        let mut child = Command::new(python)
            .arg(here().join("../../drivers/tests/peer/mcp_client.py"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(plan.to_string().as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let tools: Vec<&str> = report["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(tools, ["Cart__add", "Cart__checkout", "Catalog__lookup"]);
        assert_eq!(
            report["calls"]["lookup"]["result"]["structuredContent"],
            serde_json::json!({"sku": 2, "name": "cup", "price": 1200, "on_hand": 3})
        );
        assert_eq!(
            report["calls"]["add"]["result"]["structuredContent"],
            serde_json::json!({"lines": 1, "total": 1200})
        );
    }
    // grpcio with stubs from the exported Storefront.proto.
    if let Some(python) = peers_python("grpc_tools") {
        let api = shop.dir.join("api");
        let stubs = shop.dir.join("stubs");
        std::fs::create_dir_all(&stubs).unwrap();
        let export = Command::new(workspace_bin("hale"))
            .args(["api", "export", "--surface", "Storefront", "--out"])
            .arg(&api)
            .arg(here().join("shop.hl"))
            .output()
            .unwrap();
        assert!(export.status.success(), "{export:?}");
        let target = shop.endpoint("store_grpc").replace("grpc://", "");
        let out = Command::new(python)
            .arg(here().join("tests/grpc_storefront.py"))
            .arg(&api)
            .arg(&stubs)
            .args([&target, "t-ben"])
            .args(["Catalog__lookup", r#"{"sku": 3}"#])
            .args(["Catalog__lookup", r#"{"sku": 9}"#])
            .args(["Cart__add", r#"{"sku": 3, "qty": 1}"#])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[0]["code"], "OK");
        assert_eq!(lines[0]["response"]["name"], "pot");
        // The handler error, in gRPC's column of § Outcomes.
        assert_eq!(lines[1]["code"], "FAILED_PRECONDITION");
        // ben's cart is one cart, whichever transport adds to it.
        assert_eq!(lines[2]["code"], "OK");
        assert_eq!(lines[2]["response"]["lines"], "2");
    }
}
