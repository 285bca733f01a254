//! `hale api export --surface NAME (--out DIR | --check DIR) FILE`: a
//! surface's bundle (§ Generated specs and clients), written to DIR, or
//! held against the copy committed in DIR.

use std::path::Path;

use limen_core::hale::docs;

use super::args::Args;
use super::check::{checked, failed};
use super::{usage, VERSION};

/// Runs `hale api export` with its arguments.
pub fn run(args: &[String]) -> i32 {
    let a = match Args::parse(args, &["surface", "out", "check"], &[]) {
        Ok(a) => a,
        Err(m) => return usage(&format!("api export: {m}")),
    };
    let file = match a.file() {
        Ok(f) => f.to_string(),
        Err(m) => return usage(&format!("api export: {m}")),
    };
    let Some(surface) = a.value("surface") else {
        return usage("api export: --surface NAME names the surface");
    };
    let (dir, check) = match (a.value("out"), a.value("check")) {
        (Some(d), None) => (d, false),
        (None, Some(d)) => (d, true),
        _ => return usage("api export: one of --out DIR and --check DIR"),
    };
    let program = match checked(&file, false) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let bundle = match docs::bundle(&program, surface, VERSION) {
        Ok(b) => b,
        Err(e) => return failed(&file, &e),
    };
    let dir = Path::new(dir);
    let mut status = 0;
    if check {
        let drift = bundle.check(|name| std::fs::read(dir.join(name)).ok());
        if !drift.is_current() {
            eprintln!(
                "hale api export --check: {} is not the bundle the surface {surface} now generates",
                dir.display()
            );
            if let Some(old) = &drift.digest_moved {
                eprintln!(
                    "  digest moved: DIGEST names {}, the surface is {}",
                    old.as_deref().unwrap_or("no digest"),
                    bundle.digest
                );
            }
            for f in &drift.differs {
                eprintln!("  differs: {f}");
            }
            for f in &drift.missing {
                eprintln!("  missing: {f}");
            }
            status = 1;
        }
    } else {
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("hale: cannot create {}: {e}", dir.display());
            return 1;
        }
        for (name, bytes) in &bundle.files {
            let path = dir.join(name);
            if let Err(e) = std::fs::write(&path, bytes) {
                eprintln!("hale: cannot write {}: {e}", path.display());
                return 1;
            }
        }
    }
    if let Some(e) = &bundle.proto_refused {
        eprintln!("{file}: {surface}.proto: {e}");
        status = 1;
    }
    status
}
