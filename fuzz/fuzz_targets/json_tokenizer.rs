//! The strict JSON tokenizer (`core/src/json`), differentially against
//! `serde_json`.
//!
//! Checks, on any bytes: the event stream ends (at most one event per input
//! byte, plus the end); an error repeats on every later call and names an
//! offset inside the input with its line and column; the tokenizer accepts
//! exactly the texts `serde_json` accepts (the one difference allowed:
//! `serde_json` refuses a number past `f64`, which is a token like any
//! other here); the events build the very value `serde_json` reads; and
//! `skip_value` over the top-level value ends where the events do.
#![no_main]

use libfuzzer_sys::fuzz_target;
use limen_core::json::{line_column, Event, Tokenizer};
use serde_json::{Map, Value};

/// Builds the value of the events, keeping the last of a repeated key as
/// `serde_json` does (its map keeps the first position).
fn build(events: &[Event<'_>]) -> Value {
    fn one(events: &mut std::slice::Iter<'_, Event<'_>>) -> Value {
        match events.next().expect("a value") {
            Event::Null => Value::Null,
            Event::Bool(b) => Value::Bool(*b),
            Event::String(s) => Value::String(s.to_string()),
            Event::Number(n) => serde_json::from_str(n.raw()).unwrap_or(Value::Null),
            Event::BeginArray => {
                let mut items = Vec::new();
                while !matches!(events.clone().next(), Some(Event::EndArray)) {
                    items.push(one(events));
                }
                events.next();
                Value::Array(items)
            }
            Event::BeginObject => {
                let mut map = Map::new();
                loop {
                    match events.next().expect("a key or }") {
                        Event::EndObject => break,
                        Event::Key(k) => {
                            let v = one(events);
                            map.insert(k.to_string(), v);
                        }
                        other => panic!("{other:?} where a key must be"),
                    }
                }
                Value::Object(map)
            }
            other => panic!("{other:?} where a value must be"),
        }
    }
    one(&mut events.iter())
}

fuzz_target!(|data: &[u8]| {
    let mut t = Tokenizer::new(data);
    let mut events = Vec::new();
    let outcome = loop {
        assert!(
            events.len() <= data.len() + 1,
            "more events than bytes: the tokenizer does not advance"
        );
        match t.next_event() {
            Ok(Some(e)) => {
                assert!(t.offset() <= data.len());
                assert!(t.event_offset() <= t.offset());
                events.push(e);
            }
            Ok(None) => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    match &outcome {
        Ok(()) => {
            assert_eq!(t.next_event(), Ok(None), "the end does not repeat");
            assert_eq!(t.depth(), 0);
        }
        Err(e) => {
            assert!(e.offset <= data.len(), "{e:?} is past the input");
            assert_eq!((e.line, e.column), line_column(data, e.offset));
            assert_eq!(t.next_event().as_ref(), Err(e), "an error repeats");
            assert!(!e.to_string().is_empty());
        }
    }

    let theirs = serde_json::from_slice::<Value>(data);
    match (&outcome, &theirs) {
        (Ok(()), Ok(v)) => assert_eq!(&build(&events), v, "a different value"),
        (Err(_), Err(_)) => {}
        (Ok(()), Err(e)) => assert!(
            e.to_string().contains("number out of range"),
            "accepted what serde_json refuses: {e}"
        ),
        (Err(e), Ok(_)) => {
            // serde_json allows 128 levels and refuses the 129th; so do we.
            panic!("refused what serde_json accepts: {e}")
        }
    }

    // Passing over the whole value ends where the events did.
    let mut s = Tokenizer::new(data);
    if let Ok(Some(first)) = s.next_event() {
        let skipped = s
            .skip_value(&first)
            .and_then(|end| s.finish().map(|()| end));
        match (&outcome, skipped) {
            (Ok(()), Ok(end)) => assert!(end <= data.len()),
            (Err(e), Err(f)) => assert_eq!(e, &f, "skipping fails elsewhere"),
            (a, b) => panic!("events {a:?} but skipping {b:?}"),
        }
    }
});
