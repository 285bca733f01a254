//! `hale api export --surface NAME (--out DIR | --check DIR) FILE`: a
//! surface's bundle (§ Generated specs and clients), written to DIR, or
//! held against the copy committed in DIR.

use limen_core::hale::docs;

use super::check::{checked, failed};
use super::cli::ExportArgs;
use super::cli::{usage, VERSION};

/// Runs `hale api export` with its arguments.
pub fn run(a: &ExportArgs) -> i32 {
    let file = a.file.clone();
    let surface = a.surface.as_str();
    let (dir, check) = match (&a.out, &a.check) {
        (Some(d), None) => (d, false),
        (None, Some(d)) => (d, true),
        _ => return usage(&["api", "export"], "one of --out DIR and --check DIR"),
    };
    let program = match checked(&file, false) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let bundle = match docs::bundle(&program, surface, VERSION) {
        Ok(b) => b,
        Err(e) => return failed(&file, &e),
    };
    let dir = dir.as_path();
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
