//! The MCP transport and the `hale mcp --app` bridge, live: `hale demo`
//! run as a process (Public over MCP beside public over HTTP, one Orders
//! instance), driven by the recorded calls of the reference fixtures as
//! `tools/call` messages and by real MCP clients nobody here wrote: the
//! official Python SDK's two lines (mcp 1.x, `ClientSession` over
//! `streamablehttp_client`; mcp 2.x, `Client`, which probes
//! `server/discover` first) and the TypeScript SDK
//! (`StreamableHTTPClientTransport`, which sends a GET once initialized),
//! over the MCP listener and through the bridge on stdio, over `unix:` and
//! `http://` endpoints. The peers are installed by `scripts/install-peers`
//! under `<repo>/.peers/`; a test skips with a message when one is absent,
//! unless `LIMEN_REQUIRE_PEERS=1`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use limen_core::hale::docs::rows::tool_name;
use limen_drivers::client::wire::http_exchange;
use serde_json::{json, Value};

mod support;

use support::{absent, demo, report, root, spawn_plan, Demo, HALE};

fn witness() -> Option<PathBuf> {
    let dir = root().join("../shared/hale-witness");
    if dir.join("wire/http").is_dir() {
        Some(dir)
    } else {
        eprintln!("skipped: ../shared/hale-witness is absent");
        None
    }
}

/// An MCP client peer: the program that runs `drivers/tests/peer/mcp_client.*`.
#[derive(Clone, Copy, Debug)]
enum Sdk {
    Python1,
    Python2,
    TypeScript,
}

impl Sdk {
    fn command(self) -> Option<Command> {
        let root = root();
        let peer = root.join("drivers/tests/peer");
        let (program, script, needs) = match self {
            Sdk::Python1 => (
                root.join(".peers/venv/bin/python"),
                peer.join("mcp_client.py"),
                root.join(".peers/venv/bin/python"),
            ),
            Sdk::Python2 => (
                root.join(".peers/venv-mcp2/bin/python"),
                peer.join("mcp_client.py"),
                root.join(".peers/venv-mcp2/bin/python"),
            ),
            Sdk::TypeScript => (
                PathBuf::from("node"),
                peer.join("mcp_client.mjs"),
                root.join(".peers/node/node_modules/@modelcontextprotocol/sdk/package.json"),
            ),
        };
        let node_ok = !matches!(self, Sdk::TypeScript)
            || Command::new("node")
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success());
        if !needs.exists() || !node_ok {
            absent(&format!(
                "the {self:?} MCP SDK peer is absent ({})",
                needs.display()
            ));
            return None;
        }
        let mut cmd = Command::new(program);
        cmd.arg(script);
        Some(cmd)
    }

    /// Runs `plan` and returns the client's report.
    fn run(self, plan: &Value) -> Option<Value> {
        let mut cmd = self.command()?;
        cmd.env_remove("HALE_API_BEARER");
        let report = report(spawn_plan(&mut cmd, plan), &format!("{self:?}"));
        Some(report)
    }
}

/// What the MCP tests ask of a running demo.
trait Mcp {
    fn post(
        &self,
        token: Option<&str>,
        extra: &[(&'static str, String)],
        body: &Value,
    ) -> (u16, Value);
    fn http_url(&self) -> String;
}

impl Mcp for Demo {
    /// One message as `POST /mcp` under `token`: status and body.
    fn post(
        &self,
        token: Option<&str>,
        extra: &[(&'static str, String)],
        body: &Value,
    ) -> (u16, Value) {
        let mut headers: Vec<(&str, String)> = extra.to_vec();
        if let Some(t) = token {
            headers.push(("Authorization", format!("Bearer {t}")));
        }
        headers.push(("Content-Type", "application/json".into()));
        let reply = http_exchange(
            &self.mcp,
            "POST",
            "/mcp",
            &headers,
            body.to_string().as_bytes(),
        )
        .unwrap();
        (
            reply.status,
            serde_json::from_slice(&reply.body).unwrap_or(Value::Null),
        )
    }

    fn http_url(&self) -> String {
        format!("http://{}/mcp", self.mcp)
    }
}

fn record(dir: &Path, transport: &str, name: &str) -> Value {
    let text = std::fs::read_to_string(
        dir.join("wire")
            .join(transport)
            .join(format!("{name}.json")),
    )
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The MCP code of a refusal kind (§ The MCP transport).
fn code(kind: &str) -> i64 {
    match kind {
        "malformed" => -32602,
        "digest_mismatch" => -32003,
        "unauthenticated" => -32004,
        "unauthorized" => -32005,
        "full" => -32006,
        "shutting_down" => -32007,
        "unavailable" => -32008,
        other => panic!("no kind {other}"),
    }
}

/// What a recorded call answers over MCP.
#[derive(Clone, Debug, PartialEq)]
enum Expected {
    Result(Value),
    Error {
        code: i64,
        message: String,
        data: Value,
    },
}

/// One recorded call as a `tools/call`.
#[derive(Clone, Debug)]
struct Case {
    label: String,
    token: Option<String>,
    tool: String,
    arguments: Value,
    digest: Option<String>,
    expect: Expected,
}

fn error(code: i64, message: &str, data: &Value) -> Expected {
    Expected::Error {
        code,
        message: message.into(),
        data: data.clone(),
    }
}

/// An HTTP record's call, answered with its recorded body as the data.
fn http_case(dir: &Path, name: &str) -> Case {
    let rec = record(dir, "http", name);
    let req = &rec["request"];
    let body = &rec["reply"]["body"];
    let member = req["path"].as_str().unwrap().trim_start_matches("/call/");
    let expect = match rec["outcome"].as_str().unwrap() {
        "result" => Expected::Result(body.clone()),
        "handler_error" => error(-32001, "handler_error", body),
        "server_error" => error(-32603, "server_error", &body["refusal"]),
        _ => {
            let kind = rec["kind"].as_str().unwrap();
            error(code(kind), kind, &body["refusal"])
        }
    };
    Case {
        label: name.into(),
        token: req["headers"]["Authorization"]
            .as_str()
            .map(|h| h.trim_start_matches("Bearer ").to_owned()),
        tool: tool_name(member),
        arguments: req["body"].clone(),
        digest: req["headers"]["Hale-Surface-Digest"]
            .as_str()
            .map(str::to_owned),
        expect,
    }
}

/// A Unix record's call, answered with its reply's error or refusal.
fn unix_case(dir: &Path, name: &str) -> Case {
    let rec = record(dir, "unix", name);
    let req = &rec["request"];
    let reply = &rec["reply"];
    let expect = if reply["ok"] == true {
        Expected::Result(reply["value"].clone())
    } else if !reply["error"].is_null() {
        error(-32001, "handler_error", &reply["error"])
    } else if reply["refusal"]["kind"] == "server" {
        error(-32603, "server_error", &reply["refusal"])
    } else {
        let kind = reply["refusal"]["kind"].as_str().unwrap();
        error(code(kind), kind, &reply["refusal"])
    };
    Case {
        label: name.into(),
        token: None,
        tool: tool_name(req["call"].as_str().unwrap()),
        arguments: req["payload"].clone(),
        digest: req["digest"].as_str().map(str::to_owned),
        expect,
    }
}

fn tools_call(id: &Value, case: &Case, digest_in_meta: bool) -> Value {
    let mut params = json!({"name": case.tool, "arguments": case.arguments});
    if let (Some(d), true) = (&case.digest, digest_in_meta) {
        params["_meta"] = json!({"hale/digest": d});
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// The JSON-RPC response a case's `tools/call` with `id` is answered by.
fn response(id: &Value, expect: &Expected) -> Value {
    match expect {
        Expected::Result(v) => json!({"jsonrpc": "2.0", "id": id, "result": {
            "content": [{"type": "text", "text": v.to_string()}],
            "structuredContent": v,
            "isError": false,
        }}),
        Expected::Error {
            code,
            message,
            data,
        } => json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": code, "message": message, "data": data}}),
    }
}

/// Runs `case` over `POST /mcp`, its digest in the header or in `_meta`,
/// and holds the answer to the recorded body.
fn check_post(d: &Demo, case: &Case, id: Value, digest_in_meta: bool) {
    let extra: Vec<(&'static str, String)> = match (&case.digest, digest_in_meta) {
        (Some(dg), false) => vec![("Hale-Surface-Digest", dg.clone())],
        _ => Vec::new(),
    };
    let (status, body) = d.post(
        case.token.as_deref(),
        &extra,
        &tools_call(&id, case, digest_in_meta),
    );
    let expected_status = match &case.expect {
        Expected::Error { code: -32004, .. } => 401,
        _ => 200,
    };
    assert_eq!(status, expected_status, "{}", case.label);
    assert_eq!(body, response(&id, &case.expect), "{}", case.label);
}

#[test]
fn the_recorded_calls_as_tools_call_answer_the_recorded_bodies() {
    let Some(dir) = witness() else { return };
    let d = demo("records", &[]);
    // Ids of every JSON-RPC kind, echoed verbatim: 0 and strings included.
    let ids = [json!(0), json!("s-1"), json!(7), json!(""), json!(-3)];
    for (i, name) in [
        "result",
        "handler_error",
        "refusal_malformed",
        "refusal_digest_mismatch",
        "refusal_unauthenticated",
        "refusal_unauthorized",
        "server_error",
    ]
    .into_iter()
    .enumerate()
    {
        let case = http_case(&dir, name);
        check_post(&d, &case, ids[i % ids.len()].clone(), i % 2 == 1);
    }
    // unavailable: the receiver drains.
    d.control("drain orders");
    check_post(&d, &http_case(&dir, "refusal_unavailable"), json!(1), false);
    d.control("resume orders");

    // full: a gated receiver holds the bound of one.
    let d = demo("records-full", &["--bound", "1"]);
    d.control("gate orders");
    let result = http_case(&dir, "result");
    let held = {
        let (addr, body) = (d.mcp.clone(), tools_call(&json!(1), &result, false));
        std::thread::spawn(move || {
            let headers = [("Authorization", "Bearer t-alice".to_owned())];
            http_exchange(&addr, "POST", "/mcp", &headers, body.to_string().as_bytes()).unwrap()
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    check_post(&d, &http_case(&dir, "refusal_full"), json!("f"), true);
    d.control("open orders");
    assert_eq!(held.join().unwrap().status, 200);

    // shutting_down: one executing, the recorded one queued, then stop().
    let d = demo("records-down", &[]);
    d.control("gate orders");
    let spawn = |case: Case, id: Value| {
        let addr = d.mcp.clone();
        let body = tools_call(&id, &case, true);
        let token = case.token.clone().unwrap();
        let h = std::thread::spawn(move || {
            let headers = [("Authorization", format!("Bearer {token}"))];
            let r = http_exchange(&addr, "POST", "/mcp", &headers, body.to_string().as_bytes())
                .unwrap();
            (r.status, serde_json::from_slice::<Value>(&r.body).unwrap())
        });
        std::thread::sleep(Duration::from_millis(300));
        h
    };
    let executing = spawn(result.clone(), json!(1));
    let down = http_case(&dir, "refusal_shutting_down");
    let queued = spawn(down.clone(), json!(2));
    d.control("stop");
    assert_eq!(
        queued.join().unwrap(),
        (200, response(&json!(2), &down.expect))
    );
    d.control("open orders");
    assert_eq!(
        executing.join().unwrap().0,
        200,
        "the executing call is answered"
    );
}

#[test]
fn the_http_and_mcp_exposures_share_one_orders_instance() {
    if witness().is_none() {
        return;
    }
    let d = demo("shared", &[]);
    let place = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "Orders__place", "arguments": {"symbol": "ACME", "qty": 10, "limit": 12500}}});
    let (_, first) = d.post(Some("t-alice"), &[], &place);
    assert_eq!(first["result"]["structuredContent"]["order"], 41);
    let headers = [("Authorization", "Bearer t-alice".to_owned())];
    let r = http_exchange(
        &d.public,
        "POST",
        "/call/Orders::place",
        &headers,
        br#"{"symbol":"ACME","qty":10,"limit":12500}"#,
    )
    .unwrap();
    let second: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(second["order"], 42, "the next order of the same instance");
}

/// A raw HTTP request to the MCP listener: the status line and head.
fn raw_head(addr: &str, request: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn get_and_delete_are_405_before_authentication() {
    let d = demo("405", &[]);
    for method in ["GET", "DELETE"] {
        let head = raw_head(
            &d.mcp,
            &format!("{method} /mcp HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n"),
        );
        assert!(head.starts_with("HTTP/1.1 405 "), "{method}: {head}");
        assert!(head.contains("\r\nAllow: POST\r\n"), "{method}: {head}");
        assert!(!head.to_ascii_lowercase().contains("mcp-session-id"));
    }
    // Lenient about Accept: none, or one that names neither form.
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    for accept in ["", "Accept: text/plain\r\n"] {
        let head = raw_head(
            &d.mcp,
            &format!(
                "POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t-bob\r\n{accept}Content-Length: {}\r\n\r\n{body}",
                body.len()
            ),
        );
        assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
        assert!(
            head.ends_with(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            "{head}"
        );
    }
    // A notification is 202 with no body; a batch is -32600; not JSON -32700.
    let (status, _) = d.post(
        Some("t-bob"),
        &[],
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(status, 202);
    let (_, v) = d.post(
        Some("t-bob"),
        &[],
        &json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]),
    );
    assert_eq!(
        (v["id"].clone(), v["error"]["code"].clone()),
        (Value::Null, json!(-32600))
    );
    let reply = http_exchange(
        &d.mcp,
        "POST",
        "/mcp",
        &[("Authorization", "Bearer t-bob".to_owned())],
        b"{nope",
    )
    .unwrap();
    let v: Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(v["error"]["code"], -32700);
}

#[test]
fn an_mcp_listener_that_cannot_bind_fails_the_boot() {
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = held.local_addr().unwrap().to_string();
    let out = Command::new(HALE)
        .args([
            "demo",
            "--public",
            "127.0.0.1:0",
            "--partner",
            "127.0.0.1:0",
        ])
        .args(["--admin-socket", ""])
        .args(["--mcp", &addr])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(&format!("api: mcp::Rpc could not listen on {addr}")),
        "{stderr}"
    );
}

/// The projection's tools named `names`, as an SDK's report holds them:
/// name, description and input schema (an SDK may drop the extension
/// member, and one that keeps it must keep it whole).
fn check_tools(report: &Value, projection: &Value, names: &[&str], who: &str) {
    let listed = report["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{who}: {report}"));
    let got: Vec<&str> = listed.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(got, names, "{who}");
    for t in listed {
        let p = projection["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == t["name"])
            .unwrap();
        for key in ["description", "inputSchema"] {
            assert_eq!(t[key], p[key], "{who}: {} {key}", t["name"]);
        }
        if let Some(r) = t.get("x-hale-requires") {
            assert_eq!(r, &p["x-hale-requires"], "{who}");
        }
    }
}

/// Holds each case's answer in an SDK's report: a result by its
/// structured content and text, an error by its code, its message (an SDK
/// may prefix it) and its data, the recorded body.
fn check_calls(report: &Value, cases: &[Case], who: &str) {
    for case in cases {
        let got = &report["calls"][&case.label];
        match &case.expect {
            Expected::Result(v) => {
                let r = &got["result"];
                assert_eq!(&r["structuredContent"], v, "{who} {}: {got}", case.label);
                assert_eq!(r["isError"], false, "{who} {}", case.label);
                let text: Value =
                    serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
                assert_eq!(&text, v, "{who} {}", case.label);
            }
            Expected::Error {
                code,
                message,
                data,
            } => {
                let e = &got["error"];
                assert_eq!(&e["code"], code, "{who} {}: {got}", case.label);
                assert!(
                    e["message"]
                        .as_str()
                        .unwrap_or_default()
                        .ends_with(message.as_str()),
                    "{who} {}: {got}",
                    case.label
                );
                assert_eq!(&e["data"], data, "{who} {}", case.label);
            }
        }
    }
}

/// The name `hale mcp --app` gives Public's server: the bridged app's
/// surface and digest.
const PUBLIC_APP: &str = "hale-app:Public@fnv1a64:a8930d6e7998e986";

/// Runs `plan`, a stdio client of `hale mcp --app …`, under `sdk` and holds
/// its report to the bridged `server` name, the tools of `projection`
/// named `names`, and the answers of `cases`; `who` names the run in
/// failures. Every bridge run is judged the same way whatever carries it.
fn check_bridged(
    sdk: Sdk,
    plan: &Value,
    who: &str,
    server: &str,
    projection: &Value,
    names: &[&str],
    cases: &[Case],
) {
    let report = sdk.run(plan).unwrap();
    assert_eq!(report["server"]["name"], server, "{who}: {report}");
    check_tools(&report, projection, names, who);
    check_calls(&report, cases, who);
}

fn plan_calls(cases: &[Case]) -> Value {
    cases
        .iter()
        .map(|c| {
            let mut call = json!({"label": c.label, "name": c.tool, "arguments": c.arguments});
            if let Some(d) = &c.digest {
                call["meta"] = json!({"hale/digest": d});
            }
            call
        })
        .collect()
}

/// An unknown tool, as each transport refuses it.
fn unknown_tool(reason: &str) -> Case {
    Case {
        label: "unknown_tool".into(),
        token: None,
        tool: "Orders__nope".into(),
        arguments: json!({}),
        digest: None,
        expect: error(
            -32602,
            "malformed",
            &json!({"kind": "malformed", "reason": reason}),
        ),
    }
}

/// Over Public: alice's calls (a result, a handler error, refusals, the
/// server error, an unknown tool) and bob's unauthorized cancel.
fn public_cases(dir: &Path, unknown: &str) -> (Vec<Case>, Vec<Case>) {
    let alice: Vec<Case> = [
        "result",
        "handler_error",
        "refusal_malformed",
        "refusal_digest_mismatch",
        "server_error",
    ]
    .iter()
    .map(|n| http_case(dir, n))
    .chain([unknown_tool(unknown)])
    .collect();
    (alice, vec![http_case(dir, "refusal_unauthorized")])
}

/// One SDK against the MCP listener: alice and bob see different tools,
/// every call answers its recorded body, and mallory cannot connect.
fn sdk_over_mcp(sdk: Sdk) {
    let Some(dir) = witness() else { return };
    if sdk.command().is_none() {
        return;
    }
    let d = demo(&format!("{sdk:?}"), &[]);
    let projection: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("Public.mcp.json")).unwrap())
            .unwrap();
    let (alice, bob) = public_cases(&dir, "unknown_member: Orders__nope");
    for (token, cases, names) in [
        ("t-alice", &alice, &["Orders__cancel", "Orders__place"][..]),
        ("t-bob", &bob, &["Orders__place"][..]),
    ] {
        let plan = json!({"transport": "http", "url": d.http_url(), "token": token, "calls": plan_calls(cases)});
        let report = sdk.run(&plan).unwrap();
        let who = format!("{sdk:?} {token}");
        assert_eq!(
            report["server"],
            json!({"name": "Public", "version": "fnv1a64:a8930d6e7998e986"}),
            "{who}: {report}"
        );
        check_tools(&report, &projection, names, &who);
        check_calls(&report, cases, &who);
        if let Some(methods) = report.get("methods") {
            // mcp 2.x probes server/discover, is answered -32601, and
            // falls back on the initialize handshake.
            let methods: Vec<&str> = methods
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Value::as_str)
                .collect();
            assert_eq!(
                methods[..3],
                ["server/discover", "initialize", "notifications/initialized"],
                "{who}"
            );
        }
        if let Some(exchanges) = report.get("exchanges") {
            // The TypeScript transport's GET for an event stream: a quiet
            // 405, no error reported.
            assert!(
                exchanges
                    .as_array()
                    .unwrap()
                    .contains(&json!({"method": "GET", "status": 405})),
                "{who}: {exchanges}"
            );
            assert_eq!(report["transport_errors"], json!([]), "{who}");
        }
    }
    let plan = json!({"transport": "http", "url": d.http_url(), "token": "t-mallory", "calls": []});
    let report = sdk.run(&plan).unwrap();
    let refused = report["connect_error"].as_str().unwrap_or_default();
    assert!(
        refused.contains("401") || refused.contains("unauthenticated") || report["code"] == 401,
        "{sdk:?} mallory: {report}"
    );
}

#[test]
fn the_python_sdk_1x_drives_the_mcp_exposure() {
    sdk_over_mcp(Sdk::Python1);
}

#[test]
fn the_python_sdk_2x_drives_the_mcp_exposure() {
    sdk_over_mcp(Sdk::Python2);
}

#[test]
fn the_typescript_sdk_drives_the_mcp_exposure() {
    sdk_over_mcp(Sdk::TypeScript);
}

/// One SDK's stdio client driving `hale mcp --app` over `http://` (public,
/// as alice and as bob) and over `unix:` (admin, as the operator this
/// process is).
fn sdk_over_the_bridge(sdk: Sdk) {
    let Some(dir) = witness() else { return };
    if sdk.command().is_none() {
        return;
    }
    let d = demo(&format!("bridge-{sdk:?}"), &[]);
    let public: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("Public.mcp.json")).unwrap())
            .unwrap();
    let admin: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("Admin.mcp.json")).unwrap())
            .unwrap();
    let bridge = |endpoint: &str, token: Option<&str>| {
        let mut cmd = vec![
            HALE.to_owned(),
            "mcp".into(),
            "--app".into(),
            endpoint.into(),
        ];
        if let Some(t) = token {
            cmd.extend(["--bearer".to_owned(), t.to_owned()]);
        }
        cmd
    };
    // The bridge sends the member a tool name spells; the server refuses a
    // member it has not.
    let (alice, bob) = public_cases(&dir, "unknown_member: Orders::nope");
    let http = format!("http://{}", d.public);
    for (token, cases, names) in [
        ("t-alice", &alice, &["Orders__cancel", "Orders__place"][..]),
        ("t-bob", &bob, &["Orders__place"][..]),
    ] {
        let plan = json!({"transport": "stdio", "command": bridge(&http, Some(token)), "calls": plan_calls(cases)});
        let who = format!("{sdk:?} bridge http {token}");
        check_bridged(sdk, &plan, &who, PUBLIC_APP, &public, names, cases);
    }
    // Over the socket: the recorded result cancels order 41, so one is
    // placed first (public is bound to the same Orders instance).
    let headers = [("Authorization", "Bearer t-alice".to_owned())];
    let placed = http_exchange(
        &d.public,
        "POST",
        "/call/Orders::place",
        &headers,
        br#"{"symbol":"ACME","qty":10,"limit":12500}"#,
    )
    .unwrap();
    assert_eq!(placed.status, 200);
    let cases: Vec<Case> = [
        "result",
        "handler_error",
        "refusal_malformed",
        "refusal_digest_mismatch",
        "server_error",
    ]
    .iter()
    .map(|n| unix_case(&dir, n))
    .collect();
    let unix = format!("unix:{}", d.admin.display());
    let plan =
        json!({"transport": "stdio", "command": bridge(&unix, None), "calls": plan_calls(&cases)});
    let who = format!("{sdk:?} bridge unix");
    check_bridged(
        sdk,
        &plan,
        &who,
        "hale-app:Admin@fnv1a64:40381db6685c9f75",
        &admin,
        &["Ledger__rebalance", "Orders__cancel"],
        &cases,
    );
}

#[test]
fn the_python_sdk_1x_stdio_client_drives_the_bridge() {
    sdk_over_the_bridge(Sdk::Python1);
}

#[test]
fn the_python_sdk_2x_stdio_client_drives_the_bridge() {
    sdk_over_the_bridge(Sdk::Python2);
}

#[test]
fn the_typescript_sdk_stdio_client_drives_the_bridge() {
    sdk_over_the_bridge(Sdk::TypeScript);
}

/// `hale check …` (or `hale api export …`) as a process: its exit status
/// and stdout.
fn hale_run(args: &[&str]) -> (i32, String) {
    let out = Command::new(HALE).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
    )
}

/// One SDK's stdio client driving `hale mcp`, the toolchain's server: each
/// tool answers what its command prints, a failing command is a result
/// marked `isError`, and arguments that are not the tool's are refused.
fn sdk_over_the_toolchain(sdk: Sdk) {
    let Some(dir) = witness() else { return };
    if sdk.command().is_none() {
        return;
    }
    let program = dir.join("program.hl").display().to_string();
    let scratch = std::env::temp_dir().join(format!(
        "limen-mcp-toolchain-{}-{sdk:?}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).unwrap();
    let bad = scratch.join("bad.hl");
    std::fs::write(&bad, "role trader\napi A { }\n").unwrap();
    let out = scratch.join("bundle");
    let call = |label: &str, name: &str, arguments: Value| json!({"label": label, "name": name, "arguments": arguments});
    let calls = vec![
        call("check", "check", json!({"file": program})),
        call(
            "check_bad",
            "check",
            json!({"file": bad.display().to_string()}),
        ),
        call("inventory", "api_inventory", json!({"file": program})),
        call(
            "describe",
            "api_describe",
            json!({"file": program, "exposure": "public", "caller": "alice", "holds": ["trader"]}),
        ),
        call(
            "openapi",
            "api_projection",
            json!({"file": program, "surface": "Public", "form": "openapi"}),
        ),
        call(
            "proto",
            "api_projection",
            json!({"file": program, "surface": "Admin", "form": "proto"}),
        ),
        call(
            "no_surface",
            "api_projection",
            json!({"file": program, "surface": "Nope", "form": "mcp"}),
        ),
        call(
            "export",
            "api_export",
            json!({"file": program, "surface": "Public", "out": out.display().to_string()}),
        ),
        call(
            "export_check",
            "api_export",
            json!({"file": program, "surface": "Public", "check": out.display().to_string()}),
        ),
        call(
            "unknown_argument",
            "check",
            json!({"file": program, "api": true}),
        ),
        call("no_such_tool", "frobnicate", json!({})),
    ];
    let plan = json!({"transport": "stdio", "command": [HALE, "mcp"], "calls": calls});
    let report = sdk.run(&plan).unwrap();
    let who = format!("{sdk:?} toolchain");
    assert_eq!(report["server"]["name"], "hale", "{who}: {report}");
    let names: Vec<&str> = report["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{who}: {report}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "check",
            "api_inventory",
            "api_describe",
            "api_projection",
            "api_export"
        ],
        "{who}"
    );
    let result = |label: &str| {
        let r = &report["calls"][label]["result"];
        assert!(r.is_object(), "{who} {label}: {}", report["calls"][label]);
        r.clone()
    };
    let text = |r: &Value| r["content"][0]["text"].as_str().unwrap().to_owned();
    let failed = |r: &Value| r["isError"] == true;
    // check: the program checks; a bad one is an error result with the
    // diagnostic `hale check` prints.
    let r = result("check");
    assert!(!failed(&r), "{who}: {r}");
    assert_eq!(r["structuredContent"]["ok"], true);
    let r = result("check_bad");
    assert!(failed(&r), "{who}: {r}");
    assert!(text(&r).contains("bad.hl:2:1:"), "{who}: {r}");
    // The documents are the ones the command prints.
    let doc = |args: &[&str]| -> Value {
        let (code, out) = hale_run(args);
        assert_eq!(code, 0, "hale {args:?}");
        serde_json::from_str(&out).unwrap()
    };
    let r = result("inventory");
    assert_eq!(
        r["structuredContent"],
        doc(&["check", "--api", &program]),
        "{who}"
    );
    assert_eq!(
        serde_json::from_str::<Value>(&text(&r)).unwrap(),
        r["structuredContent"]
    );
    let r = result("describe");
    assert_eq!(
        r["structuredContent"],
        doc(&[
            "check",
            "--api",
            "--exposure",
            "public",
            "--caller",
            "alice",
            "--holds",
            "trader",
            &program
        ]),
        "{who}"
    );
    let r = result("openapi");
    assert_eq!(
        r["structuredContent"],
        doc(&[
            "check",
            "--api",
            "--surface",
            "Public",
            "--openapi",
            &program
        ]),
        "{who}"
    );
    let r = result("proto");
    let (code, proto) = hale_run(&["check", "--api", "--surface", "Admin", "--proto", &program]);
    assert_eq!((code, text(&r)), (0, proto), "{who}");
    let r = result("no_surface");
    assert!(
        failed(&r) && text(&r).contains("no surface `Nope`"),
        "{who}: {r}"
    );
    // export writes the bundle `hale api export` writes, and --check holds it.
    let r = result("export");
    assert!(!failed(&r), "{who}: {r}");
    let cli = scratch.join("cli");
    let (code, _) = hale_run(&[
        "api",
        "export",
        "--surface",
        "Public",
        "--out",
        cli.to_str().unwrap(),
        &program,
    ]);
    assert_eq!(code, 0);
    let files = r["structuredContent"]["files"].as_array().unwrap().clone();
    assert!(!files.is_empty());
    for f in &files {
        let name = f.as_str().unwrap();
        assert_eq!(
            std::fs::read(out.join(name)).unwrap(),
            std::fs::read(cli.join(name)).unwrap(),
            "{who}: {name}"
        );
    }
    let r = result("export_check");
    assert!(!failed(&r), "{who}: {r}");
    assert_eq!(r["structuredContent"]["current"], true);
    // Arguments that are not the tool's: -32602, naming what is wrong.
    for (label, says) in [
        ("unknown_argument", "`api`"),
        ("no_such_tool", "frobnicate"),
    ] {
        let e = &report["calls"][label]["error"];
        assert_eq!(e["code"], -32602, "{who} {label}: {e}");
        assert!(
            e["data"]["reason"].as_str().unwrap().contains(says),
            "{who} {label}: {e}"
        );
    }
}

#[test]
fn the_python_sdk_1x_stdio_client_drives_the_toolchain() {
    sdk_over_the_toolchain(Sdk::Python1);
}

#[test]
fn the_python_sdk_2x_stdio_client_drives_the_toolchain() {
    sdk_over_the_toolchain(Sdk::Python2);
}

#[test]
fn the_typescript_sdk_stdio_client_drives_the_toolchain() {
    sdk_over_the_toolchain(Sdk::TypeScript);
}

/// Lines through `hale mcp --app ENDPOINT`: one answer line per request.
fn bridge_lines(endpoint: &str, token: &str, lines: &[Value]) -> Vec<Value> {
    let mut child = Command::new(HALE)
        .args(["mcp", "--app", endpoint, "--bearer", token])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for l in lines {
        writeln!(stdin, "{l}").unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "the bridge exits when stdin ends"
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_bridge_forwards_to_an_mcp_endpoint_and_names_what_does_not_answer() {
    let Some(dir) = witness() else { return };
    let d = demo("forward", &[]);
    let case = http_case(&dir, "handler_error");
    let lines = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-03-26"}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": "t", "method": "tools/list"}),
        tools_call(&json!(2), &case, true),
    ];
    let answers = bridge_lines(&format!("mcp://{}", d.mcp), "t-alice", &lines);
    assert_eq!(
        answers.len(),
        3,
        "no answer to the notification: {answers:?}"
    );
    assert_eq!(
        answers[0]["result"]["serverInfo"],
        json!({"name": "Public", "version": "fnv1a64:a8930d6e7998e986"}),
        "forwarded as the listener answered"
    );
    assert_eq!(answers[0]["result"]["protocolVersion"], "2025-03-26");
    assert_eq!(answers[1]["id"], "t");
    assert_eq!(answers[2], response(&json!(2), &case.expect));
    // Nothing listening: the host still gets an answer per request.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = free.local_addr().unwrap().to_string();
    drop(free);
    for endpoint in [format!("mcp://{addr}"), format!("http://{addr}")] {
        let answers = bridge_lines(&endpoint, "t-alice", &lines);
        assert_eq!(answers.len(), 3, "{endpoint}");
        for a in &answers {
            assert_eq!(a["error"]["code"], -32000, "{endpoint}: {a}");
            assert_eq!(a["error"]["message"], "transport_failure");
        }
    }
    // A refused description: initialize is the refusal, as the wire says.
    let answers = bridge_lines(&format!("http://{}", d.public), "t-mallory", &lines[..1]);
    assert_eq!(
        answers[0]["error"],
        json!({"code": -32004, "message": "unauthenticated",
               "data": {"kind": "unauthenticated", "reason": "no such token"}})
    );
}

#[test]
fn hale_mcp_refuses_what_it_cannot_drive() {
    for args in [
        &["mcp", "--bearer", "t"][..],
        &["mcp", "--app", "grpc://127.0.0.1:1"],
        &["mcp", "--app", "/tmp/bare.sock"],
        &["mcp", "--app", "mcp://nohost"],
        &["mcp", "--app", "unix:/x", "--what"],
    ] {
        let out = Command::new(HALE).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(5), "{args:?}");
    }
}

/// One SDK's stdio client driving `hale mcp --app ws://…` over a hub that
/// carries Public (`hale demo --hub-desk`, § Rpcs on a hub), as dave, the
/// hub's bearer: the recorded HTTP calls dave may make are answered with
/// the same bodies, since every transport encodes one outcome the same
/// way, and the tools are the ones Public's projection lists for a caller
/// holding no role of Public's.
fn sdk_over_a_hub(sdk: Sdk) {
    let Some(dir) = witness() else { return };
    if sdk.command().is_none() {
        return;
    }
    let d = demo(
        &format!("bridge-hub-{sdk:?}"),
        &["--hub", "127.0.0.1:0", "--hub-desk"],
    );
    let public: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("Public.mcp.json")).unwrap())
            .unwrap();
    let cases: Vec<Case> = [
        "result",
        "refusal_malformed",
        "refusal_digest_mismatch",
        "server_error",
        "refusal_unauthorized",
    ]
    .iter()
    .map(|n| http_case(&dir, n))
    .chain([unknown_tool("unknown_member: Orders::nope")])
    .collect();
    let endpoint = format!("ws://{}", d.hub);
    let command = [HALE, "mcp", "--app", &endpoint, "--bearer", "t-dave"];
    let plan = json!({"transport": "stdio", "command": command, "calls": plan_calls(&cases)});
    let who = format!("{sdk:?} bridge ws t-dave");
    check_bridged(
        sdk,
        &plan,
        &who,
        PUBLIC_APP,
        &public,
        &["Orders__place"],
        &cases,
    );
}

#[test]
fn the_python_sdk_1x_stdio_client_drives_the_bridge_over_a_hub() {
    sdk_over_a_hub(Sdk::Python1);
}

#[test]
fn the_typescript_sdk_stdio_client_drives_the_bridge_over_a_hub() {
    sdk_over_a_hub(Sdk::TypeScript);
}

/// `hale mcp --app ENDPOINT [--bearer T]` fed `lines` on stdin; its answers.
fn bridge_as(endpoint: &str, bearer: Option<&str>, lines: &[Value]) -> Vec<Value> {
    let mut cmd = Command::new(HALE);
    cmd.args(["mcp", "--app", endpoint]);
    if let Some(t) = bearer {
        cmd.args(["--bearer", t]);
    }
    let mut child = cmd
        .env_remove("HALE_API_BEARER")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_bridge_over_a_hub_names_its_caller_at_the_upgrade_and_needs_a_surface_there() {
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let place = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "Orders__place", "arguments": {"symbol": "ACME", "qty": 10, "limit": 12500}}});
    // No credential at the upgrade: the hub's sources name nobody, and
    // the description and the call are refused unauthenticated (-32004).
    let d = demo("bridge-hub-nobody", &["--hub", "127.0.0.1:0", "--hub-desk"]);
    let endpoint = format!("ws://{}", d.hub);
    let refusal = json!({"kind": "unauthenticated", "reason": "the sources name nobody"});
    for (answer, id) in bridge_as(&endpoint, None, &[list.clone(), place.clone()])
        .iter()
        .zip([1, 2])
    {
        assert_eq!(
            *answer,
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32004,
                   "message": "unauthenticated", "data": refusal}})
        );
    }
    // carol names herself at the upgrade; her order is the hub's caller's.
    let answers = bridge_as(&endpoint, Some("t-carol"), std::slice::from_ref(&place));
    assert_eq!(
        answers[0]["result"]["structuredContent"]["notional"],
        125000
    );
    drop(d);
    // A hub that carries no surface refuses the call frame malformed, and
    // the bridge answers that refusal.
    let d = demo("bridge-hub-bare", &["--hub", "127.0.0.1:0"]);
    let endpoint = format!("ws://{}", d.hub);
    let answers = bridge_as(&endpoint, Some("t-dave"), &[list, place]);
    let refusal = json!({"kind": "malformed",
        "reason": "no surface is served over this hub: a call frame is not taken"});
    for (answer, id) in answers.iter().zip([1, 2]) {
        assert_eq!(
            *answer,
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602,
                   "message": "malformed", "data": refusal}})
        );
    }
}
