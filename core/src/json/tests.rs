use std::borrow::Cow;

use super::*;

fn events(text: &str) -> Result<Vec<Event<'_>>, Error> {
    let mut t = Tokenizer::new(text.as_bytes());
    let mut out = Vec::new();
    while let Some(e) = t.next_event()? {
        out.push(e);
    }
    Ok(out)
}

fn refusal(text: &[u8]) -> (usize, ErrorKind) {
    match Tokenizer::new(text).read_to_end() {
        Ok(()) => panic!("{:?} was accepted", String::from_utf8_lossy(text)),
        Err(e) => (e.offset, e.kind),
    }
}

#[test]
fn yields_every_event_in_order() {
    let evs =
        events(r#" {"a": [1, -2.5e3, "x"], "b": {"c": null}, "d": true, "e": false} "#).unwrap();
    let n = |e: &Event<'_>| match e {
        Event::Number(n) => n.raw().to_owned(),
        _ => String::new(),
    };
    assert_eq!(evs.len(), 17);
    assert_eq!(evs[0], Event::BeginObject);
    assert_eq!(evs[1], Event::Key(Cow::Borrowed("a")));
    assert_eq!(evs[2], Event::BeginArray);
    assert_eq!(n(&evs[3]), "1");
    assert_eq!(n(&evs[4]), "-2.5e3");
    assert_eq!(evs[5], Event::String(Cow::Borrowed("x")));
    assert_eq!(evs[6], Event::EndArray);
    assert_eq!(evs[8], Event::BeginObject);
    assert_eq!(evs[10], Event::Null);
    assert_eq!(evs[11], Event::EndObject);
    assert_eq!(evs[13], Event::Bool(true));
    assert_eq!(evs[15], Event::Bool(false));
    assert_eq!(evs[16], Event::EndObject);
}

#[test]
fn strings_without_escapes_borrow_and_escapes_decode() {
    let evs = events(r#"["plain é", "a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude02z"]"#).unwrap();
    assert!(matches!(&evs[1], Event::String(Cow::Borrowed("plain é"))));
    match &evs[2] {
        Event::String(Cow::Owned(s)) => assert_eq!(s, "a\"\\/\u{8}\u{c}\n\r\t\u{e9}\u{1f602}z"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn long_strings_scan_by_words_and_still_stop_at_every_special_byte() {
    for special in ["\"", "\\n", "\u{1}"] {
        for at in 0..20 {
            let body = format!("{}{special}{}", "a".repeat(at), "b".repeat(20 - at));
            let text = format!("\"{body}\"");
            let r = events(&text);
            match special {
                "\u{1}" => assert!(r.is_err()),
                "\"" => assert!(r.is_err(), "{text}"),
                _ => assert!(r.is_ok(), "{text}"),
            }
        }
    }
}

#[test]
fn refusals_name_the_offending_byte() {
    assert_eq!(refusal(b"\xef\xbb\xbf{}"), (0, ErrorKind::ByteOrderMark));
    assert_eq!(refusal(b"[\"a\xffb\"]"), (3, ErrorKind::InvalidUtf8));
    assert_eq!(refusal(b"[\"a\\u00e9\xc3\"]"), (9, ErrorKind::InvalidUtf8));
    assert_eq!(refusal(b"[\"a\tb\"]"), (3, ErrorKind::ControlCharacter(9)));
    assert_eq!(
        refusal(br#"["\ud800"]"#),
        (2, ErrorKind::LoneSurrogate(0xd800))
    );
    assert_eq!(
        refusal(br#"["\ud800\u0041"]"#),
        (2, ErrorKind::LoneSurrogate(0xd800))
    );
    assert_eq!(
        refusal(br#"["\udc00"]"#),
        (2, ErrorKind::LoneSurrogate(0xdc00))
    );
    assert_eq!(refusal(br#"["\x"]"#), (2, ErrorKind::InvalidEscape('x')));
    assert_eq!(
        refusal(br#"["\u12"]"#),
        (2, ErrorKind::InvalidUnicodeEscape)
    );
    assert_eq!(refusal(br#"["abc"#), (1, ErrorKind::UnterminatedString));
    assert_eq!(
        refusal(b"[01]"),
        (1, ErrorKind::InvalidNumber("leading zeros are not allowed"))
    );
    assert_eq!(
        refusal(b"[1.]"),
        (3, ErrorKind::InvalidNumber("a digit must follow `.`"))
    );
    assert_eq!(refusal(b"[1] x"), (4, ErrorKind::TrailingContent));
    assert_eq!(
        refusal(b"[1,]"),
        (
            3,
            ErrorKind::Unexpected {
                found: ']',
                expected: "a value"
            }
        )
    );
    assert_eq!(
        refusal(b"{\"a\":1,}"),
        (
            7,
            ErrorKind::Unexpected {
                found: '}',
                expected: "a string key"
            }
        )
    );
    assert_eq!(
        refusal(b"{\"a\" 1}"),
        (
            5,
            ErrorKind::Unexpected {
                found: '1',
                expected: "`:`"
            }
        )
    );
    assert_eq!(
        refusal(b"[1 2]"),
        (
            3,
            ErrorKind::Unexpected {
                found: '2',
                expected: "`,` or `]`"
            }
        )
    );
    assert_eq!(
        refusal(b"[tru]"),
        (
            4,
            ErrorKind::Unexpected {
                found: ']',
                expected: "`true`"
            }
        )
    );
    assert_eq!(refusal(b""), (0, ErrorKind::UnexpectedEnd));
    assert_eq!(refusal(b"  "), (2, ErrorKind::UnexpectedEnd));
    assert_eq!(
        refusal(b"[\xc3\xa9]"),
        (
            1,
            ErrorKind::Unexpected {
                found: 'é',
                expected: "a value"
            }
        )
    );
}

#[test]
fn errors_display_line_and_column() {
    let mut t = Tokenizer::new(b"{\n  \"a\": tru\n}");
    let e = loop {
        if let Err(e) = t.next_event() {
            break e;
        }
    };
    assert_eq!(e.to_string(), "2:11: expected `true`, found U+000A");
    // The error sticks.
    assert_eq!(t.next_event(), Err(e));
}

#[test]
fn a_million_open_brackets_are_refused_without_recursion() {
    let text = vec![b'['; 1_000_000];
    assert_eq!(refusal(&text), (128, ErrorKind::TooDeep { limit: 128 }));
    // Even with no effective limit the explicit stack copes.
    let mut t = Tokenizer::with_max_depth(&text, usize::MAX);
    let mut n = 0;
    let e = loop {
        match t.next_event() {
            Ok(Some(_)) => n += 1,
            Ok(None) => panic!("accepted"),
            Err(e) => break e,
        }
    };
    assert_eq!(n, 1_000_000);
    assert_eq!(e.kind, ErrorKind::UnexpectedEnd);
}

#[test]
fn depth_limit_is_exact() {
    let at = |d: usize| format!("{}{}", "[".repeat(d), "]".repeat(d));
    let three = at(3);
    let mut t = Tokenizer::with_max_depth(three.as_bytes(), 3);
    while t.next_event().unwrap().is_some() {}
    assert_eq!(
        refusal(at(129).as_bytes()),
        (128, ErrorKind::TooDeep { limit: 128 })
    );
}

#[test]
fn skip_value_passes_over_a_whole_value() {
    let text = br#"{"skip": {"a": [1, {"b": 2}]}, "keep": 3}"#;
    let mut t = Tokenizer::new(text);
    assert_eq!(t.next_event().unwrap(), Some(Event::BeginObject));
    assert_eq!(t.next_event().unwrap(), Some(Event::Key("skip".into())));
    let first = t.next_event().unwrap().unwrap();
    let start = t.event_offset();
    let end = t.skip_value(&first).unwrap();
    assert_eq!(&text[start..end], br#"{"a": [1, {"b": 2}]}"#);
    assert_eq!(t.next_event().unwrap(), Some(Event::Key("keep".into())));
}

#[test]
fn duplicate_keys_helper() {
    let mut seen = DuplicateKeys::new();
    assert!(seen.insert(&Cow::Borrowed("a")));
    assert!(seen.insert(&Cow::Owned("b".to_owned())));
    assert!(!seen.insert(&Cow::Owned("a".to_owned())));
}

/// The nesting is kept a bit per container, 64 to a word: arrays and
/// objects mixed across the words' edges close as they opened.
#[test]
fn mixed_nesting_across_the_nestings_words_closes_in_order() {
    for depth in [63usize, 64, 65, 127, 128, 129, 200] {
        let mut text = String::new();
        for i in 0..depth {
            text.push_str(if i % 3 == 0 { "{\"k\":" } else { "[" });
        }
        text.push('1');
        for i in (0..depth).rev() {
            text.push(if i % 3 == 0 { '}' } else { ']' });
        }
        let mut t = Tokenizer::with_max_depth(text.as_bytes(), 1000);
        let mut closes = Vec::new();
        while let Some(e) = t.next_event().unwrap() {
            match e {
                Event::EndObject => closes.push('}'),
                Event::EndArray => closes.push(']'),
                _ => {}
            }
            assert!(t.depth() <= depth);
        }
        let want: Vec<char> = (0..depth)
            .rev()
            .map(|i| if i % 3 == 0 { '}' } else { ']' })
            .collect();
        assert_eq!(closes, want, "depth {depth}");
        // A close of the wrong kind is refused at any depth.
        let mut wrong = text.clone().into_bytes();
        let last = wrong.len() - 1;
        wrong[last] = if wrong[last] == b'}' { b']' } else { b'}' };
        let refused = Tokenizer::with_max_depth(&wrong, 1000)
            .read_to_end()
            .is_err();
        assert!(refused, "depth {depth}");
    }
}
