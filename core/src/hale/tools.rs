//! A receiver's rows as Flow Tools: how `hale serve` holds a Tool process
//! to the rows it answers, and carries each call across.
//!
//! The two specifications meet here. A Hale receiver instance answers the
//! rows of its locus type (`Orders::place`, `Orders::cancel`); a Flow Tool
//! process answers calls to the declarations it describes. `hale serve`
//! makes each row a Tool: the row's request is the Tool's one argument
//! (none for a row without request), a trailing `ctx` argument may take
//! the call's context when the row declares one, the row's response is
//! the Tool's success type and the row's `E` its declared error. The types
//! cross by shape, as the JSON codec carries them (`Int`, an identity, a
//! range and a quantity as Flow's `Int`, `Float` as `Decimal`, `Bool`,
//! `String` as `Text`, a struct as a record whose fields are its JSON
//! keys), so the Flow encoding of a request is exactly the JSON the Hale
//! codec decoded, and a Tool's reply, held to the row's shape again, is
//! the response's JSON.
//!
//! - [`receiver_rows`]: the rows a receiver instance answers, with the
//!   declarations they stand for ([`RowTool`]).
//! - [`listing`]: those declarations as a `flow tools` listing, what a
//!   toolkit generates an implementation's types from.
//! - [`hold`]: a described Tool held to its row, naming the member, the
//!   place and both types on a mismatch.
//! - [`arguments`] and [`answer`]: one call's arguments, and what its
//!   outcome is for the exposure (`docs/decisions.md`, "Handlers as Tool
//!   processes").

use std::collections::BTreeMap;
use std::sync::Arc;

use super::codec::{self, Shape};
use super::model::types::FieldRef;
use super::model::{Prim, Program, Resolved, Row, TypeTable};
use super::runtime::{Completion, ServedContext};
use super::serving::shape_of;
use super::syntax::ast::TypeExpr;
use crate::flow::fingerprint::{Declaration, Param};
use crate::flow::tool::{Outcome, Tool};
use crate::flow::{Field, Identity, Type, TypeBody, TypeDecl, TypeEnv};

/// The repository every declaration made from a program's rows is in.
pub const REPOSITORY: &str = "hale.api";
/// Its version.
pub const VERSION: &str = "0";
/// The file of the named types.
const TYPES_FILE: &str = "types";
/// The name of the context record a Tool may take as its last argument.
pub const CONTEXT_TYPE: &str = "Context";
/// The name of the principal record inside it.
const PRINCIPAL_TYPE: &str = "Principal";
/// The builtin record a violating row names as its `E`.
const VIOLATION: &str = "ClosureViolation";
/// How deep two types are compared before the comparison gives up.
const MAX_DEPTH: usize = 64;

/// What a row's `E` is for a Tool.
#[derive(Clone, Debug, PartialEq)]
pub enum RowError {
    /// The row is not fallible: the Tool declares `Never`.
    None,
    /// `fallible(E)` with a declared error: a Failed reply is the handler
    /// error, held to `E`'s shape.
    Declared(Shape),
    /// `fallible(ClosureViolation)`: a Failed reply is a violation, the
    /// server error after the owner's on_failure.
    Violation,
}

/// One row of a receiver as a Tool.
#[derive(Clone, Debug)]
pub struct RowTool {
    /// The member as a caller names it (`Orders::place`).
    pub member: String,
    /// The function (`place`): the name a Tool answers it under unless the
    /// configuration maps another.
    pub function: String,
    /// The request's shape; none for a row without request.
    pub request: Option<Shape>,
    /// The response's shape; none for a row without response (its result
    /// is `null`, carried as `json.Value`).
    pub response: Option<Shape>,
    /// What a Failed reply is.
    pub error: RowError,
    /// Whether the handler declares a trailing context.
    pub context: bool,
    /// The declaration the row stands for.
    pub tool: Arc<Tool>,
}

/// Why a receiver's rows cannot be Tools.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolsError(pub String);

impl std::fmt::Display for ToolsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ToolsError {}

/// The locus type of the main locus's param `instance` (`orders` →
/// `Orders`), when the program serves it.
pub fn instance_type(program: &Program, instance: &str) -> Option<String> {
    program.exposures.iter().find_map(|e| {
        e.receivers
            .iter()
            .find(|r| instance_name(&r.instance.text()) == instance)
            .map(|r| r.ty.clone())
    })
}

/// A receiver instance's name as a configuration writes it: `self.orders`
/// is `orders`.
pub fn instance_name(text: &str) -> &str {
    text.strip_prefix("self.").unwrap_or(text)
}

/// The receiver instances the program's exposures bind, by name, each
/// with its locus type, in the order first bound.
pub fn instances(program: &Program) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for e in &program.exposures {
        for r in &e.receivers {
            let name = instance_name(&r.instance.text()).to_owned();
            if !out.iter().any(|(n, _)| *n == name) {
                out.push((name, r.ty.clone()));
            }
        }
    }
    out
}

/// The rows the locus type `locus` answers across the program's
/// surfaces, once each, ordered by member name as bytes.
pub fn receiver_rows(program: &Program, locus: &str) -> Result<Vec<RowTool>, ToolsError> {
    let mut rows: BTreeMap<&str, &Row> = BTreeMap::new();
    for s in &program.surfaces {
        for row in s.rows.iter().filter(|r| r.locus == locus) {
            rows.entry(row.member.as_str()).or_insert(row);
        }
    }
    rows.values().map(|row| row_tool(program, row)).collect()
}

fn row_tool(program: &Program, row: &Row) -> Result<RowTool, ToolsError> {
    let types = &program.types;
    let fail = |what: &str, e: String| ToolsError(format!("rpc `{}`: its {what} {e}", row.member));
    let mut env = TypeEnv::new();
    let mut params = Vec::new();
    let request = match &row.request {
        None => None,
        Some(ty) => {
            let shape = shape_of(types, ty).map_err(|e| fail("request", e))?;
            let flow = flow_type(types, ty, &mut env, 0).map_err(|e| fail("request", e))?;
            let name = request_name(program, row);
            params.push(Param::new(&name, flow));
            Some(shape)
        }
    };
    let context = row.context.is_some();
    if row.context.is_some() {
        params.push(Param::new("ctx", context_type(&mut env)));
    }
    let (response, ok) = match &row.response {
        None => (None, Type::Json),
        Some(ty) => (
            Some(shape_of(types, ty).map_err(|e| fail("response", e))?),
            flow_type(types, ty, &mut env, 0).map_err(|e| fail("response", e))?,
        ),
    };
    let (error, err) = match &row.error {
        None => (RowError::None, Type::Never),
        Some(ty) if ty.text() == VIOLATION && types.get(VIOLATION).is_none() => (
            RowError::Violation,
            flow_type(types, ty, &mut env, 0).map_err(|e| fail("error", e))?,
        ),
        Some(ty) => (
            RowError::Declared(shape_of(types, ty).map_err(|e| fail("error", e))?),
            flow_type(types, ty, &mut env, 0).map_err(|e| fail("error", e))?,
        ),
    };
    let identity = Identity::in_repository(REPOSITORY, VERSION, &row.locus, &row.function);
    let declaration = Declaration::new(identity, params, ok, err);
    let tool = Tool::new(declaration, env).map_err(|e| fail("declaration", e.to_string()))?;
    Ok(RowTool {
        member: row.member.clone(),
        function: row.function.clone(),
        request,
        response,
        error,
        context,
        tool: Arc::new(tool),
    })
}

/// The name the handler gives its request (`o` in `place(o: PlaceOrder)`),
/// else `request`.
fn request_name(program: &Program, row: &Row) -> String {
    program
        .loci
        .iter()
        .find(|l| l.name.name == row.locus)
        .and_then(|l| l.fns.iter().find(|f| f.name.name == row.function))
        .and_then(|f| f.params.first())
        .map_or_else(|| "request".to_owned(), |p| p.name.name.clone())
}

/// A named type's identity in the program's listing.
fn type_identity(name: &str) -> Identity {
    Identity::in_repository(REPOSITORY, VERSION, TYPES_FILE, name)
}

/// The context record: `{caller: {mode, name}, request_id, via, role}`,
/// what `std::api::Context` holds (§ Serving, Context).
fn context_type(env: &mut TypeEnv) -> Type {
    let principal = type_identity(PRINCIPAL_TYPE);
    env.declare(TypeDecl::record(
        principal.clone(),
        vec![
            Field::new("mode", Type::Text),
            Field::new("name", Type::Text),
        ],
    ));
    let context = type_identity(CONTEXT_TYPE);
    env.declare(TypeDecl::record(
        context.clone(),
        vec![
            Field::new("caller", Type::named(principal)),
            Field::new("request_id", Type::Int),
            Field::new("via", Type::Text),
            Field::new("role", Type::Text),
        ],
    ));
    Type::named(context)
}

/// The Flow type a Hale type crosses as, its records declared in `env`.
fn flow_type(
    types: &TypeTable,
    ty: &TypeExpr,
    env: &mut TypeEnv,
    depth: usize,
) -> Result<Type, String> {
    if depth > codec::MAX_DEPTH {
        return Err(format!("`{}` nests too deep", ty.text()));
    }
    Ok(match types.resolve(ty) {
        Resolved::Prim(p) => prim_type(p).ok_or_else(|| not_carried(&ty.text()))?,
        Resolved::Identity(_) | Resolved::Range(_) | Resolved::Quantity(..) => Type::Int,
        Resolved::Struct(name, fields) => {
            let identity = type_identity(name);
            if env.get(&identity).is_none() {
                // Declared before its fields are, so a field naming the
                // record again finds it.
                env.declare(TypeDecl::record(identity.clone(), Vec::new()));
                let mut out = Vec::new();
                for f in &fields {
                    let t = match f {
                        FieldRef::Declared(d) => flow_type(types, &d.ty, env, depth + 1),
                        FieldRef::Builtin(_, p) => {
                            prim_type(*p).ok_or_else(|| not_carried(p.name()))
                        }
                    }
                    .map_err(|e| format!("has a field `{}` that {e}", f.name()))?;
                    out.push(Field::new(f.json_key(), t));
                }
                env.declare(TypeDecl::record(identity.clone(), out));
            }
            Type::named(identity)
        }
        _ => return Err(not_carried(&ty.text())),
    })
}

fn not_carried(what: &str) -> String {
    format!("is `{what}`, which the JSON codec does not carry")
}

fn prim_type(p: Prim) -> Option<Type> {
    Some(match p {
        Prim::Int | Prim::Uint => Type::Int,
        Prim::Float => Type::Decimal,
        Prim::Bool => Type::Bool,
        Prim::String => Type::Text,
        _ => return None,
    })
}

/// The declarations of the rows `locus` answers, as a `flow tools`
/// listing (`{"data", "tools"}`): what `flow toolkit rust` generates an
/// implementation's types and trait from.
pub fn listing(program: &Program, locus: &str) -> Result<serde_json::Value, ToolsError> {
    let rows = receiver_rows(program, locus)?;
    if rows.is_empty() {
        return Err(ToolsError(format!(
            "no surface of the program has a row of the locus `{locus}`"
        )));
    }
    Ok(crate::flow::tool::listing::describe_result(
        rows.iter().map(|r| &r.tool),
    ))
}

/// A row's Tool as the process described it: the declaration its calls
/// are sent under, and whether it takes the context.
#[derive(Clone, Debug)]
pub struct Held {
    /// The row.
    pub row: RowTool,
    /// The process's own declaration (its fingerprint is the one the
    /// process answers under).
    pub tool: Arc<Tool>,
    /// Whether the Tool takes the context as its last argument.
    pub takes_context: bool,
}

/// Holds the process's Tool `tool` to `row`: the request to its argument,
/// the context to an optional last argument, the response to its success
/// type, the row's `E` to its declared error (a violating row's may also
/// be `Never`: a Tool that never violates). The error names the member,
/// the place and both types.
pub fn hold(row: &RowTool, tool: &Arc<Tool>) -> Result<Held, ToolsError> {
    let want = &row.tool.declaration;
    let got = &tool.declaration;
    let (we, ge) = (&row.tool.env, &tool.env);
    let fail = |at: &str, m: Mismatch| {
        ToolsError(format!(
            "`{}` (the Tool `{}`): {at}{}: the row has {}, the Tool has {}",
            row.member, tool.declaration.identity, m.path, m.want, m.got
        ))
    };
    if !got.generic.is_empty() {
        return Err(ToolsError(format!(
            "`{}` (the Tool `{}`): a generic Tool cannot answer a row",
            row.member, got.identity
        )));
    }
    let request_params = usize::from(row.request.is_some());
    let takes_context = match got.params.len() {
        n if n == request_params => false,
        n if n == request_params + 1 && row.context => true,
        n => {
            let wants = if row.context {
                format!("{request_params} or {}", request_params + 1)
            } else {
                request_params.to_string()
            };
            return Err(ToolsError(format!(
                "`{}` (the Tool `{}`): the row takes {wants} argument(s), the Tool takes {n}",
                row.member, got.identity
            )));
        }
    };
    if row.request.is_some() {
        same(&want.params[0].ty, we, &got.params[0].ty, ge, "", 0)
            .map_err(|m| fail("the request", m))?;
    }
    if takes_context {
        let w = want.params.last().map(|p| &p.ty).unwrap_or(&Type::Never);
        let g = got.params.last().map(|p| &p.ty).unwrap_or(&Type::Never);
        same(w, we, g, ge, "", 0).map_err(|m| fail("the context", m))?;
    }
    same(&want.ok, we, &got.ok, ge, "", 0).map_err(|m| fail("the response", m))?;
    let never_violates = row.error == RowError::Violation && got.err == Type::Never;
    if !never_violates {
        same(&want.err, we, &got.err, ge, "", 0).map_err(|m| fail("the error", m))?;
    }
    Ok(Held {
        row: row.clone(),
        tool: tool.clone(),
        takes_context,
    })
}

/// Where two types differ.
#[derive(Debug)]
struct Mismatch {
    path: String,
    want: String,
    got: String,
}

/// Whether `got` carries exactly what `want` does: the same scalars, and
/// records with the same fields (by name, in any order) of the same types.
/// Named types are compared by what they hold, never by identity.
fn same(
    want: &Type,
    we: &TypeEnv,
    got: &Type,
    ge: &TypeEnv,
    path: &str,
    depth: usize,
) -> Result<(), Mismatch> {
    let differ = || Mismatch {
        path: path.to_owned(),
        want: type_text(want, we),
        got: type_text(got, ge),
    };
    if depth > MAX_DEPTH {
        return Ok(());
    }
    match (want, got) {
        (Type::Named { identity: wi, .. }, Type::Named { identity: gi, args }) => {
            let (Some(wd), Some(gd)) = (we.get(wi), ge.get(gi)) else {
                return Err(differ());
            };
            let (TypeBody::Record(wf), TypeBody::Record(gf)) = (&wd.body, &gd.body) else {
                return Err(differ());
            };
            if !args.is_empty() {
                return Err(differ());
            }
            for w in wf {
                let Some(g) = gf.iter().find(|g| g.name == w.name) else {
                    return Err(Mismatch {
                        path: format!("{path}.{}", w.name),
                        want: type_text(&w.ty, we),
                        got: "no such field".into(),
                    });
                };
                same(
                    &w.ty,
                    we,
                    &g.ty,
                    ge,
                    &format!("{path}.{}", w.name),
                    depth + 1,
                )?;
            }
            if let Some(extra) = gf.iter().find(|g| !wf.iter().any(|w| w.name == g.name)) {
                return Err(Mismatch {
                    path: format!("{path}.{}", extra.name),
                    want: "no such field".into(),
                    got: type_text(&extra.ty, ge),
                });
            }
            Ok(())
        }
        (Type::Named { .. }, _) | (_, Type::Named { .. }) => Err(differ()),
        (w, g) if w == g => Ok(()),
        _ => Err(differ()),
    }
}

/// A type as a diagnostic writes it: a scalar by its Flow name, a record
/// by its name and fields.
fn type_text(ty: &Type, env: &TypeEnv) -> String {
    match ty {
        Type::Named { identity, .. } => match env.get(identity).map(|d| &d.body) {
            Some(TypeBody::Record(fields)) => format!(
                "`{}` {{{}}}",
                identity.name,
                fields
                    .iter()
                    .map(|f| f.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Some(TypeBody::Enum(_)) => format!("the enum `{}`", identity.name),
            None => format!("`{}`", identity.name),
        },
        other => format!("`{}`", other.written()),
    }
}

/// A call's arguments: the decoded payload at the Tool's argument type,
/// and the context when the Tool takes it.
pub fn arguments(
    held: &Held,
    payload: &serde_json::Value,
    ctx: &ServedContext,
    limits: &crate::flow::Limits,
) -> Result<Vec<crate::flow::Value>, String> {
    let decl = &held.tool.declaration;
    let mut args = Vec::with_capacity(decl.params.len());
    let mut params = decl.params.iter();
    if held.row.request.is_some() {
        let p = params.next().ok_or("the Tool takes no request")?;
        let text = serde_json::to_vec(payload).map_err(|e| e.to_string())?;
        args.push(
            crate::flow::decode(&text, &p.ty, &held.tool.env, limits)
                .map_err(|e| format!("the request as `{}`: {e}", p.name))?,
        );
    }
    if held.takes_context {
        let p = params.next().ok_or("the Tool takes no context")?;
        let context = serde_json::json!({
            "caller": {"mode": ctx.caller.mode, "name": ctx.caller.name},
            "request_id": ctx.request_id,
            "via": &*ctx.via,
            "role": &*ctx.role,
        });
        let text = serde_json::to_vec(&context).map_err(|e| e.to_string())?;
        args.push(
            crate::flow::decode(&text, &p.ty, &held.tool.env, limits)
                .map_err(|e| format!("the context: {e}"))?,
        );
    }
    Ok(args)
}

/// What a Tool's outcome is for the exposure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The response (Ok, held to the row's response shape), or the handler
    /// error (Failed on a row with a declared `E`): the completion itself.
    Completed(CompletionBytes),
    /// A violation the Tool declared (Failed on a `fallible(ClosureViolation)`
    /// row): the server error after the owner's on_failure.
    Violated,
    /// A structural failure of the handler (NotRun, Unknown, BadReply, or a
    /// reply outside the row's shape): the server error, and the receiver
    /// is restarted as a new generation. The text says why.
    Failed(String),
}

/// The bytes of a completion: returned or failed with its declared error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompletionBytes {
    /// The response's JSON.
    Returned(Vec<u8>),
    /// The declared error's JSON.
    Failed(Vec<u8>),
}

impl From<CompletionBytes> for Completion {
    fn from(c: CompletionBytes) -> Completion {
        match c {
            CompletionBytes::Returned(b) => Completion::Returned(b),
            CompletionBytes::Failed(b) => Completion::Failed(b),
        }
    }
}

/// The exposure's reading of a call's outcome (`docs/decisions.md`,
/// "Handlers as Tool processes").
pub fn answer(row: &RowTool, outcome: Outcome) -> Answer {
    let held_to = |shape: Option<&Shape>, value: &crate::flow::Value, what: &str| {
        let text = crate::flow::canonical::to_canonical_vec(value);
        match shape {
            // Held to the row's shape: a range the Flow type cannot state.
            Some(shape) => codec::decode(shape, &text)
                .map(|v| serde_json::to_vec(&v).unwrap_or(text.clone()))
                .map_err(|e| format!("the {what} is not the row's: {e}")),
            None => Ok(text),
        }
    };
    match outcome {
        Outcome::Ok(v) => match held_to(row.response.as_ref(), &v, "result") {
            Ok(b) => Answer::Completed(CompletionBytes::Returned(b)),
            Err(e) => Answer::Failed(e),
        },
        Outcome::Failed(v) => match &row.error {
            RowError::Violation => Answer::Violated,
            RowError::Declared(shape) => match held_to(Some(shape), &v, "error") {
                Ok(b) => Answer::Completed(CompletionBytes::Failed(b)),
                Err(e) => Answer::Failed(e),
            },
            RowError::None => Answer::Failed("a Failed reply to a row that cannot fail".into()),
        },
        Outcome::NotRun(why) => Answer::Failed(format!("NotRun: {why}")),
        Outcome::Unknown(why) => Answer::Failed(format!("Unknown: {why}")),
        Outcome::BadReply(why) => Answer::Failed(format!("BadReply: {why}")),
    }
}

/// Whether the main locus declares an on_failure for the locus type
/// `locus` (`on_failure(o: Orders, err: ClosureViolation)`).
pub fn has_on_failure(program: &Program, locus: &str) -> bool {
    program.main_locus().is_some_and(|m| {
        m.fns.iter().any(|f| {
            f.name.name == "on_failure" && f.params.first().is_some_and(|p| p.ty.text() == locus)
        })
    })
}

#[cfg(test)]
mod tests;
