//! The decoding rules, type by type, with the whole message of each refusal.

use super::*;

#[test]
fn records_require_fields_and_read_options_bare() {
    let hit = Type::named(id("Hit"));
    assert_eq!(
        ok(r#"{"title": "a", "score": 3}"#, &hit),
        Value::record(vec![
            ("score", Value::int(3)),
            ("title", Value::text("a")),
            ("note", Value::none()),
        ])
    );
    assert_eq!(
        canon(
            r#"{"note": "n", "title": "a", "score": 3, "extra": [1, {"x": null}]}"#,
            &hit
        ),
        r#"{"note":"n","score":3,"title":"a"}"#
    );
    assert_eq!(
        refusal(r#"{"title": "a"}"#, &hit),
        (
            K::MissingField,
            r#"$: missing required field "score""#.into()
        )
    );
    assert_eq!(
        refusal(r#"{"title": "a", "score": 1, "note": null}"#, &hit),
        (K::Mismatch, "$.note: expected Text, found null".into())
    );
}

#[test]
fn a_mismatch_names_the_path_and_what_was_found() {
    let search = Type::named(id("Search"));
    let text = r#"{"hits": [{"score": 1, "title": "a"}, {"score": 2, "title": "b"},
        {"score": 3, "title": "c"}, {"score": "x", "title": "d"}]}"#;
    assert_eq!(
        refusal(text, &search),
        (
            K::Mismatch,
            r#"$.hits[3].score: expected Int, found "x""#.into()
        )
    );
    assert_eq!(
        message("[1]", &search),
        "$: expected Search (an object), found an array"
    );
    assert_eq!(
        message("{}", &Type::list(Type::Int)),
        "$: expected List<Int> (an array), found an object"
    );
    assert_eq!(
        message("1.5", &Type::Int),
        "$: expected Int, found 1.5, which is not whole"
    );
    assert_eq!(
        message("\"1\"", &Type::Decimal),
        "$: expected Decimal, found \"1\""
    );
    assert_eq!(message("1", &Type::Bool), "$: expected Bool, found 1");
    assert_eq!(message("true", &Type::Text), "$: expected Text, found true");
    let long = format!("\"{}\"", "y".repeat(50));
    assert_eq!(
        message(&long, &Type::Int),
        format!("$: expected Int, found \"{}…\"", "y".repeat(40))
    );
}

#[test]
fn keys_that_are_not_identifiers_are_quoted_in_paths() {
    let ty = Type::dict(Type::Text, Type::dict(Type::Text, Type::Int));
    assert_eq!(
        message(r#"{"a b": {"c\"d": "x"}}"#, &ty),
        r#"$["a b"]["c\"d"]: expected Int, found "x""#
    );
}

#[test]
fn option_outside_a_record_is_tagged() {
    let ty = Type::option(Type::option(Type::Int));
    assert_eq!(ok("\"None\"", &ty), Value::none());
    assert_eq!(ok(r#"{"Some": "None"}"#, &ty), Value::some(Value::none()));
    assert_eq!(
        ok(r#"{"Some": {"Some": 4}}"#, &ty),
        Value::some(Value::some(Value::int(4)))
    );
    let what = r#"Option<Option<Int>> ("None" or {"Some": …})"#;
    assert_eq!(
        message("null", &ty),
        format!("$: expected {what}, found null")
    );
    assert_eq!(message("4", &ty), format!("$: expected {what}, found 4"));
    assert_eq!(
        message(r#"{"some": 4}"#, &ty),
        format!(r#"$: expected {what}, found an object with key "some""#)
    );
    assert_eq!(
        message(r#"{"Some": "None", "None": 1}"#, &ty),
        format!(r#"$: expected {what}, found a second member "None""#)
    );
    assert_eq!(
        message("{}", &ty),
        format!("$: expected {what}, found an empty object")
    );
}

#[test]
fn enums_of_every_payload_kind() {
    let shape = Type::named(id("Shape"));
    assert_eq!(ok("\"Empty\"", &shape), Value::unit_enum("Empty"));
    assert_eq!(canon(r#"{"Circle": 2.50}"#, &shape), r#"{"Circle":2.5}"#);
    assert_eq!(
        canon(r#"{"Rect": {"h": 2, "w": 1}}"#, &shape),
        r#"{"Rect":{"h":2,"w":1}}"#
    );
    assert_eq!(
        refusal("\"Square\"", &shape),
        (
            K::Invalid,
            r#"$: Shape has no constructor "Square"; it has Empty, Circle, Rect"#.into()
        )
    );
    assert_eq!(
        message("\"Circle\"", &shape),
        r#"$: constructor "Circle" carries a payload: expected {"Circle": …}"#
    );
    assert_eq!(
        message(r#"{"Empty": null}"#, &shape),
        r#"$: constructor "Empty" carries no payload: expected "Empty""#
    );
    assert_eq!(
        message(r#"{"Circle": 1, "Empty": null}"#, &shape),
        r#"$: expected Shape (a constructor name or an object of one member), found a second member "Empty""#
    );
    assert_eq!(
        message(r#"{"Rect": {"w": 1}}"#, &shape),
        r#"$.Rect: missing required field "h""#
    );
    assert_eq!(
        message("[]", &shape),
        "$: expected Shape (a constructor name or an object of one member), found an array"
    );
}

#[test]
fn results_are_ok_or_err() {
    let ty = Type::result(Type::Int, Type::Text);
    assert_eq!(
        ok(r#"{"Ok": 1}"#, &ty),
        Value::Result(Ok(Box::new(Value::int(1))))
    );
    assert_eq!(
        ok(r#"{"Err": "e"}"#, &ty),
        Value::Result(Err(Box::new(Value::text("e"))))
    );
    assert_eq!(
        message(r#"{"Err": 1}"#, &ty),
        "$.Err: expected Text, found 1"
    );
    assert_eq!(
        message(r#"{"Failed": 1}"#, &ty),
        r#"$: expected Result<Int, Text> ({"Ok": …} or {"Err": …}), found an object with key "Failed""#
    );
    // Result<T, Never> decodes its Ok side; its Err side can hold nothing.
    let never = Type::result(Type::Int, Type::Never);
    assert_eq!(
        ok(r#"{"Ok": 2}"#, &never),
        Value::Result(Ok(Box::new(Value::int(2))))
    );
    assert_eq!(
        refusal(r#"{"Err": 2}"#, &never),
        (K::Mismatch, "$.Err: Never has no values, found 2".into())
    );
}

#[test]
fn json_values_and_host_tokens_are_raw() {
    let text = r#"{"b": [1.50, -0, 1e2, "x", null, true], "a": {}}"#;
    assert_eq!(
        canon(text, &Type::Json),
        r#"{"a":{},"b":[1.5,0,100,"x",null,true]}"#
    );
    assert_eq!(
        canon(text, &Type::HostToken),
        r#"{"a":{},"b":[1.5,0,100,"x",null,true]}"#
    );
    assert_eq!(
        refusal(r#"{"a": [{"k": 1, "k": 2}]}"#, &Type::Json),
        (K::Duplicate, r#"$.a[0]: the key "k" is given twice"#.into())
    );
    assert_eq!(
        message(r#"{"a": [0, {"k": [1, 2, 1e5000]}]}"#, &Type::Json),
        "$.a[1].k[2]: the number's exponent is 5000, past the limit of ±1000"
    );
}

#[test]
fn bytes_are_canonical_padded_base64() {
    assert_eq!(ok("\"QQ==\"", &Type::Bytes), Value::Bytes(b"A".to_vec()));
    assert_eq!(ok("\"\"", &Type::Bytes), Value::Bytes(Vec::new()));
    assert_eq!(canon("\"+/8=\"", &Type::Bytes), "\"+/8=\"");
    for bad in [
        "QQ",
        "QR==",
        "-_8=",
        "QQ==\\n",
        "Q Q==",
        "QQ=",
        "QUJD\\nREVG",
    ] {
        let text = format!("\"{bad}\"");
        let (kind, msg) = refusal(&text, &Type::Bytes);
        assert_eq!(kind, K::Invalid, "{bad}");
        assert!(
            msg.ends_with("which is not canonical base64 (standard alphabet, padded)"),
            "{msg}"
        );
    }
    assert_eq!(
        message("\"QR==\"", &Type::Bytes),
        "$: expected Bytes, found \"QR==\", which is not canonical base64 (standard alphabet, padded)"
    );
    assert_eq!(
        message("[65]", &Type::Bytes),
        "$: expected Bytes (a base64 string), found an array"
    );
}

#[test]
fn instants_and_durations() {
    assert_eq!(
        canon("\"2024-03-01t01:30:00.500+02:00\"", &Type::Instant),
        "\"2024-02-29T23:30:00.5Z\""
    );
    assert_eq!(
        message("\"2016-12-31T23:59:60Z\"", &Type::Instant),
        "$: expected Instant, found \"2016-12-31T23:59:60Z\": a leap second does not exist on a time line without leap seconds"
    );
    assert_eq!(canon("\"PT1.50S\"", &Type::Duration), "\"PT1.5S\"");
    assert_eq!(
        refusal("\"PT1M\"", &Type::Duration),
        (
            K::Invalid,
            "$: expected Duration, found \"PT1M\": expected `PT<seconds>S`".into()
        )
    );
    assert_eq!(
        message("90", &Type::Duration),
        "$: expected Duration (a \"PT<seconds>S\" string), found 90"
    );
}

#[test]
fn sets_accept_any_order_and_refuse_duplicates() {
    let ty = Type::set(Type::Int);
    assert_eq!(
        ok("[3, 1, 2]", &ty),
        Value::set(vec![Value::int(1), Value::int(2), Value::int(3)])
    );
    assert_eq!(canon("[10, 9]", &ty), "[10,9]");
    assert_eq!(
        refusal("[1, 2, 3, 1.0]", &ty),
        (
            K::Duplicate,
            "$[3]: a set holds each element once; this one equals [0]".into()
        )
    );
}

#[test]
fn dicts_by_key_type() {
    let text_keys = Type::dict(Type::Text, Type::Int);
    assert_eq!(canon(r#"{"b": 2, "a": 1}"#, &text_keys), r#"{"a":1,"b":2}"#);
    assert_eq!(canon("{}", &text_keys), "{}");
    assert_eq!(
        refusal(r#"{"b": 2, "a": 1, "b": 3}"#, &text_keys),
        (K::Duplicate, r#"$: the key "b" is given twice"#.into())
    );
    let int_keys = Type::dict(Type::Int, Type::Text);
    assert_eq!(
        canon(r#"[[2, "b"], [10, "a"]]"#, &int_keys),
        r#"[[10,"a"],[2,"b"]]"#
    );
    assert_eq!(canon("[]", &int_keys), "[]");
    assert_eq!(
        refusal(r#"[[1, "a"], [2, "b"], [1e0, "c"]]"#, &int_keys),
        (
            K::Duplicate,
            "$[2]: a dict holds each key once; this key equals the key of [0]".into()
        )
    );
    assert_eq!(
        message(r#"[[1]]"#, &int_keys),
        "$[0]: expected a [key, value] pair, found a shorter array"
    );
    assert_eq!(
        message(r#"[[1, "a", 2]]"#, &int_keys),
        "$[0]: expected a [key, value] pair, found a longer array"
    );
    assert_eq!(
        message(r#"[[1, 2]]"#, &int_keys),
        "$[0][1]: expected Text, found 2"
    );
    assert_eq!(
        message(r#"{"1": "a"}"#, &int_keys),
        "$: expected Dict<Int, Text> (an array of [key, value] pairs), found an object"
    );
}

#[test]
fn tuples_have_exact_length() {
    let ty = Type::Tuple(vec![Type::Int, Type::Text]);
    assert_eq!(canon(r#"[1, "a"]"#, &ty), r#"[1,"a"]"#);
    assert_eq!(
        message("[1]", &ty),
        "$: expected (Int, Text) (an array of 2), found an array of 1"
    );
    assert_eq!(
        message(r#"[1, "a", 2]"#, &ty),
        "$: expected (Int, Text) (an array of 2), found a longer array"
    );
    assert_eq!(canon("[]", &Type::Tuple(vec![])), "[]");
}

#[test]
fn generic_parameters_are_bound() {
    let boxed = Type::applied(id("Boxed"), vec![Type::list(Type::param("T"))]);
    let v = decode_with_params(
        br#"{"value": [1, 2]}"#,
        &boxed,
        &env(),
        &[("T".to_owned(), Type::Int)],
        &Limits::default(),
    )
    .unwrap();
    assert_eq!(to_canonical_string(&v), r#"{"value":[1,2]}"#);
    // A parameter bound to an Option is a record field's Option.
    let opt = Type::applied(id("Boxed"), vec![Type::option(Type::Int)]);
    assert_eq!(
        ok("{}", &opt),
        Value::record(vec![("value", Value::none())])
    );
    assert_eq!(
        ok(r#"{"value": 5}"#, &opt),
        Value::record(vec![("value", Value::some(Value::int(5)))])
    );
    assert_eq!(
        refusal(
            r#"{"value": 1}"#,
            &Type::applied(id("Boxed"), vec![Type::param("U")])
        ),
        (K::Type, "$.value: the type parameter U is not bound".into())
    );
    assert_eq!(
        message("{}", &Type::named(id("Boxed"))),
        "$: the type github.com/acme/tools@1.0.0/search.flow.Boxed takes 1 type arguments, given 0"
    );
    assert_eq!(
        refusal("{}", &Type::named(id("Nowhere"))),
        (
            K::Type,
            "$: the type github.com/acme/tools@1.0.0/search.flow.Nowhere is not declared".into()
        )
    );
}

#[test]
fn never_refuses_everything() {
    for text in ["null", "0", "\"x\"", "[]", "{}"] {
        assert_eq!(refusal(text, &Type::Never).0, K::Mismatch);
    }
    assert_eq!(
        message("{}", &Type::Never),
        "$: Never has no values, found an object"
    );
}

#[test]
fn syntax_errors_carry_path_and_position() {
    let ty = Type::list(Type::list(Type::Int));
    assert_eq!(
        refusal("[[1], [2 3]]", &ty),
        (
            K::Syntax,
            "$[1][1]: invalid JSON at 1:10: expected `,` or `]`, found `3`".into()
        )
    );
    assert_eq!(
        message("[1] [2]", &Type::list(Type::Int)),
        "$: invalid JSON at 1:5: unexpected content after the value"
    );
    assert_eq!(
        message("\u{feff}1", &Type::Int),
        "$: invalid JSON at 1:1: a byte order mark is not allowed"
    );
    assert_eq!(
        message("", &Type::Int),
        "$: invalid JSON at 1:1: the text ends before the value does"
    );
}

#[test]
fn whole_numbers_are_ints_in_any_spelling() {
    for text in ["100", "1e2", "1E+2", "100.000", "1000e-1"] {
        assert_eq!(ok(text, &Type::Int), Value::int(100), "{text}");
    }
    assert_eq!(ok("-0", &Type::Int), Value::int(0));
}
