//! The program's types: every `type` declaration by name, and what a type
//! expression stands for once aliases are followed and the unit dialect's
//! scalars are classified (`units.md` § Declarations: a quantity, a point,
//! an identity, a range).

use std::collections::{BTreeMap, BTreeSet};

use crate::hale::syntax::ast::{
    FieldDecl, Path, ScalarKind, TypeBody, TypeDecl, TypeExpr, VariantDecl,
};

/// A primitive type, by the name a program writes it with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Prim {
    /// `Int`
    Int,
    /// `Uint`
    Uint,
    /// `Float`
    Float,
    /// `Decimal`
    Decimal,
    /// `Bool`
    Bool,
    /// `String`
    String,
    /// `Bytes`
    Bytes,
    /// `Time`
    Time,
    /// `Duration`
    Duration,
}

impl Prim {
    /// The primitive a one-segment name spells, if any.
    pub fn named(name: &str) -> Option<Prim> {
        Some(match name {
            "Int" => Prim::Int,
            "Uint" => Prim::Uint,
            "Float" => Prim::Float,
            "Decimal" => Prim::Decimal,
            "Bool" => Prim::Bool,
            "String" | "StringView" => Prim::String,
            "Bytes" | "BytesView" | "BytesMut" => Prim::Bytes,
            "Time" => Prim::Time,
            "Duration" => Prim::Duration,
            _ => return None,
        })
    }

    /// The primitive's name.
    pub fn name(self) -> &'static str {
        match self {
            Prim::Int => "Int",
            Prim::Uint => "Uint",
            Prim::Float => "Float",
            Prim::Decimal => "Decimal",
            Prim::Bool => "Bool",
            Prim::String => "String",
            Prim::Bytes => "Bytes",
            Prim::Time => "Time",
            Prim::Duration => "Duration",
        }
    }

    /// The primitive's tag in a shape (`units.md` § Layout and the wire):
    /// `i` Int and Uint, `f` Float, `d` Decimal, `b` Bool, `s` String,
    /// `y` Bytes, `t` Time, `u` Duration.
    pub fn tag(self) -> &'static str {
        match self {
            Prim::Int | Prim::Uint => "i",
            Prim::Float => "f",
            Prim::Decimal => "d",
            Prim::Bool => "b",
            Prim::String => "s",
            Prim::Bytes => "y",
            Prim::Time => "t",
            Prim::Duration => "u",
        }
    }
}

/// A builtin record the standard library gives every program, by name and
/// its fields in order (each a primitive).
#[derive(Debug)]
pub struct Builtin {
    /// The record's name.
    pub name: &'static str,
    /// Its fields in order.
    pub fields: &'static [(&'static str, Prim)],
}

/// The builtin records a row may name without declaring them:
/// `ClosureViolation` (`semantics.md` § Inline closure violation: `locus`
/// and `closure` Strings, `diff` an Int) and `RangeError` (`units.md` §
/// Identities and ranges). A declaration of the same name wins.
pub const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "ClosureViolation",
        fields: &[
            ("locus", Prim::String),
            ("closure", Prim::String),
            ("diff", Prim::Int),
        ],
    },
    Builtin {
        name: "RangeError",
        fields: &[
            ("kind", Prim::String),
            ("value", Prim::Int),
            ("low", Prim::Int),
            ("high", Prim::Int),
        ],
    },
];

/// One field of a struct, declared or builtin.
#[derive(Clone, Copy, Debug)]
pub enum FieldRef<'a> {
    /// A field the program declares.
    Declared(&'a FieldDecl),
    /// A field of a builtin record.
    Builtin(&'static str, Prim),
}

impl<'a> FieldRef<'a> {
    /// The field's name as declared.
    pub fn name(&self) -> &'a str {
        match self {
            FieldRef::Declared(f) => &f.name.name,
            FieldRef::Builtin(n, _) => n,
        }
    }

    /// The key the JSON codec carries the field under: its `json:"key"`
    /// tag, else its name.
    pub fn json_key(&self) -> &'a str {
        match self {
            FieldRef::Declared(f) => f.json_key.as_ref().map_or(&f.name.name, |(k, _)| k),
            FieldRef::Builtin(n, _) => n,
        }
    }
}

/// What a type expression stands for.
#[derive(Clone, Debug)]
pub enum Resolved<'a> {
    /// A primitive.
    Prim(Prim),
    /// An identity (`distinct Int`) by its name: carried as its `Int`.
    Identity(&'a str),
    /// A range (`Int { range: 0..256; }`, or a range over an identity or
    /// another range) by its name: carried as its `Int`.
    Range(&'a str),
    /// A quantity by its name, with its denomination as the `q(…)` tag
    /// shows it (`cent`, `100ms`).
    Quantity(&'a str, String),
    /// A point by its name, with its denomination.
    Point(&'a str, String),
    /// A struct: a declared one, or a builtin record.
    Struct(&'a str, Vec<FieldRef<'a>>),
    /// An enum, by its name and variants.
    Enum(&'a str, &'a [VariantDecl]),
    /// `[T]` or `[T; N]`.
    Array(&'a TypeExpr, Option<&'a str>),
    /// `(A, B, …)`.
    Tuple(&'a [TypeExpr]),
    /// `()`.
    Unit,
    /// A type the program does not declare (an imported or stdlib type
    /// such as `std::api::Principal`, a generic parameter, a function
    /// type), by its text.
    Opaque(String),
    /// An alias chain that comes back to itself, by the name it loops at.
    Cycle(&'a str),
}

/// Every `type` declaration of the program by name. A second declaration of
/// a name is kept out of the table (the model lists it as a duplicate).
#[derive(Clone, Debug, Default)]
pub struct TypeTable {
    decls: Vec<TypeDecl>,
    by_name: BTreeMap<String, usize>,
}

impl TypeTable {
    /// The table of `decls`, first declaration of a name winning; returns
    /// the declarations refused as second ones.
    pub fn new(decls: Vec<TypeDecl>) -> (TypeTable, Vec<TypeDecl>) {
        let mut table = TypeTable::default();
        let mut dups = Vec::new();
        for d in decls {
            if table.by_name.contains_key(&d.name.name) {
                dups.push(d);
            } else {
                table.by_name.insert(d.name.name.clone(), table.decls.len());
                table.decls.push(d);
            }
        }
        (table, dups)
    }

    /// The declaration of `name`.
    pub fn get(&self, name: &str) -> Option<&TypeDecl> {
        self.by_name.get(name).map(|&i| &self.decls[i])
    }

    /// Every declaration, in the order written.
    pub fn iter(&self) -> impl Iterator<Item = &TypeDecl> {
        self.decls.iter()
    }

    /// The declaration a non-generic type expression names: a one-segment
    /// name, or an imported type by its path under the import's alias
    /// (`lib::Item`, the name the import gives its declaration).
    pub fn named(&self, ty: &TypeExpr) -> Option<&TypeDecl> {
        self.by_path(ty.bare_path()?)
    }

    /// The declaration `path` names, by its text (one segment read without
    /// building a string: a type is resolved on every decoding).
    fn by_path(&self, path: &Path) -> Option<&TypeDecl> {
        match path.segments.as_slice() {
            [one] => self.get(&one.name),
            _ => self.get(&path.text()),
        }
    }

    /// What `ty` stands for: aliases followed to where their chain ends,
    /// scalars classified, builtin records given their fields.
    pub fn resolve<'a>(&'a self, ty: &'a TypeExpr) -> Resolved<'a> {
        self.resolve_in(ty, &mut BTreeSet::new())
    }

    fn resolve_in<'a>(&'a self, ty: &'a TypeExpr, seen: &mut BTreeSet<&'a str>) -> Resolved<'a> {
        match ty {
            TypeExpr::Unit(_) => return Resolved::Unit,
            TypeExpr::Tuple(parts, _) => return Resolved::Tuple(parts),
            TypeExpr::Array { elem, len, .. } => return Resolved::Array(elem, len.as_deref()),
            TypeExpr::Fn { .. } => return Resolved::Opaque(ty.text()),
            TypeExpr::Named { .. } => {}
        }
        let Some(path) = ty.bare_path() else {
            return Resolved::Opaque(ty.text());
        };
        // An imported type is declared under its alias path (`lib::Item`);
        // the prims and builtins are one segment.
        let Some(decl) = self.by_path(path) else {
            if path.segments.len() != 1 {
                return Resolved::Opaque(ty.text());
            }
            let name = path.last();
            if let Some(p) = Prim::named(name) {
                return Resolved::Prim(p);
            }
            if let Some(b) = BUILTINS.iter().find(|b| b.name == name) {
                return Resolved::Struct(
                    b.name,
                    b.fields
                        .iter()
                        .map(|(n, p)| FieldRef::Builtin(n, *p))
                        .collect(),
                );
            }
            return Resolved::Opaque(ty.text());
        };
        let name: &'a str = &decl.name.name;
        if !seen.insert(name) {
            return Resolved::Cycle(name);
        }
        match &decl.body {
            TypeBody::Struct(fields) => {
                Resolved::Struct(name, fields.iter().map(FieldRef::Declared).collect())
            }
            TypeBody::Enum(variants) => Resolved::Enum(name, variants),
            TypeBody::Alias(target) => self.resolve_in(target, seen),
            TypeBody::Scalar(s) => {
                let own = s.denomination.as_ref().map(|d| d.text());
                let base = self.resolve_in(&s.base, seen);
                let inherited = match &base {
                    Resolved::Quantity(_, d) | Resolved::Point(_, d) => Some(d.clone()),
                    _ => None,
                };
                let denom = own.or(inherited);
                let int_like = matches!(
                    base,
                    Resolved::Prim(Prim::Int | Prim::Uint)
                        | Resolved::Identity(_)
                        | Resolved::Range(_)
                );
                match (s.kind, &base) {
                    (Some(ScalarKind::Quantity), _) => {
                        Resolved::Quantity(name, denom.unwrap_or_default())
                    }
                    (Some(ScalarKind::Point), _) => {
                        Resolved::Point(name, denom.unwrap_or_default())
                    }
                    (Some(ScalarKind::Distinct), _) if int_like => Resolved::Identity(name),
                    (None, Resolved::Quantity(..)) => {
                        Resolved::Quantity(name, denom.unwrap_or_default())
                    }
                    (None, Resolved::Point(..)) => Resolved::Point(name, denom.unwrap_or_default()),
                    // `Int in D` is a quantity missing its word (law 5 refuses it).
                    (None, _) if int_like && denom.is_some() => {
                        Resolved::Quantity(name, denom.unwrap_or_default())
                    }
                    (None, _) if int_like => Resolved::Range(name),
                    // `distinct Float` and a refinement of a non-scalar are refused
                    // by the unit laws; until then they stand for their base.
                    _ => base,
                }
            }
        }
    }
}
