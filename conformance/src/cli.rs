//! The `limen-conformance` command line, read by `clap` as `hale`'s and
//! `flow`'s are (`limen_cli_support`): every command answers
//! `--help` and `limen-conformance --version` prints the version, both on
//! stdout with exit 0.
//!
//! ```text
//! limen-conformance replay  [--corpus DIR] [--scenarios DIR|none] [--feed whole|bytes]
//! limen-conformance check   --endpoint URL --transport unix|http|mcp|grpc|ws [--bearer T]
//!                           [--corpus DIR] [--scenarios DIR|none] [--control PATH]
//!                           [--exposure NAME] [--with NAME=URL]… [--as-peer UID]
//!                           [--settle MS] [--timeout S] [--max-wait S]
//! limen-conformance compare [--corpus DIR] [--reference DIR]
//! ```
//!
//! Each prints one line per record and a summary line, and exits 0 when
//! nothing failed, 1 when something did, 2 on a usage or corpus error. A
//! flag given twice takes its last value, as the hand-written reader this
//! replaced did.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use limen_cli_support as cli_support;

use crate::check::{self, Endpoint};
use crate::record::Corpus;
use crate::steps::Overlay;
use crate::transport;
use crate::world::Feed;
use crate::{compare, project_corpus, reference_corpus, replay};

/// The exit status of a usage or corpus error.
pub const EXIT_USAGE: i32 = 2;

const EXIT_STATUS: &str = "Exit status: 0 nothing failed, 1 something failed, 2 usage or corpus \
                           error.";

/// `limen-conformance`: limen's conformance corpus, replayed, checked
/// live, compared.
#[derive(Debug, Parser)]
#[command(
    name = "limen-conformance",
    version,
    about = "Replay a conformance corpus through limen's machines, check a live server against \
             it, or hold it to the reference records.",
    after_help = "--corpus defaults to the project's corpus (conformance/corpus); a corpus is \
                  DIR/program.hl (or the program DIR/corpus.json names) and \
                  DIR/wire/<transport>/*.json, so --corpus ../shared/hale-witness replays the \
                  reference fixtures. --scenarios names the corpus whose scenarios a record \
                  without one takes (default: the project's); none derives them from each \
                  record's outcome. Every command prints one line per record and a summary \
                  line, and has its own --help. Exit status: 0 nothing failed, 1 something \
                  failed, 2 usage or corpus error.",
    subcommand_required = true,
    args_override_self = true
)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// `limen-conformance`'s commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Feed each record's request through limen's machines with a virtual
    /// clock and compare what they emit with the recorded reply.
    Replay(ReplayArgs),
    /// Run the recorded exchanges against a live server and compare its
    /// replies with the recorded ones.
    Check(CheckArgs),
    /// Hold each record of a corpus to the reference record of the same
    /// name.
    Compare(CompareArgs),
}

/// How `replay` feeds a request's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FeedArg {
    /// In one piece.
    Whole,
    /// One byte at a time.
    Bytes,
}

/// `limen-conformance replay`.
#[derive(Debug, Args)]
#[command(after_help = EXIT_STATUS, args_override_self = true)]
pub struct ReplayArgs {
    /// The corpus (default: the project's, conformance/corpus).
    #[arg(long, value_name = "DIR")]
    pub corpus: Option<PathBuf>,
    /// The corpus whose scenarios a record without one takes (default: the
    /// project's); `none` derives them from each record's outcome.
    #[arg(long, value_name = "DIR|none")]
    pub scenarios: Option<String>,
    /// How each request's bytes are fed.
    #[arg(long, value_enum, value_name = "whole|bytes", default_value = "whole")]
    pub feed: FeedArg,
}

/// `limen-conformance check`.
#[derive(Debug, Args)]
#[command(
    after_help = "The endpoint is unix:<path>, http://host:port, mcp://host:port for an MCP \
                  listener, grpc://host:port for a gRPC one, or ws://host:port for a hub. Over \
                  MCP a corpus with no wire/mcp records sends its wire/http call records as \
                  tools/call, over gRPC as unary calls. --transport ws runs the wire/ws \
                  sequences of the hub and of the surface it carries; their places go to \
                  --with public=http://host:port, their revokes, expiries and stop to \
                  --control (revoke|grant <principal> <role>, expire <token> <ms>). Without \
                  --control, full, shutting_down and unavailable are reported not provoked. A \
                  scenario's silences (wait_ms) are waited for real. Exit status: 0 nothing \
                  failed, 1 something failed, 2 usage or corpus error, or a check that could \
                  not run.",
    args_override_self = true
)]
pub struct CheckArgs {
    /// The live server: unix:PATH, or http, mcp, grpc or ws://HOST:PORT.
    #[arg(long, value_name = "URL")]
    pub endpoint: String,
    /// The transport the endpoint speaks.
    #[arg(long, value_name = "unix|http|mcp|grpc|ws")]
    pub transport: String,
    /// The bearer token the calls carry.
    #[arg(long, value_name = "T")]
    pub bearer: Option<String>,
    /// The corpus (default: the project's, conformance/corpus).
    #[arg(long, value_name = "DIR")]
    pub corpus: Option<PathBuf>,
    /// The corpus whose scenarios a record without one takes (default: the
    /// project's); `none` derives them from each record's outcome.
    #[arg(long, value_name = "DIR|none")]
    pub scenarios: Option<String>,
    /// The server's control socket (gate|open|drain|resume INSTANCE, stop).
    #[arg(long, value_name = "PATH")]
    pub control: Option<PathBuf>,
    /// The exposure the endpoint serves, when its description does not say.
    #[arg(long, value_name = "NAME")]
    pub exposure: Option<String>,
    /// The endpoint of another exposure a record's scenario calls first.
    #[arg(long, value_name = "NAME=URL", value_parser = with_pair)]
    pub with: Vec<(String, String)>,
    /// The recorded Unix peer uid this process stands in for (default: its
    /// own uid; -1 a peer the kernel did not name).
    #[arg(long = "as-peer", value_name = "UID", allow_negative_numbers = true)]
    pub as_peer: Option<i64>,
    /// How long to let a server settle after a control command, in ms.
    #[arg(long, value_name = "MS")]
    pub settle: Option<u64>,
    /// How long to wait for one reply, in seconds.
    #[arg(long, value_name = "S")]
    pub timeout: Option<u64>,
    /// Report a record whose scenario is silent longer than this in all (in
    /// seconds) as not provoked.
    #[arg(long = "max-wait", value_name = "S")]
    pub max_wait: Option<u64>,
}

/// `limen-conformance compare`.
#[derive(Debug, Args)]
#[command(after_help = EXIT_STATUS, args_override_self = true)]
pub struct CompareArgs {
    /// The corpus (default: the project's, conformance/corpus).
    #[arg(long, value_name = "DIR")]
    pub corpus: Option<PathBuf>,
    /// The reference records (default: ../shared/hale-witness).
    #[arg(long, value_name = "DIR")]
    pub reference: Option<PathBuf>,
}

fn with_pair(v: &str) -> Result<(String, String), String> {
    v.split_once('=')
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .ok_or_else(|| format!("takes NAME=URL, not `{v}`"))
}

/// A usage error found after parsing, for the command at `path`: printed
/// with its usage line; exit 2.
fn usage(path: &str, message: &str) -> i32 {
    cli_support::usage_error(Cli::command(), &[path], message);
    EXIT_USAGE
}

fn open(dir: &std::path::Path) -> Result<Corpus, i32> {
    Corpus::open(dir).map_err(|e| {
        eprintln!("limen-conformance: {e}");
        EXIT_USAGE
    })
}

fn overlay(scenarios: &Option<String>) -> Result<Overlay, i32> {
    match scenarios.as_deref() {
        Some("none") => Ok(Overlay::none()),
        Some(dir) => open(std::path::Path::new(dir)).map(|c| Overlay::from_records(&c.records)),
        None => {
            let dir = project_corpus();
            if dir.is_dir() {
                open(&dir).map(|c| Overlay::from_records(&c.records))
            } else {
                Ok(Overlay::none())
            }
        }
    }
}

/// Runs the command line `args` (without the program name); the exit
/// status. What it reports is written to stdout, errors to stderr.
pub fn main(args: Vec<String>) -> i32 {
    let cli: Cli = match cli_support::parse("limen-conformance", args, |_| EXIT_USAGE) {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    let result = match cli.command {
        Command::Replay(a) => replay_main(a),
        Command::Check(a) => check_main(a),
        Command::Compare(a) => compare_main(a),
    };
    match result {
        Ok(code) | Err(code) => code,
    }
}

fn replay_main(a: ReplayArgs) -> Result<i32, i32> {
    let feed = match a.feed {
        FeedArg::Whole => Feed::Whole,
        FeedArg::Bytes => Feed::Bytes,
    };
    let corpus = open(&a.corpus.unwrap_or_else(project_corpus))?;
    let options = replay::Options {
        overlay: overlay(&a.scenarios)?,
        feed,
        describer: None,
    };
    let report = replay::run(&corpus, &options);
    print!("{}", report.render());
    Ok(report.status())
}

/// `check --transport ws`: the hub's records against a live hub, through
/// limen-drivers' client.
#[cfg(feature = "live")]
fn check_hub(
    a: CheckArgs,
    with: &std::collections::BTreeMap<String, Endpoint>,
    settle: Option<Duration>,
    timeout: Option<Duration>,
) -> Result<i32, i32> {
    let endpoint = a.endpoint;
    let authority = crate::hub_check::authority(&endpoint).ok_or_else(|| {
        usage(
            "check",
            &format!("--transport ws takes ws://host:port, not `{endpoint}`"),
        )
    })?;
    let corpus = open(&a.corpus.unwrap_or_else(project_corpus))?;
    let options = crate::hub_check::Options {
        authority,
        bearer: a.bearer,
        control: a.control,
        public: with.get("public").and_then(|e| e.host()).map(str::to_owned),
        timeout: timeout.unwrap_or(Duration::from_secs(10)),
        settle: settle.unwrap_or(Duration::from_millis(300)),
    };
    finish(crate::hub_check::run(&corpus, &options))
}

/// `check --transport ws` in a build without the `live` feature: a usage
/// error that says so.
#[cfg(not(feature = "live"))]
fn check_hub(
    _: CheckArgs,
    _: &std::collections::BTreeMap<String, Endpoint>,
    _: Option<Duration>,
    _: Option<Duration>,
) -> Result<i32, i32> {
    Err(usage(
        "check",
        "--transport ws needs the `live` feature, which this build leaves out",
    ))
}

fn check_main(a: CheckArgs) -> Result<i32, i32> {
    let mut with = std::collections::BTreeMap::new();
    for (name, url) in &a.with {
        let e = Endpoint::parse(url).map_err(|e| usage("check", &format!("--with {name}: {e}")))?;
        with.insert(name.clone(), e);
    }
    let settle = a.settle.map(Duration::from_millis);
    let timeout = a.timeout.map(Duration::from_secs);
    let max_wait = a.max_wait.map(Duration::from_secs);
    if a.transport == "ws" {
        // A hub's records are sequences, checked by their own runner.
        return check_hub(a, &with, settle, timeout);
    }
    let endpoint = a.endpoint;
    let endpoint = Endpoint::parse(&endpoint).map_err(|e| usage("check", &e))?;
    let names = format!("{}|ws", transport::names());
    let form = transport::by_name(&a.transport).ok_or_else(|| {
        usage(
            "check",
            &format!("--transport {names}, not `{}`", a.transport),
        )
    })?;
    if !form.speaks_to(&endpoint) {
        return Err(usage(
            "check",
            &format!("--transport {} does not speak to {endpoint}", form.name()),
        ));
    }
    let corpus = open(&a.corpus.unwrap_or_else(project_corpus))?;
    let mut options = check::Options::new(endpoint, form);
    options.bearer = a.bearer;
    options.control = a.control;
    options.with = with;
    options.as_peer = a.as_peer;
    options.exposure = a.exposure;
    options.overlay = overlay(&a.scenarios)?;
    options.max_wait = max_wait;
    if let Some(s) = settle {
        options.settle = s;
    }
    if let Some(t) = timeout {
        options.timeout = t;
    }
    finish(check::run(&corpus, &options))
}

/// A check's end, whichever transport ran it: the report printed and its
/// status the exit code, or the error that stopped the check, exit 2.
fn finish(run: Result<crate::report::Report, String>) -> Result<i32, i32> {
    match run {
        Ok(report) => {
            print!("{}", report.render());
            Ok(report.status())
        }
        Err(e) => {
            eprintln!("limen-conformance: {e}");
            Err(EXIT_USAGE)
        }
    }
}

fn compare_main(a: CompareArgs) -> Result<i32, i32> {
    let ours = open(&a.corpus.unwrap_or_else(project_corpus))?;
    let reference = open(&a.reference.unwrap_or_else(reference_corpus))?;
    let report = compare::run(&ours, &reference);
    print!("{}", report.render());
    Ok(report.status())
}
