//! Flow values of a type, built from a fuzzer's bytes, and Flow types read
//! off a JSON text (so a real payload as a seed decodes past its first
//! member).

use std::collections::BTreeMap;

use arbitrary::{Result, Unstructured};
use limen_core::flow::{
    Constructor, Decimal, Duration, EnumPayload, Field, Instant, Int, JsonValue, Payload, Type,
    TypeBody, TypeDecl, TypeEnv, Value,
};
use serde_json::Value as Json;

use crate::model::ident;
use crate::SplitMix;

/// Texts with characters the canonical form escapes or that look like
/// other spellings.
pub const TEXTS: &[&str] = &[
    "",
    "hello",
    "é\"\\\n\u{1}\u{7f}",
    "😂",
    "None",
    "Some",
    "2024-01-01T00:00:00Z",
    "PT5S",
    "\u{2028}",
];

fn text(u: &mut Unstructured) -> Result<String> {
    Ok(if u.ratio(1, 4)? {
        // Any short UTF-8 the fuzzer makes.
        let n = u.int_in_range(0..=8)?;
        (0..n)
            .map(|_| u.arbitrary::<char>())
            .collect::<Result<String>>()?
    } else {
        TEXTS[u.choose_index(TEXTS.len())?].to_owned()
    })
}

fn decimal(u: &mut Unstructured) -> Result<Decimal> {
    let coefficient = match u.choose_index(4)? {
        0 => 0,
        1 => i64::from(u.arbitrary::<i16>()?),
        2 => u.arbitrary::<i64>()?,
        _ => i64::MIN,
    };
    let exponent = i64::from(u.arbitrary::<i8>()?) * if u.ratio(1, 8)? { 7 } else { 1 };
    Ok(Decimal::from_i64_parts(coefficient, exponent))
}

/// Some raw JSON, `depth` levels deep at most.
pub fn json(u: &mut Unstructured, depth: u32) -> Result<JsonValue> {
    let kinds = if depth > 0 { 6 } else { 4 };
    Ok(match u.choose_index(kinds)? {
        0 => JsonValue::Null,
        1 => JsonValue::Bool(u.arbitrary()?),
        2 => JsonValue::Number(decimal(u)?),
        3 => JsonValue::string(&text(u)?),
        4 => {
            let n = u.int_in_range(0..=3)?;
            JsonValue::array((0..n).map(|_| json(u, depth - 1)).collect::<Result<_>>()?)
        }
        _ => {
            let n = u.int_in_range(0..=3)?;
            let members: BTreeMap<String, JsonValue> = (0..n)
                .map(|_| Ok((text(u)?, json(u, depth - 1)?)))
                .collect::<Result<_>>()?;
            JsonValue::object(members.into_iter().collect()).expect("keys of a map are unique")
        }
    })
}

/// How many values one [`value`] call builds at most: a record of three
/// records of three records… is exponential in its depth.
pub const BUDGET: usize = 2000;

/// Type parameters bound where a type is used: `names[i]` is `args[i]`,
/// which is written in the `parent` scope. Looked up lazily, as the decoder
/// does, since substituting eagerly grows a non-regular recursive type
/// (`T<A> { next: T<List<A>> }`) without bound.
#[derive(Clone, Copy, Debug)]
pub struct Bindings<'a> {
    /// The parameters' names.
    pub names: &'a [String],
    /// The types they stand for.
    pub args: &'a [Type],
    /// Where `args` are written.
    pub parent: Option<&'a Bindings<'a>>,
}

impl Bindings<'_> {
    /// No parameter bound.
    pub const NONE: Bindings<'static> = Bindings {
        names: &[],
        args: &[],
        parent: None,
    };
}

/// A value of `ty`, its parameters bound by `scope`, or `None` when none is
/// found within the depth and [`BUDGET`] (Never, an enum without
/// constructors, a recursive type with no small value in reach). A free
/// parameter holds raw JSON.
pub fn value(
    u: &mut Unstructured,
    ty: &Type,
    env: &TypeEnv,
    scope: &Bindings,
) -> Result<Option<Value>> {
    let mut budget = BUDGET;
    build(u, ty, env, scope, 0, &mut budget)
}

/// What `ty` stands for in `scope`, parameters followed to their binding.
fn resolve<'t>(mut ty: &'t Type, scope: &'t Bindings<'t>) -> &'t Type {
    let mut scope = scope;
    while let Type::Param(name) = ty {
        match scope.names.iter().position(|n| n == name) {
            Some(i) => {
                ty = &scope.args[i];
                scope = scope.parent.unwrap_or(&Bindings::NONE);
            }
            None => break,
        }
    }
    ty
}

fn build(
    u: &mut Unstructured,
    ty: &Type,
    env: &TypeEnv,
    scope: &Bindings,
    depth: u32,
    budget: &mut usize,
) -> Result<Option<Value>> {
    if depth > 12 || *budget == 0 {
        return Ok(None);
    }
    *budget -= 1;
    let d = depth + 1;
    let count = |u: &mut Unstructured| -> Result<usize> {
        Ok(if depth < 6 { u.int_in_range(0..=3)? } else { 0 })
    };
    Ok(Some(match ty {
        Type::Int => Value::Int(match u.choose_index(4)? {
            0 => Int::zero(),
            1 => Int::from(i64::from(u.arbitrary::<i8>()?)),
            2 => Int::from(u.arbitrary::<i64>()?),
            _ => Int::from(u.arbitrary::<i128>()?),
        }),
        Type::Decimal => Value::Decimal(decimal(u)?),
        Type::Text => Value::Text(text(u)?),
        Type::Bool => Value::Bool(u.arbitrary()?),
        Type::Bytes => {
            let n = u.int_in_range(0..=7)?;
            Value::Bytes(u.bytes(n)?.to_vec())
        }
        Type::Instant => Value::Instant(Instant::from_unix_nanos(match u.choose_index(3)? {
            0 => i128::from(u.arbitrary::<i64>()?),
            1 => i128::from(u.arbitrary::<i32>()?) * 1_000_000_000,
            // Years far outside 0000..9999, within the model's range.
            _ => u.arbitrary::<i128>()? >> 2,
        })),
        Type::Duration => Value::Duration(Duration::from_nanos(i128::from(u.arbitrary::<i64>()?))),
        Type::List(t) => {
            let mut items = Vec::new();
            for _ in 0..count(u)? {
                items.extend(build(u, t, env, scope, d, budget)?);
            }
            Value::List(items)
        }
        Type::Set(t) => {
            let mut items = Vec::new();
            for _ in 0..count(u)? {
                items.extend(build(u, t, env, scope, d, budget)?);
            }
            Value::set(items)
        }
        Type::Tuple(ts) => {
            let mut items = Vec::new();
            for t in ts {
                match build(u, t, env, scope, d, budget)? {
                    Some(v) => items.push(v),
                    None => return Ok(None),
                }
            }
            Value::Tuple(items)
        }
        Type::Dict(k, v) => {
            let n = count(u)?;
            if resolve(k, scope) == &Type::Text {
                let mut entries = Vec::new();
                for _ in 0..n {
                    let key = text(u)?;
                    entries.extend(build(u, v, env, scope, d, budget)?.map(|v| (key, v)));
                }
                Value::text_dict(entries)
            } else {
                let mut entries = Vec::new();
                for _ in 0..n {
                    if let (Some(a), Some(b)) = (
                        build(u, k, env, scope, d, budget)?,
                        build(u, v, env, scope, d, budget)?,
                    ) {
                        entries.push((a, b));
                    }
                }
                Value::dict(entries)
            }
        }
        Type::Option(t) => {
            if depth >= 6 || u.ratio(1, 3)? {
                Value::none()
            } else {
                build(u, t, env, scope, d, budget)?.map_or_else(Value::none, Value::some)
            }
        }
        Type::Result(a, b) => {
            let (first, second, ok) = if u.arbitrary()? {
                (a, b, true)
            } else {
                (b, a, false)
            };
            let (v, ok) = match build(u, first, env, scope, d, budget)? {
                Some(v) => (v, ok),
                None => match build(u, second, env, scope, d, budget)? {
                    Some(v) => (v, !ok),
                    None => return Ok(None),
                },
            };
            Value::Result(if ok {
                Ok(Box::new(v))
            } else {
                Err(Box::new(v))
            })
        }
        Type::Param(name) => match scope.names.iter().position(|n| n == name) {
            Some(i) => {
                let parent = scope.parent.unwrap_or(&Bindings::NONE);
                return build(u, &scope.args[i], env, parent, d, budget);
            }
            None => Value::Json(json(u, 2)?),
        },
        Type::Json => Value::Json(json(u, 2)?),
        Type::HostToken => Value::HostToken(json(u, 1)?),
        Type::Never => return Ok(None),
        Type::Named { identity, args } => {
            let Some(decl) = env.get(identity) else {
                return Ok(None);
            };
            let inner = Bindings {
                names: &decl.params,
                args,
                parent: Some(scope),
            };
            let fields = |u: &mut Unstructured,
                          fs: &[Field],
                          budget: &mut usize|
             -> Result<Option<Vec<(String, Value)>>> {
                let mut out = Vec::new();
                for f in fs {
                    match build(u, &f.ty, env, &inner, d, budget)? {
                        Some(v) => out.push((f.name.clone(), v)),
                        None => return Ok(None),
                    }
                }
                Ok(Some(out))
            };
            match &decl.body {
                TypeBody::Record(fs) => match fields(u, fs, budget)? {
                    Some(fs) => Value::Record(fs),
                    None => return Ok(None),
                },
                TypeBody::Enum(cs) if cs.is_empty() => return Ok(None),
                TypeBody::Enum(cs) => {
                    let start = u.choose_index(cs.len())?;
                    for k in 0..cs.len() {
                        let c = &cs[(start + k) % cs.len()];
                        let payload = match &c.payload {
                            Payload::Unit => Some(EnumPayload::Unit),
                            Payload::Value(t) => build(u, t, env, &inner, d, budget)?
                                .map(|v| EnumPayload::Value(Box::new(v))),
                            Payload::Fields(fs) => fields(u, fs, budget)?.map(EnumPayload::Fields),
                        };
                        if let Some(payload) = payload {
                            return Ok(Some(Value::Enum {
                                constructor: c.name.clone(),
                                payload,
                            }));
                        }
                    }
                    return Ok(None);
                }
            }
        }
    }))
}

/// A type that `v` could be decoded at, read off it and changed here and
/// there by `rng`; records and enums it needs are declared in `env`.
pub fn infer(v: &Json, env: &mut TypeEnv, rng: &mut SplitMix, depth: u32) -> Type {
    let r = rng.next_u64();
    if depth > 8 || r.is_multiple_of(32) {
        return Type::Json;
    }
    let declare = |env: &mut TypeEnv, body: TypeBody| {
        let identity = ident(100 + env.len());
        env.declare(TypeDecl {
            identity: identity.clone(),
            doc: None,
            params: Vec::new(),
            body,
        });
        Type::named(identity)
    };
    match v {
        Json::Null => Type::option(Type::Int),
        Json::Bool(_) => Type::Bool,
        Json::Number(n) if n.is_i64() || n.is_u64() => {
            if r >> 8 & 3 == 0 {
                Type::Decimal
            } else {
                Type::Int
            }
        }
        Json::Number(_) => Type::Decimal,
        Json::String(s) => {
            if s.starts_with("PT") {
                Type::Duration
            } else if s.len() >= 20 && s.as_bytes().get(10) == Some(&b'T') {
                Type::Instant
            } else if r >> 8 & 7 == 0 {
                Type::Bytes
            } else if r >> 8 & 7 == 1 {
                // A unit constructor named by the string.
                let other = if s == "Z" { "Y" } else { "Z" };
                declare(
                    env,
                    TypeBody::Enum(vec![Constructor::unit(s), Constructor::unit(other)]),
                )
            } else {
                Type::Text
            }
        }
        Json::Array(items) => {
            let first = items
                .first()
                .map_or(Type::Int, |i| infer(i, env, rng, depth + 1));
            let pairs = !items.is_empty()
                && items
                    .iter()
                    .all(|i| matches!(i, Json::Array(p) if p.len() == 2));
            match r >> 8 & 3 {
                0 => Type::set(first),
                1 => Type::Tuple(
                    items
                        .iter()
                        .map(|i| infer(i, env, rng, depth + 1))
                        .collect(),
                ),
                2 if pairs => {
                    let Json::Array(p) = &items[0] else {
                        unreachable!()
                    };
                    Type::dict(
                        infer(&p[0], env, rng, depth + 1),
                        infer(&p[1], env, rng, depth + 1),
                    )
                }
                _ => Type::list(first),
            }
        }
        Json::Object(map) => match r >> 8 & 3 {
            0 => {
                let first = map
                    .values()
                    .next()
                    .map_or(Type::Int, |v| infer(v, env, rng, depth + 1));
                Type::dict(Type::Text, first)
            }
            1 if map.len() == 1 => {
                let (k, v) = map.iter().next().expect("one member");
                let payload = Payload::Value(infer(v, env, rng, depth + 1));
                let other = if k == "Z" { "Y" } else { "Z" };
                declare(
                    env,
                    TypeBody::Enum(vec![
                        Constructor {
                            name: k.clone(),
                            doc: None,
                            payload,
                        },
                        Constructor::unit(other),
                    ]),
                )
            }
            _ => {
                let mut fields = Vec::new();
                for (k, v) in map {
                    let r = rng.next_u64();
                    if r.is_multiple_of(8) {
                        // A member no field names: passed over.
                        continue;
                    }
                    let ty = infer(v, env, rng, depth + 1);
                    let ty = if r >> 8 & 7 == 0 {
                        Type::option(ty)
                    } else {
                        ty
                    };
                    fields.push(Field::new(k, ty));
                }
                if r >> 16 & 7 == 0 {
                    // A field the text does not give: missing, or None.
                    let ty = if r >> 19 & 1 == 0 {
                        Type::option(Type::Int)
                    } else {
                        Type::Int
                    };
                    if fields.iter().all(|f| f.name != "zz") {
                        fields.push(Field::new("zz", ty));
                    }
                }
                declare(env, TypeBody::Record(fields))
            }
        },
    }
}
