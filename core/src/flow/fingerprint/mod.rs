//! @tool declarations, their signatures and fingerprints (§ Identity and
//! fingerprints, § The Tool process protocol's describe).
//!
//! A [`Declaration`] is a Tool's identity, its parameters in order, the
//! `T` and `E` of the `Result<T, E>` it returns, its generic parameter
//! names and its doc comments. It is written two ways:
//!
//! - its *described signature* ([`Declaration::signature`]), what describe
//!   lists: `{"params": [[name, schema], …], "ok", "err", "generic"}`, each
//!   schema as § Schemas writes it, descriptions and versions included, and
//!   the Tool's own doc comment as a `description` member;
//! - its *canonical signature* ([`Declaration::canonical_signature`]): the
//!   same four members with every description stripped and every `$defs`
//!   key (and every `$ref` naming one) written without its `@version`.
//!
//! The [`Fingerprint`] is `sha256:` and the lowercase hex SHA-256 of the
//! canonical signature's canonical JSON text ([`canonical_json_text`]).
//! [`fingerprint_of_signature`] computes it from a listed signature, as
//! `flow fingerprint` checks a listing: for a signature we generated it is
//! the declaration's own.

mod json_text;
mod listed;

#[cfg(test)]
mod tests;

use std::fmt;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

pub use json_text::canonical_json_text;
pub use listed::{canonical_signature, check_listed_entry, fingerprint_of_signature, ListedEntry};

use super::identity::Identity;
use super::schema::unique;
use super::schema::{Form, GenerateError, Generator, Reader, SchemaError, Scope};
use super::types::{Type, TypeEnv};

/// A parameter of a Tool declaration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// The parameter's name: its key in a call's `args`.
    pub name: String,
    /// The parameter's `///` doc comment, if any: its schema's description.
    pub doc: Option<String>,
    /// The parameter's type.
    pub ty: Type,
}

impl Param {
    /// A parameter without a doc comment.
    pub fn new(name: &str, ty: Type) -> Param {
        Param {
            name: name.to_owned(),
            doc: None,
            ty,
        }
    }
    /// The same parameter with a doc comment.
    pub fn doc(mut self, doc: &str) -> Param {
        self.doc = Some(doc.to_owned());
        self
    }
}

/// A @tool declaration returning `Result<ok, err>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declaration {
    /// The declaration's identity, `repository@version/file.Name`.
    pub identity: Identity,
    /// The Tool's `///` doc comment, if any.
    pub doc: Option<String>,
    /// Generic type parameter names, in declaration order.
    pub generic: Vec<String>,
    /// Parameters, in declaration order.
    pub params: Vec<Param>,
    /// `T` of the `Result<T, E>` the Tool returns.
    pub ok: Type,
    /// `E` of the `Result<T, E>` the Tool returns.
    pub err: Type,
}

impl Declaration {
    /// A declaration without doc comment or generic parameters.
    pub fn new(identity: Identity, params: Vec<Param>, ok: Type, err: Type) -> Declaration {
        Declaration {
            identity,
            doc: None,
            generic: Vec::new(),
            params,
            ok,
            err,
        }
    }

    /// The same declaration with a doc comment.
    pub fn doc(mut self, doc: &str) -> Declaration {
        self.doc = Some(doc.to_owned());
        self
    }

    /// The same declaration with generic type parameters.
    pub fn generic(mut self, names: &[&str]) -> Declaration {
        self.generic = names.iter().map(|n| (*n).to_owned()).collect();
        self
    }

    /// The described signature, describe's `"signature"`: each schema as
    /// § Schemas writes it (a parameter's doc comment its root
    /// `description`), and the Tool's doc comment as `"description"`.
    pub fn signature(&self, env: &TypeEnv) -> Result<Value, GenerateError> {
        self.write(env, Form::DESCRIBED)
    }

    /// The canonical signature: `{"params", "ok", "err", "generic"}` with no
    /// description and no version anywhere.
    pub fn canonical_signature(&self, env: &TypeEnv) -> Result<Value, GenerateError> {
        self.write(env, Form::CANONICAL)
    }

    /// The declaration's fingerprint.
    pub fn fingerprint(&self, env: &TypeEnv) -> Result<Fingerprint, GenerateError> {
        Ok(Fingerprint::of_canonical_signature(
            &self.canonical_signature(env)?,
        ))
    }

    /// describe's entry for this declaration:
    /// `{"tool": identity, "fingerprint", "signature"}`.
    pub fn describe_entry(&self, env: &TypeEnv) -> Result<Value, GenerateError> {
        let mut entry = Map::new();
        entry.insert("tool".into(), self.identity.to_string().into());
        entry.insert(
            "fingerprint".into(),
            self.fingerprint(env)?.to_string().into(),
        );
        entry.insert("signature".into(), self.signature(env)?);
        Ok(Value::Object(entry))
    }

    fn write(&self, env: &TypeEnv, form: Form) -> Result<Value, GenerateError> {
        let at = format!("Tool `{}`", self.identity);
        unique(
            self.generic.iter().map(String::as_str),
            "type parameter",
            &at,
        )?;
        unique(
            self.params.iter().map(|p| p.name.as_str()),
            "parameter",
            &at,
        )?;
        let generator = Generator::new(env, form);
        let scope = Scope::Bound(&self.generic);
        let mut sig = Map::new();
        if let (true, Some(doc)) = (form.descriptions, &self.doc) {
            sig.insert("description".into(), doc.as_str().into());
        }
        let params = self
            .params
            .iter()
            .map(|p| {
                let at = format!("{at}, parameter `{}`", p.name);
                let schema = generator.root(&p.ty, p.doc.as_deref(), &scope, &at)?;
                Ok(Value::Array(vec![p.name.as_str().into(), schema]))
            })
            .collect::<Result<Vec<_>, GenerateError>>()?;
        sig.insert("params".into(), Value::Array(params));
        let ok_at = format!("{at}, success type");
        sig.insert("ok".into(), generator.root(&self.ok, None, &scope, &ok_at)?);
        let err_at = format!("{at}, error type");
        sig.insert(
            "err".into(),
            generator.root(&self.err, None, &scope, &err_at)?,
        );
        sig.insert("generic".into(), serde_json::json!(self.generic));
        Ok(Value::Object(sig))
    }

    /// Rebuilds a declaration (and the named types it reaches) from a
    /// described signature, as a toolkit or a host reads a listing.
    pub fn from_signature(
        identity: Identity,
        signature: &Value,
    ) -> Result<(Declaration, TypeEnv), SchemaError> {
        let members = listed::members(signature)?;
        let mut env = TypeEnv::new();
        let mut reader = Reader::new(&mut env);
        let scope = Scope::Bound(&members.generic);
        let mut params: Vec<Param> = Vec::with_capacity(members.params.len());
        for (i, (name, schema)) in members.params.iter().enumerate() {
            let at = format!("/params/{i}");
            if params.iter().any(|p| p.name == *name) {
                return Err(SchemaError::at(
                    &format!("{at}/0"),
                    format!("a second parameter `{name}`"),
                ));
            }
            let (ty, doc) = reader.root(schema, &format!("{at}/1"), scope, true)?;
            params.push(Param {
                name: name.clone(),
                doc,
                ty,
            });
        }
        let (ok, _) = reader.root(members.ok, "/ok", scope, false)?;
        let (err, _) = reader.root(members.err, "/err", scope, false)?;
        let declaration = Declaration {
            identity,
            doc: members.description.map(str::to_owned),
            generic: members.generic.clone(),
            params,
            ok,
            err,
        };
        Ok((declaration, env))
    }
}

/// A declaration's fingerprint: the SHA-256 of its canonical signature's
/// canonical text, written `sha256:` and 64 lowercase hex digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Fingerprint(pub [u8; 32]);

impl Fingerprint {
    /// The fingerprint of a canonical signature (the JSON value, hashed over
    /// its canonical text).
    pub fn of_canonical_signature(signature: &Value) -> Fingerprint {
        let digest = Sha256::digest(canonical_json_text(signature).as_bytes());
        Fingerprint(digest.into())
    }

    /// Reads `sha256:` and 64 lowercase hex digits.
    pub fn parse(text: &str) -> Result<Fingerprint, FingerprintError> {
        let err = || FingerprintError {
            text: text.to_owned(),
        };
        let hex = text.strip_prefix("sha256:").ok_or_else(err)?;
        if hex.len() != 64 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(err());
        }
        let mut bytes = [0u8; 32];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| err())?;
        }
        Ok(Fingerprint(bytes))
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sha256:")?;
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// A text that is not `sha256:` and 64 lowercase hex digits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FingerprintError {
    /// The text that was refused.
    pub text: String,
}

impl fmt::Display for FingerprintError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not a fingerprint: `sha256:` and 64 lowercase hex digits",
            self.text
        )
    }
}

impl std::error::Error for FingerprintError {}
