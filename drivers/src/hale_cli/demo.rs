//! `hale demo [--public ADDR] [--partner ADDR] [--admin-socket PATH]
//! [--mcp ADDR] [--hub ADDR] [--udp-hub ADDR] [--operator uid:N] [--bound N] [--loops N] [--control PATH] [--record DIR]`:
//! the witness program served on its embedded default (see
//! [`crate::demo`]), Public over MCP too (`--mcp`, [`DEFAULT_MCP`] unless
//! given); `--record DIR` writes every exchange as a conformance record.

use super::cli::DemoArgs;
use crate::demo::{Demo, DemoOptions};
use limen_core::hale::runtime::ExposureLimits;
use limen_core::SECOND;

/// Where `hale demo` serves Public over MCP unless `--mcp` says.
pub const DEFAULT_MCP: &str = "127.0.0.1:8090";

/// The exit status of a listener that cannot bind at birth.
pub const BOOT_EXIT: i32 = 2;

/// Runs `hale demo` with its arguments.
pub fn run(args: &DemoArgs) -> i32 {
    let options = options(args);
    // Ctrl-C and SIGTERM stop the demo in order; blocked before any thread
    // starts so only the signal thread takes them.
    let signals = block_signals();
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
        wait_signal(&signals, None);
        eprintln!("hale demo: stopping");
        stop.stop();
        // A signal always stops the process: a second one, or the end of
        // stop()'s wait with a margin, ends it whatever the loops are doing.
        let limit = ExposureLimits::default().stop_wait / SECOND + STOP_MARGIN_S;
        if !wait_signal(&signals, Some(limit)) {
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
    options.hub = a.hub.clone();
    options.udp_hub = a.udp_hub.clone();
    options.operator = a.operator.clone();
    options.bound = a.bound;
    options.loops = a.loops.unwrap_or(0);
    options.control = a.control.clone();
    options.record = a.record.clone();
    options
}

fn block_signals() -> libc::sigset_t {
    // SAFETY: the set is initialized by sigemptyset before use, and
    // pthread_sigmask only reads it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

/// Seconds past stop()'s wait after which a stopping demo exits anyway.
const STOP_MARGIN_S: u64 = 2;

/// Waits for a signal of `set`, at most `limit` seconds when given;
/// whether one came.
fn wait_signal(set: &libc::sigset_t, limit: Option<u64>) -> bool {
    match limit {
        None => {
            let mut signal = 0;
            // SAFETY: `set` is an initialized signal set and `signal` a
            // valid out pointer.
            unsafe { libc::sigwait(set, &mut signal) == 0 }
        }
        Some(secs) => {
            let timeout = libc::timespec {
                tv_sec: secs as libc::time_t,
                tv_nsec: 0,
            };
            // SAFETY: `set` is an initialized signal set, `timeout` a valid
            // timespec, and a null info pointer is allowed.
            unsafe { libc::sigtimedwait(set, std::ptr::null_mut(), &timeout) > 0 }
        }
    }
}
