//! A host's Tools: every declaration bound before anything runs, then
//! calls dispatched to the processes that answer them, or to the
//! implementations registered in process ([`Registry`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use limen_core::flow::tool::binding::RepositoryConfig;
use limen_core::flow::tool::inprocess::{admit, call_fields, described};
use limen_core::flow::tool::{
    plan, BindingReport, Call, CallKey, Described, HostConn, Implementation, InProcessCall, Limits,
    McpConn, Outcome, Planned, Reply, SendError, Tool, ToolConn, CALL_DEADLINE,
};
use limen_core::flow::{Identity, Type, Value};

use super::process::{Process, Spawn};

/// An implementation registered in process: a function the host calls
/// with a call's fields as values instead of a process it writes them to
/// (the specification's "a function registered in process"). Bound like
/// any other, by [`Implementation::InProcess`] with the name it was
/// registered under, through the host's override.
pub trait InProcess: Send + Sync + 'static {
    /// The declarations it serves, as it was written against them: its
    /// describe. Binding holds each declaration bound to it to these
    /// fingerprints, as it holds a process's, so one that does not match
    /// refuses the run.
    fn tools(&self) -> Vec<Arc<Tool>>;
    /// Runs one call, on a thread of its own (calls overlap as a
    /// process's do). Ok and Failed values are decoded at the declared
    /// types as a process's reply would be (one that does not decode is
    /// BadReply); a panic is Unknown.
    fn call(&self, call: InProcessCall) -> Reply;
}

/// A closure and the declarations it serves, as an [`InProcess`].
pub struct InProcessFn<F> {
    tools: Vec<Arc<Tool>>,
    f: F,
}

impl<F> InProcessFn<F>
where
    F: Fn(InProcessCall) -> Reply + Send + Sync + 'static,
{
    /// `f` serving `tools`.
    pub fn new(tools: Vec<Arc<Tool>>, f: F) -> InProcessFn<F> {
        InProcessFn { tools, f }
    }
}

impl<F> InProcess for InProcessFn<F>
where
    F: Fn(InProcessCall) -> Reply + Send + Sync + 'static,
{
    fn tools(&self) -> Vec<Arc<Tool>> {
        self.tools.clone()
    }

    fn call(&self, call: InProcessCall) -> Reply {
        (self.f)(call)
    }
}

/// The in-process implementations a host can bind, by name (the name an
/// [`Implementation::InProcess`] gives).
#[derive(Clone, Default)]
pub struct Registry {
    by_name: BTreeMap<String, Arc<dyn InProcess>>,
}

impl Registry {
    /// Registers `implementation` as `name`, replacing one of that name.
    pub fn register(&mut self, name: &str, implementation: impl InProcess) -> &mut Registry {
        self.by_name
            .insert(name.to_owned(), Arc::new(implementation));
        self
    }

    /// Registers the closure `f`, serving `tools`, as `name`.
    pub fn register_fn(
        &mut self,
        name: &str,
        tools: Vec<Arc<Tool>>,
        f: impl Fn(InProcessCall) -> Reply + Send + Sync + 'static,
    ) -> &mut Registry {
        self.register(name, InProcessFn::new(tools, f))
    }

    /// The implementation registered as `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn InProcess>> {
        self.by_name.get(name)
    }

    /// The names registered, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.names()).finish()
    }
}

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
    /// The implementations registered in process, which an override's
    /// [`Implementation::InProcess`] names.
    pub in_process: Registry,
}

type Waiters = Arc<Mutex<BTreeMap<CallKey, mpsc::Sender<Outcome>>>>;

/// What answers one implementation's calls.
enum Backend {
    /// A process (the Tool protocol's, or an MCP server's).
    Process(Process),
    /// A function registered in process, and the keys of its calls out (a
    /// second call with one of them is refused, as a process's machine
    /// refuses it).
    InProcess {
        implementation: Arc<dyn InProcess>,
        open: Arc<Mutex<BTreeSet<CallKey>>>,
    },
}

impl Backend {
    fn process(&self) -> Option<&Process> {
        match self {
            Backend::Process(p) => Some(p),
            Backend::InProcess { .. } => None,
        }
    }
}

/// A run's Tools, bound.
pub struct Host {
    bound: BTreeMap<Identity, (Arc<Tool>, usize)>,
    backends: Vec<(Implementation, Backend)>,
    waiters: Waiters,
    limits: Limits,
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
    /// starts each implementation once and reads its describe (an
    /// in-process one's is what it declares), and holds each declaration
    /// to it. A run that would be refused gets no host (its processes are
    /// ended).
    pub fn bind(tools: &[Arc<Tool>], options: &HostOptions) -> Binding {
        let planned = plan(tools, &options.overrides, &options.configs);
        let waiters: Waiters = Arc::default();
        // One process (or registered function) per distinct implementation.
        let mut backends: Vec<(Implementation, Backend)> = Vec::new();
        let mut failed: BTreeMap<Implementation, String> = BTreeMap::new();
        for p in &planned {
            let Ok((implementation, _)) = &p.binding else {
                continue;
            };
            if backends.iter().any(|(i, _)| i == implementation)
                || failed.contains_key(implementation)
            {
                continue;
            }
            match start(implementation, &planned, options, &waiters) {
                Ok(backend) => backends.push((implementation.clone(), backend)),
                Err(why) => {
                    failed.insert(implementation.clone(), why);
                }
            }
        }
        let timeout = options
            .describe_timeout
            .unwrap_or(Duration::from_nanos(options.limits.describe_timeout));
        let mut descriptions: BTreeMap<Implementation, Result<Described, String>> = BTreeMap::new();
        for (implementation, backend) in &backends {
            let d = match backend {
                Backend::Process(process) => process.describe(timeout),
                Backend::InProcess { implementation, .. } => described(&implementation.tools()),
            };
            descriptions.insert(implementation.clone(), d);
        }
        let report = BindingReport::check(&planned, |implementation| {
            if let Some(why) = failed.get(implementation) {
                return Err(why.clone());
            }
            match descriptions.get(implementation) {
                Some(Ok(d)) => Ok(d),
                Some(Err(why)) => Err(why.clone()),
                None => Err("was not started".into()),
            }
        });
        if report.is_refused() {
            for process in backends.iter().filter_map(|(_, b)| b.process()) {
                process.shutdown();
            }
            return Binding { report, host: None };
        }
        let bound = planned
            .iter()
            .filter_map(|p| {
                let (implementation, _) = p.binding.as_ref().ok()?;
                let index = backends.iter().position(|(i, _)| i == implementation)?;
                Some((p.tool.identity().clone(), (p.tool.clone(), index)))
            })
            .collect();
        Binding {
            host: Some(Host {
                bound,
                backends,
                waiters,
                limits: options.limits.clone(),
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
        let call = Call {
            key: key.clone(),
            tool: tool.clone(),
            args,
            type_args,
        };
        let (tx, rx) = mpsc::channel();
        match &self.backends[*index].1 {
            Backend::Process(process) => {
                lock(&self.waiters).insert(key.clone(), tx);
                if let Err(e) = process.send(call) {
                    lock(&self.waiters).remove(&key);
                    return Err(e.to_string());
                }
            }
            Backend::InProcess {
                implementation,
                open,
            } => {
                let type_args = call.type_args.clone();
                let fields = call_fields(call).map_err(|e| e.to_string())?;
                if !lock(open).insert(key.clone()) {
                    return Err(SendError::Duplicate(key).to_string());
                }
                let run = InProcessRun {
                    implementation: implementation.clone(),
                    open: open.clone(),
                    tool: tool.clone(),
                    type_args,
                    limits: self.limits.clone(),
                    tx,
                };
                let spawned = thread::Builder::new()
                    .name("limen-in-process".into())
                    .spawn(move || run.run(fields));
                if let Err(e) = spawned {
                    // The function never ran.
                    lock(open).remove(&key);
                    return Err(format!("no thread to run the call on: {e}"));
                }
            }
        }
        Ok(rx)
    }

    /// Calls a Tool and waits for its outcome. A call the host cannot send
    /// is NotRun. A process's call closes at its deadline
    /// ([`Limits::call_timeout`], kept by its machine); an in-process
    /// function cannot be stopped, so its call is given up as Unknown at
    /// the same deadline, its thread left to finish and its answer dropped.
    pub fn call(
        &self,
        key: CallKey,
        tool: &Identity,
        args: Vec<Value>,
        type_args: Vec<Type>,
    ) -> Outcome {
        let in_process = self
            .bound
            .get(tool)
            .is_some_and(|(_, i)| self.backends[*i].1.process().is_none());
        let ended = || Outcome::Unknown("the host ended with the call out".into());
        match self.start_call(key, tool, args, type_args) {
            Err(why) => Outcome::NotRun(why),
            Ok(rx) if in_process => {
                let timeout = Duration::from_nanos(self.limits.call_timeout);
                match rx.recv_timeout(timeout) {
                    Ok(outcome) => outcome,
                    Err(mpsc::RecvTimeoutError::Timeout) => Outcome::Unknown(format!(
                        "{tool} did not return within {} ms {CALL_DEADLINE}: an in-process \
                         function cannot be stopped, and whether the call happened is not known",
                        timeout.as_millis()
                    )),
                    Err(mpsc::RecvTimeoutError::Disconnected) => ended(),
                }
            }
            Ok(rx) => rx.recv().unwrap_or_else(|_| ended()),
        }
    }

    /// Asks the implementation of `tool` to stop work on a call. An
    /// in-process function cannot be interrupted, so for one it does
    /// nothing (a cancel proves nothing either way).
    pub fn cancel(&self, tool: &Identity, key: &CallKey) {
        if let Some((_, index)) = self.bound.get(tool) {
            if let Some(process) = self.backends[*index].1.process() {
                process.cancel(key);
            }
        }
    }

    /// The processes, with the implementation each runs (in-process
    /// implementations have none).
    pub fn processes(&self) -> impl Iterator<Item = (&Implementation, &Process)> {
        self.backends
            .iter()
            .filter_map(|(i, b)| b.process().map(|p| (i, p)))
    }

    /// Ends every process.
    pub fn shutdown(&self) {
        for (_, process) in self.processes() {
            process.shutdown();
        }
    }
}

/// One in-process call under way, on its own thread.
struct InProcessRun {
    implementation: Arc<dyn InProcess>,
    open: Arc<Mutex<BTreeSet<CallKey>>>,
    tool: Arc<Tool>,
    type_args: Vec<Type>,
    limits: Limits,
    tx: mpsc::Sender<Outcome>,
}

impl InProcessRun {
    /// Runs the function, a panic being Unknown (what it did before it
    /// panicked is not known), and admits its answer at the declared types.
    fn run(self, fields: InProcessCall) {
        let key = fields.key.clone();
        let implementation = &self.implementation;
        let reply = match catch_unwind(AssertUnwindSafe(|| implementation.call(fields))) {
            Ok(reply) => reply,
            Err(panic) => Reply::Unknown(format!(
                "the in-process implementation panicked: {}",
                limen_core::flow::tool::panic_text(&*panic)
            )),
        };
        let outcome = admit(&self.tool, &self.type_args, reply, &self.limits.decode);
        lock(&self.open).remove(&key);
        let _ = self.tx.send(outcome);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Builds the backend of one implementation (a process is not started
/// yet); why it cannot be built.
fn start(
    implementation: &Implementation,
    planned: &[Planned],
    options: &HostOptions,
    waiters: &Waiters,
) -> Result<Backend, String> {
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
            Implementation::InProcess(name) => {
                return match options.in_process.get(name) {
                    Some(implementation) => Ok(Backend::InProcess {
                        implementation: implementation.clone(),
                        open: Arc::default(),
                    }),
                    None => Err("is not registered with this host".into()),
                };
            }
        };
    let spawn = Spawn::from_command_line(command, dir.clone())
        .map_err(|why| format!("has a command line that cannot be read: {why}"))?;
    let waiters = waiters.clone();
    Ok(Backend::Process(Process::new(
        spawn,
        conn,
        Box::new(move |key, outcome| {
            if let Some(tx) = lock(&waiters).remove(&key) {
                let _ = tx.send(outcome);
            }
        }),
    )))
}
