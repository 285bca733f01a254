//! Flow type models built from a fuzzer's bytes: up to four named records
//! and enums (generic, recursive, referring to each other) and a type over
//! them, with the odd names and identities a schema must carry exactly.
//!
//! The same vocabulary as the core's property tests
//! (`core/tests/support`), driven by coverage instead of proptest's
//! sampler.

use arbitrary::{Result, Unstructured};
use limen_core::flow::{
    Constructor, Declaration, Field, Identity, Param, Payload, Type, TypeBody, TypeDecl, TypeEnv,
};

/// Field names: keyword look-alikes, a space, letters outside ASCII and
/// outside the BMP (whose code-point and UTF-16 orders differ).
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
/// Constructor names, including Option's and Result's own.
pub const CONSTRUCTOR_NAMES: &[&str] = &["A", "B", "None", "Some", "Ok", "Err", "C d"];
/// Doc comments, with characters the canonical text escapes.
pub const DOCS: &[&str] = &["A doc.", "Quotes \" and \\ and a\nnewline.", "é😂"];

/// The deepest type built.
pub const MAX_DEPTH: u32 = 4;

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

fn pick<'a>(u: &mut Unstructured, from: &[&'a str]) -> Result<&'a str> {
    Ok(from[usize::from(u.arbitrary::<u8>()?) % from.len()])
}

fn doc(u: &mut Unstructured) -> Result<Option<String>> {
    Ok(if u.ratio(1, 3)? {
        Some(pick(u, DOCS)?.to_owned())
    } else {
        None
    })
}

/// What a type may refer to: the named types' arities and the parameters
/// in scope.
#[derive(Clone, Debug)]
pub struct Scope<'a> {
    /// The `i`th named type takes `arities[i]` arguments.
    pub arities: &'a [usize],
    /// The type parameters in scope.
    pub params: &'a [String],
}

/// A type at nesting `depth` within `scope`.
pub fn ty(u: &mut Unstructured, scope: &Scope, depth: u32) -> Result<Type> {
    let compound = depth < MAX_DEPTH && u.ratio(2, 5)?;
    if !compound {
        // A named type's arguments are types too: past twice the depth
        // bound no named type is chosen, or a chain of generic named types
        // would nest without bound (each argument a named type applied to
        // more), and the target would measure that depth alone.
        let named_types = if depth < 2 * MAX_DEPTH {
            scope.arities.len()
        } else {
            0
        };
        let n = 10 + 3 * usize::from(!scope.params.is_empty()) + 3 * named_types;
        let k = u.choose_index(n)?;
        return Ok(match k {
            0 => Type::Int,
            1 => Type::Decimal,
            2 => Type::Text,
            3 => Type::Bool,
            4 => Type::Bytes,
            5 => Type::Instant,
            6 => Type::Duration,
            7 => Type::Json,
            8 => Type::HostToken,
            9 => Type::Never,
            k if k < 10 + 3 * usize::from(!scope.params.is_empty()) => {
                Type::Param(scope.params[u.choose_index(scope.params.len())?].clone())
            }
            k => {
                let i = (k - 10 - 3 * usize::from(!scope.params.is_empty())) / 3;
                named(u, scope, i, depth)?
            }
        });
    }
    let depth = depth + 1;
    Ok(
        match u.choose_index(7 + usize::from(!scope.arities.is_empty()) * 3)? {
            0 => Type::list(ty(u, scope, depth)?),
            1 => Type::set(ty(u, scope, depth)?),
            2 => {
                let n = u.int_in_range(0..=3)?;
                Type::Tuple((0..n).map(|_| ty(u, scope, depth)).collect::<Result<_>>()?)
            }
            3 => {
                let key = match u.choose_index(3)? {
                    0 => Type::Text,
                    1 => Type::Int,
                    _ => ty(u, scope, depth)?,
                };
                Type::dict(key, ty(u, scope, depth)?)
            }
            4 => Type::option(ty(u, scope, depth)?),
            5 => Type::result(ty(u, scope, depth)?, ty(u, scope, depth)?),
            6 => Type::dict(Type::Text, ty(u, scope, depth)?),
            _ => {
                let i = u.choose_index(scope.arities.len())?;
                named(u, scope, i, depth)?
            }
        },
    )
}

/// Named type `i` applied to as many arguments as it declares.
fn named(u: &mut Unstructured, scope: &Scope, i: usize, depth: u32) -> Result<Type> {
    let args = (0..scope.arities[i])
        .map(|_| ty(u, scope, (depth + 1).max(MAX_DEPTH - 1)))
        .collect::<Result<_>>()?;
    Ok(Type::applied(ident(i), args))
}

fn fields(u: &mut Unstructured, scope: &Scope) -> Result<Vec<Field>> {
    let n = u.int_in_range(0..=3)?;
    let mut out: Vec<Field> = Vec::new();
    for _ in 0..n {
        let name = pick(u, FIELD_NAMES)?;
        // A field whose type is a bare parameter is written apart
        // (`$required`): make it common.
        let field_ty = if !scope.params.is_empty() && u.ratio(1, 3)? {
            Type::Param(scope.params[u.choose_index(scope.params.len())?].clone())
        } else {
            ty(u, scope, 1)?
        };
        let doc = doc(u)?;
        if out.iter().all(|f| f.name != name) {
            out.push(Field {
                name: name.to_owned(),
                doc,
                ty: field_ty,
            });
        }
    }
    Ok(out)
}

/// The declaration of named type `i`.
pub fn decl(u: &mut Unstructured, arities: &[usize], i: usize) -> Result<TypeDecl> {
    let params: Vec<String> = ["A", "B"][..arities[i]]
        .iter()
        .map(|p| (*p).to_owned())
        .collect();
    let scope = Scope {
        arities,
        params: &params,
    };
    let body = if u.arbitrary()? {
        TypeBody::Record(fields(u, &scope)?)
    } else {
        let n = u.int_in_range(0..=3)?;
        let mut cs: Vec<Constructor> = Vec::new();
        for _ in 0..n {
            let name = pick(u, CONSTRUCTOR_NAMES)?;
            let doc = doc(u)?;
            let payload = match u.choose_index(3)? {
                0 => Payload::Unit,
                1 => Payload::Value(ty(u, &scope, 1)?),
                _ => Payload::Fields(fields(u, &scope)?),
            };
            if cs.iter().all(|c| c.name != name) {
                cs.push(Constructor {
                    name: name.to_owned(),
                    doc,
                    payload,
                });
            }
        }
        TypeBody::Enum(cs)
    };
    Ok(TypeDecl {
        identity: ident(i),
        doc: doc(u)?,
        params,
        body,
    })
}

/// A type model: the named types and a root type over them.
#[derive(Clone, Debug)]
pub struct Model {
    /// The named types.
    pub env: TypeEnv,
    /// How many arguments each named type takes.
    pub arities: Vec<usize>,
    /// The root type, whose free parameters are `T` and `U`.
    pub root: Type,
}

/// A model with up to four named types (each taking up to two
/// parameters), its root free to use the parameters `T` and `U` when
/// `free_params`.
pub fn model(u: &mut Unstructured, free_params: bool) -> Result<Model> {
    let n = u.int_in_range(0..=4)?;
    let arities: Vec<usize> = (0..n)
        .map(|_| u.int_in_range(0..=2))
        .collect::<Result<_>>()?;
    let mut env = TypeEnv::new();
    for i in 0..arities.len() {
        env.declare(decl(u, &arities, i)?);
    }
    let free: Vec<String> = if free_params {
        vec!["T".into(), "U".into()]
    } else {
        Vec::new()
    };
    let root = ty(
        u,
        &Scope {
            arities: &arities,
            params: &free,
        },
        0,
    )?;
    Ok(Model { env, arities, root })
}

/// A Tool declaration over a model: up to four parameters, up to two
/// generic parameters its types may use.
pub fn declaration(u: &mut Unstructured) -> Result<(Declaration, TypeEnv)> {
    let m = model(u, false)?;
    let generic: Vec<String> = ["T", "U"][..u.int_in_range(0..=2)?]
        .iter()
        .map(|g| (*g).to_owned())
        .collect();
    let scope = Scope {
        arities: &m.arities,
        params: &generic,
    };
    let n = u.int_in_range(0..=4)?;
    let mut params: Vec<Param> = Vec::new();
    for _ in 0..n {
        let name = pick(u, FIELD_NAMES)?;
        let doc = doc(u)?;
        let ty = ty(u, &scope, 0)?;
        if params.iter().all(|p| p.name != name) {
            params.push(Param {
                name: name.to_owned(),
                doc,
                ty,
            });
        }
    }
    let decl = Declaration {
        identity: Identity::in_repository(
            "github.com/acme/tools",
            "1.4.0",
            "search.flow",
            "search",
        ),
        doc: doc(u)?,
        ok: ty(u, &scope, 0)?,
        err: ty(u, &scope, 0)?,
        generic: generic.clone(),
        params,
    };
    Ok((decl, m.env))
}
