//! Programs of several files: resolution, names under the alias, the
//! documents' names, unreadable imports and cycles, and the
//! imported-main-locus law.

use std::collections::BTreeMap;

use super::{load, resolve, Loaded};
use crate::hale::check_program_with;
use crate::hale::docs;
use crate::hale::model::Resolved;
use crate::hale::Checked;

/// A library: a role, a unit, types, a locus and a surface of its own.
const LIB: &str = "role trader;\n\
unit cent;\n\
type Money = quantity Int in cent;\n\
type Item { sku: String; price: Money; }\n\
type Receipt { item: Item; n: Int; }\n\
locus Orders { fn place(i: Item) -> Receipt { return Receipt { item: i, n: 1 }; } }\n\
api Public { rpc Orders::place requires: [trader]; }\n";

/// A program over the library: a surface of its own naming `lib::Item`,
/// and the library's surface served from its main locus.
const APP: &str = "import \"lib/lib.hl\" as lib;\n\
type Ack { ok: Bool; }\n\
locus Shop { fn buy(i: lib::Item) -> Ack { return Ack { ok: true }; } }\n\
api Front { rpc Shop::buy requires: [trader]; }\n\
main locus App {\n\
params { shop: Shop = Shop { }; orders: lib::Orders = lib::Orders { }; }\n\
run() {\n\
let front = api::serve(Front, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"front\", bound: 8, on_full: refuse);\n\
let public = api::serve(lib::Public, unix::Rpc { path: \"/tmp/p\" }, as: \"public\", bound: 8, on_full: refuse);\n\
front.stop(); public.stop();\n\
} }\n";

/// `check_program_with` over a map of files.
fn check(entry: &str, files: &[(&str, &str)]) -> Checked {
    let files: BTreeMap<String, String> = files
        .iter()
        .map(|(p, s)| (p.to_string(), s.to_string()))
        .collect();
    let src = files[entry].clone();
    check_program_with(entry, &src, &mut |path| {
        files
            .get(path)
            .cloned()
            .ok_or_else(|| "No such file or directory".to_string())
    })
}

fn errors(c: &Checked) -> Vec<String> {
    c.errors.iter().map(|d| d.to_string()).collect()
}

#[test]
fn an_import_is_resolved_against_the_importing_files_directory() {
    assert_eq!(resolve("app.hl", "lib.hl"), "lib.hl");
    assert_eq!(resolve("dir/app.hl", "lib.hl"), "dir/lib.hl");
    assert_eq!(resolve("dir/app.hl", "./sub/../lib.hl"), "dir/lib.hl");
    assert_eq!(resolve("a/b/app.hl", "../c.hl"), "a/c.hl");
    assert_eq!(resolve("app.hl", "../c.hl"), "../c.hl");
    assert_eq!(resolve("/srv/app.hl", "/etc/../lib.hl"), "/lib.hl");
    assert_eq!(resolve("/srv/app.hl", "x/lib.hl"), "/srv/x/lib.hl");
}

#[test]
fn imported_declarations_are_named_under_the_alias() {
    let c = check("app.hl", &[("app.hl", APP), ("lib/lib.hl", LIB)]);
    assert_eq!(errors(&c), Vec::<String>::new());
    let p = c.program.unwrap();
    assert!(p.types.get("lib::Item").is_some());
    assert!(p.types.get("Item").is_none());
    assert!(p.locus("lib::Orders").is_some());
    assert!(p.role("trader").is_some());
    // The library's own references are rewritten: `Receipt { item: Item }`.
    let receipt = p.types.get("lib::Receipt").unwrap();
    let crate::hale::syntax::ast::TypeBody::Struct(fields) = &receipt.body else {
        panic!("a struct");
    };
    assert_eq!(fields[0].ty.text(), "lib::Item");
    assert!(matches!(
        p.types.resolve(&fields[0].ty),
        Resolved::Struct("lib::Item", _)
    ));
    // The library's surface, its member in the program's spelling.
    let public = p.surface("lib::Public").unwrap();
    assert_eq!(public.rows[0].member, "lib::Orders::place");
    assert_eq!(public.rows[0].locus, "lib::Orders");
    let front = p.surface("Front").unwrap();
    assert_eq!(front.rows[0].request.as_ref().unwrap().text(), "lib::Item");
    assert_eq!(p.exposures.len(), 2);
    assert_eq!(
        c.sources.files().collect::<Vec<_>>(),
        ["app.hl", "lib/lib.hl"]
    );
}

/// § The determinism rule: `lib::Item` in a schema's name, a `$ref` and an
/// `x-hale-type`; the `.proto` writes the `::` as `_`.
#[test]
fn documents_name_an_imported_type_by_its_alias_path() {
    let c = check("app.hl", &[("app.hl", APP), ("lib/lib.hl", LIB)]);
    let p = c.program.unwrap();
    let openapi = docs::openapi(&p, "Front").unwrap().to_string();
    assert!(openapi.contains("\"lib::Item\""), "{openapi}");
    assert!(
        openapi.contains("#/components/schemas/lib::Item"),
        "{openapi}"
    );
    assert!(
        openapi.contains("\"x-hale-type\":\"lib::Money\""),
        "{openapi}"
    );
    let schema = docs::json_schema(&p, "lib::Public").unwrap().to_string();
    assert!(schema.contains("lib::Receipt"), "{schema}");
    assert!(!schema.contains("lib/lib.hl"), "{schema}");
    let proto = docs::proto(&p, "Front").unwrap();
    assert!(proto.contains("message lib_Item {"), "{proto}");
    assert!(proto.contains("rpc Shop__buy(lib_Item)"), "{proto}");
}

#[test]
fn a_missing_import_is_refused_at_the_import() {
    let c = check("app.hl", &[("app.hl", APP)]);
    assert!(c.program.is_none());
    assert_eq!(
        errors(&c),
        [
            "app.hl:1:1: import of `lib/lib.hl`: cannot read it: No such file or directory\n\
          import \"lib/lib.hl\" as lib;\n\
          ^^^^^^^^^^^^^^^^^^^^^^^^^^^"
        ]
    );
}

#[test]
fn an_import_cycle_is_refused_in_the_file_that_closes_it() {
    let a = "import \"b.hl\" as b;\ntype A { x: b::B; }\n";
    let b = "type B { n: Int; }\n\nimport \"a.hl\" as a;\n";
    let c = check("a.hl", &[("a.hl", a), ("b.hl", b)]);
    assert_eq!(
        errors(&c),
        ["b.hl:3:1: import of `a.hl` makes a cycle (a.hl imports b.hl imports a.hl): a file cannot import itself, even through another\n\
          import \"a.hl\" as a;\n\
          ^^^^^^^^^^^^^^^^^^^"]
    );
    let own = check("./a.hl", &[("./a.hl", "import \"a.hl\" as me;\n")]);
    assert!(errors(&own)[0]
        .starts_with("./a.hl:1:1: import of `a.hl` makes a cycle (a.hl imports a.hl)"));
}

#[test]
fn an_alias_is_named_once_per_file() {
    let app = "import \"x.hl\" as lib;\nimport \"y.hl\" as lib;\n";
    let c = check("app.hl", &[("app.hl", app), ("x.hl", ""), ("y.hl", "")]);
    assert!(errors(&c)[0].starts_with("app.hl:2:18: import `lib` is named twice in this file"));
}

#[test]
fn nested_imports_chain_their_aliases_and_errors_point_into_their_file() {
    let inner = "type Deep { n: Int; }\n";
    let mid = "import \"inner.hl\" as inner;\ntype Wrap { d: inner::Deep; }\n";
    let app = "import \"m/mid.hl\" as mid;\n\
               type T { w: mid::Wrap; }\n";
    let c = check(
        "app.hl",
        &[("app.hl", app), ("m/mid.hl", mid), ("m/inner.hl", inner)],
    );
    assert_eq!(errors(&c), Vec::<String>::new());
    let p = c.program.unwrap();
    assert!(p.types.get("mid::inner::Deep").is_some());
    let Loaded { program, sources } = load("app.hl", app, &mut |path| {
        Ok(if path == "m/mid.hl" { mid } else { inner }.to_string())
    })
    .unwrap();
    assert!(program.types.get("mid::Wrap").is_some());
    assert_eq!(sources.files().count(), 3);
    // A law refusing an imported declaration is rendered in that file.
    let bad = "role trader;\nlocus L { fn f(x: Int) -> Int { return x; } }\napi S { rpc L::f requires: [tradr]; }\n";
    let c = check(
        "app.hl",
        &[("app.hl", "import \"bad.hl\" as bad;\n"), ("bad.hl", bad)],
    );
    let e = errors(&c);
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].starts_with("bad.hl:3:29: rpc `bad::L::f` requires `tradr`, which no `role` declares"),
        "{e:?}"
    );
}

/// A syntax error in an imported file is that file's.
#[test]
fn a_syntax_error_in_an_import_is_in_its_file() {
    let c = check(
        "app.hl",
        &[("app.hl", "import \"l.hl\" as l;\n"), ("l.hl", "role a\n")],
    );
    assert!(
        errors(&c)[0].starts_with("l.hl:1:7: expected `;` after the role `a`"),
        "{:?}",
        errors(&c)
    );
}

/// A library whose main locus serves.
const HEAD: &str = "type Item { n: Int; }\n\
locus Orders { fn place(i: Item) -> Item { return i; } }\n\
api Public { rpc Orders::place; }\n\
main locus Head {\n\
params { orders: Orders = Orders { }; }\n\
run() {\n\
let public = api::serve(Public, http::Rpc { bind: \"127.0.0.1:8080\" }, as: \"public\", bound: 8, on_full: refuse);\n\
public.stop();\n\
} }\n";

#[test]
fn an_imported_main_locus_the_program_constructs_is_refused() {
    let app = "import \"head.hl\" as lib;\n\
               main locus App {\n\
               params { head: lib::Head = lib::Head { }; }\n\
               }\n";
    let c = check("app.hl", &[("app.hl", app), ("head.hl", HEAD)]);
    assert_eq!(
        errors(&c),
        ["app.hl:3:10: api::serve in lib::Head, a main locus the program imports: only the entry program’s main locus serves; serve from the entry’s main locus or hold the exposure there\n\
          params { head: lib::Head = lib::Head { }; }\n\
          \x20        ^^^^"]
    );
    let by_main = "import \"head.hl\" as lib;\nfn main() { lib::Head { }; }\n";
    let c = check("app.hl", &[("app.hl", by_main), ("head.hl", HEAD)]);
    assert_eq!(errors(&c).len(), 1);
    assert!(errors(&c)[0].starts_with("app.hl:2:13: api::serve in lib::Head,"));
    // Its serve sites are none of the program's.
    assert!(c.program.unwrap().serve_sites.is_empty());
}

#[test]
fn an_imported_main_locus_used_for_its_types_is_not_refused() {
    let app = "import \"head.hl\" as lib;\n\
               locus Check { fn f(i: lib::Item) -> lib::Item { return i; } }\n\
               api Tests { rpc Check::f; }\n";
    let c = check("app.hl", &[("app.hl", app), ("head.hl", HEAD)]);
    assert_eq!(errors(&c), Vec::<String>::new());
    let p = c.program.unwrap();
    assert!(p.main_locus().is_none());
    assert_eq!(p.imported_mains.len(), 1);
}

/// A one-file check reads no other file: an import is refused, not
/// ignored.
#[test]
fn check_program_refuses_an_import() {
    let c = crate::hale::check_program("app.hl", APP);
    assert!(errors(&c)[0].starts_with("app.hl:1:1: import of `lib/lib.hl`: cannot read it"));
}

/// Imports nested too deep, or fanning out past the files a program may
/// read, are refused at the import that goes past.
#[test]
fn imports_are_bounded_in_depth_and_in_number() {
    // d0 imports d1, which imports d2, …: a chain past the depth.
    let chain = |path: &str| -> Result<String, String> {
        let n: usize = path[1..path.len() - 3].parse().unwrap();
        Ok(format!("import \"d{}.hl\" as next;\n", n + 1))
    };
    let c = check_program_with("d0.hl", "import \"d1.hl\" as next;\n", &mut |p| chain(p));
    assert!(
        errors(&c)[0]
            .starts_with("d31.hl:1:1: import of `d32.hl`: imports nest deeper than 32 files"),
        "{:?}",
        errors(&c)
    );
    // Each file imports the next one twice, ten deep: 1023 files.
    let fan = |path: &str| -> Result<String, String> {
        let n: usize = path[1..path.len() - 3].parse().unwrap();
        if n == 9 {
            return Ok(String::new());
        }
        Ok(format!(
            "import \"f{0}.hl\" as a;\nimport \"f{0}.hl\" as b;\n",
            n + 1
        ))
    };
    let c = check_program_with("f0.hl", &fan("f0.hl").unwrap(), &mut |p| fan(p));
    assert!(
        errors(&c)[0].contains("a program reads at most 256 files"),
        "{:?}",
        errors(&c)
    );
}
