//! The generated clients (`core/src/hale/client/`): a surface built from
//! the input — records of scalars, quantities, identities and each other
//! (recursion included), fields with defaults and `json:` keys, names that
//! are reserved words of the client languages, members with and without a
//! request, a response or an error, and a hub with streams — read as
//! `hale api client` reads it and generated in every language.
//!
//! Never a panic; each language gives the same bytes twice (the
//! determinism rule); a client that is made names the surface's digest in
//! its first line (what `--check` reads back) and every member's wire
//! name; a refusal names what it refuses.
#![no_main]

use std::fmt::Write as _;

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use limen_core::hale::client::{self, ClientSurface, Lang};
use limen_core::hale::model::parse_program;

/// Names the client languages treat specially, beside plain ones.
const NAMES: &[&str] = &[
    "a",
    "qty",
    "order",
    "kind",
    "value",
    "seq",
    "id",
    "from",
    "class",
    "default",
    "interface",
    "async",
    "await",
    "None",
    "True",
    "yield",
    "import",
    "lambda",
    "constructor",
    "__proto__",
    "delete",
    "new",
    "function",
    "is",
    "not",
    "print",
    "str",
    "int",
    "list",
    "x_",
    "_x",
    "a_b",
    "aB",
    "result",
    "refusal",
    "then",
    "digest",
    "endpoint",
    "bearer",
    "request",
    "options",
    "timeout",
];

const LOCI: &[&str] = &["Orders", "Ledger", "Class", "Api", "L"];

const SCALARS: &[&str] = &["Int", "Float", "Bool", "String", "Money", "OrderId"];

fn name(u: &mut Unstructured) -> Result<&'static str> {
    u.choose(NAMES).copied()
}

fn program(u: &mut Unstructured) -> Result<String> {
    let mut text = String::from(
        "role r0;\nrole r1;\nunit cent;\ntype Money = quantity Int in cent;\ntype OrderId = distinct Int;\n",
    );
    let records = u.int_in_range(1..=5)?;
    for t in 0..records {
        let _ = write!(text, "type T{t} {{ ");
        let mut fields: Vec<&str> = Vec::new();
        for _ in 0..u.int_in_range(0..=4)? {
            let f = name(u)?;
            if fields.contains(&f) {
                continue;
            }
            fields.push(f);
            let ty = if u.ratio(1, 4)? {
                format!("T{}", u.int_in_range(0..=records - 1)?)
            } else {
                u.choose(SCALARS)?.to_string()
            };
            let _ = write!(text, "{f}: {ty}");
            if u.ratio(1, 6)? {
                let _ = write!(text, " json:\"{}\"", name(u)?);
            }
            if ty == "Int" && u.ratio(1, 4)? {
                text.push_str(" = 1");
            }
            text.push_str("; ");
        }
        text.push_str("}\n");
    }
    let slot = |u: &mut Unstructured| -> Result<Option<String>> {
        Ok(match u.int_in_range(0..=3)? {
            0 => None,
            1 => Some(u.choose(SCALARS)?.to_string()),
            _ => Some(format!("T{}", u.int_in_range(0..=records - 1)?)),
        })
    };
    let hub = u.arbitrary::<bool>()?;
    let topics = if hub { u.int_in_range(1..=3)? } else { 0 };
    for p in 0..topics {
        let payload = format!("T{}", u.int_in_range(0..=records - 1)?);
        let _ = writeln!(
            text,
            "topic P{p} {{ payload: {payload}; subject: \"s.{p}\"; }}"
        );
    }
    let mut rows = Vec::new();
    let mut loci: Vec<(&str, Vec<String>)> = Vec::new();
    for _ in 0..u.int_in_range(1..=4)? {
        let locus = *u.choose(LOCI)?;
        let function = name(u)?;
        if rows
            .iter()
            .any(|(l, f): &(&str, &str)| *l == locus && *f == function)
        {
            continue;
        }
        rows.push((locus, function));
        let request = slot(u)?.map_or(String::new(), |t| format!("x: {t}"));
        let response = slot(u)?.map_or(String::new(), |t| format!(" -> {t}"));
        let error = match u.int_in_range(0..=2)? {
            0 => String::new(),
            1 => " fallible(ClosureViolation)".to_owned(),
            _ => format!(" fallible(T{})", u.int_in_range(0..=records - 1)?),
        };
        let f = format!("fn {function}({request}){response}{error} {{ }}");
        match loci.iter_mut().find(|(l, _)| *l == locus) {
            Some((_, fns)) => fns.push(f),
            None => loci.push((locus, vec![f])),
        }
    }
    text.push_str("api S {\n");
    for (l, f) in &rows {
        let requires = if u.arbitrary::<bool>()? {
            " requires: [r0]"
        } else {
            ""
        };
        let _ = writeln!(text, "    rpc {l}::{f}{requires};");
    }
    text.push_str("}\n");
    for (i, (l, fns)) in loci.iter().enumerate() {
        let _ = write!(text, "locus {l} {{ ");
        if i == 0 && topics > 0 {
            text.push_str("bus { ");
            for p in 0..topics {
                let _ = write!(text, "publish P{p}; ");
            }
            text.push_str("} ");
        }
        for f in fns {
            text.push_str(f);
            text.push(' ');
        }
        text.push_str("}\n");
    }
    text.push_str(
        "locus Tokens { fn principal(token: String) -> std::api::Principal { } }\n\
         locus Grants { params { r0: String = \"\"; } fn holds(p: std::api::Principal, r: String) -> Bool { return false; } }\n\
         main locus M {\n    params {\n        tokens: Tokens = Tokens { };\n        roles: Grants = Grants { };\n",
    );
    for (l, _) in &loci {
        let _ = writeln!(text, "        i_{l}: {l} = {l} {{ }};");
    }
    if hub {
        text.push_str("        hub: ws::Hub = ws::Hub { bind: \"127.0.0.1:9000\", principals: self.tokens, roles: self.roles, as: \"h\" };\n");
    }
    text.push_str("    }\n");
    if hub {
        text.push_str("    bindings {\n");
        for p in 0..topics {
            let on_full = if u.arbitrary::<bool>()? {
                "drop_old"
            } else {
                "drop_new"
            };
            let _ = writeln!(
                text,
                "        P{p}: self.hub requires: [r1], bound: 8, on_full: {on_full};"
            );
        }
        text.push_str("    }\n");
    }
    text.push_str("    run() {\n        let s = api::serve(S, http::Rpc { bind: \"127.0.0.1:8080\", codec: json, principals: self.tokens, roles: self.roles }, as: \"s\", receivers: { ");
    let receivers: Vec<String> = loci
        .iter()
        .map(|(l, _)| format!("{l}: self.i_{l}"))
        .collect();
    text.push_str(&receivers.join(", "));
    text.push_str(
        " }, bound: 8, on_full: refuse);\n        std::api::run_until_stopped(s);\n    }\n}\n",
    );
    Ok(text)
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(text) = program(&mut u) else {
        return;
    };
    let Ok(program) = parse_program("fuzz.hl", &text) else {
        return;
    };
    let surface = match ClientSurface::read(&program, "S") {
        Ok(s) => s,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    for lang in Lang::ALL {
        let first = client::generate_from(&surface, lang);
        let second = client::generate_from(&surface, lang);
        assert_eq!(first, second, "{} is not deterministic", lang.name());
        match first {
            Ok(made) => {
                assert_eq!(client::made_against(&made), Some(surface.digest.as_str()));
                for m in &surface.members {
                    assert!(
                        made.contains(&m.name),
                        "{}: {} is not in\n{made}",
                        lang.name(),
                        m.name
                    );
                }
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
});
