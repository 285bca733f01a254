//! A host's Tools: every declaration bound before anything runs, then
//! calls dispatched to the processes that answer them.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use limen_core::flow::tool::binding::RepositoryConfig;
use limen_core::flow::tool::{
    plan, BindingReport, Call, CallKey, HostConn, Implementation, Limits, McpConn, Outcome,
    Planned, Tool, ToolConn,
};
use limen_core::flow::{Identity, Type, Value};

use super::process::{Process, Spawn};

/// What a host binds with.
#[derive(Clone, Debug, Default)]
pub struct HostOptions {
    /// The host's overrides, keyed by identity: they win.
    pub overrides: BTreeMap<Identity, Implementation>,
    /// Each repository's `flow-tool.toml`, keyed by repository.
    pub configs: BTreeMap<String, RepositoryConfig>,
    /// The limits of every implementation connection.
    pub limits: Limits,
    /// How long binding waits for an implementation to describe itself.
    pub describe_timeout: Option<Duration>,
}

type Waiters = Arc<Mutex<BTreeMap<CallKey, mpsc::Sender<Outcome>>>>;

/// A run's Tools, bound.
pub struct Host {
    bound: BTreeMap<Identity, (Arc<Tool>, usize)>,
    processes: Vec<(Implementation, Process)>,
    waiters: Waiters,
    report: BindingReport,
}

/// The outcome of binding: the report, and the host when nothing refused
/// the run.
pub struct Binding {
    /// How each declaration stands.
    pub report: BindingReport,
    /// The host, when every declaration is bound.
    pub host: Option<Host>,
}

impl Host {
    /// Binds every declaration in `tools`: plans each one's implementation,
    /// starts each implementation once and reads its describe, and holds
    /// each declaration to it. A run that would be refused gets no host
    /// (its processes are ended).
    pub fn bind(tools: &[Arc<Tool>], options: &HostOptions) -> Binding {
        let planned = plan(tools, &options.overrides, &options.configs);
        let waiters: Waiters = Arc::default();
        // One process per distinct implementation.
        let mut processes: Vec<(Implementation, Process)> = Vec::new();
        let mut failed: BTreeMap<Implementation, String> = BTreeMap::new();
        for p in &planned {
            let Ok((implementation, _)) = &p.binding else {
                continue;
            };
            if processes.iter().any(|(i, _)| i == implementation)
                || failed.contains_key(implementation)
            {
                continue;
            }
            match start(implementation, &planned, options, &waiters) {
                Ok(process) => processes.push((implementation.clone(), process)),
                Err(why) => {
                    failed.insert(implementation.clone(), why);
                }
            }
        }
        let timeout = options
            .describe_timeout
            .unwrap_or(Duration::from_nanos(options.limits.describe_timeout));
        let mut described = BTreeMap::new();
        for (implementation, process) in &processes {
            described.insert(implementation.clone(), process.describe(timeout));
        }
        let report = BindingReport::check(&planned, |implementation| {
            if let Some(why) = failed.get(implementation) {
                return Err(why.clone());
            }
            match described.get(implementation) {
                Some(Ok(d)) => Ok(d),
                Some(Err(why)) => Err(why.clone()),
                None => Err("was not started".into()),
            }
        });
        if report.is_refused() {
            for (_, process) in &processes {
                process.shutdown();
            }
            return Binding { report, host: None };
        }
        let bound = planned
            .iter()
            .filter_map(|p| {
                let (implementation, _) = p.binding.as_ref().ok()?;
                let index = processes.iter().position(|(i, _)| i == implementation)?;
                Some((p.tool.identity().clone(), (p.tool.clone(), index)))
            })
            .collect();
        Binding {
            host: Some(Host {
                bound,
                processes,
                waiters,
                report: report.clone(),
            }),
            report,
        }
    }

    /// The report binding made.
    pub fn report(&self) -> &BindingReport {
        &self.report
    }

    /// Sends a call; its outcome arrives on the receiver.
    pub fn start_call(
        &self,
        key: CallKey,
        tool: &Identity,
        args: Vec<Value>,
        type_args: Vec<Type>,
    ) -> Result<mpsc::Receiver<Outcome>, String> {
        let Some((tool, index)) = self.bound.get(tool) else {
            return Err(format!("{tool} is not bound in this run"));
        };
        let (tx, rx) = mpsc::channel();
        lock(&self.waiters).insert(key.clone(), tx);
        let call = Call {
            key: key.clone(),
            tool: tool.clone(),
            args,
            type_args,
        };
        if let Err(e) = self.processes[*index].1.send(call) {
            lock(&self.waiters).remove(&key);
            return Err(e.to_string());
        }
        Ok(rx)
    }

    /// Calls a Tool and waits for its outcome. A call the host cannot send
    /// is NotRun.
    pub fn call(
        &self,
        key: CallKey,
        tool: &Identity,
        args: Vec<Value>,
        type_args: Vec<Type>,
    ) -> Outcome {
        match self.start_call(key, tool, args, type_args) {
            Err(why) => Outcome::NotRun(why),
            Ok(rx) => rx
                .recv()
                .unwrap_or_else(|_| Outcome::Unknown("the host ended with the call out".into())),
        }
    }

    /// Asks the implementation of `tool` to stop work on a call.
    pub fn cancel(&self, tool: &Identity, key: &CallKey) {
        if let Some((_, index)) = self.bound.get(tool) {
            self.processes[*index].1.cancel(key);
        }
    }

    /// The processes, with the implementation each runs.
    pub fn processes(&self) -> impl Iterator<Item = (&Implementation, &Process)> {
        self.processes.iter().map(|(i, p)| (i, p))
    }

    /// Ends every process.
    pub fn shutdown(&self) {
        for (_, process) in &self.processes {
            process.shutdown();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Builds the process of one implementation (not started yet).
fn start(
    implementation: &Implementation,
    planned: &[Planned],
    options: &HostOptions,
    waiters: &Waiters,
) -> Result<Process, String> {
    let (command, dir, conn): (&str, &Option<String>, Box<dyn ToolConn + Send>) =
        match implementation {
            Implementation::Command { command, dir } => (
                command,
                dir,
                Box::new(HostConn::new(options.limits.clone())),
            ),
            Implementation::Mcp { command, dir } => {
                let tools: Vec<Arc<Tool>> = planned
                    .iter()
                    .filter(|p| matches!(&p.binding, Ok((i, _)) if i == implementation))
                    .map(|p| p.tool.clone())
                    .collect();
                (
                    command,
                    dir,
                    Box::new(McpConn::new(tools, options.limits.clone())),
                )
            }
            Implementation::InProcess(_) => {
                return Err("is not registered with this host".into());
            }
        };
    let spawn = Spawn::from_command_line(command, dir.clone())
        .map_err(|why| format!("has a command line that cannot be read: {why}"))?;
    let waiters = waiters.clone();
    Ok(Process::new(
        spawn,
        conn,
        Box::new(move |key, outcome| {
            if let Some(tx) = lock(&waiters).remove(&key) {
                let _ = tx.send(outcome);
            }
        }),
    ))
}
