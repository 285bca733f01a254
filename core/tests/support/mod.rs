//! Shared by the schema and fingerprint integration tests: proptest
//! strategies for type models (named records and enums in a `TypeEnv`,
//! generics, recursion, odd names and identities) and a seeded sampler of
//! values of a type.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use dashu_int::IBig;
use limen_core::flow::{
    Constructor, Decimal, Declaration, Duration, EnumPayload, Field, Identity, Instant, Int,
    JsonValue, Param, Payload, Type, TypeBody, TypeDecl, TypeEnv, Value,
};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::strategy::Union;

/// Field names a schema must carry as they are: keyword look-alikes,
/// spaces, letters outside ASCII and outside the BMP (whose code-point and
/// UTF-16 orders differ).
pub const FIELD_NAMES: &[&str] = &[
    "a",
    "b",
    "description",
    "$ref",
    "type",
    "x y",
    "é",
    "😂",
    "\u{ff61}",
];
/// Constructor names, including those of Option's and Result's.
pub const CONSTRUCTOR_NAMES: &[&str] = &["A", "B", "None", "Some", "Ok", "Err", "C d"];
/// Doc comments, with characters the canonical text escapes.
pub const DOCS: &[&str] = &["A doc.", "Quotes \" and \\ and a\nnewline.", "é😂"];

/// The identity of the `i`th named type: three kinds of origin, one of them
/// a path holding a space and a `~`.
pub fn ident(i: usize) -> Identity {
    let name = format!("T{i}");
    match i % 3 {
        0 => Identity::in_repository("github.com/acme/tools", "1.4.0", "search.flow", &name),
        1 => Identity::at_path("/home/me/~my tools/run.flow", &name),
        _ => Identity::in_repository("example.org/x", "2.0.0+b", "a/b.flow", &name),
    }
}

fn doc() -> impl Strategy<Value = Option<String>> {
    proptest::option::of(select(DOCS).prop_map(str::to_owned))
}

/// Types over named types `0..arities.len()` (the `i`th taking
/// `arities[i]` arguments) and the type parameters `params`.
pub fn arb_type(arities: Arc<Vec<usize>>, params: Vec<String>) -> BoxedStrategy<Type> {
    // Parameters and named types weigh more than any one scalar: they are
    // where schemas get interesting.
    let mut leaves: Vec<(u32, BoxedStrategy<Type>)> = [
        Type::Int,
        Type::Decimal,
        Type::Text,
        Type::Bool,
        Type::Bytes,
        Type::Instant,
        Type::Duration,
        Type::Json,
        Type::HostToken,
        Type::Never,
    ]
    .into_iter()
    .map(|t| (1, Just(t).boxed()))
    .collect();
    if !params.is_empty() {
        leaves.push((6, select(params.clone()).prop_map(Type::Param).boxed()));
    }
    for (i, &arity) in arities.iter().enumerate() {
        if arity == 0 {
            leaves.push((3, Just(Type::named(ident(i))).boxed()));
        }
    }
    Union::new_weighted(leaves)
        .prop_recursive(3, 24, 3, move |inner| {
            let mut key: Vec<BoxedStrategy<Type>> = vec![
                Just(Type::Text).boxed(),
                Just(Type::Int).boxed(),
                inner.clone(),
            ];
            if !params.is_empty() {
                key.push(select(params.clone()).prop_map(Type::Param).boxed());
            }
            let key = Union::new(key);
            let mut shapes: Vec<(u32, BoxedStrategy<Type>)> = vec![
                (1, inner.clone().prop_map(Type::list).boxed()),
                (1, inner.clone().prop_map(Type::set).boxed()),
                (1, vec(inner.clone(), 0..3).prop_map(Type::Tuple).boxed()),
                (
                    1,
                    (key, inner.clone())
                        .prop_map(|(k, v)| Type::dict(k, v))
                        .boxed(),
                ),
                (1, inner.clone().prop_map(Type::option).boxed()),
                (
                    1,
                    (inner.clone(), inner.clone())
                        .prop_map(|(a, b)| Type::result(a, b))
                        .boxed(),
                ),
            ];
            if !arities.is_empty() {
                let arities = arities.clone();
                let inner = inner.clone();
                shapes.push((
                    4,
                    (0..arities.len())
                        .prop_flat_map(move |i| {
                            vec(inner.clone(), arities[i])
                                .prop_map(move |args| Type::applied(ident(i), args))
                        })
                        .boxed(),
                ));
            }
            Union::new_weighted(shapes)
        })
        .boxed()
}

fn arb_fields(types: BoxedStrategy<Type>) -> impl Strategy<Value = Vec<Field>> {
    vec((select(FIELD_NAMES), doc(), types), 0..4).prop_map(|fields| {
        let mut seen = BTreeSet::new();
        fields
            .into_iter()
            .filter(|(name, _, _)| seen.insert(*name))
            .map(|(name, doc, ty)| Field {
                name: name.to_owned(),
                doc,
                ty,
            })
            .collect()
    })
}

/// The declaration of named type `i`.
pub fn arb_decl(i: usize, arities: Arc<Vec<usize>>) -> BoxedStrategy<TypeDecl> {
    let params: Vec<String> = ["A", "B"][..arities[i]]
        .iter()
        .map(|p| (*p).to_owned())
        .collect();
    let types = arb_type(arities, params.clone());
    // A field whose type is a bare parameter is written apart (`$required`):
    // make it common.
    let field_types = if params.is_empty() {
        types.clone()
    } else {
        let bare = select(params.clone()).prop_map(Type::Param);
        prop_oneof![2 => types.clone(), 1 => bare].boxed()
    };
    let payload = prop_oneof![
        Just(Payload::Unit),
        types.clone().prop_map(Payload::Value),
        arb_fields(field_types.clone()).prop_map(Payload::Fields),
    ];
    let constructors = vec((select(CONSTRUCTOR_NAMES), doc(), payload), 0..4).prop_map(|cs| {
        let mut seen = BTreeSet::new();
        cs.into_iter()
            .filter(|(name, _, _)| seen.insert(*name))
            .map(|(name, doc, payload)| Constructor {
                name: name.to_owned(),
                doc,
                payload,
            })
            .collect::<Vec<_>>()
    });
    let body = prop_oneof![
        arb_fields(field_types).prop_map(TypeBody::Record),
        constructors.prop_map(TypeBody::Enum),
    ];
    (doc(), body)
        .prop_map(move |(doc, body)| TypeDecl {
            identity: ident(i),
            doc,
            params: params.clone(),
            body,
        })
        .boxed()
}

/// Up to four named types (each taking up to two parameters, each free to
/// refer to any of them, itself included) and a type over them with the
/// free parameters `T` and `U`.
pub fn arb_model() -> impl Strategy<Value = (TypeEnv, Type)> {
    vec(0usize..=2, 0..=4).prop_flat_map(|arities| {
        let arities = Arc::new(arities);
        let decls: Vec<BoxedStrategy<TypeDecl>> = (0..arities.len())
            .map(|i| arb_decl(i, arities.clone()))
            .collect();
        let root = arb_type(arities, vec!["T".into(), "U".into()]);
        (decls, root).prop_map(|(decls, root)| {
            let mut env = TypeEnv::new();
            for d in decls {
                env.declare(d);
            }
            (env, root)
        })
    })
}

/// A Tool declaration over such a model: up to four parameters, up to two
/// generic parameters its types may use.
pub fn arb_declaration() -> impl Strategy<Value = (Declaration, TypeEnv)> {
    (vec(0usize..=2, 0..=4), 0usize..=2).prop_flat_map(|(arities, generic)| {
        let arities = Arc::new(arities);
        let decls: Vec<BoxedStrategy<TypeDecl>> = (0..arities.len())
            .map(|i| arb_decl(i, arities.clone()))
            .collect();
        let generic: Vec<String> = ["T", "U"][..generic]
            .iter()
            .map(|g| (*g).to_owned())
            .collect();
        let types = arb_type(arities, generic.clone());
        let params = vec((select(FIELD_NAMES), doc(), types.clone()), 0..4);
        (decls, params, types.clone(), types, doc()).prop_map(
            move |(decls, params, ok, err, doc)| {
                let mut env = TypeEnv::new();
                for d in decls {
                    env.declare(d);
                }
                let mut seen = BTreeSet::new();
                let params = params
                    .into_iter()
                    .filter(|(name, _, _)| seen.insert(*name))
                    .map(|(name, doc, ty)| Param {
                        name: name.to_owned(),
                        doc,
                        ty,
                    })
                    .collect();
                let decl = Declaration {
                    identity: Identity::in_repository(
                        "github.com/acme/tools",
                        "1.4.0",
                        "search.flow",
                        "search",
                    ),
                    doc,
                    generic: generic.clone(),
                    params,
                    ok,
                    err,
                };
                (decl, env)
            },
        )
    })
}

/// The declarations of `env` that `roots` reach.
pub fn reachable<'a>(env: &TypeEnv, roots: impl IntoIterator<Item = &'a Type>) -> TypeEnv {
    fn walk(ty: &Type, env: &TypeEnv, out: &mut TypeEnv) {
        match ty {
            Type::List(t) | Type::Set(t) | Type::Option(t) => walk(t, env, out),
            Type::Dict(a, b) | Type::Result(a, b) => {
                walk(a, env, out);
                walk(b, env, out);
            }
            Type::Tuple(ts) => ts.iter().for_each(|t| walk(t, env, out)),
            Type::Named { identity, args } => {
                args.iter().for_each(|t| walk(t, env, out));
                if out.get(identity).is_some() {
                    return;
                }
                let Some(decl) = env.get(identity) else {
                    return;
                };
                out.declare(decl.clone());
                let fields =
                    |fs: &[Field], out: &mut TypeEnv| fs.iter().for_each(|f| walk(&f.ty, env, out));
                match &decl.body {
                    TypeBody::Record(fs) => fields(fs, out),
                    TypeBody::Enum(cs) => {
                        for c in cs {
                            match &c.payload {
                                Payload::Unit => {}
                                Payload::Value(t) => walk(t, env, out),
                                Payload::Fields(fs) => fields(fs, out),
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    let mut out = TypeEnv::new();
    for root in roots {
        walk(root, env, &mut out);
    }
    out
}

/// A seeded xorshift generator: the sampler's only entropy.
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed` (any value; zero is moved off).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    /// A number below `n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const TEXTS: &[&str] = &[
    "",
    "hello",
    "é\"\\\n\u{1}",
    "😂",
    "None",
    "2024-01-01T00:00:00Z",
];

fn substitute(ty: &Type, map: &BTreeMap<String, Type>) -> Type {
    let s = |t: &Type| substitute(t, map);
    match ty {
        Type::Param(name) => map.get(name).cloned().unwrap_or_else(|| ty.clone()),
        Type::List(t) => Type::list(s(t)),
        Type::Set(t) => Type::set(s(t)),
        Type::Option(t) => Type::option(s(t)),
        Type::Tuple(ts) => Type::Tuple(ts.iter().map(s).collect()),
        Type::Dict(k, v) => Type::dict(s(k), s(v)),
        Type::Result(a, b) => Type::result(s(a), s(b)),
        Type::Named { identity, args } => {
            Type::applied(identity.clone(), args.iter().map(s).collect())
        }
        other => other.clone(),
    }
}

/// Some raw JSON.
pub fn sample_json(rng: &mut Rng, depth: i32) -> JsonValue {
    let kinds = if depth > 0 { 6 } else { 4 };
    match rng.below(kinds) {
        0 => JsonValue::Null,
        1 => JsonValue::Bool(rng.next() % 2 == 0),
        2 => JsonValue::Number(Decimal::new(
            IBig::from(rng.next() as i64 % 100_000),
            -(rng.below(3) as i64),
        )),
        3 => JsonValue::String((*rng.pick(TEXTS)).into()),
        4 => JsonValue::Array(
            (0..rng.below(3))
                .map(|_| sample_json(rng, depth - 1))
                .collect(),
        ),
        _ => {
            let members: BTreeMap<String, JsonValue> = (0..rng.below(3))
                .map(|_| ((*rng.pick(TEXTS)).to_owned(), sample_json(rng, depth - 1)))
                .collect();
            JsonValue::Object(members.into_iter().map(|(k, v)| (k.into(), v)).collect())
        }
    }
}

/// A value of `ty` (free type parameters hold raw JSON), or `None` when the
/// sampler finds none within its depth (Never, a type with no finite
/// value).
pub fn sample(ty: &Type, env: &TypeEnv, rng: &mut Rng, depth: i32) -> Option<Value> {
    if depth < -6 {
        return None;
    }
    let d = depth - 1;
    let count = |rng: &mut Rng| if depth > 0 { rng.below(3) } else { 0 };
    Some(match ty {
        Type::Int => Value::Int(match rng.below(4) {
            0 => Int::zero(),
            1 => Int::from(-7i64),
            2 => Int::from(rng.next() as i64),
            _ => Int(IBig::from(10u8).pow(30)),
        }),
        Type::Decimal => Value::Decimal(Decimal::new(
            IBig::from(rng.next() as i64 % 1_000_000),
            -(rng.below(5) as i64),
        )),
        Type::Text => Value::Text((*rng.pick(TEXTS)).to_owned()),
        Type::Bool => Value::Bool(rng.next() % 2 == 0),
        Type::Bytes => Value::Bytes((0..rng.below(6)).map(|_| rng.next() as u8).collect()),
        Type::Instant => Value::Instant(Instant::from_unix_nanos(i128::from(rng.next() as i64))),
        Type::Duration => Value::Duration(Duration::from_nanos(i128::from(rng.next() as i32))),
        Type::List(t) => Value::List(
            (0..count(rng))
                .filter_map(|_| sample(t, env, rng, d))
                .collect(),
        ),
        Type::Set(t) => Value::set(
            (0..count(rng))
                .filter_map(|_| sample(t, env, rng, d))
                .collect(),
        ),
        Type::Tuple(ts) => Value::Tuple(
            ts.iter()
                .map(|t| sample(t, env, rng, d))
                .collect::<Option<Vec<_>>>()?,
        ),
        Type::Dict(k, v) => {
            let n = count(rng);
            if **k == Type::Text {
                Value::text_dict(
                    (0..n)
                        .filter_map(|_| {
                            let key = (*rng.pick(TEXTS)).to_owned();
                            sample(v, env, rng, d).map(|v| (key, v))
                        })
                        .collect(),
                )
            } else {
                Value::dict(
                    (0..n)
                        .filter_map(|_| Some((sample(k, env, rng, d)?, sample(v, env, rng, d)?)))
                        .collect(),
                )
            }
        }
        Type::Option(t) => {
            if depth <= 0 || rng.below(3) == 0 {
                Value::none()
            } else {
                sample(t, env, rng, d).map_or_else(Value::none, Value::some)
            }
        }
        Type::Result(a, b) => {
            let ok = |rng: &mut Rng| sample(a, env, rng, d).map(|v| Value::Result(Ok(Box::new(v))));
            let err =
                |rng: &mut Rng| sample(b, env, rng, d).map(|v| Value::Result(Err(Box::new(v))));
            if rng.below(2) == 0 {
                ok(rng).or_else(|| err(rng))?
            } else {
                err(rng).or_else(|| ok(rng))?
            }
        }
        Type::Json | Type::Param(_) => Value::Json(sample_json(rng, 2)),
        Type::HostToken => Value::HostToken(sample_json(rng, 1)),
        Type::Never => return None,
        Type::Named { identity, args } => {
            let decl = env.get(identity)?;
            let map: BTreeMap<String, Type> = decl
                .params
                .iter()
                .cloned()
                .zip(args.iter().cloned())
                .collect();
            let fields = |fs: &[Field], rng: &mut Rng| -> Option<Vec<(String, Value)>> {
                fs.iter()
                    .map(|f| {
                        Some((
                            f.name.clone(),
                            sample(&substitute(&f.ty, &map), env, rng, d)?,
                        ))
                    })
                    .collect()
            };
            match &decl.body {
                TypeBody::Record(fs) => Value::Record(fields(fs, rng)?),
                TypeBody::Enum(cs) if cs.is_empty() => return None,
                TypeBody::Enum(cs) => {
                    let start = rng.below(cs.len());
                    (0..cs.len()).find_map(|k| {
                        let c = &cs[(start + k) % cs.len()];
                        let payload = match &c.payload {
                            Payload::Unit => EnumPayload::Unit,
                            Payload::Value(t) => EnumPayload::Value(Box::new(sample(
                                &substitute(t, &map),
                                env,
                                rng,
                                d,
                            )?)),
                            Payload::Fields(fs) => EnumPayload::Fields(fields(fs, rng)?),
                        };
                        Some(Value::Enum {
                            constructor: c.name.clone(),
                            payload,
                        })
                    })?
                }
            }
        }
    })
}
