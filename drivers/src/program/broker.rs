//! Hubs across nodes: a served program's link to a NATS server
//! (`broker = "nats://host:port"` in `serve.toml`, `--broker` on the
//! command line), so its hubs span every node that serves the program.
//!
//! Every event the program publishes on a node (the control socket's
//! `publish`, `hale publish`, a receiver given in process) is offered to
//! that node's hubs and sent on `hale.<stream digest>.<wire subject>`
//! ([`subject`]); every node subscribes to its hubs' subjects and offers
//! what arrives to its own hubs through the same path a local publish
//! takes ([`Publisher::offer_remote`]): the row's bound and on_full, a seq
//! per subscription, the bus frame. The link says `echo: false`, so an
//! event never comes back to the node that sent it, and an event that
//! arrived is never sent on. A change to a role source on one node (a
//! grant, a revoke, a reload) is sent on `hale.<scope>.__api.roles.revision`
//! ([`RoleChange`]) and every other node makes it to its own sources, which
//! announce the revision to their hubs (§ Streams, How the hub knows).
//!
//! The link is [`NatsClient`], the sans-I/O machine, driven over a blocking
//! [`TcpStream`] by two threads: the reader (connects, reconnects with the
//! machine's [`Backoff`], reads with a timeout taken from the machine's
//! `poll_timeout`, and dispatches what arrives) and the writer (writes the
//! machine's output), so a thread that publishes never waits on the
//! network. What an outage costs is written in `docs/decisions.md`, "Hubs
//! across nodes (#32)": an event published while the link is down reaches
//! this node's subscribers at once and is held (up to a bound) for the
//! others, sent when the link is back; what the bound cannot hold is
//! counted in [`BrokerReport::dropped`].

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use limen_core::wire::machine::Machine;
use limen_core::wire::nats::{Backoff, NatsClient, NatsEvent, Options, PublishError};
use limen_core::wire::ws::HubLimits;
use limen_core::Timestamp;

use super::hubs::Publisher;
use super::sources::{RoleChange, Sources};

/// How long a connection attempt may take.
const CONNECT_WAIT: Duration = Duration::from_secs(2);

/// How long a write to the server may stall before the link is given up
/// (and made again).
const WRITE_WAIT: Duration = Duration::from_secs(5);

/// The longest the reader waits in one read: the machine's next timer is
/// usually nearer.
const READ_WAIT: Duration = Duration::from_secs(1);

/// The most bytes the writer takes from the machine at once.
const WRITE_CHUNK: usize = 256 * 1024;

/// The most bytes of output the link holds unwritten while connected; an
/// event past it (a server that does not read) is dropped and counted.
const MAX_UNWRITTEN: usize = 8 * 1024 * 1024;

pub use super::hubs::broker_subject as subject;

/// The subject a program's role-source changes travel on: under the
/// stream digest of its first hub (by name), which every node of the
/// program serves.
pub fn revision_subject(scope: &str) -> String {
    subject(scope, "__api.roles.revision")
}

pub use super::config::parse_broker_url as parse_url;

/// A wire subject a broker can carry as it is: dot-separated tokens, none
/// empty, none a NATS wildcard (`*`, `>`), no white space, and not under
/// `__api` (the runtime's own subjects).
fn carried(wire: &str) -> Result<(), String> {
    if wire
        .split('.')
        .any(|t| t.is_empty() || t == "*" || t == ">" || t.contains(char::is_whitespace))
        || wire.starts_with("__api")
    {
        return Err(format!(
            "the wire subject `{wire}` cannot be carried by a broker (empty tokens, `*`, `>`, white space and `__api` are NATS's or the runtime's)"
        ));
    }
    Ok(())
}

/// What the link has done, as the control socket's `broker` line reports
/// it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BrokerReport {
    /// Whether the link is up (the server answered its first PING).
    pub connected: bool,
    /// Events sent to the broker.
    pub published: u64,
    /// Events that arrived from other nodes and were offered to this
    /// node's hubs.
    pub received: u64,
    /// Events not sent (the link was down, or its output was full): they
    /// reached this node's subscribers only.
    pub dropped: u64,
    /// Events that arrived and were not offered (not the topic's shape,
    /// not a topic this node serves).
    pub refused: u64,
    /// Role-source changes sent, and applied from other nodes.
    pub revisions: u64,
    /// How many times the link was made (the first included).
    pub connections: u64,
}

#[derive(Default)]
struct Counts {
    connected: AtomicBool,
    published: AtomicU64,
    received: AtomicU64,
    dropped: AtomicU64,
    refused: AtomicU64,
    revisions: AtomicU64,
    connections: AtomicU64,
}

struct Link {
    client: NatsClient,
    /// The socket of the current connection, for the writer.
    stream: Option<Arc<TcpStream>>,
    /// Grows by one per connection made and lost: the writer's bytes
    /// belong to one.
    generation: u64,
    /// Whether the machine has had a connection (the next needs
    /// `reconnect`).
    used: bool,
    stopped: bool,
}

struct Shared {
    link: Mutex<Link>,
    /// The writer waits on it for output; the reader, between attempts,
    /// for a stop.
    wake: Condvar,
    counts: Counts,
    epoch: Instant,
}

impl Shared {
    fn now(&self) -> Timestamp {
        Timestamp::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(Timestamp::MAX)
    }

    fn lock(&self) -> MutexGuard<'_, Link> {
        self.link.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A served program's link to its broker; clones share it.
#[derive(Clone)]
pub struct Broker {
    shared: Arc<Shared>,
    revisions: String,
    /// The most bytes of an encoded payload the bus frame carries.
    max_payload: usize,
}

impl std::fmt::Debug for Broker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Broker").finish_non_exhaustive()
    }
}

/// What the link's threads dispatch to.
struct Local {
    publisher: Publisher,
    sources: Sources,
    /// Broker subject → (topic, stream digest).
    routes: Vec<(String, String, String)>,
    revisions: String,
}

impl Broker {
    /// The link for a program whose hubs `publisher` offers to (without a
    /// broker of its own: what arrives is never sent on) and whose role
    /// sources are `sources`, to the server at `url`, with `scope` the
    /// stream digest its revisions travel under; its threads started.
    /// Refused when a topic's subject cannot be carried.
    pub fn start(
        url: &str,
        name: &str,
        publisher: Publisher,
        sources: Sources,
        scope: &str,
    ) -> Result<Broker, String> {
        let (host, port) = parse_url(url)?;
        let routes = publisher.routes();
        for (_, topic, _) in &routes {
            let wire = publisher.wire_subject(topic).unwrap_or_default();
            carried(&wire).map_err(|e| format!("topic {topic}: {e}"))?;
        }
        let revisions = revision_subject(scope);
        let epoch = Instant::now();
        let mut client = NatsClient::new(
            0,
            Options {
                name: name.to_owned(),
                echo: false,
                ..Options::default()
            },
        );
        for subject in routes
            .iter()
            .map(|(s, _, _)| s.as_str())
            .chain([revisions.as_str()])
        {
            client
                .subscribe(subject)
                .map_err(|e| format!("cannot subscribe to `{subject}`: {e:?}"))?;
        }
        let shared = Arc::new(Shared {
            link: Mutex::new(Link {
                client,
                stream: None,
                generation: 0,
                used: false,
                stopped: false,
            }),
            wake: Condvar::new(),
            counts: Counts::default(),
            epoch,
        });
        let limits = HubLimits::default();
        let broker = Broker {
            shared: shared.clone(),
            revisions: revisions.clone(),
            max_payload: limits.bus_frame - limits.bus_header,
        };
        let local = Local {
            publisher,
            sources: sources.clone(),
            routes,
            revisions,
        };
        let reader = shared.clone();
        std::thread::Builder::new()
            .name("hale broker".into())
            .spawn(move || read_loop(&reader, (&host, port), &local))
            .map_err(|e| format!("cannot start the broker's thread: {e}"))?;
        let writer = shared;
        std::thread::Builder::new()
            .name("hale broker writer".into())
            .spawn(move || write_loop(&writer))
            .map_err(|e| format!("cannot start the broker's thread: {e}"))?;
        let told = broker.clone();
        sources.on_change(Arc::new(move |change: &RoleChange| told.tell(change)));
        Ok(broker)
    }

    /// Sends `payload` (an event's JSON text) on `subject`, unless the
    /// link is down or the payload does not fit the bus frame (then it
    /// reached this node's subscribers only, § Streams: Delivery).
    pub fn publish(&self, subject: &str, payload: &str) {
        if payload.len() > self.max_payload {
            return;
        }
        self.send(subject, payload.as_bytes(), &self.shared.counts.published);
    }

    /// Tells the other nodes of a role-source change made here.
    fn tell(&self, change: &RoleChange) {
        self.send(
            &self.revisions,
            change.to_json().as_bytes(),
            &self.shared.counts.revisions,
        );
    }

    fn send(&self, subject: &str, payload: &[u8], sent: &AtomicU64) {
        let counts = &self.shared.counts;
        let mut link = self.shared.lock();
        // While the link is down the machine holds what is published, up to
        // its bound (`Options::max_buffered`), and sends it once the next
        // connection has its subscriptions: a short outage delays the other
        // nodes' events, a long one drops (and counts) what the bound does
        // not hold. A live server that does not read holds as much.
        let taken = link.client.pending_output().len() < MAX_UNWRITTEN
            && match link.client.publish(subject, payload) {
                Ok(()) => true,
                Err(PublishError::TooLarge { .. } | PublishError::BufferFull { .. }) => false,
                Err(PublishError::BadSubject) => false,
            };
        drop(link);
        if taken {
            sent.fetch_add(1, Ordering::Relaxed);
            self.shared.wake.notify_all();
        } else {
            counts.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// What the link has done.
    pub fn report(&self) -> BrokerReport {
        let c = &self.shared.counts;
        BrokerReport {
            connected: c.connected.load(Ordering::Acquire),
            published: c.published.load(Ordering::Relaxed),
            received: c.received.load(Ordering::Relaxed),
            dropped: c.dropped.load(Ordering::Relaxed),
            refused: c.refused.load(Ordering::Relaxed),
            revisions: c.revisions.load(Ordering::Relaxed),
            connections: c.connections.load(Ordering::Relaxed),
        }
    }

    /// Ends the link: its threads finish, and nothing more is sent.
    pub fn stop(&self) {
        let mut link = self.shared.lock();
        link.stopped = true;
        if let Some(s) = link.stream.take() {
            let _ = s.shutdown(Shutdown::Both);
        }
        drop(link);
        self.shared.wake.notify_all();
    }
}

/// Connects, reads and dispatches until the link is stopped; each lost
/// connection made again after the backoff's delay.
fn read_loop(shared: &Shared, (host, port): (&str, u16), local: &Local) {
    let mut backoff = Backoff::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut said_down = false;
    loop {
        if shared.lock().stopped {
            return;
        }
        match connect(host, port) {
            Ok(stream) => {
                said_down = false;
                serve_connection(shared, stream, local, &mut buf, &mut backoff);
            }
            Err(e) if !said_down => {
                eprintln!(
                    "hale serve: the broker nats://{host}:{port} cannot be reached ({e}); retrying"
                );
                said_down = true;
            }
            Err(_) => {}
        }
        // Wait out the backoff, unless the link is stopped meanwhile.
        let delay = Duration::from_nanos(backoff.next_delay());
        let deadline = Instant::now() + delay;
        let mut link = shared.lock();
        while !link.stopped {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            link = shared
                .wake
                .wait_timeout(link, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

fn connect(host: &str, port: u16) -> std::io::Result<TcpStream> {
    let mut last = std::io::Error::new(std::io::ErrorKind::NotFound, "no address");
    for addr in (host, port).to_socket_addrs()? {
        match TcpStream::connect_timeout(&addr, CONNECT_WAIT) {
            Ok(s) => {
                s.set_nodelay(true)?;
                s.set_write_timeout(Some(WRITE_WAIT))?;
                return Ok(s);
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Drives one connection until it is lost or the link stopped.
fn serve_connection(
    shared: &Shared,
    stream: TcpStream,
    local: &Local,
    buf: &mut [u8],
    backoff: &mut Backoff,
) {
    let Ok(writer) = stream.try_clone() else {
        return;
    };
    {
        let mut link = shared.lock();
        if link.stopped {
            return;
        }
        let now = shared.now();
        if link.used {
            link.client.reconnect(now);
        }
        link.used = true;
        link.generation += 1;
        link.stream = Some(Arc::new(writer));
    }
    shared.counts.connections.fetch_add(1, Ordering::Relaxed);
    let mut stream = stream;
    loop {
        let wait = {
            let link = shared.lock();
            if link.stopped {
                return;
            }
            let now = shared.now();
            link.client
                .poll_timeout()
                .map_or(READ_WAIT, |at| {
                    Duration::from_nanos(at.saturating_sub(now)).min(READ_WAIT)
                })
                .max(Duration::from_millis(1))
        };
        let _ = stream.set_read_timeout(Some(wait));
        let read = stream.read(buf);
        let mut link = shared.lock();
        let now = shared.now();
        let ended = match read {
            Ok(0) => {
                link.client.handle_eof(now);
                true
            }
            Ok(n) => {
                link.client.handle_data(now, &buf[..n]);
                false
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) =>
            {
                if link.client.poll_timeout().is_some_and(|at| at <= now) {
                    link.client.handle_timeout(now);
                }
                false
            }
            Err(_) => {
                link.client.handle_eof(now);
                true
            }
        };
        let mut events = Vec::new();
        while let Some(e) = link.client.poll_event() {
            events.push(e);
        }
        let lost = ended
            || link.client.is_closed()
            || events
                .iter()
                .any(|e| matches!(e, NatsEvent::Disconnected { .. }));
        if lost {
            link.generation += 1;
            if let Some(s) = link.stream.take() {
                let _ = s.shutdown(Shutdown::Both);
            }
            shared.counts.connected.store(false, Ordering::Release);
        }
        let pending = !link.client.pending_output().is_empty();
        drop(link);
        if pending {
            shared.wake.notify_all();
        }
        for e in events {
            dispatch(shared, local, e, backoff);
        }
        if lost {
            let dropped = shared.lock().client.take_dropped();
            shared.counts.dropped.fetch_add(dropped, Ordering::Relaxed);
            return;
        }
    }
}

/// Acts on one event of the link.
fn dispatch(shared: &Shared, local: &Local, event: NatsEvent, backoff: &mut Backoff) {
    let counts = &shared.counts;
    match event {
        NatsEvent::Connected { server_id, .. } => {
            backoff.reset();
            counts.connected.store(true, Ordering::Release);
            eprintln!("hale serve: the broker is connected (server {server_id})");
        }
        NatsEvent::Message {
            subject, payload, ..
        } => {
            if subject == local.revisions {
                match RoleChange::from_json(&payload).and_then(|c| local.sources.apply(&c)) {
                    Ok(()) => {
                        counts.revisions.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => {
                        counts.refused.fetch_add(1, Ordering::Relaxed);
                        eprintln!("hale serve: a role change from the broker not made: {e}");
                    }
                }
                return;
            }
            let offered = local
                .routes
                .iter()
                .find(|(s, _, _)| *s == subject)
                .ok_or_else(|| format!("no topic is carried on `{subject}`"))
                .and_then(|(_, topic, digest)| {
                    local.publisher.offer_remote(topic, &payload, digest)
                });
            match offered {
                Ok(_) => counts.received.fetch_add(1, Ordering::Relaxed),
                Err(_) => counts.refused.fetch_add(1, Ordering::Relaxed),
            };
        }
        NatsEvent::ServerError(text) => {
            eprintln!("hale serve: the broker answered -ERR {text}");
        }
        NatsEvent::Disconnected { reason } => {
            eprintln!("hale serve: the broker's link is lost ({reason}); reconnecting");
        }
    }
}

/// Writes the machine's output to the current connection until the link
/// is stopped.
fn write_loop(shared: &Shared) {
    let mut link = shared.lock();
    loop {
        if link.stopped {
            return;
        }
        let ready = link
            .stream
            .clone()
            .filter(|_| !link.client.pending_output().is_empty());
        let Some(stream) = ready else {
            link = shared.wake.wait(link).unwrap_or_else(|e| e.into_inner());
            continue;
        };
        let generation = link.generation;
        // A slice at a time: what is published meanwhile joins the next.
        let pending = link.client.pending_output();
        let bytes = pending[..pending.len().min(WRITE_CHUNK)].to_vec();
        drop(link);
        let wrote = (&*stream).write_all(&bytes);
        link = shared.lock();
        if link.generation != generation {
            // The connection the bytes were for is gone; the machine's
            // reconnect forgot them.
            continue;
        }
        match wrote {
            Ok(()) => {
                let now = shared.now();
                link.client.consume_output(now, bytes.len());
            }
            Err(_) => {
                // The reader sees the socket end and makes the link again.
                let _ = stream.shutdown(Shutdown::Both);
                link = shared.wake.wait(link).unwrap_or_else(|e| e.into_inner());
            }
        }
    }
}

/// The scope a program's revisions travel under: its first served hub's
/// stream digest, by name.
pub fn scope<'a>(hubs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Option<String> {
    hubs.into_iter()
        .min_by_key(|(name, _)| *name)
        .map(|(_, digest)| digest.to_owned())
}

impl super::hubs::Outbound for Broker {
    fn send(&self, subject: &str, payload: &str) {
        self.publish(subject, payload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broker_is_named_as_nats_host_port() {
        assert_eq!(
            parse_url("nats://127.0.0.1:4222"),
            Ok(("127.0.0.1".into(), 4222))
        );
        assert_eq!(parse_url("nats://[::1]:4222"), Ok(("::1".into(), 4222)));
        for bad in [
            "127.0.0.1:4222",
            "nats://127.0.0.1",
            "nats://:4222",
            "nats://h:0",
            "nats://h:x",
            "tls://h:4222",
            "nats://u@h:4222",
        ] {
            let e = parse_url(bad).unwrap_err();
            assert!(e.contains("is not nats://host:port"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_subject_is_scoped_by_the_stream_digest_and_wildcards_are_refused() {
        assert_eq!(
            subject("26970854397ab154", "desk.fills"),
            "hale.26970854397ab154.desk.fills"
        );
        assert_eq!(
            revision_subject("26970854397ab154"),
            "hale.26970854397ab154.__api.roles.revision"
        );
        assert!(carried("desk.fills").is_ok());
        for bad in [
            "desk.*",
            "desk.>",
            "desk..fills",
            "de sk",
            "__api.roles.revision",
            "",
        ] {
            assert!(carried(bad).is_err(), "{bad}");
        }
    }
}
