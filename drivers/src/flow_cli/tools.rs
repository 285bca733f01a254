//! `flow tools describe`, `flow tools check` and `flow tools call`.
//!
//! ```text
//! flow tools describe -- CMD…
//! flow tools check --listing L [--config FILE]… [--config-for REPOSITORY=FILE]…
//!                  [--bind IDENTITY=CMD]… [--bind-mcp IDENTITY=CMD]…
//! flow tools call  --listing L --tool IDENTITY --args JSON [--config …] [--bind …]
//!                  [--run ID] [--call ID] [--type NAME=SCHEMA]… [--max-reply BYTES]
//! ```
//!
//! `--config FILE` is a flow-tool.toml for every repository the listing
//! names, `--config-for REPOSITORY=FILE` for one; its commands run in the
//! file's folder. `--bind` is the host's override, by identity.
//!
//! `call` prints the outcome as JSON and exits 0 for Ok, 1 Failed, 2
//! NotRun, 3 Unknown, 4 BadReply, 5 when the run is refused (a binding, a
//! configuration error, args that do not decode). A command line that
//! cannot be read exits 64.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use limen_core::flow::tool::binding::RepositoryConfig;
use limen_core::flow::tool::toolkit::decode_args;
use limen_core::flow::tool::{
    CallKey, HostConn, Implementation, Limits, Listing, Outcome, Tool, ToolConfig,
};
use limen_core::flow::{type_from_schema, Identity, Type};

use crate::tool::{Host, HostOptions, Process, Spawn};

/// A command line that cannot be read.
pub const EXIT_USAGE: i32 = 64;
/// `flow tools call`: the run is refused.
pub const EXIT_REFUSED: i32 = 5;

const USAGE: &str = "usage:
  flow tools describe -- CMD…
  flow tools check --listing L [--config FILE]… [--config-for REPOSITORY=FILE]… [--bind IDENTITY=CMD]… [--bind-mcp IDENTITY=CMD]…
  flow tools call --listing L --tool IDENTITY --args JSON [--config …] [--bind …] [--run ID] [--call ID] [--type NAME=SCHEMA]… [--max-reply BYTES]";

/// Runs `flow tools …` (the arguments after `tools`).
pub fn main(args: &[String]) -> i32 {
    match args.first().map(String::as_str) {
        Some("describe") => describe(&args[1..]),
        Some("check") => check(&args[1..]),
        Some("call") => call(&args[1..]),
        Some("--help" | "-h") => {
            println!("{USAGE}");
            0
        }
        _ => usage("flow tools: name a command: describe, check or call"),
    }
}

fn usage(why: &str) -> i32 {
    eprintln!("{why}\n{USAGE}");
    EXIT_USAGE
}

fn describe(args: &[String]) -> i32 {
    let words = match args.first().map(String::as_str) {
        Some("--") => &args[1..],
        _ => args,
    };
    let Some((program, rest)) = words.split_first() else {
        return usage("flow tools describe: name the implementation's command after `--`");
    };
    let spawn = Spawn {
        program: program.clone(),
        args: rest.to_vec(),
        dir: None,
    };
    let conn = HostConn::new(Limits::default());
    let process = Process::new(spawn, Box::new(conn), Box::new(|_, _| {}));
    let result = process.describe(Duration::from_secs(10));
    let stderr = process.stderr();
    process.shutdown();
    match result {
        Ok(described) => {
            println!(
                "{}",
                serde_json::to_string_pretty(&described.result).unwrap_or_default()
            );
            0
        }
        Err(why) => {
            eprintln!("flow tools describe: the implementation {why}");
            relay(&stderr);
            1
        }
    }
}

fn relay(stderr: &[u8]) {
    if !stderr.is_empty() {
        eprintln!(
            "its standard error:\n{}",
            String::from_utf8_lossy(stderr).trim_end()
        );
    }
}

/// What `check` and `call` share: the listing and how to bind it.
#[derive(Default)]
struct Common {
    listing: Option<String>,
    configs: Vec<(Option<String>, String)>,
    binds: Vec<(String, String, bool)>,
    max_reply: Option<usize>,
}

impl Common {
    /// Takes the option at `args[*i]` if it is one of the common ones.
    fn take(&mut self, args: &[String], i: &mut usize) -> Result<bool, String> {
        let flag = args[*i].as_str();
        let value = |i: &mut usize| {
            *i += 1;
            args.get(*i)
                .cloned()
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag {
            "--listing" => self.listing = Some(value(i)?),
            "--config" => self.configs.push((None, value(i)?)),
            "--config-for" => {
                let v = value(i)?;
                let (repo, file) = v
                    .split_once('=')
                    .ok_or_else(|| format!("--config-for takes REPOSITORY=FILE, not {v:?}"))?;
                self.configs.push((Some(repo.to_owned()), file.to_owned()));
            }
            "--bind" | "--bind-mcp" => {
                let v = value(i)?;
                let (identity, command) = v
                    .split_once('=')
                    .ok_or_else(|| format!("{flag} takes IDENTITY=CMD, not {v:?}"))?;
                self.binds.push((
                    identity.to_owned(),
                    command.to_owned(),
                    flag == "--bind-mcp",
                ));
            }
            "--max-reply" => {
                let v = value(i)?;
                self.max_reply = Some(
                    v.parse()
                        .map_err(|_| format!("--max-reply takes a number of bytes, not {v:?}"))?,
                );
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn listing(&self) -> Result<Listing, String> {
        let path = self.listing.as_ref().ok_or("--listing names the listing")?;
        let text = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
        Listing::parse(&text).map_err(|e| format!("{path}: {e}"))
    }

    /// The host's options: overrides from `--bind`, repositories'
    /// configurations from `--config`. A configuration error is `Err`.
    fn options(&self, listing: &Listing) -> Result<HostOptions, String> {
        let mut options = HostOptions::default();
        if let Some(max) = self.max_reply {
            options.limits.max_line = max;
        }
        for (identity, command, mcp) in &self.binds {
            let identity = Identity::parse(identity).map_err(|e| format!("--bind: {e}"))?;
            let implementation = if *mcp {
                Implementation::Mcp {
                    command: command.clone(),
                    dir: None,
                }
            } else {
                Implementation::Command {
                    command: command.clone(),
                    dir: None,
                }
            };
            options.overrides.insert(identity, implementation);
        }
        let repositories: Vec<String> = listing
            .tools
            .iter()
            .filter_map(|t| match &t.identity().origin {
                limen_core::flow::Origin::Repository { repository, .. } => Some(repository.clone()),
                limen_core::flow::Origin::Path { .. } => None,
            })
            .collect();
        for (repository, file) in &self.configs {
            let text = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
            let config = ToolConfig::parse(file, &text).map_err(|e| e.to_string())?;
            let dir = Path::new(file)
                .parent()
                .map(|p| {
                    if p.as_os_str().is_empty() {
                        Path::new(".")
                    } else {
                        p
                    }
                })
                .map(|p| p.display().to_string());
            let for_repos: Vec<String> = match repository {
                Some(r) => vec![r.clone()],
                None => repositories.clone(),
            };
            for repo in for_repos {
                options.configs.insert(
                    repo,
                    RepositoryConfig {
                        file: file.clone(),
                        dir: dir.clone(),
                        config: config.clone(),
                    },
                );
            }
        }
        Ok(options)
    }
}

fn check(args: &[String]) -> i32 {
    let mut common = Common::default();
    let mut i = 0;
    while i < args.len() {
        match common.take(args, &mut i) {
            Ok(true) => i += 1,
            Ok(false) => return usage(&format!("flow tools check: unknown option {:?}", args[i])),
            Err(why) => return usage(&format!("flow tools check: {why}")),
        }
    }
    let listing = match common.listing() {
        Ok(l) => l,
        Err(why) => return usage(&format!("flow tools check: {why}")),
    };
    let options = match common.options(&listing) {
        Ok(o) => o,
        Err(why) => {
            eprintln!("flow tools check: the run is refused: {why}");
            return 1;
        }
    };
    let binding = Host::bind(&listing.tools, &options);
    for entry in &binding.report.entries {
        println!("{entry}");
    }
    if let Some(host) = binding.host {
        host.shutdown();
        0
    } else {
        1
    }
}

fn call(args: &[String]) -> i32 {
    let mut common = Common::default();
    let (mut tool, mut json, mut run, mut call_id) = (None, None, None, None);
    let mut types: Vec<(String, String)> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        match common.take(args, &mut i) {
            Ok(true) => {
                i += 1;
                continue;
            }
            Ok(false) => {}
            Err(why) => return usage(&format!("flow tools call: {why}")),
        }
        let flag = args[i].as_str();
        let Some(v) = args.get(i + 1).cloned() else {
            return usage(&format!("flow tools call: {flag} needs a value"));
        };
        match flag {
            "--tool" => tool = Some(v),
            "--args" => json = Some(v),
            "--run" => run = Some(v),
            "--call" => call_id = Some(v),
            "--type" => match v.split_once('=') {
                Some((n, s)) => types.push((n.to_owned(), s.to_owned())),
                None => return usage("flow tools call: --type takes NAME=SCHEMA"),
            },
            _ => return usage(&format!("flow tools call: unknown option {flag:?}")),
        }
        i += 2;
    }
    let (Some(tool), Some(json)) = (tool, json) else {
        return usage("flow tools call: --tool and --args are required");
    };
    let listing = match common.listing() {
        Ok(l) => l,
        Err(why) => return usage(&format!("flow tools call: {why}")),
    };
    let refused = |why: String| {
        eprintln!("flow tools call: the run is refused: {why}");
        EXIT_REFUSED
    };
    let identity = match Identity::parse(&tool) {
        Ok(i) => i,
        Err(e) => return usage(&format!("flow tools call: --tool: {e}")),
    };
    let Some(declared) = listing.get(&identity).cloned() else {
        return refused(format!("the listing declares no {identity}"));
    };
    let type_args = match type_args(&declared, &types) {
        Ok(t) => t,
        Err(why) => return refused(why),
    };
    let options = match common.options(&listing) {
        Ok(o) => o,
        Err(why) => return refused(why),
    };
    let binds: Vec<(String, Type)> = declared
        .declaration
        .generic
        .iter()
        .cloned()
        .zip(type_args.iter().cloned())
        .collect();
    let values = match decode_args(&declared, json.as_bytes(), &binds, &options.limits.decode) {
        Ok(v) => v,
        Err(why) => return refused(format!("the args do not decode: {why}")),
    };
    let binding = Host::bind(std::slice::from_ref(&declared), &options);
    let Some(host) = binding.host else {
        return refused(binding.report.refusal().unwrap_or_default());
    };
    let key = CallKey {
        run: run.as_deref().unwrap_or("flow-tools-call").into(),
        call: call_id.as_deref().unwrap_or("1").into(),
    };
    let outcome = host.call(key, &identity, values, type_args);
    println!("{}", outcome.to_json());
    if !matches!(outcome, Outcome::Ok(_)) {
        for (_, process) in host.processes() {
            relay(&process.stderr());
        }
    }
    host.shutdown();
    match outcome {
        Outcome::Ok(_) => 0,
        Outcome::Failed(_) => 1,
        Outcome::NotRun(_) => 2,
        Outcome::Unknown(_) => 3,
        Outcome::BadReply(_) => 4,
    }
}

/// The type each of the Tool's type parameters stands for: `--type
/// NAME=SCHEMA` (a schema as we write them), `json.Value` when not given.
fn type_args(tool: &Arc<Tool>, given: &[(String, String)]) -> Result<Vec<Type>, String> {
    let mut by_name: BTreeMap<&str, Type> = BTreeMap::new();
    for (name, schema) in given {
        if !tool.declaration.generic.contains(name) {
            return Err(format!("{} has no type parameter {name}", tool.identity()));
        }
        let schema: serde_json::Value =
            serde_json::from_str(schema).map_err(|e| format!("--type {name}: {e}"))?;
        let (ty, env) = type_from_schema(&schema).map_err(|e| format!("--type {name}: {e}"))?;
        if !env.is_empty() {
            return Err(format!(
                "--type {name}: a named type is not known to the listing's declaration"
            ));
        }
        by_name.insert(name, ty);
    }
    Ok(tool
        .declaration
        .generic
        .iter()
        .map(|g| by_name.remove(g.as_str()).unwrap_or(Type::Json))
        .collect())
}
