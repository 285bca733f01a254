//! Code generation from a Flow tools listing: `flow toolkit LANG LISTING`
//! writes a language's types for a listing's declarations and a typed
//! interface for its Tools, from what `flow tools` lists, never from Flow
//! source. What every language shares is here (the listing's one type
//! environment, names); each language is a module of its own.
//!
//! - [`rust`]: structs and enums with `FromValue`/`IntoValue`, a trait
//!   `Tools`, a `Service` over it and `serve`.
//! - [`python`]: frozen dataclasses and tagged unions with conversions to
//!   and from `limen_toolkit`'s generic values, a `Tools` protocol and
//!   `serve`.
//! - [`typescript`]: interfaces and `$tag` unions over the TypeScript
//!   toolkit's values, an interface `Tools` and `serve`.

use std::collections::{BTreeMap, BTreeSet};

use limen_core::flow::tool::Listing;
use limen_core::flow::{Identity, Origin, TypeEnv};

mod python;
mod rust;
mod typescript;

pub use python::python;
pub use rust::rust;
pub use typescript::typescript;

/// The listing whose JSON text is `listing`, and one type environment of
/// every declaration its Tools reach; a type declared twice differently is
/// refused.
pub(crate) fn listing_env(listing: &str) -> Result<(Listing, TypeEnv), String> {
    let parsed = Listing::parse(listing.as_bytes()).map_err(|e| format!("the listing: {e}"))?;
    let mut env = TypeEnv::new();
    for tool in &parsed.tools {
        for decl in tool.env.iter() {
            match env.get(&decl.identity) {
                Some(known) if known != decl => {
                    return Err(format!(
                        "the listing declares {} twice, differently",
                        decl.identity
                    ))
                }
                Some(_) => {}
                None => env.declare(decl.clone()),
            }
        }
    }
    Ok((parsed, env))
}

/// A name for every named type in a language: its own name (in
/// PascalCase) when that is unique in the listing, else prefixed by its
/// file's stem, then numbered where two still meet; `escape` makes a name
/// the language cannot use as is (a keyword) one it can.
pub(crate) fn type_names(env: &TypeEnv, escape: fn(&str) -> String) -> BTreeMap<Identity, String> {
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for decl in env.iter() {
        *count.entry(decl.identity.name.as_str()).or_default() += 1;
    }
    let mut taken = BTreeSet::new();
    let mut names = BTreeMap::new();
    for decl in env.iter() {
        let id = &decl.identity;
        let mut name = if count[id.name.as_str()] == 1 {
            pascal(&id.name)
        } else {
            format!("{}{}", pascal(&file_stem(id)), pascal(&id.name))
        };
        let base = name.clone();
        let mut n = 2;
        while !taken.insert(name.clone()) {
            name = format!("{base}{n}");
            n += 1;
        }
        names.insert(id.clone(), escape(&name));
    }
    names
}

/// The stem of the file a declaration is in (`echo` for `echo.flow`).
pub(crate) fn file_stem(id: &Identity) -> String {
    let file = match &id.origin {
        Origin::Repository { file, .. } => file.as_str(),
        Origin::Path { path } => path.as_str(),
    };
    let base = file.rsplit('/').next().unwrap_or(file);
    base.split('.').next().unwrap_or(base).to_owned()
}

/// The words of a name: split at non-alphanumerics and at a lower-to-upper
/// step.
pub(crate) fn words(s: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in s.chars() {
        if !c.is_alphanumeric() {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        word.push(c);
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// `name` in PascalCase, never starting with a digit.
pub(crate) fn pascal(s: &str) -> String {
    let out: String = words(s)
        .iter()
        .map(|w| {
            let mut cs = w.chars();
            match cs.next() {
                Some(first) => first.to_uppercase().chain(cs).collect::<String>(),
                None => String::new(),
            }
        })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        format!("T{out}")
    } else {
        out
    }
}

/// `name` in snake_case, never starting with a digit.
pub(crate) fn snake(s: &str) -> String {
    let out = words(s)
        .iter()
        .map(|w| w.to_lowercase())
        .collect::<Vec<_>>()
        .join("_");
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        format!("t_{out}")
    } else {
        out
    }
}
