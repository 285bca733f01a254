//! The `hale` command line, a dispatcher with one file per command group:
//!
//! - `hale check [--api …] FILE` ([`check`]): the check, and the documents
//!   it prints from the rows (the inventory, a description, a projection);
//! - `hale api export --surface NAME (--out DIR | --check DIR) FILE`
//!   ([`export`]): a surface's bundle;
//! - `hale demo …` ([`demo`]): the witness program served, the main job;
//! - `hale api describe|call …` and their short forms `hale describe|call`
//!   ([`crate::client`]): the operator's verbs;
//! - `hale mcp --app ENDPOINT` ([`crate::client::mcp_bridge`]): the MCP
//!   bridge on stdio to a served exposure;
//! - [`describer`]: the live describer a serving driver gives an exposure.
//!
//! Exit codes: 0 success, 1 a check or a document that failed (the reason
//! on stderr), 5 usage; `demo` exits 2 when a listener cannot bind, and the
//! verbs exit by outcome (0 result, 1 handler error, 2 refusal, 3 server
//! error, 4 transport failure, 5 usage).

pub mod args;
pub mod check;
pub mod demo;
pub mod describer;
pub mod export;

/// The exit status of a usage error.
pub const USAGE_EXIT: i32 = 5;

/// The version `hale` writes in a bundle's `DIGEST`.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "+limen");

/// Runs `hale` with its arguments (without the program name) and returns the
/// process exit status.
pub fn main(args: Vec<String>) -> i32 {
    match args.first().map(String::as_str) {
        Some("--help") | Some("-h") => {
            println!("{USAGE}");
            0
        }
        Some("check") => check::run(&args[1..]),
        Some("demo") => demo::run(&args[1..]),
        Some("describe") => crate::client::describe_main(&args[1..], true),
        Some("call") => crate::client::call_main(&args[1..], true),
        Some("mcp") => crate::client::mcp_bridge::main(&args[1..]),
        Some("api") => match args.get(1).map(String::as_str) {
            Some("export") => export::run(&args[2..]),
            Some("describe") => crate::client::describe_main(&args[2..], false),
            Some("call") => crate::client::call_main(&args[2..], false),
            Some(other) => usage(&format!("unknown command `api {other}`")),
            None => usage("`hale api` needs a verb"),
        },
        None => usage("no command given"),
        Some(other) => usage(&format!("unknown command `{other}`")),
    }
}

/// Prints a usage error and returns its exit status.
pub fn usage(message: &str) -> i32 {
    eprintln!("hale: {message}\n{USAGE}");
    USAGE_EXIT
}

/// The synopsis.
pub const USAGE: &str = "usage:
  hale demo [--public ADDR] [--partner ADDR] [--admin-socket PATH] [--mcp ADDR] [--operator uid:N] [--bound N] [--loops N] [--control PATH] [--record DIR]
  hale api describe <endpoint> [--json] [--bearer T]
  hale api call <endpoint> <member> [--json '<payload>' | --json - | --<field> <value> …] [--bearer T] [--id ID] [--digest D] [--raw]
  hale mcp --app <unix:PATH | http://host:port | mcp://host:port> [--bearer T]
  hale describe|call …  (short forms: a bare path is unix:<path>, a bare payload is --json)
  hale check FILE
  hale check --api FILE
  hale check --api --exposure NAME --caller PRINCIPAL [--holds ROLE,…] FILE
  hale check --api --surface NAME (--openapi | --json-schema | --mcp | --proto) FILE
  hale api export --surface NAME (--out DIR | --check DIR) FILE";
