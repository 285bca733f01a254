//! `limen-conformance check`: a corpus's recorded exchanges run against a
//! live implementation, each reply compared with the recorded one as a
//! value, masked — so a user can certify any server of the program.
//!
//! It first describes the endpoint and runs the records of the exposure
//! the document names (`--exposure NAME` names it instead); when neither
//! does, the records of the transport must all be of one exposure. Records run in an order that keeps the state each one
//! assumes from boot: those that need no cooperation first, then those that
//! gate or drain a receiver (undone after), and last those that stop the
//! server; by name within each.
//!
//! What needs the server's cooperation — a gated receiver (`full`,
//! `shutting_down`), a drained one (`unavailable`), `stop()` — is asked of
//! it over a control channel, `--control PATH`: a Unix socket taking the
//! lines `gate|open|drain|resume <instance>` and `stop`, each answered
//! `ok` (the protocol `hale demo --control` speaks; another implementation
//! may speak it to be certified whole). Without one those records are
//! reported as not provoked, never passed.
//!
//! A Unix record's peer is who the server reads at the socket, and a check
//! runs as one user: it stands in for one recorded peer (`--as-peer UID`,
//! its own uid by default) and reports the records of any other peer as not
//! provoked — the server must grant this user what it grants that uid, as
//! `hale demo` grants its operator to the user who runs it. A peer the
//! kernel did not name is never provoked: the kernel names every connection
//! this check makes.
//!
//! Copies of a request are identical, so while a receiver is gated the
//! first reply among a record's copies and its exchange is the exchange's
//! (over HTTP the server may read the connections in any order; whichever
//! was refused is the one the record describes).
//!
//! The transports are [`Wire`] values, each with its request builder and
//! reply reader. Over MCP the records are `wire/mcp`'s, or in a corpus
//! that has none (the reference's), the HTTP call records sent as
//! `tools/call`; the endpoint is described by its `initialize`, whose
//! `serverInfo` names the surface and digest.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use limen_core::hale::model::parse_program;
use limen_core::hale::runtime::PeerCredentials;
use limen_core::hale::serving::exposure_spec;
use serde_json::Value;

use crate::mask;
use crate::record::{exposure_name, Corpus, Record, Transport};
use crate::replay::{expect, reply_of};
use crate::report::{Report, Verdict};
use crate::scenario::{self, Overlay, Step};
use crate::wire;

/// An endpoint: `unix:<path>` or `http://host:port`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// A Unix socket.
    Unix(PathBuf),
    /// An HTTP listener, by its authority (`127.0.0.1:8080`).
    Http(String),
}

impl Endpoint {
    /// Reads `unix:<path>` or `http://host:port`.
    pub fn parse(text: &str) -> Result<Endpoint, String> {
        if let Some(path) = text.strip_prefix("unix:") {
            if !path.is_empty() {
                return Ok(Endpoint::Unix(PathBuf::from(path)));
            }
        }
        // An MCP listener is an HTTP one (`POST /mcp`); `mcp://` is how
        // `hale demo` prints it.
        if let Some(rest) = text
            .strip_prefix("http://")
            .or_else(|| text.strip_prefix("mcp://"))
        {
            let authority = rest.strip_suffix('/').unwrap_or(rest);
            let valid = authority
                .rsplit_once(':')
                .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
            if valid && !authority.contains('/') {
                return Ok(Endpoint::Http(authority.to_owned()));
            }
        }
        Err(format!(
            "`{text}` is not an endpoint: name unix:<path>, http://host:port or mcp://host:port"
        ))
    }

    fn connect(&self, timeout: Duration) -> io::Result<Stream> {
        let s = match self {
            Endpoint::Unix(p) => Stream::Unix(UnixStream::connect(p)?),
            Endpoint::Http(a) => {
                let s = TcpStream::connect(a)?;
                let _ = s.set_nodelay(true);
                Stream::Tcp(s)
            }
        };
        s.set_timeout(Some(timeout))?;
        Ok(s)
    }

    fn host(&self) -> Option<&str> {
        match self {
            Endpoint::Http(a) => Some(a),
            Endpoint::Unix(_) => None,
        }
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Unix(p) => write!(f, "unix:{}", p.display()),
            Endpoint::Http(a) => write!(f, "http://{a}"),
        }
    }
}

/// A transport the check speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// `unix::Rpc`: the records of `wire/unix`.
    Unix,
    /// `http::Rpc`: the records of `wire/http`.
    Http,
    /// `mcp::Rpc`: the records of `wire/mcp`, or, in a corpus that has
    /// none, the call records of `wire/http` sent as `tools/call`
    /// ([`crate::mcp::from_http`]).
    Mcp,
}

impl Wire {
    /// The records' transport.
    pub fn transport(self) -> Transport {
        match self {
            Wire::Unix => Transport::Unix,
            Wire::Http => Transport::Http,
            Wire::Mcp => Transport::Mcp,
        }
    }

    /// The bytes a record's request is sent as to `endpoint`.
    fn request(self, request: &Value, endpoint: &Endpoint) -> Result<Vec<u8>, String> {
        match self {
            Wire::Unix => Ok(wire::unix_line(request)),
            Wire::Http | Wire::Mcp => wire::http_request(request, endpoint.host()),
        }
    }

    /// The reply of the bytes read so far, once it is whole.
    fn reply(self, raw: &[u8], eof: bool) -> Result<Option<Value>, String> {
        reply_of(&self.transport(), raw, eof)
    }
}

enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    fn set_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => {
                s.set_read_timeout(t)?;
                s.set_write_timeout(t)
            }
            Stream::Tcp(s) => {
                s.set_read_timeout(t)?;
                s.set_write_timeout(t)
            }
        }
    }

    fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_nonblocking(on),
            Stream::Tcp(s) => s.set_nonblocking(on),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The most a reply may be: past it the server is not answering a record.
pub const MAX_REPLY: usize = 16 << 20;

/// A request sent, its reply being read.
struct Waiting {
    stream: Stream,
    buf: Vec<u8>,
    eof: bool,
}

impl Waiting {
    fn send(endpoint: &Endpoint, bytes: &[u8], timeout: Duration) -> Result<Waiting, String> {
        let mut stream = endpoint
            .connect(timeout)
            .map_err(|e| format!("cannot connect to {endpoint}: {e}"))?;
        stream
            .write_all(bytes)
            .map_err(|e| format!("cannot write to {endpoint}: {e}"))?;
        Ok(Waiting {
            stream,
            buf: Vec::new(),
            eof: false,
        })
    }

    /// Reads what is there without waiting; the reply once it is whole.
    fn poll(&mut self, wire: Wire) -> Result<Option<Value>, String> {
        let mut chunk = [0u8; 16 * 1024];
        while !self.eof {
            match self.stream.read(&mut chunk) {
                Ok(0) => self.eof = true,
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    if self.buf.len() > MAX_REPLY {
                        self.eof = true;
                        return Err(format!("the reply is over {MAX_REPLY} bytes"));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => self.eof = true,
            }
        }
        match wire.reply(&self.buf, self.eof)? {
            Some(v) => Ok(Some(v)),
            None if self.eof => {
                Err("the connection ended with no reply (a transport failure)".into())
            }
            None => Ok(None),
        }
    }
}

/// The first reply among `waiting`, by its place; an error when none
/// comes by `timeout`.
fn first_reply(waiting: &mut [Waiting], wire: Wire, timeout: Duration) -> Result<Value, String> {
    for w in waiting.iter() {
        w.stream
            .set_nonblocking(true)
            .map_err(|e| format!("cannot poll a connection: {e}"))?;
    }
    let deadline = Instant::now() + timeout;
    loop {
        let mut ended = Vec::new();
        for w in waiting.iter_mut() {
            match w.poll(wire) {
                Ok(Some(v)) => return Ok(v),
                Ok(None) => {}
                Err(e) => ended.push(e),
            }
        }
        if ended.len() == waiting.len() {
            return Err(ended.pop().unwrap_or_else(|| "nothing was sent".to_owned()));
        }
        if Instant::now() >= deadline {
            return Err(format!("no reply within {} s", timeout.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The control channel of a server that cooperates.
struct Control {
    path: PathBuf,
    conn: Option<(UnixStream, BufReader<UnixStream>)>,
}

impl Control {
    fn ask(&mut self, line: &str) -> Result<(), String> {
        if self.conn.is_none() {
            let s = UnixStream::connect(&self.path)
                .map_err(|e| format!("the control socket {}: {e}", self.path.display()))?;
            s.set_read_timeout(Some(Duration::from_secs(10)))
                .map_err(|e| e.to_string())?;
            let r = BufReader::new(s.try_clone().map_err(|e| e.to_string())?);
            self.conn = Some((s, r));
        }
        let (w, r) = self.conn.as_mut().expect("just connected");
        w.write_all(format!("{line}\n").as_bytes())
            .map_err(|e| format!("the control socket: {e}"))?;
        let mut answer = String::new();
        r.by_ref()
            .take(4096)
            .read_line(&mut answer)
            .map_err(|e| format!("the control socket: {e}"))?;
        match answer.trim_end() {
            "ok" => Ok(()),
            other => Err(format!(
                "the control socket answered `{line}` with `{other}`"
            )),
        }
    }
}

/// How a check runs.
#[derive(Debug)]
pub struct Options {
    /// The endpoint under check.
    pub endpoint: Endpoint,
    /// Its transport.
    pub wire: Wire,
    /// The bearer the describe step presents (a record carries its own
    /// credentials).
    pub bearer: Option<String>,
    /// The server's control channel, when it cooperates.
    pub control: Option<PathBuf>,
    /// The endpoints of other exposures a scenario calls, by name.
    pub with: BTreeMap<String, Endpoint>,
    /// The recorded Unix peer uid this process stands in for; its own uid
    /// when `None`.
    pub as_peer: Option<i64>,
    /// The exposure the endpoint serves, by name, when its description does
    /// not say (or to check it as another).
    pub exposure: Option<String>,
    /// How long to let the server take what was sent before a control
    /// step follows it.
    pub settle: Duration,
    /// How long to wait for a reply.
    pub timeout: Duration,
    /// Scenarios for the records that state none.
    pub overlay: Overlay,
}

impl Options {
    /// The defaults for `endpoint` over `wire`.
    pub fn new(endpoint: Endpoint, wire: Wire) -> Options {
        Options {
            endpoint,
            wire,
            bearer: None,
            control: None,
            with: BTreeMap::new(),
            as_peer: None,
            exposure: None,
            settle: Duration::from_millis(150),
            timeout: Duration::from_secs(10),
            overlay: Overlay::none(),
        }
    }
}

/// This process's kernel credentials, as a Unix server reads them.
fn own_peer() -> PeerCredentials {
    // SAFETY: getuid and getgid have no preconditions and cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    PeerCredentials {
        uid: i64::from(uid),
        gid: i64::from(gid),
        pid: i64::from(std::process::id()),
    }
}

/// Describes the endpoint: the exposure identity its document names, or
/// why there is none. An MCP endpoint has no description on the wire; its
/// `initialize` names the surface and digest, and the identity is the one
/// exposure of `records` that has them.
fn describe(options: &Options, records: &[&Record]) -> Result<String, String> {
    if options.wire == Wire::Mcp {
        let request = crate::mcp::initialize(options.bearer.as_deref());
        let bytes = options.wire.request(&request, &options.endpoint)?;
        let mut w = Waiting::send(&options.endpoint, &bytes, options.timeout)?;
        let reply = first_reply(std::slice::from_mut(&mut w), options.wire, options.timeout)?;
        let Some(surface) = crate::mcp::served_surface(&reply) else {
            return Err(match wire::outcome_of(&Transport::Mcp, &reply) {
                Some((_, Some(k))) => format!("the initialize was refused {k}"),
                _ => "its initialize names no surface".into(),
            });
        };
        let prefix = format!("{surface}/");
        let mut names: Vec<&str> = records
            .iter()
            .filter(|r| r.exposure.starts_with(&prefix))
            .map(|r| exposure_name(&r.exposure))
            .collect();
        names.sort();
        names.dedup();
        return match names.as_slice() {
            [one] => Ok(format!("{prefix}{one}")),
            [] => Err(format!("it serves {surface}, which no mcp record is of")),
            several => Err(format!(
                "it serves {surface}, which the mcp records of {} serve",
                several.join(", ")
            )),
        };
    }
    let request = match options.wire {
        Wire::Unix => serde_json::json!({"describe": true, "id": "limen-conformance"}),
        Wire::Http | Wire::Mcp => {
            let mut headers = serde_json::Map::new();
            if let Some(t) = &options.bearer {
                headers.insert("Authorization".into(), format!("Bearer {t}").into());
            }
            serde_json::json!({"method": "GET", "path": "/.description", "headers": headers})
        }
    };
    let bytes = options.wire.request(&request, &options.endpoint)?;
    let mut w = Waiting::send(&options.endpoint, &bytes, options.timeout)?;
    let reply = first_reply(std::slice::from_mut(&mut w), options.wire, options.timeout)?;
    let document = match options.wire {
        Wire::Unix => reply.get("value"),
        Wire::Http | Wire::Mcp => reply.get("body"),
    };
    document
        .and_then(|d| d.get("exposure"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| {
            let (outcome, kind) = wire::outcome_of(&options.wire.transport(), &reply)
                .unwrap_or(("no outcome".into(), None));
            match kind {
                Some(k) => format!("the describe was refused {k}"),
                None if outcome == "result" => "its description names no exposure".into(),
                None => format!("the describe answered {outcome}"),
            }
        })
}

/// The order records run in: 0 needs nothing, 1 gates or drains (and is
/// undone), 2 stops the server.
fn rank(steps: &[Step]) -> u8 {
    if steps.contains(&Step::Stop) {
        2
    } else if steps
        .iter()
        .any(|s| s.needs_cooperation() || matches!(s, Step::Copies(_)))
    {
        1
    } else {
        0
    }
}

/// Runs the corpus's records of the endpoint's exposure against it.
pub fn run(corpus: &Corpus, options: &Options) -> Result<Report, String> {
    let source = corpus.program_source().map_err(|e| e.to_string())?;
    let program = parse_program(&corpus.program.to_string_lossy(), &source)
        .map_err(|e| format!("the corpus's program: {e}"))?;
    let transport = options.wire.transport();
    let mut report = Report::default();
    let mut of_transport: Vec<&Record> = corpus
        .records
        .iter()
        .filter(|r| r.transport == transport)
        .collect();
    // A corpus with no MCP records (the reference's) is checked over MCP
    // by its HTTP call records, sent as tools/call.
    let translated: Vec<Record> = if transport == Transport::Mcp && of_transport.is_empty() {
        corpus
            .records
            .iter()
            .filter_map(|r| crate::mcp::from_http(r, &r.exposure))
            .collect()
    } else {
        Vec::new()
    };
    if !translated.is_empty() {
        report.notes.push(format!(
            "corpus  no mcp records: its {} http call records are sent as tools/call",
            translated.len()
        ));
        of_transport = translated.iter().collect();
    }
    // Which exposure the endpoint serves: --exposure, else what its
    // description names, else the one exposure the records are of.
    let described = describe(options, &of_transport);
    let exposure = match (&options.exposure, &described) {
        (Some(name), _) => {
            report.notes.push(format!(
                "describe  {}: checked as `{name}`{}",
                options.endpoint,
                match &described {
                    Ok(id) => format!(", and it serves {id}"),
                    Err(why) => format!(" ({why})"),
                }
            ));
            name.clone()
        }
        (None, Ok(id)) if options.wire == Wire::Mcp => {
            let name = exposure_name(id);
            report.notes.push(format!(
                "describe  {}: its initialize names {}; checking the mcp records of `{name}`",
                options.endpoint,
                &id[..id.len() - name.len() - 1]
            ));
            name.to_owned()
        }
        (None, Ok(id)) => {
            report
                .notes
                .push(format!("describe  {}: serves {id}", options.endpoint));
            exposure_name(id).to_owned()
        }
        (None, Err(why)) => {
            let mut names: Vec<&str> = of_transport
                .iter()
                .map(|r| exposure_name(&r.exposure))
                .collect();
            names.sort();
            names.dedup();
            match names.as_slice() {
                [one] => {
                    report.notes.push(format!(
                        "describe  {}: {why}; checking the {} records, all of `{one}`",
                        options.endpoint,
                        transport.as_str()
                    ));
                    (*one).to_owned()
                }
                [] => return Err(format!("the corpus has no {} record", transport.as_str())),
                several => {
                    return Err(format!(
                        "{}: {why}, and the {} records are of {}: name the one it serves with --exposure NAME (or a --bearer it describes to)",
                        options.endpoint,
                        transport.as_str(),
                        several.join(", ")
                    ))
                }
            }
        }
    };
    let records: Vec<&Record> = of_transport
        .into_iter()
        .filter(|r| exposure_name(&r.exposure) == exposure)
        .collect();
    if let Ok(id) = &described {
        let mut others: Vec<&str> = records
            .iter()
            .filter(|r| r.exposure != *id)
            .map(|r| r.exposure.as_str())
            .collect();
        others.dedup();
        for other in others {
            // Run them all the same: how they differ is what a certifier
            // needs to read.
            report.notes.push(format!(
                "describe  records are of {other}, not of what the endpoint serves"
            ));
        }
    }
    if records.is_empty() {
        return Err(format!(
            "no {} record of the corpus is of the exposure `{exposure}`",
            transport.as_str()
        ));
    }
    let mut planned = Vec::new();
    for r in records {
        let name = exposure_name(&r.exposure);
        let steps = crate::world::served_exposure(&program, name)
            .ok_or_else(|| format!("the program serves no exposure `{name}`"))
            .and_then(|e| {
                exposure_spec(&program, &e, transport.as_str()).map_err(|e| e.to_string())
            })
            .map(|spec| scenario::steps(r, &spec, &options.overlay).0);
        planned.push((r, steps));
    }
    planned.sort_by_key(|(r, steps)| (steps.as_ref().map_or(0, |s| rank(s)), r.name.clone()));
    let mut run = Run {
        options,
        control: options
            .control
            .clone()
            .map(|path| Control { path, conn: None }),
        stopped: false,
        peer: own_peer(),
    };
    for (record, steps) in planned {
        let verdict = match steps {
            Err(e) => Verdict::Fail(e),
            Ok(steps) => run.record(record, &steps),
        };
        report.push(&record.name, verdict);
    }
    Ok(report)
}

struct Run<'a> {
    options: &'a Options,
    control: Option<Control>,
    stopped: bool,
    peer: PeerCredentials,
}

impl Run<'_> {
    /// Why `record` cannot be provoked here, if it cannot.
    fn unprovokable(&self, record: &Record, steps: &[Step]) -> Option<String> {
        if self.stopped {
            return Some("the server stopped at an earlier record's stop()".into());
        }
        if let Some(p) = record.peer {
            let stands_for = self.options.as_peer.unwrap_or(self.peer.uid);
            if p.uid < 0 {
                return Some(
                    "its peer is one the kernel did not name, and the kernel names every connection this check makes"
                        .into(),
                );
            }
            if p.uid != stands_for {
                return Some(format!(
                    "its peer is uid {}, and this check stands in for uid {stands_for}: \
                     pass --as-peer {} where the server grants this user what it grants uid {}",
                    p.uid, p.uid, p.uid
                ));
            }
        }
        let own = exposure_name(&record.exposure);
        for step in steps {
            match step {
                s if s.needs_cooperation() && self.control.is_none() => {
                    let what = s.to_json().to_string();
                    return Some(format!(
                        "{what} needs the server's cooperation: pass --control PATH"
                    ));
                }
                Step::Call(c) => {
                    let name = exposure_name(&c.exposure);
                    if name != own && !self.options.with.contains_key(name) {
                        return Some(format!(
                            "its scenario calls the exposure `{name}` first: pass --with {name}=URL"
                        ));
                    }
                }
                _ => {}
            }
        }
        None
    }

    fn record(&mut self, record: &Record, steps: &[Step]) -> Verdict {
        if let Some(why) = self.unprovokable(record, steps) {
            return Verdict::NotProvoked(why);
        }
        let mut undo = Undo::default();
        let result = self.exchange(record, steps, &mut undo);
        let cleanup = self.undo(record, undo);
        match (result, cleanup) {
            (Err(e), _) => Verdict::Fail(e),
            (Ok(got), Err(e)) => Verdict::Fail(format!("after the exchange ({got}): {e}")),
            (Ok(got), Ok(())) => {
                let peer = (record.transport == Transport::Unix).then_some(self.peer);
                match mask::compare_reply(&record.transport, &record.reply, record.peer, &got, peer)
                {
                    None => Verdict::Pass,
                    Some(d) => Verdict::Fail(format!("reply {d}")),
                }
            }
        }
    }

    fn control(&mut self, line: &str) -> Result<(), String> {
        let control = self.control.as_mut().ok_or("no control channel")?;
        control.ask(line)?;
        std::thread::sleep(self.options.settle);
        Ok(())
    }

    /// Runs the steps; the exchange's reply.
    fn exchange(
        &mut self,
        record: &Record,
        steps: &[Step],
        undo: &mut Undo,
    ) -> Result<Value, String> {
        let options = self.options;
        let wire = options.wire;
        let bytes = wire.request(&record.request, &options.endpoint)?;
        let own = exposure_name(&record.exposure).to_owned();
        for (i, step) in steps.iter().enumerate() {
            let at = format!("step {} ({})", i + 1, step.to_json());
            let fail = |e: String| format!("{at}: {e}");
            match step {
                Step::Gate(r) => {
                    self.control(&format!("gate {r}")).map_err(fail)?;
                    undo.gated.insert(r.clone());
                }
                Step::Open(r) => {
                    self.control(&format!("open {r}")).map_err(fail)?;
                    undo.gated.remove(r);
                }
                Step::Drain(r) => {
                    self.control(&format!("drain {r}")).map_err(fail)?;
                    undo.drained.insert(r.clone());
                }
                Step::Resume(r) => {
                    self.control(&format!("resume {r}")).map_err(fail)?;
                    undo.drained.remove(r);
                }
                Step::Stop => {
                    // Let the server take what was sent before it stops.
                    std::thread::sleep(options.settle);
                    self.control("stop").map_err(fail)?;
                    self.stopped = true;
                }
                Step::Copies(n) => {
                    for _ in 0..*n {
                        undo.waiting.push(
                            Waiting::send(&options.endpoint, &bytes, options.timeout)
                                .map_err(fail)?,
                        );
                    }
                }
                Step::Exchange => {
                    undo.waiting.push(
                        Waiting::send(&options.endpoint, &bytes, options.timeout).map_err(fail)?,
                    );
                    undo.sent = true;
                }
                Step::Call(call) => {
                    let name = exposure_name(&call.exposure);
                    let endpoint = if name == own {
                        &options.endpoint
                    } else {
                        options
                            .with
                            .get(name)
                            .ok_or_else(|| fail(format!("no endpoint for `{name}`")))?
                    };
                    let call_wire = match endpoint {
                        Endpoint::Unix(_) => Wire::Unix,
                        Endpoint::Http(_)
                            if call.request.get("path").and_then(Value::as_str)
                                == Some(limen_core::wire::mcp::PATH) =>
                        {
                            Wire::Mcp
                        }
                        Endpoint::Http(_) => Wire::Http,
                    };
                    let bytes = call_wire.request(&call.request, endpoint).map_err(fail)?;
                    let mut w = Waiting::send(endpoint, &bytes, options.timeout).map_err(fail)?;
                    let reply =
                        first_reply(std::slice::from_mut(&mut w), call_wire, options.timeout)
                            .map_err(fail)?;
                    expect(
                        &call_wire.transport(),
                        call.outcome.as_deref(),
                        call.kind.as_deref(),
                        &reply,
                    )
                    .map_err(fail)?;
                }
            }
        }
        if !undo.sent {
            return Err("the scenario sends no exchange".into());
        }
        // Identical requests: while a receiver is gated, the first answered
        // is the exchange.
        let reply = first_reply(&mut undo.waiting, wire, options.timeout)?;
        Ok(reply)
    }

    /// Opens what the record gated, resumes what it drained (waking the
    /// receiver with one more copy, whose answer is not compared), and
    /// reads what the copies are answered.
    fn undo(&mut self, record: &Record, undo: Undo) -> Result<(), String> {
        let Undo {
            gated,
            drained,
            mut waiting,
            ..
        } = undo;
        for r in &gated {
            self.control(&format!("open {r}"))?;
        }
        if !drained.is_empty() {
            for r in &drained {
                self.control(&format!("resume {r}"))?;
            }
            if !self.stopped {
                // The exposure asks a receiver it found unavailable again at
                // the next request for it.
                let bytes = self
                    .options
                    .wire
                    .request(&record.request, &self.options.endpoint)?;
                let mut w = Waiting::send(&self.options.endpoint, &bytes, self.options.timeout)?;
                let _ = first_reply(
                    std::slice::from_mut(&mut w),
                    self.options.wire,
                    self.options.timeout,
                );
            }
        }
        // Every copy is answered once its gate opens; read them so the
        // server's bound is free before the next record.
        for w in &mut waiting {
            let _ = first_reply(
                std::slice::from_mut(w),
                self.options.wire,
                self.options.timeout,
            );
        }
        Ok(())
    }
}

#[derive(Default)]
struct Undo {
    gated: BTreeSet<String>,
    drained: BTreeSet<String>,
    waiting: Vec<Waiting>,
    sent: bool,
}
