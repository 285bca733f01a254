//! Listeners and streams over TCP and Unix domain sockets, and the kernel's
//! account of a Unix peer.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use limen_core::hale::runtime::PeerCredentials;
use mio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use mio::{Interest, Registry, Token};

/// Where a listener was bound: the address the kernel gave (port 0 made
/// real), or the socket file's path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BoundAddress {
    /// A TCP listener's local address.
    Tcp(SocketAddr),
    /// A Unix listener's path.
    Unix(PathBuf),
}

impl std::fmt::Display for BoundAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BoundAddress::Tcp(a) => write!(f, "{a}"),
            BoundAddress::Unix(p) => write!(f, "{}", p.display()),
        }
    }
}

/// A bound listener.
#[derive(Debug)]
pub enum Listener {
    /// TCP.
    Tcp(TcpListener),
    /// A Unix socket, with the identity of the file it bound, so stopping
    /// removes the file only while it is still ours.
    Unix {
        /// The listener.
        listener: UnixListener,
        /// The socket file.
        path: PathBuf,
        /// The file's (device, inode) when bound.
        file: (u64, u64),
    },
    /// Closed.
    Closed,
}

impl Listener {
    /// Binds `addr`, `host:port`.
    pub fn bind_tcp(addr: &str) -> io::Result<Listener> {
        let parsed: SocketAddr = addr.parse().map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{addr}` is not host:port"),
            )
        })?;
        // Every loop has a socket of its own on a TCP port, in one
        // SO_REUSEPORT group (`join`). Such a group would also take in
        // another process of the same user binding the same port with
        // SO_REUSEPORT, silently sharing the connections: a port in use by
        // anyone is refused first, by a bind without it. (A port 0 is
        // picked free by the kernel, never in another group.)
        if parsed.port() != 0 {
            drop(std::net::TcpListener::bind(parsed)?);
        }
        Ok(Listener::Tcp(tcp_listener(parsed)?))
    }

    /// Another listener on this TCP listener's address, in its
    /// SO_REUSEPORT group: the kernel spreads the connections over the
    /// group's sockets.
    pub(super) fn join(&self) -> io::Result<Option<Listener>> {
        match self {
            Listener::Tcp(l) => Ok(Some(Listener::Tcp(tcp_listener(l.local_addr()?)?))),
            _ => Ok(None),
        }
    }

    /// Binds the Unix socket `path`. A stale socket file (nobody accepts on
    /// it) is replaced; a live one, or a path that is not a socket, is
    /// refused.
    pub fn bind_unix(path: &Path) -> io::Result<Listener> {
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            if !meta.file_type().is_socket() {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists and is not a socket", path.display()),
                ));
            }
            if std::os::unix::net::UnixStream::connect(path).is_ok() {
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    format!("{} is held by a live listener", path.display()),
                ));
            }
            std::fs::remove_file(path)?;
        }
        let listener = UnixListener::bind(path)?;
        let file = file_id(path)?;
        Ok(Listener::Unix {
            listener,
            path: path.to_owned(),
            file,
        })
    }

    /// Where it is bound.
    pub fn bound(&self) -> BoundAddress {
        match self {
            Listener::Tcp(l) => BoundAddress::Tcp(
                l.local_addr()
                    .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0))),
            ),
            Listener::Unix { path, .. } => BoundAddress::Unix(path.clone()),
            Listener::Closed => BoundAddress::Unix(PathBuf::new()),
        }
    }

    /// The listening descriptor, while open.
    pub(super) fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        match self {
            Listener::Tcp(l) => Some(l.as_raw_fd()),
            Listener::Unix { listener, .. } => Some(listener.as_raw_fd()),
            Listener::Closed => None,
        }
    }

    /// Accepts one connection, with the peer's kernel credentials for a
    /// Unix socket (unnamed for TCP). `Ok(None)` when none waits.
    pub(super) fn accept(&self) -> io::Result<Option<(Stream, PeerCredentials)>> {
        let accepted = match self {
            Listener::Tcp(l) => l
                .accept()
                .map(|(s, _)| (Stream::Tcp(s), PeerCredentials::UNNAMED)),
            Listener::Unix { listener, .. } => listener.accept().map(|(s, _)| {
                let peer = peer_credentials(&s);
                (Stream::Unix(s), peer)
            }),
            Listener::Closed => return Ok(None),
        };
        match accepted {
            Ok(a) => Ok(Some(a)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix { path, file, .. } = self {
            if file_id(path).is_ok_and(|f| f == *file) {
                let _ = std::fs::remove_file(&*path);
            }
        }
    }
}

fn file_id(path: &Path) -> io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path)?;
    Ok((meta.dev(), meta.ino()))
}

/// A connection.
#[derive(Debug)]
pub enum Stream {
    /// TCP.
    Tcp(TcpStream),
    /// A Unix socket.
    Unix(UnixStream),
}

impl Stream {
    /// Whether it is a Unix socket.
    pub fn is_unix(&self) -> bool {
        matches!(self, Stream::Unix(_))
    }

    pub(super) fn register(
        &mut self,
        registry: &Registry,
        token: Token,
        interest: Interest,
    ) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => registry.register(s, token, interest),
            Stream::Unix(s) => registry.register(s, token, interest),
        }
    }

    /// Shuts down one side or both (the lingering close shuts its
    /// writing side once the answer is written).
    pub(super) fn shutdown(&self, how: std::net::Shutdown) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.shutdown(how),
            Stream::Unix(s) => s.shutdown(how),
        }
    }

    pub(super) fn reregister(
        &mut self,
        registry: &Registry,
        token: Token,
        interest: Interest,
    ) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => registry.reregister(s, token, interest),
            Stream::Unix(s) => registry.reregister(s, token, interest),
        }
    }
}

// Each call is one system call on the descriptor, by reference or not
// (the by-reference impls below are the one place that dispatches).
impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&*self).read(buf)
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        (&*self).write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

// A socket shared by reference, as a hub's writer threads share it with
// its loop (`fanout.rs`): each call is one system call on the descriptor.
impl Read for &Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => (&*s).read(buf),
            Stream::Unix(s) => (&*s).read(buf),
        }
    }
}

impl Write for &Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => (&*s).write(buf),
            Stream::Unix(s) => (&*s).write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The kernel's account of a Unix socket peer (SO_PEERCRED, and its
/// supplementary groups by SO_PEERGROUPS); unnamed (-1s) when the kernel
/// will not say. Groups it will not give are `None`.
pub fn peer_credentials(stream: &impl std::os::fd::AsFd) -> PeerCredentials {
    let Ok(cred) = rustix::net::sockopt::socket_peercred(stream) else {
        return PeerCredentials::UNNAMED;
    };
    PeerCredentials {
        uid: i64::from(cred.uid.as_raw()),
        gid: i64::from(cred.gid.as_raw()),
        pid: i64::from(cred.pid.as_raw_nonzero().get()),
        groups: peer_groups(stream.as_fd().as_raw_fd()).and_then(intern_groups),
    }
}

/// A listening TCP socket in `addr`'s SO_REUSEPORT group, with
/// TCP_NODELAY and TCP_DEFER_ACCEPT set for the connections it accepts.
fn tcp_listener(addr: SocketAddr) -> io::Result<TcpListener> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    socket.set_nonblocking(true)?;
    socket.set_cloexec(true)?;
    socket.bind(&addr.into())?;
    socket.listen(1024)?;
    // Set once here: Linux gives every accepted socket its listener's
    // TCP_NODELAY, which spares a setsockopt per connection.
    socket.set_tcp_nodelay(true)?;
    defer_accept(socket.as_raw_fd(), 1);
    Ok(TcpListener::from_std(socket.into()))
}

/// Sets TCP_DEFER_ACCEPT on a listening socket: a connection is accepted
/// only once its first bytes have arrived (or `seconds` have passed, then
/// it is accepted anyway). Every protocol served over TCP here has the
/// client speak first, so the read right after the accept finds its
/// request, and a connection answered in the turn that accepted it is
/// never put in the poll (`conn_loop.rs`). A silent client costs no
/// descriptor meanwhile. Best effort: where the kernel refuses it, the
/// connection is accepted at once, as without it.
///
/// The second `unsafe` block of this crate, beside [`peer_groups`]: no safe
/// crate sets TCP_DEFER_ACCEPT (docs/decisions.md, "The system calls
/// without a safe binding").
#[allow(unsafe_code)]
fn defer_accept(fd: std::os::fd::RawFd, seconds: libc::c_int) {
    // SAFETY: `seconds` is a live c_int and the length passed is its size;
    // the kernel reads that many bytes and keeps no pointer.
    unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_DEFER_ACCEPT,
            (&seconds as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// The peer's supplementary groups (SO_PEERGROUPS), or `None` when the
/// kernel will not give them.
///
/// One of the two `unsafe` blocks of this crate (docs/decisions.md, "The
/// system calls without a safe binding"): no safe crate wraps SO_PEERGROUPS,
/// and what the safe ones offer instead answers another question (the
/// groups a user would get at login, or a racy read of /proc). Held to
/// getgroups(2) by the tests below; `scripts/check-core-purity` allows
/// `unsafe` in this function and nowhere else outside the nghttp2 and C ABI
/// crates.
#[allow(unsafe_code)]
fn peer_groups(fd: std::os::fd::RawFd) -> Option<Vec<u32>> {
    let mut groups: Vec<libc::gid_t> = vec![0; 32];
    loop {
        let mut len = (groups.len() * std::mem::size_of::<libc::gid_t>()) as libc::socklen_t;
        // SAFETY: `groups` is a valid, writable buffer of `len` bytes, and
        // the kernel writes at most `len` bytes into it.
        let rc = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_PEERGROUPS,
                groups.as_mut_ptr().cast(),
                &mut len,
            )
        };
        let n = len as usize / std::mem::size_of::<libc::gid_t>();
        if rc == 0 {
            groups.truncate(n);
            return Some(groups);
        }
        // ERANGE: the buffer was short; `len` is the size needed.
        if io::Error::last_os_error().raw_os_error() != Some(libc::ERANGE) || n <= groups.len() {
            return None;
        }
        groups.resize(n, 0);
    }
}

/// The most distinct group sets [`intern_groups`] keeps; past it a peer's
/// groups are not read (`None`), so a peer that keeps changing its groups
/// cannot grow the process without bound.
pub const MAX_GROUP_SETS: usize = 4096;

/// The one `'static` copy of a set of groups, kept for the life of the
/// process so that [`PeerCredentials`] stays `Copy`: the distinct sets are
/// the ones the system's users hold, a handful. `None` past
/// [`MAX_GROUP_SETS`] distinct sets.
fn intern_groups(groups: Vec<u32>) -> Option<&'static [u32]> {
    use std::collections::BTreeSet;
    use std::sync::Mutex;
    static SETS: Mutex<BTreeSet<&'static [u32]>> = Mutex::new(BTreeSet::new());
    let mut sets = SETS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(known) = sets.get(groups.as_slice()) {
        return Some(known);
    }
    if sets.len() >= MAX_GROUP_SETS {
        return None;
    }
    let kept: &'static [u32] = Vec::leak(groups);
    sets.insert(kept);
    Some(kept)
}

/// Raises the soft limit on open descriptors to the hard limit (a server
/// holds one per connection; the common soft default of 1024 would refuse
/// the 1000-and-first).
pub fn raise_descriptor_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut limit = getrlimit(Resource::Nofile);
    if let (Some(current), max) = (limit.current, limit.maximum) {
        if max.is_none_or(|max| current < max) {
            limit.current = max;
            // Not raised is not fatal: the server runs with the soft limit,
            // and an accept past it pauses accepting (conn_loop.rs).
            let _ = setrlimit(Resource::Nofile, limit);
        }
    }
}

/// The process's soft limit on open descriptors; `None` when unlimited
/// or unknown.
pub fn descriptor_limit() -> Option<u64> {
    rustix::process::getrlimit(rustix::process::Resource::Nofile).current
}

#[cfg(test)]
mod tests {
    use super::*;
    use limen_core::hale::runtime::Principal;

    #[test]
    fn an_accepted_tcp_socket_has_nodelay_from_its_listener() {
        let listener = Listener::bind_tcp("127.0.0.1:0").unwrap();
        let Listener::Tcp(l) = &listener else {
            panic!("a TCP listener");
        };
        let addr = l.local_addr().unwrap();
        let mut client = std::net::TcpStream::connect(addr).unwrap();
        // It speaks first, as every client of ours does (the accept is
        // deferred until it has).
        client.write_all(b"P").unwrap();
        let accepted = loop {
            if let Some((stream, _)) = listener.accept().unwrap() {
                break stream;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        let Stream::Tcp(s) = &accepted else {
            panic!("a TCP stream");
        };
        assert!(socket2::SockRef::from(s).tcp_nodelay().unwrap());
    }

    /// Accepts from `listener` until `until` passes; `None` if nothing came.
    fn accept_within(listener: &Listener, wait: std::time::Duration) -> Option<Stream> {
        let until = std::time::Instant::now() + wait;
        while std::time::Instant::now() < until {
            if let Some((stream, _)) = listener.accept().unwrap() {
                return Some(stream);
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        None
    }

    #[test]
    fn a_port_in_use_is_refused_though_the_listeners_share_ports_among_themselves() {
        let first = Listener::bind_tcp("127.0.0.1:0").unwrap();
        let BoundAddress::Tcp(addr) = first.bound() else {
            panic!("a TCP listener");
        };
        // Another listener of the same user on the same port would join
        // the first's SO_REUSEPORT group and silently share its clients.
        let second = Listener::bind_tcp(&addr.to_string());
        assert_eq!(
            second.err().map(|e| e.kind()),
            Some(io::ErrorKind::AddrInUse)
        );
        // A loop's own socket joins it on purpose, on the same port.
        let joined = first.join().unwrap().unwrap();
        assert_eq!(joined.bound(), BoundAddress::Tcp(addr));
        // Between the two, every connection is taken.
        let mut clients = Vec::new();
        for _ in 0..32 {
            let mut c = std::net::TcpStream::connect(addr).unwrap();
            c.write_all(b"P").unwrap();
            clients.push(c);
        }
        let mut taken = 0;
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while taken < 32 && std::time::Instant::now() < until {
            for l in [&first, &joined] {
                while let Some(_accepted) = l.accept().unwrap() {
                    taken += 1;
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(taken, 32);
    }

    #[test]
    fn a_connection_is_accepted_once_it_has_spoken() {
        let listener = Listener::bind_tcp("127.0.0.1:0").unwrap();
        let BoundAddress::Tcp(addr) = listener.bound() else {
            panic!("a TCP listener");
        };
        let mut client = std::net::TcpStream::connect(addr).unwrap();
        // Silent, it stays with the kernel (TCP_DEFER_ACCEPT): the kernel
        // offers it no sooner than its first retransmission, a second on.
        assert!(accept_within(&listener, std::time::Duration::from_millis(300)).is_none());
        client.write_all(b"GET / HTTP/1.1\r\n").unwrap();
        let mut accepted = accept_within(&listener, std::time::Duration::from_secs(10))
            .expect("accepted once it spoke");
        // Its first bytes are there to read at the accept.
        let mut buf = [0u8; 64];
        let n = accepted.read(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"GET / HTTP/1.1\r\n");
    }

    /// This process's supplementary groups, from getgroups(2).
    fn own_groups() -> Vec<u32> {
        rustix::process::getgroups()
            .unwrap()
            .into_iter()
            .map(|g| g.as_raw())
            .collect()
    }

    #[test]
    fn a_unix_peer_is_named_with_its_supplementary_groups() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let peer = peer_credentials(&a);
        let (uid, gid, pid) = (
            rustix::process::getuid().as_raw(),
            rustix::process::getgid().as_raw(),
            rustix::process::getpid().as_raw_nonzero().get(),
        );
        assert_eq!(
            (peer.uid, peer.gid, peer.pid),
            (i64::from(uid), i64::from(gid), i64::from(pid))
        );
        let mut read = peer
            .groups
            .expect("the kernel gives a peer's groups")
            .to_vec();
        let mut own = own_groups();
        read.sort_unstable();
        own.sort_unstable();
        assert_eq!(read, own);
        // Into the principal, beside the fields its JSON carries.
        let principal = Principal::unix(peer);
        assert_eq!(principal.groups, peer.groups.unwrap());
        assert_eq!(
            principal.to_json(),
            serde_json::json!({"mode": "unix", "name": format!("uid:{uid}"),
                               "uid": uid, "gid": gid, "pid": pid})
        );
        // One copy of a set, however many peers hold it.
        let again = peer_credentials(&a).groups.unwrap();
        assert!(std::ptr::eq(again, peer.groups.unwrap()));
    }

    #[test]
    fn an_accepted_peer_is_named_with_its_groups() {
        let dir = std::env::temp_dir().join(format!("limen-net-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.sock");
        let listener = Listener::bind_unix(&path).unwrap();
        let _client = std::os::unix::net::UnixStream::connect(&path).unwrap();
        let (_, peer) = loop {
            if let Some(accepted) = listener.accept().unwrap() {
                break accepted;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        let mut read = peer
            .groups
            .expect("the kernel gives a peer's groups")
            .to_vec();
        let mut own = own_groups();
        read.sort_unstable();
        own.sort_unstable();
        assert_eq!(read, own);
    }

    #[test]
    fn a_tcp_stream_names_no_groups() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let s = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        assert_eq!(peer_groups(s.as_raw_fd()), None);
    }
}
