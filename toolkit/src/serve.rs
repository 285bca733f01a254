//! Serving declarations over standard input and output: calls run on the
//! thread that reads them (`Options::workers` = 0), or on a pool of
//! worker threads ([`pool`]).

use std::io::{self, Read, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

mod pool;

pub use pool::HAND_OFF;

use limen_core::flow::tool::toolkit::Incoming;
use limen_core::flow::tool::toolkit::ToolkitLimits;
use limen_core::flow::tool::{CallKey, Listing, Reply, Tool, ToolkitConn, ToolkitEvent};
use limen_core::flow::Value;

use crate::cancel::Cancel;

/// One call, as the author's code sees it beside its arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct Context {
    /// The call's correlation key: the host's run id and the call's
    /// history id. A call sent again after a crash has the same key.
    pub key: CallKey,
    /// For a generic Tool, the schema of the success type the caller
    /// expects; a type parameter's values are JSON of that shape.
    pub expects: Option<serde_json::Value>,
    /// Tripped when the host cancels the call: poll it between steps, or
    /// wait on it where the call would sleep, and return early if the
    /// work can stop. A cancel proves nothing, so the call is still
    /// answered with what its code returns (an [`Error::NotRun`] says that
    /// nothing was done; an [`Error::Unknown`] that it stopped midway). A
    /// call cancelled before its code started is answered NotRun without
    /// running it.
    pub cancel: Cancel,
}

impl Context {
    /// A call's context, not cancelled.
    pub fn new(key: CallKey, expects: Option<serde_json::Value>) -> Context {
        Context {
            key,
            expects,
            cancel: Cancel::new(),
        }
    }
}

/// How the author's code ended a call other than by success.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error<E> {
    /// The declared error: the reply is Failed.
    Failed(E),
    /// The call did not happen (say so only when nothing was done): NotRun.
    NotRun(String),
    /// Anything else: what was done before it stopped is not known, so the
    /// reply is Unknown.
    Unknown(String),
}

impl<E> Error<E> {
    /// An error other than the declared one: Unknown, with its text.
    pub fn unknown(error: impl std::fmt::Display) -> Error<E> {
        Error::Unknown(error.to_string())
    }
}

impl<E> From<E> for Error<E> {
    fn from(e: E) -> Error<E> {
        Error::Failed(e)
    }
}

/// What serves calls: generated code implements it over the author's
/// typed trait.
pub trait Service: Send + Sync + 'static {
    /// Runs a call to declaration `tool` (its index in the listing) with
    /// its decoded arguments.
    fn call(&self, tool: usize, cx: &Context, args: Vec<Value>) -> Reply;
}

impl<F> Service for F
where
    F: Fn(usize, &Context, Vec<Value>) -> Reply + Send + Sync + 'static,
{
    fn call(&self, tool: usize, cx: &Context, args: Vec<Value>) -> Reply {
        self(tool, cx, args)
    }
}

/// How calls are run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Threads running calls; 0 runs each call on the thread that reads
    /// them, one at a time. With threads, whichever is free reads, runs the
    /// calls it read and writes their replies, as one thread would; a call
    /// that waits is handed off: the calls behind it, the input and the
    /// replies pending are taken over by another thread within
    /// [`HAND_OFF`], so up to this many calls that wait overlap.
    pub workers: usize,
    /// The bounds of a call line and its arguments.
    pub limits: ToolkitLimits,
}

impl Default for Options {
    /// Eight workers, so that calls that wait overlap.
    fn default() -> Options {
        Options {
            workers: 8,
            limits: ToolkitLimits::default(),
        }
    }
}

/// Runs `service` for one call, a panic or an error other than the
/// declared one being Unknown; a call cancelled before it starts is not
/// run, and is NotRun.
pub fn run_call(service: &dyn Service, tool: usize, cx: &Context, args: Vec<Value>) -> Reply {
    if cx.cancel.is_cancelled() {
        return Reply::NotRun(CANCELLED_BEFORE.to_owned());
    }
    match catch_unwind(AssertUnwindSafe(|| service.call(tool, cx, args))) {
        Ok(reply) => reply,
        Err(panic) => Reply::Unknown(format!(
            "the Tool's code panicked: {}",
            limen_core::flow::tool::panic_text(&*panic)
        )),
    }
}

/// The NotRun reason of a call cancelled before its code started.
const CANCELLED_BEFORE: &str = "cancelled before the Tool's code started";

/// Serves the declarations of a listing's text with `service` on standard
/// input and output until standard input ends.
pub fn serve_listing(listing: &str, service: impl Service, options: Options) -> io::Result<()> {
    let listing = Listing::parse(listing.as_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("the listing: {e}")))?;
    serve(listing.tools, service, options)
}

/// Serves `tools` with `service` on standard input and output until
/// standard input ends and every call has been answered.
pub fn serve(tools: Vec<Arc<Tool>>, service: impl Service, options: Options) -> io::Result<()> {
    serve_on(tools, service, options, io::stdin(), io::stdout())
}

/// [`serve`] over any reader and writer (both `Send`: with worker
/// threads, whichever is free reads and writes).
pub fn serve_on(
    tools: Vec<Arc<Tool>>,
    service: impl Service,
    options: Options,
    input: impl Read + Send,
    output: impl Write + Send,
) -> io::Result<()> {
    let conn = ToolkitConn::new(tools, options.limits.clone());
    if options.workers == 0 {
        serve_inline(conn, &service, input, output)
    } else {
        pool::serve(conn, &service, options.workers, input, output)
    }
}

/// How much one read takes: a full pipe's worth.
const READ_BUF: usize = 64 << 10;

/// Calls run on the reading thread: each read's calls answered and their
/// replies written from the machine's buffer, with one write a piece.
fn serve_inline(
    mut conn: ToolkitConn,
    service: &dyn Service,
    mut input: impl Read,
    mut output: impl Write,
) -> io::Result<()> {
    let clock = Clock::new();
    let mut buf = vec![0u8; READ_BUF];
    // A piece's calls, kept from one piece to the next: each with whether
    // a cancel behind it in the piece came before it could start.
    let mut calls: Vec<(Incoming, bool)> = Vec::new();
    // One token lent to call after call (renewed in place while the
    // author's code keeps no clone), so a call allocates none.
    let mut token = Cancel::new();
    while let Some(n) = read(&mut input, &mut buf)? {
        for piece in pieces(&buf[..n], PIECE_LINES) {
            let now = clock.now();
            conn.handle_data(now, piece);
            // The piece's events are taken before any call runs, so that a
            // cancel behind a call in the same piece reaches it before it
            // starts. A call that runs holds this thread, so a cancel read
            // later finds it answered: to reach running calls, use workers.
            while let Some(event) = conn.poll_event() {
                match event {
                    ToolkitEvent::Call(incoming) => calls.push((incoming, false)),
                    // Found by a scan, not a map: a cancel is rare, and a
                    // call must not pay for hashing its key.
                    ToolkitEvent::Cancel(key) => {
                        if let Some((_, cancelled)) =
                            calls.iter_mut().find(|(call, _)| call.key == key)
                        {
                            *cancelled = true;
                        }
                    }
                    ToolkitEvent::Dropped(why) => log(&why),
                }
            }
            for (call, cancelled) in calls.drain(..) {
                token.renew(1);
                if cancelled {
                    token.cancel();
                }
                let cx = Context {
                    key: call.key,
                    expects: call.expects,
                    cancel: token,
                };
                let reply = run_call(service, call.tool, &cx, call.args);
                conn.reply(now, &cx.key, &reply);
                token = cx.cancel;
            }
            write_pending(&mut conn, &mut output, clock.now())?;
        }
    }
    conn.handle_eof(clock.now());
    while let Some(event) = conn.poll_event() {
        if let ToolkitEvent::Dropped(why) = event {
            log(&why);
        }
    }
    write_pending(&mut conn, &mut output, clock.now())
}

/// One read of `input` into `buf`: `None` at its end.
fn read(input: &mut impl Read, buf: &mut [u8]) -> io::Result<Option<usize>> {
    loop {
        match input.read(buf) {
            Ok(0) => return Ok(None),
            Ok(n) => return Ok(Some(n)),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Writes the machine's pending output straight from its buffer.
fn write_pending(
    conn: &mut ToolkitConn,
    output: &mut impl Write,
    now: limen_core::Timestamp,
) -> io::Result<()> {
    let pending = conn.pending_output();
    if pending.is_empty() {
        return Ok(());
    }
    output.write_all(pending)?;
    output.flush()?;
    let n = pending.len();
    conn.consume_output(now, n);
    Ok(())
}

/// What the machine dropped, for the implementation's log.
fn log(why: &str) {
    eprintln!("limen-toolkit: {why}");
}

/// How many lines of a read are answered before their replies are
/// written. A read can hold hundreds of calls; answering them all before
/// writing any would keep the host idle while this process works and this
/// process idle while the host reads.
const PIECE_LINES: usize = 32;

/// `data` cut after every `lines` lines (the last piece may be shorter, or
/// end inside a line).
fn pieces(data: &[u8], lines: usize) -> impl Iterator<Item = &[u8]> {
    let mut rest = data;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut end = 0;
        for _ in 0..lines {
            match memchr::memchr(b'\n', &rest[end..]) {
                Some(nl) => end += nl + 1,
                None => {
                    end = rest.len();
                    break;
                }
            }
        }
        let (piece, more) = rest.split_at(end);
        rest = more;
        Some(piece)
    })
}

/// The serve loop's monotonic clock, in nanoseconds since it began.
#[derive(Clone, Copy)]
struct Clock(std::time::Instant);

impl Clock {
    fn new() -> Clock {
        Clock(std::time::Instant::now())
    }

    fn now(self) -> limen_core::Timestamp {
        self.0.elapsed().as_nanos() as limen_core::Timestamp
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::pieces;

    /// A read is cut after every `lines` lines, nothing lost, nothing cut
    /// inside a line but the read's own unfinished end.
    #[test]
    fn a_read_is_cut_after_every_few_lines() {
        let data = b"a\nbb\n\nccc\nd";
        let cut: Vec<&[u8]> = pieces(data, 2).collect();
        assert_eq!(cut, [&b"a\nbb\n"[..], b"\nccc\n", b"d"]);
        assert_eq!(pieces(data, 100).collect::<Vec<_>>(), [&data[..]]);
        assert_eq!(pieces(b"", 3).count(), 0);
        for lines in 1..6 {
            assert_eq!(pieces(data, lines).collect::<Vec<_>>().concat(), data);
        }
    }
}
