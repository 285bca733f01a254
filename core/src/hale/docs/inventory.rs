//! The program-wide inventory (§ The description: every surface with its
//! digest and all its rows, every exposure with its listener, its sources
//! and its receivers, every hub with its stream rows), and the surface-wide
//! document of a bundle (§ Generated specs and clients: the inventory form
//! restricted to one surface and the exposures that serve it).

use serde_json::{json, Value};

use super::book::{Slot, TypeBook};
use super::describe::DOC_REFS;
use super::error::DocError;
use super::outcomes::{NOTE_AUTHORIZATION, NOTE_INVENTORY, NOTE_LIFECYCLE};
use super::rows::{exposure_listener, hub_streams, listener, source, stream, surface_members};
use crate::hale::model::{Exposure, Hub, Program};

/// The inventory of `program`.
pub fn inventory(program: &Program) -> Result<Value, DocError> {
    let mut names: Vec<&str> = program.surfaces.iter().map(|s| s.name.as_str()).collect();
    names.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    document(program, &names, |_| true)
}

/// The surface-wide document of `surface`'s bundle: the inventory form
/// restricted to it and to the exposures that serve it, with every hub of
/// the program.
pub fn surface_inventory(program: &Program, surface: &str) -> Result<Value, DocError> {
    if program.surface(surface).is_none() {
        return Err(DocError::NoSurface {
            name: surface.to_string(),
            known: program.surfaces.iter().map(|s| s.name.clone()).collect(),
        });
    }
    document(program, &[surface], |e| {
        e.surface.as_deref() == Some(surface)
    })
}

fn document(
    program: &Program,
    surfaces: &[&str],
    serves: impl Fn(&Exposure) -> bool,
) -> Result<Value, DocError> {
    let mut book = TypeBook::new();
    let mut surface_docs = Vec::new();
    for name in surfaces {
        let (digest, members) = surface_members(program, name, &mut book)?;
        surface_docs.push(json!({
            "name": name,
            "digest": digest.to_string(),
            "members": members.iter().map(|m| m.document(DOC_REFS)).collect::<Vec<_>>(),
        }));
    }
    let mut exposures: Vec<&Exposure> = program.exposures.iter().filter(|e| serves(e)).collect();
    exposures.sort_by(|a, b| {
        a.name
            .as_deref()
            .unwrap_or("")
            .as_bytes()
            .cmp(b.name.as_deref().unwrap_or("").as_bytes())
    });
    let exposures = exposures
        .into_iter()
        .map(|e| exposure(program, e))
        .collect::<Result<Vec<_>, _>>()?;
    let mut hubs: Vec<&Hub> = program.hubs.iter().collect();
    hubs.sort_by(|a, b| {
        a.name()
            .unwrap_or("")
            .as_bytes()
            .cmp(b.name().unwrap_or("").as_bytes())
    });
    let hubs = hubs
        .into_iter()
        .map(|h| hub(program, h, &mut book))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(json!({
        "inventory": 1,
        "app": app(program),
        "surfaces": surface_docs,
        "exposures": exposures,
        "hubs": hubs,
        "schemas": book.all_schemas(DOC_REFS),
        "notes": {
            "inventory": NOTE_INVENTORY,
            "authorization": NOTE_AUTHORIZATION,
            "lifecycle": NOTE_LIFECYCLE,
        },
    }))
}

/// The program's name: its main locus's, else its seed's.
fn app(program: &Program) -> String {
    program
        .main_locus()
        .map_or_else(|| program.seed.clone(), |l| l.name.name.clone())
}

fn exposure(program: &Program, e: &Exposure) -> Result<Value, DocError> {
    let l = exposure_listener(e)?;
    let surface = e.surface.clone().unwrap_or_default();
    let digest = program.surface_digest(&surface)?;
    let name = e.name.clone().unwrap_or_default();
    let receivers: Vec<Value> = e
        .receivers
        .iter()
        .map(|r| {
            json!({
                "type": r.ty,
                "instance": r.instance.text(),
                "binding": r.binding.as_str(),
                "pool": r.pool.clone().unwrap_or_else(|| "?".to_string()),
            })
        })
        .collect();
    Ok(json!({
        "exposure": format!("{surface}@{digest}/{name}"),
        "name": name,
        "surface": surface,
        "digest": digest.to_string(),
        "listener": listener(l, None),
        "codec": e.codec,
        "principals": source(&e.principals),
        "roles": source(&e.roles),
        "receivers": receivers,
    }))
}

fn hub(program: &Program, h: &Hub, book: &mut TypeBook) -> Result<Value, DocError> {
    let name = h.name().unwrap_or_default();
    let digest = program.hub_digest(name)?;
    let mut streams = Vec::new();
    for row in hub_streams(h) {
        let (document, _): (Value, Option<Slot>) = stream(program, h, row, book, DOC_REFS)?;
        streams.push(document);
    }
    let l = crate::hale::model::Listener {
        transport: h.literal.kind.clone(),
        address: h.literal.address.clone(),
    };
    Ok(json!({
        "exposure": format!("hub@{digest}/{name}"),
        "name": name,
        "digest": digest.to_string(),
        "instance": h.instance(),
        "listener": listener(&l, None),
        "codec": h.literal.codec,
        "principals": source(&h.literal.principals),
        "roles": source(&h.literal.roles),
        "streams": streams,
    }))
}
