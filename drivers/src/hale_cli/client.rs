//! `hale api client --surface NAME --lang hale|ts|python [--out FILE |
//! --check FILE] PROGRAM`: a generated client of a surface (§ Generated specs
//! and clients), printed, written to FILE, or held against the copy
//! committed in FILE.

use std::io::Write;

use limen_core::hale::client::{self, Lang};

use super::check::checked;
use super::cli::{usage, ClientArgs};

/// Runs `hale api client` with its arguments.
pub fn run(a: &ClientArgs) -> i32 {
    let Some(lang) = Lang::parse(&a.lang) else {
        return usage(&["api", "client"], "--lang takes hale, ts or python");
    };
    let program = match checked(&a.file, false) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let text = match client::generate(&program, &a.surface, lang) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{}: {e}", a.file);
            return 1;
        }
    };
    if let Some(path) = &a.check {
        let committed = match std::fs::read_to_string(path) {
            Ok(c) => c,
            Err(e) => {
                eprintln!(
                    "hale api client --check: cannot read {}: {e}",
                    path.display()
                );
                return 1;
            }
        };
        if committed == text {
            return 0;
        }
        let now = client::made_against(&text).unwrap_or("?");
        match client::made_against(&committed) {
            Some(old) if old != now => eprintln!(
                "hale api client --check: {} was made against {old}; the surface {} is now {now}",
                path.display(),
                a.surface
            ),
            Some(_) => eprintln!(
                "hale api client --check: {} is not the client the surface {} ({now}) now generates (same digest: edited by hand, or made by another release)",
                path.display(),
                a.surface
            ),
            None => eprintln!(
                "hale api client --check: {} names no digest in its first line: not a client `hale api client` wrote",
                path.display()
            ),
        }
        return 1;
    }
    match &a.out {
        Some(path) => {
            if let Err(e) = std::fs::write(path, &text) {
                eprintln!("hale: cannot write {}: {e}", path.display());
                return 1;
            }
        }
        None => {
            let mut out = std::io::stdout().lock();
            if out
                .write_all(text.as_bytes())
                .and_then(|_| out.flush())
                .is_err()
            {
                return 1;
            }
        }
    }
    0
}
