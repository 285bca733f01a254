//! `hale serve PROGRAM.hl`: any checked program served, its receivers
//! answered by the handlers `serve.toml` names ([`config`]).
//!
//! Every serve site of the main locus whose transport is a socket (HTTP,
//! Unix, MCP, gRPC) is served at the address the program writes, or the
//! one the configuration or `--bind NAME=ADDR` gives; each receiver
//! instance the sites bind is answered by its handler — a Flow Tool
//! process or an MCP server ([`tool_receiver`]), or a receiver given in
//! process by a program that embeds the server ([`Handlers`]) — and each
//! source param the sites read (`bearer`, `public_roles`) by the identity
//! source the configuration writes for it ([`sources`]). Nothing is served
//! until everything holds: a configuration naming what the program does
//! not have, a receiver without a handler, a handler whose Tools are not
//! its rows' shapes, a source file that cannot be read — each is one
//! diagnostic, all of them printed, and the boot fails (exit status 2).
//!
//! An operator steers the server through a control socket (`--control
//! PATH`, [`control`]): the protocol `hale demo --control` speaks, so
//! `limen-conformance check` provokes every outcome of a served program.

pub mod broker;
pub mod config;
pub mod control;
pub mod hubs;
pub mod observe;
pub mod sources;
pub mod tool_receiver;
pub mod upstream;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};

use limen_core::flow::tool::Limits;
use limen_core::hale::docs::McpDescriber;
use limen_core::hale::model::{Exposure as ModelExposure, Program, Source, TransportKind};
use limen_core::hale::runtime::{BearerSource, Describer, Exposure, Receiver, RoleSource};
use limen_core::hale::serving::{exposure_spec, ShapeCodec};
use limen_core::hale::tools;
use limen_core::wire::grpc::Framing as GrpcFraming;
use limen_core::MILLISECOND;

use crate::serve::{BoundAddress, Server, ServerConfig, StopHandle, WorkerId};
use crate::tool::Spawn;
use config::{HandlerConfig, ServeConfig};
use control::Gate;
use control::Instance;
use hubs::{Publisher, ServedHub};
use sources::Sources;
use tool_receiver::{Speaks, ToolHandler, ToolReceiver};

/// What `hale serve`'s flags set beside the configuration.
#[derive(Clone, Debug, Default)]
pub struct ServeOptions {
    /// The program's path, for the banner.
    pub file: String,
    /// `serve.toml`, read (an empty one without `--config`).
    pub config: ServeConfig,
    /// `--bind NAME=ADDR`, over the configuration's `[bind]`.
    pub binds: BTreeMap<String, String>,
    /// `--grant SOURCE.ROLE=HOLDER`, added to the role sources.
    pub grants: Vec<(String, String, String)>,
    /// How many connection loops serve; 0, one per core.
    pub loops: usize,
    /// A bound for every exposure, over the program's (`--bound N`).
    pub bound: Option<usize>,
    /// A control socket (`--control PATH`).
    pub control: Option<PathBuf>,
    /// How long a stop drains first (`--drain-grace`,
    /// [`ServerConfig::drain_grace`]): the health checks answer 503 while
    /// calls are still served. Zero: the stop is at once.
    pub drain_grace: std::time::Duration,
    /// One JSON line per call on standard error (`--log calls`).
    pub log_calls: bool,
    /// Where the metrics listener listens (`--metrics ADDR`).
    pub metrics: Option<String>,
    /// The most connections a listener holds, by exposure name
    /// (`--max-connections public=N`); the server's default for the others
    /// ([`crate::serve::connection_caps`]).
    pub max_connections: BTreeMap<String, usize>,
    /// Hubs, by name, not served on a listener of their own kind (`hale
    /// demo` serves its hub only when `--hub` is given).
    pub unserved: BTreeSet<String>,
    /// Hubs, by name, served over datagrams as well, at an address (`hale
    /// demo --udp-hub`): the hub's rows and sources on a `udp::Hub`
    /// listener, its endpoint named `NAME-udp`.
    pub udp_hubs: BTreeMap<String, String>,
    /// Run the receivers given in process ([`Handlers`]) inline on the
    /// loops ([`Server::add_inline_receiver`]) when no control socket can
    /// hold them at a gate: for handlers that compute and return without
    /// blocking, as the witness's do (`hale demo`).
    pub inline: bool,
    /// The broker that carries the hubs' events and the role sources'
    /// changes to the program's other nodes (`--broker nats://host:port`),
    /// over the configuration's `broker`.
    pub broker: Option<String>,
}

/// How many calls an exposure hands a receiver beyond the one it runs:
/// a Tool-process receiver writes what it was handed to its process as
/// one batch, and the calls handed while a batch runs are the next batch,
/// so the process and the server work at once (measured with
/// `benches/scripts/serve-vs-demo`; `benches/RESULTS.md`).
pub const DISPATCH_AHEAD: usize = 256;

/// Receivers given in process, by instance (`orders`), for a program that
/// embeds the server: they answer where the configuration names no
/// handler, on worker threads of their own.
pub type Handlers = BTreeMap<String, Box<dyn Receiver + Send>>;

/// Why the program cannot be served: every diagnostic found.
#[derive(Debug)]
pub struct BootError(pub Vec<String>);

impl std::fmt::Display for BootError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.join("\n"))
    }
}

/// A served program, ready to run.
pub struct Application {
    server: Server,
    banner: String,
    endpoints: Vec<(String, String, BoundAddress)>,
    control: Option<(std::os::unix::net::UnixListener, PathBuf)>,
    instances: BTreeMap<String, Instance>,
    sources: Sources,
    hubs: Vec<ServedHub>,
    publisher: Publisher,
    /// The link to the program's other nodes, when a broker is named.
    broker: Option<broker::Broker>,
    /// The call log and the metrics' table, when either is kept.
    observer: Option<Arc<observe::Observer>>,
    /// The metrics listener, with what it reports.
    metrics: Option<(
        std::net::TcpListener,
        Arc<observe::Observer>,
        observe::Gauges,
    )>,
}

impl std::fmt::Debug for Application {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Application").finish_non_exhaustive()
    }
}

/// Builds the live describer of one exposure, given where it was bound, or
/// says why the exposure cannot be described.
pub type DescriberFactory =
    dyn Fn(&Program, &ModelExposure, &BoundAddress) -> Result<Box<dyn Describer + Send>, String>;

/// What one exposure is served with: the program it is described from,
/// where it listens, its spec, its sources and its receivers' workers.
pub struct Served<'a> {
    /// The program the exposure is described from (one that holds it).
    pub program: &'a Program,
    /// The exposure, of that program.
    pub exposure: &'a ModelExposure,
    /// Its listener.
    pub listener: crate::serve::ListenerId,
    /// Where the listener is bound.
    pub bound: &'a BoundAddress,
    /// The exposure's spec (its bound and hand-ahead set).
    pub spec: limen_core::hale::runtime::ExposureSpec,
    /// Its bearer source (none over Unix).
    pub bearer: Option<Box<dyn BearerSource + Send>>,
    /// Its role source.
    pub roles: Box<dyn RoleSource + Send>,
    /// The worker of each of its receivers, in its spec's order.
    pub workers: Vec<WorkerId>,
}

/// Serves one exposure on its listener by its transport — its codec
/// (protobuf too over gRPC), its describer (the MCP tools over MCP,
/// `describe` otherwise), its framing — the one path `hale serve` and
/// `hale demo` serve an exposure by.
pub fn serve_exposure(
    server: &mut Server,
    served: Served<'_>,
    describe: &DescriberFactory,
) -> Result<(), String> {
    let Served {
        program,
        exposure: e,
        listener,
        bound,
        spec,
        bearer,
        roles,
        workers,
    } = served;
    let name = e.name.clone().unwrap_or_default();
    let transport = e.listener.as_ref().map(|l| l.transport.clone());
    let over_grpc = transport == Some(TransportKind::Grpc);
    let over_mcp = transport == Some(TransportKind::Mcp);
    let codec = ShapeCodec::new(program, e).map_err(|err| err.to_string())?;
    let codec = if over_grpc {
        codec.with_protobuf()
    } else {
        codec
    };
    let docs = if over_mcp {
        McpDescriber::new(program, e)
            .map(|d| Box::new(d) as Box<dyn Describer + Send>)
            .map_err(|err| err.to_string())
    } else {
        describe(program, e, bound)
    }
    .map_err(|err| format!("cannot describe {name}: {err}"))?;
    let exposure = Exposure::new(spec, bearer, roles, Box::new(codec), docs);
    if over_mcp {
        server.serve_mcp(listener, exposure, workers)
    } else if over_grpc {
        let framing = GrpcFraming::new(program, e).map_err(|err| err.to_string())?;
        server.serve_grpc(listener, exposure, workers, framing)
    } else {
        server.serve(listener, exposure, workers)
    }
    .map_err(|err| format!("cannot serve {name}: {err}"))
}

/// The transport as the banner and the boot diagnostic name it.
pub(crate) fn transport_name(kind: &TransportKind) -> &'static str {
    match kind {
        TransportKind::Http => "http::Rpc",
        TransportKind::Unix => "unix::Rpc",
        TransportKind::Mcp => "mcp::Rpc",
        TransportKind::Grpc => "grpc::Rpc",
        TransportKind::Ws => "ws::Hub",
        TransportKind::Udp => "udp::Hub",
        TransportKind::Test => "std::api::test::Rpc",
        TransportKind::Other(_) => "the transport",
    }
}

/// The source params the program's exposures and hubs read: (param, is a
/// bearer source, whether what reads it is served: every exposure and hub
/// is).
fn source_params(program: &Program) -> Vec<(String, bool, bool)> {
    let mut out: Vec<(String, bool, bool)> = Vec::new();
    let exposures = program
        .exposures
        .iter()
        .map(|e| (&e.principals, &e.roles, true));
    let hubs = program
        .hubs
        .iter()
        .map(|h| (&h.literal.principals, &h.literal.roles, true));
    for (principals, roles, served) in exposures.chain(hubs) {
        for (source, bearer) in [(principals, true), (roles, false)] {
            if let Source::Param { param, .. } = source {
                match out.iter_mut().find(|(p, b, _)| p == param && *b == bearer) {
                    Some(entry) => entry.2 |= served,
                    None => out.push((param.clone(), bearer, served)),
                }
            }
        }
    }
    out
}

/// Checks that what the configuration names is the program's: each
/// `[bind]` an exposure, each `[handlers]` a receiver instance, each
/// `[sources]` a source param of the kind it writes.
fn check_names(
    program: &Program,
    options: &ServeOptions,
    given: &Handlers,
    errors: &mut Vec<String>,
) {
    let exposures: Vec<&str> = program
        .exposures
        .iter()
        .filter_map(|e| e.name.as_deref())
        .chain(program.hubs.iter().filter_map(|h| h.name()))
        .collect();
    let listing = |names: &[&str]| {
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        }
    };
    for (from, names) in [
        ("bind", options.config.bind.keys().collect::<Vec<_>>()),
        ("--bind", options.binds.keys().collect()),
    ] {
        for name in names {
            if !exposures.contains(&name.as_str()) {
                errors.push(format!(
                    "{from} {name}: the program serves no exposure `{name}` (its exposures: {})",
                    listing(&exposures)
                ));
            }
        }
    }
    let hub_names: Vec<&str> = program.hubs.iter().filter_map(|h| h.name()).collect();
    for name in options.unserved.iter().chain(options.udp_hubs.keys()) {
        if !hub_names.contains(&name.as_str()) {
            errors.push(format!(
                "hub {name}: the program has no hub `{name}` (its hubs: {})",
                listing(&hub_names)
            ));
        }
    }
    let instances = tools::instances(program);
    let instance_names: Vec<&str> = instances.iter().map(|(n, _)| n.as_str()).collect();
    for name in options.config.handlers.keys() {
        if !instance_names.contains(&name.as_str()) {
            errors.push(format!(
                "handlers.{name}: the program has no receiver instance `{name}` (its instances: {})",
                listing(&instance_names)
            ));
        }
    }
    for (instance, locus) in &instances {
        if !options.config.handlers.contains_key(instance) && !given.contains_key(instance) {
            errors.push(format!(
                "the receiver instance `{instance}` ({locus}) has no handler: give [handlers.{instance}] command = [...]"
            ));
        }
    }
    let params = source_params(program);
    let param_names: Vec<&str> = params.iter().map(|(p, _, _)| p.as_str()).collect();
    for (name, source) in &options.config.sources {
        let bearer = params.iter().any(|(p, b, _)| p == name && *b);
        let roles = params.iter().any(|(p, b, _)| p == name && !*b);
        if !bearer && !roles {
            errors.push(format!(
                "sources.{name}: no exposure reads a source `{name}` (the sources read: {})",
                listing(&param_names)
            ));
            continue;
        }
        if bearer && !source.is_bearer() {
            errors.push(format!(
                "sources.{name}: `{name}` is a bearer source (principals:): give `tokens` or `tokens_file`"
            ));
        }
        if roles && !source.is_roles() {
            errors.push(format!(
                "sources.{name}: `{name}` is a role source (roles:): give `grants` or `grants_file`"
            ));
        }
    }
    for (source, role, _) in &options.grants {
        if !params.iter().any(|(p, b, _)| p == source && !*b) {
            errors.push(format!(
                "--grant {source}.{role}=…: no exposure reads a role source `{source}`"
            ));
        }
    }
    for (param, bearer, _) in params.iter().filter(|(_, _, served)| *served) {
        let granted = !*bearer && options.grants.iter().any(|(s, _, _)| s == param);
        if !options.config.sources.contains_key(param) && !granted {
            let give = if *bearer {
                "tokens = { \"TOKEN\" = \"PRINCIPAL\" } or tokens_file"
            } else {
                "grants = { ROLE = [\"PRINCIPAL\"] } or grants_file"
            };
            errors.push(format!(
                "the program's exposures read the source `{param}`: give [sources.{param}] {give}"
            ));
        }
    }
}

/// What answers a receiver instance's calls.
enum Handler {
    /// A receiver run on a worker thread, or inline (in-process handlers,
    /// an MCP server, an upstream service).
    Receiver(Box<dyn Receiver + Send>),
    /// A Tool process whose pipes the connection loops drive.
    Piped(
        Box<dyn limen_core::flow::tool::ToolConn + Send>,
        Box<tool_receiver::ToolPipe>,
    ),
}

/// One receiver instance's handler, booted.
struct Booted {
    /// What answers its calls.
    handler: Handler,
    /// The gate the control socket holds it at.
    gate: Gate,
    /// Its owner's `on_failure`.
    on_failure: crate::serve::worker::OnFailure,
    /// Whether it was given in process ([`Handlers`]) rather than named by
    /// the configuration.
    in_process: bool,
}

/// The handler of each receiver instance, booted: its Tools held to its
/// rows. Every diagnostic goes to `errors`.
fn boot_handlers(
    program: &Program,
    options: &ServeOptions,
    mut given: Handlers,
    errors: &mut Vec<String>,
) -> BTreeMap<String, Booted> {
    let mut out = BTreeMap::new();
    let booted = |handler: Handler, gate: Gate, on_failure| Booted {
        handler,
        gate,
        on_failure,
        in_process: false,
    };
    for (instance, locus) in tools::instances(program) {
        let gate: Gate = Arc::new((Mutex::new(false), Condvar::new()));
        let Some(h) = options.config.handlers.get(&instance) else {
            // One with neither: check_names said so.
            if let Some(receiver) = given.remove(&instance) {
                let failed = instance.clone();
                let absorbs = tools::has_on_failure(program, &locus);
                let on_failure: crate::serve::worker::OnFailure = Arc::new(move |_| {
                    eprintln!("hale serve: `{failed}` violated; on_failure ran");
                    if absorbs {
                        limen_core::hale::runtime::Supervision::Absorb
                    } else {
                        limen_core::hale::runtime::Supervision::Restart
                    }
                });
                // Ungated only where it runs inline, with no control
                // socket open: a gate held shut would stall its loop.
                let receiver = if options.inline && options.control.is_none() {
                    receiver
                } else {
                    Box::new(control::Gated::new(receiver, gate.clone()))
                };
                out.insert(
                    instance,
                    Booted {
                        handler: Handler::Receiver(receiver),
                        gate,
                        on_failure,
                        in_process: true,
                    },
                );
            }
            continue;
        };
        let rows = match tools::receiver_rows(program, &locus) {
            Ok(r) => r,
            Err(e) => {
                errors.push(format!("handlers.{instance}: {e}"));
                continue;
            }
        };
        let (words, speaks) = match &h.run {
            HandlerConfig::Command(w) => (w, Speaks::Tool),
            HandlerConfig::Mcp(w) => (w, Speaks::Mcp),
            HandlerConfig::Http(url) => {
                // Checked when the configuration was read.
                let Ok(up) = config::Upstream::parse(url) else {
                    continue;
                };
                let timeout = std::time::Duration::from_millis(h.timeout_ms.unwrap_or(60_000));
                let r = upstream::UpstreamReceiver::new(
                    &instance,
                    up,
                    &rows,
                    timeout,
                    gate.clone(),
                    tools::has_on_failure(program, &locus),
                );
                let on_failure = r.on_failure();
                out.insert(
                    instance,
                    booted(Handler::Receiver(Box::new(r)), gate, on_failure),
                );
                continue;
            }
        };
        let mut program_path = PathBuf::from(&words[0]);
        if words[0].contains('/') {
            // Absolute: the process runs in its own working directory.
            let resolved = options.config.resolve(&program_path);
            program_path = std::path::absolute(&resolved).unwrap_or(resolved);
        }
        let dir = h
            .dir
            .as_deref()
            .map(|d| options.config.resolve(d))
            .or_else(|| options.config.path.as_ref().map(|_| options.config.base()))
            .filter(|d| !d.as_os_str().is_empty());
        let mut limits = Limits::default();
        if let Some(ms) = h.timeout_ms {
            limits.call_timeout = ms.saturating_mul(MILLISECOND);
        }
        let handler = ToolHandler {
            instance: instance.clone(),
            spawn: Spawn {
                program: program_path.display().to_string(),
                args: words[1..].to_vec(),
                dir: dir.map(|d| d.display().to_string()),
                // Where a handler publishes (`publish TOPIC JSON`).
                env: options
                    .control
                    .as_deref()
                    .map(|c| {
                        let c = std::path::absolute(c).unwrap_or_else(|_| c.to_owned());
                        vec![("HALE_CONTROL".to_owned(), c.display().to_string())]
                    })
                    .unwrap_or_default(),
            },
            speaks,
            names: h.tools.clone(),
            limits,
            absorbs_violations: tools::has_on_failure(program, &locus),
        };
        match ToolReceiver::boot(handler, &rows, gate.clone()) {
            Ok(r) => {
                let on_failure = r.on_failure();
                // A Tool process's pipes are driven by the loops; an MCP
                // server's receiver stays on a worker.
                let handler = match r.into_piped_or_self() {
                    Ok((conn, pipe)) => Handler::Piped(conn, Box::new(pipe)),
                    Err(r) => Handler::Receiver(Box::new(r)),
                };
                out.insert(instance, booted(handler, gate, on_failure));
            }
            Err(es) => errors.extend(es),
        }
    }
    out
}

impl Application {
    /// Checks the configuration against the program and boots every
    /// handler (their Tools held to their rows), without binding a
    /// listener; the handlers are ended again (`--check-config`).
    pub fn check(program: &Program, options: &ServeOptions) -> Result<(), BootError> {
        let mut errors = Vec::new();
        check_names(program, options, &Handlers::new(), &mut errors);
        if let Err(e) = Sources::read(&options.config, &options.grants) {
            errors.extend(e);
        }
        if errors.is_empty() {
            boot_handlers(program, options, Handlers::new(), &mut errors);
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(BootError(errors))
        }
    }

    /// Boots the program: every check of [`check`](Application::check),
    /// then every listener bound and every exposure served.
    pub fn boot(
        program: &Program,
        options: &ServeOptions,
        given: Handlers,
    ) -> Result<Application, BootError> {
        let mut errors = Vec::new();
        check_names(program, options, &given, &mut errors);
        let sources = match Sources::read(&options.config, &options.grants) {
            Ok(s) => Some(s),
            Err(e) => {
                errors.extend(e);
                None
            }
        };
        if !errors.is_empty() {
            return Err(BootError(errors));
        }
        let sources = sources.unwrap_or_default();
        let handlers = boot_handlers(program, options, given, &mut errors);
        if !errors.is_empty() {
            return Err(BootError(errors));
        }
        let one = |e: String| BootError(vec![e]);
        let mut server = Server::new(ServerConfig {
            loops: options.loops,
            drain_grace: options.drain_grace,
            ..ServerConfig::default()
        })
        .map_err(|e| one(format!("hale serve: cannot start the event loop: {e}")))?;
        let mut instances: BTreeMap<String, Instance> = BTreeMap::new();
        let mut in_process = BTreeSet::new();
        for (name, b) in handlers {
            let inline = b.in_process && options.inline && options.control.is_none();
            let worker = match b.handler {
                Handler::Receiver(receiver) if inline => {
                    server.add_inline_receiver(&name, 1, receiver, b.on_failure)
                }
                Handler::Receiver(receiver) => server.add_worker(&name, 1, receiver, b.on_failure),
                Handler::Piped(conn, pipe) => {
                    server.add_piped_receiver(&name, 1, conn, pipe, b.on_failure)
                }
            }
            .map_err(|e| one(format!("hale serve: cannot start a worker: {e}")))?;
            if b.in_process {
                in_process.insert(name.clone());
            }
            instances.insert(
                name,
                Instance {
                    worker,
                    gate: b.gate,
                },
            );
        }
        let observer = (options.log_calls || options.metrics.is_some()).then(|| {
            Arc::new(observe::Observer::new(
                options.log_calls,
                options.metrics.is_some(),
            ))
        });
        if let Some(o) = &observer {
            server.set_observer(o.clone());
        }
        let mut gauges = observe::Gauges::default();
        let mut banner = format!("hale serve: serving {}\n", options.file);
        let mut tries = Vec::new();
        let mut endpoints = Vec::new();
        let mut skipped = Vec::new();
        let mut hubs = hubs::serve(program, options, &sources).map_err(one)?;
        for e in &program.exposures {
            let name = e.name.clone().unwrap_or_default();
            let Some(listener) = &e.listener else {
                skipped.push(format!(
                    "{name} (its transport is not a literal the server can bind)"
                ));
                continue;
            };
            let via = match listener.transport {
                TransportKind::Http => "http",
                TransportKind::Unix => "unix",
                TransportKind::Mcp => "mcp",
                TransportKind::Grpc => "grpc",
                TransportKind::Ws => {
                    // `api::serve(S, self.hub, …)`: § Rpcs on a hub.
                    let (identity, bound) = serve_over_hub(
                        program,
                        e,
                        options,
                        &mut server,
                        &mut hubs,
                        (&instances, &in_process),
                        &sources,
                    )
                    .map_err(one)?;
                    let endpoint = endpoint(&bound, &TransportKind::Ws);
                    banner.push_str(&format!("  {identity:<42} {endpoint}\n"));
                    endpoints.push((name, identity, bound));
                    continue;
                }
                ref other => {
                    skipped.push(format!("{name} (over {})", transport_name(other)));
                    continue;
                }
            };
            let mut spec = exposure_spec(program, e, via).map_err(|err| one(err.to_string()))?;
            spec.limits.dispatch_ahead = dispatch_ahead(&spec, &in_process);
            if let Some(bound) = options.bound {
                spec.bound = bound;
            }
            let address = options
                .binds
                .get(&name)
                .or_else(|| options.config.bind.get(&name))
                .cloned()
                .or_else(|| listener.address.clone())
                .unwrap_or_default();
            let fail = |err: std::io::Error| {
                one(format!(
                    "api: {} could not listen on {address}: {err}",
                    transport_name(&listener.transport)
                ))
            };
            let (id, bound) = match listener.transport {
                TransportKind::Http | TransportKind::Mcp => {
                    server.bind_http(&address).map_err(fail)?
                }
                TransportKind::Grpc => server.bind_grpc(&address).map_err(fail)?,
                _ => {
                    let path = PathBuf::from(&address);
                    if let Some(dir) = path.parent() {
                        let _ = std::fs::create_dir_all(dir);
                    }
                    match server.bind_unix(&path).map_err(fail)? {
                        Some(bound) => bound,
                        None => continue,
                    }
                }
            };
            if let Some(&cap) = options.max_connections.get(&name) {
                server
                    .set_max_connections(id, cap)
                    .map_err(|err| one(format!("hale serve: {name}: {err}")))?;
            }
            let mut workers: Vec<WorkerId> = Vec::new();
            for r in &spec.receivers {
                let instance = tools::instance_name(r);
                let i = instances.get(instance).ok_or_else(|| {
                    one(format!("hale serve: {name}: no handler for `{instance}`"))
                })?;
                workers.push(i.worker);
            }
            let (bearer, roles) = exposure_sources(e, &sources);
            let identity = spec.identity();
            let describe = |p: &Program, e: &ModelExposure, b: &BoundAddress| {
                crate::hale_cli::describer::model_describer(p, e, b).map_err(|err| err.to_string())
            };
            serve_exposure(
                &mut server,
                Served {
                    program,
                    exposure: e,
                    listener: id,
                    bound: &bound,
                    spec,
                    bearer,
                    roles,
                    workers,
                },
                &describe,
            )
            .map_err(|err| one(format!("hale serve: {err}")))?;
            if let Some(open) = server.connections(id) {
                gauges.connections.push((name.clone(), open));
            }
            let endpoint = endpoint(&bound, &listener.transport);
            banner.push_str(&format!("  {identity:<42} {endpoint}\n"));
            tries.push(try_lines(program, e, &endpoint));
            endpoints.push((name, identity, bound));
        }
        for h in &hubs {
            if let Some(param) = &h.roles {
                sources.announce_to(param, h.handle.clone());
            }
            let endpoint = format!("{}://{}", h.scheme, h.bound);
            banner.push_str(&format!("  {:<42} {endpoint}\n", h.identity));
            endpoints.push((h.name.clone(), h.identity.clone(), h.bound.clone()));
            if let Some(topic) = h.topics.first() {
                let watch = if h.scheme == "ws" {
                    format!("  hale watch {endpoint} {topic} --token TOKEN\n")
                } else {
                    format!(
                        "  echo '{{\"type\": \"subscribe\", \"topic\": \"{topic}\", \"id\": 1, \"token\": \"TOKEN\"}}' | socat - UDP:{}\n",
                        h.bound
                    )
                };
                tries.push(watch);
            }
        }
        if let Some(unknown) = options
            .max_connections
            .keys()
            .find(|n| !endpoints.iter().any(|(name, _, _)| name == *n))
        {
            return Err(one(format!(
                "--max-connections {unknown}=…: no listener is named {unknown}"
            )));
        }
        let mut publisher = Publisher::new(program, &hubs);
        gauges.hubs = hubs
            .iter()
            .map(|h| (h.name.clone(), h.handle.clone()))
            .collect();
        let metrics = match (&options.metrics, observer.clone()) {
            (Some(addr), Some(observer)) => {
                let listener = observe::bind(addr).map_err(|err| {
                    one(format!(
                        "hale serve: the metrics listener could not listen on {addr}: {err}"
                    ))
                })?;
                let bound = listener
                    .local_addr()
                    .map_or_else(|_| addr.clone(), |a| a.to_string());
                banner.push_str(&format!("  {:<42} http://{bound}/metrics\n", "metrics"));
                Some((listener, observer, gauges))
            }
            _ => None,
        };
        if let (Some(control), Some(topic)) = (&options.control, program.topics.first()) {
            tries.push(format!(
                "  hale publish {} {} '{{…}}'   (a handler finds the socket in HALE_CONTROL)\n",
                control.display(),
                topic.decl.name.name
            ));
        }
        if let Some(url) = options.broker.as_ref().or(options.config.broker.as_ref()) {
            if !hubs.is_empty() {
                banner.push_str(&format!(
                    "  {:<42} {url}\n",
                    "broker (the hubs' other nodes)"
                ));
            }
        }
        for s in &skipped {
            banner.push_str(&format!("  not served: {s}\n"));
        }
        banner.push_str("handlers:\n");
        for (name, handler) in &options.config.handlers {
            let command = match &handler.run {
                HandlerConfig::Command(w) => format!("Tool process: {}", w.join(" ")),
                HandlerConfig::Mcp(w) => format!("MCP server: {}", w.join(" ")),
                HandlerConfig::Http(url) => format!("upstream: POST {url}/<member>"),
            };
            banner.push_str(&format!("  {name:<16} {command}\n"));
        }
        banner.push_str("try:\n");
        for t in tries {
            banner.push_str(&t);
        }
        banner.push_str("stop with Ctrl-C\n");
        let control = match &options.control {
            None => None,
            Some(path) => {
                let _ = std::fs::remove_file(path);
                let listener = std::os::unix::net::UnixListener::bind(path).map_err(|err| {
                    one(format!(
                        "hale serve: cannot bind the control socket {}: {err}",
                        path.display()
                    ))
                })?;
                Some((listener, path.clone()))
            }
        };
        // Last, once nothing else can fail: the link's threads start here.
        let url = options.broker.as_ref().or(options.config.broker.as_ref());
        let broker = match url {
            Some(url) if !hubs.is_empty() => {
                let scope =
                    broker::scope(hubs.iter().map(|h| (h.name.as_str(), h.digest.as_str())))
                        .unwrap_or_default();
                let name = format!("hale {}", options.file);
                let b =
                    broker::Broker::start(url, &name, publisher.clone(), sources.clone(), &scope)
                        .map_err(|e| one(format!("hale serve: broker {url}: {e}")))?;
                publisher.set_broker(b.clone());
                Some(b)
            }
            _ => None,
        };
        Ok(Application {
            server,
            banner,
            endpoints,
            control,
            instances,
            sources,
            hubs,
            publisher,
            broker,
            observer,
            metrics,
        })
    }

    /// What is served and the commands to try.
    pub fn banner(&self) -> &str {
        &self.banner
    }

    /// Each exposure served: its name, its identity and where it is bound.
    pub fn endpoints(&self) -> &[(String, String, BoundAddress)] {
        &self.endpoints
    }

    /// A handle that stops the server.
    pub fn stop_handle(&self) -> StopHandle {
        self.server.stop_handle()
    }

    /// The identity sources, to reload (SIGHUP) from another thread.
    pub fn sources(&self) -> Sources {
        self.sources.clone()
    }

    /// Publishes `payload` on `topic` (what the control socket's
    /// `publish` does).
    pub fn publisher(&self) -> Publisher {
        self.publisher.clone()
    }

    /// Whether any hub is served (a handler given in process publishes
    /// through [`publisher`](Application::publisher) only then).
    pub fn serves_hubs(&self) -> bool {
        !self.hubs.is_empty()
    }

    /// Writes every exchange the exposures answer to `recorder` (`hale
    /// demo --record DIR`).
    pub fn record(&mut self, recorder: Box<dyn crate::serve::Recorder>) {
        self.server.set_recorder(recorder);
    }

    /// Serves until stopped. The hubs run on threads of their own and
    /// stop once the exposures have: `closed` to each connection after
    /// what was queued for it.
    pub fn run(mut self) -> std::io::Result<()> {
        if let Some((listener, path)) = self.control.take() {
            let stop = self.server.stop_handle();
            let instances = std::mem::take(&mut self.instances);
            let sources = self.sources.clone();
            let publisher = self.publisher.clone();
            let hubs = self.hubs.iter().map(|h| h.handle.clone()).collect();
            let broker = self.broker.clone();
            std::thread::Builder::new()
                .name("hale serve control".into())
                .spawn(move || {
                    control::serve(
                        listener,
                        &path,
                        instances,
                        stop,
                        (sources, publisher),
                        hubs,
                        broker,
                    )
                })?;
        }
        self.sources.watch()?;
        if let Some((listener, observer, gauges)) = self.metrics.take() {
            std::thread::Builder::new()
                .name("hale serve metrics".into())
                .spawn(move || observe::serve_metrics(listener, observer, gauges))?;
        }
        let hubs = self
            .hubs
            .iter_mut()
            .filter_map(|h| {
                let run = h.run.take()?;
                Some(crate::serve::HubRun {
                    name: format!("hale hub {}", h.name),
                    handle: h.handle.clone(),
                    run: Box::new(move || run.run()),
                })
            })
            .collect();
        let ran = self.server.run_with(hubs);
        if let Some(b) = &self.broker {
            b.stop();
        }
        // Every call answered has its log line written before the process
        // goes.
        if let Some(o) = &self.observer {
            o.close();
        }
        ran
    }
}

/// The bearer and role sources exposure `e` reads, as the configuration
/// gives its source params (a role source it does not give grants
/// nothing; a Unix exposure has no bearer source).
fn exposure_sources(
    e: &ModelExposure,
    sources: &Sources,
) -> (
    Option<Box<dyn BearerSource + Send>>,
    Box<dyn RoleSource + Send>,
) {
    let bearer: Option<Box<dyn BearerSource + Send>> = match &e.principals {
        Source::Param { param, .. } => sources
            .tokens(param)
            .map(|t| Box::new(t) as Box<dyn BearerSource + Send>),
        _ => None,
    };
    let roles: Box<dyn RoleSource + Send> = match &e.roles {
        Source::Param { param, .. } => match sources.roles(param) {
            Some(r) => Box::new(r),
            None => Box::new(limen_core::hale::runtime::RoleTable::new()),
        },
        _ => Box::new(limen_core::hale::runtime::RoleTable::new()),
    };
    (bearer, roles)
}

/// Serves exposure `e`, whose transport is a hub the main locus holds,
/// over that hub's connections: its calls framed by the hub, admitted
/// under the exposure's sources, answered by its receivers' workers.
/// Returns its identity and where the hub listens.
fn serve_over_hub(
    program: &Program,
    e: &ModelExposure,
    options: &ServeOptions,
    server: &mut Server,
    hubs: &mut [ServedHub],
    (instances, in_process): (&BTreeMap<String, Instance>, &BTreeSet<String>),
    sources: &Sources,
) -> Result<(String, BoundAddress), String> {
    let name = e.name.clone().unwrap_or_default();
    let fail = |err: String| format!("hale serve: cannot serve {name}: {err}");
    let param = program
        .serve_sites
        .get(e.site)
        .and_then(|s| match &s.transport {
            Some(limen_core::hale::model::TransportUse::Param { param, .. }) => {
                Some(param.name.clone())
            }
            _ => None,
        })
        .ok_or_else(|| fail("its transport is no hub the main locus holds".into()))?;
    // The hub's own listener: not the datagram one `udp_hubs` adds.
    let hub = hubs
        .iter_mut()
        .find(|h| h.param == param && h.scheme == "ws")
        .ok_or_else(|| fail(format!("no WebSocket hub is served as `self.{param}`")))?;
    let Some(hubs::HubLoop::Ws(hub_server)) = hub.run.as_mut() else {
        return Err(fail(format!("`self.{param}` is not a WebSocket hub")));
    };
    let mut spec = exposure_spec(program, e, "ws").map_err(|err| fail(err.to_string()))?;
    spec.limits.dispatch_ahead = dispatch_ahead(&spec, in_process);
    if let Some(bound) = options.bound {
        spec.bound = bound;
    }
    let mut workers = Vec::new();
    for r in &spec.receivers {
        let instance = tools::instance_name(r);
        workers.push(
            instances
                .get(instance)
                .ok_or_else(|| fail(format!("no handler for `{instance}`")))?
                .worker,
        );
    }
    let (bearer, roles) = exposure_sources(e, sources);
    let codec = ShapeCodec::new(program, e).map_err(|err| fail(err.to_string()))?;
    let docs = crate::hale_cli::describer::model_describer(program, e, &hub.bound)
        .map_err(|err| fail(err.to_string()))?;
    let identity = spec.identity();
    let exposure = Exposure::new(spec, bearer, roles, Box::new(codec), docs);
    server
        .serve_hub(hub_server, exposure, workers)
        .map_err(|err| fail(err.to_string()))?;
    Ok((identity, hub.bound.clone()))
}

/// How many calls an exposure hands its receivers ahead of the one each
/// runs: a handler process takes a batch ([`DISPATCH_AHEAD`]); receivers
/// given in process run on the server's own threads, where a stop or a
/// drain has less to take back ([`crate::serve::DISPATCH_AHEAD`]).
fn dispatch_ahead(
    spec: &limen_core::hale::runtime::ExposureSpec,
    in_process: &BTreeSet<String>,
) -> usize {
    if spec
        .receivers
        .iter()
        .all(|r| in_process.contains(tools::instance_name(r)))
    {
        crate::serve::DISPATCH_AHEAD
    } else {
        DISPATCH_AHEAD
    }
}

/// Where an exposure over `transport` bound at `bound` is called, as the
/// banner writes it (`http://…`, `unix:…`).
pub(crate) fn endpoint(bound: &BoundAddress, transport: &TransportKind) -> String {
    match (bound, transport) {
        (BoundAddress::Tcp(a), TransportKind::Mcp) => format!("mcp://{a}"),
        (BoundAddress::Tcp(a), TransportKind::Grpc) => format!("grpc://{a}"),
        (BoundAddress::Tcp(a), TransportKind::Ws) => format!("ws://{a}"),
        (BoundAddress::Tcp(a), TransportKind::Udp) => format!("udp://{a}"),
        (BoundAddress::Tcp(a), _) => format!("http://{a}"),
        (BoundAddress::Unix(p), _) => format!("unix:{}", p.display()),
    }
}

/// A value of `shape`: each field its type's zero.
fn example(shape: &limen_core::hale::codec::Shape) -> serde_json::Value {
    use limen_core::hale::codec::Shape;
    match shape {
        // Zero, or the range's end nearest it.
        Shape::Int { min, max } => serde_json::json!(match (min, max) {
            (Some(lo), _) if *lo > 0 => *lo,
            (_, Some(hi)) if *hi < 0 => *hi,
            _ => 0,
        }),
        Shape::Float => serde_json::json!(0.0),
        Shape::Bool => serde_json::json!(false),
        Shape::String => serde_json::json!(""),
        Shape::Struct(fields) => serde_json::Value::Object(
            fields
                .iter()
                .map(|f| (f.key.clone(), example(&f.shape)))
                .collect(),
        ),
    }
}

/// The commands to try against one exposure.
fn try_lines(program: &Program, e: &ModelExposure, endpoint: &str) -> String {
    let rows = program.served_rows(e);
    let first = rows.first();
    let member = first.map(|r| r.row.member.clone()).unwrap_or_default();
    // A payload of the request's shape, each field its type's zero, so
    // the line runs as printed.
    let payload = first
        .and_then(|r| r.row.request.as_ref())
        .and_then(|ty| limen_core::hale::serving::shape_of(&program.types, ty).ok())
        .map_or_else(|| "{}".to_owned(), |shape| example(&shape).to_string());
    let bearer = match &e.principals {
        Source::Param { .. } => " --bearer TOKEN",
        _ => "",
    };
    if let Some(addr) = endpoint.strip_prefix("grpc://") {
        let surface = e.surface.as_deref().unwrap_or_default();
        format!(
            "  grpcurl -plaintext -H 'authorization: Bearer TOKEN' {addr} describe {surface}   (server reflection)\n"
        )
    } else if endpoint.starts_with("mcp://") {
        format!("  hale mcp --app {endpoint}{bearer}   (an MCP server on stdio)\n")
    } else {
        format!(
            "  hale describe {endpoint}{bearer}\n  hale call {endpoint} {member} --json '{payload}'{bearer}\n"
        )
    }
}
