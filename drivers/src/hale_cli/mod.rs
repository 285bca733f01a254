//! The `hale` command line, read by `clap` ([`cli`]) and run with one file
//! per command group:
//!
//! - `hale check [--api …] FILE` ([`check`]): the check, and the documents
//!   it prints from the rows (the inventory, a description, a projection);
//! - `hale api export --surface NAME (--out DIR | --check DIR) FILE`
//!   ([`export`]): a surface's bundle;
//! - `hale demo …` ([`demo`]): the witness program served, the main job;
//! - `hale serve PROGRAM.hl …` ([`serve`]): any program served, its
//!   handlers Tool processes or MCP servers ([`crate::program`]); `hale api
//!   tools --locus NAME FILE`, the Tools a locus's handler implements;
//! - `hale api describe|call …` and their short forms `hale describe|call`
//!   ([`crate::client`]): the operator's verbs;
//! - `hale watch WS-ENDPOINT TOPIC` ([`crate::client::watch`]): a stream
//!   of a hub, one JSON line per frame;
//! - `hale admin ENDPOINT` ([`crate::client::admin`]): a page on
//!   127.0.0.1 driving a served exposure, behind its launch token;
//! - `hale mcp --app ENDPOINT` ([`crate::client::mcp_bridge`]): the MCP
//!   bridge on stdio to a served exposure; `hale mcp` alone ([`mcp`]):
//!   the MCP server on stdio bridging a host to the toolchain;
//! - `hale completions SHELL`: a completion script;
//! - [`describer`]: the live describer a serving driver gives an exposure.
//!
//! Every command answers `--help` (exit 0, on stdout) and `hale --version`
//! prints the version. Exit codes: 0 success, 1 a check or a document that
//! failed (the reason on stderr), 5 usage (the flag named, then the
//! command's usage line); `demo` exits 2 when a listener cannot bind, and
//! the verbs exit by outcome (0 result, 1 handler error, 2 refusal, 3
//! server error, 4 transport failure, 5 usage).

pub mod check;
pub mod cli;
pub mod client;
pub mod demo;
pub mod describer;
pub mod export;
pub mod mcp;
pub mod serve;

use clap::CommandFactory;

use cli::{ApiCommand, Cli, Command, USAGE_EXIT};

/// Runs `hale` with its arguments (without the program name) and returns the
/// process exit status.
pub fn main(args: Vec<String>) -> i32 {
    let cli: Cli = match crate::cli_support::parse("hale", args, |_| USAGE_EXIT) {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    match cli.command {
        Command::Check(a) => check::run(&a),
        Command::Demo(a) => demo::run(&a),
        Command::Serve(a) => serve::run(&a),
        Command::Publish(a) => serve::publish(&a),
        Command::Describe(a) => crate::client::describe_main(&a, true),
        Command::Call(a) => crate::client::call_main(&a.words(), true),
        Command::Watch(a) => crate::client::watch::main(&a.endpoint, &a.topic, a.token),
        Command::Admin(a) => crate::client::admin::main(&a),
        Command::Mcp(a) => match a.app {
            Some(app) => crate::client::mcp_bridge::main(&app, a.bearer),
            None => mcp::main(),
        },
        Command::Api(ApiCommand::Export(a)) => export::run(&a),
        Command::Api(ApiCommand::Client(a)) => client::run(&a),
        Command::Api(ApiCommand::Describe(a)) => crate::client::describe_main(&a, false),
        Command::Api(ApiCommand::Call(a)) => crate::client::call_main(&a.words(), false),
        Command::Api(ApiCommand::Tools(a)) => serve::tools(&a),
        Command::Completions(a) => {
            crate::cli_support::print_completions(a.shell, Cli::command(), "hale")
        }
    }
}
