//! `flow fingerprint LISTING`: a listing in the shape of describe's result
//! (`{"data": …, "tools": [{"tool", "fingerprint", "signature"}]}`); one
//! line per tool, `<identity> <fingerprint>`, computed from its signature.
//! Exits 1 naming every tool whose listed fingerprint differs from the
//! computed one (or whose signature cannot be read), 2 on usage.

use limen_core::flow::check_listed_entry;

use super::cli::FingerprintArgs;

/// Runs `flow fingerprint` with its arguments.
pub fn run(a: &FingerprintArgs) -> i32 {
    let path = a.listing.display().to_string();
    let text = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("flow fingerprint: cannot read {path}: {e}");
            return 2;
        }
    };
    let listing: serde_json::Value = match serde_json::from_slice(&text) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("flow fingerprint: {path} is not JSON: {e}");
            return 2;
        }
    };
    let Some(tools) = listing.get("tools").and_then(|t| t.as_array()) else {
        eprintln!(
            "flow fingerprint: {path} has no \"tools\" array (the shape of describe's result)"
        );
        return 2;
    };
    let mut wrong = Vec::new();
    for (i, entry) in tools.iter().enumerate() {
        let checked = check_listed_entry(i, entry);
        if let Some(computed) = &checked.computed {
            let name = &checked.name;
            crate::cli_support::print(&format!("{name} {computed}\n"));
        }
        wrong.extend(checked.wrong);
    }
    for w in &wrong {
        eprintln!("flow fingerprint: {w}");
    }
    i32::from(!wrong.is_empty())
}
