//! The MCP adapter against real MCP servers nobody here wrote the SDK of:
//! one built with the official Python SDK (mcp 1.30.0, FastMCP) and one
//! with the TypeScript SDK (@modelcontextprotocol/sdk 1.32.2), installed by
//! `scripts/install-peers` under `<repo>/.peers/`, bound through a
//! `flow-tool.toml`'s `mcp =`. Skipped with a message when the peers are
//! absent, unless `LIMEN_REQUIRE_PEERS=1`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use limen_core::flow::tool::binding::RepositoryConfig;
use limen_core::flow::tool::{CallKey, Outcome, Tool, ToolConfig};
use limen_core::flow::{Declaration, Field, Identity, Param, Type, TypeDecl, TypeEnv, Value};
use limen_drivers::tool::{Host, HostOptions};

const REPO: &str = "example.com/limen-fixtures";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The peer's command line, or `None` (after saying so) when it is absent.
fn peer(name: &str) -> Option<String> {
    let root = root();
    let fixtures = root.join("drivers/tests/fixtures/mcp");
    let (program, script, needs) = match name {
        "python" => (
            root.join(".peers/venv/bin/python"),
            fixtures.join("python_server.py"),
            root.join(".peers/venv/bin/python"),
        ),
        _ => (
            PathBuf::from("node"),
            fixtures.join("ts_server.mjs"),
            root.join(".peers/node/node_modules/@modelcontextprotocol/sdk/package.json"),
        ),
    };
    let node_ok = name == "python"
        || std::process::Command::new("node")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
    if !needs.exists() || !node_ok {
        let why = format!(
            "the {name} MCP SDK peer is absent ({} missing): run scripts/install-peers",
            needs.display()
        );
        if std::env::var("LIMEN_REQUIRE_PEERS").as_deref() == Ok("1") {
            panic!("{why}");
        }
        eprintln!("skipped: {why}");
        return None;
    }
    Some(format!("'{}' '{}'", program.display(), script.display()))
}

fn id(name: &str) -> Identity {
    Identity::in_repository(REPO, "0.3.0", "mcp.flow", name)
}

fn declarations() -> Vec<Arc<Tool>> {
    let mut env = TypeEnv::new();
    env.declare(TypeDecl::record(
        id("Sum"),
        vec![Field::new("sum", Type::Int)],
    ));
    env.declare(TypeDecl::record(
        id("DivError"),
        vec![Field::new("reason", Type::Text)],
    ));
    let ab = || vec![Param::new("a", Type::Int), Param::new("b", Type::Int)];
    let sum = || Type::named(id("Sum"));
    [
        Declaration::new(id("add"), ab(), sum(), Type::Text),
        Declaration::new(id("divide"), ab(), sum(), Type::named(id("DivError"))),
        Declaration::new(
            id("broken"),
            vec![Param::new("a", Type::Int)],
            sum(),
            Type::Text,
        ),
        Declaration::new(
            id("explode"),
            vec![Param::new("a", Type::Int)],
            sum(),
            Type::Text,
        ),
        Declaration::new(
            id("missing"),
            vec![Param::new("a", Type::Int)],
            sum(),
            Type::Text,
        ),
    ]
    .into_iter()
    .map(|d| Arc::new(Tool::new(d, env.clone()).unwrap()))
    .collect()
}

/// A repository whose flow-tool.toml binds `mcp.flow` to `command`.
fn options(command: &str, dir: &Path) -> HostOptions {
    std::fs::create_dir_all(dir).unwrap();
    let file = dir.join("flow-tool.toml");
    let text = format!("[tools.\"mcp.flow\"]\nmcp = {}\n", toml_string(command));
    std::fs::write(&file, &text).unwrap();
    let name = file.display().to_string();
    let config = ToolConfig::parse(&name, &std::fs::read_to_string(&file).unwrap()).unwrap();
    HostOptions {
        configs: BTreeMap::from([(
            REPO.to_owned(),
            RepositoryConfig {
                file: name,
                dir: Some(dir.display().to_string()),
                config,
            },
        )]),
        ..HostOptions::default()
    }
}

fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

fn ints(a: Value, b: i64) -> Vec<Value> {
    vec![a, Value::int(b)]
}

fn exercise(name: &str) {
    let Some(command) = peer(name) else { return };
    let dir = std::env::temp_dir().join(format!("limen-mcp-{name}-{}", std::process::id()));
    let options = options(&command, &dir);
    let all = declarations();

    // A declaration the server offers no tool of its name for is unbound.
    let binding = Host::bind(&all, &options);
    assert!(binding.host.is_none());
    assert_eq!(
        binding.report.refusal().unwrap(),
        format!(
            "the run is refused: 1 of 5 declarations is not bound\n  {}: not served: bound to MCP \
             server `{command}` ({} [tools.\"mcp.flow\"]), whose describe does not list it",
            id("missing"),
            dir.join("flow-tool.toml").display()
        )
    );

    let binding = Host::bind(&all[..4], &options);
    let host = binding
        .host
        .unwrap_or_else(|| panic!("{}", binding.report.refusal().unwrap_or_default()));
    let key = |c: &str| CallKey::new("run-m", c);
    let call = |c: &str, tool: &str, args: Vec<Value>| host.call(key(c), &id(tool), args, vec![]);

    // Ok, from structuredContent.
    let a = if name == "python" {
        // Python's ints are exact: so is the whole way through.
        Value::Int(limen_core::flow::Int(dashu_int::IBig::from(10u8).pow(30)))
    } else {
        Value::int(40)
    };
    let want = if name == "python" {
        format!(r#"{{"Ok":{{"sum":1{}2}}}}"#, "0".repeat(29))
    } else {
        r#"{"Ok":{"sum":42}}"#.to_owned()
    };
    assert_eq!(call("1", "add", ints(a, 2)).to_json(), want);
    // Ok, from the one text content block.
    assert_eq!(
        call("2", "divide", ints(Value::int(7), 2)).to_json(),
        r#"{"Ok":{"sum":3}}"#
    );
    // Failed: isError, decoded at the error type.
    assert_eq!(
        call("3", "divide", ints(Value::int(1), 0)).to_json(),
        r#"{"Failed":{"reason":"division by zero"}}"#
    );
    // BadReply: a result that does not decode at the success type.
    assert_eq!(
        call("4", "broken", vec![Value::int(1)]),
        Outcome::BadReply(
            "the Ok value does not decode at the success type: $: missing required field \"sum\""
                .into()
        )
    );
    // BadReply: an error the adapter cannot map (Python: an isError text
    // that is not JSON; TypeScript: a JSON-RPC error response).
    match call("5", "explode", vec![Value::int(1)]) {
        Outcome::BadReply(why) if name == "python" => assert!(
            why.starts_with("the Failed value does not decode at the error type: "),
            "{why}"
        ),
        Outcome::BadReply(why) => assert_eq!(
            why,
            "the MCP server answered tools/call with error -32603: no tool explode"
        ),
        other => panic!("{other:?}"),
    }

    // A server that ends is a process that ends: the next call starts it
    // again, and it is listed again before the call is sent.
    let (_, process) = host.processes().next().unwrap();
    let pid = process.pid().expect("the server runs");
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(
        call("6", "divide", ints(Value::int(9), 3)).to_json(),
        r#"{"Ok":{"sum":3}}"#
    );
    assert_eq!(process.starts(), 2);
    assert!(!process.stderr().is_empty(), "the server's stderr is kept");
    host.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_python_sdk_server_through_flow_tool_toml() {
    exercise("python");
}

#[test]
fn the_typescript_sdk_server_through_flow_tool_toml() {
    exercise("typescript");
}
