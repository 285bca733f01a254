//! What the live tests share: `hale demo` run as a process on ephemeral
//! ports with a control socket, and the rule for absent peers.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The `hale` binary under test.
pub const HALE: &str = env!("CARGO_BIN_EXE_hale");

/// A peer the test needs is absent: skip with a message, unless
/// LIMEN_REQUIRE_PEERS=1 makes that a failure.
pub fn absent(why: &str) {
    assert!(
        std::env::var("LIMEN_REQUIRE_PEERS").as_deref() != Ok("1"),
        "{why} (LIMEN_REQUIRE_PEERS=1); run scripts/install-peers"
    );
    eprintln!("skipped: {why}; scripts/install-peers installs it");
}

/// Whether a peer program is on the PATH ([`absent`] when not).
pub fn peer(name: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        absent(&format!("{name} is absent"));
    }
    found
}

/// The workspace root, where `.peers/`, `conformance/programs/` and the
/// peer scripts under `drivers/tests/peer/` are found.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// An empty scratch directory `limen-{prefix}-{pid}-{tag}`: the pid keeps
/// concurrent test runs apart, the tag the tests of one run.
pub fn scratch(prefix: &str, tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("limen-{prefix}-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

// A peer script's plan and report, as every test crate's tests share them.
#[allow(unused_imports)]
pub use limen_clients::{report, spawn_plan};

/// The venv's Python when it imports `modules` (comma-separated, as an
/// `import` line takes them); [`absent`] naming `what` when not.
pub fn venv_python(modules: &str, what: &str) -> Option<PathBuf> {
    let python = root().join(".peers/venv/bin/python");
    let ok = Command::new(&python)
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        absent(&format!("the Python gRPC peers ({what}) are absent"));
        return None;
    }
    Some(python)
}

/// Exports the desk program's Public surface (`Public.proto` among it)
/// into `out` with `hale api export`, the file the gRPC peers are built
/// from.
pub fn export_public(out: &Path) {
    let export = Command::new(HALE)
        .args(["api", "export"])
        .arg(root().join("conformance/programs/desk.hl"))
        .args(["--surface", "Public", "--out"])
        .arg(out)
        .output()
        .unwrap();
    assert!(export.status.success(), "{export:?}");
}

/// Generates grpcio's Python stubs for `file` (a path under `include`)
/// into `out` with `python`'s grpc_tools.
pub fn grpc_stubs(python: &Path, include: &Path, file: &str, out: &Path) {
    std::fs::create_dir_all(out).unwrap();
    let protoc = Command::new(python)
        .args(["-m", "grpc_tools.protoc", "-I"])
        .arg(include)
        .arg(format!("--python_out={}", out.display()))
        .arg(format!("--grpc_python_out={}", out.display()))
        .arg(file)
        .output()
        .unwrap();
    assert!(protoc.status.success(), "{protoc:?}");
}

/// [`demo`] with the gRPC exposure on an ephemeral port as well, and
/// `extra` flags.
pub fn grpc_demo(tag: &str, extra: &[&str]) -> Demo {
    let mut args = vec!["--grpc", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    let d = demo(tag, &args);
    assert!(!d.grpc.is_empty(), "the banner names the grpc exposure");
    d
}

/// A running `hale demo`, killed when dropped.
pub struct Demo {
    child: Child,
    /// public's `host:port`.
    pub public: String,
    /// partner's `host:port`.
    pub partner: String,
    /// The MCP exposure's `host:port`.
    pub mcp: String,
    /// The gRPC exposure's `host:port` (empty unless `--grpc` was given).
    pub grpc: String,
    /// The WebSocket hub's `host:port`, when `--hub` serves one.
    pub hub: String,
    /// The datagram hub's `host:port`, when `--udp-hub` serves one.
    pub udp_hub: String,
    /// The admin socket.
    pub admin: PathBuf,
    /// The control socket.
    pub control: PathBuf,
    /// The demo's scratch directory.
    pub dir: PathBuf,
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Starts `hale demo` with every listener on an ephemeral port (or in a
/// scratch directory) and `extra` flags; `tag` names the scratch directory.
pub fn demo(tag: &str, extra: &[&str]) -> Demo {
    demo_limited(tag, extra, None)
}

/// [`demo`] in a process whose open descriptors are limited to `nofile`
/// (soft and hard, so the demo cannot raise it), when given.
pub fn demo_limited(tag: &str, extra: &[&str], nofile: Option<u32>) -> Demo {
    let dir = std::env::temp_dir().join(format!("limen-live-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let admin = dir.join("admin.sock");
    let control = dir.join("control.sock");
    let mut command = match nofile {
        None => Command::new(HALE),
        Some(n) => {
            let mut sh = Command::new("sh");
            sh.args(["-c", &format!("ulimit -n {n} && exec \"$0\" \"$@\""), HALE]);
            sh
        }
    };
    let mut child = command
        .args([
            "demo",
            "--public",
            "127.0.0.1:0",
            "--partner",
            "127.0.0.1:0",
            "--mcp",
            "127.0.0.1:0",
        ])
        .arg("--admin-socket")
        .arg(&admin)
        .arg("--control")
        .arg(&control)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let (mut public, mut partner, mut mcp) = (String::new(), String::new(), String::new());
    let mut grpc = String::new();
    let (mut hub, mut udp_hub) = (String::new(), String::new());
    for line in lines.by_ref() {
        let line = line.unwrap();
        if line.starts_with("stop with") {
            break;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        if let [identity, endpoint] = words[..] {
            let addr = endpoint
                .trim_start_matches("http://")
                .trim_start_matches("mcp://")
                .trim_start_matches("grpc://")
                .trim_start_matches("ws://")
                .to_owned();
            if identity.ends_with("/public") {
                public = addr;
            } else if identity.ends_with("/partner") {
                partner = addr;
            } else if identity.ends_with("/mcp") {
                mcp = addr;
            } else if identity.ends_with("/grpc") {
                grpc = addr;
            } else if identity.starts_with("hub@") && endpoint.starts_with("ws://") {
                hub = addr;
            } else if let Some(udp) = endpoint.strip_prefix("udp://") {
                udp_hub = udp.to_owned();
            }
        }
    }
    // Keep the pipe drained so the demo never blocks on stdout.
    std::thread::spawn(move || for _ in lines {});
    assert!(
        !public.is_empty() && !partner.is_empty() && !mcp.is_empty(),
        "the banner names public, partner and mcp"
    );
    Demo {
        child,
        public,
        partner,
        mcp,
        grpc,
        hub,
        udp_hub,
        admin,
        control,
        dir,
    }
}

impl Demo {
    /// The demo's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits up to `limit` for the demo to exit; its status when it did.
    pub fn wait_exit(&mut self, limit: std::time::Duration) -> Option<std::process::ExitStatus> {
        let start = std::time::Instant::now();
        while start.elapsed() < limit {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        None
    }

    /// Sends one control line and asserts it was answered `ok`.
    pub fn control(&self, line: &str) {
        let mut s = UnixStream::connect(&self.control).unwrap();
        writeln!(s, "{line}").unwrap();
        let mut answer = String::new();
        BufReader::new(s).read_line(&mut answer).unwrap();
        assert_eq!(answer, "ok\n", "control `{line}`");
    }
}
