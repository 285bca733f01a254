//! A datagram hub served: one mio loop on a thread of its own around one
//! UDP socket and the core's [`udp::Hub`](limen_core::wire::udp::Hub),
//! taking the program's side from the same mailbox as the WebSocket hub
//! ([`HubHandle`]).
//!
//! Each turn reads at most [`READ_BUDGET`] datagrams and sends at most
//! [`SEND_BUDGET`], so a flood of input never starves the answers and
//! events (nor the program's side), and the machine's answer queue stays
//! within its [`Limits`](limen_core::wire::udp::Limits): what the hub
//! cannot take waits in the kernel's buffer, which drops on overflow as
//! the network may. A `udp::Hub` belongs on a network you trust: a
//! datagram's source can be forged (`docs/decisions.md`, "The datagram
//! hub under attack").

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use limen_core::wire::udp::{Address, Hub};
use limen_core::Timestamp;
use mio::net::UdpSocket;
use mio::{Events, Interest, Token};

use super::hub::{HubCommand, HubHandle, HubReport};
use super::mailbox::Mailbox;
use super::reactor::{wait_until, Clock, Reactor};
use super::unix_now;

const SOCKET: Token = Token(0);

/// The largest datagram read: a UDP payload's limit.
const MAX_DATAGRAM: usize = 65_535;

/// The most datagrams read in one turn before what they produced is sent.
pub const READ_BUDGET: usize = 64;

/// The most datagrams sent in one turn before the socket is read again.
pub const SEND_BUDGET: usize = 1024;

/// A datagram's source as the hub keys it: its caps and its answers' rate
/// limit count per IP address, whatever port a source sends from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Peer(pub SocketAddr);

impl Address for Peer {
    type Host = IpAddr;
    fn host(&self) -> IpAddr {
        self.0.ip()
    }
}

/// A datagram hub bound and ready to run.
pub struct UdpHubServer {
    reactor: Reactor,
    socket: UdpSocket,
    bound: SocketAddr,
    hub: Hub<Peer>,
    inbox: Arc<Mailbox<HubCommand>>,
    clock: Clock,
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
    pub fn new(mut socket: UdpSocket, hub: Hub<Peer>) -> io::Result<UdpHubServer> {
        let bound = socket.local_addr()?;
        let (reactor, waker) = Reactor::new()?;
        reactor.registry().register(
            &mut socket,
            SOCKET,
            Interest::READABLE | Interest::WRITABLE,
        )?;
        Ok(UdpHubServer {
            reactor,
            socket,
            bound,
            hub,
            inbox: Arc::new(Mailbox::new(waker)),
            clock: Clock::start(),
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
        self.clock.now()
    }

    /// Serves until stopped and every `closed` is sent.
    pub fn run(mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(64);
        let mut commands = Vec::new();
        let mut buf = vec![0u8; MAX_DATAGRAM];
        // mio's readiness is edge-triggered: a turn that stops at its
        // budget reads (or sends) on next turn without waiting for an edge.
        let (mut readable, mut writable) = (true, true);
        loop {
            let timeout = wait_until(self.hub.poll_timeout(), self.now());
            self.inbox.sleep();
            self.inbox.take(&mut commands);
            let more = readable || (writable && self.has_output());
            let timeout = if commands.is_empty() && !more {
                timeout
            } else {
                Some(Duration::ZERO)
            };
            let polled = self.reactor.turn(&mut events, timeout);
            self.inbox.awake();
            polled?;
            for e in events.iter().filter(|e| e.token() == SOCKET) {
                readable |= e.is_readable();
                writable |= e.is_writable();
            }
            if readable {
                readable = self.read(&mut buf);
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
            if writable {
                writable = self.send();
            }
            if self.hub.is_finished() {
                return Ok(());
            }
        }
    }

    fn has_output(&mut self) -> bool {
        let now = self.now();
        self.hub.pending_transmit(now).is_some()
    }

    /// Reads up to [`READ_BUDGET`] datagrams: whether the socket may hold
    /// more (the budget ran out before it would block).
    fn read(&mut self, buf: &mut [u8]) -> bool {
        for _ in 0..READ_BUDGET {
            match self.socket.recv_from(buf) {
                Ok((n, from)) => {
                    let now = self.now();
                    self.hub
                        .handle_datagram(now, unix_now(), Peer(from), &buf[..n]);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // An ICMP error from an earlier send, and the like: the
                // datagram it stands for is lost, as the network may lose
                // any.
                Err(_) => {}
            }
        }
        true
    }

    /// Sends up to [`SEND_BUDGET`] of what the hub has while the socket
    /// takes it: whether the socket may take more (it did not block).
    fn send(&mut self) -> bool {
        for _ in 0..SEND_BUDGET {
            let now = self.now();
            let Some((to, datagram)) = self.hub.pending_transmit(now) else {
                return true;
            };
            match self.socket.send_to(datagram, to.0) {
                Ok(n) => self.hub.consume_transmit(now, n),
                // Offered again at the socket's next writable edge.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // Sent and not retried (a datagram too long, a peer gone):
                // lost, as the network may lose any.
                Err(_) => self.hub.consume_transmit(now, 0),
            }
        }
        true
    }
}
