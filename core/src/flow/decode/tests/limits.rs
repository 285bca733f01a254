//! Every limit refused at its edge, with its message and path.

use super::*;

#[test]
fn max_bytes_at_its_edge() {
    let limits = Limits {
        max_bytes: 5,
        ..Limits::default()
    };
    assert!(decode(b"[1,2]", &Type::list(Type::Int), &env(), &limits).is_ok());
    assert_eq!(
        refusal_with("[1,2] ", &Type::list(Type::Int), &limits),
        (
            K::Limit,
            "$: the text is 6 bytes, past the limit of 5".into()
        )
    );
}

#[test]
fn canonical_growth_is_held_to_max_bytes() {
    // "[1e9]" is 5 bytes; its canonical text "[1000000000]" is 12.
    let ok_limits = Limits {
        max_bytes: 12,
        ..Limits::default()
    };
    assert!(decode(b"[1e9]", &Type::list(Type::Int), &env(), &ok_limits).is_ok());
    let tight = Limits {
        max_bytes: 11,
        ..Limits::default()
    };
    assert_eq!(
        refusal_with("[1e9]", &Type::list(Type::Int), &tight),
        (
            K::Limit,
            "$[0]: written out, the value's canonical text would pass the limit of 11 bytes".into()
        )
    );
    // A million short numbers that would each write out to 1000 digits.
    let many = format!("[{}1e999]", "1e999,".repeat(99_999));
    let (kind, msg) = refusal(&many, &Type::Json);
    assert_eq!(kind, K::Limit);
    assert!(
        msg.ends_with(
            "written out, the value's canonical text would pass the limit of 16777216 bytes"
        ),
        "{msg}"
    );
}

#[test]
fn max_depth_at_its_edge() {
    let limits = Limits {
        max_depth: 3,
        ..Limits::default()
    };
    let ty = Type::list(Type::list(Type::list(Type::Int)));
    assert!(decode(b"[[[1]]]", &ty, &env(), &limits).is_ok());
    assert_eq!(
        refusal_with("[[[[1]]]]", &Type::Json, &limits),
        (
            K::Limit,
            "$[0][0][0]: arrays and objects nest deeper than the limit of 3".into()
        )
    );
    // The default: 128 deep is fine, 129 is not, a million is a clean refusal.
    let nest = |d: usize| format!("{}{}", "[".repeat(d), "]".repeat(d));
    assert!(parse_json_value(nest(128).as_bytes(), &Limits::default()).is_ok());
    assert_eq!(refusal(&nest(129), &Type::Json).0, K::Limit);
    assert_eq!(refusal(&"[".repeat(1_000_000), &Type::Json).0, K::Limit);
    // A setting past the ceiling is the ceiling.
    let deep = Limits {
        max_depth: usize::MAX,
        ..Limits::default()
    };
    assert_eq!(deep.depth(), Limits::DEPTH_CEILING);
    assert!(parse_json_value(nest(256).as_bytes(), &deep).is_ok());
    assert!(parse_json_value(nest(257).as_bytes(), &deep).is_err());
}

#[test]
fn typed_recursion_is_bounded_by_the_depth_limit() {
    // A recursive type nested to the ceiling decodes without exhausting the
    // stack (the test thread's stack is the smallest a caller will have).
    let mut env = TypeEnv::new();
    env.declare(TypeDecl::record(
        id("Node"),
        vec![Field::new("next", Type::option(Type::named(id("Node"))))],
    ));
    let node = Type::named(id("Node"));
    let deep = Limits {
        max_depth: Limits::DEPTH_CEILING,
        ..Limits::default()
    };
    let d = Limits::DEPTH_CEILING;
    let text = format!("{}{}", "{\"next\":".repeat(d - 1) + "{", "}".repeat(d));
    let v = decode(text.as_bytes(), &node, &env, &deep).unwrap();
    assert_eq!(to_canonical_string(&v), text);
    let deeper = format!("{}{}", "{\"next\":".repeat(d) + "{", "}".repeat(d + 1));
    assert!(decode(deeper.as_bytes(), &node, &env, &deep).is_err());
}

#[test]
fn max_int_digits_at_its_edge() {
    let limits = Limits {
        max_int_digits: 3,
        ..Limits::default()
    };
    assert!(decode(b"-999", &Type::Int, &env(), &limits).is_ok());
    assert!(decode(b"1e2", &Type::Int, &env(), &limits).is_ok());
    assert_eq!(
        refusal_with("1000", &Type::Int, &limits),
        (
            K::Limit,
            "$: the Int has 4 digits, past the limit of 3".into()
        )
    );
    assert_eq!(
        refusal_with("[1e3]", &Type::list(Type::Int), &limits).1,
        "$[0]: the Int has 4 digits, past the limit of 3"
    );
    // 1e5000 is refused by its value, never written out.
    assert_eq!(
        message("1e5000", &Type::Int),
        "$: the Int has 5001 digits, past the limit of 4300"
    );
    assert_eq!(
        message("1e999999999999999999999", &Type::Int),
        "$: the Int has over 10^14 digits, past the limit of 4300"
    );
}

#[test]
fn max_decimal_digits_and_exponent_at_their_edges() {
    let limits = Limits {
        max_decimal_digits: 3,
        max_decimal_exponent: 5,
        ..Limits::default()
    };
    let dec = |t: &str| decode(t.as_bytes(), &Type::Decimal, &env(), &limits);
    assert!(dec("1.23").is_ok());
    assert!(dec("1.2300000").is_ok());
    assert_eq!(
        refusal_with("1.234", &Type::Decimal, &limits),
        (
            K::Limit,
            "$: the number has 4 significant digits, past the limit of 3".into()
        )
    );
    assert!(dec("1e5").is_ok());
    assert!(dec("1e-5").is_ok());
    assert_eq!(
        refusal_with("1e6", &Type::Decimal, &limits).1,
        "$: the number's exponent is 6, past the limit of ±5"
    );
    assert_eq!(
        refusal_with("0.000001", &Type::Decimal, &limits).1,
        "$: the number's exponent is -6, past the limit of ±5"
    );
    // 1e-999999999 is refused by its value, never written out.
    assert_eq!(
        message("1e-999999999", &Type::Decimal),
        "$: the number's exponent is -999999999, past the limit of ±1000"
    );
}

#[test]
fn max_string_bytes_at_its_edge() {
    let limits = Limits {
        max_string_bytes: 4,
        ..Limits::default()
    };
    assert!(decode("\"éé\"".as_bytes(), &Type::Text, &env(), &limits).is_ok());
    assert_eq!(
        refusal_with("[\"abcde\"]", &Type::list(Type::Text), &limits),
        (
            K::Limit,
            "$[0]: the string is 5 bytes, past the limit of 4".into()
        )
    );
    assert_eq!(
        refusal_with(r#"{"abcde": 1}"#, &Type::Json, &limits).1,
        "$: the string is 5 bytes, past the limit of 4"
    );
    assert_eq!(
        refusal_with(
            r#"{"abcde": 1}"#,
            &Type::dict(Type::Text, Type::Int),
            &limits
        )
        .1,
        "$.abcde: the string is 5 bytes, past the limit of 4"
    );
}

#[test]
fn max_collection_len_at_its_edge() {
    let limits = Limits {
        max_collection_len: 2,
        ..Limits::default()
    };
    let list = Type::list(Type::Int);
    assert!(decode(b"[1,2]", &list, &env(), &limits).is_ok());
    let past = "$[2]: past the limit of 2 elements in one array or object";
    assert_eq!(
        refusal_with("[1,2,3]", &list, &limits),
        (K::Limit, past.into())
    );
    assert_eq!(refusal_with("[1,2,3]", &Type::Json, &limits).1, past);
    assert_eq!(
        refusal_with("[1,2,3]", &Type::set(Type::Int), &limits).1,
        past
    );
    assert_eq!(
        refusal_with(
            "[[1,1],[2,2],[3,3]]",
            &Type::dict(Type::Int, Type::Int),
            &limits
        )
        .1,
        past
    );
    assert_eq!(
        refusal_with(r#"{"a":1,"b":2,"c":3}"#, &Type::Json, &limits).1,
        "$.c: past the limit of 2 elements in one array or object"
    );
    assert_eq!(
        refusal_with(
            r#"{"a":1,"b":2,"c":3}"#,
            &Type::dict(Type::Text, Type::Int),
            &limits
        )
        .1,
        "$.c: past the limit of 2 elements in one array or object"
    );
}

#[test]
fn ignored_members_are_still_well_formed_and_unique() {
    let hit = Type::named(id("Hit"));
    assert_eq!(
        refusal(r#"{"score": 1, "title": "a", "x": 1, "x": 2}"#, &hit),
        (K::Duplicate, r#"$: the key "x" is given twice"#.into())
    );
    assert_eq!(
        refusal(r#"{"score": 1, "score": 2, "title": "a"}"#, &hit).0,
        K::Duplicate
    );
    assert_eq!(
        refusal(r#"{"score": 1, "title": "a", "x": [1,}"#, &hit).0,
        K::Syntax
    );
}
