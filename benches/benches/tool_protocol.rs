//! Calls per second through one Tool process, side by side with a bare
//! line echo over a pipe, with 1, 16 and 256 calls in flight; and the host
//! memory one call in flight holds.
//!
//! The bench binary is its own child: `--child toolkit` serves an echo
//! declaration with limen-toolkit (calls run on the reading thread), and
//! `--child line` copies standard input to standard output. The host side
//! of the Tool process is limen-drivers' `Process` over the `HostConn`
//! machine; the bare echo's host writes the very same call lines and counts
//! the lines that come back, decoding nothing.
//!
//! Each side is driven two ways, keeping N calls out the same way (each
//! time outcomes arrive, as many calls as closed are sent again, together):
//!
//! - **one host thread**: the thread that sends also reads. limen's
//!   `Process::queued`, whose `wait` reads the process's output on the
//!   caller's thread; the echo's host writing lines and reading them back
//!   on one thread.
//! - **a reader thread**: the output read on a thread of its own, each
//!   outcome (each line) handed to the sending thread through a channel.
//!   limen's `Process::new` with an `on_closed` callback; the echo's host
//!   with a thread counting lines.
//!
//! `cargo bench -p limen-benches --bench tool_protocol`; `--toolkit-only N
//! [queued|callback]`, `--machines`, `--echo-only N [one|threaded]` run one
//! part alone, for a profiler.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use limen_benches::alloc::{live_during, Counting};
use limen_core::flow::tool::toolkit::ToolkitLimits;
use limen_core::flow::tool::{
    Call, CallKey, HostConn, Limits, Outcome, Reply, Tool, ToolConn, ToolkitConn, ToolkitEvent,
};
use limen_core::flow::{Declaration, Identity, Param, Type, TypeEnv, Value};
use limen_drivers::tool::{Process, Spawn};

// Counts live heap bytes, for the memory a call in flight holds: only
// inside `live_during`, so the throughput runs (and the children, which are
// this binary too) pay no shared counter per allocation.
#[global_allocator]
static ALLOC: Counting = Counting;

fn echo_tool() -> Arc<Tool> {
    let decl = Declaration::new(
        Identity::in_repository("example.com/bench", "1.0.0", "echo.flow", "echo"),
        vec![Param::new("text", Type::Text)],
        Type::Text,
        Type::Text,
    );
    Arc::new(Tool::new(decl, TypeEnv::new()).expect("the echo declaration"))
}

const TEXT: &str = "the quick brown fox jumps over the lazy dog";

fn child_toolkit() {
    let service = |_: usize, _: &limen_toolkit::Context, args: Vec<Value>| {
        let text = args.into_iter().next().unwrap_or(Value::text(""));
        limen_toolkit::Reply::Ok(text)
    };
    let options = limen_toolkit::Options {
        workers: 0,
        ..limen_toolkit::Options::default()
    };
    if let Err(e) = limen_toolkit::serve(vec![echo_tool()], service, options) {
        eprintln!("toolkit child: {e}");
    }
}

fn child_line() {
    let mut input = std::io::stdin().lock();
    let mut output = std::io::stdout().lock();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match input.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if output.write_all(&buf[..n]).is_err() || output.flush().is_err() {
                    return;
                }
            }
        }
    }
}

fn me() -> String {
    std::env::current_exe()
        .expect("the bench binary")
        .display()
        .to_string()
}

/// The Tool process, its outcomes handed through a channel by the thread
/// that reads its output.
fn toolkit_process() -> (Process, mpsc::Receiver<Outcome>) {
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let process = Process::new(
        Spawn::new(&me(), &["--child", "toolkit"]),
        Box::new(HostConn::new(Limits::default())),
        Box::new(move |_, outcome| {
            let _ = tx.lock().map(|t| t.send(outcome));
        }),
    );
    process
        .describe(Duration::from_secs(10))
        .expect("the toolkit child describes itself");
    (process, rx)
}

/// The Tool process, its outcomes queued for the thread that sends.
fn toolkit_queued() -> Process {
    let process = Process::queued(
        Spawn::new(&me(), &["--child", "toolkit"]),
        Box::new(HostConn::new(Limits::default())),
    );
    process
        .describe(Duration::from_secs(10))
        .expect("the toolkit child describes itself");
    process
}

/// `total` calls through the queued process, `in_flight` out at once, on
/// this thread alone.
fn run_queued(process: &Process, in_flight: u64, total: u64) -> Duration {
    let tool = echo_tool();
    let mut got = Vec::new();
    keep_in_flight(
        in_flight,
        total,
        |from, to| {
            process
                .send_all((from..to).map(|n| call(&tool, n)))
                .expect("sent");
        },
        || {
            got.clear();
            let closed = process.wait(&mut got, Duration::from_secs(10)) as u64;
            assert!(closed > 0, "no outcome within 10 s");
            for (_, o) in &got {
                assert!(matches!(o, Outcome::Ok(_)), "{o:?}");
            }
            closed
        },
    )
}

/// Keeps `in_flight` of `total` calls out, the same way for every side:
/// `send(from, to)` sends calls `from..to` together; `closed()` waits for
/// some to close and says how many; as many are sent again. Returns the
/// time all took.
fn keep_in_flight(
    in_flight: u64,
    total: u64,
    mut send: impl FnMut(u64, u64),
    mut closed: impl FnMut() -> u64,
) -> Duration {
    let start = Instant::now();
    let first = in_flight.min(total);
    send(0, first);
    let (mut sent, mut done) = (first, 0);
    while done < total {
        let n = closed();
        done += n;
        let more = n.min(total - sent);
        if more > 0 {
            send(sent, sent + more);
            sent += more;
        }
    }
    start.elapsed()
}

fn call(tool: &Arc<Tool>, n: u64) -> Call {
    Call {
        key: CallKey {
            run: "bench".into(),
            call: n.to_string().into(),
        },
        tool: tool.clone(),
        args: vec![Value::text(TEXT)],
        type_args: Vec::new(),
    }
}

/// `total` calls, `in_flight` out at once: each time outcomes arrive, as
/// many calls as closed are sent again, together (the bare echo's host
/// does the same with its lines).
fn run_toolkit(
    process: &Process,
    rx: &mpsc::Receiver<Outcome>,
    in_flight: u64,
    total: u64,
) -> Duration {
    let tool = echo_tool();
    keep_in_flight(
        in_flight,
        total,
        |from, to| {
            process
                .send_all((from..to).map(|n| call(&tool, n)))
                .expect("sent");
        },
        || {
            let mut closed = 0;
            let mut outcome = Some(rx.recv().expect("an outcome"));
            while let Some(o) = outcome {
                assert!(matches!(o, Outcome::Ok(_)), "{o:?}");
                closed += 1;
                outcome = rx.try_recv().ok();
            }
            closed
        },
    )
}

/// The same call lines a host would write for calls `from..to`.
fn call_lines(tool: &Arc<Tool>, from: u64, to: u64, lines: &mut Vec<u8>) {
    lines.clear();
    for n in from..to {
        limen_core::flow::tool::protocol::write_call(&call(tool, n), lines).expect("written");
        lines.push(b'\n');
    }
}

fn line_child() -> std::process::Child {
    Command::new(me())
        .args(["--child", "line"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the line child")
}

/// The bare echo, lines counted back by a thread of its own.
struct LineEcho {
    stdin: std::process::ChildStdin,
    back: mpsc::Receiver<()>,
    _child: Reaped,
}

impl LineEcho {
    fn start() -> LineEcho {
        let mut child = line_child();
        let stdout = child.stdout.take().expect("stdout");
        let (tx, back) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::with_capacity(64 << 10, stdout);
            let mut line = Vec::new();
            while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
                line.clear();
                if tx.send(()).is_err() {
                    return;
                }
            }
        });
        LineEcho {
            stdin: child.stdin.take().expect("stdin"),
            back,
            _child: Reaped(child),
        }
    }

    fn run(&mut self, in_flight: u64, total: u64) -> Duration {
        let tool = echo_tool();
        let mut lines = Vec::new();
        let LineEcho { stdin, back, .. } = self;
        keep_in_flight(
            in_flight,
            total,
            |from, to| {
                call_lines(&tool, from, to, &mut lines);
                stdin.write_all(&lines).expect("written");
            },
            || {
                back.recv().expect("a line");
                1 + std::iter::from_fn(|| back.try_recv().ok()).count() as u64
            },
        )
    }
}

/// The bare echo, lines written and counted back on one thread.
struct LineEchoOneThread {
    stdin: std::process::ChildStdin,
    stdout: std::process::ChildStdout,
    _child: Reaped,
    buf: Vec<u8>,
}

impl LineEchoOneThread {
    fn start() -> LineEchoOneThread {
        let mut child = line_child();
        LineEchoOneThread {
            stdin: child.stdin.take().expect("stdin"),
            stdout: child.stdout.take().expect("stdout"),
            _child: Reaped(child),
            buf: vec![0u8; 64 << 10],
        }
    }

    fn run(&mut self, in_flight: u64, total: u64) -> Duration {
        let tool = echo_tool();
        let mut lines = Vec::new();
        let LineEchoOneThread {
            stdin, stdout, buf, ..
        } = self;
        keep_in_flight(
            in_flight,
            total,
            |from, to| {
                call_lines(&tool, from, to, &mut lines);
                stdin.write_all(&lines).expect("written");
            },
            || {
                let n = stdout.read(buf).expect("read");
                assert!(n > 0, "the line child ended");
                memchr::memchr_iter(b'\n', &buf[..n]).count() as u64
            },
        )
    }
}

/// A line child, killed and reaped when its host is dropped.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Live heap bytes per open call in a `HostConn`, beyond its arguments:
/// `n` calls sent and written, none answered.
fn memory_per_call(n: u64) -> (f64, usize) {
    let tool = echo_tool();
    let mut conn = HostConn::new(Limits::default());
    conn.send_call(0, call(&tool, u64::MAX)).expect("sent");
    conn.handle_started(0);
    let described = limen_core::flow::tool::listing::describe_result([&tool]);
    let line = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}}\n",
        serde_json::to_string(&described).expect("json")
    );
    conn.handle_data(0, line.as_bytes());
    while conn.poll_event().is_some() {}
    let written = conn.pending_output().len();
    conn.consume_output(0, written);
    // Each call (its key, its arguments) is made inside the window: what
    // is still live once it is written is what the host holds for it, its
    // arguments having been written and dropped.
    let live = live_during(|| {
        for i in 0..n {
            conn.send_call(0, call(&tool, i)).expect("sent");
        }
        let written = conn.pending_output().len();
        conn.consume_output(0, written);
    });
    let per_call = live as f64 / n as f64;
    (per_call, conn.open_calls())
}

/// The machines' own cost per call, no I/O: `n` calls through a
/// HostConn and a ToolkitConn wired back to back, stage by stage, in rounds
/// of 256 (the bench's deepest flight), so the maps and buffers stay at
/// the size a steady run keeps them.
fn machine_costs(n: u32) -> [Duration; 4] {
    const ROUND: u64 = 256;
    let tool = echo_tool();
    let mut host = HostConn::new(Limits::default());
    host.send_call(0, call(&tool, u64::MAX)).expect("sent");
    host.handle_started(0);
    let mut tk = ToolkitConn::new(vec![tool.clone()], ToolkitLimits::default());
    // Each side reads straight from the other's output, as a driver writes
    // straight from it.
    tk.handle_data(0, host.pending_output());
    host.consume_output(0, host.pending_output().len());
    while tk.poll_event().is_some() {}
    host.handle_data(0, tk.pending_output());
    tk.consume_output(0, tk.pending_output().len());
    while host.poll_event().is_some() {}
    let mut stages = [Duration::ZERO; 4];
    let mut calls = Vec::with_capacity(ROUND as usize);
    let mut next = 0u64;
    while next < u64::from(n) {
        let round = next..(next + ROUND).min(u64::from(n));
        next = round.end;
        let t = Instant::now();
        for i in round {
            host.send_call(0, call(&tool, i)).expect("sent");
        }
        stages[0] += t.elapsed();
        let t = Instant::now();
        tk.handle_data(0, host.pending_output());
        host.consume_output(0, host.pending_output().len());
        while let Some(e) = tk.poll_event() {
            if let ToolkitEvent::Call(c) = e {
                calls.push(c);
            }
        }
        stages[1] += t.elapsed();
        let t = Instant::now();
        for c in calls.drain(..) {
            let v = c.args.into_iter().next().unwrap_or(Value::text(""));
            tk.reply(0, &c.key, &Reply::Ok(v));
        }
        stages[2] += t.elapsed();
        let t = Instant::now();
        host.handle_data(0, tk.pending_output());
        tk.consume_output(0, tk.pending_output().len());
        while host.poll_event().is_some() {}
        stages[3] += t.elapsed();
    }
    stages.map(|s| s / n)
}

fn bench(c: &mut Criterion) {
    let (process, rx) = toolkit_process();
    let queued = toolkit_queued();
    let mut line = LineEcho::start();
    let mut line_one = LineEchoOneThread::start();
    let mut group = c.benchmark_group("tool_protocol");
    group.sample_size(10);
    for in_flight in [1u64, 16, 256] {
        group.throughput(Throughput::Elements(1));
        group.bench_with_input(
            BenchmarkId::new("toolkit_echo_one_thread", in_flight),
            &in_flight,
            |b, &k| b.iter_custom(|iters| run_queued(&queued, k, iters)),
        );
        group.bench_with_input(
            BenchmarkId::new("toolkit_echo_reader_thread", in_flight),
            &in_flight,
            |b, &k| b.iter_custom(|iters| run_toolkit(&process, &rx, k, iters)),
        );
        group.bench_with_input(
            BenchmarkId::new("bare_line_echo_one_thread", in_flight),
            &in_flight,
            |b, &k| b.iter_custom(|iters| line_one.run(k, iters)),
        );
        group.bench_with_input(
            BenchmarkId::new("bare_line_echo_reader_thread", in_flight),
            &in_flight,
            |b, &k| b.iter_custom(|iters| line.run(k, iters)),
        );
    }
    group.finish();

    // Side by side, alternating, so load on the shared machine hits all;
    // the median of seven runs is the figure (the best is shown too: it
    // says how far luck in the scheduling reaches on this machine).
    println!(
        "\ncalls per second, median (best) of 7 alternating runs (5000 calls at 1 in flight, \
         50000 at 16, 200000 at 256):"
    );
    println!(
        "in flight | toolkit one thread | toolkit reader thread | echo one thread | echo reader \
         thread | best / best | one / one | reader / reader"
    );
    for in_flight in [1u64, 16, 256] {
        let total = match in_flight {
            1 => 5000,
            16 => 50_000,
            _ => 200_000,
        };
        let mut runs: [Vec<f64>; 4] = Default::default();
        let rate = |d: Duration| total as f64 / d.as_secs_f64();
        for _ in 0..7 {
            runs[0].push(rate(run_queued(&queued, in_flight, total)));
            runs[1].push(rate(run_toolkit(&process, &rx, in_flight, total)));
            runs[2].push(rate(line_one.run(in_flight, total)));
            runs[3].push(rate(line.run(in_flight, total)));
        }
        let [t1, tr, e1, er] = runs.each_mut().map(|r| {
            r.sort_by(f64::total_cmp);
            (r[r.len() / 2], r[r.len() - 1])
        });
        let cell = |(median, best): (f64, f64)| format!("{median:.0} ({best:.0})");
        println!(
            "{in_flight:>9} | {:>18} | {:>21} | {:>15} | {:>18} | {:>11.2} | {:>9.2} | {:>15.2}",
            cell(t1),
            cell(tr),
            cell(e1),
            cell(er),
            t1.0.max(tr.0) / e1.0.max(er.0),
            t1.0 / e1.0,
            tr.0 / er.0
        );
    }
    let costs = (0..5)
        .map(|_| machine_costs(20_000))
        .min_by_key(|c| c.iter().sum::<Duration>())
        .unwrap_or_default();
    println!(
        "machine cost per call (no I/O, best of 5 x 20000): host writes the call {:?}, toolkit \
         reads it {:?}, toolkit writes the reply {:?}, host admits it {:?}",
        costs[0], costs[1], costs[2], costs[3]
    );
    for n in [256u64, 4096] {
        let (per_call, open) = memory_per_call(n);
        println!("host memory per call in flight ({n} open, {open} counted): {per_call:.0} bytes beyond its arguments");
    }
    process.shutdown();
    queued.shutdown();
}

/// Each thread of process `pid` ("self" for this one): its id, its name
/// and the nanoseconds it has run (`/proc/PID/task/TID/schedstat`).
fn thread_cpu(pid: &str) -> Vec<(u64, String, u64)> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|task| {
            let path = task.path();
            let tid = task.file_name().to_str()?.parse().ok()?;
            let name = std::fs::read_to_string(path.join("comm")).ok()?;
            let stat = std::fs::read_to_string(path.join("schedstat")).ok()?;
            let ns = stat.split_whitespace().next()?.parse().ok()?;
            Some((tid, name.trim().to_owned(), ns))
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        match args.get(i + 1).map(String::as_str) {
            Some("toolkit") => child_toolkit(),
            Some("line") => child_line(),
            _ => eprintln!("--child toolkit | line"),
        }
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--toolkit-only") {
        // For a profiler: the toolkit echo alone, `--toolkit-only IN_FLIGHT
        // [queued|callback]`, ten runs of 100 000 calls, the best printed.
        let k = args.get(i + 1).and_then(|a| a.parse().ok()).unwrap_or(256);
        let queued = args.get(i + 2).map(String::as_str) != Some("callback");
        let (process, rx) = if queued {
            (toolkit_queued(), None)
        } else {
            let (p, rx) = toolkit_process();
            (p, Some(rx))
        };
        let child = process.pid().unwrap_or(0);
        let before = (thread_cpu("self"), thread_cpu(&child.to_string()));
        let mut best = Duration::MAX;
        for _ in 0..10 {
            let took = match &rx {
                Some(rx) => run_toolkit(&process, rx, k, 100_000),
                None => run_queued(&process, k, 100_000),
            };
            best = best.min(took);
        }
        let after = (thread_cpu("self"), thread_cpu(&child.to_string()));
        println!(
            "{k} in flight ({}): {:.0} calls/s",
            if queued {
                "one host thread"
            } else {
                "a reader thread"
            },
            100_000.0 / best.as_secs_f64()
        );
        // CPU per call of each thread over the 1 000 000 calls: what a
        // profile would show, without the profiler's own cost. The caller
        // is this process's first thread; the child's threads are summed.
        let ns = |v: &[(u64, String, u64)], keep: &dyn Fn(u64, &str) -> bool| {
            v.iter()
                .filter(|(tid, name, _)| keep(*tid, name))
                .map(|(_, _, ns)| ns)
                .sum::<u64>()
        };
        let me = u64::from(std::process::id());
        let per_call = |keep: &dyn Fn(u64, &str) -> bool, child: bool| {
            let (b, a) = if child {
                (&before.1, &after.1)
            } else {
                (&before.0, &after.0)
            };
            ns(a, keep).saturating_sub(ns(b, keep)) as f64 / 1_000_000.0
        };
        println!(
            "CPU per call: host caller {:.0} ns, host stdout reader {:.0} ns, host stdin writer \
             {:.0} ns, child {:.0} ns",
            per_call(&|tid, _| tid == me, false),
            per_call(&|_, name| name == "tool stdout", false),
            per_call(&|_, name| name == "tool stdin", false),
            per_call(&|_, _| true, true),
        );
        process.shutdown();
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--echo-only") {
        // The bare echo alone, `--echo-only IN_FLIGHT [one|threaded]`.
        let k = args.get(i + 1).and_then(|a| a.parse().ok()).unwrap_or(256);
        let mut best = Duration::MAX;
        if args.get(i + 2).map(String::as_str) == Some("threaded") {
            let mut line = LineEcho::start();
            for _ in 0..10 {
                best = best.min(line.run(k, 100_000));
            }
        } else {
            let mut line = LineEchoOneThread::start();
            for _ in 0..10 {
                best = best.min(line.run(k, 100_000));
            }
        }
        println!(
            "echo {k} in flight: {:.0} lines/s",
            100_000.0 / best.as_secs_f64()
        );
        return;
    }
    if args.iter().any(|a| a == "--machines") {
        // For a profiler: the machines alone.
        for _ in 0..20 {
            machine_costs(20_000);
        }
        return;
    }
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    bench(&mut c);
    c.final_summary();
}
