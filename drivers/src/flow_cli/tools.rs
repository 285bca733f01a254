//! `flow tools describe`, `flow tools check` and `flow tools call`.
//!
//! ```text
//! flow tools describe -- CMD…
//! flow tools check --listing L [--config FILE]… [--config-for REPOSITORY=FILE]…
//!                  [--bind IDENTITY=CMD]… [--bind-mcp IDENTITY=CMD]…
//! flow tools call  --listing L --tool IDENTITY --args JSON [--config …] [--bind …]
//!                  [--run ID] [--call ID] [--type NAME=SCHEMA]… [--max-reply BYTES]
//!                  [--timeout DURATION]
//! ```
//!
//! `--config FILE` is a flow-tool.toml for every repository the listing
//! names, `--config-for REPOSITORY=FILE` for one; its commands run in the
//! file's folder. `--bind` is the host's override, by identity.
//!
//! `call` prints the outcome as JSON and exits 0 for Ok, 1 Failed, 2
//! NotRun, 3 Unknown, 4 BadReply, 5 when the run is refused (a binding, a
//! configuration error, args that do not decode). A command line that
//! cannot be read exits 64. A call with no reply within `--timeout`
//! (60 s unless given: the host machine's [`Limits::call_timeout`]) is
//! cancelled and Unknown (NotRun when the Tool never read it), and stderr
//! names the Tool, the method and the deadline.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use limen_core::flow::tool::binding::RepositoryConfig;
use limen_core::flow::tool::toolkit::decode_args;
use limen_core::flow::tool::{
    CallKey, HostConn, Implementation, Limits, Listing, Outcome, Tool, ToolConfig, CALL_DEADLINE,
};
use limen_core::flow::{type_from_schema, Identity, Type};

use super::cli::{Binding, CallArgs, CheckArgs, DescribeArgs};
use crate::tool::{Host, HostOptions, Process, Spawn};

/// A command line that cannot be read.
pub const EXIT_USAGE: i32 = 64;
/// `flow tools call`: the run is refused.
pub const EXIT_REFUSED: i32 = 5;

fn usage(path: &str, why: &str) -> i32 {
    super::usage(&["tools", path], why)
}

/// Runs `flow tools describe`.
pub fn describe(a: &DescribeArgs) -> i32 {
    let words = match a.command.first().map(String::as_str) {
        Some("--") => &a.command[1..],
        _ => &a.command[..],
    };
    let Some((program, rest)) = words.split_first() else {
        return usage("describe", "name the implementation's command after `--`");
    };
    let spawn = Spawn {
        program: program.clone(),
        args: rest.to_vec(),
        dir: None,
        env: Vec::new(),
    };
    let conn = HostConn::new(Limits::default());
    let process = Process::new(spawn, Box::new(conn), Box::new(|_, _| {}));
    let result = process.describe(Duration::from_secs(10));
    let stderr = process.stderr();
    process.shutdown();
    match result {
        Ok(described) => {
            crate::cli_support::print(&format!(
                "{}\n",
                serde_json::to_string_pretty(&described.result).unwrap_or_default()
            ));
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

impl Binding {
    fn listing(&self) -> Result<Listing, String> {
        let path = self.listing.display();
        let text = std::fs::read(&self.listing).map_err(|e| format!("{path}: {e}"))?;
        Listing::parse(&text).map_err(|e| format!("{path}: {e}"))
    }

    /// The configurations: every `--config` for all the listing's
    /// repositories, then every `--config-for`, which wins for its own.
    fn configs(&self) -> Vec<(Option<String>, String)> {
        let all = self.config.iter().map(|f| (None, f.clone()));
        let one = self
            .config_for
            .iter()
            .map(|(r, f)| (Some(r.clone()), f.clone()));
        all.chain(one).collect()
    }

    /// The overrides, `--bind` then `--bind-mcp` (whether it is MCP).
    fn binds(&self) -> Vec<(String, String, bool)> {
        let plain = self.bind.iter().map(|(i, c)| (i.clone(), c.clone(), false));
        let mcp = self
            .bind_mcp
            .iter()
            .map(|(i, c)| (i.clone(), c.clone(), true));
        plain.chain(mcp).collect()
    }

    /// The host's options: overrides from `--bind`, repositories'
    /// configurations from `--config`. A configuration error is `Err`.
    fn options(&self, listing: &Listing) -> Result<HostOptions, String> {
        let mut options = HostOptions::default();
        if let Some(max) = self.max_reply {
            options.limits.max_line = max;
        }
        for (identity, command, mcp) in &self.binds() {
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
        for (repository, file) in &self.configs() {
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

/// Runs `flow tools check`.
pub fn check(a: &CheckArgs) -> i32 {
    let common = &a.binding;
    let listing = match common.listing() {
        Ok(l) => l,
        Err(why) => return usage("check", &why),
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
        crate::cli_support::print(&format!("{entry}\n"));
    }
    if let Some(host) = binding.host {
        host.shutdown();
        0
    } else {
        1
    }
}

/// Runs `flow tools call`.
pub fn call(a: &CallArgs) -> i32 {
    let common = &a.binding;
    let (tool, json, run, call_id, types) = (&a.tool, &a.args, &a.run, &a.call, &a.types);
    let listing = match common.listing() {
        Ok(l) => l,
        Err(why) => return usage("call", &why),
    };
    let refused = |why: String| {
        eprintln!("flow tools call: the run is refused: {why}");
        EXIT_REFUSED
    };
    let identity = match Identity::parse(tool) {
        Ok(i) => i,
        Err(e) => return usage("call", &format!("--tool: {e}")),
    };
    let Some(declared) = listing.get(&identity).cloned() else {
        return refused(format!("the listing declares no {identity}"));
    };
    let type_args = match type_args(&declared, types) {
        Ok(t) => t,
        Err(why) => return refused(why),
    };
    let mut options = match common.options(&listing) {
        Ok(o) => o,
        Err(why) => return refused(why),
    };
    options.limits.call_timeout = u64::try_from(a.timeout.as_nanos()).unwrap_or(u64::MAX);
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
    crate::cli_support::print(&format!("{}\n", outcome.to_json()));
    if let Outcome::NotRun(why) | Outcome::Unknown(why) = &outcome {
        if why.contains(CALL_DEADLINE) {
            eprintln!("flow tools call: {why}");
        }
    }
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
