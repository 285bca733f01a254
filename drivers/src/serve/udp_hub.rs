//! A datagram hub served: one mio loop on a thread of its own around one
//! UDP socket and the core's [`udp::Hub`](limen_core::wire::udp::Hub),
//! taking the program's side from the same mailbox as the WebSocket hub
//! ([`HubHandle`]).

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use limen_core::wire::udp::Hub;
use limen_core::Timestamp;
use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token, Waker};

use super::hub::{HubCommand, HubHandle, HubReport};
use super::mailbox::Mailbox;
use super::unix_now;

const SOCKET: Token = Token(0);
const WAKER: Token = Token(1);

/// The largest datagram read: a UDP payload's limit.
const MAX_DATAGRAM: usize = 65_535;

/// A datagram hub bound and ready to run.
pub struct UdpHubServer {
    poll: Poll,
    socket: UdpSocket,
    bound: SocketAddr,
    hub: Hub<SocketAddr>,
    inbox: Arc<Mailbox<HubCommand>>,
    started: Instant,
}

impl std::fmt::Debug for UdpHubServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdpHubServer")
            .field("bound", &self.bound)
            .finish_non_exhaustive()
    }
}

impl UdpHubServer {
    /// Binds `addr` (`host:port`; port 0 takes what the kernel gives).
    pub fn bind(addr: &str) -> io::Result<(UdpSocket, SocketAddr)> {
        let parsed: SocketAddr = addr.parse().map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{addr}` is not host:port"),
            )
        })?;
        let socket = UdpSocket::bind(parsed)?;
        let bound = socket.local_addr()?;
        Ok((socket, bound))
    }

    /// Serves `hub` on `socket`.
    pub fn new(mut socket: UdpSocket, hub: Hub<SocketAddr>) -> io::Result<UdpHubServer> {
        let bound = socket.local_addr()?;
        let poll = Poll::new()?;
        poll.registry()
            .register(&mut socket, SOCKET, Interest::READABLE | Interest::WRITABLE)?;
        let waker = Waker::new(poll.registry(), WAKER)?;
        Ok(UdpHubServer {
            poll,
            socket,
            bound,
            hub,
            inbox: Arc::new(Mailbox::new(waker)),
            started: Instant::now(),
        })
    }

    /// Where it listens.
    pub fn bound(&self) -> SocketAddr {
        self.bound
    }

    /// A handle for the program's side.
    pub fn handle(&self) -> HubHandle {
        HubHandle::new(self.inbox.clone())
    }

    fn now(&self) -> Timestamp {
        self.started.elapsed().as_nanos() as Timestamp
    }

    /// Serves until stopped and every `closed` is sent.
    pub fn run(mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(64);
        let mut commands = Vec::new();
        let mut buf = vec![0u8; MAX_DATAGRAM];
        loop {
            let timeout = self.hub.poll_timeout().map(|at| {
                Duration::from_nanos(at.saturating_sub(self.now())) + Duration::from_millis(1)
            });
            self.inbox.sleep();
            self.inbox.take(&mut commands);
            let timeout = if commands.is_empty() {
                timeout
            } else {
                Some(Duration::ZERO)
            };
            match self.poll.poll(&mut events, timeout) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
            self.inbox.awake();
            if events
                .iter()
                .any(|e| e.token() == SOCKET && e.is_readable())
            {
                self.read(&mut buf);
            }
            let mut more = Vec::new();
            self.inbox.take(&mut more);
            commands.append(&mut more);
            for command in commands.drain(..) {
                let now = self.now();
                match command {
                    HubCommand::Publish { topic, payload } => {
                        let _ = self.hub.publish(now, &topic, &payload);
                    }
                    HubCommand::Announce(revision) => self.hub.announce(now, revision),
                    HubCommand::Report(to) => {
                        let _ = to.send(HubReport {
                            events: self.hub.events(),
                            subscribers: self.hub.subscribers(),
                            connections: 0,
                        });
                    }
                    HubCommand::Stop => self.hub.stop(now),
                    // A surface is not served over datagrams (§ Over
                    // datagrams): no call is framed here, so no owner
                    // answers one.
                    HubCommand::Deliver(_) | HubCommand::Abort(_) => {}
                }
            }
            let now = self.now();
            self.hub.handle_timeout(now);
            self.send();
            if self.hub.is_finished() {
                return Ok(());
            }
        }
    }

    fn read(&mut self, buf: &mut [u8]) {
        loop {
            match self.socket.recv_from(buf) {
                Ok((n, from)) => {
                    let now = self.now();
                    self.hub.handle_datagram(now, unix_now(), from, &buf[..n]);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // An ICMP error from an earlier send, and the like: the
                // datagram it stands for is lost, as the network may lose
                // any.
                Err(_) => {}
            }
        }
    }

    /// Sends what the hub has while the socket takes it.
    fn send(&mut self) {
        loop {
            let now = self.now();
            let Some((to, datagram)) = self.hub.pending_transmit(now) else {
                return;
            };
            match self.socket.send_to(datagram, *to) {
                Ok(_) => self.hub.consume_transmit(),
                // Offered again at the socket's next writable edge.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // Sent and not retried (a datagram too long, a peer gone):
                // lost, as the network may lose any.
                Err(_) => self.hub.consume_transmit(),
            }
        }
    }
}
