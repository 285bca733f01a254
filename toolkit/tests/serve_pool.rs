//! The pool that runs calls (`Options::workers` > 0): calls that wait
//! overlap, a fast call's reply is not held behind a slow call, input is
//! read on while a call waits, every call is answered once with the same
//! bytes as on the reading thread, and a write that fails ends the serve.

use std::io::{self, Read, Write};
use std::sync::{Arc, Mutex};
use std::thread::sleep;
use std::time::{Duration, Instant};

use limen_core::flow::tool::{Listing, Tool};
use limen_toolkit::{serve_on, Context, Options, Reply, Value};

const LISTING: &str = include_str!("fixtures/listing.json");

fn tools() -> Vec<Arc<Tool>> {
    Listing::parse(LISTING.as_bytes()).unwrap().tools
}

/// A call of the fixture's `echo(text)`.
fn call(id: &str, text: &str) -> String {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"call\",\"params\":{{\"runId\":\"r\",\"callId\":\"{id}\",\"tool\":\"example.com/limen-fixtures@0.3.0/echo.flow.echo\",\"args\":{{\"text\":\"{text}\"}}}}}}\n"
    )
}

/// Answers its text; `slow …` after 500 ms.
fn service(_: usize, _: &Context, args: Vec<Value>) -> Reply {
    let text = args.into_iter().next().unwrap_or(Value::text(""));
    if matches!(&text, Value::Text(t) if t.starts_with("slow")) {
        sleep(Duration::from_millis(500));
    }
    Reply::Ok(text)
}

/// Each write, with when it came.
type Writes = Vec<(Duration, Vec<u8>)>;

/// Standard output, each write kept with when it came.
#[derive(Clone)]
struct Recorded(Arc<Mutex<Writes>>, Instant);

impl Recorded {
    fn new() -> Recorded {
        Recorded(Arc::default(), Instant::now())
    }

    /// When the reply to call `id` was written.
    fn when(&self, id: &str) -> Option<Duration> {
        let needle = format!("\"callId\":\"{id}\"");
        let writes = self.0.lock().unwrap();
        writes
            .iter()
            .find(|(_, bytes)| String::from_utf8_lossy(bytes).contains(&needle))
            .map(|(at, _)| *at)
    }

    fn bytes(&self) -> Vec<u8> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .flat_map(|(_, b)| b.clone())
            .collect()
    }
}

impl Write for Recorded {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .unwrap()
            .push((self.1.elapsed(), buf.to_vec()));
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn options(workers: usize) -> Options {
    Options {
        workers,
        ..Options::default()
    }
}

#[test]
fn calls_that_wait_overlap() {
    let input: String = (0..4).map(|i| call(&i.to_string(), "slow")).collect();
    let out = Recorded::new();
    let start = Instant::now();
    serve_on(tools(), service, options(4), input.as_bytes(), out.clone()).unwrap();
    let took = start.elapsed();
    assert!(
        took < Duration::from_millis(1500),
        "4 calls of 500 ms took {took:?}"
    );
    for i in 0..4 {
        assert!(out.when(&i.to_string()).is_some(), "call {i} answered");
    }
}

/// A reader that hands out its pieces one read at a time, waiting before
/// each but the first.
struct Slowly(Vec<Vec<u8>>, Duration, usize);

impl Read for Slowly {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Some(piece) = self.0.get(self.2) else {
            return Ok(0);
        };
        if self.2 > 0 {
            sleep(self.1);
        }
        self.2 += 1;
        buf[..piece.len()].copy_from_slice(piece);
        Ok(piece.len())
    }
}

#[test]
fn a_slow_call_holds_back_neither_input_nor_other_replies() {
    // Call 1 waits; call 2 is answered at once in the same read; call 3
    // comes 50 ms later, in a read of its own.
    let first = format!("{}{}", call("1", "slow"), call("2", "fast"));
    let input = Slowly(
        vec![first.into_bytes(), call("3", "fast").into_bytes()],
        Duration::from_millis(50),
        0,
    );
    let out = Recorded::new();
    serve_on(tools(), service, options(2), input, out.clone()).unwrap();
    let slow = out.when("1").unwrap();
    assert!(slow >= Duration::from_millis(500), "{slow:?}");
    for id in ["2", "3"] {
        let at = out.when(id).unwrap();
        assert!(
            at < Duration::from_millis(400),
            "reply {id} at {at:?}, the slow one at {slow:?}"
        );
    }
}

#[test]
fn the_pool_writes_what_the_reading_thread_writes() {
    let mut input = String::new();
    for i in 0..2000 {
        input += &call(&i.to_string(), &format!("t{i}"));
    }
    input += "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"describe\"}\n";
    input += &call("x", "\\u0041");
    input += "not json\n";
    let lines = |bytes: Vec<u8>| {
        let mut lines: Vec<String> = String::from_utf8(bytes)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        lines.sort();
        lines
    };
    let inline = Recorded::new();
    serve_on(
        tools(),
        service,
        options(0),
        input.as_bytes(),
        inline.clone(),
    )
    .unwrap();
    let pool = Recorded::new();
    serve_on(tools(), service, options(3), input.as_bytes(), pool.clone()).unwrap();
    let (inline, pool) = (lines(inline.bytes()), lines(pool.bytes()));
    assert_eq!(
        inline.len(),
        2003,
        "every call, describe and the parse error answered"
    );
    assert_eq!(inline, pool);
}

struct Broken;

impl Write for Broken {
    fn write(&mut self, _: &[u8]) -> io::Result<usize> {
        Err(io::Error::new(io::ErrorKind::BrokenPipe, "gone"))
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_failed_write_ends_the_serve_with_its_error() {
    let input: String = (0..100).map(|i| call(&i.to_string(), "x")).collect();
    for workers in [0, 2] {
        let err = serve_on(tools(), service, options(workers), input.as_bytes(), Broken)
            .expect_err("the write fails");
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe, "{workers} workers");
    }
}
