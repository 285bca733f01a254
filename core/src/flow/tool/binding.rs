//! Binding (§ Binding): which implementation answers each declaration,
//! decided before anything runs.
//!
//! [`plan`] picks each declaration's implementation: the host's override
//! (keyed by identity) wins, then the declaring repository's
//! `flow-tool.toml`; a declaration covered by neither is unbound. The host
//! then starts each planned implementation and reads its describe, and
//! [`BindingReport::check`] holds every declaration to it: the data major
//! must be ours (else a version refusal), the declaration must be served,
//! and with the declaration's own fingerprint. Any declaration not bound
//! refuses the run, with a line naming it and why. Nothing is bound lazily.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use super::config::{Entry, ToolConfig};
use super::listing::{Described, Tool};
use super::DataVersion;
use crate::flow::fingerprint::Fingerprint;
use crate::flow::identity::{Identity, Origin};

/// How to reach an implementation: what a binding names.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Implementation {
    /// A process speaking the Tool protocol: its command line, run in `dir`
    /// (the repository root for `flow-tool.toml`'s, the host's own working
    /// directory when `None`).
    Command {
        /// The command line (see [`split_command`](super::split_command)).
        command: String,
        /// The working directory.
        dir: Option<String>,
    },
    /// An MCP server, through the MCP adapter.
    Mcp {
        /// The command line.
        command: String,
        /// The working directory.
        dir: Option<String>,
    },
    /// An implementation the host registered in code, by the host's own
    /// handle for it.
    InProcess(String),
}

impl fmt::Display for Implementation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Implementation::Command { command, .. } => write!(f, "command `{command}`"),
            Implementation::Mcp { command, .. } => write!(f, "MCP server `{command}`"),
            Implementation::InProcess(name) => write!(f, "in-process implementation `{name}`"),
        }
    }
}

/// Where a binding came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The host's override.
    Override,
    /// A repository's `flow-tool.toml`.
    Config {
        /// The configuration file, as the host named it.
        file: String,
        /// The table's key: the declaring file's path in its repository.
        table: String,
    },
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Override => f.write_str("the host's override"),
            Source::Config { file, table } => write!(f, "{file} [tools.{table:?}]"),
        }
    }
}

/// A repository's `flow-tool.toml`, as the host found it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepositoryConfig {
    /// The file's name, for messages.
    pub file: String,
    /// The repository root, where its commands run.
    pub dir: Option<String>,
    /// Its tables.
    pub config: ToolConfig,
}

/// One declaration and the implementation planned for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Planned {
    /// The declaration.
    pub tool: Arc<Tool>,
    /// Its implementation and where that came from, or why it has none.
    pub binding: Result<(Implementation, Source), String>,
}

/// Plans the binding of every declaration in `tools`: the override for its
/// identity, else its repository's configuration (keyed by repository), else
/// unbound.
pub fn plan(
    tools: &[Arc<Tool>],
    overrides: &BTreeMap<Identity, Implementation>,
    configs: &BTreeMap<String, RepositoryConfig>,
) -> Vec<Planned> {
    tools
        .iter()
        .map(|tool| Planned {
            tool: tool.clone(),
            binding: plan_one(tool.identity(), overrides, configs),
        })
        .collect()
}

fn plan_one(
    identity: &Identity,
    overrides: &BTreeMap<Identity, Implementation>,
    configs: &BTreeMap<String, RepositoryConfig>,
) -> Result<(Implementation, Source), String> {
    if let Some(implementation) = overrides.get(identity) {
        return Ok((implementation.clone(), Source::Override));
    }
    let (repository, file) = match &identity.origin {
        Origin::Path { .. } => {
            return Err(
                "no host override, and a file outside any repository has no flow-tool.toml: \
                 the host must bind it"
                    .into(),
            )
        }
        Origin::Repository {
            repository, file, ..
        } => (repository, file),
    };
    let Some(repo) = configs.get(repository) else {
        return Err(format!(
            "no host override, and repository {repository} has no flow-tool.toml"
        ));
    };
    let Some(entry) = repo.config.tools.get(file) else {
        return Err(format!(
            "no host override, and {} has no [tools.{file:?}] table",
            repo.file
        ));
    };
    let (command, dir) = (entry.command().to_owned(), repo.dir.clone());
    let implementation = match entry {
        Entry::Command(_) => Implementation::Command { command, dir },
        Entry::Mcp(_) => Implementation::Mcp { command, dir },
    };
    Ok((
        implementation,
        Source::Config {
            file: repo.file.clone(),
            table: file.clone(),
        },
    ))
}

/// How one declaration stands once its implementation has described
/// itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// Bound: the implementation serves it with its fingerprint.
    Bound,
    /// No binding covers it; why.
    Unbound(String),
    /// The implementation could not be started or did not describe itself.
    Unavailable(String),
    /// The implementation speaks a data version of another major.
    Version(DataVersion),
    /// The implementation does not serve it.
    NotServed,
    /// The implementation serves it with another fingerprint.
    Mismatch {
        /// The fingerprint its describe lists.
        listed: Fingerprint,
    },
}

/// One declaration's line of a [`BindingReport`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checked {
    /// The declaration.
    pub tool: Arc<Tool>,
    /// Its implementation and where that came from, when it has one.
    pub binding: Option<(Implementation, Source)>,
    /// How it stands.
    pub status: Status,
}

impl fmt::Display for Checked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let identity = self.tool.identity();
        let ours = &self.tool.fingerprint;
        let (implementation, source) = match (&self.binding, &self.status) {
            (_, Status::Unbound(why)) => return write!(f, "{identity}: unbound: {why}"),
            (Some((i, s)), _) => (i, s),
            (None, _) => return write!(f, "{identity}: unbound"),
        };
        let bound = format!("{implementation} ({source})");
        match &self.status {
            Status::Bound => write!(f, "{identity}: bound to {bound}"),
            Status::Unbound(_) => Ok(()),
            Status::Unavailable(why) => {
                write!(f, "{identity}: unavailable: bound to {bound}, which {why}")
            }
            Status::Version(theirs) => write!(
                f,
                "{identity}: version refusal: bound to {bound}, which speaks data version \
                 {theirs}, whose major differs from ours ({})",
                DataVersion::ours()
            ),
            Status::NotServed => write!(
                f,
                "{identity}: not served: bound to {bound}, whose describe does not list it"
            ),
            Status::Mismatch { listed } => write!(
                f,
                "{identity}: mismatch: bound to {bound}, whose describe lists fingerprint \
                 {listed} where the declaration's is {ours}"
            ),
        }
    }
}

/// Every declaration of a run and how it stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BindingReport {
    /// One line per declaration, in the order planned.
    pub entries: Vec<Checked>,
}

impl BindingReport {
    /// Holds each planned declaration to what its implementation described:
    /// `described(implementation)` is its describe, or why there is none.
    pub fn check<'d>(
        planned: &[Planned],
        mut described: impl FnMut(&Implementation) -> Result<&'d Described, String>,
    ) -> BindingReport {
        let entries = planned
            .iter()
            .map(|p| {
                let (binding, status) = match &p.binding {
                    Err(why) => (None, Status::Unbound(why.clone())),
                    Ok((implementation, source)) => {
                        let status = match described(implementation) {
                            Err(why) => Status::Unavailable(why),
                            Ok(d) => status_of(&p.tool, d),
                        };
                        (Some((implementation.clone(), source.clone())), status)
                    }
                };
                Checked {
                    tool: p.tool.clone(),
                    binding,
                    status,
                }
            })
            .collect();
        BindingReport { entries }
    }

    /// Whether the run is refused: some declaration is not bound.
    pub fn is_refused(&self) -> bool {
        self.entries.iter().any(|e| e.status != Status::Bound)
    }

    /// The refusal's message, naming each declaration not bound and why;
    /// `None` when every declaration is bound.
    pub fn refusal(&self) -> Option<String> {
        let failed: Vec<&Checked> = self
            .entries
            .iter()
            .filter(|e| e.status != Status::Bound)
            .collect();
        if failed.is_empty() {
            return None;
        }
        let mut out = format!(
            "the run is refused: {} of {} declarations {} not bound",
            failed.len(),
            self.entries.len(),
            if failed.len() == 1 { "is" } else { "are" }
        );
        for e in failed {
            out.push_str(&format!("\n  {e}"));
        }
        Some(out)
    }
}

/// How `tool` stands against an implementation's describe.
pub fn status_of(tool: &Tool, described: &Described) -> Status {
    if described.data.major != DataVersion::ours().major {
        return Status::Version(described.data);
    }
    match described.tools.get(tool.identity()) {
        None => Status::NotServed,
        Some(listed) if *listed != tool.fingerprint => Status::Mismatch { listed: *listed },
        Some(_) => Status::Bound,
    }
}
