//! Law 5's judgment: whether the JSON codec carries a type (§ Codecs).
//!
//! The codec carries `Int`, `Float`, `Bool`, `String`, an identity, a range
//! and a quantity (as their integer), a plain alias as what its chain ends
//! at, and structs — declared or builtin records — whose fields it carries,
//! nested to any depth. It carries nothing else: no `Uint`, `Decimal`,
//! `Bytes`, `Time` or `Duration`, no point (its origin is not a count), no
//! enum, list, array, tuple, map, optional or other generic type, no `()`
//! as a value, no type the program does not declare, no alias chain that
//! loops, no struct that holds itself (it has no finite value), and no
//! `Int in D` written without its kind word (the model shapes it as the
//! quantity it is missing the word for; whether it counts `D` is not said).

use std::collections::BTreeSet;

use crate::hale::model::types::{FieldRef, Prim, Resolved, TypeTable};
use crate::hale::shape::MAX_SHAPE_DEPTH;
use crate::hale::syntax::ast::{TypeBody, TypeExpr};

/// The first part of a type, in declaration order and depth first, that
/// the JSON codec does not carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotCarried {
    /// The field's path from the type (`raw`, `inner.raw`); empty when the
    /// type itself is not carried.
    pub path: String,
    /// The type of what is not carried, as written (`Bytes`, `[Int]`).
    pub ty: String,
    /// Whether that type is a one-segment name the program does not
    /// declare (a misspelling, or a declaration missing), rather than a
    /// type the codec has no form for.
    pub undeclared: bool,
}

/// Whether the JSON codec carries `ty`: `Ok` when it does, else the first
/// field (or the type itself) it does not.
///
/// A nesting deeper than [`MAX_SHAPE_DEPTH`] named structs is not judged
/// past that depth: such a type has no shape hash, which the check reports
/// in its own words.
pub fn json_form(types: &TypeTable, ty: &TypeExpr) -> Result<(), NotCarried> {
    let mut walk = Walk {
        types,
        stack: Vec::new(),
        carried: BTreeSet::new(),
        path: Vec::new(),
    };
    walk.ty(ty)
}

struct Walk<'a> {
    types: &'a TypeTable,
    /// The structs being judged, outermost first.
    stack: Vec<&'a str>,
    /// Structs already found carried (a struct's form does not depend on
    /// where it is nested, so each is judged once).
    carried: BTreeSet<&'a str>,
    /// The field path to where the walk is.
    path: Vec<&'a str>,
}

impl<'a> Walk<'a> {
    fn refuse(&self, ty: String) -> Result<(), NotCarried> {
        self.refuse_as(ty, false)
    }

    fn refuse_as(&self, ty: String, undeclared: bool) -> Result<(), NotCarried> {
        Err(NotCarried {
            path: self.path.join("."),
            ty,
            undeclared,
        })
    }

    fn ty(&mut self, ty: &'a TypeExpr) -> Result<(), NotCarried> {
        if self.missing_kind_word(ty) {
            return self.refuse(ty.text());
        }
        match self.types.resolve(ty) {
            Resolved::Prim(p) => self.prim(p, || ty.text()),
            Resolved::Identity(_) | Resolved::Range(_) | Resolved::Quantity(..) => Ok(()),
            Resolved::Struct(name, fields) => self.fields(name, fields, ty),
            Resolved::Point(..)
            | Resolved::Enum(..)
            | Resolved::Array(..)
            | Resolved::Tuple(_)
            | Resolved::Unit
            | Resolved::Cycle(_) => self.refuse(ty.text()),
            Resolved::Opaque(_) => {
                let undeclared = ty.bare_path().is_some_and(|p| p.segments.len() == 1);
                self.refuse_as(ty.text(), undeclared)
            }
        }
    }

    /// Whether `ty` is, through its aliases, a scalar over an integer with
    /// a denomination and no kind word (`type Cents = Int in cent;`).
    fn missing_kind_word(&self, ty: &TypeExpr) -> bool {
        let mut ty = ty;
        for _ in 0..MAX_SHAPE_DEPTH {
            let Some(decl) = self.types.named(ty) else {
                return false;
            };
            match &decl.body {
                TypeBody::Alias(target) => ty = target,
                TypeBody::Scalar(s) => {
                    return s.kind.is_none()
                        && s.denomination.is_some()
                        && matches!(
                            self.types.resolve(&s.base),
                            Resolved::Prim(Prim::Int | Prim::Uint)
                                | Resolved::Identity(_)
                                | Resolved::Range(_)
                        );
                }
                TypeBody::Struct(_) | TypeBody::Enum(_) => return false,
            }
        }
        false
    }

    fn prim(&self, p: Prim, text: impl Fn() -> String) -> Result<(), NotCarried> {
        match p {
            Prim::Int | Prim::Float | Prim::Bool | Prim::String => Ok(()),
            Prim::Uint | Prim::Decimal | Prim::Bytes | Prim::Time | Prim::Duration => {
                self.refuse(text())
            }
        }
    }

    fn fields(
        &mut self,
        name: &'a str,
        fields: Vec<FieldRef<'a>>,
        ty: &'a TypeExpr,
    ) -> Result<(), NotCarried> {
        if self.carried.contains(name) || self.stack.len() >= MAX_SHAPE_DEPTH {
            return Ok(());
        }
        if self.stack.contains(&name) {
            return self.refuse(ty.text());
        }
        self.stack.push(name);
        for f in fields {
            self.path.push(f.name());
            let r = match f {
                FieldRef::Declared(d) => self.ty(&d.ty),
                FieldRef::Builtin(_, p) => self.prim(p, || p.name().to_string()),
            };
            self.path.pop();
            r?;
        }
        self.stack.pop();
        self.carried.insert(name);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hale::model::parse_program;
    use crate::hale::syntax::ast::TypeBody;

    /// The judgment of the alias `Probe`'s target in `src`.
    fn form(src: &str) -> Result<(), NotCarried> {
        let p = parse_program("t.hl", src).unwrap();
        let TypeBody::Alias(ty) = &p.types.get("Probe").unwrap().body else {
            panic!("Probe is an alias")
        };
        json_form(&p.types, ty)
    }

    fn refused(src: &str, path: &str, ty: &str) {
        assert_eq!(
            form(src),
            Err(NotCarried {
                path: path.to_string(),
                ty: ty.to_string(),
                undeclared: ty == "Undeclared",
            }),
            "{src}"
        );
    }

    #[test]
    fn the_scalars_the_codec_carries() {
        let src = "unit cent; type Money = quantity Int in cent; type Id = distinct Int; \
                   type Byte = Int { range: 0..256; } type Count = Int; \
                   type S { a: Int; b: Float; c: Bool; d: String; e: Money; f: Id; g: Byte; h: Count; }";
        for t in [
            "Int", "Float", "Bool", "String", "Money", "Id", "Byte", "Count", "S",
        ] {
            assert_eq!(form(&format!("{src} type Probe = {t};")), Ok(()), "{t}");
        }
        assert_eq!(
            form("type Probe = ClosureViolation;"),
            Ok(()),
            "a builtin record"
        );
    }

    #[test]
    fn what_the_codec_does_not_carry() {
        let units = "unit ns; type Stamp = point Int in ns; type Side = enum { Buy, Sell };";
        for t in [
            "Bytes",
            "Uint",
            "Decimal",
            "Time",
            "Duration",
            "Stamp",
            "Side",
            "[Int]",
            "[Int; 4]",
            "(Int, Bool)",
            "Option<Int>",
            "Map<String, Int>",
            "Undeclared",
        ] {
            refused(&format!("{units} type Probe = {t};"), "", t);
        }
    }

    #[test]
    fn a_field_is_named_by_its_path() {
        refused(
            "type Inner { ok: Int; raw: Bytes; } type Export { n: Int; inner: Inner; } type Probe = Export;",
            "inner.raw",
            "Bytes",
        );
        // The first field not carried, in declaration order.
        refused(
            "type E { a: Int; b: [Int]; c: Bytes; } type Probe = E;",
            "b",
            "[Int]",
        );
    }

    #[test]
    fn a_struct_that_holds_itself_is_not_carried() {
        refused(
            "type Node { v: Int; next: Node; } type Probe = Node;",
            "next",
            "Node",
        );
        refused("type A = B; type B = A; type Probe = A;", "", "A");
    }

    #[test]
    fn a_denomination_without_its_kind_word_is_not_carried() {
        let units = "unit cent; type Cents = Int in cent; type Money = quantity Int in cent;";
        refused(&format!("{units} type Probe = Cents;"), "", "Cents");
        refused(&format!("{units} type C = Cents; type Probe = C;"), "", "C");
        refused(
            &format!("{units} type S {{ m: Money; c: Cents; }} type Probe = S;"),
            "c",
            "Cents",
        );
        // A refinement of a quantity keeps the quantity's word.
        let refined =
            format!("{units} type Ledger = Money {{ round: half_even; }} type Probe = Ledger;");
        assert_eq!(form(&refined), Ok(()));
    }

    #[test]
    fn a_shared_struct_is_judged_once() {
        // 2^40 paths through the same types: judged in linear time.
        let mut src = String::new();
        for i in 0..40 {
            src.push_str(&format!("type T{i} {{ a: T{}; b: T{}; }}\n", i + 1, i + 1));
        }
        src.push_str("type T40 { x: Int; }\ntype Probe = T0;");
        assert_eq!(form(&src), Ok(()));
    }
}
