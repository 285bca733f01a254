//! The Unix socket's lifecycle (§ The Unix transport): a stale socket file
//! is replaced, a live one or a file that is no socket refused, the file
//! removed at stop only while it is still the one the listener bound, and
//! an empty path binds nothing.

use std::os::unix::fs::MetadataExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use limen_drivers::serve::{BoundAddress, Listener, Server, ServerConfig};

/// A fresh directory under the system's temporary one.
fn scratch(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "limen-unix-{}-{}-{name}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn inode(path: &Path) -> Option<u64> {
    std::fs::symlink_metadata(path).ok().map(|m| m.ino())
}

#[test]
fn a_stale_socket_file_is_replaced() {
    let path = scratch("stale").join("s.sock");
    // A listener that died without removing its file: nobody accepts.
    drop(UnixListener::bind(&path).unwrap());
    assert!(inode(&path).is_some(), "the stale file stays");
    assert!(UnixStream::connect(&path).is_err(), "nobody accepts on it");
    // Binding over it would fail (EADDRINUSE) had it not been replaced.
    let listener = Listener::bind_unix(&path).unwrap();
    assert_eq!(listener.bound(), BoundAddress::Unix(path.clone()));
    UnixStream::connect(&path).expect("the new listener's backlog takes it");
    drop(listener);
    assert_eq!(inode(&path), None, "removed when the listener goes");
}

#[test]
fn a_live_socket_or_another_file_is_refused_and_left_alone() {
    let dir = scratch("live");
    let path = dir.join("s.sock");
    let live = UnixListener::bind(&path).unwrap();
    let theirs = inode(&path).unwrap();
    let e = Listener::bind_unix(&path).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::AddrInUse);
    assert!(e.to_string().contains("live listener"), "{e}");
    assert_eq!(inode(&path), Some(theirs));
    drop(live);
    let file = dir.join("plain");
    std::fs::write(&file, "not a socket").unwrap();
    let e = Listener::bind_unix(&file).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a socket");
    // A missing directory is the boot failure it is.
    assert!(Listener::bind_unix(&dir.join("missing/s.sock")).is_err());
}

#[test]
fn the_file_is_removed_at_stop_only_while_it_is_ours() {
    let path = scratch("ours").join("s.sock");
    let first = Listener::bind_unix(&path).unwrap();
    // A replacement takes the path while the first still holds its socket
    // (whose inode therefore cannot be reused).
    std::fs::remove_file(&path).unwrap();
    let replacement = UnixListener::bind(&path).unwrap();
    let theirs = inode(&path).unwrap();
    drop(first);
    assert_eq!(inode(&path), Some(theirs), "the replacement's file is left");
    UnixStream::connect(&path).expect("and still accepts");
    drop(replacement);
}

#[test]
fn a_server_stopping_removes_its_socket_file() {
    let path = scratch("stop").join("s.sock");
    let mut server = Server::new(ServerConfig::default()).unwrap();
    let (_, bound) = server.bind_unix(&path).unwrap().unwrap();
    assert_eq!(bound, BoundAddress::Unix(path.clone()));
    assert!(inode(&path).is_some());
    let stop = server.stop_handle();
    let run = std::thread::spawn(move || server.run());
    stop.stop();
    run.join().unwrap().unwrap();
    assert_eq!(inode(&path), None);
}

#[test]
fn an_empty_path_binds_nothing() {
    let dir = scratch("empty");
    let before: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    let mut server = Server::new(ServerConfig::default()).unwrap();
    assert!(server.bind_unix(Path::new("")).unwrap().is_none());
    assert!(before.is_empty());
    // The server still runs and stops: no socket is no failure.
    let stop = server.stop_handle();
    let run = std::thread::spawn(move || server.run());
    stop.stop();
    run.join().unwrap().unwrap();
}
