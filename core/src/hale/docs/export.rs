//! The bundle `hale api export --surface NAME` writes (§ Generated specs and
//! clients): `NAME.description.json`, `.openapi.json`, `.json-schema.json`,
//! `.mcp.json`, `.proto` and `DIGEST`, each a pure function of the rows, and
//! what `--check` finds drifted in a committed copy.

use serde_json::Value;

use super::error::DocError;
use super::{inventory, json_schema, mcp, openapi, proto};
use crate::hale::digest::Digest;
use crate::hale::model::Program;

/// A generated bundle.
#[derive(Clone, Debug)]
pub struct Bundle {
    /// The surface.
    pub surface: String,
    /// Its digest.
    pub digest: Digest,
    /// The files written, by name, in the order written.
    pub files: Vec<(String, Vec<u8>)>,
    /// Why the `.proto` is not among them, when the protobuf form refused
    /// the surface (a rule of that form; the others are still written).
    pub proto_refused: Option<DocError>,
}

/// What `--check` found: the committed bundle against the generated one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Drift {
    /// The digest the committed `DIGEST` names, when it is not the
    /// surface's (`None` in it when the line is not a digest).
    pub digest_moved: Option<Option<String>>,
    /// The files whose bytes differ.
    pub differs: Vec<String>,
    /// The files the committed bundle lacks.
    pub missing: Vec<String>,
}

impl Drift {
    /// Whether the committed bundle is current.
    pub fn is_current(&self) -> bool {
        self.digest_moved.is_none() && self.differs.is_empty() && self.missing.is_empty()
    }
}

/// A document as a committed file is written: pretty, two spaces an indent,
/// ended by one LF, so a diff of two versions reads line by line.
pub fn pretty(doc: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(doc).unwrap_or_default();
    out.push(b'\n');
    out
}

/// The file name of the bundle's digest.
pub const DIGEST_FILE: &str = "DIGEST";

/// The bundle of `surface`; `version` names the compiler in `DIGEST`'s
/// second line (`hale <version>`), the bundle's provenance, which `--check`
/// does not compare.
pub fn bundle(program: &Program, surface: &str, version: &str) -> Result<Bundle, DocError> {
    let digest = match program.surface(surface) {
        Some(_) => program.surface_digest(surface)?,
        None => {
            return Err(DocError::NoSurface {
                name: surface.to_string(),
                known: program.surfaces.iter().map(|s| s.name.clone()).collect(),
            })
        }
    };
    let mut files = vec![
        (
            format!("{surface}.description.json"),
            pretty(&inventory::surface_inventory(program, surface)?),
        ),
        (
            format!("{surface}.openapi.json"),
            pretty(&openapi::openapi(program, surface)?),
        ),
        (
            format!("{surface}.json-schema.json"),
            pretty(&json_schema::json_schema(program, surface)?),
        ),
        (
            format!("{surface}.mcp.json"),
            pretty(&mcp::mcp(program, surface)?),
        ),
    ];
    let proto_refused = match proto::proto(program, surface) {
        Ok(text) => {
            files.push((format!("{surface}.proto"), text.into_bytes()));
            None
        }
        Err(e @ DocError::Proto(_)) => Some(e),
        Err(e) => return Err(e),
    };
    files.push((
        DIGEST_FILE.to_string(),
        format!("{digest}\nhale {version}\n").into_bytes(),
    ));
    Ok(Bundle {
        surface: surface.to_string(),
        digest,
        files,
        proto_refused,
    })
}

impl Bundle {
    /// Compares the bundle with a committed one, `committed(name)` being the
    /// bytes of the committed file `name`, or `None` when it is missing.
    /// `DIGEST` is compared by its first line only: the compiler's version
    /// is provenance.
    pub fn check(&self, committed: impl Fn(&str) -> Option<Vec<u8>>) -> Drift {
        let mut drift = Drift::default();
        for (name, bytes) in &self.files {
            let Some(theirs) = committed(name) else {
                drift.missing.push(name.clone());
                continue;
            };
            if name == DIGEST_FILE {
                let line = String::from_utf8_lossy(&theirs)
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_string();
                if line != self.digest.to_string() {
                    drift.digest_moved = Some(Digest::parse(&line).map(|d| d.to_string()));
                    drift.differs.push(name.clone());
                }
            } else if &theirs != bytes {
                drift.differs.push(name.clone());
            }
        }
        drift
    }
}
