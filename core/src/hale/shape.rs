//! A type's contract shape and shape hash (§ The contract digest).
//!
//! A struct's contract shape is its fields in declaration order as
//! `<field>:<tag>` joined by `;`; an enum's is `=enum(<variants>)`, variants
//! in declaration order joined by `|`, a variant with fields written
//! `Name(<tag>,…)`; any other type's is `=` and its tag. The tags are the
//! primitives' letters ([`Prim::tag`]), `i` for an identity or a range,
//! `q(<denomination>)` for a quantity or a point, and for a nested struct or
//! enum `#` and the shape hash of its own contract shape, so the form is deep.
//! A compound field is `[<tag>]`, `[<tag>;<n>]` or `(<tag>,…)`; a type the
//! program does not declare is `opaque(<type>)`; a named type already being
//! rendered is `rec(<k>)`, `k` levels out, so every shape is finite. The
//! shape hash is the FNV-1a/64 fold of the shape's bytes.

use std::collections::BTreeMap;
use std::fmt;

use super::digest::{fnv1a64, hex16};
use super::model::types::{FieldRef, Prim, Resolved, TypeTable};
use super::syntax::ast::{TypeExpr, VariantDecl};

/// How many named types a shape may nest before it is refused.
pub const MAX_SHAPE_DEPTH: usize = 64;
/// How many tags one shape may render (a recursive family of types can
/// otherwise reach the same types along exponentially many paths).
pub const MAX_SHAPE_WORK: usize = 100_000;

/// `ClosureViolation`'s contract shape: its record's fields.
pub const CLOSURE_VIOLATION_SHAPE: &str = "locus:s;closure:s;diff:i";

/// Why a shape could not be rendered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShapeError {
    /// The type nests more than [`MAX_SHAPE_DEPTH`] named types.
    TooDeep(String),
    /// Rendering the type takes more than [`MAX_SHAPE_WORK`] tags.
    TooLarge(String),
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShapeError::TooDeep(t) => {
                write!(
                    f,
                    "the shape of `{t}` nests more than {MAX_SHAPE_DEPTH} named types"
                )
            }
            ShapeError::TooLarge(t) => {
                write!(
                    f,
                    "the shape of `{t}` takes more than {MAX_SHAPE_WORK} tags to render"
                )
            }
        }
    }
}

impl std::error::Error for ShapeError {}

/// The renderer of contract shapes over one program's types. It remembers
/// the hash of every named type whose rendering is context-free (one that
/// reaches no type being rendered around it), so a shared nested type is
/// rendered once.
pub struct Shapes<'a> {
    types: &'a TypeTable,
    memo: BTreeMap<&'a str, String>,
    stack: Vec<&'a str>,
    work: usize,
    top: String,
}

/// A rendered tag, and whether it holds a `rec(…)` (which makes it depend on
/// what is being rendered around it).
struct Tag {
    text: String,
    rec: bool,
}

impl<'a> Shapes<'a> {
    /// A renderer over `types`.
    pub fn new(types: &'a TypeTable) -> Shapes<'a> {
        Shapes {
            types,
            memo: BTreeMap::new(),
            stack: Vec::new(),
            work: 0,
            top: String::new(),
        }
    }

    /// The contract shape of `ty`.
    pub fn contract_shape(&mut self, ty: &'a TypeExpr) -> Result<String, ShapeError> {
        self.stack.clear();
        self.work = 0;
        self.top = ty.text();
        let resolved = self.types.resolve(ty);
        if let Resolved::Struct(name, _) | Resolved::Enum(name, _) = &resolved {
            self.stack.push(name);
        }
        Ok(self.top_form(resolved, ty)?.text)
    }

    /// The shape hash of `ty`: the fold of its contract shape.
    pub fn shape_hash(&mut self, ty: &'a TypeExpr) -> Result<u64, ShapeError> {
        Ok(fnv1a64(self.contract_shape(ty)?.as_bytes()))
    }

    /// A struct's fields, an enum's variants, or `=` and the tag.
    fn top_form(&mut self, resolved: Resolved<'a>, ty: &'a TypeExpr) -> Result<Tag, ShapeError> {
        match resolved {
            Resolved::Struct(_, fields) => self.fields(&fields),
            Resolved::Enum(_, variants) => self.variants(variants),
            other => {
                let t = self.tag_of(other, ty)?;
                Ok(Tag {
                    text: format!("={}", t.text),
                    rec: t.rec,
                })
            }
        }
    }

    fn fields(&mut self, fields: &[FieldRef<'a>]) -> Result<Tag, ShapeError> {
        let mut parts = Vec::with_capacity(fields.len());
        let mut rec = false;
        for f in fields {
            let t = match f {
                FieldRef::Declared(d) => self.tag(&d.ty)?,
                FieldRef::Builtin(_, p) => self.prim(*p)?,
            };
            rec |= t.rec;
            parts.push(format!("{}:{}", f.name(), t.text));
        }
        Ok(Tag {
            text: parts.join(";"),
            rec,
        })
    }

    fn variants(&mut self, variants: &'a [VariantDecl]) -> Result<Tag, ShapeError> {
        let mut parts = Vec::with_capacity(variants.len());
        let mut rec = false;
        for v in variants {
            if v.fields.is_empty() {
                parts.push(v.name.name.clone());
                continue;
            }
            let mut tags = Vec::with_capacity(v.fields.len());
            for f in &v.fields {
                let t = self.tag(f)?;
                rec |= t.rec;
                tags.push(t.text);
            }
            parts.push(format!("{}({})", v.name.name, tags.join(",")));
        }
        Ok(Tag {
            text: format!("=enum({})", parts.join("|")),
            rec,
        })
    }

    fn count(&mut self) -> Result<(), ShapeError> {
        self.work += 1;
        if self.work > MAX_SHAPE_WORK {
            return Err(ShapeError::TooLarge(self.top.clone()));
        }
        Ok(())
    }

    fn prim(&mut self, p: Prim) -> Result<Tag, ShapeError> {
        self.count()?;
        Ok(Tag {
            text: p.tag().to_string(),
            rec: false,
        })
    }

    fn tag(&mut self, ty: &'a TypeExpr) -> Result<Tag, ShapeError> {
        let resolved = self.types.resolve(ty);
        self.tag_of(resolved, ty)
    }

    fn tag_of(&mut self, resolved: Resolved<'a>, ty: &'a TypeExpr) -> Result<Tag, ShapeError> {
        self.count()?;
        let plain = |text: String| Ok(Tag { text, rec: false });
        match resolved {
            Resolved::Prim(p) => plain(p.tag().to_string()),
            Resolved::Identity(_) | Resolved::Range(_) => plain("i".to_string()),
            Resolved::Quantity(_, d) | Resolved::Point(_, d) => plain(format!("q({d})")),
            Resolved::Struct(name, _) | Resolved::Enum(name, _) => self.nested(name, resolved, ty),
            Resolved::Array(elem, len) => {
                let e = self.tag(elem)?;
                let text = match len {
                    None => format!("[{}]", e.text),
                    Some(n) if n.chars().all(|c| c.is_ascii_digit() || c == '_') => {
                        format!("[{};{}]", e.text, n.replace('_', ""))
                    }
                    Some(_) => format!("[{};_]", e.text),
                };
                Ok(Tag { text, rec: e.rec })
            }
            Resolved::Tuple(parts) => {
                let mut tags = Vec::with_capacity(parts.len());
                let mut rec = false;
                for p in parts {
                    let t = self.tag(p)?;
                    rec |= t.rec;
                    tags.push(t.text);
                }
                Ok(Tag {
                    text: format!("({})", tags.join(",")),
                    rec,
                })
            }
            Resolved::Unit => plain("()".to_string()),
            Resolved::Cycle(name) => plain(format!("opaque({name})")),
            Resolved::Opaque(_) => self.opaque(ty),
        }
    }

    /// A nested struct or enum: `#` and its own shape's hash, or `rec(k)`
    /// when it is already being rendered `k` levels out.
    fn nested(
        &mut self,
        name: &'a str,
        resolved: Resolved<'a>,
        ty: &'a TypeExpr,
    ) -> Result<Tag, ShapeError> {
        if let Some(at) = self.stack.iter().position(|n| *n == name) {
            return Ok(Tag {
                text: format!("rec({})", self.stack.len() - at),
                rec: true,
            });
        }
        if let Some(h) = self.memo.get(name) {
            return Ok(Tag {
                text: h.clone(),
                rec: false,
            });
        }
        if self.stack.len() >= MAX_SHAPE_DEPTH {
            return Err(ShapeError::TooDeep(self.top.clone()));
        }
        self.stack.push(name);
        let inner = self.top_form(resolved, ty);
        self.stack.pop();
        let inner = inner?;
        let text = format!("#{}", hex16(fnv1a64(inner.text.as_bytes())));
        if !inner.rec {
            self.memo.insert(name, text.clone());
        }
        Ok(Tag {
            text,
            rec: inner.rec,
        })
    }

    /// A type the program does not declare: `opaque(<path>)`, generic
    /// arguments tagged (`opaque(Box<i>)`), a function type `opaque(fn)`.
    fn opaque(&mut self, ty: &'a TypeExpr) -> Result<Tag, ShapeError> {
        match ty {
            TypeExpr::Named { path, args, .. } if !args.is_empty() => {
                let mut tags = Vec::with_capacity(args.len());
                let mut rec = false;
                for a in args {
                    let t = self.tag(a)?;
                    rec |= t.rec;
                    tags.push(t.text);
                }
                Ok(Tag {
                    text: format!("opaque({}<{}>)", path.text(), tags.join(",")),
                    rec,
                })
            }
            TypeExpr::Named { path, .. } => Ok(Tag {
                text: format!("opaque({})", path.text()),
                rec: false,
            }),
            _ => Ok(Tag {
                text: "opaque(fn)".to_string(),
                rec: false,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hale::model::parse_program;
    use crate::hale::syntax::ast::{Item, TypeBody};

    /// The contract shape and shape hash of the type `name` in `src`.
    fn forms(src: &str, name: &str) -> Result<(String, String), ShapeError> {
        let p = parse_program("t.hl", src).unwrap();
        let file = crate::hale::syntax::parse("t.hl", &format!("type Named = {name};")).unwrap();
        let Item::Type(t) = &file.items[0] else {
            panic!()
        };
        let TypeBody::Alias(ty) = &t.body else {
            panic!()
        };
        let mut shapes = Shapes::new(&p.types);
        let shape = shapes.contract_shape(ty)?;
        Ok((shape.clone(), hex16(fnv1a64(shape.as_bytes()))))
    }

    fn shape(src: &str, name: &str) -> String {
        forms(src, name).unwrap().0
    }

    // The vectors below are the reference compiler's own shape tests
    // (hale-lang/hale, the observation and contract shapes), so this
    // renderer agrees with the compiler's byte for byte.

    #[test]
    fn primitives_render_their_letters() {
        let src = "type P { a: Int; b: Uint; c: Float; d: Bool; e: Decimal; f: Time; g: Duration; h: String; i: Bytes; }";
        let (s, h) = forms(src, "P").unwrap();
        assert_eq!(s, "a:i;b:i;c:f;d:b;e:d;f:t;g:u;h:s;i:y");
        assert_eq!(h, "de3f3333e812b5fb");
    }

    #[test]
    fn a_nested_struct_is_its_hash() {
        let src = "type Inner { a: Bool; } type Outer { id: Int; body: Inner; }";
        assert_eq!(
            forms(src, "Inner").unwrap(),
            ("a:b".to_string(), "e661911904a01160".to_string())
        );
        assert_eq!(
            forms(src, "Outer").unwrap(),
            (
                "id:i;body:#e661911904a01160".to_string(),
                "e94668d4adea4cba".to_string()
            )
        );
        // The form is deep: a field changed inside moves the outer hash.
        let moved = forms(
            "type Inner { a: Int; } type Outer { id: Int; body: Inner; }",
            "Outer",
        )
        .unwrap();
        assert_ne!(moved.1, "e94668d4adea4cba");
    }

    #[test]
    fn an_enum_is_its_variants() {
        let src = "type Side = enum { Buy, Sell(Int, String) }; type Order { side: Side; }";
        assert_eq!(
            forms(src, "Side").unwrap(),
            (
                "=enum(Buy|Sell(i,s))".to_string(),
                "64470fcdf9853aeb".to_string()
            )
        );
        assert_eq!(shape(src, "Order"), "side:#64470fcdf9853aeb");
        let added = forms("type Side = enum { Buy, Sell(Int, String), Hold };", "Side").unwrap();
        assert_ne!(
            added.1, "64470fcdf9853aeb",
            "a variant added moves the hash"
        );
    }

    #[test]
    fn scalars_are_their_int_or_their_unit() {
        let src =
            "unit cent; unit ms2; type Money = quantity Int in cent; type OrderId = distinct Int; \
                   type Tick = quantity Int in 100ms2; type Ledger = Money { round: half_even; } \
                   type Byte = Int { range: 0..256; } type Count = Int; type Two = Count;";
        assert_eq!(shape(src, "OrderId"), "=i");
        assert_eq!(shape(src, "Money"), "=q(cent)");
        assert_eq!(
            shape(src, "Ledger"),
            "=q(cent)",
            "a refinement of a quantity keeps its denomination"
        );
        assert_eq!(shape(src, "Tick"), "=q(100ms2)");
        assert_eq!(shape(src, "Byte"), "=i");
        assert_eq!(shape(src, "Two"), "=i", "an alias chain is where it ends");
        assert_eq!(shape(src, "Int"), "=i");
    }

    #[test]
    fn compound_and_undeclared_types() {
        let src =
            "type C { p: std::api::Principal; b: Box<Int>; t: (Int, String); a: [String; 4]; }";
        let (s, h) = forms(src, "C").unwrap();
        assert_eq!(
            s,
            "p:opaque(std::api::Principal);b:opaque(Box<i>);t:(i,s);a:[s;4]"
        );
        // Folded independently: python3 fnv1a64 of the text above.
        assert_eq!(h, "da6fd090f941a891");
    }

    #[test]
    fn closure_violation_is_its_record_unless_declared() {
        assert_eq!(shape("", "ClosureViolation"), CLOSURE_VIOLATION_SHAPE);
        assert_eq!(forms("", "ClosureViolation").unwrap().1, "36c7f0561125943e");
        assert_eq!(
            shape("type ClosureViolation { x: Int; }", "ClosureViolation"),
            "x:i"
        );
    }

    #[test]
    fn a_recursive_type_is_finite() {
        // Folded independently with python3: fnv1a64("v:i;kids:[rec(1)]").
        assert_eq!(
            forms("type Node { v: Int; kids: [Node]; }", "Node").unwrap(),
            (
                "v:i;kids:[rec(1)]".to_string(),
                "f4aee666d1f73356".to_string()
            )
        );
        // Mutual recursion: B inside A sees A two levels out.
        // fnv1a64("a:rec(2)") = c2fab30798a17b51.
        assert_eq!(
            shape("type A { b: B; } type B { a: A; }", "A"),
            "b:#c2fab30798a17b51"
        );
    }

    #[test]
    fn an_alias_cycle_is_opaque() {
        assert_eq!(
            shape("type A = B; type B = A; type S { x: A; }", "S"),
            "x:opaque(A)"
        );
    }

    #[test]
    fn a_shared_type_is_rendered_once() {
        // 40 levels, each naming the next twice: 2^40 paths, one rendering each.
        let mut src = String::new();
        for i in 0..40 {
            src.push_str(&format!("type T{i} {{ a: T{}; b: T{}; }}\n", i + 1, i + 1));
        }
        src.push_str("type T40 { x: Int; }\n");
        assert!(forms(&src, "T0").is_ok());
    }

    #[test]
    fn a_shape_too_deep_or_too_large_is_refused() {
        let mut deep = String::new();
        for i in 0..100 {
            deep.push_str(&format!("type D{i} {{ a: D{}; }}\n", i + 1));
        }
        deep.push_str("type D100 { x: Int; }\n");
        assert_eq!(
            forms(&deep, "D0"),
            Err(ShapeError::TooDeep("D0".to_string()))
        );
        // A cycle through every level defeats the memo: the work bound holds.
        let mut wide = String::new();
        for i in 0..40 {
            wide.push_str(&format!("type W{i} {{ a: W{}; b: W{}; }}\n", i + 1, i + 1));
        }
        wide.push_str("type W40 { back: W0; }\n");
        assert_eq!(
            forms(&wide, "W0"),
            Err(ShapeError::TooLarge("W0".to_string()))
        );
    }
}
