//! From the model to the runtime: what an exposure of a program serves,
//! as the [`Exposure`](crate::hale::runtime::Exposure) machine reads it.
//!
//! [`exposure_spec`] reads a serve site's exposure — its surface's rows, its
//! receivers, its bound, the roles' includes — into an [`ExposureSpec`];
//! [`ShapeCodec`] decodes each member's payload by its request type's
//! [`Shape`]. Both read the same rows the documents and digests read, so a
//! served exposure and its description agree by construction.

use super::codec::{self, FieldShape, Shape};
use super::model::types::FieldRef;
use super::model::{Exposure, Prim, Program, Resolved, TypeTable};
use super::runtime::{ExposureLimits, ExposureSpec, MemberSpec, PayloadCodec, RoleHierarchy};
use super::syntax::ast::{Expr, TypeBody, TypeExpr};

/// Why an exposure of the model cannot be served.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServeError(pub String);

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ServeError {}

/// The runtime spec of `exposure`, served through a transport that names
/// itself `via` (`http`, `unix`, `mcp`, `test`).
pub fn exposure_spec(
    program: &Program,
    exposure: &Exposure,
    via: &str,
) -> Result<ExposureSpec, ServeError> {
    let name = exposure
        .name
        .clone()
        .ok_or_else(|| ServeError("a serve site names its exposure with `as:`".into()))?;
    let surface = exposure
        .surface
        .clone()
        .ok_or_else(|| ServeError(format!("exposure `{name}` names no surface")))?;
    let digest = program
        .surface_digest(&surface)
        .map_err(|e| ServeError(format!("surface `{surface}` has no digest: {e:?}")))?;
    if !exposure.unbound.is_empty() {
        let types: Vec<&str> = exposure.unbound.iter().map(|u| u.ty.as_str()).collect();
        return Err(ServeError(format!(
            "exposure `{name}` binds no receiver for {}",
            types.join(", ")
        )));
    }
    let receivers: Vec<String> = exposure
        .receivers
        .iter()
        .map(|r| r.instance.text())
        .collect();
    let mut members = Vec::new();
    for served in program.served_rows(exposure) {
        let row = served.row;
        let receiver = exposure
            .receivers
            .iter()
            .position(|r| r.ty == row.locus)
            .ok_or_else(|| ServeError(format!("no receiver answers `{}`", row.member)))?;
        members.push(MemberSpec {
            name: row.member.clone(),
            receiver,
            requires: row.requires_names().iter().map(|r| r.to_string()).collect(),
        });
    }
    let bound = exposure
        .bound
        .ok_or_else(|| ServeError(format!("exposure `{name}` states no integer `bound:`")))?;
    Ok(ExposureSpec {
        name,
        surface,
        digest: digest.to_string(),
        via: via.to_owned(),
        members,
        receivers,
        bound: usize::try_from(bound).unwrap_or(usize::MAX),
        hierarchy: hierarchy(program),
        limits: ExposureLimits::default(),
    })
}

/// The roles' includes, as the role checks read them.
pub fn hierarchy(program: &Program) -> RoleHierarchy {
    let mut h = RoleHierarchy::flat();
    for role in &program.roles {
        for included in &role.includes {
            h.include(&role.name.name, &included.name);
        }
    }
    h
}

/// Decodes each member's payload by its request type's shape.
#[derive(Clone, Debug)]
pub struct ShapeCodec {
    shapes: Vec<Option<Shape>>,
    /// Whether a protobuf payload is decoded (a gRPC exposure's codec).
    protobuf: bool,
}

impl ShapeCodec {
    /// The codec of `exposure`'s members, in the order of its spec's
    /// members. A row whose request the JSON codec does not carry is an
    /// error (law 5 refuses it at the check).
    pub fn new(program: &Program, exposure: &Exposure) -> Result<ShapeCodec, ServeError> {
        let mut shapes = Vec::new();
        for served in program.served_rows(exposure) {
            let shape = match &served.row.request {
                None => None,
                Some(ty) => Some(shape_of(&program.types, ty).map_err(|e| {
                    ServeError(format!("rpc `{}`: its request {e}", served.row.member))
                })?),
            };
            shapes.push(shape);
        }
        Ok(ShapeCodec {
            shapes,
            protobuf: false,
        })
    }

    /// The codec of a gRPC exposure (§ The protobuf codec): a
    /// [`Payload::Proto`](crate::hale::runtime::Payload::Proto) is decoded
    /// by the same shape with the protobuf codec, in the JSON codec's
    /// words. Another exposure's codec refuses it (`wrong_type: payload`):
    /// the protobuf codec joins a program only with a gRPC exposure.
    pub fn with_protobuf(mut self) -> ShapeCodec {
        self.protobuf = true;
        self
    }
}

impl PayloadCodec for ShapeCodec {
    fn decode_protobuf(&self, member: usize, message: &[u8]) -> Result<serde_json::Value, String> {
        if !self.protobuf {
            return Err("wrong_type: payload".into());
        }
        match self.shapes.get(member) {
            Some(Some(shape)) => super::protobuf::decode(shape, message),
            // A row without a request takes `HaleEmpty`, whose unknown
            // fields are skipped.
            Some(None) => super::protobuf::decode(&Shape::Struct(Vec::new()), message),
            None => Err("wrong_type: payload".into()),
        }
    }

    fn decode(&self, member: usize, payload: &[u8]) -> Result<serde_json::Value, String> {
        match self.shapes.get(member) {
            Some(Some(shape)) => codec::decode(shape, payload),
            // A row without a request takes `null` or `{}` as its payload.
            Some(None) => match codec::decode(&Shape::Struct(Vec::new()), payload) {
                Ok(v) => Ok(v),
                Err(_) if payload_is_null(payload) => Ok(serde_json::Value::Null),
                Err(_) => Err("wrong_type: payload".into()),
            },
            None => Err("wrong_type: payload".into()),
        }
    }
}

fn payload_is_null(payload: &[u8]) -> bool {
    std::str::from_utf8(payload).is_ok_and(|s| s.trim() == "null")
}

/// The JSON codec's shape of `ty`, or why the codec does not carry it.
pub fn shape_of(types: &TypeTable, ty: &TypeExpr) -> Result<Shape, String> {
    shape_in(types, ty, 0)
}

fn shape_in(types: &TypeTable, ty: &TypeExpr, depth: usize) -> Result<Shape, String> {
    if depth > codec::MAX_DEPTH {
        return Err(format!("`{}` nests too deep", ty.text()));
    }
    let not_carried =
        |what: String| Err(format!("is `{what}`, which the JSON codec does not carry"));
    match types.resolve(ty) {
        Resolved::Prim(Prim::Int) | Resolved::Identity(_) | Resolved::Quantity(..) => {
            Ok(Shape::INT)
        }
        Resolved::Prim(Prim::Uint) => Ok(Shape::Int {
            min: Some(0),
            max: None,
        }),
        Resolved::Range(name) => Ok(range_shape(types, name)),
        Resolved::Prim(Prim::Float) => Ok(Shape::Float),
        Resolved::Prim(Prim::Bool) => Ok(Shape::Bool),
        Resolved::Prim(Prim::String) => Ok(Shape::String),
        Resolved::Struct(_, fields) => {
            let mut out = Vec::new();
            for f in fields {
                let shape = match &f {
                    FieldRef::Declared(d) => shape_in(types, &d.ty, depth + 1),
                    FieldRef::Builtin(_, p) => match p {
                        Prim::Int => Ok(Shape::INT),
                        Prim::String => Ok(Shape::String),
                        Prim::Bool => Ok(Shape::Bool),
                        Prim::Float => Ok(Shape::Float),
                        other => Err(format!(
                            "is `{other:?}`, which the JSON codec does not carry"
                        )),
                    },
                }
                .map_err(|e| format!("has a field `{}` that {e}", f.name()))?;
                let default = match &f {
                    FieldRef::Declared(d) => d.default.as_ref().and_then(literal),
                    FieldRef::Builtin(..) => None,
                };
                out.push(FieldShape {
                    name: f.name().to_owned(),
                    key: f.json_key().to_owned(),
                    shape,
                    default,
                });
            }
            Ok(Shape::Struct(out))
        }
        _ => not_carried(ty.text()),
    }
}

/// A range's bounds from its `range: a..b` (or `a..=b`) clause.
fn range_shape(types: &TypeTable, name: &str) -> Shape {
    let clause = types.get(name).and_then(|decl| match &decl.body {
        TypeBody::Scalar(s) => s
            .clauses
            .iter()
            .find(|c| c.name.name == "range")
            .map(|c| c.value.clone()),
        _ => None,
    });
    let parse = |s: &str| s.trim().replace('_', "").parse::<i64>().ok();
    let (min, max) = match clause.as_deref() {
        Some(v) => match v.split_once("..=") {
            Some((a, b)) => (parse(a), parse(b)),
            None => match v.split_once("..") {
                Some((a, b)) => (parse(a), parse(b).and_then(|b| b.checked_sub(1))),
                None => (None, None),
            },
        },
        None => (None, None),
    };
    Shape::Int { min, max }
}

/// A literal default as JSON, when it is one the codec can carry.
fn literal(e: &Expr) -> Option<serde_json::Value> {
    match e {
        Expr::Number(n, _) => {
            let digits = n.replace('_', "");
            digits.parse::<i64>().ok().map(Into::into).or_else(|| {
                digits
                    .parse::<f64>()
                    .ok()
                    .and_then(|f| serde_json::Number::from_f64(f).map(Into::into))
            })
        }
        Expr::Str(s, _) => Some(s.clone().into()),
        Expr::Path(p) if p.segments.len() == 1 && (p.is("true") || p.is("false")) => {
            Some(p.is("true").into())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hale::model::parse_program;

    const SRC: &str = r#"
role trader;
role admin includes [trader];
type Pct = Int { range: 0..101; };
type Line { sku: String json:"SKU"; qty: Int = 1; pct: Pct; }
type Ok { done: Bool; }
api Shop { rpc Cart::add requires: [trader]; rpc Cart::clear; }
locus Cart {
    fn add(l: Line) -> Ok { return Ok { done: true }; }
    fn clear() { }
}
main locus Main {
    params { cart: Cart = Cart { }; roles: R = R { }; }
    run() {
        let h = api::serve(Shop, std::api::test::Rpc { roles: self.roles }, as: "shop", bound: 8, on_full: refuse);
        h.stop();
    }
}
"#;

    #[test]
    fn an_exposure_of_the_model_reads_its_rows_receivers_and_bound() {
        let p = parse_program("shop.hl", SRC).unwrap();
        let e = p.exposure("shop").unwrap();
        let spec = exposure_spec(&p, e, "test").unwrap();
        assert_eq!(spec.identity(), p.exposure_id(e).unwrap());
        assert_eq!(spec.receivers, ["self.cart"]);
        assert_eq!(spec.bound, 8);
        let names: Vec<_> = spec
            .members
            .iter()
            .map(|m| (m.name.as_str(), m.receiver, m.requires.clone()))
            .collect();
        assert_eq!(
            names,
            [
                ("Cart::add", 0, vec!["trader".to_string()]),
                ("Cart::clear", 0, vec![])
            ]
        );
        assert_eq!(spec.hierarchy.holders_of("trader"), ["trader", "admin"]);
    }

    #[test]
    fn the_codec_reads_tags_defaults_and_ranges() {
        let p = parse_program("shop.hl", SRC).unwrap();
        let codec = ShapeCodec::new(&p, p.exposure("shop").unwrap()).unwrap();
        assert_eq!(
            codec.decode(0, br#"{"SKU": "a", "pct": 100}"#).unwrap(),
            serde_json::json!({"SKU": "a", "qty": 1, "pct": 100})
        );
        assert_eq!(
            codec.decode(0, br#"{"SKU": "a", "pct": 101}"#).unwrap_err(),
            "wrong_type: pct"
        );
        assert_eq!(
            codec.decode(0, br#"{"sku": "a", "pct": 1}"#).unwrap_err(),
            "missing_field: sku"
        );
        assert_eq!(codec.decode(1, b"{}").unwrap(), serde_json::json!({}));
        assert_eq!(codec.decode(1, b"null").unwrap(), serde_json::Value::Null);
        assert_eq!(codec.decode(1, b"3").unwrap_err(), "wrong_type: payload");
    }

    #[test]
    fn only_a_grpc_exposure_s_codec_reads_protobuf() {
        let p = parse_program("shop.hl", SRC).unwrap();
        let e = p.exposure("shop").unwrap();
        // Line { sku = "a", pct = 7 }: fields 1 and 3, qty's default filled.
        let message = b"\x0a\x01a\x18\x07";
        let plain = ShapeCodec::new(&p, e).unwrap();
        assert_eq!(
            plain.decode_protobuf(0, message).unwrap_err(),
            "wrong_type: payload"
        );
        let grpc = plain.with_protobuf();
        assert_eq!(
            grpc.decode_protobuf(0, message).unwrap(),
            serde_json::json!({"SKU": "a", "qty": 1, "pct": 7})
        );
        // The protobuf codec's refusals, in the JSON codec's words.
        assert_eq!(
            grpc.decode_protobuf(0, b"\x0a\x05a").unwrap_err(),
            "wrong_type: payload"
        );
        // A row with no request takes HaleEmpty; JSON still reads as JSON.
        assert_eq!(grpc.decode_protobuf(1, b"").unwrap(), serde_json::json!({}));
        assert_eq!(
            grpc.decode(0, br#"{"SKU": "a", "pct": 1}"#).unwrap()["pct"],
            1
        );
        // JSON text that once looked like the old `pb:` smuggling is JSON's
        // to refuse, in its words, whatever the codec.
        assert_eq!(
            grpc.decode(0, b"pb:Line:CgFh").unwrap_err(),
            "wrong_type: payload"
        );
    }
}
