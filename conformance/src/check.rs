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
//! Each transport is a [`Form`]: how a record's request is sent, how its
//! reply is read, how the endpoint is described. A transport whose records
//! another's imply (MCP's `tools/call` of an HTTP call) is checked, in a
//! corpus with none of its own (the reference's), by the records implied;
//! an MCP endpoint is described by its `initialize`, whose `serverInfo`
//! names the surface and digest.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use limen_core::hale::model::Program;
use limen_core::hale::runtime::PeerCredentials;
use limen_core::hale::serving::exposure_spec;
use serde_json::Value;

use crate::record::{exposure_name, Corpus, Record};
use crate::replay::expect;
use crate::report::{Report, Verdict};
use crate::scenario::Step;
use crate::steps::{self, Overlay};
pub use crate::transport::Endpoint;
use crate::transport::{self, Form};

/// Connects to `endpoint`, reads and writes timed out after `timeout`.
fn connect(endpoint: &Endpoint, timeout: Duration) -> io::Result<Stream> {
    let s = match endpoint {
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

pub use crate::transport::MAX_REPLY;

/// A request sent, its reply being read.
struct Waiting {
    stream: Stream,
    buf: Vec<u8>,
    eof: bool,
}

impl Waiting {
    fn send(endpoint: &Endpoint, bytes: &[u8], timeout: Duration) -> Result<Waiting, String> {
        let mut stream =
            connect(endpoint, timeout).map_err(|e| format!("cannot connect to {endpoint}: {e}"))?;
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
    fn poll(&mut self, form: &dyn Form) -> Result<Option<Value>, String> {
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
        match form.reply(&self.buf, self.eof)? {
            Some(v) => Ok(Some(v)),
            None if self.eof => {
                Err("the connection ended with no reply (a transport failure)".into())
            }
            None => Ok(None),
        }
    }

    /// Whether the server has ended the connection, or answered on it,
    /// by now: read without waiting.
    fn ended(&mut self, form: &dyn Form) -> bool {
        if self.stream.set_nonblocking(true).is_err() {
            return true;
        }
        let answered = !matches!(self.poll(form), Ok(None));
        let _ = self.stream.set_nonblocking(false);
        answered || self.eof
    }

    /// Sends more of the request; an error when the server has ended the
    /// connection (or answered) before it.
    fn send_more(&mut self, form: &dyn Form, bytes: &[u8]) -> Result<(), String> {
        if self.ended(form) {
            return Err("the connection ended before this step".into());
        }
        self.stream
            .write_all(bytes)
            .map_err(|e| format!("the connection ended before this step ({e})"))
    }
}

/// Why [`first_reply_within`] took no reply.
enum NoReply {
    /// None came by the deadline.
    Late,
    /// Every connection ended without one: the last one's why.
    Ended(String),
}

/// The first reply among `waiting`, by its place; an error when none
/// comes by `timeout`. A connection that ends with nothing written is not
/// taken while another may still answer; once every one has ended, the
/// last one's end is the answer: a transport failure's reply
/// ([`transport::eof`]) when it ended with nothing written, else why it
/// ended.
fn first_reply(
    waiting: &mut [Waiting],
    form: &dyn Form,
    timeout: Duration,
) -> Result<Value, String> {
    first_reply_within(waiting, form, timeout).map_err(|e| match e {
        NoReply::Late => format!("no reply within {} s", timeout.as_secs()),
        NoReply::Ended(why) => why,
    })
}

/// [`first_reply`], saying why none was taken.
fn first_reply_within(
    waiting: &mut [Waiting],
    form: &dyn Form,
    timeout: Duration,
) -> Result<Value, NoReply> {
    for w in waiting.iter() {
        w.stream
            .set_nonblocking(true)
            .map_err(|e| NoReply::Ended(format!("cannot poll a connection: {e}")))?;
    }
    let deadline = Instant::now() + timeout;
    loop {
        let mut ended = 0;
        let mut last = None;
        for w in waiting.iter_mut() {
            match w.poll(form) {
                Ok(Some(v)) if transport::is_eof(&v) => {
                    ended += 1;
                    last = Some(Ok(v));
                }
                Ok(Some(v)) => return Ok(v),
                Ok(None) => {}
                Err(e) => {
                    ended += 1;
                    last = Some(Err(e));
                }
            }
        }
        if ended == waiting.len() {
            return match last {
                Some(Ok(v)) => Ok(v),
                Some(Err(e)) => Err(NoReply::Ended(e)),
                None => Err(NoReply::Ended("nothing was sent".to_owned())),
            };
        }
        if Instant::now() >= deadline {
            return Err(NoReply::Late);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// How far from the end of a scenario's last silence a check takes the end
/// of a connection the record has end with nothing written (a transport
/// failure): a server's timer fires a little after its instant, and the
/// record's silences end at the spec's instants, so a connection still open
/// a second after, or ended more than a second before, was not ended by
/// the spec's timer.
pub const GRACE: Duration = Duration::from_secs(1);

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
    pub form: &'static dyn Form,
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
    /// The longest a record's scenario may be silent in all (its
    /// `wait_ms` steps, which a check waits for real); a record that waits
    /// longer is not provoked. No limit when `None`.
    pub max_wait: Option<Duration>,
    /// Scenarios for the records that state none.
    pub overlay: Overlay,
}

impl Options {
    /// The defaults for `endpoint` over `form`.
    pub fn new(endpoint: Endpoint, form: &'static dyn Form) -> Options {
        Options {
            endpoint,
            form,
            bearer: None,
            control: None,
            with: BTreeMap::new(),
            as_peer: None,
            exposure: None,
            settle: Duration::from_millis(150),
            timeout: Duration::from_secs(10),
            max_wait: None,
            overlay: Overlay::none(),
        }
    }
}

/// This process's kernel credentials, as a Unix server reads them.
fn own_peer() -> PeerCredentials {
    PeerCredentials {
        uid: i64::from(rustix::process::getuid().as_raw()),
        gid: i64::from(rustix::process::getgid().as_raw()),
        pid: i64::from(std::process::id()),
        groups: None,
    }
}

/// Describes the endpoint: the exposure identity it names, or why there is
/// none. Its transport says how ([`Form::described`]): by the document a
/// describe answers, or — over MCP, where there is none on the wire — by
/// the surface and digest its `initialize` names, the one exposure of
/// `records` that has them.
fn describe(options: &Options, records: &[&Record]) -> Result<String, String> {
    let form = options.form;
    let request = form.describe_request(options.bearer.as_deref());
    let bytes = form.request_bytes(&request, options.endpoint.host())?;
    let mut w = Waiting::send(&options.endpoint, &bytes, options.timeout)?;
    let reply = first_reply(std::slice::from_mut(&mut w), form, options.timeout)?;
    if transport::is_eof(&reply) {
        return Err("the connection ended with no reply (a transport failure)".into());
    }
    let identities: Vec<&str> = records.iter().map(|r| r.exposure.as_str()).collect();
    form.described(&reply, &identities)
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
    let program = corpus
        .program_model()
        .map_err(|e| format!("the corpus's program: {e}"))?;
    let form = options.form;
    let transport = transport::Transport::from(form);
    let mut report = Report::default();
    let mut of_transport: Vec<&Record> = corpus
        .records
        .iter()
        .filter(|r| r.transport == transport)
        .collect();
    // A corpus with no records of the transport (the reference's has no MCP
    // records) is checked by the records of it that its others imply (its
    // HTTP calls, sent as tools/call).
    let translated: Vec<Record> = if of_transport.is_empty() {
        corpus
            .records
            .iter()
            .filter_map(|r| r.implied(form, &r.exposure))
            .collect()
    } else {
        Vec::new()
    };
    if !translated.is_empty() {
        report.notes.push(format!(
            "corpus  no {} records: its {} {}",
            form.name(),
            translated.len(),
            form.implied_note()
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
        (None, Ok(id)) => {
            report
                .notes
                .push(form.described_note(&options.endpoint, id));
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
            .map(|spec| steps::steps(r, &spec, &options.overlay).0);
        planned.push((r, steps));
    }
    planned.sort_by_key(|(r, steps)| (steps.as_ref().map_or(0, |s| rank(s)), r.name.clone()));
    let mut run = Run {
        options,
        program: &program,
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
    program: &'a Program,
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
        let waits: u64 = steps
            .iter()
            .map(|s| match s {
                Step::Wait(ms) => *ms,
                _ => 0,
            })
            .sum();
        if let Some(max) = self.options.max_wait {
            if u128::from(waits) > max.as_millis() {
                return Some(format!(
                    "its scenario is silent for {waits} ms in all, longer than --max-wait {} s",
                    max.as_secs()
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
                let form = self.options.form;
                let peer = form.carries_peer().then_some(self.peer);
                match transport::hold_reply(form, &record.reply, record.peer, &got, peer) {
                    Ok(()) => Verdict::Pass,
                    Err(d) => Verdict::Fail(d),
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
        let form = options.form;
        let bytes = form.request_bytes(&record.request, options.endpoint.host())?;
        let own = exposure_name(&record.exposure).to_owned();
        // When the last silence ends, and when the exchange's connection
        // was first seen ended (watched through the silences).
        let mut silence_end = None;
        let mut ended_at = None;
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
                    undo.exchange = Some(undo.waiting.len());
                    undo.waiting.push(
                        Waiting::send(&options.endpoint, &bytes, options.timeout).map_err(fail)?,
                    );
                    undo.sent = true;
                }
                Step::Withhold(n) => {
                    let sent = bytes
                        .len()
                        .checked_sub(*n)
                        .ok_or_else(|| fail(format!("the request is {} bytes", bytes.len())))?;
                    undo.exchange = Some(undo.waiting.len());
                    undo.waiting.push(
                        Waiting::send(&options.endpoint, &bytes[..sent], options.timeout)
                            .map_err(fail)?,
                    );
                    undo.withheld = bytes[sent..].to_vec();
                    undo.sent = true;
                }
                Step::Send(n) => {
                    let w = undo
                        .exchange
                        .and_then(|e| undo.waiting.get_mut(e))
                        .ok_or_else(|| fail("no exchange yet".into()))?;
                    if *n > undo.withheld.len() {
                        return Err(fail(format!("{} bytes are held back", undo.withheld.len())));
                    }
                    let now: Vec<u8> = undo.withheld.drain(..*n).collect();
                    w.send_more(form, &now).map_err(fail)?;
                }
                // A silence is a silence: the server's timers run on its
                // own clock. The exchange's connection is watched through
                // it, to see when the server ends it.
                Step::Wait(ms) => {
                    let end = Instant::now() + Duration::from_millis(*ms);
                    loop {
                        let exchange = undo.exchange.and_then(|e| undo.waiting.get_mut(e));
                        if let (None, Some(w)) = (ended_at, exchange) {
                            if w.ended(form) {
                                ended_at = Some(Instant::now());
                            }
                        }
                        let now = Instant::now();
                        if now >= end {
                            break;
                        }
                        std::thread::sleep((end - now).min(Duration::from_millis(5)));
                    }
                    silence_end = Some(end);
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
                    // The exposure's transport, as the program serves it.
                    let call_form = crate::world::served_exposure(self.program, name)
                        .and_then(|e| e.listener)
                        .and_then(|l| transport::by_listener(&l.transport))
                        .filter(|f| f.speaks_to(endpoint))
                        .ok_or_else(|| {
                            fail(format!("the program serves `{name}` over no transport that speaks to {endpoint}"))
                        })?;
                    let bytes = call_form
                        .request_bytes(&call.request, endpoint.host())
                        .map_err(fail)?;
                    let mut w = Waiting::send(endpoint, &bytes, options.timeout).map_err(fail)?;
                    let reply =
                        first_reply(std::slice::from_mut(&mut w), call_form, options.timeout)
                            .map_err(fail)?;
                    if transport::is_eof(&reply)
                        && call.outcome.as_deref() != Some(transport::TRANSPORT_FAILURE)
                    {
                        return Err(fail(
                            "the connection ended with no reply (a transport failure)".into(),
                        ));
                    }
                    expect(
                        call_form,
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
        if record.outcome == transport::TRANSPORT_FAILURE {
            // The scenario's silences are the spec's: the connection has
            // ended by its last step, give or take the server's timer, and
            // not long before its last silence was over.
            let reply = first_reply_within(&mut undo.waiting, form, GRACE).map_err(|e| match e {
                NoReply::Late => format!(
                    "no reply, and the connection was still open {} ms after the scenario's last step: a transport failure ends it",
                    GRACE.as_millis()
                ),
                NoReply::Ended(why) => why,
            })?;
            if let (true, Some(ended), Some(end)) =
                (transport::is_eof(&reply), ended_at, silence_end)
            {
                if ended + GRACE < end {
                    return Err(format!(
                        "the connection ended {} ms before the scenario's last silence was over: earlier than the spec's timer",
                        (end - ended).as_millis()
                    ));
                }
            }
            return Ok(reply);
        }
        // Identical requests: while a receiver is gated, the first answered
        // is the exchange.
        let reply = first_reply(&mut undo.waiting, form, options.timeout)?;
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
                    .form
                    .request_bytes(&record.request, self.options.endpoint.host())?;
                let mut w = Waiting::send(&self.options.endpoint, &bytes, self.options.timeout)?;
                let _ = first_reply(
                    std::slice::from_mut(&mut w),
                    self.options.form,
                    self.options.timeout,
                );
            }
        }
        // Every copy is answered once its gate opens; read them so the
        // server's bound is free before the next record.
        for w in &mut waiting {
            let _ = first_reply(
                std::slice::from_mut(w),
                self.options.form,
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
    /// The exchange's place among `waiting`.
    exchange: Option<usize>,
    /// What the exchange held back of its request and has not sent yet.
    withheld: Vec<u8>,
}
