//! Property tests of the canonical text and decoding, over generated types
//! and values: records with Option fields, enums with all three payload
//! kinds, lists, sets, dicts with text and non-text keys, tuples, options of
//! options, results, json values, generic types, instants across the whole
//! model (extreme years, every nanosecond), durations, big Ints, decimals.
//!
//! - `decode(canonical(v)) == v`;
//! - two values are equal exactly when their canonical texts are;
//! - `canonical(decode(t))` is a fixed point, also for texts respelled with
//!   whitespace, reordered members, other number spellings and escapes.

use dashu_int::IBig;
use limen_core::flow::canonical::to_canonical_string;
use limen_core::flow::decode::{decode, Limits};
use limen_core::flow::value::EnumPayload;
use limen_core::flow::{
    Constructor, Decimal, Duration, Field, Identity, Instant, Int, JsonValue, Payload, Type,
    TypeBody, TypeDecl, TypeEnv, Value,
};
use limen_core::json::{Event, Tokenizer};
use proptest::prelude::*;

/// A type before its named parts are declared.
#[derive(Clone, Debug)]
enum Spec {
    Int,
    Decimal,
    Text,
    Bool,
    Bytes,
    Instant,
    Duration,
    Json,
    HostToken,
    List(Box<Spec>),
    Set(Box<Spec>),
    Tuple(Vec<Spec>),
    Dict(Box<Spec>, Box<Spec>),
    Option(Box<Spec>),
    Result(Box<Spec>, Box<Spec>),
    Record(Vec<(bool, Spec)>),
    Enum(Vec<CtorSpec>),
    /// `Boxed<T>`: a generic record `{ value: T, maybe: Option<T> }`.
    Boxed(Box<Spec>),
}

#[derive(Clone, Debug)]
enum CtorSpec {
    Unit,
    Value(Spec),
    Fields(Vec<(bool, Spec)>),
}

fn leaf() -> impl Strategy<Value = Spec> {
    prop_oneof![
        Just(Spec::Int),
        Just(Spec::Decimal),
        Just(Spec::Text),
        Just(Spec::Bool),
        Just(Spec::Bytes),
        Just(Spec::Instant),
        Just(Spec::Duration),
        Just(Spec::Json),
        Just(Spec::HostToken),
    ]
}

fn fields_of(inner: BoxedStrategy<Spec>) -> impl Strategy<Value = Vec<(bool, Spec)>> {
    prop::collection::vec((any::<bool>(), inner), 0..4)
}

fn spec() -> impl Strategy<Value = Spec> {
    leaf().prop_recursive(4, 24, 4, |inner| {
        let inner = inner.boxed();
        prop_oneof![
            inner.clone().prop_map(|t| Spec::List(Box::new(t))),
            inner.clone().prop_map(|t| Spec::Set(Box::new(t))),
            prop::collection::vec(inner.clone(), 0..4).prop_map(Spec::Tuple),
            inner
                .clone()
                .prop_map(|v| Spec::Dict(Box::new(Spec::Text), Box::new(v))),
            (inner.clone(), inner.clone()).prop_map(|(k, v)| Spec::Dict(Box::new(k), Box::new(v))),
            inner.clone().prop_map(|t| Spec::Option(Box::new(t))),
            inner
                .clone()
                .prop_map(|t| Spec::Option(Box::new(Spec::Option(Box::new(t))))),
            (inner.clone(), inner.clone())
                .prop_map(|(t, e)| Spec::Result(Box::new(t), Box::new(e))),
            fields_of(inner.clone()).prop_map(Spec::Record),
            prop::collection::vec(
                prop_oneof![
                    Just(CtorSpec::Unit),
                    inner.clone().prop_map(CtorSpec::Value),
                    fields_of(inner.clone()).prop_map(CtorSpec::Fields),
                ],
                1..4
            )
            .prop_map(Spec::Enum),
            inner.prop_map(|t| Spec::Boxed(Box::new(t))),
        ]
    })
}

fn id(name: &str) -> Identity {
    Identity::in_repository("example.org/props", "1.0.0", "gen.flow", name)
}

/// Declares the named types of `spec` and returns its type.
fn declare(spec: &Spec, env: &mut TypeEnv) -> Type {
    let fields = |fs: &[(bool, Spec)], env: &mut TypeEnv| -> Vec<Field> {
        fs.iter()
            .enumerate()
            .map(|(i, (optional, s))| {
                let t = declare(s, env);
                let name = ["a", "b c", "Ω", "d"][i % 4];
                Field::new(name, if *optional { Type::option(t) } else { t })
            })
            .collect()
    };
    match spec {
        Spec::Int => Type::Int,
        Spec::Decimal => Type::Decimal,
        Spec::Text => Type::Text,
        Spec::Bool => Type::Bool,
        Spec::Bytes => Type::Bytes,
        Spec::Instant => Type::Instant,
        Spec::Duration => Type::Duration,
        Spec::Json => Type::Json,
        Spec::HostToken => Type::HostToken,
        Spec::List(t) => Type::list(declare(t, env)),
        Spec::Set(t) => Type::set(declare(t, env)),
        Spec::Tuple(ts) => Type::Tuple(ts.iter().map(|t| declare(t, env)).collect()),
        Spec::Dict(k, v) => Type::dict(declare(k, env), declare(v, env)),
        Spec::Option(t) => Type::option(declare(t, env)),
        Spec::Result(t, e) => Type::result(declare(t, env), declare(e, env)),
        Spec::Record(fs) => {
            let fields = fields(fs, env);
            let name = format!("R{}", env.len());
            env.declare(TypeDecl::record(id(&name), fields));
            Type::named(id(&name))
        }
        Spec::Enum(cs) => {
            let ctors = cs
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let name = ["A", "B", "None", "Some"][i % 4];
                    match c {
                        CtorSpec::Unit => Constructor::unit(name),
                        CtorSpec::Value(s) => Constructor::value(name, declare(s, env)),
                        CtorSpec::Fields(fs) => Constructor::fields(name, fields(fs, env)),
                    }
                })
                .collect();
            let name = format!("E{}", env.len());
            env.declare(TypeDecl::enumeration(id(&name), ctors));
            Type::named(id(&name))
        }
        Spec::Boxed(t) => {
            let arg = declare(t, env);
            env.declare(
                TypeDecl::record(
                    id("Boxed"),
                    vec![
                        Field::new("value", Type::param("T")),
                        Field::new("maybe", Type::option(Type::param("T"))),
                    ],
                )
                .generic(&["T"]),
            );
            Type::applied(id("Boxed"), vec![arg])
        }
    }
}

/// `ty` with `T` replaced by `arg`.
fn subst(ty: &Type, params: &[String], args: &[Type]) -> Type {
    let s = |t: &Type| subst(t, params, args);
    match ty {
        Type::Param(p) => params
            .iter()
            .position(|q| q == p)
            .map_or_else(|| ty.clone(), |i| args[i].clone()),
        Type::List(t) => Type::list(s(t)),
        Type::Set(t) => Type::set(s(t)),
        Type::Option(t) => Type::option(s(t)),
        Type::Tuple(ts) => Type::Tuple(ts.iter().map(s).collect()),
        Type::Dict(k, v) => Type::dict(s(k), s(v)),
        Type::Result(t, e) => Type::result(s(t), s(e)),
        Type::Named { identity, args: a } => {
            Type::applied(identity.clone(), a.iter().map(s).collect())
        }
        other => other.clone(),
    }
}

fn big_int() -> impl Strategy<Value = Int> {
    prop_oneof![
        any::<i64>().prop_map(Int::from),
        (any::<bool>(), prop::collection::vec(any::<u8>(), 0..48)).prop_map(|(neg, bytes)| {
            let v = IBig::from(dashu_int::UBig::from_le_bytes(&bytes));
            Int(if neg { -v } else { v })
        }),
    ]
}

fn decimal() -> impl Strategy<Value = Decimal> {
    (big_int(), -40i64..40).prop_map(|(c, e)| Decimal::new(c.0, e))
}

fn nanos() -> impl Strategy<Value = i128> {
    const YEAR: i128 = 31_556_952_000_000_000;
    prop_oneof![
        any::<i128>(),
        Just(i128::MIN),
        Just(i128::MAX),
        -3000 * YEAR..10_000 * YEAR,
        (-400i128..400).prop_map(|y| 8030 * YEAR + y * YEAR / 4),
        any::<i64>().prop_map(i128::from),
    ]
}

fn json() -> impl Strategy<Value = JsonValue> {
    let leaf = prop_oneof![
        Just(JsonValue::Null),
        any::<bool>().prop_map(JsonValue::Bool),
        decimal().prop_map(JsonValue::Number),
        any::<String>().prop_map(|s| JsonValue::String(s.into())),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(JsonValue::array),
            prop::collection::btree_map(any::<String>(), inner, 0..4)
                .prop_map(|m| { JsonValue::object(m.into_iter().collect()).expect("unique keys") }),
        ]
    })
}

/// Values of `ty`.
fn value(ty: &Type, env: &TypeEnv) -> BoxedStrategy<Value> {
    match ty {
        Type::Int => big_int().prop_map(Value::Int).boxed(),
        Type::Decimal => decimal().prop_map(Value::Decimal).boxed(),
        Type::Text => any::<String>().prop_map(Value::Text).boxed(),
        Type::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
        Type::Bytes => prop::collection::vec(any::<u8>(), 0..12)
            .prop_map(Value::Bytes)
            .boxed(),
        Type::Instant => nanos()
            .prop_map(|n| Value::Instant(Instant::from_unix_nanos(n)))
            .boxed(),
        Type::Duration => nanos()
            .prop_map(|n| Value::Duration(Duration::from_nanos(n)))
            .boxed(),
        Type::Json => json().prop_map(Value::Json).boxed(),
        Type::HostToken => json().prop_map(Value::HostToken).boxed(),
        Type::List(t) => prop::collection::vec(value(t, env), 0..4)
            .prop_map(Value::List)
            .boxed(),
        Type::Set(t) => prop::collection::vec(value(t, env), 0..4)
            .prop_map(Value::set)
            .boxed(),
        Type::Tuple(ts) => ts
            .iter()
            .map(|t| value(t, env))
            .collect::<Vec<_>>()
            .prop_map(Value::Tuple)
            .boxed(),
        Type::Dict(k, v) if **k == Type::Text => {
            prop::collection::vec((any::<String>(), value(v, env)), 0..4)
                .prop_map(Value::text_dict)
                .boxed()
        }
        Type::Dict(k, v) => prop::collection::vec((value(k, env), value(v, env)), 0..4)
            .prop_map(Value::dict)
            .boxed(),
        Type::Option(t) => prop::option::of(value(t, env))
            .prop_map(|o| Value::Option(o.map(Box::new)))
            .boxed(),
        Type::Result(t, e) => prop_oneof![
            value(t, env).prop_map(|v| Value::Result(Ok(Box::new(v)))),
            value(e, env).prop_map(|v| Value::Result(Err(Box::new(v)))),
        ]
        .boxed(),
        Type::Named { identity, args } => {
            let decl = env.get(identity).expect("declared").clone();
            let fields = |fs: &[Field]| {
                fs.iter()
                    .map(|f| {
                        let name = f.name.clone();
                        value(&subst(&f.ty, &decl.params, args), env)
                            .prop_map(move |v| (name.clone(), v))
                    })
                    .collect::<Vec<_>>()
            };
            match &decl.body {
                TypeBody::Record(fs) => fields(fs).prop_map(Value::Record).boxed(),
                TypeBody::Enum(cs) => {
                    let options: Vec<BoxedStrategy<Value>> = cs
                        .iter()
                        .map(|c| {
                            let name = c.name.clone();
                            match &c.payload {
                                Payload::Unit => Just(Value::unit_enum(&name)).boxed(),
                                Payload::Value(t) => value(t, env)
                                    .prop_map(move |v| Value::enum_value(&name, v))
                                    .boxed(),
                                Payload::Fields(fs) => fields(fs)
                                    .prop_map(move |fields| Value::Enum {
                                        constructor: name.clone(),
                                        payload: EnumPayload::Fields(fields),
                                    })
                                    .boxed(),
                            }
                        })
                        .collect();
                    proptest::strategy::Union::new(options).boxed()
                }
            }
        }
        other => panic!("no values generated for {other:?}"),
    }
}

fn typed() -> impl Strategy<Value = (Type, TypeEnv, Value, Value)> {
    spec().prop_flat_map(|s| {
        let mut env = TypeEnv::new();
        let ty = declare(&s, &mut env);
        let values = (value(&ty, &env), value(&ty, &env));
        (Just(ty), Just(env), values).prop_map(|(t, e, (a, b))| (t, e, a, b))
    })
}

/// The same JSON text spelled otherwise: whitespace, members in reverse
/// order, numbers with a trailing zero or exponent, escaped characters.
fn respell(text: &str) -> String {
    #[derive(Debug)]
    enum Raw {
        Scalar(String),
        Array(Vec<Raw>),
        Object(Vec<(String, Raw)>),
    }
    fn string(s: &str) -> String {
        let mut out = String::from("\"");
        for (i, c) in s.chars().enumerate() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '/' => out.push_str("\\/"),
                c if (c as u32) < 0x20 || i % 3 == 0 => {
                    let mut units = [0u16; 2];
                    for u in c.encode_utf16(&mut units) {
                        out.push_str(&format!("\\u{u:04X}"));
                    }
                }
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }
    fn build(t: &mut Tokenizer<'_>, first: Event<'_>) -> Raw {
        match first {
            Event::BeginArray => {
                let mut items = Vec::new();
                loop {
                    match t.next_event().unwrap().unwrap() {
                        Event::EndArray => return Raw::Array(items),
                        e => items.push(build(t, e)),
                    }
                }
            }
            Event::BeginObject => {
                let mut members = Vec::new();
                loop {
                    match t.next_event().unwrap().unwrap() {
                        Event::EndObject => return Raw::Object(members),
                        Event::Key(k) => {
                            let e = t.next_event().unwrap().unwrap();
                            members.push((string(&k), build(t, e)));
                        }
                        other => panic!("{other:?}"),
                    }
                }
            }
            Event::String(s) => Raw::Scalar(string(&s)),
            Event::Number(n) => Raw::Scalar(if n.raw().contains('.') {
                format!("{}0", n.raw())
            } else if n.raw() == "0" {
                "0E+7".to_owned()
            } else {
                format!("{}0e-1", n.raw())
            }),
            Event::Bool(b) => Raw::Scalar(b.to_string()),
            Event::Null => Raw::Scalar("null".into()),
            other => panic!("{other:?}"),
        }
    }
    fn emit(raw: &Raw, out: &mut String) {
        match raw {
            Raw::Scalar(s) => out.push_str(s),
            Raw::Array(items) => {
                out.push_str("[ ");
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(" ,\n\t");
                    }
                    emit(item, out);
                }
                out.push_str(" ]");
            }
            Raw::Object(members) => {
                out.push_str("{\r\n");
                for (i, (k, v)) in members.iter().rev().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    out.push_str(k);
                    out.push_str(" : ");
                    emit(v, out);
                }
                out.push_str("\n}");
            }
        }
    }
    let mut t = Tokenizer::new(text.as_bytes());
    let first = t.next_event().unwrap().unwrap();
    let raw = build(&mut t, first);
    let mut out = String::from(" ");
    emit(&raw, &mut out);
    out.push('\n');
    out
}

fn limits() -> Limits {
    // Values reach a few hundred digits and years of 22 digits; the defaults
    // hold them all, and the depth of generated types stays far inside 128.
    Limits::default()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn decoding_the_canonical_text_gives_the_value_back((ty, env, v, _) in typed()) {
        let text = to_canonical_string(&v);
        let back = decode(text.as_bytes(), &ty, &env, &limits());
        prop_assert_eq!(back.as_ref().map_err(|e| e.to_string()), Ok(&v), "text {}", text);
    }

    #[test]
    fn equal_values_and_only_they_share_a_text((ty, env, a, b) in typed()) {
        let (ta, tb) = (to_canonical_string(&a), to_canonical_string(&b));
        prop_assert_eq!(a == b, ta == tb, "{} vs {}", ta, tb);
        // And through decoding: a value decoded from b's text equals b.
        let db = decode(tb.as_bytes(), &ty, &env, &limits()).unwrap();
        prop_assert_eq!(a == db, ta == tb);
    }

    #[test]
    fn canonical_text_of_a_decoded_text_is_a_fixed_point((ty, env, v, _) in typed()) {
        let text = to_canonical_string(&v);
        let respelled = respell(&text);
        let decoded = decode(respelled.as_bytes(), &ty, &env, &limits());
        let decoded = decoded.map_err(|e| format!("{e} in {respelled}"));
        prop_assert_eq!(decoded.as_ref().map(to_canonical_string), Ok(text.clone()));
        let again = decode(text.as_bytes(), &ty, &env, &limits()).unwrap();
        prop_assert_eq!(to_canonical_string(&again), text);
    }

    #[test]
    fn mutated_texts_decode_to_a_value_or_refuse_without_panicking(
        (ty, env, v, _) in typed(),
        edits in prop::collection::vec((any::<usize>(), prop::sample::select(
            b"{}[]:,\"\\ 0123456789-.eEnulSomeNOkErr=+/TZ:".to_vec())), 1..4),
    ) {
        let mut bytes = to_canonical_string(&v).into_bytes();
        for (i, b) in edits {
            let n = bytes.len();
            match i % 3 {
                0 => bytes.insert(i % (n + 1), b),
                1 if n > 0 => { bytes.remove(i % n); }
                _ if n > 0 => bytes[i % n] = b,
                _ => {}
            }
        }
        if let Ok(decoded) = decode(&bytes, &ty, &env, &limits()) {
            let text = to_canonical_string(&decoded);
            let again = decode(text.as_bytes(), &ty, &env, &limits()).unwrap();
            prop_assert_eq!(again, decoded);
        }
    }

    #[test]
    fn json_values_round_trip_and_respell(j in json()) {
        let v = Value::Json(j);
        let text = to_canonical_string(&v);
        let back = decode(text.as_bytes(), &Type::Json, &TypeEnv::new(), &limits()).unwrap();
        prop_assert_eq!(&back, &v);
        let respelled = respell(&text);
        let again = decode(respelled.as_bytes(), &Type::Json, &TypeEnv::new(), &limits()).unwrap();
        prop_assert_eq!(to_canonical_string(&again), text);
    }
}

#[test]
fn extreme_instants_round_trip() {
    for nanos in [i128::MIN, i128::MIN + 1, -1, 0, 1, i128::MAX - 1, i128::MAX] {
        for v in [
            Value::Instant(Instant::from_unix_nanos(nanos)),
            Value::Duration(Duration::from_nanos(nanos)),
        ] {
            let ty = if matches!(v, Value::Instant(_)) {
                Type::Instant
            } else {
                Type::Duration
            };
            let text = to_canonical_string(&v);
            assert_eq!(
                decode(text.as_bytes(), &ty, &TypeEnv::new(), &limits()).unwrap(),
                v,
                "{text}"
            );
        }
    }
}
