//! The `hale` command line as `clap` reads it: every command, its flags and
//! their help, its version and its usage errors. The commands' own files
//! run what was read; they, and the operator's verbs in [`crate::client`],
//! take these from here, below the dispatch in [`super::main`] that calls
//! them.

use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand};

/// The exit status of a usage error.
pub const USAGE_EXIT: i32 = 5;

/// The version `hale` writes in a bundle's `DIGEST`.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "+limen");

/// The port `hale admin` serves its page on unless `--port` says (§ The
/// clients: 7473).
pub const DEFAULT_ADMIN_PORT: u16 = 7473;

/// Where `hale demo` serves Public over MCP unless `--mcp` says.
pub const DEFAULT_MCP: &str = "127.0.0.1:8090";

/// Prints a usage error of the command at `path` (`["api", "export"]`)
/// with its usage line, and returns its exit status.
pub fn usage(path: &[&str], message: &str) -> i32 {
    crate::cli_support::usage_error(Cli::command(), path, message);
    USAGE_EXIT
}

/// `hale`: Hale API surfaces from the command line.
#[derive(Debug, Parser)]
#[command(
    name = "hale",
    version = VERSION,
    about = "Hale API surfaces from the command line: check a program, print its documents, \
             export a surface's bundle, serve the witness program, drive a served exposure.",
    after_help = "`hale demo` serves the witness program and prints a tour of what to try.\n\
                  Every command has its own --help.",
    subcommand_required = true
)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// `hale`'s commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check a Hale program; with --api, print a document from its rows.
    Check(CheckArgs),
    /// Serve the witness program on its embedded default.
    Demo(DemoArgs),
    /// Serve a program, its receivers answered by the handlers serve.toml names.
    Serve(ServeArgs),
    /// The API verbs: a surface's bundle, a served exposure's description, one call.
    #[command(subcommand)]
    Api(ApiCommand),
    /// Short form of `hale api describe` (a bare path is unix:PATH).
    Describe(DescribeArgs),
    /// Short form of `hale api call` (a bare path is unix:PATH, a bare payload is --json).
    Call(CallArgs),
    /// Subscribe to a stream of a hub and print each frame as one JSON line.
    Watch(WatchArgs),
    /// Serve a page on 127.0.0.1 to drive a served exposure: its members' forms and its streams' tails.
    Admin(AdminArgs),
    /// Publish an event on a topic of a program `hale serve` serves, through its control socket.
    Publish(PublishArgs),
    /// An MCP server on stdio: to a served exposure with --app, else to the toolchain.
    Mcp(McpArgs),
    /// Print a shell completion script.
    Completions(CompletionsArgs),
}

/// `hale api`'s verbs.
#[derive(Debug, Subcommand)]
pub enum ApiCommand {
    /// Write a surface's bundle to a folder, or hold it against a committed copy.
    Export(ExportArgs),
    /// Read the description a served exposure gives this caller.
    Describe(DescribeArgs),
    /// Call one member of a served exposure; the exit status is the outcome.
    Call(CallArgs),
    /// Print a locus's rows as Flow Tool declarations (a `flow tools` listing).
    Tools(ToolsArgs),
    /// Write a client of a surface in Hale, TypeScript or Python, or hold a committed one.
    Client(ClientArgs),
}

/// `hale check [--api …] FILE`.
#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 checked (and the document printed), 1 the check or the \
                        document failed (the reason on stderr), 5 usage."
)]
pub struct CheckArgs {
    /// Print a document from the API rows: the inventory unless
    /// --exposure/--caller or --surface with a form say which.
    #[arg(long)]
    pub api: bool,
    /// The exposure to describe (with --caller).
    #[arg(long, value_name = "NAME", requires = "api")]
    pub exposure: Option<String>,
    /// The caller the description is for: a principal's name, or its JSON.
    #[arg(long, value_name = "PRINCIPAL", requires = "api")]
    pub caller: Option<String>,
    /// The roles the caller holds, comma-separated.
    #[arg(long, value_name = "ROLE,…", requires = "api")]
    pub holds: Option<String>,
    /// The surface to project (with one of the forms).
    #[arg(long, value_name = "NAME", requires = "api")]
    pub surface: Option<String>,
    /// Project the surface as OpenAPI.
    #[arg(long, requires = "api")]
    pub openapi: bool,
    /// Project the surface as JSON Schema.
    #[arg(long = "json-schema", requires = "api")]
    pub json_schema: bool,
    /// Project the surface as MCP tools.
    #[arg(long, requires = "api")]
    pub mcp: bool,
    /// Project the surface as protobuf.
    #[arg(long, requires = "api")]
    pub proto: bool,
    /// The Hale program.
    #[arg(value_name = "FILE")]
    pub file: String,
}

/// `hale api export --surface NAME (--out DIR | --check DIR) FILE`.
#[derive(Debug, Args)]
#[command(after_help = "Exit status: 0 written (or current), 1 drift or a failure, 5 usage.")]
pub struct ExportArgs {
    /// The surface whose bundle this is.
    #[arg(long, value_name = "NAME", required = true)]
    pub surface: String,
    /// Write the bundle into DIR.
    #[arg(
        long,
        value_name = "DIR",
        required_unless_present = "check",
        conflicts_with = "check"
    )]
    pub out: Option<PathBuf>,
    /// Hold the bundle committed in DIR against the one the surface now generates.
    #[arg(long, value_name = "DIR")]
    pub check: Option<PathBuf>,
    /// The Hale program.
    #[arg(value_name = "FILE")]
    pub file: String,
}

/// `hale api client --surface NAME --lang hale|ts|python [--out FILE | --check FILE] FILE`.
#[derive(Debug, Args)]
#[command(
    after_help = "The client is a pure function of the surface's rows: the same program gives \
                        the same bytes on every run. Its first line names the digest it was made \
                        against; it sends that digest on every call, so a program that changed \
                        under it answers digest_mismatch. Exit status: 0 written (or current), 1 \
                        drift (naming the digest the committed client was made against) or a \
                        failure, 5 usage."
)]
pub struct ClientArgs {
    /// The surface whose client this is.
    #[arg(long, value_name = "NAME")]
    pub surface: String,
    /// The language: hale, ts or python.
    #[arg(long, value_name = "LANG", value_parser = ["hale", "ts", "python"])]
    pub lang: String,
    /// Write the client to FILE (stdout without it).
    #[arg(long, value_name = "FILE", conflicts_with = "check")]
    pub out: Option<PathBuf>,
    /// Hold the client committed in FILE against the one the surface now generates.
    #[arg(long, value_name = "FILE")]
    pub check: Option<PathBuf>,
    /// The Hale program.
    #[arg(value_name = "PROGRAM")]
    pub file: String,
}

/// `hale api tools --locus NAME FILE`.
#[derive(Debug, Args)]
#[command(
    after_help = "The listing is what a handler process for the locus's receivers \
                        implements under `hale serve`: one Tool per row, named by the row's \
                        function, its argument the request, its result the response, its \
                        error the row's. `flow toolkit rust|python|typescript LISTING` \
                        generates an implementation's types and interface from it. Exit status: 0 printed, 1 the \
                        program does not check or the locus has no rows, 5 usage."
)]
pub struct ToolsArgs {
    /// The locus whose rows to list (`Orders`).
    #[arg(long, value_name = "NAME")]
    pub locus: String,
    /// The Hale program.
    #[arg(value_name = "FILE")]
    pub file: String,
}

/// `hale publish SOCKET TOPIC JSON`.
#[derive(Debug, Args)]
#[command(
    after_help = "The control socket is the one `hale serve --control PATH` opened; the \
                        payload is held to the topic's shape before it is offered to every \
                        hub that streams the topic. Exit status: 0 published, 1 refused (the \
                        reason on stderr), 4 the socket could not be reached, 5 usage."
)]
pub struct PublishArgs {
    /// The served program's control socket.
    #[arg(value_name = "SOCKET")]
    pub socket: PathBuf,
    /// The topic, as the program declares it.
    #[arg(value_name = "TOPIC")]
    pub topic: String,
    /// The event's payload, JSON (`-` reads it from standard input).
    #[arg(value_name = "JSON")]
    pub payload: String,
}

/// `hale watch WS-ENDPOINT TOPIC [--token T]`.
#[derive(Debug, Args)]
#[command(
    after_help = "The hub's description is read first: a topic it does not list for this \
                        caller is refused. Exit status: 0 the hub closed (closed), 1 a refusal, \
                        an unauthorized frame or a topic not listed, 4 a transport failure, \
                        5 usage."
)]
pub struct WatchArgs {
    /// The hub's listener, ws://host:port.
    #[arg(value_name = "WS-ENDPOINT")]
    pub endpoint: String,
    /// The topic to subscribe to.
    #[arg(value_name = "TOPIC")]
    pub topic: String,
    /// The bearer token (else HALE_API_TOKEN).
    #[arg(long, value_name = "T")]
    pub token: Option<String>,
}

/// `hale admin ENDPOINT [--port P] [--bearer T | --token T]`.
#[derive(Debug, Args)]
#[command(
    after_help = "Prints one line: the page's URL, carrying the launch token. Only a request \
                        carrying that token (the cookie the URL sets), addressed to the page's \
                        own Host and from its own Origin, is served; the page, its script and \
                        style are built in and load nothing from elsewhere. Every action on the \
                        page is one request to the endpoint; a call names the digest of the \
                        description the page displays. It serves until stopped (Ctrl-C). Exit \
                        status: 2 the port could not be bound, 5 usage."
)]
pub struct AdminArgs {
    /// The exposure: unix:PATH (or a bare path), http://host:port, or a
    /// hub's ws://host:port (its streams, and its members when it carries
    /// a surface).
    #[arg(value_name = "ENDPOINT")]
    pub endpoint: String,
    /// The page's port on 127.0.0.1; 0 picks a free one.
    #[arg(long, value_name = "P", default_value_t = DEFAULT_ADMIN_PORT)]
    pub port: u16,
    /// The bearer presented to the endpoint (else HALE_API_BEARER).
    #[arg(long, value_name = "T", conflicts_with = "token")]
    pub bearer: Option<String>,
    /// The same as --bearer, as hale watch names it (else HALE_API_TOKEN).
    #[arg(long, value_name = "T")]
    pub token: Option<String>,
}

/// `hale demo …`.
#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 stopped, 2 a listener could not bind, 5 usage. \
                        Ctrl-C stops it in order."
)]
pub struct DemoArgs {
    /// Where Public listens (HTTP).
    #[arg(long, value_name = "ADDR")]
    pub public: Option<String>,
    /// Where Partner listens (HTTP).
    #[arg(long, value_name = "ADDR")]
    pub partner: Option<String>,
    /// The Unix socket Admin listens on.
    #[arg(long = "admin-socket", value_name = "PATH")]
    pub admin_socket: Option<String>,
    /// Where Public is served over MCP.
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_MCP)]
    pub mcp: String,
    /// Where Public is served over gRPC (HTTP/2, prior knowledge); not
    /// served unless given.
    #[arg(long, value_name = "ADDR")]
    pub grpc: Option<String>,
    /// Where the program's WebSocket hub `fills` listens (none unless
    /// given); every accepted Orders::place publishes its fill there.
    #[arg(long, value_name = "ADDR")]
    pub hub: Option<String>,
    /// Where the same hub listens for datagrams (udp::Hub; none unless
    /// given). Serve it only on a network you trust: a datagram's source
    /// address can be forged, and a holder of a valid token can aim a
    /// subscription at another address (capped per caller and per host;
    /// answers are rate limited per host).
    #[arg(long = "udp-hub", value_name = "ADDR")]
    pub udp_hub: Option<String>,
    /// Serve Public over the WebSocket hub too, as the exposure `desk`
    /// (call frames answered by reply frames on the hub's connections,
    /// under the hub's sources); the witness serves no surface there, so
    /// this is off unless given.
    #[arg(long = "hub-desk", requires = "hub")]
    pub hub_desk: bool,
    /// The Unix peer who holds `operator` (the current user unless given).
    #[arg(long, value_name = "uid:N", value_parser = operator)]
    pub operator: Option<String>,
    /// A bound for every exposure, overriding the program's.
    #[arg(long, value_name = "N", value_parser = positive)]
    pub bound: Option<usize>,
    /// How many connection loops serve (one per core unless given).
    #[arg(long, value_name = "N", value_parser = loops)]
    pub loops: Option<usize>,
    /// The most connections one listener holds at once, as NAME=N (public,
    /// partner, admin, mcp, grpc); repeatable. Each listener counts its
    /// own; unless given, a TCP port holds 4096 and the admin socket 256,
    /// less where the descriptor limit would not allow them all.
    #[arg(long = "max-connections", value_name = "NAME=N", value_parser = named_cap)]
    pub max_connections: Vec<(String, usize)>,
    /// A control socket for tests: `hale serve --control`'s (gate, open,
    /// drain, resume, grant, revoke, expire, hub, broker, stop).
    #[arg(long, value_name = "PATH")]
    pub control: Option<PathBuf>,
    /// The NATS server through which the hub (`--hub`) spans every node
    /// naming it, as nats://host:port: `hale serve --broker`'s.
    #[arg(long, value_name = "nats://HOST:PORT", value_parser = broker_url)]
    pub broker: Option<String>,
    /// `hale serve --drain-grace`'s: SIGTERM (or the control `stop`) first
    /// answers the health checks 503 for this long, serving calls, then stops.
    #[arg(long = "drain-grace", value_name = "DURATION", value_parser = grace)]
    pub drain_grace: Option<std::time::Duration>,
    /// Write every exchange as a conformance record under DIR.
    #[arg(long, value_name = "DIR")]
    pub record: Option<PathBuf>,
}

/// `hale serve PROGRAM.hl [--config serve.toml] [--bind NAME=ADDR]… …`.
#[derive(Debug, Args)]
#[command(
    after_help = "Each receiver instance of the program (a param of its main locus that a \
                        serve site binds) is answered by the handler serve.toml gives it: \
                        `command = [...]`, a Flow Tool process whose Tools are held to the rows \
                        at boot, or `mcp = [...]`, an MCP server. Each source param the serve \
                        sites read is the table or file serve.toml writes for it.\n\n\
                        Exit status: 0 stopped (or, with --check-config, the configuration \
                        holds), 1 the program does not check, 2 the configuration, a handler \
                        or a listener failed at boot (every diagnostic on stderr), 5 usage. \
                        Ctrl-C and SIGTERM stop it in order; SIGHUP reads the identity files \
                        again."
)]
pub struct ServeArgs {
    /// The configuration: addresses, handlers, identity sources.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Where an exposure listens, by its `as:` name (port 0 and a socket
    /// path work); over the program's and the configuration's. Repeatable.
    #[arg(long, value_name = "NAME=ADDR", value_parser = named_address)]
    pub bind: Vec<(String, String)>,
    /// A grant added to a role source, as SOURCE.ROLE=HOLDER
    /// (`admin_roles.operator=uid:1000`). Repeatable.
    #[arg(long, value_name = "SOURCE.ROLE=HOLDER", value_parser = grant)]
    pub grant: Vec<(String, String, String)>,
    /// Check the program and the configuration, start each handler and
    /// hold its Tools to its rows, then exit without serving.
    #[arg(long = "check-config")]
    pub check_config: bool,
    /// A control socket (gate, open, drain, resume, grant, revoke,
    /// expire, reload, publish, hub, broker, stop); its file permissions
    /// are its access control.
    #[arg(long, value_name = "PATH")]
    pub control: Option<PathBuf>,
    /// The NATS server through which the program's hubs span every node
    /// naming it, as nats://host:port (over serve.toml's `broker`): events
    /// published on one node reach the subscribers of all, and a role
    /// source's change on one is made on all.
    #[arg(long, value_name = "nats://HOST:PORT", value_parser = broker_url)]
    pub broker: Option<String>,
    /// On SIGTERM, Ctrl-C or the control `stop`, drain for this long first
    /// (2s, 500ms; 0, the default, stops at once): the health checks
    /// (GET /.health, grpc.health.v1.Health/Check) answer 503 /
    /// NOT_SERVING while calls are still served, so a balancer takes the
    /// node out before stop() refuses its queue. Set it above the
    /// balancer's check interval times its fall count.
    #[arg(long = "drain-grace", value_name = "DURATION", value_parser = grace)]
    pub drain_grace: Option<std::time::Duration>,
    /// How many connection loops serve (one per core unless given).
    #[arg(long, value_name = "N", value_parser = loops)]
    pub loops: Option<usize>,
    /// A bound for every exposure, over the program's.
    #[arg(long, value_name = "N", value_parser = positive)]
    pub bound: Option<usize>,
    /// `calls`: one JSON line per call on standard error (exposure, member,
    /// caller, outcome, duration); `off`: none.
    #[arg(long, value_name = "off|calls", default_value = "calls", value_parser = ["off", "calls"])]
    pub log: String,
    /// Serve metrics in the Prometheus text format at http://ADDR/metrics.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
    /// The Hale program.
    #[arg(value_name = "PROGRAM")]
    pub file: String,
}

fn named_address(v: &str) -> Result<(String, String), String> {
    match v.split_once('=') {
        Some((name, addr)) if !name.is_empty() && !addr.is_empty() => {
            Ok((name.to_owned(), addr.to_owned()))
        }
        _ => Err(format!("is NAME=ADDR (public=127.0.0.1:0), not `{v}`")),
    }
}

fn broker_url(v: &str) -> Result<String, String> {
    crate::program::broker::parse_url(v).map(|_| v.to_owned())
}

fn grant(v: &str) -> Result<(String, String, String), String> {
    let parsed = v.split_once('=').and_then(|(left, holder)| {
        let (source, role) = left.split_once('.')?;
        (!source.is_empty() && !role.is_empty() && !holder.is_empty())
            .then(|| (source.to_owned(), role.to_owned(), holder.to_owned()))
    });
    parsed
        .ok_or_else(|| format!("is SOURCE.ROLE=HOLDER (admin_roles.operator=uid:1000), not `{v}`"))
}

fn operator(v: &str) -> Result<String, String> {
    match v.strip_prefix("uid:").map(str::parse::<u32>) {
        Some(Ok(_)) => Ok(v.to_owned()),
        _ => Err(format!("names a Unix peer as uid:<n>, not `{v}`")),
    }
}

fn positive(v: &str) -> Result<usize, String> {
    v.parse::<usize>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("is a positive integer, not `{v}`"))
}

fn named_cap(v: &str) -> Result<(String, usize), String> {
    v.split_once('=')
        .and_then(|(name, n)| Some((name.to_owned(), positive(n).ok()?)))
        .filter(|(name, _)| !name.is_empty())
        .ok_or_else(|| format!("is NAME=N (a listener and a positive count), not `{v}`"))
}

/// A grace as `2s`, `500ms` or `0`: at most an hour.
fn grace(v: &str) -> Result<std::time::Duration, String> {
    let parsed = if v == "0" {
        Some(std::time::Duration::ZERO)
    } else if let Some(ms) = v.strip_suffix("ms") {
        ms.parse::<u64>().ok().map(std::time::Duration::from_millis)
    } else if let Some(s) = v.strip_suffix('s') {
        s.parse::<u64>().ok().map(std::time::Duration::from_secs)
    } else {
        None
    };
    parsed
        .filter(|d| d.as_secs() <= 3600)
        .ok_or_else(|| format!("is a duration as 2s or 500ms (at most 3600s), not `{v}`"))
}

fn loops(v: &str) -> Result<usize, String> {
    v.parse::<usize>()
        .ok()
        .filter(|n| (1..=1024).contains(n))
        .ok_or_else(|| format!("is a number of loops from 1 to 1024, not `{v}`"))
}

/// `describe <endpoint> [--json] [--bearer T]`.
#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 described, 2 refused, 4 nothing answered as an \
                        exposure, 5 usage. The bearer is --bearer, else HALE_API_BEARER."
)]
pub struct DescribeArgs {
    /// unix:PATH or http://host:port.
    #[arg(value_name = "ENDPOINT")]
    pub endpoint: String,
    /// Print the document as the exposure wrote it, not the readable rendering.
    #[arg(long)]
    pub json: bool,
    /// The bearer token (HTTP).
    #[arg(long, value_name = "T")]
    pub bearer: Option<String>,
}

/// `call <endpoint> <member> [payload] …`. The payload's typed flags
/// (`--<field> <value>`) are the member's own, read against its
/// description: they and everything after them are read by the verb.
#[derive(Debug, Args)]
#[command(
    after_help = "The payload is --json '<payload>', --json - (stdin), or one typed flag \
                        per field (--<field> <value>) read against the member's request schema.\n\
                        Exit status: 0 a result, 1 a handler error, 2 a refusal, 3 the server \
                        error, 4 a transport failure, 5 usage."
)]
pub struct CallArgs {
    /// unix:PATH or http://host:port.
    #[arg(value_name = "ENDPOINT")]
    pub endpoint: String,
    /// The member, e.g. Orders::place.
    #[arg(value_name = "MEMBER")]
    pub member: String,
    /// The payload as JSON, or - to read it from stdin.
    #[arg(long, value_name = "PAYLOAD", allow_hyphen_values = true)]
    pub json: Option<String>,
    /// The bearer token (HTTP).
    #[arg(long, value_name = "T")]
    pub bearer: Option<String>,
    /// The request's id.
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,
    /// The surface digest the call is written against (the description's unless given).
    #[arg(long, value_name = "D")]
    pub digest: Option<String>,
    /// Print the wire outcome as it came, on stdout.
    #[arg(long)]
    pub raw: bool,
    /// A bare payload (short form), then the typed flags: --FIELD VALUE …
    #[arg(
        value_name = "--FIELD VALUE",
        trailing_var_arg = true,
        allow_hyphen_values = true,
        num_args = 0..
    )]
    pub rest: Vec<String>,
}

impl CallArgs {
    /// The arguments as the verb reads them: the positional ones, the
    /// flags `clap` read written back inline, then the rest.
    pub fn words(&self) -> Vec<String> {
        let mut words = vec![self.endpoint.clone(), self.member.clone()];
        for (flag, value) in [
            ("json", &self.json),
            ("bearer", &self.bearer),
            ("id", &self.id),
            ("digest", &self.digest),
        ] {
            if let Some(v) = value {
                words.push(format!("--{flag}={v}"));
            }
        }
        if self.raw {
            words.push("--raw".to_owned());
        }
        words.extend(self.rest.iter().cloned());
        words
    }
}

/// `hale mcp [--app ENDPOINT] [--bearer T]`.
#[derive(Debug, Args)]
#[command(
    after_help = "One JSON-RPC message per line on stdin and stdout; exits 0 when stdin \
                        ends, 5 on usage."
)]
pub struct McpArgs {
    /// Bridge to this served exposure: unix:PATH, http://host:port,
    /// mcp://host:port or ws://host:port (a hub's listener carrying a
    /// surface). Without it, serve the toolchain's own tools.
    #[arg(long, value_name = "ENDPOINT")]
    pub app: Option<String>,
    /// The bearer token (HTTP, MCP, a hub's upgrade), else HALE_API_BEARER.
    #[arg(long, value_name = "T", requires = "app")]
    pub bearer: Option<String>,
}

/// `completions SHELL`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}
