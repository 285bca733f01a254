//! The fan-out load client of `benches/scripts/fanout-vs-tungstenite`: the
//! same client drives `hale demo --hub` and `tungstenite-fanout`, so that
//! their ratio is taken under one load.
//!
//! It opens SUBSCRIBERS WebSocket connections to the hub (each upgrade
//! carrying `Authorization: Bearer TOKEN`, then the subscribe frame the spec
//! requires, `{"type":"subscribe","topic":TOPIC}`, answered `subscribed`),
//! reads the server's resident memory before and after (with `--pid`:
//! memory per idle subscriber), then publishes through the trigger: each of
//! WINDOW trigger threads places an order (`POST /call/Orders::place`,
//! `Connection: close`), reads the order number from the receipt, and waits
//! until every subscriber has received that order's event before placing
//! the next one. So WINDOW events are in flight at most (a closed loop:
//! queues stay bounded and the figure is what the server delivers, not
//! what it buffers), and an event's latency is from its trigger's send to
//! the receipt by the LAST subscriber. The subscribers are read by THREADS
//! threads, each a mio loop over its share of the sockets.
//!
//! Prints the idle memory line, then one `summary:` line: events/s (events
//! delivered to every subscriber), frames/s (event frames received in all),
//! latency p50/p99/max in microseconds, and events lost (not delivered to
//! every subscriber within 5 s).
//!
//! Two options serve `benches/scripts/cluster-fanout` (hubs on two nodes
//! through a broker) and change nothing unless given: `--hub2 ADDR` puts
//! the second half of the subscribers on a second hub (the first half stays
//! on WS-ADDR; the trigger is still TRIGGER-ADDR, so the second hub's
//! subscribers receive each event through the broker), and `--cpu-pid PID`
//! (repeatable) reads each process's CPU time (utime + stime of
//! `/proc/PID/stat`) at the start and the end of the measured seconds and
//! prints a `cpu:` line: each process's CPU milliseconds over them, their
//! total, and that total per event delivered to every subscriber.
//!
//! Usage: `fanout-load WS-ADDR TRIGGER-ADDR [--subscribers N] [--window W]
//! [--seconds S] [--warmup S] [--threads T] [--pid PID] [--token T]
//! [--bearer T] [--topic T] [--hub2 ADDR] [--cpu-pid PID]...`.
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token};

/// The client's settings, from its arguments.
struct Options {
    ws: String,
    trigger: String,
    subscribers: usize,
    window: usize,
    seconds: f64,
    warmup: f64,
    threads: usize,
    pid: Option<u32>,
    token: String,
    bearer: String,
    topic: String,
    /// A second hub, for the second half of the subscribers.
    hub2: Option<String>,
    /// Processes whose CPU time over the measured seconds is reported.
    cpu_pids: Vec<u32>,
}

fn usage() -> ! {
    eprintln!(
        "usage: fanout-load WS-ADDR TRIGGER-ADDR [--subscribers N] [--window W] [--seconds S] \
         [--warmup S] [--threads T] [--pid PID] [--token T] [--bearer T] [--topic T] \
         [--hub2 ADDR] [--cpu-pid PID]..."
    );
    std::process::exit(2)
}

fn options() -> Options {
    let mut args = std::env::args().skip(1);
    let (Some(ws), Some(trigger)) = (args.next(), args.next()) else {
        usage()
    };
    let mut o = Options {
        ws,
        trigger,
        subscribers: 1000,
        window: 8,
        seconds: 10.0,
        warmup: 2.0,
        threads: 1,
        pid: None,
        token: "t-dave".into(),
        bearer: "t-alice".into(),
        topic: "Fills".into(),
        hub2: None,
        cpu_pids: Vec::new(),
    };
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_else(|| usage());
        let number = || value.parse::<f64>().unwrap_or_else(|_| usage());
        match flag.as_str() {
            "--subscribers" => o.subscribers = number() as usize,
            "--window" => o.window = (number() as usize).max(1),
            "--seconds" => o.seconds = number(),
            "--warmup" => o.warmup = number(),
            "--threads" => o.threads = (number() as usize).max(1),
            "--pid" => o.pid = Some(number() as u32),
            "--token" => o.token = value,
            "--bearer" => o.bearer = value,
            "--topic" => o.topic = value,
            "--hub2" => o.hub2 = Some(value),
            "--cpu-pid" => o.cpu_pids.push(number() as u32),
            _ => usage(),
        }
    }
    o
}

/// The server's resident memory, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// A process's CPU time so far (utime + stime), in milliseconds, or `None`
/// once it is gone.
fn cpu_ms(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces:
    // the fields are counted from after its closing one, where field 3
    // (the state) is the first, so utime (14) and stime (15) are the 12th
    // and 13th.
    let mut rest = stat[stat.rfind(')')? + 1..].split_whitespace().skip(11);
    let utime: u64 = rest.next()?.parse().ok()?;
    let stime: u64 = rest.next()?.parse().ok()?;
    // /proc counts in USER_HZ ticks, which Linux fixes at 100 a second
    // for user space whatever the kernel's own tick rate.
    Some((utime + stime) * 10)
}

/// A client frame: masked, as RFC 6455 requires of a client. The key is
/// fixed: nothing here is secret, and both servers see the same bytes.
fn client_frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    const KEY: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];
    let mut out = vec![0x80 | opcode];
    // Every frame this client sends is short.
    assert!(payload.len() < 126);
    out.push(0x80 | payload.len() as u8);
    out.extend_from_slice(&KEY);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ KEY[i % 4]));
    out
}

/// One server frame at the start of `buf`: (opcode, payload range, frame
/// length), or `None` while it is incomplete. Server frames are unmasked.
fn server_frame(buf: &[u8]) -> Option<(u8, std::ops::Range<usize>, usize)> {
    if buf.len() < 2 {
        return None;
    }
    let opcode = buf[0] & 0x0f;
    let (len, head) = match buf[1] & 0x7f {
        126 => {
            if buf.len() < 4 {
                return None;
            }
            (u16::from_be_bytes([buf[2], buf[3]]) as usize, 4)
        }
        127 => {
            if buf.len() < 10 {
                return None;
            }
            let mut n = [0u8; 8];
            n.copy_from_slice(&buf[2..10]);
            (u64::from_be_bytes(n) as usize, 10)
        }
        n => (n as usize, 2),
    };
    (buf.len() >= head + len).then_some((opcode, head..head + len, head + len))
}

/// The number after `"order":` in a frame or a receipt.
fn order_of(text: &[u8]) -> Option<u64> {
    let at = memchr::memmem::find(text, b"\"order\":")? + 8;
    let digits = text[at..]
        .iter()
        .skip_while(|b| **b == b' ' || **b == b'"')
        .take_while(|b| b.is_ascii_digit());
    let mut n = 0u64;
    let mut any = false;
    for d in digits {
        n = n * 10 + u64::from(d - b'0');
        any = true;
    }
    any.then_some(n)
}

/// Opens one subscriber: the upgrade, the subscribe frame, its
/// `subscribed` answer. Returns the stream and the bytes read past it.
fn subscribe(o: &Options, hub: &str) -> Result<(TcpStream, Vec<u8>), String> {
    let mut s = TcpStream::connect(hub).map_err(|e| format!("connect {hub}: {e}"))?;
    s.set_nodelay(true).map_err(|e| e.to_string())?;
    let upgrade = format!(
        "GET / HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
         Authorization: Bearer {}\r\n\r\n",
        hub, o.token
    );
    s.write_all(upgrade.as_bytes()).map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        let n = s.read(&mut chunk).map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("closed during the upgrade".into());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = memchr::memmem::find(&buf, b"\r\n\r\n") {
            break at + 4;
        }
    };
    if !buf.starts_with(b"HTTP/1.1 101") {
        return Err(format!(
            "upgrade refused: {}",
            String::from_utf8_lossy(&buf[..end])
        ));
    }
    buf.drain(..end);
    let frame = format!(r#"{{"type":"subscribe","topic":"{}"}}"#, o.topic);
    s.write_all(&client_frame(0x1, frame.as_bytes()))
        .map_err(|e| e.to_string())?;
    loop {
        if let Some((opcode, payload, len)) = server_frame(&buf) {
            let text = &buf[payload];
            if opcode == 0x1 && memchr::memmem::find(text, b"\"subscribed\"").is_some() {
                buf.drain(..len);
                return Ok((s, buf));
            }
            if opcode == 0x1 || opcode == 0x8 {
                return Err(format!("not subscribed: {}", String::from_utf8_lossy(text)));
            }
            buf.drain(..len);
            continue;
        }
        let n = s.read(&mut chunk).map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("closed before subscribed".into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// What the trigger threads and the subscriber threads share: the events
/// each subscriber thread has seen whole, and the triggers still waiting.
#[derive(Default)]
struct Pending {
    /// By order: how many subscriber threads have it whole, and when the
    /// last of them did.
    parts: HashMap<u64, (usize, Instant)>,
    /// By order: a trigger thread waiting for it (its channel).
    waiting: HashMap<u64, Sender<Instant>>,
    /// By order: events delivered whole before their trigger's receipt
    /// came back.
    done: HashMap<u64, Instant>,
}

struct Shared {
    pending: Mutex<Pending>,
    threads: usize,
    stop: AtomicBool,
    measuring: AtomicBool,
    /// Event frames received by every subscriber, in all.
    frames: AtomicU64,
    /// Events delivered whole while measuring.
    events: AtomicU64,
    lost: AtomicU64,
    latencies: Mutex<Vec<u64>>,
}

impl Shared {
    /// One subscriber thread has `order` at all its subscribers.
    fn part_done(&self, order: u64, at: Instant) {
        let mut p = self.pending.lock().expect("pending");
        let entry = p.parts.entry(order).or_insert((0, at));
        entry.0 += 1;
        entry.1 = entry.1.max(at);
        if entry.0 < self.threads {
            return;
        }
        let last = entry.1;
        p.parts.remove(&order);
        match p.waiting.remove(&order) {
            Some(tx) => {
                let _ = tx.send(last);
            }
            None => {
                p.done.insert(order, last);
            }
        }
    }
}

/// Reads a share of the subscribers until told to stop.
fn subscribers(shared: Arc<Shared>, conns: Vec<(TcpStream, Vec<u8>)>) {
    let mut poll = Poll::new().expect("poll");
    let n = conns.len() as u32;
    let mut socks: Vec<(mio::net::TcpStream, Vec<u8>)> = conns
        .into_iter()
        .map(|(s, rest)| {
            s.set_nonblocking(true).expect("nonblocking");
            (mio::net::TcpStream::from_std(s), rest)
        })
        .collect();
    for (i, (s, _)) in socks.iter_mut().enumerate() {
        poll.registry()
            .register(s, Token(i), Interest::READABLE)
            .expect("register");
    }
    // By order: how many of this thread's subscribers have its event.
    let mut counts: HashMap<u64, u32> = HashMap::new();
    let mut events = Events::with_capacity(1024);
    let mut scratch = vec![0u8; 1 << 16];
    let seen = |order: u64, counts: &mut HashMap<u64, u32>| {
        let c = counts.entry(order).or_insert(0);
        *c += 1;
        if *c == n {
            counts.remove(&order);
            shared.part_done(order, Instant::now());
        }
    };
    // Bytes already read past each subscribe answer hold events too.
    for (_, rest) in socks.iter_mut() {
        let mut at = 0;
        while let Some((op, payload, len)) = server_frame(&rest[at..]) {
            if op == 0x1 {
                if let Some(o) = order_of(&rest[at..][payload]) {
                    shared.frames.fetch_add(1, Ordering::Relaxed);
                    seen(o, &mut counts);
                }
            }
            at += len;
        }
        rest.drain(..at);
    }
    while !shared.stop.load(Ordering::Relaxed) {
        if poll
            .poll(&mut events, Some(Duration::from_millis(100)))
            .is_err()
        {
            continue;
        }
        let mut frames = 0u64;
        for ev in events.iter() {
            let (sock, rest) = &mut socks[ev.token().0];
            loop {
                let got = match sock.read(&mut scratch) {
                    Ok(0) => {
                        eprintln!("fanout-load: a subscriber was closed");
                        let _ = poll.registry().deregister(sock);
                        break;
                    }
                    Ok(k) => k,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(e) => {
                        eprintln!("fanout-load: a subscriber failed: {e}");
                        let _ = poll.registry().deregister(sock);
                        break;
                    }
                };
                // Frames are parsed where they lie; only a torn one is kept.
                let data: &[u8] = if rest.is_empty() {
                    &scratch[..got]
                } else {
                    rest.extend_from_slice(&scratch[..got]);
                    rest
                };
                let mut at = 0;
                let mut pong = None;
                while let Some((op, payload, len)) = server_frame(&data[at..]) {
                    let body = &data[at..][payload];
                    match op {
                        0x1 => {
                            if let Some(o) = order_of(body) {
                                frames += 1;
                                seen(o, &mut counts);
                            }
                        }
                        0x9 => pong = Some(client_frame(0xa, body)),
                        0x8 => eprintln!("fanout-load: a subscriber got a close frame"),
                        _ => {}
                    }
                    at += len;
                }
                let left = data[at..].to_vec();
                *rest = left;
                if let Some(p) = pong {
                    let _ = sock.write_all(&p);
                }
            }
        }
        shared.frames.fetch_add(frames, Ordering::Relaxed);
    }
}

/// Places orders one after another, each once the last one's event has
/// reached every subscriber.
fn trigger(shared: Arc<Shared>, o: Arc<Options>) {
    let request = format!(
        "POST /call/Orders::place HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Authorization: Bearer {}\r\nConnection: close\r\nContent-Length: 40\r\n\r\n\
         {{\"symbol\":\"ACME\",\"qty\":10,\"limit\":12500}}",
        o.trigger, o.bearer
    );
    let mut reply = Vec::with_capacity(1024);
    while !shared.stop.load(Ordering::Relaxed) {
        let sent = Instant::now();
        reply.clear();
        let ok = TcpStream::connect(&o.trigger).and_then(|mut s| {
            s.set_nodelay(true)?;
            s.write_all(request.as_bytes())?;
            s.read_to_end(&mut reply)
        });
        let order = match ok.ok().and_then(|_| order_of(&reply)) {
            Some(order) => order,
            None => {
                eprintln!(
                    "fanout-load: the trigger failed: {}",
                    String::from_utf8_lossy(&reply)
                );
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        let delivered = {
            let mut p = shared.pending.lock().expect("pending");
            match p.done.remove(&order) {
                Some(at) => Ok(at),
                None => {
                    let (tx, rx) = channel();
                    p.waiting.insert(order, tx);
                    Err(rx)
                }
            }
        };
        let last = match delivered {
            Ok(at) => Some(at),
            Err(rx) => {
                let got = rx.recv_timeout(Duration::from_secs(5)).ok();
                if got.is_none() {
                    shared
                        .pending
                        .lock()
                        .expect("pending")
                        .waiting
                        .remove(&order);
                }
                got
            }
        };
        if !shared.measuring.load(Ordering::Relaxed) {
            continue;
        }
        match last {
            Some(at) => {
                shared.events.fetch_add(1, Ordering::Relaxed);
                let us = at.saturating_duration_since(sent).as_micros() as u64;
                shared.latencies.lock().expect("latencies").push(us);
            }
            None => {
                shared.lost.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

fn main() {
    let o = Arc::new(options());
    let rss_before = o.pid.map(rss_kib);
    let mut conns = Vec::with_capacity(o.subscribers);
    // With a second hub, the second half of the subscribers are its own.
    let on_first = match o.hub2 {
        Some(_) => o.subscribers.div_ceil(2),
        None => o.subscribers,
    };
    for i in 0..o.subscribers {
        let hub = match &o.hub2 {
            Some(second) if i >= on_first => second,
            _ => &o.ws,
        };
        match subscribe(&o, hub) {
            Ok(c) => conns.push(c),
            Err(e) => {
                eprintln!("fanout-load: subscriber {i}: {e}");
                std::process::exit(1);
            }
        }
    }
    std::thread::sleep(Duration::from_secs(1));
    if let (Some(pid), Some(before)) = (o.pid, rss_before) {
        let after = rss_kib(pid);
        println!(
            "idle: {} subscribers, server VmRSS {before} KiB -> {after} KiB, {:.0} B per subscriber",
            o.subscribers,
            (after.saturating_sub(before) * 1024) as f64 / o.subscribers as f64
        );
    }
    let threads = o.threads.min(o.subscribers.max(1));
    let shared = Arc::new(Shared {
        pending: Mutex::default(),
        threads,
        stop: AtomicBool::new(false),
        measuring: AtomicBool::new(false),
        frames: AtomicU64::new(0),
        events: AtomicU64::new(0),
        lost: AtomicU64::new(0),
        latencies: Mutex::default(),
    });
    let share = conns.len().div_ceil(threads);
    let mut readers = Vec::new();
    while !conns.is_empty() {
        let part: Vec<_> = conns.drain(..share.min(conns.len())).collect();
        let s = shared.clone();
        readers.push(std::thread::spawn(move || subscribers(s, part)));
    }
    let triggers: Vec<_> = (0..o.window)
        .map(|_| {
            let (s, o) = (shared.clone(), o.clone());
            std::thread::spawn(move || trigger(s, o))
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(o.warmup));
    let frames0 = shared.frames.load(Ordering::Relaxed);
    let cpu0: Vec<Option<u64>> = o.cpu_pids.iter().map(|p| cpu_ms(*p)).collect();
    shared.measuring.store(true, Ordering::Relaxed);
    let start = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(o.seconds));
    shared.measuring.store(false, Ordering::Relaxed);
    let elapsed = start.elapsed().as_secs_f64();
    let cpu1: Vec<Option<u64>> = o.cpu_pids.iter().map(|p| cpu_ms(*p)).collect();
    let frames = shared.frames.load(Ordering::Relaxed) - frames0;
    shared.stop.store(true, Ordering::Relaxed);
    for t in triggers {
        let _ = t.join();
    }
    for r in readers {
        let _ = r.join();
    }
    let mut lat = std::mem::take(&mut *shared.latencies.lock().expect("latencies"));
    lat.sort_unstable();
    let pct = |q: f64| {
        lat.get(((lat.len() as f64 * q).ceil() as usize).saturating_sub(1))
            .copied()
            .unwrap_or(0)
    };
    let events = shared.events.load(Ordering::Relaxed);
    if !o.cpu_pids.is_empty() {
        let mut line = String::from("cpu:");
        let mut total = 0;
        for ((pid, before), after) in o.cpu_pids.iter().zip(&cpu0).zip(&cpu1) {
            match (before, after) {
                (Some(b), Some(a)) => {
                    line += &format!(" pid {pid} ms {}", a - b);
                    total += a - b;
                }
                _ => {
                    eprintln!("fanout-load: no CPU time for pid {pid}");
                    std::process::exit(1);
                }
            }
        }
        println!(
            "{line} total_ms {total} us_per_event {:.0}",
            total as f64 * 1000.0 / events.max(1) as f64
        );
    }
    println!(
        "summary: subscribers {} window {} events/s {:.1} frames/s {:.0} p50_us {} p99_us {} max_us {} lost {}",
        o.subscribers,
        o.window,
        events as f64 / elapsed,
        frames as f64 / elapsed,
        pct(0.5),
        pct(0.99),
        lat.last().copied().unwrap_or(0),
        shared.lost.load(Ordering::Relaxed)
    );
}
