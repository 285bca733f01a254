//! The `limen-conformance` command line.
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
//! nothing failed, 1 when something did, 2 on a usage or corpus error.

use std::path::PathBuf;
use std::time::Duration;

use crate::check::{self, Endpoint};
use crate::record::Corpus;
use crate::scenario::Overlay;
use crate::transport;
use crate::world::Feed;
use crate::{compare, project_corpus, reference_corpus, replay};

/// The usage text, `{transports}` standing for the transports' names.
const USAGE: &str = "\
usage: limen-conformance <command> [options]

  replay  [--corpus DIR] [--scenarios DIR|none] [--feed whole|bytes]
      Feed each record's request through limen's machines with a virtual
      clock and compare what they emit with the recorded reply.
  check   --endpoint URL --transport {transports} [--bearer T] [--corpus DIR]
          [--scenarios DIR|none] [--control PATH] [--exposure NAME]
          [--with NAME=URL]... [--as-peer UID] [--settle MS] [--timeout S]
          [--max-wait S]
      Run the recorded exchanges against a live server (unix:<path>,
      http://host:port, mcp://host:port for an MCP listener, or
      grpc://host:port for a gRPC one) and compare its replies with the
      recorded ones. Over MCP a corpus with no wire/mcp records sends its
      wire/http call records as tools/call, over gRPC as unary calls.
      --transport ws takes a hub's ws://host:port and runs the wire/ws
      sequences of the hub and of the surface it carries; their places go
      to --with public=http://host:port, their revokes, expiries and stop
      to --control (revoke|grant <principal> <role>, expire <token> <ms>).
      --control names the server's control socket (gate|open|drain|resume
      <instance>, stop), without which full, shutting_down and unavailable
      are reported not provoked; --exposure names the exposure the endpoint
      serves when its description does not; --with names the endpoint of another
      exposure a record's scenario calls first; --as-peer the recorded Unix
      peer uid this process stands in for (default: its own uid). A
      scenario's silences (wait_ms) are waited for real; --max-wait reports
      a record silent longer in all as not provoked.
  compare [--corpus DIR] [--reference DIR]
      Hold each record of a corpus to the reference record of the same name.

--corpus defaults to the project's corpus (conformance/corpus); a corpus is
DIR/program.hl (or the program DIR/corpus.json names) and DIR/wire/<transport>/*.json,
so --corpus ../shared/hale-witness replays the reference fixtures.
--scenarios names the corpus whose scenarios a record without one takes
(default: the project's); none derives them from each record's outcome.
Exit status: 0 nothing failed, 1 something failed, 2 usage or corpus error.";

/// The usage text.
pub fn usage_text() -> String {
    USAGE.replace("{transports}", &format!("{}|ws", transport::names()))
}

fn usage(message: &str) -> i32 {
    eprintln!("limen-conformance: {message}\n\n{}", usage_text());
    2
}

struct Args {
    list: Vec<String>,
    i: usize,
}

impl Args {
    fn next(&mut self) -> Option<String> {
        let a = self.list.get(self.i).cloned();
        self.i += 1;
        a
    }
    fn value(&mut self, flag: &str) -> Result<String, String> {
        self.next().ok_or_else(|| format!("{flag} needs a value"))
    }
}

fn open(dir: &std::path::Path) -> Result<Corpus, i32> {
    Corpus::open(dir).map_err(|e| {
        eprintln!("limen-conformance: {e}");
        2
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
    let mut args = Args { list: args, i: 0 };
    let command = args.next();
    let result = match command.as_deref() {
        Some("replay") => replay_main(&mut args),
        Some("check") => check_main(&mut args),
        Some("compare") => compare_main(&mut args),
        Some("--help" | "-h" | "help") => {
            println!("{}", usage_text());
            return 0;
        }
        Some(other) => return usage(&format!("unknown command `{other}`")),
        None => return usage("name a command"),
    };
    match result {
        Ok(code) | Err(code) => code,
    }
}

fn replay_main(args: &mut Args) -> Result<i32, i32> {
    let (mut corpus, mut scenarios, mut feed) = (None, None, Feed::Whole);
    while let Some(a) = args.next() {
        let v = |args: &mut Args| args.value(&a).map_err(|e| usage(&e));
        match a.as_str() {
            "--corpus" => corpus = Some(PathBuf::from(v(args)?)),
            "--scenarios" => scenarios = Some(v(args)?),
            "--feed" => {
                feed = match v(args)?.as_str() {
                    "whole" => Feed::Whole,
                    "bytes" => Feed::Bytes,
                    other => return Err(usage(&format!("--feed whole|bytes, not `{other}`"))),
                }
            }
            other => return Err(usage(&format!("replay: unexpected `{other}`"))),
        }
    }
    let corpus = open(&corpus.unwrap_or_else(project_corpus))?;
    let options = replay::Options {
        overlay: overlay(&scenarios)?,
        feed,
        describer: None,
    };
    let report = replay::run(&corpus, &options);
    print!("{}", report.render());
    Ok(report.status())
}

fn check_main(args: &mut Args) -> Result<i32, i32> {
    let (mut endpoint, mut transport, mut bearer, mut corpus, mut scenarios, mut control) =
        (None, None, None, None, None, None);
    let mut with = std::collections::BTreeMap::new();
    let (mut settle, mut timeout, mut as_peer, mut exposure) = (None, None, None, None);
    let mut max_wait = None;
    while let Some(a) = args.next() {
        let v = |args: &mut Args| args.value(&a).map_err(|e| usage(&e));
        match a.as_str() {
            "--endpoint" => endpoint = Some(v(args)?),
            "--transport" => transport = Some(v(args)?),
            "--bearer" => bearer = Some(v(args)?),
            "--corpus" => corpus = Some(PathBuf::from(v(args)?)),
            "--scenarios" => scenarios = Some(v(args)?),
            "--control" => control = Some(PathBuf::from(v(args)?)),
            "--exposure" => exposure = Some(v(args)?),
            "--as-peer" => {
                let uid = v(args)?;
                as_peer = Some(
                    uid.parse::<i64>()
                        .map_err(|_| usage(&format!("--as-peer UID, not `{uid}`")))?,
                );
            }
            "--with" => {
                let pair = v(args)?;
                let Some((name, url)) = pair.split_once('=') else {
                    return Err(usage(&format!("--with NAME=URL, not `{pair}`")));
                };
                let e = Endpoint::parse(url).map_err(|e| usage(&e))?;
                with.insert(name.to_owned(), e);
            }
            "--settle" => {
                let ms = v(args)?;
                settle = Some(Duration::from_millis(
                    ms.parse()
                        .map_err(|_| usage(&format!("--settle MS, not `{ms}`")))?,
                ));
            }
            "--timeout" => {
                let s = v(args)?;
                timeout = Some(Duration::from_secs(
                    s.parse()
                        .map_err(|_| usage(&format!("--timeout S, not `{s}`")))?,
                ));
            }
            "--max-wait" => {
                let s = v(args)?;
                max_wait = Some(Duration::from_secs(
                    s.parse()
                        .map_err(|_| usage(&format!("--max-wait S, not `{s}`")))?,
                ));
            }
            other => return Err(usage(&format!("check: unexpected `{other}`"))),
        }
    }
    let endpoint = endpoint.ok_or_else(|| usage("check needs --endpoint URL"))?;
    if transport.as_deref() == Some("ws") {
        // A hub's records are sequences, checked by their own runner.
        let authority = crate::hub_check::authority(&endpoint).ok_or_else(|| {
            usage(&format!(
                "--transport ws takes ws://host:port, not `{endpoint}`"
            ))
        })?;
        let corpus = open(&corpus.unwrap_or_else(project_corpus))?;
        let options = crate::hub_check::Options {
            authority,
            bearer,
            control,
            public: with.get("public").and_then(|e| e.host()).map(str::to_owned),
            timeout: timeout.unwrap_or(Duration::from_secs(10)),
            settle: settle.unwrap_or(Duration::from_millis(300)),
        };
        return finish(crate::hub_check::run(&corpus, &options));
    }
    let endpoint = Endpoint::parse(&endpoint).map_err(|e| usage(&e))?;
    let names = format!("{}|ws", transport::names());
    let form = match transport.as_deref() {
        Some(name) => transport::by_name(name)
            .ok_or_else(|| usage(&format!("--transport {names}, not `{name}`")))?,
        None => return Err(usage(&format!("check needs --transport {names}"))),
    };
    if !form.speaks_to(&endpoint) {
        return Err(usage(&format!(
            "--transport {} does not speak to {endpoint}",
            form.name()
        )));
    }
    let corpus = open(&corpus.unwrap_or_else(project_corpus))?;
    let mut options = check::Options::new(endpoint, form);
    options.bearer = bearer;
    options.control = control;
    options.with = with;
    options.as_peer = as_peer;
    options.exposure = exposure;
    options.overlay = overlay(&scenarios)?;
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
            Err(2)
        }
    }
}

fn compare_main(args: &mut Args) -> Result<i32, i32> {
    let (mut corpus, mut reference) = (None, None);
    while let Some(a) = args.next() {
        let v = |args: &mut Args| args.value(&a).map_err(|e| usage(&e));
        match a.as_str() {
            "--corpus" => corpus = Some(PathBuf::from(v(args)?)),
            "--reference" => reference = Some(PathBuf::from(v(args)?)),
            other => return Err(usage(&format!("compare: unexpected `{other}`"))),
        }
    }
    let ours = open(&corpus.unwrap_or_else(project_corpus))?;
    let reference = open(&reference.unwrap_or_else(reference_corpus))?;
    let report = compare::run(&ours, &reference);
    print!("{}", report.render());
    Ok(report.status())
}
