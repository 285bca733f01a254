//! The admission laws over whole programs: the witness
//! (`../shared/hale-witness/program.hl`, skipped with a message when
//! absent) and our own `conformance/programs/second.hl`.
//!
//! Each expected diagnostic's position is found here in the program's own
//! text (the row's line, the member's column), so what is held is the
//! check's answer, not numbers copied from it.

use std::path::PathBuf;

use limen_core::hale::laws::check_source;

fn read(path: &PathBuf) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The rendered diagnostic `file:line:col: message` at the first line of
/// `src` equal to `row` (trimmed), marking `member` on it.
fn at_row(file: &str, src: &str, row: &str, member: &str, message: &str) -> String {
    let (n, line) = src
        .lines()
        .enumerate()
        .find(|(_, l)| l.trim() == row)
        .unwrap_or_else(|| panic!("{file} has no line `{row}`"));
    let col = line.find(member).expect("the member is on its row");
    format!(
        "{file}:{}:{}: {message}\n{line}\n{}{}",
        n + 1,
        col + 1,
        " ".repeat(col),
        "^".repeat(member.len())
    )
}

fn law_6(member: &str) -> String {
    format!("rpc `{member}`: its error type is `ClosureViolation`, so a failure is the server error; a description carries no error schema for it")
}

#[test]
fn the_witness_is_admitted_with_its_two_law_6_notes() {
    let path = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/hale-witness/program.hl"
    ));
    if !path.is_file() {
        eprintln!(
            "skipping: the witness program is absent ({} not found)",
            path.display()
        );
        return;
    }
    let src = read(&path);
    let check = check_source("program.hl", &src).expect("the witness parses");
    let errors: Vec<String> = check.errors.iter().map(ToString::to_string).collect();
    assert_eq!(errors, Vec::<String>::new());
    let notes: Vec<String> = check.notes.iter().map(ToString::to_string).collect();
    assert_eq!(
        notes,
        [
            at_row(
                "program.hl",
                &src,
                "rpc Orders::place;",
                "Orders::place",
                &law_6("Orders::place")
            ),
            at_row(
                "program.hl",
                &src,
                "rpc Ledger::rebalance requires: [operator];",
                "Ledger::rebalance",
                &law_6("Ledger::rebalance")
            ),
        ]
    );
}

fn second() -> String {
    read(&PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../conformance/programs/second.hl"
    )))
}

/// `second.hl` declares `Backoffice`, whose `Store::restock` is
/// `fallible(StockError)`, an enum the JSON codec does not carry, and
/// serves it nowhere: law 5 asks no form of a surface nobody serves, so the
/// program is admitted, with law 6's note for `Store::reset`.
#[test]
fn second_is_admitted_since_backoffice_is_not_served() {
    let src = second();
    let check = check_source("second.hl", &src).expect("second.hl parses");
    let errors: Vec<String> = check.errors.iter().map(ToString::to_string).collect();
    assert_eq!(errors, Vec::<String>::new());
    let notes: Vec<String> = check.notes.iter().map(ToString::to_string).collect();
    assert_eq!(
        notes,
        [at_row(
            "second.hl",
            &src,
            "rpc Store::reset requires: [editor, auditor, editor];",
            "Store::reset",
            &law_6("Store::reset")
        )]
    );
}

/// Served, `Backoffice` is refused by law 5 at its `Store::restock` row;
/// its `Store::lookup` row is `Catalog`'s handler, already admitted.
#[test]
fn second_serving_backoffice_is_refused_by_law_5() {
    let run = "        while !self.draining { std::time::sleep(50ms); }";
    let src = second();
    assert!(src.contains(run), "second.hl's run() waits as it did");
    let served = src.replacen(
        run,
        &format!(
            "        let back = api::serve(Backoffice, http::Rpc {{ bind: \"127.0.0.1:0\", principals: self.tokens, roles: self.shop_roles }}, as: \"back\", bound: 8, on_full: refuse);\n{run}\n        back.stop();"
        ),
        1,
    );
    let check = check_source("second.hl", &served).expect("it parses");
    let errors: Vec<String> = check.errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        errors,
        [at_row(
            "second.hl",
            &served,
            "rpc Store::restock requires: [editor];",
            "Store::restock",
            "rpc `Store::restock`: its error is `StockError`, which the JSON codec does not carry"
        )]
    );
}

/// Every program made by deleting one line of the witness or of
/// `second.hl` (a row, a param, a binding, a serve site, a brace…) is
/// checked without a panic, and every diagnostic quotes the line it names.
#[test]
fn every_one_line_deletion_is_checked_and_quoted_faithfully() {
    let witness = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/hale-witness/program.hl"
    ));
    let mut programs = vec![("second.hl", second())];
    if witness.is_file() {
        programs.push(("program.hl", read(&witness)));
    } else {
        eprintln!("the witness is absent: only second.hl's deletions are checked");
    }
    let mut refused = 0;
    for (file, src) in programs {
        let lines: Vec<&str> = src.lines().collect();
        for i in 0..lines.len() {
            let cut: Vec<&str> = lines
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, l)| *l)
                .collect();
            let cut = cut.join("\n");
            let Ok(check) = check_source(file, &cut) else {
                continue;
            };
            let cut_lines: Vec<&str> = cut.lines().collect();
            for d in check.errors.iter().chain(&check.notes) {
                assert_eq!(
                    cut_lines[d.line as usize - 1],
                    d.source_line,
                    "line {} removed:\n{d}",
                    i + 1
                );
                assert!(d.col as usize <= d.source_line.chars().count() + 1, "{d}");
            }
            refused += usize::from(!check.is_ok());
        }
    }
    assert!(
        refused > 10,
        "deleting lines breaks laws ({refused} refused)"
    );
}
