//! `limen-conformance check --transport ws --endpoint ws://host:port`: the
//! `wire/ws` records ([`crate::hub`]) against a live hub.
//!
//! It reads the hub's description (`GET /.description` under `--bearer`)
//! for the hub exposure's identity, and asks the hub with a `call` frame
//! whether it carries a surface (the describe the frame takes), then runs
//! the records of those exposures: each on a connection of its own, its
//! client frames sent, each frame the record names read and compared as a
//! value, the program's acts done from outside — a `place` over public's
//! HTTP listener (`--with public=http://…`, as alice), `revoke` and
//! `expire` and `stop` on the control socket (`--control`, the lines
//! `hale demo --control` takes; a revoke is granted back and an expiry
//! lifted after its record), a `wait_ms` waited for real. A live server's
//! orders are numbered by its own history, so an event's `payload.order`
//! and a reply's `value.order` are masked. What cannot be provoked is
//! reported so, never passed: a reader that takes nothing (`stall`: a
//! kernel's buffers take frames), an act without its control socket or
//! public endpoint, a second `stop()`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use limen_core::wire::ws::client::{self, ServerFrame, ServerReader};
use limen_drivers::client::hub_conn;
use limen_drivers::client::wire::exchange;
use serde_json::Value;

use crate::hub::{describe_head, describe_method, request_bearer};
use crate::record::{exposure_name, Corpus, Record};
use crate::report::{Report, Verdict};

/// How a hub check runs.
#[derive(Debug, Default)]
pub struct Options {
    /// The hub's `host:port`.
    pub authority: String,
    /// The bearer the describes present.
    pub bearer: Option<String>,
    /// The server's control socket.
    pub control: Option<PathBuf>,
    /// public's HTTP listener, `host:port`, where a `place` is made.
    pub public: Option<String>,
    /// How long a frame may take to come.
    pub timeout: Duration,
    /// How long the check waits for a frame the record does not name
    /// before it passes the record.
    pub settle: Duration,
}

/// The `host:port` of `ws://host:port[/]`.
pub fn authority(endpoint: &str) -> Option<String> {
    let rest = endpoint.strip_prefix("ws://")?;
    let a = rest.strip_suffix('/').unwrap_or(rest);
    let valid = a
        .rsplit_once(':')
        .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
    (valid && !a.contains('/')).then(|| a.to_owned())
}

/// One HTTP exchange on the hub's listener (`head` a `method` request's
/// bytes): the status and the body's JSON.
fn http(
    authority: &str,
    method: &str,
    head: &[u8],
    timeout: Duration,
) -> Result<(u16, Value), String> {
    let response =
        exchange(authority, method, head, timeout).map_err(|e| format!("{authority}: {e}"))?;
    let body = serde_json::from_slice(&response.body).map_err(|_| "a body that is not JSON")?;
    Ok((response.status, body))
}

/// A client connection to the hub.
struct Conn {
    stream: TcpStream,
    reader: ServerReader,
    buf: Vec<u8>,
    mask: u8,
}

/// What the hub wrote next.
#[derive(Debug)]
enum Got {
    Text(Value),
    Close(u16),
    /// Nothing within the wait.
    Nothing,
    /// The connection ended.
    Ended,
}

impl Conn {
    fn open(authority: &str, path: &str, bearer: Option<&str>) -> Result<Conn, String> {
        let mut stream = TcpStream::connect(authority).map_err(|e| format!("{authority}: {e}"))?;
        // A fixed key: the checker's requests are the same on every run.
        let key = client::key(*b"limen-conformanc");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(|e| e.to_string())?;
        let mut buf = vec![0u8; 65536];
        let reader = hub_conn::upgrade(&mut stream, authority, path, &key, bearer, &mut buf)?;
        Ok(Conn {
            stream,
            reader,
            buf,
            mask: 0,
        })
    }

    fn send(&mut self, frame: &Value) -> Result<(), String> {
        self.mask = self.mask.wrapping_add(1);
        let bytes = client::text(&frame.to_string(), [self.mask, 7, 1, 9]);
        self.stream.write_all(&bytes).map_err(|e| e.to_string())
    }

    fn next(&mut self, wait: Duration) -> Result<Got, String> {
        self.stream
            .set_read_timeout(Some(wait))
            .map_err(|e| e.to_string())?;
        loop {
            while let Some(f) = self.reader.poll_frame()? {
                match f {
                    ServerFrame::Text(t) => {
                        let v = serde_json::from_str(&t)
                            .map_err(|_| format!("a frame that is not JSON: {t}"))?;
                        return Ok(Got::Text(v));
                    }
                    ServerFrame::Close(code) => return Ok(Got::Close(code)),
                    ServerFrame::Ping(_) | ServerFrame::Pong => {}
                }
            }
            match self.stream.read(&mut self.buf) {
                Ok(0) => return Ok(Got::Ended),
                Ok(n) => self.reader.handle_data(&self.buf[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return Ok(Got::Nothing)
                }
                Err(_) => return Ok(Got::Ended),
            }
        }
    }
}

/// A frame masked for the live comparison: [`crate::hub::mask`], and the
/// order numbers, which are the server's history.
fn live_mask(frame: &Value) -> Value {
    let mut f = crate::hub::mask(frame);
    for at in ["/payload/order", "/value/order"] {
        if let Some(o) = f.pointer_mut(at) {
            *o = Value::String("<order>".into());
        }
    }
    f
}

fn control_line(path: &PathBuf, line: &str) -> Result<(), String> {
    let mut s = UnixStream::connect(path).map_err(|e| format!("{}: {e}", path.display()))?;
    writeln!(s, "{line}").map_err(|e| e.to_string())?;
    let mut answer = String::new();
    BufReader::new(s)
        .read_line(&mut answer)
        .map_err(|e| e.to_string())?;
    if answer.trim() == "ok" {
        Ok(())
    } else {
        Err(format!(
            "the control line `{line}` was answered {}",
            answer.trim()
        ))
    }
}

/// Why a record cannot be provoked against this server, if it cannot;
/// `carries` is the surface the hub carries, when it carries one.
fn unprovokable(r: &Record, o: &Options, stopped: bool, carries: Option<&str>) -> Option<String> {
    let seq = r.reply.as_array()?;
    let has = |k: &str| seq.iter().any(|e| e.get(k).is_some());
    let calls = seq
        .iter()
        .any(|e| e["from"] == "client" && e["frame"]["type"] == "call");
    if let Some(surface) = carries.filter(|s| calls && r.exposure != *s) {
        return Some(format!(
            "the hub carries {surface}, so it takes a call frame: check a hub that carries none"
        ));
    }
    if has("stall") {
        return Some("a reader that takes nothing cannot be made over a live socket: the kernel's buffers take the frames".into());
    }
    if (has("revoke") || has("expire") || has("stop")) && o.control.is_none() {
        return Some("its program acts need the server's control socket (--control)".into());
    }
    if has("place") && o.public.is_none() {
        return Some("its places are made on public (--with public=http://…)".into());
    }
    if has("stop") && stopped {
        return Some("the server has stopped: check it on a fresh one".into());
    }
    None
}

/// Runs the `wire/ws` records of `corpus` against the hub `o.authority`.
pub fn run(corpus: &Corpus, o: &Options) -> Result<Report, String> {
    let mut report = Report::default();
    let describe = describe_head(&Value::Null, "hub", o.bearer.as_deref())?;
    let (status, doc) = http(&o.authority, "GET", &describe, o.timeout)?;
    let hub = doc["exposure"]
        .as_str()
        .filter(|_| status == 200)
        .ok_or_else(|| {
            format!(
                "ws://{} describes no hub exposure (status {status})",
                o.authority
            )
        })?
        .to_owned();
    report
        .notes
        .push(format!("describe  ws://{}: serves {hub}", o.authority));
    let mut identities = vec![hub];
    let mut carries = None;
    // The surface it carries, when it carries one: a describe call frame.
    let mut conn = Conn::open(&o.authority, "/", o.bearer.as_deref())?;
    conn.send(&serde_json::json!({"type": "call", "describe": true, "id": "limen-check"}))?;
    if let Got::Text(v) = conn.next(o.timeout)? {
        if let Some(e) = v["value"]["exposure"].as_str() {
            report
                .notes
                .push(format!("describe  ws://{}: carries {e}", o.authority));
            identities.push(e.to_owned());
            carries = Some(e.to_owned());
        }
    }
    drop(conn);
    let mut records: Vec<&Record> = corpus
        .records
        .iter()
        .filter(|r| r.transport.as_str() == "ws" && identities.contains(&r.exposure))
        .collect();
    if records.is_empty() {
        return Err("the corpus has no ws record of what the hub serves".into());
    }
    // What stops the server runs last, by name within each.
    let stops = |r: &Record| {
        r.reply
            .as_array()
            .is_some_and(|s| s.iter().any(|e| e.get("stop").is_some()))
    };
    records.sort_by_key(|r| (stops(r), r.name.clone()));
    let mut stopped = false;
    for r in records {
        if let Some(why) = unprovokable(r, o, stopped, carries.as_deref()) {
            report.push(&r.name, Verdict::NotProvoked(why));
            continue;
        }
        stopped |= stops(r);
        let verdict = match check_record(r, o) {
            Ok(()) => Verdict::Pass,
            Err(why) => Verdict::Fail(why),
        };
        report.push(&r.name, verdict);
    }
    let others = corpus
        .records
        .iter()
        .filter(|r| r.transport.as_str() == "ws" && !identities.contains(&r.exposure));
    for r in others {
        report.push(
            &r.name,
            Verdict::NotProvoked(format!(
                "the hub does not serve {} (`{}`)",
                r.exposure,
                exposure_name(&r.exposure)
            )),
        );
    }
    Ok(report)
}

fn check_record(r: &Record, o: &Options) -> Result<(), String> {
    if r.request.get("method").is_some() {
        let (status, body) = http(
            &o.authority,
            describe_method(&r.request),
            &describe_head(&r.request, "hub", None)?,
            o.timeout,
        )?;
        let got = serde_json::json!({"status": status, "document": body});
        let want = serde_json::json!({"status": r.reply["status"], "document": r.reply["body"]});
        return match crate::mask::first_difference(
            &crate::hub::mask(&want),
            &crate::hub::mask(&got),
        ) {
            None => Ok(()),
            Some(d) => Err(format!("reply {d}")),
        };
    }
    let seq = r.reply.as_array().ok_or("no sequence")?;
    let mut undo: Vec<String> = Vec::new();
    let result = run_sequence(r, seq, o, &mut undo);
    if let Some(path) = &o.control {
        for line in undo {
            let _ = control_line(path, &line);
        }
    }
    result
}

fn run_sequence(
    r: &Record,
    seq: &[Value],
    o: &Options,
    undo: &mut Vec<String>,
) -> Result<(), String> {
    let path = r.request["path"].as_str().unwrap_or("/");
    let bearer = request_bearer(&r.request);
    let mut conn: Option<Conn> = None;
    let mut closed = false;
    for (i, e) in seq.iter().enumerate() {
        let at = format!("frames[{i}]");
        let from = e["from"].as_str().unwrap_or_default();
        if conn.is_none() && matches!(from, "client" | "server") {
            conn = Some(Conn::open(&o.authority, path, bearer)?);
        }
        match (from, conn.as_mut()) {
            ("client", Some(c)) => c.send(&e["frame"])?,
            ("server", Some(c)) => match (c.next(o.timeout)?, e.get("frame"), e.get("close")) {
                (Got::Text(v), Some(want), _) => {
                    if let Some(d) = crate::mask::first_difference(&live_mask(want), &live_mask(&v))
                    {
                        return Err(format!("{at}: frame {d}"));
                    }
                }
                (Got::Close(code), _, Some(want)) => {
                    closed = true;
                    if want.as_u64() != Some(u64::from(code)) {
                        return Err(format!("{at}: the close frame is {code}, not {want}"));
                    }
                }
                (got, _, _) => return Err(format!("{at}: the hub wrote {got:?}")),
            },
            _ => program_step(e, o, undo).map_err(|w| format!("{at}: {w}"))?,
        }
    }
    // Nothing more than the record names.
    if let (Some(c), false) = (conn.as_mut(), closed) {
        if let Got::Text(v) = c.next(o.settle)? {
            return Err(format!("the hub wrote more than the record: {v}"));
        }
    }
    Ok(())
}

fn program_step(e: &Value, o: &Options, undo: &mut Vec<String>) -> Result<(), String> {
    let control = |line: &str| match &o.control {
        Some(p) => control_line(p, line),
        None => Err("no control socket".into()),
    };
    if let Some(ms) = e["wait_ms"].as_u64() {
        std::thread::sleep(Duration::from_millis(ms));
    } else if let Some(p) = e.get("place") {
        let public = o.public.as_deref().ok_or("no public endpoint")?;
        let headers = [
            ("Authorization", "Bearer t-alice".to_owned()),
            ("Content-Type", "application/json".to_owned()),
        ];
        let reply = limen_drivers::client::wire::http_exchange(
            public,
            "POST",
            "/call/Orders::place",
            &headers,
            p.to_string().as_bytes(),
        )
        .map_err(|e| format!("public did not answer the place: {e}"))?;
        if reply.status != 200 {
            return Err(format!("public answered the place {}", reply.status));
        }
    } else if let Some(x) = e.get("revoke") {
        let (p, role) = (
            x["principal"].as_str().unwrap_or_default(),
            x["role"].as_str().unwrap_or_default(),
        );
        control(&format!("revoke {p} {role}"))?;
        undo.push(format!("grant {p} {role}"));
    } else if let Some(x) = e.get("expire") {
        let token = x["token"].as_str().unwrap_or_default();
        control(&format!(
            "expire {token} {}",
            x["in_ms"].as_u64().unwrap_or(0)
        ))?;
        undo.push(format!("expire {token} 0"));
    } else if e.get("stop").is_some() {
        control("stop")?;
    }
    // Let the server act on it before the next element.
    std::thread::sleep(Duration::from_millis(50));
    Ok(())
}
