//! `hale demo`: the witness program served with its loci implemented in
//! Rust, the first thing a new user runs.
//!
//! It serves the exposures `conformance/programs/desk.hl` declares — public
//! and partner over HTTP, admin over a Unix socket — bound to one set of
//! receiver instances, and prints each exposure's identity, its address and
//! commands to try. With [`DemoOptions::mcp`] it also serves Public over
//! MCP as the exposure `mcp`, bound to public's own `Orders` instance and
//! under public's sources (the program declares no MCP serve site, so the
//! demo derives it from public's: [`mcp_exposure`]); with
//! [`DemoOptions::grpc`] it serves Public over gRPC the same way, as the
//! exposure `grpc` ([`grpc_exposure`], both in limen-witness with the
//! handlers). Every address can be overridden (port 0 allowed), and
//! the admin operator is the current user unless `--operator` names
//! another, so it runs unprivileged and in tests. A control socket
//! (`--control PATH`) lets a test gate, drain and resume receivers to
//! provoke the outcomes that need the server's cooperation, and
//! `--record DIR` writes every exchange in the conformance record format
//! ([`record`]). With [`DemoOptions::hub`] it serves the program's
//! WebSocket hub `fills` too ([`hub`]): every accepted `Orders::place`
//! publishes its fill there; with [`DemoOptions::hub_desk`] the hub also
//! carries Public, as the exposure `desk` ([`hub_desk_program`]).

pub mod hub;
pub mod record;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener as StdUnixListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

use limen_core::hale::model::{Exposure as ModelExposure, Program, Source, TransportKind};
use limen_core::hale::runtime::{BearerSource, Exposure, RoleTable, Supervision};
use limen_core::hale::serving::{exposure_spec, ShapeCodec};
use limen_witness as witness;
use limen_witness::exposures::{grpc_exposure, hub_desk_program, mcp_exposure};

use crate::program::control::Gated;
use crate::serve::{BoundAddress, Command, HubRun, Server, ServerConfig, StopHandle, WorkerId};

pub use crate::program::DescriberFactory;

/// What `hale demo`'s flags set.
#[derive(Clone, Debug, Default)]
pub struct DemoOptions {
    /// Addresses by exposure name (`public` → `127.0.0.1:0`), overriding
    /// the program's.
    pub addresses: BTreeMap<String, String>,
    /// Where to serve Public over MCP (`--mcp ADDR`; `hale demo` defaults
    /// it to `127.0.0.1:8090`); `None` serves no MCP exposure.
    pub mcp: Option<String>,
    /// Where to serve Public over gRPC (`--grpc ADDR`); `None` serves no
    /// gRPC exposure.
    pub grpc: Option<String>,
    /// Who holds `operator` under the Unix exposure's role source
    /// (`uid:<n>`); the current user when `None`.
    pub operator: Option<String>,
    /// A bound for every exposure, overriding the program's.
    pub bound: Option<usize>,
    /// A control socket for tests.
    pub control: Option<PathBuf>,
    /// Write every exchange as a conformance record under this folder
    /// (`--record DIR`).
    pub record: Option<PathBuf>,
    /// How many connection loops serve (`--loops N`); 0, one per core.
    pub loops: usize,
    /// The most connections a listener holds, by exposure name
    /// (`--max-connections public=N`); the server's default for the others
    /// ([`crate::serve::connection_caps`]).
    pub max_connections: BTreeMap<String, usize>,
    /// Where to serve the program's WebSocket hub (`--hub ADDR`); `None`
    /// serves none.
    pub hub: Option<String>,
    /// Where to serve the same hub over datagrams (`--udp-hub ADDR`).
    pub udp_hub: Option<String>,
    /// Serve Public over the WebSocket hub as the exposure `desk`
    /// (`--hub-desk`, § Rpcs on a hub; [`hub_desk_program`]).
    pub hub_desk: bool,
}

/// One receiver instance of the demo.
struct Instance {
    worker: WorkerId,
    gate: Arc<(Mutex<bool>, Condvar)>,
}

/// A demo ready to run: listeners bound, exposures served, the banner
/// written.
pub struct Demo {
    server: Server,
    banner: String,
    endpoints: Vec<(String, String, BoundAddress)>,
    control: Option<(StdUnixListener, PathBuf, BTreeMap<String, Instance>)>,
    hub: Option<hub::ServedHubs>,
}

impl std::fmt::Debug for Demo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Demo").finish_non_exhaustive()
    }
}

/// A listener that could not be bound: the boot failure's diagnostic.
#[derive(Debug)]
pub struct BootError(pub String);

impl std::fmt::Display for BootError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The demo's default admin socket: the program's `/run/desk/admin.sock` is
/// not a path an unprivileged user can bind, so the demo serves the socket
/// in a directory of its own under the temporary directory.
pub fn default_socket() -> PathBuf {
    let uid = rustix::process::getuid().as_raw();
    std::env::temp_dir()
        .join(format!("hale-demo-{uid}"))
        .join("admin.sock")
}

impl Demo {
    /// Binds every listener of the witness's exposures and serves them,
    /// described by the model's live describer.
    pub fn boot(options: &DemoOptions) -> Result<Demo, BootError> {
        let describer = |p: &Program, e: &ModelExposure, b: &BoundAddress| {
            crate::hale_cli::describer::model_describer(p, e, b).map_err(|err| err.to_string())
        };
        Demo::boot_with(options, &describer)
    }

    /// [`boot`](Demo::boot) with another describer.
    pub fn boot_with(
        options: &DemoOptions,
        describer: &DescriberFactory,
    ) -> Result<Demo, BootError> {
        let program = witness::program();
        let mut server = Server::new(ServerConfig {
            loops: options.loops,
            ..ServerConfig::default()
        })
        .map_err(|e| BootError(format!("hale demo: cannot start the event loop: {e}")))?;
        let instances = witness::Instances::new(&program);
        let hub = hub::serve(
            &program,
            &instances,
            options.hub.as_deref(),
            options.udp_hub.as_deref(),
        )?;
        let mut workers: BTreeMap<String, Instance> = BTreeMap::new();
        let mut banner =
            String::from("hale demo: serving conformance/programs/desk.hl, the witness program\n");
        let mut tries = Vec::new();
        let mut endpoints = Vec::new();
        let mut recorded_roles = BTreeMap::new();
        let exposures: Vec<ModelExposure> = program
            .exposures
            .iter()
            .cloned()
            .chain(
                options
                    .mcp
                    .as_deref()
                    .and_then(|a| mcp_exposure(&program, a)),
            )
            .chain(
                options
                    .grpc
                    .as_deref()
                    .and_then(|a| grpc_exposure(&program, a)),
            )
            .collect();
        for e in &exposures {
            let Some(listener) = &e.listener else {
                continue;
            };
            let name = e.name.clone().unwrap_or_default();
            let via = match listener.transport {
                TransportKind::Http => "http",
                TransportKind::Unix => "unix",
                TransportKind::Mcp => "mcp",
                TransportKind::Grpc => "grpc",
                _ => continue,
            };
            let mut spec =
                exposure_spec(&program, e, via).map_err(|err| BootError(err.to_string()))?;
            if let Some(bound) = options.bound {
                spec.bound = bound;
            }
            // The server's workers run on threads of their own: handing
            // calls ahead spares each call a round trip through the owner.
            spec.limits.dispatch_ahead = crate::serve::DISPATCH_AHEAD;
            let written = listener.address.clone().unwrap_or_default();
            let address = options.addresses.get(&name).cloned();
            let fail = |addr: &str, err: std::io::Error| {
                BootError(format!(
                    "api: {} could not listen on {addr}: {err}",
                    crate::program::transport_name(&listener.transport)
                ))
            };
            let (id, bound) = match listener.transport {
                TransportKind::Http | TransportKind::Mcp => {
                    let addr = address.unwrap_or(written);
                    server.bind_http(&addr).map_err(|err| fail(&addr, err))?
                }
                TransportKind::Grpc => {
                    let addr = address.unwrap_or(written);
                    server.bind_grpc(&addr).map_err(|err| fail(&addr, err))?
                }
                _ => {
                    let path = address.map(PathBuf::from).unwrap_or_else(default_socket);
                    if let Some(dir) = path.parent() {
                        let _ = std::fs::create_dir_all(dir);
                    }
                    match server
                        .bind_unix(&path)
                        .map_err(|err| fail(&path.display().to_string(), err))?
                    {
                        Some(bound) => bound,
                        None => continue,
                    }
                }
            };
            if let Some(&cap) = options.max_connections.get(&name) {
                server
                    .set_max_connections(id, cap)
                    .map_err(|err| BootError(format!("hale demo: {name}: {err}")))?;
            }
            let mut ids = Vec::new();
            for r in &spec.receivers {
                ids.push(instance_worker(
                    &mut server,
                    options.control.is_some(),
                    &mut workers,
                    &instances,
                    r,
                )?);
            }
            let shared = hub
                .as_ref()
                .filter(|_| listener.transport == TransportKind::Grpc)
                .map(|h| h.control.tokens.clone());
            let bearer: Option<Box<dyn BearerSource + Send>> = match (&e.principals, shared) {
                (Source::Kernel, _) => None,
                // With a hub, the gRPC exposure asks the hub's token table,
                // so the control socket's `expire` reaches a caller in the
                // middle of a reflection stream (§ gRPC: a source that
                // stops naming the caller ends the call with 16).
                (_, Some(tokens)) => Some(Box::new(tokens)),
                _ => Some(Box::new(witness::tokens())),
            };
            let roles = role_source(&program, e, options);
            if let Some(grants) = changed_grants(&program, e, options) {
                recorded_roles.insert(spec.identity(), grants);
            }
            let over_grpc = listener.transport == TransportKind::Grpc;
            let over_mcp = listener.transport == TransportKind::Mcp;
            let identity = spec.identity();
            // An exposure the demo derives (Public over MCP or gRPC) is
            // described as the program would be were it a serve site of it.
            let derived;
            let described = if program.exposures.contains(e) {
                &program
            } else {
                let mut with = program.clone();
                with.exposures.push(e.clone());
                derived = with;
                &derived
            };
            crate::program::serve_exposure(
                &mut server,
                crate::program::Served {
                    program: described,
                    exposure: e,
                    listener: id,
                    bound: &bound,
                    spec,
                    bearer,
                    roles: Box::new(roles),
                    workers: ids,
                },
                describer,
            )
            .map_err(|err| BootError(format!("hale demo: {err}")))?;
            let endpoint = match &bound {
                BoundAddress::Tcp(a) if over_mcp => format!("mcp://{a}"),
                BoundAddress::Tcp(a) if over_grpc => format!("grpc://{a}"),
                BoundAddress::Tcp(a) => format!("http://{a}"),
                BoundAddress::Unix(p) => format!("unix:{}", p.display()),
            };
            banner.push_str(&format!("  {identity:<42} {endpoint}\n"));
            endpoints.push((name.clone(), identity.clone(), bound.clone()));
            tries.push((name, endpoint));
        }
        if let Some(h) = hub.as_ref().and_then(|h| h.ws.as_ref()) {
            let endpoint = format!("ws://{}", h.bound);
            banner.push_str(&format!("  {:<42} {endpoint}\n", h.identity));
            endpoints.push(("fills".to_owned(), h.identity.clone(), h.bound.clone()));
        }
        let mut hub = hub;
        if options.hub_desk {
            let Some(served) = hub.as_mut().filter(|h| h.ws.is_some()) else {
                return Err(BootError(
                    "hale demo: --hub-desk serves Public over the WebSocket hub: give --hub ADDR"
                        .into(),
                ));
            };
            let identity = serve_desk(
                &mut server,
                options.control.is_some(),
                &mut workers,
                &instances,
                served,
                options.bound,
                describer,
            )?;
            let ws = served.ws.as_ref().map(|w| w.bound.clone());
            if let Some(bound) = ws {
                banner.push_str(&format!("  {identity:<42} ws://{bound}\n"));
                endpoints.push(("desk".to_owned(), identity, bound));
            }
        }
        if let Some(h) = hub.as_ref().and_then(|h| h.udp.as_ref()) {
            let endpoint = format!("udp://{}", h.bound);
            banner.push_str(&format!("  {:<42} {endpoint}\n", h.identity));
            endpoints.push(("fills-udp".to_owned(), h.identity.clone(), h.bound.clone()));
        }
        if let Some(unknown) = options
            .max_connections
            .keys()
            .find(|n| !endpoints.iter().any(|(name, _, _)| name == *n))
        {
            return Err(BootError(format!(
                "hale demo: --max-connections {unknown}=…: no listener is named {unknown}"
            )));
        }
        banner.push_str("try:\n");
        for (name, endpoint) in &tries {
            if let Some(addr) = endpoint.strip_prefix("grpc://") {
                // No Hale client speaks gRPC (§ The clients): a stub from
                // the exported .proto, or grpcurl, with the .proto or
                // through server reflection.
                banner.push_str(
                    "  hale api export conformance/programs/desk.hl --surface Public --out public-api   (writes Public.proto)\n",
                );
                banner.push_str(&format!(
                    "  grpcurl -plaintext -import-path public-api -proto Public.proto -H 'authorization: Bearer t-alice' -d '{{\"symbol\":\"ACME\",\"qty\":10,\"limit\":12500}}' {addr} Public/Orders__place\n"
                ));
                banner.push_str(
                    "  (application/grpc and +proto speak Public.proto's messages, application/grpc+json the rows' JSON; POST /Public/Orders__place)\n",
                );
                banner.push_str(&format!(
                    "  grpcurl -plaintext -H 'authorization: Bearer t-alice' {addr} describe Public   (server reflection, v1 and v1alpha)\n"
                ));
            } else if let Some(addr) = endpoint.strip_prefix("mcp://") {
                banner.push_str(&format!(
                    "  hale mcp --app {endpoint} --bearer t-alice   (an MCP server on stdio)\n"
                ));
                banner.push_str(&format!(
                    "  curl -s -H 'Authorization: Bearer t-alice' -d '{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}}' http://{addr}/mcp\n"
                ));
            } else if endpoint.starts_with("http") {
                let token = if name == "partner" {
                    "t-carol"
                } else {
                    "t-alice"
                };
                banner.push_str(&format!("  hale describe {endpoint} --bearer {token}\n"));
                banner.push_str(&format!(
                    "  hale call {endpoint} Orders::place --symbol ACME --qty 10 --limit 12500 --bearer {token}\n"
                ));
                banner.push_str(&format!(
                    "  curl -s -H 'Authorization: Bearer {token}' -d '{{\"symbol\":\"ACME\",\"qty\":10,\"limit\":12500}}' {endpoint}/call/Orders::place\n"
                ));
            } else {
                banner.push_str(&format!("  hale describe {endpoint}\n"));
                banner.push_str(&format!(
                    "  hale call {endpoint} Orders::cancel --order 41\n"
                ));
            }
        }
        if let Some(h) = hub.as_ref().and_then(|h| h.udp.as_ref()) {
            banner.push_str(&format!(
                "  echo '{{\"type\": \"subscribe\", \"topic\": \"Fills\", \"id\": 1, \"token\": \"t-dave\"}}' | socat - UDP:{}   (then place an order)\n",
                h.bound
            ));
        }
        if let Some(h) = hub.as_ref().and_then(|h| h.ws.as_ref()) {
            let addr = &h.bound;
            banner.push_str(&format!(
                "  curl -s -H 'Authorization: Bearer t-dave' http://{addr}/.description\n"
            ));
            banner.push_str(&format!(
                "  python3 -m websockets 'ws://{addr}/?access_token=t-dave'   then send {{\"type\": \"subscribe\", \"topic\": \"Fills\"}} and place an order\n"
            ));
            if options.hub_desk {
                banner.push_str(
                    "  (and on the same connection {\"type\": \"call\", \"id\": \"c1\", \"call\": \"Orders::place\", \"payload\": {\"symbol\": \"ACME\", \"qty\": 10, \"limit\": 12500}})\n",
                );
            }
        }
        banner.push_str("stop with Ctrl-C\n");
        if let Some(dir) = &options.record {
            let writer = record::RecordWriter::new(dir, recorded_roles);
            writer.write_program(witness::DESK).map_err(|err| {
                BootError(format!(
                    "hale demo: cannot record into {}: {err}",
                    dir.display()
                ))
            })?;
            server.set_recorder(Box::new(writer));
        }
        let control = match &options.control {
            None => None,
            Some(path) => {
                let _ = std::fs::remove_file(path);
                let listener = StdUnixListener::bind(path).map_err(|err| {
                    BootError(format!(
                        "hale demo: cannot bind the control socket {}: {err}",
                        path.display()
                    ))
                })?;
                Some((listener, path.clone(), workers))
            }
        };
        Ok(Demo {
            server,
            banner,
            endpoints,
            control,
            hub,
        })
    }

    /// Each exposure served: its name, its identity and where it is bound.
    pub fn endpoints(&self) -> &[(String, String, BoundAddress)] {
        &self.endpoints
    }

    /// What the demo serves and the commands to try.
    pub fn banner(&self) -> &str {
        &self.banner
    }

    /// A handle that stops the demo.
    pub fn stop_handle(&self) -> StopHandle {
        self.server.stop_handle()
    }

    /// Serves until stopped. The hub, when served, runs on a thread of its
    /// own and stops once the exposures have: `closed` to each of its
    /// connections after what was queued for it.
    pub fn run(mut self) -> std::io::Result<()> {
        if let Some((listener, path, instances)) = self.control.take() {
            let stop = self.server.stop_handle();
            let hub = self.hub.as_ref().map(|h| h.control.clone());
            std::thread::Builder::new()
                .name("hale demo control".into())
                .spawn(move || control_loop(listener, &path, instances, stop, hub))?;
        }
        let mut hubs = Vec::new();
        if let Some(h) = self.hub.take() {
            if let Some(ws) = h.ws {
                hubs.push(HubRun {
                    name: "hale hub".into(),
                    handle: ws.handle,
                    run: Box::new(move || ws.server.run()),
                });
            }
            if let Some(udp) = h.udp {
                hubs.push(HubRun {
                    name: "hale udp hub".into(),
                    handle: udp.handle,
                    run: Box::new(move || udp.server.run()),
                });
            }
        }
        self.server.run_with(hubs)
    }
}

/// Serves `desk` over the hub `served.ws`: its calls admitted by an
/// exposure under the hub's own sources (the control socket's revoke and
/// expire reach calls too), answered by public's `Orders` worker. Returns
/// its identity.
fn serve_desk(
    server: &mut Server,
    gated: bool,
    workers: &mut BTreeMap<String, Instance>,
    instances: &witness::Instances,
    served: &mut hub::ServedHubs,
    bound: Option<usize>,
    describer: &DescriberFactory,
) -> Result<String, BootError> {
    let program = hub_desk_program();
    let fail = |err: String| BootError(format!("hale demo: cannot serve desk: {err}"));
    let e = program
        .exposure("desk")
        .cloned()
        .ok_or_else(|| fail("the program serves no desk".into()))?;
    let mut spec = exposure_spec(&program, &e, "ws").map_err(|err| fail(err.to_string()))?;
    if let Some(bound) = bound {
        spec.bound = bound;
    }
    spec.limits.dispatch_ahead = crate::serve::DISPATCH_AHEAD;
    let mut ids = Vec::new();
    for r in &spec.receivers {
        ids.push(instance_worker(server, gated, workers, instances, r)?);
    }
    let codec = ShapeCodec::new(&program, &e).map_err(|err| fail(err.to_string()))?;
    let Some(ws) = served.ws.as_mut() else {
        return Err(fail("no WebSocket hub is served".into()));
    };
    let docs = describer(&program, &e, &ws.bound).map_err(fail)?;
    let identity = spec.identity();
    let exposure = Exposure::new(
        spec,
        Some(Box::new(served.control.tokens.clone())),
        Box::new(served.control.roles.clone()),
        Box::new(codec),
        docs,
    );
    server
        .serve_hub(&mut ws.server, exposure, ids)
        .map_err(|err| fail(err.to_string()))?;
    Ok(identity)
}

/// The worker of receiver instance `r` (`self.orders`), started the first
/// time an exposure names it: every exposure bound to an instance shares
/// its one worker, which runs one call at a time. Only `gated` (a control
/// socket can hold it shut) is it a worker thread; otherwise it runs
/// inline on the loop that owns its exposures.
fn instance_worker(
    server: &mut Server,
    gated: bool,
    workers: &mut BTreeMap<String, Instance>,
    instances: &witness::Instances,
    r: &str,
) -> Result<WorkerId, BootError> {
    if let Some(i) = workers.get(r) {
        return Ok(i.worker);
    }
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let inner = instances
        .receiver(r)
        .ok_or_else(|| BootError(format!("hale demo: no implementation of {r}")))?;
    let failed = r.to_owned();
    let on_failure: crate::serve::worker::OnFailure = Arc::new(move |_| {
        // The Desk's on_failure counts the failure and lets
        // execution return.
        eprintln!("hale demo: {failed} violated a closure; on_failure ran");
        Supervision::Absorb
    });
    let worker = if gated {
        // A control socket can hold the gate shut: the receiver may block,
        // so it gets a worker thread of its own.
        server
            .add_worker(r, 1, Box::new(Gated::new(inner, gate.clone())), on_failure)
            .map_err(|err| BootError(format!("hale demo: cannot start a worker: {err}")))?
    } else {
        // The witness's handlers compute and return: run inline.
        server
            .add_inline_receiver(r, 1, inner, on_failure)
            .map_err(|err| BootError(format!("hale demo: cannot start a worker: {err}")))?
    };
    workers.insert(r.to_owned(), Instance { worker, gate });
    Ok(worker)
}

/// The role source of an exposure: its `Grants` literal, with the Unix
/// exposure's `operator` granted to the current user (or `--operator`).
fn role_source(program: &Program, e: &ModelExposure, options: &DemoOptions) -> RoleTable {
    served_grants(program, e, options)
        .into_iter()
        .fold(RoleTable::new(), |t, (role, holder)| {
            t.grant(&holder, &role)
        })
}

/// The (role, principal name) pairs of an exposure's role source as the
/// demo serves it: the program's literal, with the Unix exposure's
/// `operator` the current user (or `--operator`).
fn served_grants(
    program: &Program,
    e: &ModelExposure,
    options: &DemoOptions,
) -> Vec<(String, String)> {
    let Source::Param { param, .. } = &e.roles else {
        return Vec::new();
    };
    let written = witness::grant_pairs(program, param);
    if e.principals != Source::Kernel {
        return written;
    }
    let me = format!("uid:{}", rustix::process::getuid().as_raw());
    let operator = options.operator.clone().unwrap_or(me);
    written
        .into_iter()
        .map(|(role, holder)| {
            let holder = if role == "operator" {
                operator.clone()
            } else {
                holder
            };
            (role, holder)
        })
        .collect()
}

/// The grants the demo's role source for `e` holds where they differ from
/// the program's literal, as a record's `scenario.roles` states them:
/// `{"admin_roles": {"operator": "uid:1001"}}`.
fn changed_grants(
    program: &Program,
    e: &ModelExposure,
    options: &DemoOptions,
) -> Option<serde_json::Value> {
    let Source::Param { param, .. } = &e.roles else {
        return None;
    };
    let written = witness::grant_pairs(program, param);
    let mut changed = serde_json::Map::new();
    for (role, holder) in served_grants(program, e, options) {
        if !written.iter().any(|(r, h)| *r == role && *h == holder) {
            changed.insert(role, holder.into());
        }
    }
    (!changed.is_empty()).then(|| serde_json::json!({ param.clone(): changed }))
}

/// Control lines: `gate|open|drain|resume <instance>` and `stop`, and
/// with a hub `revoke|grant <principal> <role>`, `expire <token> <ms>` and
/// `hub` (its counts: `ok events=E subscribers=S connections=C`)
/// ([`hub::HubControl`]); each is answered `ok` or `error: …`.
fn control_loop(
    listener: StdUnixListener,
    path: &Path,
    instances: BTreeMap<String, Instance>,
    stop: StopHandle,
    hub: Option<hub::HubControl>,
) {
    let find = |name: &str| {
        instances
            .get(name)
            .or_else(|| instances.get(&format!("self.{name}")))
    };
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        let Ok(mut out) = conn.try_clone() else {
            continue;
        };
        for line in BufReader::new(conn).lines() {
            let Ok(line) = line else { break };
            let mut words = line.split_whitespace();
            let verb = words.next().unwrap_or("");
            let rest: Vec<&str> = words.clone().collect();
            let target = words.next().and_then(&find);
            if let ("hub", Some(h)) = (verb, hub.as_ref()) {
                if out
                    .write_all(format!("{}\n", h.report()).as_bytes())
                    .is_err()
                {
                    break;
                }
                continue;
            }
            let for_hub = hub.as_ref().and_then(|h| h.handle(verb, &rest));
            let answer = match (verb, target) {
                _ if for_hub.is_some() => for_hub.unwrap_or(Ok(())),
                // Answered before they act: each may let the demo finish
                // stopping, and its process end, at once.
                ("stop", _) => {
                    if out.write_all(b"ok\n").is_err() {
                        break;
                    }
                    stop.stop();
                    continue;
                }
                ("open", Some(i)) => {
                    if out.write_all(b"ok\n").is_err() {
                        break;
                    }
                    let (closed, wake) = &*i.gate;
                    *closed.lock().expect("gate") = false;
                    wake.notify_all();
                    continue;
                }
                ("gate", Some(i)) => {
                    *i.gate.0.lock().expect("gate") = true;
                    Ok(())
                }
                ("drain", Some(i)) => {
                    stop.command(Command::Drain(i.worker));
                    Ok(())
                }
                ("resume", Some(i)) => {
                    stop.command(Command::Resume(i.worker));
                    Ok(())
                }
                _ => Err(format!("unknown control `{line}`")),
            };
            let reply = match answer {
                Ok(()) => "ok\n".to_owned(),
                Err(e) => format!("error: {e}\n"),
            };
            if out.write_all(reply.as_bytes()).is_err() {
                break;
            }
        }
    }
    let _ = std::fs::remove_file(path);
}
