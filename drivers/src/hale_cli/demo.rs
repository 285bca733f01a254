//! `hale demo [--public ADDR] [--partner ADDR] [--admin-socket PATH]
//! [--mcp ADDR] [--grpc ADDR] [--hub ADDR [--hub-desk]] [--udp-hub ADDR] [--operator uid:N] [--bound N] [--loops N] [--max-connections NAME=N]... [--control PATH] [--record DIR]`:
//! the witness program served on its embedded default by `hale serve`'s
//! path with the witness's own handlers (see [`crate::demo`]), Public over MCP too (`--mcp`, [`DEFAULT_MCP`](super::cli::DEFAULT_MCP) unless
//! given) and over gRPC when `--grpc` is given; `--max-connections NAME=N`
//! caps one listener's connections (each listener counts its own);
//! `--record DIR` writes every exchange as a conformance record.

use super::cli::DemoArgs;
use crate::demo::{Demo, DemoOptions};
use limen_core::hale::runtime::ExposureLimits;
use limen_core::SECOND;

/// The exit status of a listener that cannot bind at birth.
pub const BOOT_EXIT: i32 = 2;

/// Runs `hale demo` with its arguments.
pub fn run(args: &DemoArgs) -> i32 {
    let options = options(args);
    // Ctrl-C and SIGTERM stop the demo in order: their handlers, set before
    // any thread starts, write to a pipe that the signal thread reads.
    let signals = match Signals::catch() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("hale demo: cannot catch signals: {e}");
            return 1;
        }
    };
    let demo = match Demo::boot(&options) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("{e}");
            return BOOT_EXIT;
        }
    };
    print!("{}", demo.banner());
    let stop = demo.stop_handle();
    std::thread::spawn(move || {
        signals.wait(None);
        eprintln!("hale demo: stopping");
        stop.drain_then_stop();
        // A signal always stops the process: a second one, or the end of
        // the drain and stop()'s wait with a margin, ends it whatever the
        // loops are doing.
        let limit = stop_limit(&stop);
        if !signals.wait(Some(limit)) {
            eprintln!("hale demo: not stopped after {limit} s; exiting");
        }
        std::process::exit(130);
    });
    match demo.run() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("hale demo: {e}");
            1
        }
    }
}

/// The demo's options from its flags.
pub fn options(a: &DemoArgs) -> DemoOptions {
    let mut options = DemoOptions::default();
    for (name, address) in [
        ("public", &a.public),
        ("partner", &a.partner),
        ("admin", &a.admin_socket),
    ] {
        if let Some(address) = address {
            options.addresses.insert(name.to_owned(), address.clone());
        }
    }
    options.mcp = Some(a.mcp.clone());
    options.grpc = a.grpc.clone();
    options.hub = a.hub.clone();
    options.udp_hub = a.udp_hub.clone();
    options.hub_desk = a.hub_desk;
    options.operator = a.operator.clone();
    options.bound = a.bound;
    options.loops = a.loops.unwrap_or(0);
    options.max_connections = a.max_connections.iter().cloned().collect();
    options.control = a.control.clone();
    options.record = a.record.clone();
    options.broker = a.broker.clone();
    options.drain_grace = a.drain_grace.unwrap_or_default();
    options
}

/// SIGINT and SIGTERM, caught into a pipe (signal-hook's self-pipe: the
/// handler only writes a byte), so a thread can wait for one with a limit.
pub(crate) struct Signals {
    read: std::os::unix::net::UnixStream,
}

impl Signals {
    pub(crate) fn catch() -> std::io::Result<Signals> {
        let (read, write) = std::os::unix::net::UnixStream::pair()?;
        for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::low_level::pipe::register(signal, write.try_clone()?)?;
        }
        Ok(Signals { read })
    }

    /// Waits for a signal, at most `limit` seconds when given; whether one
    /// came.
    pub(crate) fn wait(&self, limit: Option<u64>) -> bool {
        use std::io::Read;
        let limit = limit.map(|s| std::time::Duration::from_secs(s.max(1)));
        if self.read.set_read_timeout(limit).is_err() {
            return false;
        }
        let mut byte = [0u8; 1];
        loop {
            match (&self.read).read(&mut byte) {
                Ok(n) => return n == 1,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return false,
            }
        }
    }
}

/// Seconds past stop()'s wait after which a stopping demo exits anyway.
pub(crate) const STOP_MARGIN_S: u64 = 2;

/// Seconds after a signal past which a stopping process exits anyway: the
/// drain's grace, stop()'s wait for the executing calls, and a margin.
pub(crate) fn stop_limit(stop: &crate::serve::StopHandle) -> u64 {
    stop.drain_grace().as_secs().saturating_add(1)
        + ExposureLimits::default().stop_wait / SECOND
        + STOP_MARGIN_S
}
