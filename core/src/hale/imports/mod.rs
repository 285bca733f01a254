//! Programs of several files: `import "path" as name;`.
//!
//! [`load`] reads a program and every file it imports, depth first, and
//! merges them into one [`ast::File`] the model is built from. The core
//! reads no file: the caller hands [`load`] a loader that answers a
//! resolved path with its text (the `hale` command line reads the disk, a
//! test a map). An import's path is resolved against the directory of the
//! file that writes it ([`resolve`]).
//!
//! An imported declaration is named by the path its declaration has under
//! the import's alias (§ The determinism rule): `type Item` of a file
//! imported `as lib` is the type `lib::Item` of the program, `locus Orders`
//! the locus `lib::Orders`, `api Public` the surface `lib::Public`, and a
//! file `lib` imports `as inner` contributes `lib::inner::…`. The file's own
//! references to those names are rewritten the same way, so the model, the
//! laws and the documents see one program whose names say where each
//! declaration came from; no name embeds a location on disk. Roles and
//! units are the program's one namespace (a row's `requires:` and a
//! quantity's unit are written bare): an imported one the program already
//! declares is that declaration.
//!
//! Each file is parsed at a base offset of its own ([`Sources`]), so a law
//! that refuses an imported declaration points into the imported file.
//!
//! Only the entry's main locus serves (§ Serving): an imported main locus
//! is a plain locus of the program, its serve sites left out, and the
//! program is refused when it writes that locus's name
//! ([`Program::imported_mains`], checked by the laws).

#[cfg(test)]
mod tests;

use std::collections::BTreeSet;

use super::model::{seed_of, Program};
use super::syntax::ast::{
    self, Attribute, BusSubject, Expr, FnDecl, Ident, Item, LocusMember, Path, TypeBody, TypeDecl,
    TypeExpr,
};
use super::syntax::{parse_at, Diagnostic, Sources, Span};

/// How deep imports may chain (a file importing a file importing …):
/// deeper is refused with a diagnostic, as a cycle is, rather than risk the
/// stack.
pub const MAX_IMPORT_DEPTH: usize = 32;

/// How many files a program may read in all, the entry among them: a file
/// imported twice is read twice (under each alias), so imports that fan
/// out at every level would otherwise read exponentially many.
pub const MAX_IMPORTED_FILES: usize = 256;

/// A program read with its imports.
#[derive(Debug)]
pub struct Loaded {
    /// The model of the program and every file it imports.
    pub program: Program,
    /// The texts of the files, the entry first, for rendering diagnostics.
    pub sources: Sources,
}

/// Reads `src`, the text of `file`, and every file it imports, asking
/// `loader` for each by its resolved path; builds the model of them all.
///
/// An import that `loader` cannot answer, an import cycle, two imports of
/// one alias in a file, imports nested deeper than [`MAX_IMPORT_DEPTH`] and
/// more than [`MAX_IMPORTED_FILES`] files in all are refused with a diagnostic at the `import` that names it, in the
/// importing file; a syntax error in any file is that file's diagnostic.
pub fn load(
    file: &str,
    src: &str,
    loader: &mut dyn FnMut(&str) -> Result<String, String>,
) -> Result<Loaded, Diagnostic> {
    let mut l = Loader {
        loader,
        sources: Sources::default(),
        stack: Vec::new(),
        items: Vec::new(),
        roles: BTreeSet::new(),
        units: BTreeSet::new(),
        mains: Vec::new(),
    };
    l.file(file, src, &[])?;
    let merged = ast::File { items: l.items };
    let mut program = Program::build(&merged, &seed_of(file));
    program.imported_mains = l.mains;
    Ok(Loaded {
        program,
        sources: l.sources,
    })
}

/// The path `import "target"` names from the file `from`: `target` joined
/// to `from`'s directory (an absolute `target` as it is), with `.` and
/// `name/..` taken out, so one file is one path however it is reached.
pub fn resolve(from: &str, target: &str) -> String {
    let joined = if target.starts_with('/') {
        target.to_string()
    } else {
        match from.rfind('/') {
            Some(i) => format!("{}/{target}", &from[..i]),
            None => target.to_string(),
        }
    };
    let absolute = joined.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in joined.split('/') {
        match seg {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            // `/..` is `/`; a relative path keeps a leading `..`.
            ".." if absolute => {}
            s => parts.push(s),
        }
    }
    let body = parts.join("/");
    if absolute {
        format!("/{body}")
    } else {
        body
    }
}

struct Loader<'l> {
    loader: &'l mut dyn FnMut(&str) -> Result<String, String>,
    sources: Sources,
    /// The files being read, the entry first: an import of one is a cycle.
    stack: Vec<String>,
    items: Vec<Item>,
    roles: BTreeSet<String>,
    units: BTreeSet<String>,
    mains: Vec<(String, Span)>,
}

impl Loader<'_> {
    /// Reads `src`, the text of `file`, imported under `prefix` (empty for
    /// the entry): its own declarations, then its imports'.
    fn file(&mut self, file: &str, src: &str, prefix: &[String]) -> Result<(), Diagnostic> {
        let base = self.sources.next_base();
        let parsed = parse_at(file, src, base)?;
        self.sources.push(file, src);
        // The entry by the path its imports would resolve it to, so an
        // import of it by another spelling (`./app.hl`) is the cycle it is.
        self.stack.push(resolve("", file));
        let imports: Vec<&ast::ImportDecl> = parsed
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Import(d) => Some(d),
                _ => None,
            })
            .collect();
        let mut aliases: BTreeSet<&str> = BTreeSet::new();
        for d in &imports {
            if !aliases.insert(&d.alias.name) {
                return Err(self.sources.diagnostic(
                    d.alias.span,
                    format!(
                        "import `{}` is named twice in this file: an import's name is its own",
                        d.alias.name
                    ),
                ));
            }
        }
        let renamer = (!prefix.is_empty()).then(|| Renamer::new(prefix, &parsed));
        for item in &parsed.items {
            let mut item = item.clone();
            if let Some(r) = &renamer {
                if !self.imported(&mut item, r) {
                    continue;
                }
            } else {
                match &item {
                    Item::Role(d) => {
                        self.roles.insert(d.name.name.clone());
                    }
                    Item::Unit(d) => {
                        self.units.insert(d.name.name.clone());
                    }
                    _ => {}
                }
            }
            self.items.push(item);
        }
        for d in imports {
            let target = resolve(file, &d.path);
            if let Some(at) = self.stack.iter().position(|f| *f == target) {
                let mut chain: Vec<&str> = self.stack[at..].iter().map(String::as_str).collect();
                chain.push(&target);
                return Err(self.sources.diagnostic(
                    d.span,
                    format!(
                        "import of `{target}` makes a cycle ({}): a file cannot import itself, even through another",
                        chain.join(" imports ")
                    ),
                ));
            }
            if self.stack.len() >= MAX_IMPORT_DEPTH {
                return Err(self.sources.diagnostic(
                    d.span,
                    format!(
                        "import of `{target}`: imports nest deeper than {MAX_IMPORT_DEPTH} files"
                    ),
                ));
            }
            if self.sources.files().count() >= MAX_IMPORTED_FILES {
                return Err(self.sources.diagnostic(
                    d.span,
                    format!(
                        "import of `{target}`: a program reads at most {MAX_IMPORTED_FILES} files, its imports of one file counted each time"
                    ),
                ));
            }
            let text = (self.loader)(&target).map_err(|e| {
                self.sources
                    .diagnostic(d.span, format!("import of `{target}`: cannot read it: {e}"))
            })?;
            let mut inner = prefix.to_vec();
            inner.push(d.alias.name.clone());
            self.file(&target, &text, &inner)?;
        }
        self.stack.pop();
        Ok(())
    }

    /// Renames an imported item; false when it is left out (an import, a
    /// role or unit the program already declares).
    fn imported(&mut self, item: &mut Item, r: &Renamer) -> bool {
        match item {
            Item::Import(_) => return false,
            Item::Role(d) => return self.roles.insert(d.name.name.clone()),
            Item::Unit(d) => return self.units.insert(d.name.name.clone()),
            Item::Type(d) => r.type_decl(d),
            Item::Topic(t) => {
                r.declared(&mut t.name);
                if let Some(p) = &mut t.parent {
                    r.ident(p);
                }
                if let Some(p) = &mut t.payload {
                    r.ty(p);
                }
            }
            Item::Api(a) => {
                r.declared(&mut a.name);
                for row in &mut a.rows {
                    r.path(&mut row.member);
                }
            }
            Item::Locus(l) => {
                r.declared(&mut l.name);
                r.attrs(&mut l.attrs);
                for m in &mut l.members {
                    r.member(m);
                }
                if l.is_main {
                    // Constructed by nobody: its serve sites never run.
                    l.is_main = false;
                    let first = l.members.iter_mut().find_map(|m| match m {
                        LocusMember::Fn(f) => f.body.serves.first().map(|s| s.span),
                        _ => None,
                    });
                    for m in &mut l.members {
                        if let LocusMember::Fn(f) = m {
                            f.body.serves.clear();
                        }
                    }
                    if let Some(at) = first {
                        self.mains.push((l.name.name.clone(), at));
                    }
                }
            }
            Item::Fn(f) => {
                r.declared(&mut f.name);
                r.func(f);
            }
            Item::Const(c) => {
                r.declared(&mut c.name);
                if let Some(t) = &mut c.ty {
                    r.ty(t);
                }
                if let Some(v) = &mut c.value {
                    r.expr(v);
                }
            }
            Item::Other { .. } => {}
        }
        true
    }
}

/// Rewrites an imported file's declarations and its references to them
/// (and to its own imports) under the alias path it is imported by.
struct Renamer {
    prefix: Vec<String>,
    /// The names the file declares, and its imports' aliases.
    names: BTreeSet<String>,
}

impl Renamer {
    fn new(prefix: &[String], file: &ast::File) -> Renamer {
        let mut names = BTreeSet::new();
        for item in &file.items {
            match item {
                Item::Import(d) => {
                    names.insert(d.alias.name.clone());
                }
                Item::Type(d) => {
                    names.insert(d.name.name.clone());
                }
                Item::Topic(d) => {
                    names.insert(d.name.name.clone());
                }
                Item::Api(d) => {
                    names.insert(d.name.name.clone());
                }
                Item::Fn(d) => {
                    names.insert(d.name.name.clone());
                }
                Item::Const(d) => {
                    names.insert(d.name.name.clone());
                }
                Item::Locus(l) => {
                    names.insert(l.name.name.clone());
                    for m in &l.members {
                        if let LocusMember::Type(t) = m {
                            names.insert(t.name.name.clone());
                        }
                    }
                }
                Item::Role(_) | Item::Unit(_) | Item::Other { .. } => {}
            }
        }
        Renamer {
            prefix: prefix.to_vec(),
            names,
        }
    }

    /// `name` under the prefix: `lib::name`.
    fn under(&self, name: &str) -> String {
        let mut s = self.prefix.join("::");
        s.push_str("::");
        s.push_str(name);
        s
    }

    /// A declared name.
    fn declared(&self, id: &mut Ident) {
        id.name = self.under(&id.name);
    }

    /// A one-name reference (a topic's parent, a binding's topic).
    fn ident(&self, id: &mut Ident) {
        if self.names.contains(&id.name) {
            self.declared(id);
        }
    }

    /// A path whose first segment the file declares (or imports).
    fn path(&self, p: &mut Path) {
        let Some(first) = p.segments.first() else {
            return;
        };
        if !self.names.contains(&first.name) {
            return;
        }
        let at = Span {
            start: first.span.start,
            end: first.span.start,
        };
        let head = self.prefix.iter().map(|name| Ident {
            name: name.clone(),
            span: at,
        });
        p.segments.splice(0..0, head);
    }

    fn ty(&self, t: &mut TypeExpr) {
        match t {
            TypeExpr::Named { path, args, .. } => {
                self.path(path);
                args.iter_mut().for_each(|a| self.ty(a));
            }
            TypeExpr::Array { elem, .. } => self.ty(elem),
            TypeExpr::Tuple(parts, _) => parts.iter_mut().for_each(|a| self.ty(a)),
            TypeExpr::Unit(_) => {}
            TypeExpr::Fn { params, ret, .. } => {
                params.iter_mut().for_each(|a| self.ty(a));
                if let Some(r) = ret {
                    self.ty(r);
                }
            }
        }
    }

    fn expr(&self, e: &mut Expr) {
        match e {
            Expr::Number(..) | Expr::Str(..) | Expr::Unit(_) => {}
            Expr::Path(p) => self.path(p),
            Expr::Field { base, .. } => self.expr(base),
            Expr::Index { base, index, .. } => {
                self.expr(base);
                self.expr(index);
            }
            Expr::Call { callee, args, .. } => {
                self.expr(callee);
                args.iter_mut().for_each(|a| self.expr(&mut a.value));
            }
            Expr::Struct { path, fields, .. } => {
                self.path(path);
                fields.iter_mut().for_each(|f| self.expr(&mut f.value));
            }
            Expr::List(items, _) | Expr::Tuple(items, _) => {
                items.iter_mut().for_each(|x| self.expr(x));
            }
            Expr::Map(entries, _) => {
                for (k, v) in entries {
                    self.path(k);
                    self.expr(v);
                }
            }
            Expr::Unary { expr, .. } => self.expr(expr),
            Expr::Binary { lhs, rhs, .. } => {
                self.expr(lhs);
                self.expr(rhs);
            }
        }
    }

    fn attrs(&self, attrs: &mut [Attribute]) {
        for a in attrs {
            for arg in a.args.iter_mut().flatten() {
                self.expr(&mut arg.value);
            }
        }
    }

    fn type_decl(&self, d: &mut TypeDecl) {
        self.declared(&mut d.name);
        match &mut d.body {
            TypeBody::Alias(t) => self.ty(t),
            TypeBody::Scalar(s) => self.ty(&mut s.base),
            TypeBody::Struct(fields) => {
                for f in fields {
                    self.ty(&mut f.ty);
                    if let Some(v) = &mut f.default {
                        self.expr(v);
                    }
                }
            }
            TypeBody::Enum(variants) => {
                for v in variants {
                    v.fields.iter_mut().for_each(|t| self.ty(t));
                }
            }
        }
    }

    fn member(&self, m: &mut LocusMember) {
        match m {
            LocusMember::Params(ps, _) => {
                for p in ps {
                    if let Some(t) = &mut p.ty {
                        self.ty(t);
                    }
                    if let Some(v) = &mut p.default {
                        self.expr(v);
                    }
                }
            }
            LocusMember::Bus(entries, _) => {
                for b in entries {
                    if let BusSubject::Topic(p) = &mut b.subject {
                        self.path(p);
                    }
                    if let Some(t) = &mut b.of_type {
                        self.ty(t);
                    }
                }
            }
            LocusMember::Bindings(entries, _) => {
                for b in entries {
                    self.ident(&mut b.topic);
                    self.expr(&mut b.transport);
                    for (_, v) in &mut b.options {
                        self.expr(v);
                    }
                }
            }
            LocusMember::Fn(f) => self.func(f),
            LocusMember::Type(t) => self.type_decl(t),
            LocusMember::Const(c) => {
                self.declared(&mut c.name);
                if let Some(t) = &mut c.ty {
                    self.ty(t);
                }
                if let Some(v) = &mut c.value {
                    self.expr(v);
                }
            }
            LocusMember::Closure(..) | LocusMember::Placement(..) | LocusMember::Other(..) => {}
        }
    }

    /// A function's signature and what the model reads of its body; its
    /// own name is a member's (a free fn's is renamed by its item).
    fn func(&self, f: &mut FnDecl) {
        // An imported seed's `@rpc` rows are its own default surface, not
        // the program's (docs/decisions.md, Imports).
        f.attrs.retain(|a| a.name.name != "rpc");
        self.attrs(&mut f.attrs);
        for p in &mut f.params {
            self.ty(&mut p.ty);
            if let Some(v) = &mut p.default {
                self.expr(v);
            }
        }
        if let Some(t) = &mut f.ret {
            self.ty(t);
        }
        if let Some(t) = &mut f.fallible {
            self.ty(t);
        }
        for s in &mut f.body.serves {
            s.args.iter_mut().for_each(|a| self.expr(&mut a.value));
        }
        for l in &mut f.body.lets {
            if let Some(v) = &mut l.init {
                self.expr(v);
            }
        }
        f.body.literals.iter_mut().for_each(|e| self.expr(e));
    }
}
