//! The Python client of a surface (§ Generated specs and clients).

use super::{ClientError, ClientSurface, Lang};

/// The Python client of `surface`.
pub fn generate(surface: &ClientSurface) -> Result<String, ClientError> {
    Err(ClientError::Refused {
        owner: format!("surface `{}`", surface.surface),
        field: Lang::Python.name().to_string(),
        why: "no generator for this language yet".to_string(),
    })
}
