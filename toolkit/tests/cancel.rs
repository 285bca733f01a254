//! The host's `cancel` reaches the author's code: a running call's
//! [`Context::cancel`] is tripped, so a handler waiting on it ends early
//! and its own outcome is the reply; a call cancelled before its code
//! started is answered NotRun without running it. Nothing is killed.

use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use limen_core::flow::tool::{Listing, Tool};
use limen_toolkit::{serve_on, Context, Options, Reply, Value};

const LISTING: &str = include_str!("fixtures/listing.json");

/// Far longer than any test takes: a handler that waits this long was not
/// reached by the cancel.
const LONG: Duration = Duration::from_secs(20);

fn tools() -> Vec<Arc<Tool>> {
    Listing::parse(LISTING.as_bytes()).unwrap().tools
}

/// A call of the fixture's `echo(text)`.
fn call(id: &str, text: &str) -> String {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"call\",\"params\":{{\"runId\":\"r\",\"callId\":\"{id}\",\"tool\":\"example.com/limen-fixtures@0.3.0/echo.flow.echo\",\"args\":{{\"text\":\"{text}\"}}}}}}\n"
    )
}

/// The host's cancel of call `id`.
fn cancel(id: &str) -> String {
    format!("{{\"jsonrpc\":\"2.0\",\"method\":\"cancel\",\"params\":{{\"runId\":\"r\",\"callId\":\"{id}\"}}}}\n")
}

/// Standard input the test writes to as it goes; it ends when the sender
/// is dropped.
struct Fed {
    lines: Receiver<String>,
    rest: Vec<u8>,
}

impl Read for Fed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.rest.is_empty() {
            match self.lines.recv() {
                Ok(line) => self.rest = line.into_bytes(),
                Err(_) => return Ok(0),
            }
        }
        let n = self.rest.len().min(buf.len());
        buf[..n].copy_from_slice(&self.rest[..n]);
        self.rest.drain(..n);
        Ok(n)
    }
}

fn fed() -> (Sender<String>, Fed) {
    let (tx, lines) = channel();
    (
        tx,
        Fed {
            lines,
            rest: Vec::new(),
        },
    )
}

/// Standard output, kept.
#[derive(Clone, Default)]
struct Out(Arc<Mutex<Vec<u8>>>);

impl Out {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A handler for `wait`: waits on its call's cancellation and says whether
/// it came; counts the calls whose code ran.
fn waiter(ran: Arc<AtomicUsize>) -> impl Fn(usize, &Context, Vec<Value>) -> Reply + Send + Sync {
    move |_, cx: &Context, args: Vec<Value>| {
        ran.fetch_add(1, Ordering::SeqCst);
        if args.first() == Some(&Value::text("wait")) {
            let said = if cx.cancel.wait_timeout(LONG) {
                "saw the cancel"
            } else {
                "was never cancelled"
            };
            return Reply::Ok(Value::text(said));
        }
        Reply::Ok(args.into_iter().next().unwrap_or(Value::text("")))
    }
}

fn options(workers: usize) -> Options {
    Options {
        workers,
        ..Options::default()
    }
}

/// A call running on a worker waits on its token; the host's cancel, read
/// while it runs, wakes it; the reply is what the handler returned, long
/// before the handler's own timeout, and a call beside it is untouched.
#[test]
fn a_cancel_reaches_a_running_call() {
    let (tx, input) = fed();
    let out = Out::default();
    let ran = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let serving = {
        let (out, ran) = (out.clone(), ran.clone());
        thread::spawn(move || serve_on(tools(), waiter(ran), options(2), input, out))
    };
    tx.send(call("c1", "wait")).unwrap();
    // Let the call start before it is cancelled.
    while ran.load(Ordering::SeqCst) == 0 {
        assert!(started.elapsed() < LONG, "the call never started");
        thread::sleep(Duration::from_millis(5));
    }
    tx.send(call("c2", "beside")).unwrap();
    tx.send(cancel("c2-never-sent")).unwrap();
    tx.send(cancel("c1")).unwrap();
    drop(tx);
    serving.join().unwrap().unwrap();
    assert!(
        started.elapsed() < LONG / 2,
        "the handler waited out its timeout: the cancel never reached it ({:?})",
        started.elapsed()
    );
    let text = out.text();
    assert!(
        text.contains(r#""callId":"c1","outcome":{"Ok":"saw the cancel"}"#),
        "{text}"
    );
    assert!(
        text.contains(r#""callId":"c2","outcome":{"Ok":"beside"}"#),
        "{text}"
    );
    assert_eq!(text.lines().count(), 2, "{text}");
}

/// A call cancelled before its code started (here on the reading thread,
/// with the cancel in the same read) is answered NotRun, and its code
/// never runs; the call before it runs as usual.
#[test]
fn a_call_cancelled_before_it_starts_is_not_run() {
    for workers in [0, 1] {
        let (tx, input) = fed();
        let out = Out::default();
        let ran = Arc::new(AtomicUsize::new(0));
        tx.send(call("c1", "first") + &call("c2", "wait") + &cancel("c2"))
            .unwrap();
        drop(tx);
        let started = Instant::now();
        serve_on(
            tools(),
            waiter(ran.clone()),
            options(workers),
            input,
            out.clone(),
        )
        .unwrap();
        assert!(started.elapsed() < LONG / 2, "workers {workers}");
        let text = out.text();
        assert!(
            text.contains(r#""callId":"c1","outcome":{"Ok":"first"}"#),
            "workers {workers}: {text}"
        );
        assert!(
            text.contains(
                r#""callId":"c2","outcome":{"NotRun":"cancelled before the Tool's code started"}"#
            ),
            "workers {workers}: {text}"
        );
        assert_eq!(ran.load(Ordering::SeqCst), 1, "workers {workers}: {text}");
    }
}

/// Each call's token is its own, though the loop reuses one allocation
/// from call to call: a token the author's code kept from an earlier call
/// (here every call's) is never tripped by a later call's cancel, nor
/// cleared for a later call, and a call after a cancelled one starts not
/// cancelled. On the reading thread and on a pool of one.
#[test]
fn a_token_kept_from_a_call_is_never_another_call_s() {
    for workers in [0, 1] {
        let kept: Arc<Mutex<Vec<limen_toolkit::Cancel>>> = Arc::default();
        let handler = {
            let kept = kept.clone();
            move |_: usize, cx: &Context, args: Vec<Value>| {
                kept.lock().unwrap().push(cx.cancel.clone());
                let said = if cx.cancel.is_cancelled() {
                    "started cancelled"
                } else {
                    "started fresh"
                };
                let _ = args;
                Reply::Ok(Value::text(said))
            }
        };
        let (tx, input) = fed();
        let out = Out::default();
        // c2 is cancelled before it starts (never run, so never kept); c1
        // and c3 run, each with a token of its own.
        tx.send(call("c1", "a") + &call("c2", "b") + &cancel("c2") + &call("c3", "c"))
            .unwrap();
        drop(tx);
        serve_on(tools(), handler, options(workers), input, out.clone()).unwrap();
        let text = out.text();
        assert!(
            text.contains(r#""callId":"c1","outcome":{"Ok":"started fresh"}"#),
            "workers {workers}: {text}"
        );
        assert!(
            text.contains(r#""callId":"c3","outcome":{"Ok":"started fresh"}"#),
            "workers {workers}: {text}"
        );
        let kept = kept.lock().unwrap();
        assert_eq!(kept.len(), 2, "workers {workers}: {text}");
        assert_ne!(kept[0], kept[1], "workers {workers}: two calls, one token");
        kept[1].cancel();
        assert!(!kept[0].is_cancelled(), "workers {workers}");
    }
}
