//! The `.hl` declaration subset (`core/src/hale/syntax`) and the model,
//! digests and serving specs built from it (`core/src/hale/model`,
//! `core/src/hale/serving.rs`), on any text.
//!
//! Checks: the lexer's tokens lie in order inside the text, on character
//! boundaries, with the line and column of their offset, ending in one
//! empty `Eof`; a refusal (the lexer's or the parser's) names a line that
//! is the text's, a column inside it (or just past its end), and displays
//! with its caret; a parsed file builds a model without a panic, and every
//! surface digest, hub digest, contract shape, exposure spec and codec
//! derived from it is computed without one; the admission laws' diagnostics
//! point into the text as well, and a program that passes them has every
//! document (inventory, OpenAPI, JSON Schema, MCP, `.proto`, the export
//! bundle, offline descriptions) without a panic. The same text is checked
//! again as a program of several files, the text its own first import
//! (`hale::imports`: every declaration renamed under the alias, each file
//! at a base offset of its own), and each diagnostic points into the file
//! it names.
#![no_main]

use libfuzzer_sys::fuzz_target;
use limen_core::hale::docs::{
    bundle, describe_offline, inventory, json_schema, mcp, openapi, proto,
};
use limen_core::hale::model::Program;
use limen_core::hale::serving::{exposure_spec, ShapeCodec};
use limen_core::hale::shape::Shapes;
use limen_core::hale::syntax::lexer::{lex, Tok};
use limen_core::hale::syntax::{parse, Diagnostic, Pos};
use limen_core::hale::{check_program, check_program_with};

/// The line and column (both from 1, the column in characters) of byte
/// `offset`, counted independently of the lexer.
fn line_col(src: &str, offset: usize) -> (u32, u32) {
    let before = &src[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line as u32, col as u32)
}

fn check_pos(src: &str, p: Pos) {
    assert!(p.offset <= src.len(), "{p:?} is past the text");
    assert!(src.is_char_boundary(p.offset), "{p:?} splits a character");
    assert_eq!((p.line, p.col), line_col(src, p.offset), "{p:?}");
}

fn check_diagnostic(src: &str, d: &Diagnostic) {
    check_diagnostic_in("f.hl", src, d);
}

/// A diagnostic in `file`, whose text is `src`.
fn check_diagnostic_in(file: &str, src: &str, d: &Diagnostic) {
    assert_eq!(d.file, file, "{d}");
    assert!(!d.message.is_empty());
    assert!(!d.message.ends_with('.'), "{d}");
    let line = src
        .split('\n')
        .nth(d.line as usize - 1)
        .unwrap_or_else(|| panic!("line {} is not in the text\n{d}", d.line));
    assert_eq!(d.source_line, line.trim_end_matches('\r'));
    assert!(
        (d.col as usize) <= d.source_line.chars().count() + 1 || line.ends_with('\r'),
        "column {} is past its line\n{d}",
        d.col
    );
    assert!(d.width >= 1);
    let shown = d.to_string();
    assert!(shown.starts_with(&format!("{file}:{}:{}: ", d.line, d.col)));
    assert!(shown.ends_with('^'));
}

fuzz_target!(|data: &[u8]| {
    let src = String::from_utf8_lossy(data);
    let src = src.as_ref();

    match lex("f.hl", src) {
        Ok(tokens) => {
            let (last, body) = tokens.split_last().expect("at least Eof");
            assert_eq!(last.tok, Tok::Eof);
            assert_eq!(last.span.start, last.span.end);
            let mut at = 0;
            for t in body {
                assert_ne!(t.tok, Tok::Eof, "Eof before the end");
                check_pos(src, t.span.start);
                check_pos(src, t.span.end);
                assert!(t.span.start.offset >= at, "tokens out of order");
                assert!(t.span.end.offset > t.span.start.offset, "an empty token");
                at = t.span.end.offset;
            }
            check_pos(src, last.span.start);
            assert!(last.span.start.offset >= at);
        }
        Err(d) => check_diagnostic(src, &d),
    }

    let file = match parse("f.hl", src) {
        Ok(file) => file,
        Err(d) => return check_diagnostic(src, &d),
    };
    let program = Program::build(&file, "f");
    let mut shapes = Shapes::new(&program.types);
    for s in &program.surfaces {
        let _ = program.surface_digest(&s.name);
        for row in &s.rows {
            for ty in [&row.request, &row.response, &row.error]
                .into_iter()
                .flatten()
            {
                let _ = shapes.contract_shape(ty);
                let _ = shapes.shape_hash(ty);
            }
        }
    }
    for h in &program.hubs {
        if let Some(name) = &h.literal.as_name {
            let _ = program.hub_digest(name);
        }
    }
    for e in &program.exposures {
        let _ = exposure_spec(&program, e, "test");
        let _ = ShapeCodec::new(&program, e);
    }
    let _ = program.undeclared_roles();

    // `hale check`: every law's diagnostic points into the text as a syntax
    // error does, and a program that passes has every document.
    let checked = check_program("f.hl", src);
    for d in checked.errors.iter().chain(&checked.notes) {
        check_diagnostic(src, d);
    }
    // A program of several files: the first import answered with the text
    // itself (so every declaration it holds goes through the renaming
    // under its alias), every later one with an empty file. Every
    // diagnostic is in one of the two texts, at its own line and column,
    // and a program that passes has every document.
    let mut first = None;
    let multi = check_program_with("f.hl", src, &mut |path| {
        if first.is_none() {
            first = Some(path.to_owned());
            Ok(src.to_owned())
        } else {
            Ok(String::new())
        }
    });
    for d in multi.errors.iter().chain(&multi.notes) {
        assert!(
            d.file == "f.hl" || Some(&d.file) == first.as_ref(),
            "{d} is in no file the check read"
        );
        check_diagnostic_in(&d.file, src, d);
    }
    if let Some(program) = multi.program.as_ref().filter(|_| multi.passed()) {
        documents(program);
    }

    if !checked.passed() {
        return;
    }
    documents(&program);
});

/// Every document of a program that passed the check, without a panic.
fn documents(program: &Program) {
    let _ = inventory(program);
    for s in &program.surfaces {
        let _ = openapi(program, &s.name);
        let _ = json_schema(program, &s.name);
        let _ = mcp(program, &s.name);
        let _ = proto(program, &s.name);
        let _ = bundle(program, &s.name, "1.0.0");
    }
    for e in &program.exposures {
        if let Some(name) = &e.name {
            let _ = describe_offline(program, name, "alice", &["trader".to_owned()]);
            let _ = describe_offline(program, name, "{\"mode\":\"unix\"", &[]);
        }
    }
}
