//! Operating a served program: one JSON line per call on standard error
//! (`--log calls`), and a metrics listener answering the Prometheus text
//! format (`--metrics ADDR`).
//!
//! Both hear every delivery of every exposure through the server's
//! [`CallObserver`], on the loop that completed the call: a log line is
//! formatted there and handed to a writer thread of its own through a
//! bounded queue, so a standard error nobody reads (a full pipe) never
//! stalls the loop — what does not fit is counted and said in one line
//! when the writer catches up; a metric is a counter bumped in a table
//! keyed by exposure, member and outcome. What the metrics listener reads
//! of the hubs (subscribers, connections, events offered) it asks each hub
//! when it is scraped. The listener answers each scrape on a thread of its
//! own, each with a deadline and a cap on what it reads, so a silent or
//! trickling client holds neither the listener nor memory.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use limen_core::hale::runtime::{Delivery, Outcome};

use crate::serve::hub::HubHandle;
use crate::serve::{unix_now, CallObserver};

/// The outcome's name as the log and the metrics write it: `result`,
/// `handler_error`, `server_error`, `description`, or the refusal's kind.
pub fn outcome_name(outcome: &Outcome) -> &str {
    match outcome {
        Outcome::Result(_) => "result",
        Outcome::HandlerError(_) => "handler_error",
        Outcome::ServerError => "server_error",
        Outcome::Description(_) => "description",
        Outcome::Refusal(r) => r.kind.as_str(),
    }
}

/// The upper bounds of the latency histogram's buckets, in seconds.
const BUCKETS: [f64; 14] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 2.5, 10.0,
];

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

#[derive(Default)]
struct Table {
    /// Calls by (exposure, member, outcome).
    calls: BTreeMap<(String, String, String), u64>,
    /// Latency by exposure.
    latency: BTreeMap<String, Histogram>,
    /// Requests held by exposure.
    depth: BTreeMap<String, usize>,
}

/// What the server observes, and what `--log` and `--metrics` make of it.
#[derive(Default)]
pub struct Observer {
    log: Option<CallLog>,
    metrics: bool,
    table: Mutex<Table>,
}

/// The lines a call log holds for its writer before it sheds: enough for
/// a burst of a second at a high call rate, a few MB at most.
pub const LOG_QUEUE: usize = 16 * 1024;

/// The call log: lines queued for the writer thread, and those shed.
struct CallLog {
    lines: Mutex<Option<SyncSender<String>>>,
    dropped: Arc<AtomicU64>,
    writer: Mutex<Option<JoinHandle<()>>>,
}

impl CallLog {
    fn start(out: Box<dyn Write + Send>) -> CallLog {
        let (tx, rx) = sync_channel(LOG_QUEUE);
        let dropped = Arc::new(AtomicU64::new(0));
        let shed = dropped.clone();
        let writer = std::thread::Builder::new()
            .name("hale call log".into())
            .spawn(move || write_lines(rx, out, &shed))
            .ok();
        CallLog {
            lines: Mutex::new(writer.is_some().then_some(tx)),
            dropped,
            writer: Mutex::new(writer),
        }
    }

    fn push(&self, line: String) {
        let lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tx) = lines.as_ref() {
            if let Err(TrySendError::Full(_)) = tx.try_send(line) {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn close(&self) {
        drop(self.lines.lock().unwrap_or_else(|e| e.into_inner()).take());
        let writer = self.writer.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(w) = writer {
            let _ = w.join();
        }
    }
}

/// The writer thread: each line whole in one write, so lines never
/// interleave with anything else written to the stream; after a line, the
/// count of lines shed since the last such note, if any.
fn write_lines(rx: Receiver<String>, mut out: Box<dyn Write + Send>, dropped: &AtomicU64) {
    let note = |out: &mut Box<dyn Write + Send>| {
        let n = dropped.swap(0, Ordering::Relaxed);
        if n > 0 {
            let line = serde_json::json!({ "log": "dropped", "lines": n });
            let _ = out.write_all(format!("{line}\n").as_bytes());
        }
    };
    for line in rx {
        let _ = out.write_all(line.as_bytes());
        note(&mut out);
    }
    note(&mut out);
    let _ = out.flush();
}

impl Observer {
    /// An observer that logs each call to standard error (`log`) and
    /// keeps metrics (`metrics`).
    pub fn new(log: bool, metrics: bool) -> Observer {
        Observer::writing_to(
            log.then(|| Box::new(std::io::stderr()) as Box<dyn Write + Send>),
            metrics,
        )
    }

    /// An observer that logs each call to `log` when given.
    pub fn writing_to(log: Option<Box<dyn Write + Send>>, metrics: bool) -> Observer {
        Observer {
            log: log.map(CallLog::start),
            metrics,
            table: Mutex::default(),
        }
    }

    /// Writes out every line logged so far and ends the log's writer: what
    /// a stopping server calls last, so no line is lost at exit. A call
    /// delivered afterwards is not logged.
    pub fn close(&self) {
        if let Some(log) = &self.log {
            log.close();
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl CallObserver for Observer {
    fn delivered(&self, exposure: &str, member: Option<&str>, delivery: &Delivery) {
        let now = unix_now();
        let seconds = now.saturating_sub(delivery.accepted) as f64 / 1e9;
        let outcome = outcome_name(&delivery.outcome);
        if let Some(log) = &self.log {
            let line = serde_json::json!({
                "exposure": exposure,
                "member": member,
                "caller": &*delivery.caller.name,
                "outcome": outcome,
                "duration_ms": (seconds * 1e6).round() / 1e3,
                "request_id": delivery.request_id,
            });
            log.push(format!("{line}\n"));
        }
        if self.metrics {
            let mut t = self.table();
            *t.calls
                .entry((
                    exposure.to_owned(),
                    member.unwrap_or("").to_owned(),
                    outcome.to_owned(),
                ))
                .or_default() += 1;
            let h = t.latency.entry(exposure.to_owned()).or_default();
            h.count += 1;
            h.sum += seconds;
            if let Some(i) = BUCKETS.iter().position(|b| seconds <= *b) {
                h.counts[i] += 1;
            }
        }
    }

    fn depth(&self, exposure: &str, pending: usize) {
        if self.metrics {
            let mut t = self.table();
            match t.depth.get_mut(exposure) {
                Some(d) => *d = pending,
                None => {
                    t.depth.insert(exposure.to_owned(), pending);
                }
            }
        }
    }
}

/// What the metrics listener reports beside the observer's table.
#[derive(Clone, Default)]
pub struct Gauges {
    /// Each exposure's connections open, by exposure name.
    pub connections: Vec<(String, Arc<AtomicUsize>)>,
    /// Each hub, by name.
    pub hubs: Vec<(String, HubHandle)>,
}

/// A label value escaped as the text format asks (`\`, `"`, newline).
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The metrics in the Prometheus text format (version 0.0.4).
pub fn render(observer: &Observer, gauges: &Gauges) -> String {
    let t = observer.table();
    let mut out = String::new();
    out.push_str("# HELP hale_calls_total Requests answered, by exposure, member and outcome.\n");
    out.push_str("# TYPE hale_calls_total counter\n");
    for ((e, m, o), n) in &t.calls {
        out.push_str(&format!(
            "hale_calls_total{{exposure=\"{}\",member=\"{}\",outcome=\"{}\"}} {n}\n",
            label(e),
            label(m),
            label(o)
        ));
    }
    out.push_str(
        "# HELP hale_call_duration_seconds Time from a request's admission to its answer.\n",
    );
    out.push_str("# TYPE hale_call_duration_seconds histogram\n");
    for (e, h) in &t.latency {
        let e = label(e);
        let mut cumulative = 0;
        for (bound, n) in BUCKETS.iter().zip(h.counts) {
            cumulative += n;
            out.push_str(&format!(
                "hale_call_duration_seconds_bucket{{exposure=\"{e}\",le=\"{bound}\"}} {cumulative}\n"
            ));
        }
        out.push_str(&format!(
            "hale_call_duration_seconds_bucket{{exposure=\"{e}\",le=\"+Inf\"}} {}\n",
            h.count
        ));
        out.push_str(&format!(
            "hale_call_duration_seconds_sum{{exposure=\"{e}\"}} {}\n",
            h.sum
        ));
        out.push_str(&format!(
            "hale_call_duration_seconds_count{{exposure=\"{e}\"}} {}\n",
            h.count
        ));
    }
    out.push_str("# HELP hale_queue_depth Requests accepted and not yet answered.\n");
    out.push_str("# TYPE hale_queue_depth gauge\n");
    for (e, d) in &t.depth {
        out.push_str(&format!(
            "hale_queue_depth{{exposure=\"{}\"}} {d}\n",
            label(e)
        ));
    }
    drop(t);
    out.push_str("# HELP hale_connections Connections open, by exposure or hub.\n");
    out.push_str("# TYPE hale_connections gauge\n");
    for (e, n) in &gauges.connections {
        out.push_str(&format!(
            "hale_connections{{exposure=\"{}\"}} {}\n",
            label(e),
            n.load(Ordering::Relaxed)
        ));
    }
    let reports: Vec<_> = gauges
        .hubs
        .iter()
        .filter_map(|(name, h)| h.report().map(|r| (name, r)))
        .collect();
    for (name, r) in &reports {
        out.push_str(&format!(
            "hale_connections{{exposure=\"{}\"}} {}\n",
            label(name),
            r.connections
        ));
    }
    out.push_str("# HELP hale_hub_subscribers Subscriptions admitted and not ended.\n");
    out.push_str("# TYPE hale_hub_subscribers gauge\n");
    for (name, r) in &reports {
        out.push_str(&format!(
            "hale_hub_subscribers{{hub=\"{}\"}} {}\n",
            label(name),
            r.subscribers
        ));
    }
    out.push_str("# HELP hale_hub_events_total Events the hub's topics have offered.\n");
    out.push_str("# TYPE hale_hub_events_total counter\n");
    for (name, r) in &reports {
        out.push_str(&format!(
            "hale_hub_events_total{{hub=\"{}\"}} {}\n",
            label(name),
            r.events
        ));
    }
    out
}

/// Binds the metrics listener at `addr`; the caller serves it on a thread
/// of its own with [`serve_metrics`].
pub fn bind(addr: &str) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr)
}

/// How long a scrape may take to send its request head.
pub const SCRAPE_DEADLINE: Duration = Duration::from_secs(2);
/// The most bytes of a request head a scrape may send.
pub const SCRAPE_HEAD_MAX: usize = 8 * 1024;
/// The most scrapes answered at once; a connection beyond it is closed.
pub const SCRAPES_AT_ONCE: usize = 8;

/// Answers `GET /metrics` (any other path 404) on `listener`, each
/// connection on a thread of its own (at most [`SCRAPES_AT_ONCE`]), each
/// head read within [`SCRAPE_DEADLINE`] and [`SCRAPE_HEAD_MAX`] bytes.
pub fn serve_metrics(listener: TcpListener, observer: Arc<Observer>, gauges: Gauges) {
    let busy = Arc::new(AtomicUsize::new(0));
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        if busy.fetch_add(1, Ordering::AcqRel) >= SCRAPES_AT_ONCE {
            busy.fetch_sub(1, Ordering::AcqRel);
            continue;
        }
        let (observer, gauges, done) = (observer.clone(), gauges.clone(), busy.clone());
        let spawned = std::thread::Builder::new()
            .name("hale metrics scrape".into())
            .spawn(move || {
                let _ = answer(conn, &observer, &gauges);
                done.fetch_sub(1, Ordering::AcqRel);
            });
        if spawned.is_err() {
            busy.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Reads a request head up to its blank line, within the deadline and the
/// cap; `None` when the client did not send one in time.
fn read_head(conn: &mut TcpStream) -> std::io::Result<Option<String>> {
    let deadline = Instant::now() + SCRAPE_DEADLINE;
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    loop {
        if head.windows(4).any(|w| w == b"\r\n\r\n") || head.windows(2).any(|w| w == b"\n\n") {
            return Ok(Some(String::from_utf8_lossy(&head).into_owned()));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || head.len() >= SCRAPE_HEAD_MAX {
            return Ok(None);
        }
        conn.set_read_timeout(Some(left))?;
        let n = match conn.read(&mut buf) {
            Ok(0) => return Ok(None),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Ok(None)
            }
            Err(e) => return Err(e),
        };
        head.extend_from_slice(&buf[..n.min(SCRAPE_HEAD_MAX - head.len())]);
    }
}

fn answer(mut conn: TcpStream, observer: &Observer, gauges: &Gauges) -> std::io::Result<()> {
    let Some(head) = read_head(&mut conn)? else {
        return Ok(());
    };
    let first = head.lines().next().unwrap_or("");
    let path = first.split_whitespace().nth(1).unwrap_or("");
    let (status, body, kind) = if first.starts_with("GET ") && path == "/metrics" {
        (
            "200 OK",
            render(observer, gauges),
            "text/plain; version=0.0.4; charset=utf-8",
        )
    } else {
        ("404 Not Found", "GET /metrics\n".to_owned(), "text/plain")
    };
    conn.write_all(
        format!(
            "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Condvar;

    /// A stream that takes nothing until it is opened, then keeps all.
    #[derive(Clone, Default)]
    struct Gated {
        open: Arc<(Mutex<bool>, Condvar)>,
        taken: Arc<Mutex<Vec<u8>>>,
    }

    impl Write for Gated {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let (lock, cv) = &*self.open;
            let mut open = lock.lock().unwrap();
            while !*open {
                open = cv.wait(open).unwrap();
            }
            self.taken.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_log_nobody_reads_sheds_lines_and_never_holds_the_caller() {
        let out = Gated::default();
        let log = Arc::new(CallLog::start(Box::new(out.clone())));
        let total = LOG_QUEUE + 500;
        // Every push returns though the stream takes nothing: the loop that
        // delivers a call is never held by its log.
        let (done, pushed) = std::sync::mpsc::channel();
        let pusher = log.clone();
        std::thread::spawn(move || {
            for i in 0..total {
                pusher.push(format!("{{\"call\":{i}}}\n"));
            }
            let _ = done.send(());
        });
        pushed
            .recv_timeout(Duration::from_secs(30))
            .expect("the pushes returned while the stream was stuck");
        *out.open.0.lock().unwrap() = true;
        out.open.1.notify_all();
        log.close();
        let text = String::from_utf8(out.taken.lock().unwrap().clone()).unwrap();
        let calls = text.lines().filter(|l| l.starts_with("{\"call\"")).count();
        let dropped: u64 = text
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v["log"] == "dropped")
            .map(|v| v["lines"].as_u64().unwrap())
            .sum();
        assert!(dropped > 0, "the queue overflowed and said so");
        assert_eq!(
            calls as u64 + dropped,
            total as u64,
            "each line written or counted"
        );
        // What was kept is in order.
        let order: Vec<u64> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v["call"].as_u64())
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn a_closed_log_has_written_every_line() {
        let out = Gated::default();
        *out.open.0.lock().unwrap() = true;
        let log = CallLog::start(Box::new(out.clone()));
        for i in 0..100 {
            log.push(format!("{i}\n"));
        }
        log.close();
        assert_eq!(
            out.taken
                .lock()
                .unwrap()
                .iter()
                .filter(|b| **b == b'\n')
                .count(),
            100
        );
        // A push after close is not written, and does not fail.
        log.push("late\n".into());
    }

    #[test]
    fn a_trickling_scraper_is_cut_off_and_holds_no_other_scrape() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let observer = Arc::new(Observer::writing_to(None, true));
        std::thread::spawn(move || serve_metrics(listener, observer, Gauges::default()));
        // One byte of a head every 100 ms: each read succeeds, so only a
        // deadline on the whole head ends it.
        let trickler = std::thread::spawn(move || {
            let mut c = TcpStream::connect(addr).unwrap();
            c.set_read_timeout(Some(Duration::from_millis(100)))
                .unwrap();
            let start = Instant::now();
            let mut b = [0u8; 64];
            loop {
                assert!(start.elapsed() < Duration::from_secs(20), "never cut off");
                if c.write_all(b"G").is_err() {
                    return start.elapsed();
                }
                match c.read(&mut b) {
                    // The 100 ms passed with the head still open: trickle on.
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) => {}
                    // Closed (or reset) by the server.
                    _ => return start.elapsed(),
                }
            }
        });
        // Meanwhile a scrape is answered.
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        assert!(reply.starts_with("HTTP/1.1 200 OK"), "{reply}");
        assert!(reply.contains("# TYPE hale_calls_total counter"), "{reply}");
        assert!(trickler.join().unwrap() >= SCRAPE_DEADLINE);
    }
}
