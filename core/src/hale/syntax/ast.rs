//! The declarations of a `.hl` file as written: what [`parse`](super::parse)
//! returns and the model is built from.
//!
//! Function bodies are not executed and not kept: a [`Body`] holds only what
//! the boundary reads from one, its `api::serve(…)` sites, its `let`
//! bindings, its `x.stop()` calls, its `violate` statements and the struct
//! or locus literals it writes, each with where it stands.

use super::diag::{Pos, Span};

/// A name as written, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ident {
    /// The name.
    pub name: String,
    /// Where it is written.
    pub span: Span,
}

/// A `::`-joined name (`Orders::place`, `std::api::Context`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Path {
    /// The segments, outermost first.
    pub segments: Vec<Ident>,
    /// From the first segment to the last.
    pub span: Span,
}

impl Path {
    /// The name as written, segments joined by `::`.
    pub fn text(&self) -> String {
        let parts: Vec<&str> = self.segments.iter().map(|s| s.name.as_str()).collect();
        parts.join("::")
    }

    /// The last segment.
    pub fn last(&self) -> &str {
        self.segments.last().map_or("", |s| s.name.as_str())
    }

    /// Whether this is one segment spelling `name`.
    pub fn is(&self, name: &str) -> bool {
        self.segments.len() == 1 && self.segments[0].name == name
    }
}

/// A type as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeExpr {
    /// A named type, with generic arguments when written (`Int`,
    /// `std::api::Context`, `Box<Item>`).
    Named {
        /// The name.
        path: Path,
        /// `<…>` arguments, empty when none.
        args: Vec<TypeExpr>,
        /// Where it is written.
        span: Span,
    },
    /// `[T]` or `[T; N]`.
    Array {
        /// The element type.
        elem: Box<TypeExpr>,
        /// The length as written, when given.
        len: Option<String>,
        /// Where it is written.
        span: Span,
    },
    /// `(A, B, …)`, two or more.
    Tuple(Vec<TypeExpr>, Span),
    /// `()`.
    Unit(Span),
    /// `fn(A, …) -> R`.
    Fn {
        /// The parameter types.
        params: Vec<TypeExpr>,
        /// The return type, when written.
        ret: Option<Box<TypeExpr>>,
        /// Where it is written.
        span: Span,
    },
}

impl TypeExpr {
    /// Where the type is written.
    pub fn span(&self) -> Span {
        match self {
            TypeExpr::Named { span, .. }
            | TypeExpr::Array { span, .. }
            | TypeExpr::Fn { span, .. }
            | TypeExpr::Tuple(_, span)
            | TypeExpr::Unit(span) => *span,
        }
    }

    /// The path of a named type without generic arguments.
    pub fn bare_path(&self) -> Option<&Path> {
        match self {
            TypeExpr::Named { path, args, .. } if args.is_empty() => Some(path),
            _ => None,
        }
    }

    /// The type as an author would write it (`Int`, `[Item; 4]`, `()`).
    pub fn text(&self) -> String {
        match self {
            TypeExpr::Named { path, args, .. } if args.is_empty() => path.text(),
            TypeExpr::Named { path, args, .. } => {
                let a: Vec<String> = args.iter().map(TypeExpr::text).collect();
                format!("{}<{}>", path.text(), a.join(", "))
            }
            TypeExpr::Array {
                elem, len: None, ..
            } => format!("[{}]", elem.text()),
            TypeExpr::Array {
                elem, len: Some(n), ..
            } => format!("[{}; {n}]", elem.text()),
            TypeExpr::Tuple(parts, _) => {
                let p: Vec<String> = parts.iter().map(TypeExpr::text).collect();
                format!("({})", p.join(", "))
            }
            TypeExpr::Unit(_) => "()".to_string(),
            TypeExpr::Fn { params, ret, .. } => {
                let p: Vec<String> = params.iter().map(TypeExpr::text).collect();
                match ret {
                    Some(r) => format!("fn({}) -> {}", p.join(", "), r.text()),
                    None => format!("fn({})", p.join(", ")),
                }
            }
        }
    }
}

/// A unary operator of an expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    /// `-`
    Neg,
    /// `!`
    Not,
}

/// An expression as written: a param's default, a literal's field, a serve
/// site's argument, an attribute's argument. Bodies are not parsed into
/// expressions beyond what [`Body`] keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    /// A number as written (`64`, `1.5`, `1500cent`).
    Number(String, Span),
    /// A string literal, decoded.
    Str(String, Span),
    /// A name (`json`, `refuse`, `self`, `std::time::sleep`).
    Path(Path),
    /// `base.name`.
    Field {
        /// What the field is read from.
        base: Box<Expr>,
        /// The field.
        name: Ident,
        /// Where it is written.
        span: Span,
    },
    /// `base[index]`.
    Index {
        /// What is indexed.
        base: Box<Expr>,
        /// The index.
        index: Box<Expr>,
        /// Where it is written.
        span: Span,
    },
    /// `callee(args)`.
    Call {
        /// What is called.
        callee: Box<Expr>,
        /// The arguments in order.
        args: Vec<Arg>,
        /// Where it is written.
        span: Span,
    },
    /// A literal of a struct or locus: `Tokens { }`, `http::Rpc { bind: … }`.
    Struct {
        /// The type it builds.
        path: Path,
        /// The fields in order.
        fields: Vec<FieldInit>,
        /// Where it is written.
        span: Span,
    },
    /// `[a, b, …]`.
    List(Vec<Expr>, Span),
    /// `{ Key: value, … }`: a map keyed by names, as `receivers:` is.
    Map(Vec<(Path, Expr)>, Span),
    /// `(a, b, …)`, two or more.
    Tuple(Vec<Expr>, Span),
    /// `()`.
    Unit(Span),
    /// A unary operation.
    Unary {
        /// The operator.
        op: UnOp,
        /// The operand.
        expr: Box<Expr>,
        /// Where it is written.
        span: Span,
    },
    /// A binary operation, its operator as written (`+`, `&&`, `..`).
    Binary {
        /// The operator.
        op: &'static str,
        /// The left operand.
        lhs: Box<Expr>,
        /// The right operand.
        rhs: Box<Expr>,
        /// Where it is written.
        span: Span,
    },
}

impl Expr {
    /// Where the expression is written.
    pub fn span(&self) -> Span {
        match self {
            Expr::Number(_, s)
            | Expr::Str(_, s)
            | Expr::List(_, s)
            | Expr::Map(_, s)
            | Expr::Tuple(_, s)
            | Expr::Unit(s) => *s,
            Expr::Path(p) => p.span,
            Expr::Field { span, .. }
            | Expr::Index { span, .. }
            | Expr::Call { span, .. }
            | Expr::Struct { span, .. }
            | Expr::Unary { span, .. }
            | Expr::Binary { span, .. } => *span,
        }
    }

    /// `self.<name>`: the param of the enclosing locus it names.
    pub fn self_field(&self) -> Option<&Ident> {
        match self {
            Expr::Field { base, name, .. } => match base.as_ref() {
                Expr::Path(p) if p.is("self") => Some(name),
                _ => None,
            },
            _ => None,
        }
    }

    /// The one-segment name this expression is (`json`, `refuse`).
    pub fn word(&self) -> Option<&Ident> {
        match self {
            Expr::Path(p) if p.segments.len() == 1 => p.segments.first(),
            _ => None,
        }
    }

    /// The value of a string literal.
    pub fn str_value(&self) -> Option<&str> {
        match self {
            Expr::Str(s, _) => Some(s),
            _ => None,
        }
    }

    /// The value of an integer literal written in decimal without a suffix
    /// (`64`, `1_000`).
    pub fn int_value(&self) -> Option<u64> {
        match self {
            Expr::Number(t, _) if t.chars().all(|c| c.is_ascii_digit() || c == '_') => {
                t.replace('_', "").parse().ok()
            }
            _ => None,
        }
    }

    /// The field `name` of a struct literal.
    pub fn struct_field(&self, name: &str) -> Option<&Expr> {
        match self {
            Expr::Struct { fields, .. } => fields
                .iter()
                .find(|f| f.name.name == name)
                .map(|f| &f.value),
            _ => None,
        }
    }

    /// A short rendering of the expression as written, for documents and
    /// messages (`self.orders`, `"127.0.0.1:8080"`, `Tokens { … }`).
    pub fn text(&self) -> String {
        match self {
            Expr::Number(t, _) => t.clone(),
            Expr::Str(s, _) => format!("{s:?}"),
            Expr::Path(p) => p.text(),
            Expr::Field { base, name, .. } => format!("{}.{}", base.text(), name.name),
            Expr::Index { base, index, .. } => format!("{}[{}]", base.text(), index.text()),
            Expr::Call { callee, .. } => format!("{}(…)", callee.text()),
            Expr::Struct { path, fields, .. } if fields.is_empty() => {
                format!("{} {{ }}", path.text())
            }
            Expr::Struct { path, .. } => format!("{} {{ … }}", path.text()),
            Expr::List(..) => "[…]".to_string(),
            Expr::Map(..) => "{ … }".to_string(),
            Expr::Tuple(..) => "(…)".to_string(),
            Expr::Unit(_) => "()".to_string(),
            Expr::Unary {
                op: UnOp::Neg,
                expr,
                ..
            } => format!("-{}", expr.text()),
            Expr::Unary {
                op: UnOp::Not,
                expr,
                ..
            } => format!("!{}", expr.text()),
            Expr::Binary { op, lhs, rhs, .. } => format!("{} {op} {}", lhs.text(), rhs.text()),
        }
    }
}

/// One field of a struct literal: `name: value`, or the shorthand `name`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldInit {
    /// The field.
    pub name: Ident,
    /// Its value (for the shorthand, the path `name`).
    pub value: Expr,
}

/// One argument of a call: positional, or named (`as: "public"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arg {
    /// The name of a named argument.
    pub name: Option<Ident>,
    /// The value.
    pub value: Expr,
}

/// An attribute on a declaration: `@rpc`, `@rpc(requires: [trader])`,
/// `@form(vec, cap = 4)`. Arguments a name `=` value are kept as named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attribute {
    /// The word after `@`.
    pub name: Ident,
    /// The arguments, `None` when no parentheses follow.
    pub args: Option<Vec<Arg>>,
    /// From `@` to the end.
    pub span: Span,
}

/// A file: its declarations in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct File {
    /// The declarations, in the order written.
    pub items: Vec<Item>,
}

/// One top-level declaration.
// A function is the largest declaration by far (its body's facts inline);
// a file's items are built once and read in place, never moved in a hot
// path, so boxing it would add an indirection to every reader for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    /// `import "path" as name;`
    Import(ImportDecl),
    /// `role trader;`
    Role(RoleDecl),
    /// `unit cent;`, `unit USD = 100 cent;`
    Unit(UnitDecl),
    /// `type …`
    Type(TypeDecl),
    /// `topic Fills { … }`
    Topic(TopicDecl),
    /// `api Public { … }`
    Api(ApiDecl),
    /// `locus …` or `main locus …`
    Locus(LocusDecl),
    /// A free `fn`.
    Fn(FnDecl),
    /// `const NAME: T = value;`
    Const(ConstDecl),
    /// A declaration the boundary does not read (`interface`, `perspective`,
    /// `target`, `module`), kept by its word and name.
    Other {
        /// The declaring word.
        keyword: Ident,
        /// The declared name.
        name: Option<Ident>,
        /// The whole declaration.
        span: Span,
    },
}

/// `import "path" as name;`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportDecl {
    /// The imported path.
    pub path: String,
    /// The alias it is named by.
    pub alias: Ident,
    /// The whole declaration.
    pub span: Span,
}

/// `role NAME;` or `role NAME includes [A, B];`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoleDecl {
    /// The role.
    pub name: Ident,
    /// The roles it includes (a holder of this role holds those).
    pub includes: Vec<Ident>,
    /// The whole declaration.
    pub span: Span,
}

/// `unit NAME;` or `unit NAME = FACTOR [TARGET];`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitDecl {
    /// The unit.
    pub name: Ident,
    /// Its equation, when it states one.
    pub equation: Option<UnitEquation>,
    /// The whole declaration.
    pub span: Span,
}

/// `= 1000 ns`, `= 127/5 mm`, `= 1/100`: one `NAME` is `factor` `target`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitEquation {
    /// The factor as written (`1000`, `127/5`).
    pub factor: String,
    /// The target unit; none for a multiple of the number one.
    pub target: Option<Ident>,
}

/// `type NAME[<…>] …`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeDecl {
    /// The type.
    pub name: Ident,
    /// Generic parameter names, empty when none.
    pub generics: Vec<Ident>,
    /// What it is.
    pub body: TypeBody,
    /// The whole declaration.
    pub span: Span,
}

/// What a `type` declaration declares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeBody {
    /// `type Count = Int;`
    Alias(TypeExpr),
    /// `type Money = quantity Int in cent;`, `type OrderId = distinct Int;`,
    /// `type Byte = Int { range: 0..256; }`
    Scalar(ScalarDecl),
    /// `type T { field: Ty; … }`
    Struct(Vec<FieldDecl>),
    /// `type Side = enum { Buy, Sell(Int) };`
    Enum(Vec<VariantDecl>),
}

/// The kind word of a scalar declaration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarKind {
    /// `quantity`
    Quantity,
    /// `point`
    Point,
    /// `distinct`: an identity.
    Distinct,
}

/// `[quantity | point | distinct] BASE [in DENOMINATION] [{ CLAUSE; … }]`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScalarDecl {
    /// The kind word, when written.
    pub kind: Option<ScalarKind>,
    /// The type it is written over.
    pub base: TypeExpr,
    /// `in …`, when written.
    pub denomination: Option<Denomination>,
    /// The clauses of `{ … }` (`range`, `round`, `origin`), in order.
    pub clauses: Vec<Clause>,
}

/// A denomination: a unit and an optional positive multiple (`cent`,
/// `100ms`, `100 ms`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denomination {
    /// The multiple's digits as written, underscores removed; none when not
    /// written.
    pub multiple: Option<String>,
    /// The unit.
    pub unit: Ident,
}

impl Denomination {
    /// The denomination as its `q(…)` tag shows it: the unit, preceded by
    /// the multiple when one other than 1 is written (`cent`, `100ms`).
    pub fn text(&self) -> String {
        match self.multiple.as_deref() {
            None | Some("1") => self.unit.name.clone(),
            Some(m) => format!("{m}{}", self.unit.name),
        }
    }
}

/// A `name: value;` clause kept as its name and its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Clause {
    /// The clause's name.
    pub name: Ident,
    /// The value as written (the source text up to the `;`).
    pub value: String,
    /// The whole clause.
    pub span: Span,
}

/// One field of a struct declaration: `name: Ty [json:"key"] [= default];`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldDecl {
    /// The field.
    pub name: Ident,
    /// Its type.
    pub ty: TypeExpr,
    /// The `json:"key"` tag, when written: the key the JSON codec carries
    /// the field under.
    pub json_key: Option<(String, Span)>,
    /// The literal default, when written.
    pub default: Option<Expr>,
    /// The whole field.
    pub span: Span,
}

/// One variant of an enum: `Name` or `Name(T, …)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VariantDecl {
    /// The variant.
    pub name: Ident,
    /// Its field types, empty when none.
    pub fields: Vec<TypeExpr>,
}

/// `topic NAME [: PARENT] { payload: T; subject: "s"; … }`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicDecl {
    /// The topic.
    pub name: Ident,
    /// The parent topic, when written.
    pub parent: Option<Ident>,
    /// `payload: T;`
    pub payload: Option<TypeExpr>,
    /// `subject: "s";`, the wire segment.
    pub subject: Option<(String, Span)>,
    /// Every other field (`keyed_by`, `on_unmatched`, …) by name and text.
    pub other: Vec<Clause>,
    /// The whole declaration.
    pub span: Span,
}

/// `api NAME { rpc L::f [requires: [r, …]]; … }`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiDecl {
    /// The surface.
    pub name: Ident,
    /// Its rows, in order.
    pub rows: Vec<RpcRowDecl>,
    /// The whole declaration.
    pub span: Span,
}

/// One `rpc Locus::fn [requires: [r, …]];` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RpcRowDecl {
    /// The member as written.
    pub member: Path,
    /// The required roles as written, in order; `None` when no
    /// `requires:` is written.
    pub requires: Option<Vec<Ident>>,
    /// The whole line.
    pub span: Span,
}

/// `[main] locus NAME { … }`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocusDecl {
    /// Attributes before it (`@form(…)`).
    pub attrs: Vec<Attribute>,
    /// Whether it is the `main` locus.
    pub is_main: bool,
    /// The locus.
    pub name: Ident,
    /// Its members in order.
    pub members: Vec<LocusMember>,
    /// The whole declaration.
    pub span: Span,
}

/// One member of a locus.
// As for `Item`: a function is the large member, read in place.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LocusMember {
    /// `params { … }`
    Params(Vec<ParamDecl>, Span),
    /// `bus { … }`
    Bus(Vec<BusEntry>, Span),
    /// `closure NAME { … }`
    Closure(Ident, Span),
    /// `placement { … }`
    Placement(Vec<PlacementEntry>, Span),
    /// `bindings { … }`
    Bindings(Vec<BindingEntry>, Span),
    /// A `fn`, a lifecycle method, a mode or a failure handler.
    Fn(FnDecl),
    /// A `type` declared inside the locus.
    Type(TypeDecl),
    /// A `const` declared inside the locus.
    Const(ConstDecl),
    /// A member the boundary does not read (`contract`, `capacity`,
    /// `birth_check`), by its word.
    Other(Ident, Span),
}

/// One param: `name[: T] = default;` or `name[: T]: inferred;`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamDecl {
    /// The param.
    pub name: Ident,
    /// Its declared type.
    pub ty: Option<TypeExpr>,
    /// Its default, the literal that builds it.
    pub default: Option<Expr>,
    /// `: inferred`.
    pub inferred: bool,
    /// The whole param.
    pub span: Span,
}

/// What a bus entry names: a declared topic or a literal subject.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BusSubject {
    /// A topic by name.
    Topic(Path),
    /// A literal wire subject.
    Literal(String, Span),
}

/// The direction of a bus entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BusDirection {
    /// `publish`
    Publish,
    /// `subscribe`
    Subscribe,
}

/// `publish S [of type T] [as x];` or `subscribe S as h [of type T] […];`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BusEntry {
    /// Publish or subscribe.
    pub direction: BusDirection,
    /// What it names.
    pub subject: BusSubject,
    /// `of type T`, when written.
    pub of_type: Option<TypeExpr>,
    /// `as x`: the handler of a subscription.
    pub alias: Option<Ident>,
    /// The whole entry.
    pub span: Span,
}

/// Where a placement entry puts its param.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlacementSpec {
    /// `cooperative[(pool = NAME)]`; no pool written is the pool `main`.
    Cooperative(Option<Ident>),
    /// `pinned[(core = N)]`.
    Pinned(Option<String>),
}

/// `param: cooperative(pool = desk) [where async_io];`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlacementEntry {
    /// The main locus's param it places.
    pub param: Ident,
    /// Where.
    pub spec: PlacementSpec,
    /// The `where` constraints.
    pub constraints: Vec<Ident>,
    /// The whole entry.
    pub span: Span,
}

/// `Topic: TRANSPORT [requires: [r, …]], bound: N, on_full: P [where …];`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BindingEntry {
    /// The topic.
    pub topic: Ident,
    /// What it is bound to (`self.hub`, `unix("…")`, an adapter literal).
    pub transport: Expr,
    /// The `name: value` options in order (`requires`, `bound`, `on_full`,
    /// `codec`, …).
    pub options: Vec<(Ident, Expr)>,
    /// The `where` constraints.
    pub constraints: Vec<Ident>,
    /// The whole entry.
    pub span: Span,
}

impl BindingEntry {
    /// The option `name`, when written.
    pub fn option(&self, name: &str) -> Option<&Expr> {
        self.options
            .iter()
            .find(|(n, _)| n.name == name)
            .map(|(_, e)| e)
    }
}

/// What kind of function a declaration is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FnKind {
    /// `fn name(…)`
    Plain,
    /// `birth(…)`, `accept(…)`, `run(…)`, `drain(…)`, `dissolve(…)`
    Lifecycle,
    /// `mode bulk(…)`
    Mode,
    /// `on_failure(…)`
    OnFailure,
}

/// A parameter of a function: `name: T [= default]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FnParam {
    /// The parameter.
    pub name: Ident,
    /// Its type.
    pub ty: TypeExpr,
    /// Its default, when written.
    pub default: Option<Expr>,
}

/// A function: free, a locus member, a lifecycle method, a mode or a
/// failure handler.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FnDecl {
    /// Attributes before it (`@rpc`, `@rpc(requires: [trader])`).
    pub attrs: Vec<Attribute>,
    /// What kind it is.
    pub kind: FnKind,
    /// Its name (`place`, `run`, `bulk`, `on_failure`).
    pub name: Ident,
    /// Generic parameter names.
    pub generics: Vec<Ident>,
    /// Its parameters in order.
    pub params: Vec<FnParam>,
    /// `-> T`, when written.
    pub ret: Option<TypeExpr>,
    /// `fallible(E)`, when written.
    pub fallible: Option<TypeExpr>,
    /// What the boundary reads of its body.
    pub body: Body,
    /// The whole declaration.
    pub span: Span,
}

/// `const NAME: T = value;`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConstDecl {
    /// The constant.
    pub name: Ident,
    /// Its type, when written.
    pub ty: Option<TypeExpr>,
    /// Its value, when it parses as a declaration expression.
    pub value: Option<Expr>,
    /// The whole declaration.
    pub span: Span,
}

/// What the boundary reads of a function body.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Body {
    /// The whole body, braces included.
    pub span: Span,
    /// Every `api::serve(…)` call, in order.
    pub serves: Vec<ServeCall>,
    /// Every `let` binding, in order.
    pub lets: Vec<LetBinding>,
    /// Every `NAME.stop()` call, in order.
    pub stops: Vec<StopCall>,
    /// Every `violate CLOSURE;` statement, in order: the function may
    /// violate (F.42), which law 7 reads of a handler.
    pub violates: Vec<ViolateStmt>,
    /// Every struct or locus literal the body writes that parses as a
    /// declaration expression (`Desk { }`, `Fill { order: id, … }`), in the
    /// order their names are written; a literal nested in another is listed
    /// again on its own. The hub law reads a construction's fields from them.
    pub literals: Vec<Expr>,
}

/// One `violate CLOSURE;` statement in a body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViolateStmt {
    /// The closure it names.
    pub closure: Ident,
    /// From `violate` to the closure's name.
    pub span: Span,
}

/// One `api::serve(…)` call in a body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServeCall {
    /// The `let` name the handle is bound to (`let public = api::serve(…)`).
    pub handle: Option<Ident>,
    /// The arguments in order.
    pub args: Vec<Arg>,
    /// The call, from `api` to its `)`.
    pub span: Span,
}

/// One `let [mut] NAME [: T] = …` in a body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LetBinding {
    /// The bound name.
    pub name: Ident,
    /// The initializer when it is a declaration expression (a literal, a
    /// path, a call, …); `None` when it is something only a body holds.
    pub init: Option<Expr>,
    /// Where the block holding the binding ends (its `}`): the binding
    /// dissolves there.
    pub scope_end: Pos,
    /// The `let` statement's start to the end of its name.
    pub span: Span,
}

/// One `NAME.stop()` call in a body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StopCall {
    /// The name `stop()` is called on.
    pub target: Ident,
    /// The call.
    pub span: Span,
}
