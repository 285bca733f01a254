//! A test fixture, not a tool to ship: a Tool process written with
//! limen-toolkit over the code `flow toolkit rust` generated from
//! `toolkit/tests/fixtures/listing.json`. Tests and benches drive it.
//!
//! `tool-fixture-echo [--workers N]` (0 runs calls on the reading thread).
#![forbid(unsafe_code)]

include!("../../../toolkit/tests/fixtures/tools.rs");

use limen_toolkit::{Context, Error, Int, Json};

struct Echo;

impl Tools for Echo {
    fn echo(&self, _cx: &Context, text: String) -> Result<String, Error<EchoError>> {
        Ok(text)
    }

    fn add(&self, _cx: &Context, a: Int, b: Int) -> Result<Int, Error<EchoError>> {
        Ok(Int(a.0 + b.0))
    }

    fn note(&self, _cx: &Context, note: Note) -> Result<Note, Error<EchoError>> {
        Ok(note)
    }

    fn reshape(&self, _cx: &Context, shape: Shape) -> Result<Shape, Error<EchoError>> {
        Ok(shape)
    }

    fn fail(&self, _cx: &Context, reason: String) -> Result<String, Error<EchoError>> {
        Err(EchoError::Refused(reason).into())
    }

    fn crash(&self, cx: &Context, how: String) -> Result<String, Error<EchoError>> {
        if how == "panic" {
            panic!("asked to panic");
        }
        if how == "exit" {
            // Dies mid-call: the host cannot know what the call did.
            std::process::exit(3);
        }
        if let Some(started) = how.strip_prefix("when cancelled ") {
            // Says it runs (the file `started`, for a test to wait on),
            // then works until the host cancels the call (half a minute at
            // most), and stops midway: what it did is not known.
            if let Err(e) = std::fs::write(started, b"") {
                return Err(Error::unknown(format!("cannot write {started}: {e}")));
            }
            if cx.cancel.wait_timeout(std::time::Duration::from_secs(30)) {
                return Err(Error::unknown("stopped: the host cancelled the call"));
            }
            return Err(Error::unknown("never cancelled"));
        }
        Err(Error::unknown(format!("asked to stop: {how}")))
    }

    fn identity(&self, cx: &Context, value: Json) -> Result<Page<Json>, Error<EchoError>> {
        // The schema the caller expects is the call's to read.
        let next = cx.expects.as_ref().map(|s| s["$schema"].to_string());
        Ok(Page {
            items: vec![value],
            next,
        })
    }

    fn grow(&self, _cx: &Context, tree: Tree) -> Result<Tree, Error<EchoError>> {
        let leaf = Tree {
            label: format!("{}/leaf", tree.label),
            children: Vec::new(),
            parent: None,
        };
        let mut tree = tree;
        tree.children.push(leaf);
        Ok(tree)
    }

    #[allow(clippy::type_complexity)]
    fn everything(
        &self,
        _cx: &Context,
        all: (
            limen_toolkit::Bytes,
            limen_toolkit::Instant,
            limen_toolkit::Duration,
            limen_toolkit::Set<Int>,
            limen_toolkit::Dict<Int, String>,
            std::collections::BTreeMap<String, Int>,
            Json,
            limen_toolkit::HostToken,
        ),
    ) -> Result<
        (
            limen_toolkit::Bytes,
            limen_toolkit::Instant,
            limen_toolkit::Duration,
            limen_toolkit::Set<Int>,
            limen_toolkit::Dict<Int, String>,
            std::collections::BTreeMap<String, Int>,
            Json,
            limen_toolkit::HostToken,
        ),
        Error<limen_toolkit::Never>,
    > {
        Ok(all)
    }
}

fn main() -> std::io::Result<()> {
    let mut options = limen_toolkit::Options::default();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, n] = args.as_slice() {
        if flag == "--workers" {
            options.workers = n.parse().unwrap_or(options.workers);
        }
    }
    serve(Echo, options)
}
