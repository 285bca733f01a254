//! A receiver instance whose handlers are a Flow Tool process
//! (`command = [...]` in `serve.toml`): each row of its locus is a Tool of
//! the process, held to its row when the server boots
//! ([`limen_core::hale::tools`]).
//!
//! A Tool process's receiver is driven by the connection loops
//! ([`ToolPipe`], `serve/piped.rs`): its calls written to the process's
//! pipe by the loop that hands them, its replies read by the loop that
//! polls the pipe, with no thread of its own. An MCP server's
//! ([`ToolReceiver`]) runs on a worker thread of its own, one call at a
//! time (§ Dispatch: at most one call per receiver is executing): it writes
//! the call to the process and reads its outcome on that thread
//! ([`Process::queued`], so no other thread reads the pipe). A structural
//! failure — the process died, never answered within the reply deadline,
//! answered what the host cannot decode or what is not the row's — is the
//! server error for its caller, and the process is replaced: the next call
//! starts a new one, the receiver's next generation, after a backoff that
//! doubles while the failures follow each other (`BACKOFF_*`), so a
//! handler that dies at start is not restarted in a hot loop.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use limen_core::flow::tool::{
    Call, CallKey, HostConn, Limits, Listing, McpConn, Outcome, Tool, ToolConn,
};
use limen_core::hale::runtime::{BatchCall, Completion, Receiver, ServedContext, Supervision};
use limen_core::hale::tools::{self, Answer, Held, RowTool};

use super::control::{wait_open, Gate};
use crate::serve::PipedHandler;
use crate::tool::{Process, Spawn};

/// The first wait before a replaced process is started again.
const BACKOFF_FIRST: Duration = Duration::from_millis(50);
/// The longest wait before a replaced process is started again.
const BACKOFF_MOST: Duration = Duration::from_secs(2);
/// How long a process may take to describe itself at boot.
pub const BOOT_DESCRIBE: Duration = Duration::from_secs(10);

/// Which protocol the process speaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Speaks {
    /// The Flow Tool protocol.
    Tool,
    /// MCP on stdio, through the MCP adapter.
    Mcp,
}

/// How a receiver's process is run.
#[derive(Clone, Debug)]
pub struct ToolHandler {
    /// The receiver instance (`orders`), for messages.
    pub instance: String,
    /// The command.
    pub spawn: Spawn,
    /// Its protocol.
    pub speaks: Speaks,
    /// A member function answered by a Tool of another name
    /// (`place` → `place_order`).
    pub names: BTreeMap<String, String>,
    /// The machine's limits (the reply deadline among them).
    pub limits: Limits,
    /// Whether the main locus declares an on_failure for the receiver's
    /// locus: a violation the Tool declares is then absorbed, as the
    /// program's on_failure would decide; without one it restarts the
    /// receiver.
    pub absorbs_violations: bool,
}

/// The receiver: the held rows and the process answering them.
pub struct ToolReceiver {
    handler: ToolHandler,
    held: BTreeMap<String, Held>,
    process: Process,
    /// The run id of every call's key.
    run_id: String,
    next_call: u64,
    gate: Gate,
    /// How many calls ended in a structural failure whose on_failure has
    /// not run yet: the on_failure this receiver's worker runs
    /// ([`ToolReceiver::on_failure`]) restarts for each.
    restart: Arc<AtomicUsize>,
    /// Failures in a row, for the backoff.
    failures: u32,
    not_before: Option<Instant>,
}

fn new_process(handler: &ToolHandler, rows: &[RowTool]) -> Process {
    let conn: Box<dyn limen_core::flow::tool::ToolConn + Send> = match handler.speaks {
        Speaks::Tool => Box::new(HostConn::new(handler.limits.clone())),
        // The MCP adapter is given the declarations it serves: an MCP
        // server describes JSON Schemas, not fingerprints.
        Speaks::Mcp => {
            let tools: Vec<Arc<Tool>> = rows
                .iter()
                .map(|r| renamed(&r.tool, tool_name(handler, &r.function)))
                .collect();
            Box::new(McpConn::new(tools, handler.limits.clone()))
        }
    };
    Process::queued(handler.spawn.clone(), conn)
}

/// The Tool name a member function is answered under.
fn tool_name<'a>(handler: &'a ToolHandler, function: &'a str) -> &'a str {
    handler.names.get(function).map_or(function, String::as_str)
}

/// `tool` under another name (an MCP server's tool is named as the server
/// names it).
fn renamed(tool: &Arc<Tool>, name: &str) -> Arc<Tool> {
    if tool.identity().name == name {
        return tool.clone();
    }
    let mut declaration = tool.declaration.clone();
    declaration.identity.name = name.to_owned();
    Arc::new(Tool::new(declaration, tool.env.clone()).unwrap_or_else(|_| (**tool).clone()))
}

impl ToolReceiver {
    /// Starts the process, reads its describe and holds each of `rows` to
    /// the Tool of its name: one diagnostic per row that has no Tool or
    /// whose Tool is not its shape.
    pub fn boot(
        handler: ToolHandler,
        rows: &[RowTool],
        gate: Gate,
    ) -> Result<ToolReceiver, Vec<String>> {
        let process = new_process(&handler, rows);
        let instance = &handler.instance;
        let described = process.describe(BOOT_DESCRIBE).map_err(|e| {
            let stderr = String::from_utf8_lossy(&process.stderr()).trim().to_owned();
            let tail = if stderr.is_empty() {
                String::new()
            } else {
                format!(" (its standard error: {})", last_line(&stderr))
            };
            vec![format!(
                "the handler of `{instance}` ({}): {e}{tail}",
                handler.spawn.program
            )]
        })?;
        let listing = serde_json::json!({
            "data": described.result.get("data").cloned().unwrap_or_default(),
            "tools": described.result.get("tools").cloned().unwrap_or_default(),
        });
        let tools = Listing::from_json(&listing)
            .map_err(|e| {
                vec![format!(
                    "the handler of `{instance}` describes itself so: {e}"
                )]
            })?
            .tools;
        let mut held = BTreeMap::new();
        let mut errors = Vec::new();
        for row in rows {
            let name = tool_name(&handler, &row.function);
            let Some(tool) = tools.iter().find(|t| t.identity().name == name) else {
                let served: Vec<String> = tools.iter().map(|t| t.identity().name.clone()).collect();
                errors.push(format!(
                    "the handler of `{instance}` implements no Tool `{name}` for `{}` (it serves: {})",
                    row.member,
                    if served.is_empty() { "nothing".to_owned() } else { served.join(", ") }
                ));
                continue;
            };
            match tools::hold(row, tool) {
                Ok(h) => {
                    held.insert(row.member.clone(), h);
                }
                Err(e) => errors.push(format!("the handler of `{instance}`: {e}")),
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(ToolReceiver {
            run_id: format!("hale-serve-{}", handler.instance),
            handler,
            held,
            process,
            next_call: 0,
            gate,
            restart: Arc::new(AtomicUsize::new(0)),
            failures: 0,
            not_before: None,
        })
    }

    /// The on_failure its worker runs after a call that ended in the
    /// server error: a structural failure restarts the receiver (a new
    /// generation, as the process is); a violation the Tool declared is
    /// absorbed when the program has an on_failure for the locus.
    pub fn on_failure(&self) -> crate::serve::worker::OnFailure {
        let restart = self.restart.clone();
        let absorbs = self.handler.absorbs_violations;
        let instance = self.handler.instance.clone();
        Arc::new(move |_| {
            let structural = restart
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
                .is_ok();
            if structural || !absorbs {
                eprintln!("hale serve: the receiver `{instance}` restarts as a new generation");
                Supervision::Restart
            } else {
                Supervision::Absorb
            }
        })
    }

    /// The process's id, when one runs.
    pub fn pid(&self) -> Option<u32> {
        self.process.pid()
    }

    /// Replaces the process after a structural failure.
    fn replace(&mut self, why: &str) {
        let stderr = self.process.stderr();
        let stderr = String::from_utf8_lossy(&stderr);
        let tail = last_line(stderr.trim());
        eprintln!(
            "hale serve: the handler of `{}` failed: {why}{}",
            self.handler.instance,
            if tail.is_empty() {
                String::new()
            } else {
                format!(" (its standard error: {tail})")
            }
        );
        self.process.shutdown();
        let rows: Vec<RowTool> = self.held.values().map(|h| h.row.clone()).collect();
        self.process = new_process(&self.handler, &rows);
        self.failures = self.failures.saturating_add(1);
        let wait = BACKOFF_FIRST
            .saturating_mul(1 << self.failures.min(16).saturating_sub(1))
            .min(BACKOFF_MOST);
        self.not_before = Some(Instant::now() + wait);
    }
}

/// A Tool process's receiver as the connection loops drive it
/// ([`crate::serve::Server::add_piped_receiver`]): the rows held at boot,
/// each call made a Tool call of its row's Tool and each outcome held to
/// the row, as [`ToolReceiver`] does on a worker.
pub struct ToolPipe {
    instance: String,
    spawn: Spawn,
    limits: Limits,
    held: BTreeMap<String, Held>,
    run_id: String,
    next_call: u64,
    gate: Gate,
    /// Shared with the on_failure [`ToolReceiver::on_failure`] made.
    restart: Arc<AtomicUsize>,
}

impl ToolReceiver {
    /// The receiver as the loops drive it, with the machine its process is
    /// spoken to through; an MCP server's is given back (it stays on a
    /// worker).
    /// The process that described itself at boot is ended: the first call
    /// starts the next, which describes itself again before any call is
    /// written to it (the machine holds each call to what it describes).
    #[allow(clippy::result_large_err)]
    pub fn into_piped_or_self(self) -> Result<(Box<dyn ToolConn + Send>, ToolPipe), ToolReceiver> {
        if self.handler.speaks != Speaks::Tool {
            return Err(self);
        }
        let ToolReceiver {
            handler,
            held,
            process,
            run_id,
            next_call,
            gate,
            restart,
            ..
        } = self;
        process.shutdown();
        let conn = Box::new(HostConn::new(handler.limits.clone()));
        Ok((
            conn,
            ToolPipe {
                instance: handler.instance,
                spawn: handler.spawn,
                limits: handler.limits,
                held,
                run_id,
                next_call,
                gate,
                restart,
            },
        ))
    }
}

impl PipedHandler for ToolPipe {
    fn spawn(&self) -> &Spawn {
        &self.spawn
    }

    fn call(
        &mut self,
        member: &str,
        payload: &serde_json::Value,
        ctx: &ServedContext,
    ) -> Result<Call, String> {
        let held = self
            .held
            .get(member)
            .ok_or_else(|| format!("no Tool answers `{member}`"))?;
        let args = tools::arguments(held, payload, ctx, &self.limits.decode)?;
        self.next_call += 1;
        Ok(Call {
            key: CallKey::new(&self.run_id, &self.next_call.to_string()),
            tool: held.tool.clone(),
            args,
            type_args: Vec::new(),
        })
    }

    fn answer(&mut self, member: &str, outcome: Outcome) -> Result<Completion, String> {
        let held = self
            .held
            .get(member)
            .ok_or_else(|| format!("no Tool answers `{member}`"))?;
        match tools::answer(&held.row, outcome) {
            Answer::Completed(c) => Ok(c.into()),
            Answer::Violated => Ok(Completion::Violated),
            Answer::Failed(why) => Err(why),
        }
    }

    fn failed(&mut self) {
        // Counted before the report: the on_failure it runs reads it.
        self.restart.fetch_add(1, Ordering::AcqRel);
    }

    fn may_start(&self) -> bool {
        !*self.gate.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn replaced(&mut self, why: &str, stderr: &str) {
        eprintln!(
            "hale serve: the handler of `{}` failed: {why}{}",
            self.instance,
            if stderr.is_empty() {
                String::new()
            } else {
                format!(" (its standard error: {stderr})")
            }
        );
    }
}

fn last_line(text: &str) -> &str {
    text.lines().last().unwrap_or("")
}

impl Receiver for ToolReceiver {
    fn call(
        &mut self,
        member: &str,
        payload: &serde_json::Value,
        ctx: &ServedContext,
    ) -> Completion {
        let call = BatchCall {
            member,
            payload,
            ctx,
        };
        let mut answer = Completion::Violated;
        self.call_batch(&[call], &mut |_, c| answer = c);
        answer
    }

    fn batches(&self) -> bool {
        true
    }

    fn ready(&mut self) {
        wait_open(&self.gate);
        if let Some(at) = self.not_before.take() {
            std::thread::sleep(at.saturating_duration_since(Instant::now()));
        }
    }

    /// Writes every call of the batch to the process at once and hands
    /// each outcome on as it is read: one write, and as few reads as the
    /// process's replies take, where a call at a time costs a round trip
    /// each. The process answers them as it answers any calls; a process
    /// that runs one at a time (a toolkit with no worker threads) keeps a
    /// receiver's one call at a time.
    fn call_batch(&mut self, calls: &[BatchCall<'_>], done: &mut dyn FnMut(usize, Completion)) {
        // A worker asked already; a caller that did not is waited for here.
        self.ready();
        let mut failed: Vec<String> = Vec::new();
        let mut fail = |restart: &AtomicUsize, why: String| {
            // Counted before its completion is handed on: the on_failure
            // the worker runs for it reads the count.
            restart.fetch_add(1, Ordering::AcqRel);
            failed.push(why);
            Completion::Violated
        };
        let mut open: HashMap<CallKey, (usize, Held)> = HashMap::with_capacity(calls.len());
        let mut out: Vec<Call> = Vec::with_capacity(calls.len());
        for (i, c) in calls.iter().enumerate() {
            let Some(held) = self.held.get(c.member).cloned() else {
                done(
                    i,
                    fail(&self.restart, format!("no Tool answers `{}`", c.member)),
                );
                continue;
            };
            match tools::arguments(&held, c.payload, c.ctx, &self.handler.limits.decode) {
                Ok(args) => {
                    self.next_call += 1;
                    let key = CallKey::new(&self.run_id, &self.next_call.to_string());
                    out.push(Call {
                        key: key.clone(),
                        tool: held.tool.clone(),
                        args,
                        type_args: Vec::new(),
                    });
                    open.insert(key, (i, held));
                }
                Err(e) => done(i, fail(&self.restart, format!("`{}`: {e}", c.member))),
            }
        }
        // On a refusal the calls before it were taken and the rest were
        // not: each taken call's outcome still comes, and a call with none
        // when nothing is open was never taken (NotRun, with the reason).
        let refused = if out.is_empty() {
            None
        } else {
            self.process.send_all(out).err().map(|e| e.to_string())
        };
        let mut read = Vec::new();
        while !open.is_empty() {
            let n = self.process.wait(&mut read, Duration::from_secs(1));
            for (key, outcome) in read.drain(..) {
                // An outcome of an older call (a reply after its deadline)
                // is dropped by the machine; anything else is not ours.
                let Some((i, held)) = open.remove(&key) else {
                    continue;
                };
                let completion = match tools::answer(&held.row, outcome) {
                    Answer::Completed(c) => c.into(),
                    Answer::Violated => Completion::Violated,
                    Answer::Failed(why) => {
                        fail(&self.restart, format!("`{}`: {why}", held.row.member))
                    }
                };
                done(i, completion);
            }
            if n == 0 && self.process.open_calls() == 0 {
                break;
            }
        }
        for (_, (i, held)) in open.drain() {
            let why = refused
                .clone()
                .map_or("the call closed without an outcome".to_owned(), |r| {
                    format!("not sent: {r}")
                });
            done(
                i,
                fail(&self.restart, format!("`{}`: {why}", held.row.member)),
            );
        }
        if failed.is_empty() {
            self.failures = 0;
        } else {
            self.replace(&failed.join("; "));
        }
    }
}
