//! Operating a served program: one JSON line per call on standard error
//! (`--log calls`), and a metrics listener answering the Prometheus text
//! format (`--metrics ADDR`).
//!
//! Both hear every delivery of every exposure through the server's
//! [`CallObserver`], under the owner's lock: a log line is formatted and
//! written whole, a metric is a counter bumped in a table keyed by
//! exposure, member and outcome. What the metrics listener reads of the
//! hubs (subscribers, connections, events offered) it asks each hub when
//! it is scraped.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
    log: bool,
    metrics: bool,
    table: Mutex<Table>,
}

impl Observer {
    /// An observer that logs each call (`log`) and keeps metrics
    /// (`metrics`).
    pub fn new(log: bool, metrics: bool) -> Observer {
        Observer {
            log,
            metrics,
            table: Mutex::default(),
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
        if self.log {
            let line = serde_json::json!({
                "exposure": exposure,
                "member": member,
                "caller": &*delivery.caller.name,
                "outcome": outcome,
                "duration_ms": (seconds * 1e6).round() / 1e3,
                "request_id": delivery.request_id,
            });
            // One write a line: lines from several loops never interleave.
            let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
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

/// Answers `GET /metrics` (any other path 404) on `listener`, one
/// connection at a time, each read for at most two seconds.
pub fn serve_metrics(listener: TcpListener, observer: Arc<Observer>, gauges: Gauges) {
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        let _ = answer(conn, &observer, &gauges);
    }
}

fn answer(mut conn: TcpStream, observer: &Observer, gauges: &Gauges) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(2)))?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut first = String::new();
    reader.read_line(&mut first)?;
    // The rest of the head, up to its blank line (bounded).
    let mut line = String::new();
    for _ in 0..100 {
        line.clear();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" || line == "\n" {
            break;
        }
    }
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
