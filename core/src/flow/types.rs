//! The data-type category as a Rust type model.
//!
//! A [`Type`] is what a value is decoded at and what a schema is generated
//! from. Named types (records and enums) are declared once in a [`TypeEnv`]
//! and referred to by [`Identity`], so recursive types are finite.

use std::collections::BTreeMap;

use super::identity::Identity;

/// A Flow data type.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Type {
    /// An exact integer of any size.
    Int,
    /// An exact, normalized decimal: never binary floating point.
    Decimal,
    /// A Unicode text.
    Text,
    /// `true` or `false`.
    Bool,
    /// A byte string (base64 on the wire).
    Bytes,
    /// A point on the UTC time line.
    Instant,
    /// A signed length of time.
    Duration,
    /// An ordered sequence.
    List(Box<Type>),
    /// An unordered collection without duplicates.
    Set(Box<Type>),
    /// A fixed-length sequence of types.
    Tuple(Vec<Type>),
    /// A map from keys to values.
    Dict(Box<Type>, Box<Type>),
    /// `None` or `Some(T)`.
    Option(Box<Type>),
    /// `Ok(T)` or `Err(E)`.
    Result(Box<Type>, Box<Type>),
    /// `json.Value`: raw JSON, passed through untouched.
    Json,
    /// A host token: chosen by the host that made it, compared by nobody.
    HostToken,
    /// The type with no values.
    Never,
    /// A declared record or enum, with its type arguments.
    Named {
        /// The declaration's identity.
        identity: Identity,
        /// Type arguments, one per declared type parameter.
        args: Vec<Type>,
    },
    /// A generic type parameter, by name.
    Param(String),
}

impl Type {
    /// `List<T>`.
    pub fn list(item: Type) -> Type {
        Type::List(Box::new(item))
    }
    /// `Set<T>`.
    pub fn set(item: Type) -> Type {
        Type::Set(Box::new(item))
    }
    /// `Dict<K, V>`.
    pub fn dict(key: Type, value: Type) -> Type {
        Type::Dict(Box::new(key), Box::new(value))
    }
    /// `Option<T>`.
    pub fn option(inner: Type) -> Type {
        Type::Option(Box::new(inner))
    }
    /// `Result<T, E>`.
    pub fn result(ok: Type, err: Type) -> Type {
        Type::Result(Box::new(ok), Box::new(err))
    }
    /// A named type without type arguments.
    pub fn named(identity: Identity) -> Type {
        Type::Named {
            identity,
            args: Vec::new(),
        }
    }
    /// A named generic type applied to arguments.
    pub fn applied(identity: Identity, args: Vec<Type>) -> Type {
        Type::Named { identity, args }
    }
    /// A generic type parameter.
    pub fn param(name: &str) -> Type {
        Type::Param(name.to_owned())
    }
}

/// A field of a record, or a named payload field of an enum constructor.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Field {
    /// The field's name, which is its JSON key.
    pub name: String,
    /// The field's `///` doc comment, if any.
    pub doc: Option<String>,
    /// The field's type.
    pub ty: Type,
}

impl Field {
    /// A field without a doc comment.
    pub fn new(name: &str, ty: Type) -> Field {
        Field {
            name: name.to_owned(),
            doc: None,
            ty,
        }
    }
    /// The same field with a doc comment.
    pub fn doc(mut self, doc: &str) -> Field {
        self.doc = Some(doc.to_owned());
        self
    }
}

/// What an enum constructor carries.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Payload {
    /// Nothing: the constructor is encoded as its name, `"C"`.
    Unit,
    /// One value: `{"C": value}`.
    Value(Type),
    /// Named fields: `{"C": {"field": …}}`, fields read as a record's are.
    Fields(Vec<Field>),
}

/// An enum constructor.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Constructor {
    /// The constructor's name.
    pub name: String,
    /// Its `///` doc comment, if any.
    pub doc: Option<String>,
    /// What it carries.
    pub payload: Payload,
}

impl Constructor {
    /// A constructor without payload.
    pub fn unit(name: &str) -> Constructor {
        Constructor {
            name: name.to_owned(),
            doc: None,
            payload: Payload::Unit,
        }
    }
    /// A constructor with one payload value.
    pub fn value(name: &str, ty: Type) -> Constructor {
        Constructor {
            name: name.to_owned(),
            doc: None,
            payload: Payload::Value(ty),
        }
    }
    /// A constructor with named payload fields.
    pub fn fields(name: &str, fields: Vec<Field>) -> Constructor {
        Constructor {
            name: name.to_owned(),
            doc: None,
            payload: Payload::Fields(fields),
        }
    }
    /// The same constructor with a doc comment.
    pub fn doc(mut self, doc: &str) -> Constructor {
        self.doc = Some(doc.to_owned());
        self
    }
}

/// The body of a named type.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TypeBody {
    /// A record: fields in declaration order.
    Record(Vec<Field>),
    /// An enum: constructors in declaration order.
    Enum(Vec<Constructor>),
}

/// The declaration of a named type.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TypeDecl {
    /// The type's identity, `repository@version/file.Name`.
    pub identity: Identity,
    /// The type's `///` doc comment, if any.
    pub doc: Option<String>,
    /// Generic type parameters, in declaration order.
    pub params: Vec<String>,
    /// Its fields or constructors.
    pub body: TypeBody,
}

impl TypeDecl {
    /// A record type without type parameters.
    pub fn record(identity: Identity, fields: Vec<Field>) -> TypeDecl {
        TypeDecl {
            identity,
            doc: None,
            params: Vec::new(),
            body: TypeBody::Record(fields),
        }
    }
    /// An enum type without type parameters.
    pub fn enumeration(identity: Identity, constructors: Vec<Constructor>) -> TypeDecl {
        TypeDecl {
            identity,
            doc: None,
            params: Vec::new(),
            body: TypeBody::Enum(constructors),
        }
    }
    /// The same declaration with a doc comment.
    pub fn doc(mut self, doc: &str) -> TypeDecl {
        self.doc = Some(doc.to_owned());
        self
    }
    /// The same declaration with generic type parameters.
    pub fn generic(mut self, params: &[&str]) -> TypeDecl {
        self.params = params.iter().map(|p| (*p).to_owned()).collect();
        self
    }
}

/// The named types a set of types refers to, keyed by identity.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TypeEnv {
    decls: BTreeMap<Identity, TypeDecl>,
}

impl TypeEnv {
    /// An empty environment.
    pub fn new() -> TypeEnv {
        TypeEnv::default()
    }
    /// Declares a named type, replacing any earlier one of the same identity.
    pub fn declare(&mut self, decl: TypeDecl) {
        self.decls.insert(decl.identity.clone(), decl);
    }
    /// The declaration of `identity`, if declared.
    pub fn get(&self, identity: &Identity) -> Option<&TypeDecl> {
        self.decls.get(identity)
    }
    /// Every declaration, ordered by identity.
    pub fn iter(&self) -> impl Iterator<Item = &TypeDecl> {
        self.decls.values()
    }
    /// How many named types are declared.
    pub fn len(&self) -> usize {
        self.decls.len()
    }
    /// Whether no named type is declared.
    pub fn is_empty(&self) -> bool {
        self.decls.is_empty()
    }
}
