//! Random Flow tools listings, for property tests of the toolkits'
//! generators (`flow toolkit python`, `flow toolkit typescript`): a
//! language's generated code must type-check, and convert values both
//! ways, for every type the listing grammar can produce.
//!
//! Language-neutral on purpose (the TypeScript generator's test uses this
//! very file): it knows nothing of any target language. A listing is built
//! through core's types (`TypeDecl`, `Declaration`, `Tool`) and written by
//! core's listing writer (`describe_result`), so it is a listing `flow
//! tools` could print. Deterministic: one seed, one listing, on every
//! machine ([`Rng`] is splitmix64, no entropy).
//!
//! Every listing ([`random_listing`]) holds:
//! - a record `Everything` reaching every type form: each scalar (`Int`,
//!   `Decimal`, `Text`, `Bool`, `Bytes`, `Instant`, `Duration`,
//!   `json.Value`, a host token, `Never`), `Option` (nested too), `List`,
//!   `Set`, `Dict` with `Text` and with non-`Text` keys, tuples of 0, 1 and
//!   3 items, `Result`, and named types applied to arguments;
//! - random records and enums (constructors with no payload, a positional
//!   payload and named fields; now and then none at all), some generic, some
//!   recursive (directly and through each other), spread over several
//!   files (repository files and an absolute path) where the same name is
//!   declared in more than one file;
//! - names chosen to clash with target languages: keywords (`class`,
//!   `None`, `async`, `function`, `self`), builtins and common type names
//!   (`int`, `list`, `String`, `Map`, `Promise`), the generated code's own
//!   names (`Tools`, `LISTING`, `serve`, `cx`, `value`, `from_value`), and
//!   doc comments holding quotes, backslashes and comment terminators;
//! - random Tools (generic ones among them, names repeated across files),
//!   and one echo Tool `(value: T) -> T` per declared type ([`Listing::echoes`]),
//!   so a test can round-trip a value of every type through the generated
//!   conversions ([`random_value`] makes one).

#![allow(dead_code)]

use std::sync::Arc;

use limen_core::flow::tool::listing::describe_result;
use limen_core::flow::tool::Tool;
use limen_core::flow::Payload;
use limen_core::flow::{
    Constructor, Declaration, Field, Identity, Param, Type, TypeBody, TypeDecl, TypeEnv,
};

/// splitmix64: small, deterministic, good enough to pick shapes.
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5eed_1157_0000_0030)
    }

    /// The next 64 random bits.
    pub fn bits(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.bits() % n as u64) as usize
    }

    /// True one time in `n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    /// One of `items`.
    pub fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())].clone()
    }
}

/// A random listing and what a test needs to use it.
pub struct Listing {
    /// The listing's JSON text, as `flow tools` prints it.
    pub text: String,
    /// Its Tools.
    pub tools: Vec<Arc<Tool>>,
    /// Every declared type.
    pub env: TypeEnv,
    /// The echo Tools, `(value: T) -> T`, one per declared type (a generic
    /// one applied to scalar arguments).
    pub echoes: Vec<Identity>,
}

const REPO: &str = "example.com/random";
const VERSION: &str = "1.0.0";

/// The files declarations are spread over: repository files in folders and
/// an absolute path.
const FILES: &[&str] = &["a.flow", "b.flow", "nested/c.flow", "/abs/d.flow"];

/// Type names: ordinary ones, and ones that clash with a target language's
/// own types, keywords and the generated code's names.
const TYPE_NAMES: &[&str] = &[
    "Note",
    "Shape",
    "Tree",
    "Page",
    "Node",
    "Item",
    "Tools",
    "LISTING",
    "List",
    "Dict",
    "Set",
    "Option",
    "Result",
    "Some",
    "None",
    "Ok",
    "Err",
    "Any",
    "String",
    "Map",
    "Promise",
    "Object",
    "Error",
    "Decimal",
    "Instant",
    "Duration",
    "Context",
    "Failed",
    "JsonValue",
    "HostToken",
    "class",
    "int",
    "serve",
    "T",
    "Value",
    "Never",
    "Symbol",
    "true",
];

/// Field, parameter and constructor-field names.
const FIELD_NAMES: &[&str] = &[
    "text",
    "count",
    "items",
    "value",
    "next",
    "class",
    "type",
    "self",
    "cx",
    "None",
    "True",
    "from_value",
    "to_value",
    "int",
    "str",
    "list",
    "dict",
    "tuple",
    "bool",
    "bytes",
    "async",
    "await",
    "function",
    "constructor",
    "prototype",
    "default",
    "new",
    "delete",
    "lambda",
    "def",
    "f",
    "c",
    "p",
    "x",
    "e",
    "ok",
    "args",
    "tools",
    "T",
    "Note",
    "_hidden",
    "camelCase",
    "snake_case",
    "isinstance",
    "object",
    "Some",
    "label",
];

/// Constructor names.
const CONSTRUCTOR_NAMES: &[&str] = &[
    "Dot", "Circle", "Rect", "None", "Some", "Ok", "Err", "True", "Value", "Leaf", "Branch",
    "Empty", "class", "Default", "Tools", "Item", "new",
];

/// Type parameter names.
const PARAM_NAMES: &[&str] = &["T", "U", "K", "V", "E", "Item", "int", "Note", "x", "value"];

/// Tool names (repeated across files).
const TOOL_NAMES: &[&str] = &[
    "echo",
    "add",
    "search",
    "serve",
    "handlers",
    "class",
    "cx",
    "self",
    "then",
    "constructor",
    "to_value",
    "int",
    "list",
    "LISTING",
    "Tools",
];

/// Doc comments, `None` most of the time.
const DOCS: &[&str] = &[
    "A plain doc comment.",
    "Two lines.\nThe second one.",
    "Quotes: \"\"\" and ''' and `backticks` and a trailing quote\"",
    "A backslash \\ and \\n and \\u0041.",
    "Comment ends: */ and /* and --> and #.",
    "Non-ASCII: café, 日本, 😀.",
    "Ends with a backslash \\",
];

fn doc(rng: &mut Rng) -> Option<String> {
    if rng.one_in(3) {
        Some(rng.pick(DOCS).to_string())
    } else {
        None
    }
}

fn identity(file: &str, name: &str) -> Identity {
    if file.starts_with('/') {
        Identity::at_path(file, name)
    } else {
        Identity::in_repository(REPO, VERSION, file, name)
    }
}

/// Every scalar type.
pub const SCALARS: &[Type] = &[
    Type::Int,
    Type::Decimal,
    Type::Text,
    Type::Bool,
    Type::Bytes,
    Type::Instant,
    Type::Duration,
    Type::Json,
    Type::HostToken,
];

/// What a random type may name: the declared types (with their parameter
/// counts) and the type parameters in scope.
struct Scope<'a> {
    named: &'a [(Identity, usize)],
    params: &'a [String],
}

fn random_type(rng: &mut Rng, scope: &Scope, depth: usize) -> Type {
    let leaf = depth >= 3 || rng.one_in(3);
    if leaf {
        return match rng.below(10) {
            0 if !scope.params.is_empty() => Type::Param(rng.pick(scope.params)),
            1 | 2 if !scope.named.is_empty() => named(rng, scope, depth),
            3 if rng.one_in(4) => Type::Never,
            _ => rng.pick(SCALARS),
        };
    }
    let t = |rng: &mut Rng| random_type(rng, scope, depth + 1);
    match rng.below(10) {
        0 => Type::list(t(rng)),
        1 => Type::set(t(rng)),
        2 => Type::dict(Type::Text, t(rng)),
        3 => Type::dict(t(rng), t(rng)),
        4 => Type::option(t(rng)),
        5 => Type::result(t(rng), t(rng)),
        6 => Type::Tuple((0..rng.below(4)).map(|_| t(rng)).collect()),
        7 | 8 if !scope.named.is_empty() => named(rng, scope, depth),
        _ => rng.pick(SCALARS),
    }
}

fn named(rng: &mut Rng, scope: &Scope, depth: usize) -> Type {
    let (id, n) = rng.pick(scope.named);
    Type::Named {
        identity: id,
        args: (0..n).map(|_| random_type(rng, scope, depth + 1)).collect(),
    }
}

/// Names from `pool`, `n` of them (fewer if the pool is short), distinct.
fn distinct(rng: &mut Rng, pool: &[&str], n: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for _ in 0..n * 3 {
        if out.len() == n {
            break;
        }
        let name = rng.pick(pool).to_string();
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

fn fields(rng: &mut Rng, scope: &Scope, n: usize) -> Vec<Field> {
    distinct(rng, FIELD_NAMES, n)
        .into_iter()
        .map(|name| {
            let mut f = Field::new(&name, random_type(rng, scope, 1));
            f.doc = doc(rng);
            f
        })
        .collect()
}

/// The record reaching every type form (`named` applied where it can be).
fn everything(named: &[(Identity, usize)]) -> TypeDecl {
    let mut fs: Vec<Field> = SCALARS
        .iter()
        .enumerate()
        .map(|(i, t)| Field::new(&format!("scalar{i}"), t.clone()))
        .collect();
    let more = [
        Type::list(Type::Never),
        Type::option(Type::Int),
        Type::option(Type::option(Type::Text)),
        Type::list(Type::list(Type::Decimal)),
        Type::set(Type::Text),
        Type::set(Type::Tuple(vec![Type::Int, Type::Bool])),
        Type::dict(Type::Text, Type::Bytes),
        Type::dict(Type::Int, Type::Instant),
        Type::dict(Type::Tuple(vec![Type::Text, Type::Int]), Type::Duration),
        Type::Tuple(vec![]),
        Type::Tuple(vec![Type::Json]),
        Type::Tuple(vec![Type::Int, Type::Text, Type::HostToken]),
        Type::result(Type::Text, Type::Int),
        Type::result(Type::option(Type::Int), Type::list(Type::Text)),
        Type::param("T"),
        Type::list(Type::param("T")),
    ];
    fs.extend(
        more.into_iter()
            .enumerate()
            .map(|(i, t)| Field::new(&format!("form{i}"), t)),
    );
    for (i, (id, n)) in named.iter().enumerate() {
        let args = (0..*n)
            .map(|k| SCALARS[k % SCALARS.len()].clone())
            .collect();
        fs.push(Field::new(
            &format!("named{i}"),
            Type::option(Type::Named {
                identity: id.clone(),
                args,
            }),
        ));
    }
    TypeDecl::record(identity("all.flow", "Everything"), fs)
        .doc("Every type form the listing grammar writes.")
        .generic(&["T"])
}

/// The listing of seed `seed`.
pub fn random_listing(seed: u64) -> Listing {
    let mut rng = Rng::new(seed);
    // The declared types' identities and parameters first, so bodies can
    // name any of them, themselves included (recursion).
    let count = 4 + rng.below(5);
    let mut heads: Vec<(Identity, Vec<String>, bool)> = Vec::new();
    while heads.len() < count {
        let id = identity(rng.pick(FILES), rng.pick(TYPE_NAMES));
        if heads.iter().any(|(h, _, _)| h == &id) || id.name == "Everything" {
            continue;
        }
        let params = match rng.below(5) {
            0 => distinct(&mut rng, PARAM_NAMES, 1),
            1 => distinct(&mut rng, PARAM_NAMES, 2),
            _ => Vec::new(),
        };
        heads.push((id, params, rng.one_in(2)));
    }
    let named: Vec<(Identity, usize)> = heads
        .iter()
        .map(|(id, params, _)| (id.clone(), params.len()))
        .collect();
    let mut env = TypeEnv::new();
    for (id, params, record) in &heads {
        let scope = Scope {
            named: &named,
            params,
        };
        let mut decl = if *record {
            let n = rng.below(5);
            TypeDecl::record(id.clone(), fields(&mut rng, &scope, n))
        } else {
            let n = if rng.one_in(10) { 0 } else { 1 + rng.below(4) };
            let constructors = distinct(&mut rng, CONSTRUCTOR_NAMES, n)
                .into_iter()
                .map(|name| {
                    let mut c = match rng.below(3) {
                        0 => Constructor::unit(&name),
                        1 => Constructor::value(&name, random_type(&mut rng, &scope, 1)),
                        _ => {
                            let k = 1 + rng.below(3);
                            Constructor::fields(&name, fields(&mut rng, &scope, k))
                        }
                    };
                    c.doc = doc(&mut rng);
                    c
                })
                .collect();
            TypeDecl::enumeration(id.clone(), constructors)
        };
        decl.doc = doc(&mut rng);
        decl.params = params.clone();
        env.declare(decl);
    }
    env.declare(everything(&named));
    let mut all_named = named.clone();
    all_named.push((identity("all.flow", "Everything"), 1));

    let mut decls: Vec<Declaration> = Vec::new();
    let mut ids: Vec<Identity> = Vec::new();
    for _ in 0..3 + rng.below(4) {
        let id = identity(rng.pick(FILES), rng.pick(TOOL_NAMES));
        if ids.contains(&id) {
            continue;
        }
        let generic = if rng.one_in(3) {
            vec!["T".to_owned()]
        } else {
            Vec::new()
        };
        let scope = Scope {
            named: &all_named,
            params: &generic,
        };
        let n = rng.below(4);
        let params = distinct(&mut rng, FIELD_NAMES, n)
            .into_iter()
            .map(|name| Param::new(&name, random_type(&mut rng, &scope, 0)))
            .collect();
        let mut d = Declaration::new(
            id.clone(),
            params,
            random_type(&mut rng, &scope, 0),
            random_type(&mut rng, &scope, 0),
        );
        d.doc = doc(&mut rng);
        d.generic = generic;
        ids.push(id);
        decls.push(d);
    }
    let mut echoes = Vec::new();
    for (i, (id, n)) in all_named.iter().enumerate() {
        let args = (0..*n)
            .map(|k| SCALARS[(i + k) % SCALARS.len()].clone())
            .collect();
        let ty = Type::Named {
            identity: id.clone(),
            args,
        };
        let echo = identity("echo.flow", &format!("echo{i}"));
        decls.push(Declaration::new(
            echo.clone(),
            vec![Param::new("value", ty.clone())],
            ty,
            Type::Text,
        ));
        echoes.push(echo);
    }
    let tools: Vec<Arc<Tool>> = decls
        .into_iter()
        .map(|d| {
            let at = d.identity.to_string();
            Arc::new(Tool::new(d, env.clone()).unwrap_or_else(|e| panic!("seed {seed}: {at}: {e}")))
        })
        .collect();
    let text = serde_json::to_string_pretty(&describe_result(&tools)).expect("a listing") + "\n";
    Listing {
        text,
        tools,
        env,
        echoes,
    }
}

/// A random JSON text of a value of `ty` (named types in `env`, type
/// parameters bound by `bound`), as § Value encoding writes it, or `None`
/// where none was found within the depth (`Never`, an enum without
/// constructors, a type that holds itself). Sets and non-Text dicts hold
/// at most one element, so they never hold one twice. Text, not a
/// `serde_json::Value`, so integers past 2^64 stay exact.
pub fn random_value(
    rng: &mut Rng,
    ty: &Type,
    env: &TypeEnv,
    bound: &[(String, Type)],
    depth: usize,
) -> Option<String> {
    if depth > 12 {
        // A record that holds itself through required fields: give up.
        return None;
    }
    let deep = depth > 4;
    let v = |t: &Type, rng: &mut Rng| random_value(rng, t, env, bound, depth + 1);
    let s = |x: &str| serde_json::to_string(x).expect("a string");
    Some(match ty {
        Type::Int => match rng.below(4) {
            0 => "0".into(),
            1 => "-7".into(),
            2 => "340282366920938463463374607431768211457".into(),
            _ => (rng.bits() >> 1).to_string(),
        },
        Type::Decimal => rng
            .pick(&[
                "1.5",
                "-0.1234567890123456789012345678901234567890",
                "0",
                "12e3",
            ])
            .to_string(),
        Type::Text => s(rng.pick(&["", "text", "café \"quoted\" \\ 😀", "None"])),
        Type::Bool => rng.pick(&["true", "false"]).to_string(),
        Type::Bytes => s(rng.pick(&["", "QQ==", "AAEC"])),
        Type::Instant => s(rng.pick(&["2024-02-29T12:00:00Z", "1970-01-01T00:00:00.000000001Z"])),
        Type::Duration => s(rng.pick(&["PT0S", "PT-1.5S", "PT86400S"])),
        Type::Json | Type::HostToken => rng
            .pick(&["null", r#"{"a":[1,"b",true,1.5]}"#, "12", "\"x\""])
            .to_string(),
        Type::Never => return None,
        Type::List(item) | Type::Set(item) => {
            let n = if deep {
                0
            } else if matches!(ty, Type::Set(_)) {
                rng.below(2)
            } else {
                rng.below(3)
            };
            let mut out = Vec::new();
            for _ in 0..n {
                if let Some(x) = v(item, rng) {
                    out.push(x);
                }
            }
            format!("[{}]", out.join(","))
        }
        Type::Tuple(items) => {
            let mut out = Vec::new();
            for t in items {
                out.push(v(t, rng)?);
            }
            format!("[{}]", out.join(","))
        }
        Type::Dict(k, val) if **k == Type::Text => match (deep || rng.one_in(2), v(val, rng)) {
            (false, Some(x)) => format!("{{\"key\":{x}}}"),
            _ => "{}".into(),
        },
        Type::Dict(k, val) => {
            if !deep && rng.one_in(2) {
                if let (Some(a), Some(b)) = (v(k, rng), v(val, rng)) {
                    return Some(format!("[[{a},{b}]]"));
                }
            }
            "[]".into()
        }
        Type::Option(inner) => {
            if deep || rng.one_in(2) {
                "\"None\"".into()
            } else {
                match v(inner, rng) {
                    Some(x) => format!("{{\"Some\":{x}}}"),
                    None => "\"None\"".into(),
                }
            }
        }
        Type::Result(ok, err) => {
            let first = rng.one_in(2);
            let (a, b) = if first { ("Ok", ok) } else { ("Err", err) };
            match v(b, rng) {
                Some(x) => format!("{{\"{a}\":{x}}}"),
                None => {
                    let (a, b) = if first { ("Err", err) } else { ("Ok", ok) };
                    format!("{{\"{a}\":{}}}", v(b, rng)?)
                }
            }
        }
        Type::Param(p) => {
            let t = bound.iter().find(|(n, _)| n == p).map(|(_, t)| t.clone())?;
            return random_value(rng, &t, env, &[], depth);
        }
        Type::Named { identity, args } => {
            let decl = env.get(identity)?;
            let inner: Vec<(String, Type)> = decl
                .params
                .iter()
                .cloned()
                .zip(args.iter().map(|a| close(a, bound)))
                .collect();
            let mut w = |t: &Type, rng: &mut Rng| random_value(rng, t, env, &inner, depth + 1);
            match &decl.body {
                TypeBody::Record(fs) => record(rng, fs, &mut w)?,
                TypeBody::Enum(cs) => {
                    if cs.is_empty() {
                        return None;
                    }
                    let start = rng.below(cs.len());
                    let mut found = None;
                    for k in 0..cs.len() {
                        let c = &cs[(start + k) % cs.len()];
                        let made = match &c.payload {
                            Payload::Unit => Some(s(&c.name)),
                            Payload::Value(t) if !deep => {
                                w(t, rng).map(|x| format!("{{{}:{x}}}", s(&c.name)))
                            }
                            Payload::Fields(fs) if !deep => {
                                record(rng, fs, &mut w).map(|m| format!("{{{}:{m}}}", s(&c.name)))
                            }
                            _ => None,
                        };
                        if made.is_some() {
                            found = made;
                            break;
                        }
                    }
                    found?
                }
            }
        }
    })
}

/// A record's (or named constructor's) fields as a JSON object: an Option
/// field absent or its inner value, every other field its value.
fn record(
    rng: &mut Rng,
    fs: &[Field],
    w: &mut dyn FnMut(&Type, &mut Rng) -> Option<String>,
) -> Option<String> {
    let mut members = Vec::new();
    for f in fs {
        let key = serde_json::to_string(&f.name).expect("a string");
        match &f.ty {
            Type::Option(inner) => {
                if rng.one_in(2) {
                    if let Some(x) = w(inner, rng) {
                        members.push(format!("{key}:{x}"));
                    }
                }
            }
            t => members.push(format!("{key}:{}", w(t, rng)?)),
        }
    }
    Some(format!("{{{}}}", members.join(",")))
}

/// `ty` with the parameters of `bound` substituted.
fn close(ty: &Type, bound: &[(String, Type)]) -> Type {
    let c = |t: &Type| close(t, bound);
    match ty {
        Type::Param(p) => bound
            .iter()
            .find(|(n, _)| n == p)
            .map(|(_, t)| t.clone())
            .unwrap_or_else(|| ty.clone()),
        Type::List(x) => Type::list(c(x)),
        Type::Set(x) => Type::set(c(x)),
        Type::Option(x) => Type::option(c(x)),
        Type::Dict(a, b) => Type::dict(c(a), c(b)),
        Type::Result(a, b) => Type::result(c(a), c(b)),
        Type::Tuple(items) => Type::Tuple(items.iter().map(c).collect()),
        Type::Named { identity, args } => Type::Named {
            identity: identity.clone(),
            args: args.iter().map(c).collect(),
        },
        other => other.clone(),
    }
}
