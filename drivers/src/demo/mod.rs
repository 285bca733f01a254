//! `hale demo`: the witness program served with its loci implemented in
//! Rust, the first thing a new user runs.
//!
//! It is `hale serve` of the witness ([`Application::boot`], the one
//! serving path): `conformance/programs/desk.hl` — public and partner over
//! HTTP, admin over a Unix socket — with the witness's own receivers given
//! in process ([`witness::Instances`], run inline on the loops unless a
//! control socket can gate them) and its identity sources written from the
//! program's literals (`Tokens`, each `Grants`). What the demo adds are
//! options of that path: with [`DemoOptions::mcp`] it also serves Public
//! over MCP as the exposure `mcp`, bound to public's own `Orders` instance
//! and under public's sources (the program declares no MCP serve site, so
//! the demo derives it from public's: [`mcp_exposure`]); with
//! [`DemoOptions::grpc`] it serves Public over gRPC the same way, as the
//! exposure `grpc` ([`grpc_exposure`], both in limen-witness with the
//! handlers). Every address can be overridden (port 0 allowed), and the
//! admin operator is the current user unless `--operator` names another,
//! so it runs unprivileged and in tests. A control socket (`--control
//! PATH`, [`crate::program::control`]) lets a test gate, drain and resume
//! receivers to provoke the outcomes that need the server's cooperation,
//! and `--record DIR` writes every exchange in the conformance record
//! format ([`record`]). The program's WebSocket hub `fills` is served only
//! with [`DemoOptions::hub`] (and over datagrams with
//! [`DemoOptions::udp_hub`]): every accepted `Orders::place` publishes its
//! fill there; with [`DemoOptions::hub_desk`] the hub also carries Public,
//! as the exposure `desk` ([`hub_desk_program`]).

pub mod record;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use limen_core::hale::model::{Exposure as ModelExposure, Program, Source, TransportKind};
use limen_core::hale::tools;
use limen_witness as witness;
use limen_witness::exposures::{grpc_exposure, hub_desk_program, mcp_exposure};

use crate::program::config::{ServeConfig, SourceConfig, Token};
use crate::program::{Application, Handlers, ServeOptions};
use crate::serve::{BoundAddress, StopHandle};

pub use crate::program::BootError;

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
    /// The NATS server through which the hub spans every demo naming it
    /// (`--broker nats://host:port`, [`crate::program::broker`]).
    pub broker: Option<String>,
    /// How long a stop drains first (`--drain-grace`; zero: at once).
    pub drain_grace: std::time::Duration,
}

/// A demo ready to run: listeners bound, exposures served, the banner
/// written.
pub struct Demo {
    app: Application,
    banner: String,
    endpoints: Vec<(String, String, BoundAddress)>,
}

impl std::fmt::Debug for Demo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Demo").finish_non_exhaustive()
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

/// The program's path as the banner and the commands it prints name it.
const FILE: &str = "conformance/programs/desk.hl";

impl Demo {
    /// Serves the witness with `options`: the program (with the exposures
    /// the options derive) booted by [`Application::boot`] with the
    /// witness's receivers.
    pub fn boot(options: &DemoOptions) -> Result<Demo, BootError> {
        let one = |e: String| BootError(vec![e]);
        let mut program = if options.hub_desk {
            if options.hub.is_none() {
                return Err(one(
                    "hale demo: --hub-desk serves Public over the WebSocket hub: give --hub ADDR"
                        .into(),
                ));
            }
            hub_desk_program()
        } else {
            witness::program()
        };
        // Served as the program would serve them were they serve sites of
        // it: their rows, sources and description are public's.
        let derived: Vec<ModelExposure> = options
            .mcp
            .as_deref()
            .and_then(|a| mcp_exposure(&program, a))
            .into_iter()
            .chain(
                options
                    .grpc
                    .as_deref()
                    .and_then(|a| grpc_exposure(&program, a)),
            )
            .collect();
        program.exposures.extend(derived);
        let hub = program
            .hubs
            .first()
            .and_then(|h| h.name())
            .unwrap_or_default()
            .to_owned();
        let mut binds = options.addresses.clone();
        binds
            .entry("admin".to_owned())
            .or_insert_with(|| default_socket().display().to_string());
        if let Some(address) = &options.hub {
            binds.insert(hub.clone(), address.clone());
        }
        let serve = ServeOptions {
            file: FILE.into(),
            config: sources(&program, options),
            binds,
            loops: options.loops,
            bound: options.bound,
            control: options.control.clone(),
            drain_grace: options.drain_grace,
            max_connections: options.max_connections.clone(),
            unserved: options
                .hub
                .is_none()
                .then(|| hub.clone())
                .into_iter()
                .collect(),
            udp_hubs: options
                .udp_hub
                .iter()
                .map(|a| (hub.clone(), a.clone()))
                .collect(),
            // The witness's handlers compute and return.
            inline: true,
            broker: options.broker.clone(),
            ..ServeOptions::default()
        };
        let instances = witness::Instances::new(&program);
        let handlers: Handlers = tools::instances(&program)
            .into_iter()
            .filter_map(|(name, _)| {
                let receiver = instances.receiver(&format!("self.{name}"))?;
                Some((name, receiver))
            })
            .collect();
        let mut app = Application::boot(&program, &serve, handlers)?;
        if app.serves_hubs() {
            // `Fills <- Fill { … }`: each accepted place publishes its fill,
            // held to the topic's shape as any publisher's is.
            let publisher = app.publisher();
            let sink = witness::FillSink(Arc::new(move |fill: &witness::Fill| {
                if let Err(e) = publisher.publish("Fills", &fill.to_json()) {
                    eprintln!("hale demo: a fill not published: {e}");
                }
            }));
            for orders in [&instances.orders, &instances.partner_orders] {
                orders.publish_to(sink.clone());
            }
        }
        let mut endpoints = app.endpoints().to_vec();
        // As the demo has always listed them: the program's exposures, the
        // derived ones, the hub, what it carries, its datagram listener.
        let order = [
            "public",
            "partner",
            "admin",
            "mcp",
            "grpc",
            &hub,
            "desk",
            &format!("{hub}-udp"),
        ];
        endpoints.sort_by_key(|(name, _, _)| order.iter().position(|n| n == name));
        if let Some(dir) = &options.record {
            let roles = endpoints
                .iter()
                .filter_map(|(name, identity, _)| {
                    let e = program.exposure(name)?;
                    Some((identity.clone(), changed_grants(&program, e, options)?))
                })
                .collect();
            let writer = record::RecordWriter::new(dir, roles);
            writer.write_program(witness::DESK).map_err(|err| {
                one(format!(
                    "hale demo: cannot record into {}: {err}",
                    dir.display()
                ))
            })?;
            app.record(Box::new(writer));
        }
        let banner = banner(&program, &hub, &endpoints, options);
        Ok(Demo {
            app,
            banner,
            endpoints,
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
        self.app.stop_handle()
    }

    /// Serves until stopped ([`Application::run`]). The hub, when served,
    /// runs on a thread of its own and stops once the exposures have:
    /// `closed` to each of its connections after what was queued for it.
    pub fn run(self) -> std::io::Result<()> {
        self.app.run()
    }
}

/// The identity sources the witness's params stand for, as a `serve.toml`
/// would write them: `Tokens` as its table, each `Grants` literal as its
/// grants ([`served_grants`]).
fn sources(program: &Program, options: &DemoOptions) -> ServeConfig {
    let mut config = ServeConfig::default();
    let tokens: BTreeMap<String, Token> = witness::token_pairs()
        .into_iter()
        .map(|(token, principal)| {
            (
                token,
                Token {
                    principal,
                    expires_ms: None,
                },
            )
        })
        .collect();
    let read = program
        .exposures
        .iter()
        .map(|e| (&e.principals, &e.roles, e.principals == Source::Kernel))
        .chain(
            program
                .hubs
                .iter()
                .map(|h| (&h.literal.principals, &h.literal.roles, false)),
        );
    for (principals, roles, kernel) in read {
        if let Source::Param { param, .. } = principals {
            let source = config.sources.entry(param.clone()).or_default();
            source.tokens = Some(tokens.clone());
            source.refused = Some(witness::REFUSED_TOKEN.to_owned());
        }
        if let Source::Param { param, .. } = roles {
            let source: &mut SourceConfig = config.sources.entry(param.clone()).or_default();
            let grants = source.grants.get_or_insert_with(BTreeMap::new);
            for (role, holder) in served_grants(program, param, kernel, options) {
                let holders = grants.entry(role).or_default();
                if !holders.contains(&holder) {
                    holders.push(holder);
                }
            }
        }
    }
    config
}

/// The (role, principal name) pairs of the role source `param` as the
/// demo serves it: the program's literal, with `operator` the current user
/// (or `--operator`) where a Unix exposure (`kernel`) reads it.
fn served_grants(
    program: &Program,
    param: &str,
    kernel: bool,
    options: &DemoOptions,
) -> Vec<(String, String)> {
    let written = witness::grant_pairs(program, param);
    if !kernel {
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
    let kernel = e.principals == Source::Kernel;
    for (role, holder) in served_grants(program, param, kernel, options) {
        if !written.iter().any(|(r, h)| *r == role && *h == holder) {
            changed.insert(role, holder.into());
        }
    }
    (!changed.is_empty()).then(|| serde_json::json!({ param.clone(): changed }))
}

/// What the demo serves, each exposure's identity and address, and the
/// commands to try against the witness.
fn banner(
    program: &Program,
    hub: &str,
    endpoints: &[(String, String, BoundAddress)],
    options: &DemoOptions,
) -> String {
    let mut banner = format!("hale demo: serving {FILE}, the witness program\n");
    let mut tries = Vec::new();
    let (mut ws, mut udp) = (None, None);
    for (name, identity, bound) in endpoints {
        let transport = match program.exposure(name) {
            Some(e) => e.listener.as_ref().map(|l| l.transport.clone()),
            None if name == hub => Some(TransportKind::Ws),
            None => Some(TransportKind::Udp),
        }
        .unwrap_or(TransportKind::Http);
        let endpoint = crate::program::endpoint(bound, &transport);
        banner.push_str(&format!("  {identity:<42} {endpoint}\n"));
        match transport {
            TransportKind::Ws if name == hub => ws = Some(bound.clone()),
            TransportKind::Udp => udp = Some(bound.clone()),
            TransportKind::Ws => {}
            _ => tries.push((name.clone(), endpoint)),
        }
    }
    banner.push_str("try:\n");
    for (name, endpoint) in &tries {
        if let Some(addr) = endpoint.strip_prefix("grpc://") {
            // No Hale client speaks gRPC (§ The clients): a stub from
            // the exported .proto, or grpcurl, with the .proto or
            // through server reflection.
            banner.push_str(&format!(
                "  hale api export {FILE} --surface Public --out public-api   (writes Public.proto)\n"
            ));
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
            if name == "public" {
                banner.push_str(&format!(
                    "  hale admin {endpoint} --bearer {token}   (a page to drive it from a browser)\n"
                ));
            }
        } else {
            banner.push_str(&format!("  hale describe {endpoint}\n"));
            banner.push_str(&format!(
                "  hale call {endpoint} Orders::cancel --order 41\n"
            ));
        }
    }
    if let Some(bound) = udp {
        banner.push_str(&format!(
            "  echo '{{\"type\": \"subscribe\", \"topic\": \"Fills\", \"id\": 1, \"token\": \"t-dave\"}}' | socat - UDP:{bound}   (then place an order)\n"
        ));
    }
    if let Some(addr) = ws {
        banner.push_str(&format!(
            "  curl -s -H 'Authorization: Bearer t-dave' http://{addr}/.description\n"
        ));
        banner.push_str(&format!(
            "  python3 -m websockets 'ws://{addr}/?access_token=t-dave'   then send {{\"type\": \"subscribe\", \"topic\": \"Fills\"}} and place an order\n"
        ));
        banner.push_str(&format!(
            "  hale admin ws://{addr} --token t-dave   (a page with a live tail of Fills)\n"
        ));
        if options.hub_desk {
            banner.push_str(
                "  (and on the same connection {\"type\": \"call\", \"id\": \"c1\", \"call\": \"Orders::place\", \"payload\": {\"symbol\": \"ACME\", \"qty\": 10, \"limit\": 12500}})\n",
            );
        }
    }
    banner.push_str("stop with Ctrl-C\n");
    banner
}
