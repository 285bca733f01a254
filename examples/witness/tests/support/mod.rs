//! What the tests that serve the witness with `hale serve` share
//! (`serve.rs`, its handlers `witness-tool`; `serve_python.rs`, its
//! handlers in Python; `admin_digest.rs`): the program, a scratch folder,
//! a configuration whose handlers are `witness-tool`, a running `hale
//! serve` and `limen-conformance check`.
//!
//! Each test binary uses part of it, so what one leaves unused is no
//! warning.
#![allow(dead_code)]

use limen_clients::{banner_endpoint, read_banner, workspace_bin};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The witness program, `../shared/hale-witness/program.hl`; `None` (and
/// a line saying so) when the fixtures are not there.
pub fn program() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/hale-witness/program.hl");
    if p.exists() {
        Some(p)
    } else {
        eprintln!("skipped: the witness fixtures are not in ../shared/hale-witness");
        None
    }
}

/// A folder of its own for one server.
pub fn scratch(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "hale-serve-{}-{name}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A `serve.toml` for the witness: each instance a `witness-tool`, the
/// program's sources as tables, `extra` appended.
pub fn config(dir: &Path, rogue: bool, extra: &str) -> PathBuf {
    let tool = env!("CARGO_BIN_EXE_witness-tool");
    let rogue = if rogue {
        format!(", \"--rogue\", \"{}\"", dir.display())
    } else {
        String::new()
    };
    let mut text = String::new();
    for instance in ["orders", "partner_orders", "ledger"] {
        if extra.contains(&format!("[handlers.{instance}]")) {
            continue;
        }
        text.push_str(&format!(
            "[handlers.{instance}]\ncommand = [\"{tool}\", \"--instance\", \"{instance}\"{rogue}]\ntimeout_ms = 1500\n\n"
        ));
    }
    text.push_str(
        r#"[sources.bearer]
tokens = { "t-alice" = "alice", "t-bob" = "bob", "t-carol" = "carol", "t-dave" = "dave" }
refused = "no such token"
[sources.public_roles]
grants = { trader = ["alice"] }
[sources.partner_roles]
grants = { trader = ["carol"] }
[sources.admin_roles]
grants = { operator = ["uid:1000"] }
"#,
    );
    if !extra.contains("[sources.hub_roles]") {
        text.push_str("[sources.hub_roles]\ngrants = { operator = [\"dave\"] }\n");
    }
    text.push_str(extra);
    let path = dir.join("serve.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A running `hale serve`.
pub struct Served {
    /// The `hale serve` process.
    pub child: Child,
    /// Its scratch folder: the admin socket, the control socket.
    pub dir: PathBuf,
    /// What it printed at boot.
    pub banner: String,
}

impl Served {
    /// `hale serve PROGRAM --config CONFIG`, every exposure on a port of
    /// its own (admin's socket and the control socket in `dir`), the
    /// operator role on the Unix exposure granted to this process's uid,
    /// `args` given too; once it has printed its banner.
    pub fn serve(program: &Path, dir: PathBuf, config: &Path, args: &[&str]) -> Served {
        Served::serve_on(program, dir, config, "127.0.0.1:0", args)
    }

    /// [`Served::serve`] with the exposure `public` bound to `public`
    /// (`host:port`): a port a client already knows, where the program
    /// is served again.
    pub fn serve_on(
        program: &Path,
        dir: PathBuf,
        config: &Path,
        public: &str,
        args: &[&str],
    ) -> Served {
        let me = rustix_uid();
        let mut child = Command::new(workspace_bin("hale"))
            .arg("serve")
            .arg(program)
            .arg("--config")
            .arg(config)
            .arg("--bind")
            .arg(format!("public={public}"))
            .args([
                "--bind",
                "partner=127.0.0.1:0",
                "--bind",
                "fills=127.0.0.1:0",
            ])
            .arg("--bind")
            .arg(format!("admin={}", dir.join("admin.sock").display()))
            .arg("--grant")
            .arg(format!("admin_roles.operator=uid:{me}"))
            .arg("--control")
            .arg(dir.join("control"))
            .args(["--loops", "1"])
            // The call log only where a test reads it: stderr is read at
            // the end, and a pipe nobody reads must not fill.
            .args(if args.contains(&"--log") {
                &[][..]
            } else {
                &["--log", "off"][..]
            })
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("hale serve starts");
        let banner = read_banner(&mut child, "hale serve");
        Served { child, dir, banner }
    }

    /// The endpoint the banner prints for exposure `name`.
    pub fn endpoint(&self, name: &str) -> String {
        banner_endpoint(&self.banner, name)
    }

    /// The control socket's path.
    pub fn control(&self) -> String {
        self.dir.join("control").display().to_string()
    }

    /// Stops it with SIGTERM and returns its standard error.
    pub fn stop(mut self) -> String {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        err
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn rustix_uid() -> u32 {
    // The uid of this process, as `id -u` prints it.
    let out = Command::new("id").arg("-u").output().expect("id -u");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("a uid")
}

/// `limen-conformance check ARGS`, from the checkout's root: its exit
/// status and what it wrote.
pub fn check(args: &[&str]) -> (i32, String) {
    let out = Command::new(workspace_bin("limen-conformance"))
        .arg("check")
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .output()
        .expect("limen-conformance runs");
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

/// The checks `hale demo`'s exposures pass (conformance/tests/live.rs),
/// run against a served witness, whoever answers its receivers: each
/// asserts what the demo's run prints.
impl Served {
    /// `public` (HTTP, alice a trader): every case passes.
    pub fn passes_public(&self) {
        let (code, out) = check(&[
            "--endpoint",
            &self.endpoint("public"),
            "--transport",
            "http",
            "--bearer",
            "t-alice",
            "--control",
            &self.control(),
        ]);
        assert_eq!(code, 0, "{out}");
        assert!(out.ends_with("14 passed, 0 failed\n"), "{out}");
    }

    /// `partner` (HTTP, carol a trader, its own `Orders` instance).
    pub fn passes_partner(&self) {
        let (code, out) = check(&[
            "--endpoint",
            &self.endpoint("partner"),
            "--transport",
            "http",
            "--bearer",
            "t-carol",
            "--control",
            &self.control(),
        ]);
        assert_eq!(code, 0, "{out}");
        assert!(out.contains(" passed, 0 failed"), "{out}");
        assert!(!out.contains("FAIL"), "{out}");
    }

    /// `admin` over Unix, this process the operator by its uid.
    pub fn passes_admin(&self) {
        let public = format!("public={}", self.endpoint("public"));
        let (code, out) = check(&[
            "--endpoint",
            &self.endpoint("admin"),
            "--transport",
            "unix",
            "--control",
            &self.control(),
            "--as-peer",
            "1000",
            "--with",
            &public,
        ]);
        assert_eq!(code, 0, "{out}");
        // What `hale demo` leaves unprovoked too (conformance/tests/live.rs).
        assert!(
            out.ends_with("9 passed, 0 failed, 4 not provoked\n"),
            "{out}"
        );
    }

    /// The hub `fills` (dave an operator): each fill reaches it from the
    /// handler process, published through the control socket
    /// (HALE_CONTROL).
    pub fn passes_hub(&self) {
        let public = format!("public={}", self.endpoint("public"));
        let (code, out) = check(&[
            "--endpoint",
            &self.endpoint("fills"),
            "--transport",
            "ws",
            "--bearer",
            "t-dave",
            "--control",
            &self.control(),
            "--with",
            &public,
        ]);
        assert_eq!(code, 0, "{out}");
        // What `hale demo`'s hub without desk leaves unprovoked too
        // (conformance/tests/live.rs): a silent reader, and desk's calls.
        assert!(out.contains("pass  ws/subscribe\n"), "{out}");
        assert!(out.contains("pass  ws/unauthorized.revoked\n"), "{out}");
        assert!(
            out.ends_with("16 passed, 0 failed, 8 not provoked\n"),
            "{out}"
        );
    }
}
