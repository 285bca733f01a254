//! Hubs across nodes through NATS (issue #32), with the real engines:
//! Debian's `nats-server` started by the test on 127.0.0.1 with a port of
//! its own, and three `hale demo --hub … --broker nats://…` nodes of the
//! witness program, each with WebSocket subscribers (the core's client
//! codec over a blocking socket) and its control socket.
//!
//! - an event published on one node reaches every subscriber of every
//!   node, in seq order per subscription, whichever node publishes;
//! - a subscriber that never reads sheds on its own node only: every other
//!   subscriber, on its node and the others, receives every event;
//! - a revocation on one node reaches a subscriber on another
//!   (`unauthorized`, `revoked`), and a grant made again admits it there;
//! - `stop` on one node closes its subscribers with `closed` and the
//!   others carry on;
//! - nats-server killed and started again on its port: local delivery
//!   never stops, the nodes reconnect by themselves, remote delivery
//!   resumes, and what was published during the outage reached its own
//!   node's subscribers at once and was held for the others: sent once the
//!   link is back, to the nodes linked by then, in order (the loss
//!   docs/decisions.md states, "Hubs across nodes (#32)").

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use limen_core::wire::ws::client::{self, ServerFrame};
use serde_json::{json, Value};

mod support;

use support::{absent, demo, Demo};

/// How long any awaited condition may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(30);

/// Debian's nats-server, on the PATH or where the package puts it.
fn nats_server() -> Option<PathBuf> {
    let on_path = Command::new("sh")
        .args(["-c", "command -v nats-server"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let found = on_path.or_else(|| {
        let sbin = PathBuf::from("/usr/sbin/nats-server");
        sbin.exists().then_some(sbin)
    });
    if found.is_none() {
        absent("nats-server is absent");
    }
    found
}

/// A nats-server process on 127.0.0.1 at a port of its own, killed when
/// dropped.
struct Nats {
    bin: PathBuf,
    port: u16,
    child: Option<Child>,
}

impl Nats {
    /// Starts one on a port no one holds.
    fn start(bin: PathBuf) -> Nats {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut n = Nats {
            bin,
            port,
            child: None,
        };
        n.restart();
        n
    }

    fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Starts the server (again) on its port and waits until it accepts.
    fn restart(&mut self) {
        let child = Command::new(&self.bin)
            .args(["-a", "127.0.0.1", "-p", &self.port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
        let addr = format!("127.0.0.1:{}", self.port);
        until("nats-server accepts", || TcpStream::connect(&addr).is_ok());
    }

    /// Kills the server (SIGKILL: no goodbye to its clients).
    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Nats {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Waits for `cond`, looking every 20 ms, failing after [`PATIENCE`].
fn until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !cond() {
        assert!(Instant::now() < deadline, "not in {PATIENCE:?}: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One control line's answer, whatever it is.
fn control_answer(d: &Demo, line: &str) -> String {
    let mut s = UnixStream::connect(&d.control).unwrap();
    writeln!(s, "{line}").unwrap();
    let mut answer = String::new();
    BufReader::new(s).read_line(&mut answer).unwrap();
    answer
}

/// A field of a node's `broker` line (`connected`, `dropped`, …).
fn broker_count(d: &Demo, field: &str) -> u64 {
    let line = control_answer(d, "broker");
    assert!(line.starts_with("ok "), "broker: {line}");
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{field}=")))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {field} in {line}"))
}

/// A node of the witness with its hub and a link to `nats`.
fn node(tag: &str, nats: &Nats) -> Demo {
    let d = demo(tag, &["--hub", "127.0.0.1:0", "--broker", &nats.url()]);
    assert!(!d.hub.is_empty(), "the banner names the hub");
    d
}

/// A persistent control connection that publishes.
struct Publisher {
    out: UnixStream,
    answers: BufReader<UnixStream>,
}

impl Publisher {
    fn to(d: &Demo) -> Publisher {
        let out = UnixStream::connect(&d.control).unwrap();
        let answers = BufReader::new(out.try_clone().unwrap());
        Publisher { out, answers }
    }

    /// Publishes a fill for each order, each answered `ok`.
    fn fills(&mut self, orders: impl IntoIterator<Item = u64>) {
        let lines: String = orders
            .into_iter()
            .map(|o| format!("publish Fills {{\"order\": {o}, \"qty\": 1, \"price\": 100}}\n"))
            .collect();
        self.out.write_all(lines.as_bytes()).unwrap();
        for _ in 0..lines.lines().count() {
            let mut answer = String::new();
            self.answers.read_line(&mut answer).unwrap();
            assert_eq!(answer, "ok\n", "a publish");
        }
    }
}

/// A WebSocket subscriber to Fills as dave: its frames read on a thread
/// of its own into a channel (`{"type": "eof"}` when the connection ends),
/// once [`Sub::read`] starts it.
struct Sub {
    stream: TcpStream,
    reader: Option<client::ServerReader>,
    frames: Option<Receiver<Value>>,
    /// The next seq this subscription should carry.
    seq: u64,
}

impl Sub {
    /// Connects and subscribes, with a receive buffer of `rcvbuf` bytes
    /// when given (set before connecting, so the window is small from the
    /// start); reads from then on unless `reads` is false.
    fn to(d: &Demo, rcvbuf: Option<usize>, reads: bool) -> Sub {
        let addr: std::net::SocketAddr = d.hub.parse().unwrap();
        let socket =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        if let Some(n) = rcvbuf {
            socket.set_recv_buffer_size(n).unwrap();
        }
        socket.connect(&addr.into()).unwrap();
        let mut stream: TcpStream = socket.into();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut buf = vec![0u8; 64 * 1024];
        let key = client::key([5; 16]);
        let reader = limen_drivers::client::hub_conn::upgrade(
            &mut stream,
            &d.hub,
            "/",
            &key,
            Some("t-dave"),
            &mut buf,
        )
        .unwrap();
        let mut s = Sub {
            stream,
            reader: Some(reader),
            frames: None,
            seq: 1,
        };
        s.subscribe();
        // The answer is read in place: nothing else is sent before it.
        let mut reader = s.reader.take().unwrap();
        let subscribed = loop {
            if let Some(ServerFrame::Text(t)) = reader.poll_frame().unwrap() {
                break serde_json::from_str::<Value>(&t).unwrap();
            }
            let n = s.stream.read(&mut buf).unwrap();
            assert!(n > 0, "the subscribe is answered");
            reader.handle_data(&buf[..n]);
        };
        assert_eq!(subscribed, json!({"type": "subscribed", "topic": "Fills"}));
        s.reader = Some(reader);
        if reads {
            s.read();
        }
        s
    }

    fn subscribe(&mut self) {
        self.stream
            .write_all(&client::text(
                r#"{"type":"subscribe","topic":"Fills"}"#,
                [1, 2, 3, 4],
            ))
            .unwrap();
    }

    /// Starts reading its frames on a thread of its own.
    fn read(&mut self) {
        let mut reader = self.reader.take().expect("read once");
        let mut stream = self.stream.try_clone().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match reader.poll_frame() {
                    Ok(Some(ServerFrame::Text(t))) => {
                        let v = serde_json::from_str(&t).unwrap_or(Value::Null);
                        if tx.send(v).is_err() {
                            return;
                        }
                        continue;
                    }
                    Ok(Some(_)) => continue,
                    Ok(None) => {}
                    Err(_) => break,
                }
                match stream.read(&mut buf) {
                    Ok(n) if n > 0 => reader.handle_data(&buf[..n]),
                    _ => break,
                }
            }
            let _ = tx.send(json!({"type": "eof"}));
        });
        self.frames = Some(rx);
    }

    /// The next frame, waiting [`PATIENCE`] at most.
    fn next(&self) -> Value {
        self.frames
            .as_ref()
            .expect("a reading subscriber")
            .recv_timeout(PATIENCE)
            .expect("a frame in time")
    }

    /// The next frame is the event of `order`, at the next seq.
    /// Reads events until the one of `order`, which must come, each at the
    /// next seq; the orders of those before it.
    fn until_order(&mut self, order: u64, who: &str) -> Vec<u64> {
        let mut before = Vec::new();
        loop {
            let got = self.next();
            assert_eq!(got["type"], "event", "{who}: {got}");
            assert_eq!(got["seq"], self.seq, "{who}: {got}");
            self.seq += 1;
            let o = got["payload"]["order"].as_u64().unwrap();
            if o == order {
                return before;
            }
            before.push(o);
        }
    }

    fn event(&mut self, order: u64, who: &str) {
        let got = self.next();
        assert_eq!(
            got,
            json!({"type": "event", "topic": "Fills", "seq": self.seq,
                   "payload": {"order": order, "qty": 1, "price": 100}}),
            "{who}"
        );
        self.seq += 1;
    }
}

/// Three nodes of one program on `nats`, each linked.
fn three(tag: &str, nats: &Nats) -> [Demo; 3] {
    let nodes = [
        node(&format!("{tag}-a"), nats),
        node(&format!("{tag}-b"), nats),
        node(&format!("{tag}-c"), nats),
    ];
    for n in &nodes {
        until("every node is linked", || broker_count(n, "connected") == 1);
    }
    nodes
}

#[test]
fn events_revocations_and_stops_cross_nodes_and_a_slow_subscriber_sheds_alone() {
    let Some(bin) = nats_server() else { return };
    let nats = Nats::start(bin);
    let [a, b, c] = three("cluster-events", &nats);
    let mut subs = [
        ("a", Sub::to(&a, None, true)),
        ("b", Sub::to(&b, None, true)),
        ("c", Sub::to(&c, None, true)),
    ];
    // On b, beside b's reader: a subscriber that never reads, with a
    // small window, so what b's hub writes it backs up at once.
    let mut slow = Sub::to(&b, Some(4096), false);

    // Published on a, then on c: every subscriber of every node receives
    // each, in the order published, at consecutive seqs. A batch fits the
    // row's bound (64), so a reader never sheds; the slow one backs up
    // until its node sheds its queue (drop_old): 67,200 frames of ~90
    // bytes are more than a loopback socket's buffers hold (tcp_wmem's
    // ceiling is 4 MiB), so some must be shed.
    const BATCH: u64 = 48;
    const EVENTS: u64 = 48 * 1400;
    let mut on_a = Publisher::to(&a);
    let mut order = 0;
    while order < EVENTS {
        let batch = order..order + BATCH;
        on_a.fills(batch.clone());
        for o in batch {
            for (who, s) in subs.iter_mut() {
                s.event(o, who);
            }
        }
        order += BATCH;
    }
    let mut on_c = Publisher::to(&c);
    on_c.fills(EVENTS..EVENTS + 5);
    for o in EVENTS..EVENTS + 5 {
        for (who, s) in subs.iter_mut() {
            s.event(o, who);
        }
    }
    let total = EVENTS + 5;
    assert_eq!(broker_count(&a, "published"), EVENTS);
    assert_eq!(broker_count(&c, "published"), 5);
    until("b counts what arrived", || {
        broker_count(&b, "received") == total
    });
    assert_eq!(
        broker_count(&b, "published"),
        0,
        "nothing arrived is sent on"
    );

    // The slow subscriber reads now: its seqs still climb in order, but its
    // node shed some of its queue (a gap), or let it go (a write stalled
    // 5 s, § Streams): it never had every event the others had.
    slow.read();
    let mut seen = 0;
    let mut last = 0;
    loop {
        let got = slow.next();
        if got["type"] == "eof" {
            break;
        }
        assert_eq!(got["type"], "event", "{got}");
        let seq = got["seq"].as_u64().unwrap();
        assert!(seq > last, "seq {seq} after {last}");
        // The event at a seq is the one offered then: seq n is order n-1.
        assert_eq!(got["payload"]["order"], seq - 1);
        last = seq;
        seen += 1;
        if seq == total {
            break;
        }
    }
    assert!(
        seen < total,
        "the slow subscriber received every one of {total} events: nothing was shed"
    );
    eprintln!("the slow subscriber received {seen} of {total}");
    drop(slow);

    // A revocation on a reaches the subscribers of b and c, as a's own.
    a.control("revoke dave operator");
    for (who, s) in subs.iter_mut() {
        assert_eq!(
            s.next(),
            json!({"type": "unauthorized", "topic": "Fills", "reason": "revoked"}),
            "{who}"
        );
    }
    assert!(broker_count(&c, "revisions") >= 1);
    // A grant made again on b admits dave on a and c.
    b.control("grant dave operator");
    // a sent one change and applies this one; c applies both.
    until("the grant reaches a and c", || {
        broker_count(&a, "revisions") == 2 && broker_count(&c, "revisions") == 2
    });
    let mut subs = [
        ("a", Sub::to(&a, None, true)),
        ("b", Sub::to(&b, None, true)),
        ("c", Sub::to(&c, None, true)),
    ];
    on_a.fills([1_000_000]);
    for (who, s) in subs.iter_mut() {
        s.event(1_000_000, who);
    }

    // c stops: its subscriber sees closed, and a and b carry on.
    c.control("stop");
    let [sa, sb, sc] = &mut subs;
    assert_eq!(
        sc.1.next(),
        json!({"type": "closed", "reason": "shutting_down"})
    );
    on_a.fills([1_000_001]);
    sa.1.event(1_000_001, "a after c stopped");
    sb.1.event(1_000_001, "b after c stopped");
    let mut on_b = Publisher::to(&b);
    on_b.fills([1_000_002]);
    sa.1.event(1_000_002, "a, published on b");
    sb.1.event(1_000_002, "b, published on b");
}

#[test]
fn a_broker_outage_stops_no_local_delivery_and_the_nodes_come_back_by_themselves() {
    let Some(bin) = nats_server() else { return };
    let mut nats = Nats::start(bin);
    let nodes = three("cluster-outage", &nats);
    let [a, b, c] = &nodes;
    let (mut sa, mut sb, mut sc) = (
        Sub::to(a, None, true),
        Sub::to(b, None, true),
        Sub::to(c, None, true),
    );
    let mut on_a = Publisher::to(a);
    let mut on_b = Publisher::to(b);
    on_a.fills([1]);
    for (who, s) in [("a", &mut sa), ("b", &mut sb), ("c", &mut sc)] {
        s.event(1, who);
    }

    nats.kill();
    for n in &nodes {
        until("every node sees the link down", || {
            broker_count(n, "connected") == 0
        });
    }
    // Local delivery never stops; what is published meanwhile reaches its
    // own node's subscribers at once and is held for the others, none
    // dropped (the bound holds megabytes).
    on_a.fills([2, 3, 4]);
    for o in [2, 3, 4] {
        sa.event(o, "a during the outage");
    }
    assert_eq!(broker_count(a, "dropped"), 0);

    nats.restart();
    for n in &nodes {
        until("every node links again by itself", || {
            broker_count(n, "connected") == 1
        });
        assert_eq!(broker_count(n, "connections"), 2);
    }
    // Remote delivery resumes. a sends what it held once its own link is
    // back; a node whose link came back before reaches them, in order,
    // and one whose link came back later never does (NATS delivers to the
    // subscriptions the server holds when a message arrives). Either way
    // an event a node never received takes no seq there: the next event
    // is at the seq after its last.
    on_a.fills([6]);
    sa.event(6, "a after the outage");
    let mut late = 0;
    for (who, s) in [("b", &mut sb), ("c", &mut sc)] {
        let held = s.until_order(6, who);
        assert!(
            held.is_empty() || held == [2, 3, 4] || held == [3, 4] || held == [4],
            "{who} received the held events in order, a tail of them at most: {held:?}"
        );
        late += held.len() as u64;
    }
    eprintln!("events held through the outage and received late on b and c: {late} of 6");
    on_b.fills([7]);
    sa.event(7, "a, published on b");
    sb.event(7, "b, published on b");
    sc.event(7, "c, published on b");
    // From the broker: b and c each 1 and 6, c 7 too, and what was held.
    until(
        "b and c count 1, 6, 7 and what was held; a counts 7",
        || {
            broker_count(b, "received") + broker_count(c, "received") == 5 + late
                && broker_count(a, "received") == 1
        },
    );
}
