//! The code `flow toolkit rust` generates compiles (it is included here),
//! and an implementation written against it serves calls end to end with
//! arguments and results converted by the generated types.

include!("fixtures/tools.rs");

use std::io::Write;
use std::sync::{Arc, Mutex};

use limen_toolkit::{Context, Error, Int, Json};

struct Impl;

impl Tools for Impl {
    fn echo(&self, _cx: &Context, text: String) -> Result<String, Error<EchoError>> {
        Ok(text)
    }
    fn add(&self, _cx: &Context, a: Int, b: Int) -> Result<Int, Error<EchoError>> {
        // Narrowing is the author's checked conversion.
        match (i64::try_from(&a.0), i64::try_from(&b.0)) {
            (Ok(a), Ok(b)) => a.checked_add(b).map(Int::from).ok_or_else(|| {
                EchoError::TooBig {
                    limit: Int::from(i64::MAX),
                }
                .into()
            }),
            _ => Err(EchoError::TooBig {
                limit: Int::from(i64::MAX),
            }
            .into()),
        }
    }
    fn note(&self, _cx: &Context, note: Note) -> Result<Note, Error<EchoError>> {
        Ok(Note {
            tags: Some(
                note.tags
                    .unwrap_or_default()
                    .into_iter()
                    .chain(["seen".to_owned()])
                    .collect(),
            ),
            ..note
        })
    }
    fn reshape(&self, _cx: &Context, shape: Shape) -> Result<Shape, Error<EchoError>> {
        Ok(match shape {
            Shape::Rect { w, h } => Shape::Rect { w: h, h: w },
            other => other,
        })
    }
    fn fail(&self, _cx: &Context, reason: String) -> Result<String, Error<EchoError>> {
        Err(EchoError::Refused(reason).into())
    }
    fn crash(&self, _cx: &Context, how: String) -> Result<String, Error<EchoError>> {
        Err(Error::NotRun(how))
    }
    fn identity(&self, _cx: &Context, value: Json) -> Result<Page<Json>, Error<EchoError>> {
        Ok(Page {
            items: vec![value],
            next: None,
        })
    }
    fn grow(&self, _cx: &Context, tree: Tree) -> Result<Tree, Error<EchoError>> {
        Ok(Tree {
            parent: Some(Box::new(tree.clone())),
            ..tree
        })
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

#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn serve_lines(lines: &[String], workers: usize) -> Vec<serde_json::Value> {
    let listing = limen_core::flow::tool::Listing::parse(LISTING.as_bytes()).unwrap();
    let out = Shared::default();
    let input = lines.join("\n") + "\n";
    let options = limen_toolkit::Options {
        workers,
        ..limen_toolkit::Options::default()
    };
    limen_toolkit::serve_on(
        listing.tools,
        Server(Impl),
        options,
        input.as_bytes(),
        out.clone(),
    )
    .unwrap();
    let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn call(id: &str, tool: &str, args: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"call","params":{{"runId":"r","callId":"{id}","tool":"example.com/limen-fixtures@0.3.0/echo.flow.{tool}","args":{args}}}}}"#
    )
}

#[test]
fn generated_types_carry_every_kind_of_value_both_ways() {
    let lines = [
        call("1", "add", r#"{"a":2,"b":40}"#),
        call("2", "add", r#"{"a":9223372036854775807,"b":1}"#),
        call("3", "note", r#"{"note":{"text":"hi","weight":1.50}}"#),
        call("4", "reshape", r#"{"shape":{"Rect":{"w":1,"h":2}}}"#),
        call("5", "reshape", r#"{"shape":"Dot"}"#),
        call("6", "fail", r#"{"reason":"no"}"#),
        call("7", "crash", r#"{"how":"before starting"}"#),
        call("8", "identity", r#"{"value":{"any":[1,2.50,null]}}"#),
        call(
            "9",
            "grow",
            r#"{"tree":{"label":"t","children":[{"label":"c","children":[]}]}}"#,
        ),
        call(
            "10",
            "everything",
            r#"{"all":["aGk=","2026-12-01T00:00:00.5Z","PT-1.5S",[3,1],[[2,"b"],[1,"a"]],{"k":1},{"x":[true]},{"token":7}]}"#,
        ),
    ];
    for workers in [0, 3] {
        let replies = serve_lines(&lines, workers);
        let outcome = |id: &str| {
            replies
                .iter()
                .find(|r| r["params"]["callId"] == id)
                .map(|r| r["params"]["outcome"].to_string())
                .unwrap_or_default()
        };
        assert_eq!(outcome("1"), r#"{"Ok":42}"#);
        assert_eq!(
            outcome("2"),
            r#"{"Failed":{"TooBig":{"limit":9223372036854775807}}}"#
        );
        assert_eq!(
            outcome("3"),
            r#"{"Ok":{"tags":["seen"],"text":"hi","weight":1.5}}"#
        );
        assert_eq!(outcome("4"), r#"{"Ok":{"Rect":{"h":1,"w":2}}}"#);
        assert_eq!(outcome("5"), r#"{"Ok":"Dot"}"#);
        assert_eq!(outcome("6"), r#"{"Failed":{"Refused":"no"}}"#);
        assert_eq!(outcome("7"), r#"{"NotRun":"before starting"}"#);
        assert_eq!(outcome("8"), r#"{"Ok":{"items":[{"any":[1,2.5,null]}]}}"#);
        assert_eq!(
            outcome("9"),
            r#"{"Ok":{"children":[{"children":[],"label":"c"}],"label":"t","parent":{"children":[{"children":[],"label":"c"}],"label":"t"}}}"#
        );
        assert_eq!(
            outcome("10"),
            r#"{"Ok":["aGk=","2026-12-01T00:00:00.5Z","PT-1.5S",[1,3],[[1,"a"],[2,"b"]],{"k":1},{"x":[true]},{"token":7}]}"#
        );
    }
}
