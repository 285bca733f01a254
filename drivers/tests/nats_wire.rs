//! The NATS client machine (`core/src/wire/nats.rs`) held to the real
//! server: Debian's `nats-server`, started by each test on 127.0.0.1 with a
//! port of its own and a 1 KiB `max_payload`, and two machines driven over
//! blocking `TcpStream`s by the loop every driver runs (read with a timeout
//! from `poll_timeout`, `handle_data`, write `pending_output`).
//!
//! Held: the handshake ends Connected with the server's `max_payload`; a
//! subscription gets what another client publishes; `echo: false` keeps a
//! client's own publishes from it; a payload over `max_payload` is refused
//! before anything is queued; and when the server is killed and started
//! again on the same port, both machines report Disconnected, connect
//! again after the Backoff, the subscriber gets messages without
//! subscribing again, and the publishes made during the outage arrive once
//! the publisher is Connected, in order.

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use limen_core::wire::machine::Machine;
use limen_core::wire::nats::{Backoff, NatsClient, NatsEvent, Options, PublishError};
use limen_core::Timestamp;

mod support;

/// The `max_payload` the servers of these tests announce.
const MAX_PAYLOAD: usize = 1024;

/// How long any one wait of these tests may last.
const WAIT: Duration = Duration::from_secs(20);

/// The `nats-server` to run: Debian's installs it in /usr/sbin, which a
/// user's PATH may not name; else the PATH's (absent when neither).
fn nats_server() -> Option<PathBuf> {
    let debian = PathBuf::from("/usr/sbin/nats-server");
    if debian.exists() {
        return Some(debian);
    }
    support::peer("nats-server").then(|| PathBuf::from("nats-server"))
}

/// One `nats-server` process, killed when dropped.
struct Server {
    child: Child,
    bin: PathBuf,
    port: u16,
    dir: PathBuf,
}

impl Server {
    /// A server on a free port of 127.0.0.1 (bound at :0 by the test, then
    /// let go for the server), or `None` when `nats-server` is absent.
    fn start(tag: &str) -> Option<Server> {
        let bin = nats_server()?;
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = support::scratch("nats", tag);
        // nats-server 2.9 takes max_payload from a configuration file only.
        std::fs::write(
            dir.join("nats.conf"),
            format!("max_payload: {MAX_PAYLOAD}\n"),
        )
        .unwrap();
        Some(Server {
            child: Server::spawn(&bin, &dir, port),
            bin,
            port,
            dir,
        })
    }

    fn spawn(bin: &std::path::Path, dir: &std::path::Path, port: u16) -> Child {
        let log = File::options()
            .create(true)
            .append(true)
            .open(dir.join("nats.log"))
            .unwrap();
        Command::new(bin)
            .args(["-a", "127.0.0.1", "-p", &port.to_string(), "-c"])
            .arg(dir.join("nats.conf"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("nats-server starts")
    }

    /// Kills the server and waits for its exit.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts it again, on the same port.
    fn restart(&mut self) {
        self.child = Server::spawn(&self.bin, &self.dir, self.port);
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("nats.log")).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One machine and its socket, driven as a driver drives it.
struct Client {
    machine: NatsClient,
    stream: Option<TcpStream>,
    port: u16,
    epoch: Instant,
    backoff: Backoff,
    events: Vec<NatsEvent>,
}

impl Client {
    /// A machine connected (at the socket) to the server on `port`: the
    /// connection is attempted after each of the Backoff's delays until
    /// the server listens.
    fn connect(port: u16, options: Options) -> Client {
        let epoch = Instant::now();
        let mut backoff = Backoff::new();
        let stream = dial(port, &mut backoff);
        let now = epoch.elapsed().as_nanos() as Timestamp;
        Client {
            machine: NatsClient::new(now, options),
            stream: Some(stream),
            port,
            epoch,
            backoff,
            events: Vec::new(),
        }
    }

    fn now(&self) -> Timestamp {
        self.epoch.elapsed().as_nanos() as Timestamp
    }

    /// Writes what the machine has queued (the tests drive two machines
    /// from one thread: one that only writes is flushed by hand).
    fn flush(&mut self) {
        let Some(stream) = self.stream.as_mut() else {
            return;
        };
        while !self.machine.pending_output().is_empty() {
            match stream.write(self.machine.pending_output()) {
                Ok(n) if n > 0 => {
                    let now = self.epoch.elapsed().as_nanos() as Timestamp;
                    self.machine.consume_output(now, n);
                }
                _ => break,
            }
        }
    }

    /// One turn of the driver's loop: write what is queued, read once
    /// (waiting no longer than the machine's timer or 20 ms), act on the
    /// timer, take the events.
    fn turn(&mut self) {
        self.flush();
        let Some(stream) = self.stream.as_mut() else {
            return;
        };
        let now = self.epoch.elapsed().as_nanos() as Timestamp;
        let wait = self.machine.poll_timeout().map_or(20_000_000, |t| {
            t.saturating_sub(now).clamp(1_000_000, 20_000_000)
        });
        stream
            .set_read_timeout(Some(Duration::from_nanos(wait)))
            .unwrap();
        let mut buf = [0u8; 16 * 1024];
        if self.machine.wants_read() {
            let read = stream.read(&mut buf);
            let now = self.now();
            match read {
                Ok(0) => self.machine.handle_eof(now),
                Ok(n) => self.machine.handle_data(now, &buf[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(_) => self.machine.handle_eof(now),
            }
        }
        self.machine.handle_timeout(self.now());
        self.events
            .extend(std::iter::from_fn(|| self.machine.poll_event()));
        if self.machine.is_closed() {
            // The connection is over: the driver closes its socket.
            self.stream = None;
        }
    }

    /// Turns until an event `want` takes has come (it and the events
    /// before it are removed and returned).
    fn until(&mut self, what: &str, want: impl Fn(&NatsEvent) -> bool) -> Vec<NatsEvent> {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(at) = self.events.iter().position(&want) {
                return self.events.drain(..=at).collect();
            }
            assert!(
                Instant::now() < deadline,
                "no {what} within {WAIT:?}; events: {:?}",
                self.events
            );
            self.turn();
        }
    }

    fn until_connected(&mut self) -> usize {
        let seen = self.until("Connected", |e| matches!(e, NatsEvent::Connected { .. }));
        self.backoff.reset();
        match seen.last() {
            Some(NatsEvent::Connected { max_payload, .. }) => *max_payload,
            _ => unreachable!(),
        }
    }

    /// The payload of the next Message, and its subject.
    fn next_message(&mut self) -> (String, Vec<u8>) {
        let seen = self.until("a Message", |e| matches!(e, NatsEvent::Message { .. }));
        match seen.last() {
            Some(NatsEvent::Message {
                subject, payload, ..
            }) => (subject.clone(), payload.clone()),
            _ => unreachable!(),
        }
    }

    /// Connects again after the machine reported Disconnected: a new
    /// socket after the Backoff's delays, then `reconnect`.
    fn reconnect(&mut self) {
        assert!(self.machine.is_closed());
        let stream = dial(self.port, &mut self.backoff);
        self.stream = Some(stream);
        let now = self.now();
        self.machine.reconnect(now);
    }
}

/// A socket to 127.0.0.1:`port`, attempted after each of `backoff`'s
/// delays (the first at once) until it connects, within [`WAIT`].
fn dial(port: u16, backoff: &mut Backoff) -> TcpStream {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Ok(s) = TcpStream::connect(("127.0.0.1", port)) {
            s.set_nodelay(true).unwrap();
            return s;
        }
        assert!(Instant::now() < deadline, "nothing listens on {port}");
        // The wait between attempts is the Backoff itself, not a guess at
        // when the server is up.
        std::thread::sleep(Duration::from_nanos(backoff.next_delay()));
    }
}

fn options(name: &str, echo: bool) -> Options {
    Options {
        name: name.into(),
        echo,
        ..Options::default()
    }
}

/// `client` subscribes to `subject` and, echo on, publishes a probe on it
/// until its own probe comes back: the server has the subscription.
fn subscribed(client: &mut Client, subject: &str) -> u64 {
    let sid = client.machine.subscribe(subject).unwrap();
    client.machine.publish(subject, b"probe").unwrap();
    assert_eq!(
        client.next_message(),
        (subject.to_owned(), b"probe".to_vec())
    );
    sid
}

#[test]
fn a_subscription_gets_another_clients_publish_not_its_own_with_echo_off() {
    let Some(server) = Server::start("pubsub") else {
        return;
    };
    let mut a = Client::connect(server.port, options("a", false));
    let mut b = Client::connect(server.port, options("b", true));
    assert_eq!(a.until_connected(), MAX_PAYLOAD, "{}", server.log());
    assert_eq!(b.until_connected(), MAX_PAYLOAD);

    subscribed(&mut b, "t.x");
    // a's SUB is read before its PUB: a would get its own publish if echo
    // were on.
    a.machine.subscribe("t.*").unwrap();
    a.machine.publish("t.x", b"hello").unwrap();
    a.flush();
    assert_eq!(b.next_message(), ("t.x".into(), b"hello".to_vec()));
    // b publishes only after it got a's: had the server sent a its own
    // "hello", a would read it before b's.
    b.machine.publish("t.x", b"from b").unwrap();
    b.flush();
    assert_eq!(a.next_message(), ("t.x".into(), b"from b".to_vec()));
    // Echo on: b gets its own.
    assert_eq!(b.next_message(), ("t.x".into(), b"from b".to_vec()));

    // Over max_payload: refused before anything is queued.
    a.turn();
    assert!(a.machine.pending_output().is_empty());
    let big = vec![b'x'; MAX_PAYLOAD + 1];
    assert_eq!(
        a.machine.publish("t.x", &big),
        Err(PublishError::TooLarge {
            size: MAX_PAYLOAD + 1,
            max_payload: MAX_PAYLOAD
        })
    );
    assert!(a.machine.pending_output().is_empty());
    // At the limit it goes through.
    let full = vec![b'y'; MAX_PAYLOAD];
    a.machine.publish("t.x", &full).unwrap();
    a.flush();
    assert_eq!(b.next_message(), ("t.x".into(), full));
    assert!(a.machine.is_connected() && b.machine.is_connected());
    assert!(
        !a.events.iter().chain(&b.events).any(|e| matches!(
            e,
            NatsEvent::ServerError(_) | NatsEvent::Disconnected { .. }
        )),
        "{:?} {:?}",
        a.events,
        b.events
    );
}

#[test]
fn a_restarted_server_gets_the_subscriptions_again_and_the_publishes_held_meanwhile() {
    let Some(mut server) = Server::start("restart") else {
        return;
    };
    let mut a = Client::connect(server.port, options("publisher", false));
    let mut b = Client::connect(server.port, options("subscriber", true));
    a.until_connected();
    b.until_connected();
    subscribed(&mut b, "r.x");
    a.machine.publish("r.x", b"before").unwrap();
    a.flush();
    assert_eq!(b.next_message(), ("r.x".into(), b"before".to_vec()));

    server.kill();
    for c in [&mut a, &mut b] {
        c.until("Disconnected", |e| {
            matches!(e, NatsEvent::Disconnected { .. })
        });
        assert!(!c.machine.is_connected() && c.machine.is_closed());
        assert!(c.stream.is_none());
    }
    // Held while there is no connection.
    for i in 0..3 {
        a.machine
            .publish("r.x", format!("held {i}").as_bytes())
            .unwrap();
    }
    assert!(a.machine.buffered() > 0);
    assert!(a.machine.pending_output().is_empty());

    server.restart();
    // The subscriber first: its Connected means the server read its SUB
    // (sent again by the machine), so what the publisher's reconnection
    // writes finds it.
    b.reconnect();
    b.until_connected();
    a.reconnect();
    a.until_connected();
    // The held publishes were queued at the PONG.
    a.flush();
    for i in 0..3 {
        assert_eq!(
            b.next_message(),
            ("r.x".into(), format!("held {i}").into_bytes()),
            "{}",
            server.log()
        );
    }
    assert_eq!(a.machine.buffered(), 0);
    assert_eq!(a.machine.take_dropped(), 0);
    a.machine.publish("r.x", b"after").unwrap();
    a.flush();
    assert_eq!(b.next_message(), ("r.x".into(), b"after".to_vec()));
}
