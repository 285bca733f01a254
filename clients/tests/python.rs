//! The Python client (`hale api client --lang python`), held by the real
//! peers: the witness's clients committed under `clients/golden/python/`
//! and held with `--check`; the recorded wire written and read through the
//! generated module (`tests/python/driver.py`) against the replay; the
//! type level under `mypy --strict --warn-unreachable` (a consumer that
//! switches exhaustively checks clean, one matching a handler error a row
//! does not declare is refused); varied surfaces, each type-checked and
//! the same bytes on every run; and the clients against `hale demo`
//! (`tests/python/live.py`): every outcome over HTTP, the Unix socket and a
//! hub's call frames, each refusal the control socket provokes, a changed
//! program's digest, a dead port, and a subscription's
//! events with their seq, a gap after shedding, and its expired, revoked,
//! closed and lost ends.
//!
//! A peer that is absent (the venv's Python, mypy, the witness's fixtures)
//! skips with a message, and fails under `LIMEN_REQUIRE_PEERS=1`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use limen_clients::replay::{witness_records, Mode, Replay, Transport, WireRecord};
use limen_clients::{hale, mypy, python, root, witness};
use serde_json::{json, Value};

/// The committed clients of the witness's two surfaces.
fn golden() -> PathBuf {
    root().join("clients/golden/python")
}

/// The Python scripts the tests run (`driver.py`, `live.py`, the
/// consumers).
fn scripts() -> PathBuf {
    root().join("clients/tests/python")
}

/// An empty scratch folder of this test run's, `tag` naming the test.
fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("limen-py-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `hale api client --surface S --lang python` with `args` after it.
fn client_cmd(surface: &str, args: &[&Path]) -> Output {
    Command::new(hale())
        .args(["api", "client", "--surface", surface, "--lang", "python"])
        .args(args)
        .output()
        .unwrap()
}

/// The Python client of `surface` of `program`, as text.
fn generate(surface: &str, program: &Path) -> String {
    let out = client_cmd(surface, &[program]);
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// The witness program with `Orders::place` now requiring `trader`: a row
/// changed, so its digest moved.
fn changed_program(dir: &Path, witness: &Path) -> PathBuf {
    let program = std::fs::read_to_string(witness.join("program.hl")).unwrap();
    let edited = program.replacen(
        "rpc Orders::place;",
        "rpc Orders::place requires: [trader];",
        1,
    );
    assert_ne!(program, edited, "the witness has the row this test edits");
    let path = dir.join("changed.hl");
    std::fs::write(&path, edited).unwrap();
    path
}

/// mypy under `--strict --warn-unreachable` over `files`, run in `dir`.
fn mypy_in(mypy: &Path, dir: &Path, files: &[&str]) -> Output {
    Command::new(mypy)
        .current_dir(dir)
        .args(["--strict", "--warn-unreachable", "--no-error-summary"])
        .arg("--cache-dir")
        .arg(dir.join(".mypy_cache"))
        .args(files)
        .output()
        .unwrap()
}

#[test]
fn the_witness_clients_are_committed_and_check_names_a_drifted_ones_digest() {
    let Some(witness) = witness() else { return };
    let program = witness.join("program.hl");
    for surface in ["Public", "Admin"] {
        let file = golden().join(format!("{surface}.py"));
        let out = client_cmd(surface, &[Path::new("--check"), &file, &program]);
        assert!(
            out.status.success(),
            "{surface}: {} (regenerate with `hale api client --surface {surface} --lang python --out {}`)",
            text(&out),
            file.display()
        );
    }
    // Against a program whose row changed, the committed client has
    // drifted: --check fails naming the digest it was made against.
    let dir = scratch("check");
    let changed = changed_program(&dir, &witness);
    let file = golden().join("Public.py");
    let out = client_cmd("Public", &[Path::new("--check"), &file, &changed]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("fnv1a64:a8930d6e7998e986"),
        "names the old digest: {said}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// What a record's reply decodes to, as `driver.py` prints an outcome.
fn expected_outcome(record: &WireRecord, mode: Mode) -> Value {
    if mode == Mode::Lost {
        return json!("transport_error");
    }
    let reply = record.reply();
    let (ok, value, error, refusal) = match record.transport {
        Transport::Http => {
            let status = reply["status"].as_u64().unwrap();
            let body = &reply["body"];
            (
                status == 200,
                body.clone(),
                (status == 422).then(|| body.clone()),
                body.get("refusal").cloned(),
            )
        }
        Transport::Unix => (
            reply["ok"] == json!(true),
            reply["value"].clone(),
            reply.get("error").cloned(),
            reply.get("refusal").cloned(),
        ),
    };
    if ok {
        return json!({ "result": value });
    }
    if let Some(e) = error {
        return json!({ "handler_error": e });
    }
    let r = refusal.expect("a reply is a result, an error or a refusal");
    if r["kind"] == "server" {
        return json!({"server_error": true});
    }
    json!({"refusal": {
        "kind": r["kind"],
        "reason": r["reason"],
        "requires": r.get("requires").cloned().unwrap_or(json!([])),
        "served": r.get("served").cloned().unwrap_or(Value::Null),
    }})
}

/// The payload a typed client can write for `record`, and the pointers of
/// its request a typed client does not write by itself: the malformed
/// records' payloads (a field missing, a field of the wrong type) are
/// made whole, and the Unix `refusal_unauthenticated` record carries no
/// digest, where a generated client always sends one.
fn typed(record: &WireRecord) -> (Value, Vec<&'static str>) {
    let mut payload = record.payload.clone();
    let ignored = match (record.transport, record.name.as_str()) {
        (Transport::Http, "refusal_malformed") => {
            payload["qty"] = json!(10);
            vec!["/body/qty"]
        }
        (Transport::Unix, "refusal_malformed") => {
            payload["order"] = json!(41);
            vec!["/payload/order"]
        }
        (Transport::Unix, "refusal_unauthenticated") => vec!["/digest"],
        _ => Vec::new(),
    };
    (payload, ignored)
}

#[test]
fn the_client_writes_each_recorded_request_and_reads_each_recorded_reply() {
    let (Some(python), Some(http), Some(unix)) = (
        python(),
        witness_records(Transport::Http),
        witness_records(Transport::Unix),
    ) else {
        return;
    };
    assert_eq!((http.len(), unix.len()), (10, 10), "every outcome, twice");
    let mut failures = Vec::new();
    for record in http.iter().chain(&unix) {
        let module = record.value["exposure"]
            .as_str()
            .and_then(|e| e.split('@').next())
            .unwrap()
            .to_string();
        let (payload, ignored) = typed(record);
        for mode in [Mode::Answer, Mode::Lost] {
            let replay = Replay::serve(record, mode).unwrap().ignoring(&ignored);
            let id = record.id.as_ref().map_or(Value::Null, |i| json!(i));
            let out = Command::new(&python)
                .arg(scripts().join("driver.py"))
                .arg(golden())
                .args([
                    module.as_str(),
                    replay.endpoint(),
                    &record.member,
                    record.bearer.as_deref().unwrap_or(""),
                    &payload.to_string(),
                    &id.to_string(),
                    &record.digest,
                ])
                .output()
                .unwrap();
            let what = format!("{}/{} {mode:?}", record.transport, record.name);
            if let Err(e) = replay.finish() {
                failures.push(format!("{what}: {e}"));
            }
            if !out.status.success() {
                failures.push(format!("{what}: the driver failed: {}", text(&out)));
                continue;
            }
            let mut got: Value = serde_json::from_slice(&out.stdout).unwrap();
            // A transport error's text is the client's; its kind is the
            // outcome.
            if got.get("transport_error").is_some() {
                got = json!("transport_error");
            }
            let want = expected_outcome(record, mode);
            if got != want {
                failures.push(format!("{what}: decoded {got}, recorded {want}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn an_exhaustive_consumer_checks_and_a_handler_error_no_row_declares_does_not() {
    let (Some(_), Some(mypy)) = (witness(), mypy()) else {
        return;
    };
    let dir = scratch("types");
    for f in ["Public.py", "Admin.py"] {
        std::fs::copy(golden().join(f), dir.join(f)).unwrap();
    }
    for f in ["consumer_ok.py", "consumer_bad.py"] {
        std::fs::copy(scripts().join(f), dir.join(f)).unwrap();
    }
    let ok = mypy_in(&mypy, &dir, &["Public.py", "Admin.py", "consumer_ok.py"]);
    assert!(ok.status.success(), "{}", text(&ok));
    // `Orders::place` declares no handler error: its outcome has no
    // variant a `case HandlerError(...)` could match, and mypy says so
    // on that line.
    let bad = mypy_in(&mypy, &dir, &["consumer_bad.py"]);
    assert!(!bad.status.success(), "mypy accepted consumer_bad.py");
    let said = text(&bad);
    let line = std::fs::read_to_string(dir.join("consumer_bad.py"))
        .unwrap()
        .lines()
        .position(|l| l.contains("case Public.HandlerError"))
        .unwrap()
        + 1;
    assert!(
        said.contains(&format!("consumer_bad.py:{line}: error: Subclass of"))
            && said.contains("\"HandlerError\" is final  [unreachable]"),
        "{said}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Programs of every shape a client meets: a scalar request, no request,
/// no response, nested records, a record that refers to itself, `json:`
/// tags, defaults, Python's keywords and the module's own names as
/// fields, members and records, imported types, a hub of several streams,
/// a datagram hub (listed, not spoken), and no hub at all.
const PROGRAMS: &[(&str, &str)] = &[
    (
        "S",
        "role r;\n\
         type In { n: Int; inner: Deep; class: String json:\"class\"; ratio: Float = 0.5; }\n\
         type Deep { s: String; from: Bool = false; int: Int json:\"the int\"; Out: Out; }\n\
         type Out { ok: Bool; } type E { why: String; }\n\
         type Loop { next: Loop; n: Int; }\n\
         type Result { to_json: Int; value: String json:\"v-a-l\"; }\n\
         type Event { seq: Int; }\n\
         api S { rpc B::rec requires: [r]; rpc B::scalar; rpc B::none; rpc B::looped; rpc B::pass; rpc B::res; rpc B::ev; }\n\
         locus B { fn rec(i: In) -> Out fallible(E) { } fn scalar(count: Int) -> Float { } fn none() { }\n\
                   fn looped(l: Loop) -> Loop { } fn pass(x: Out) -> Bool fallible(String) { }\n\
                   fn res(x: Result) -> Result fallible(ClosureViolation) { } fn ev() -> Event { } }\n",
    ),
    (
        "S",
        "role r; role s;\n\
         type A { n: Int; } type B { s: String; lambda: Float = 1.5; }\n\
         topic Ticks { payload: A; subject: \"t.ticks\"; }\n\
         topic BookChanges { payload: B; subject: \"t.book\"; }\n\
         topic Beats { payload: A; subject: \"t.beats\"; }\n\
         locus P { bus { publish Ticks; publish BookChanges; publish Beats; } fn f(a: A) -> B { } }\n\
         locus G { fn holds(p: std::api::Principal, r: String) -> Bool { return true; } }\n\
         api S { rpc P::f requires: [r, s]; }\n\
         main locus M {\n\
           params { p: P = P { }; g: G = G { };\n\
             hub: ws::Hub = ws::Hub { bind: \"127.0.0.1:0\", roles: self.g, as: \"h\" };\n\
             dgrams: udp::Hub = udp::Hub { bind: \"127.0.0.1:0\", roles: self.g, as: \"d\" }; }\n\
           bindings { Ticks: self.hub requires: [r], bound: 8, on_full: drop_new;\n\
                      BookChanges: self.hub bound: 4, on_full: drop_old;\n\
                      Beats: self.dgrams bound: 4, on_full: drop_old; }\n\
         }\n",
    ),
    (
        "Only",
        "role r;\napi Only { rpc X::ping; }\nlocus X { fn ping() -> Int { } }\n",
    ),
];

/// An application over a library: its records are named under the alias.
const APP: &str = "import \"lib/lib.hl\" as lib;\ntype Ack { ok: Bool; item: lib::Item; }\n\
    locus Shop { fn buy(i: lib::Item) -> Ack { return Ack { ok: true, item: i }; } }\n\
    api Front { rpc Shop::buy requires: [trader]; }\n";
const LIB: &str = "role trader;\ntype Item { sku: String; n: Int = 1; }\n";

#[test]
fn every_surface_gives_a_client_that_type_checks_runs_and_is_the_same_twice() {
    let (Some(python), Some(mypy)) = (python(), mypy()) else {
        return;
    };
    let dir = scratch("surfaces");
    let mut files = Vec::new();
    let mut programs: Vec<(String, PathBuf)> = Vec::new();
    for (i, (surface, text)) in PROGRAMS.iter().enumerate() {
        let path = dir.join(format!("p{i}.hl"));
        std::fs::write(&path, text).unwrap();
        programs.push((surface.to_string(), path));
    }
    std::fs::create_dir_all(dir.join("lib")).unwrap();
    std::fs::write(dir.join("lib/lib.hl"), LIB).unwrap();
    std::fs::write(dir.join("app.hl"), APP).unwrap();
    programs.push(("Front".into(), dir.join("app.hl")));
    if let Some(witness) = witness() {
        for s in ["Public", "Admin"] {
            programs.push((s.into(), witness.join("program.hl")));
        }
    }
    for (i, (surface, path)) in programs.iter().enumerate() {
        let first = generate(surface, path);
        assert_eq!(
            first,
            generate(surface, path),
            "{}: two runs",
            path.display()
        );
        let name = format!("client_{i}.py");
        std::fs::write(dir.join(&name), first).unwrap();
        files.push(name);
    }
    let names: Vec<&str> = files.iter().map(String::as_str).collect();
    let out = mypy_in(&mypy, &dir, &names);
    assert!(out.status.success(), "{}", text(&out));
    // Each runs: imported, a record round-trips through its JSON, and the
    // WebSocket framing round-trips a frame of each length encoding.
    let imports = files
        .iter()
        .map(|f| format!("import {}", f.trim_end_matches(".py")))
        .collect::<Vec<_>>()
        .join("\n");
    let check = format!(
        "{imports}\nimport client_0 as c\n\
         d = c.Deep(s='x', int_=3, Out_=c.Out(ok=True))\n\
         j = d.to_json()\n\
         assert j == {{'s': 'x', 'the int': 3, 'Out': {{'ok': True}}}}, j\n\
         assert c.Deep.from_json(j) == d\n\
         assert c.In.from_json({{'n': 1, 'inner': j, 'class': 'k'}}).class_ == 'k'\n\
         try:\n    c.In.from_json({{'n': 1, 'inner': j}})\n    raise SystemExit('no error')\n\
         except c.DecodeError as e:\n    assert str(e) == 'missing_field: class', e\n\
         try:\n    c.Deep.from_json({{'s': 1, 'the int': 3, 'Out': {{'ok': True}}}})\n    raise SystemExit('no error')\n\
         except c.DecodeError as e:\n    assert str(e) == 'wrong_type: s', e\n\
         import socket, threading\n\
         a, b = socket.socketpair()\n\
         out, back = c._Ws(a, bytearray()), c._Ws(b, bytearray())\n\
         sizes = [0, 5, 125, 126, 200, 65535, 65536, 70000]\n\
         t = threading.Thread(target=lambda: [out.send(0x1, bytes([n % 251]) * n) for n in sizes])\n\
         t.start()\n\
         for n in sizes:\n    assert back.recv(5.0) == (True, 0x1, bytes([n % 251]) * n), n\n\
         t.join()\n\
         print('ok')\n"
    );
    let out = Command::new(&python)
        .current_dir(&dir)
        .args(["-c", &check])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A small deterministic generator (xorshift64*), so the random surfaces
/// are the same on every run and a failure names its seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len())]
    }

    fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }
}

/// Field and function names, Python's keywords and the module's own among
/// plain ones.
const NAMES: &[&str] = &[
    "a",
    "qty",
    "order",
    "kind",
    "value",
    "seq",
    "id",
    "from",
    "class",
    "None",
    "True",
    "yield",
    "import",
    "lambda",
    "is",
    "not",
    "print",
    "str",
    "int",
    "float",
    "list",
    "dict",
    "x_",
    "_x",
    "a_b",
    "to_json",
    "from_json",
    "reason",
    "served",
    "topic",
    "payload",
    "timeout",
    "bearer",
    "endpoint",
    "request",
    "json",
    "socket",
    "match",
    "case",
    "type",
];

/// A random program of one surface `S`: records of scalars and each other
/// (recursion included), defaults and `json:` keys, members with and
/// without each slot, and now and then a hub of several streams; the
/// builder of `fuzz/fuzz_targets/hale_client.rs`, driven by a seed.
fn random_program(rng: &mut Rng) -> String {
    const SCALARS: &[&str] = &["Int", "Float", "Bool", "String", "Money", "OrderId"];
    const LOCI: &[&str] = &["Orders", "Ledger", "Class", "Result", "L"];
    let mut text = String::from(
        "role r0;\nunit cent;\ntype Money = quantity Int in cent;\ntype OrderId = distinct Int;\n",
    );
    let records = 1 + rng.below(5);
    let record_names = ["T0", "Event", "Refusal", "T3", "lib_x"];
    for name in record_names.iter().take(records) {
        text.push_str(&format!("type {name} {{ "));
        let mut fields: Vec<&str> = Vec::new();
        for _ in 0..rng.below(5) {
            let f = rng.pick(NAMES);
            if fields.contains(&f) {
                continue;
            }
            fields.push(f);
            let ty = if rng.one_in(4) {
                record_names[rng.below(records)]
            } else {
                rng.pick(SCALARS)
            };
            text.push_str(&format!("{f}: {ty}"));
            if rng.one_in(6) {
                text.push_str(&format!(" json:\"{}\"", rng.pick(NAMES)));
            }
            if ty == "Int" && rng.one_in(3) {
                text.push_str(" = 1");
            }
            text.push_str("; ");
        }
        text.push_str("}\n");
    }
    let slot = |rng: &mut Rng| -> Option<String> {
        match rng.below(4) {
            0 => None,
            1 => Some(rng.pick(SCALARS).to_string()),
            _ => Some(record_names[rng.below(records)].to_string()),
        }
    };
    let topics = if rng.one_in(2) { 1 + rng.below(3) } else { 0 };
    for p in 0..topics {
        let payload = record_names[rng.below(records)];
        text.push_str(&format!(
            "topic P{p} {{ payload: {payload}; subject: \"s.{p}\"; }}\n"
        ));
    }
    let mut rows: Vec<(&str, &str)> = Vec::new();
    let mut loci: Vec<(&str, Vec<String>)> = Vec::new();
    for _ in 0..1 + rng.below(4) {
        let (locus, function) = (rng.pick(LOCI), rng.pick(NAMES));
        if rows.contains(&(locus, function)) {
            continue;
        }
        rows.push((locus, function));
        let request = slot(rng).map_or(String::new(), |t| format!("x: {t}"));
        let response = slot(rng).map_or(String::new(), |t| format!(" -> {t}"));
        let error = match rng.below(3) {
            0 => String::new(),
            1 => " fallible(ClosureViolation)".to_string(),
            _ => format!(" fallible({})", record_names[rng.below(records)]),
        };
        let f = format!("fn {function}({request}){response}{error} {{ }}");
        match loci.iter_mut().find(|(l, _)| *l == locus) {
            Some((_, fns)) => fns.push(f),
            None => loci.push((locus, vec![f])),
        }
    }
    text.push_str("api S {\n");
    for (l, f) in &rows {
        let requires = if rng.one_in(2) { " requires: [r0]" } else { "" };
        text.push_str(&format!("    rpc {l}::{f}{requires};\n"));
    }
    text.push_str("}\n");
    for (i, (l, fns)) in loci.iter().enumerate() {
        text.push_str(&format!("locus {l} {{ "));
        if i == 0 && topics > 0 {
            text.push_str("bus { ");
            for p in 0..topics {
                text.push_str(&format!("publish P{p}; "));
            }
            text.push_str("} ");
        }
        text.push_str(&fns.join(" "));
        text.push_str(" }\n");
    }
    if topics > 0 {
        text.push_str(
            "locus G { fn holds(p: std::api::Principal, r: String) -> Bool { return false; } }\n\
             main locus M {\n    params { g: G = G { };\n        \
             hub: ws::Hub = ws::Hub { bind: \"127.0.0.1:0\", roles: self.g, as: \"h\" }; }\n    bindings {\n",
        );
        for p in 0..topics {
            let on_full = rng.pick(&["drop_old", "drop_new"]);
            text.push_str(&format!(
                "        P{p}: self.hub requires: [r0], bound: {}, on_full: {on_full};\n",
                1 + rng.below(64)
            ));
        }
        text.push_str("    }\n}\n");
    }
    text
}

#[test]
fn random_surfaces_give_clients_that_type_check_and_import_or_a_refusal_naming_both_names() {
    let (Some(python), Some(mypy)) = (python(), mypy()) else {
        return;
    };
    let dir = scratch("random");
    let mut files = Vec::new();
    let mut refused = 0;
    for seed in 1..=24u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let program = random_program(&mut rng);
        let path = dir.join(format!("r{seed}.hl"));
        std::fs::write(&path, &program).unwrap();
        let out = client_cmd("S", &[&path]);
        if !out.status.success() {
            // The only refusal a program of these names meets: two Hale
            // names one Python name, named both.
            let said = text(&out);
            assert!(
                said.contains("Python name") && said.contains("rename one"),
                "seed {seed}: {said}\n{program}"
            );
            refused += 1;
            continue;
        }
        assert_eq!(
            out.stdout,
            client_cmd("S", &[&path]).stdout,
            "seed {seed}: two runs"
        );
        let name = format!("random_{seed}.py");
        std::fs::write(dir.join(&name), &out.stdout).unwrap();
        files.push(name);
    }
    eprintln!("{} random surfaces made, {refused} refused", files.len());
    assert!(files.len() >= 16, "{refused} of 24 refused");
    let names: Vec<&str> = files.iter().map(String::as_str).collect();
    let out = mypy_in(&mypy, &dir, &names);
    assert!(out.status.success(), "{}", text(&out));
    let imports: String = files
        .iter()
        .map(|f| format!("import {}\n", f.trim_end_matches(".py")))
        .collect();
    let out = Command::new(&python)
        .current_dir(&dir)
        .args(["-c", &imports])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A running `hale demo`, killed when dropped.
struct Demo {
    child: Child,
    public: String,
    hub: String,
    dir: PathBuf,
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Demo {
    /// `hale demo` on ephemeral ports, its admin and control sockets in
    /// `dir`, with `extra` flags; read from its banner.
    fn start(dir: &Path, extra: &[&str]) -> Demo {
        let mut child = Command::new(hale())
            .args([
                "demo",
                "--public",
                "127.0.0.1:0",
                "--partner",
                "127.0.0.1:0",
            ])
            .args(["--mcp", "127.0.0.1:0", "--hub", "127.0.0.1:0"])
            .arg("--admin-socket")
            .arg(dir.join("admin.sock"))
            .arg("--control")
            .arg(dir.join("control.sock"))
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let (mut public, mut hub) = (String::new(), String::new());
        for line in lines.by_ref() {
            let line = line.unwrap();
            if line.starts_with("stop with") {
                break;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            if let [identity, endpoint] = words[..] {
                if identity.ends_with("/public") {
                    public = endpoint.to_string();
                } else if identity.starts_with("hub@") && endpoint.starts_with("ws://") {
                    hub = endpoint.to_string();
                }
            }
        }
        // Keep the pipe drained so the demo never blocks on stdout.
        std::thread::spawn(move || for _ in lines {});
        assert!(
            public.starts_with("http://") && hub.starts_with("ws://"),
            "the banner names public and the hub"
        );
        Demo {
            child,
            public,
            hub,
            dir: dir.to_path_buf(),
        }
    }

    fn plan(&self, modules: &Path) -> Value {
        json!({
            "modules": modules,
            "public": self.public,
            "admin": format!("unix:{}", self.dir.join("admin.sock").display()),
            "hub": self.hub,
            "control": self.dir.join("control.sock"),
        })
    }
}

/// Starts `live.py SCENARIO` with `plan` on its stdin.
fn live(python: &Path, scenario: &str, plan: &Value) -> Child {
    limen_clients::spawn_plan(
        Command::new(python)
            .arg(scripts().join("live.py"))
            .arg(scenario),
        plan,
    )
}

/// Reads a scenario's report (its last stdout line) and asserts each of
/// `expected` was checked and held.
fn assert_report(scenario: &str, out: Output, expected: &[&str]) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: Value = stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("{scenario}: no report: {}", text(&out)));
    let checks = report["checks"].as_object().unwrap();
    let mut failed = Vec::new();
    for name in expected {
        match checks.get(*name) {
            Some(c) if c[0] == json!(true) => {}
            Some(c) => failed.push(format!("{name}: saw {}", c[1])),
            None => failed.push(format!("{name}: not checked")),
        }
    }
    assert!(
        failed.is_empty(),
        "{scenario}:\n{}\n{}",
        failed.join("\n"),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_clients_against_hale_demo_see_every_outcome_and_every_end_of_a_subscription() {
    let (Some(python), Some(witness)) = (python(), witness()) else {
        return;
    };
    let dir = scratch("live");
    let modules = dir.join("modules");
    std::fs::create_dir_all(&modules).unwrap();
    for f in ["Public.py", "Admin.py"] {
        std::fs::copy(golden().join(f), modules.join(f)).unwrap();
    }
    let changed = changed_program(&dir, &witness);
    std::fs::write(modules.join("changed.py"), generate("Public", &changed)).unwrap();

    let scenarios: [(&str, &[&str], &[&str]); 6] = [
        (
            "calls",
            &[],
            &[
                "result",
                "result_cancel",
                "handler_error",
                "unauthenticated",
                "no_bearer",
                "unauthorized",
                "server_error",
                "digest_mismatch",
                "unix_handler_error",
                "unix_result",
                "unix_server_error",
                "unix_result_scalar_id",
                "unavailable",
                "served_again",
                "dead_port",
                "dead_socket",
            ],
        ),
        (
            "hub_calls",
            &["--hub-desk"],
            &[
                "hub_result",
                "hub_result_numeric_id",
                "hub_unauthenticated",
                "hub_unauthorized",
                "hub_server_error",
                "hub_digest_mismatch",
            ],
        ),
        ("full", &["--bound", "1"], &["full", "held_answered"]),
        (
            "gap",
            &["--hub-desk", "--bound", "1000000"],
            &["placed", "gap"],
        ),
        (
            "shutting_down",
            &["--bound", "1"],
            &["full", "shutting_down", "executing_answered"],
        ),
        (
            "stream",
            &[],
            &[
                "admitted",
                "events",
                "quiet",
                "refusal_unauthorized",
                "refusal_ends",
                "refusal_unauthenticated",
                "expired",
                "revoked",
                "revoked_is_the_end",
                "closed",
            ],
        ),
    ];
    // Each scenario on a demo of its own, all at once.
    let mut running = Vec::new();
    for (scenario, extra, expected) in scenarios {
        let here = dir.join(scenario);
        std::fs::create_dir_all(&here).unwrap();
        let demo = Demo::start(&here, extra);
        let child = live(&python, scenario, &demo.plan(&modules));
        running.push((scenario, expected, demo, child));
    }
    // lost: the hub dies (SIGKILL) under a live subscription.
    let here = dir.join("lost");
    std::fs::create_dir_all(&here).unwrap();
    let mut demo = Demo::start(&here, &[]);
    let mut child = live(&python, "lost", &demo.plan(&modules));
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert_eq!(first, "subscribed\n", "lost: the subscription was admitted");
    demo.child.kill().unwrap();
    let _ = demo.child.wait();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_report(
        "lost",
        Output {
            stdout: rest.into_bytes(),
            ..out
        },
        &["lost", "dead_hub"],
    );
    for (scenario, expected, demo, child) in running {
        let out = child.wait_with_output().unwrap();
        assert_report(scenario, out, expected);
        drop(demo);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
