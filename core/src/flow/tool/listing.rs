//! Declarations as a listing holds them, and what an implementation's
//! describe says.
//!
//! A `flow tools` listing has the shape of describe's result:
//! `{"data": "1.0", "tools": [{"tool", "fingerprint", "signature"}, …]}`.
//! [`Listing::parse`] reads one strictly: every declaration is rebuilt from
//! its signature, and its listed fingerprint must be the signature's own.
//! [`Described::parse`] reads an implementation's describe result as the
//! host does: binding goes by identity and fingerprint, so the signature is
//! kept to be read, not checked.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value as Json};

use super::DataVersion;
use crate::flow::fingerprint::{fingerprint_of_signature, Declaration, Fingerprint};
use crate::flow::identity::Identity;
use crate::flow::schema::GenerateError;
use crate::flow::types::TypeEnv;

/// A @tool declaration as a host binds it or a toolkit serves it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tool {
    /// The declaration, its types in `env`.
    pub declaration: Declaration,
    /// The named types the declaration reaches.
    pub env: TypeEnv,
    /// Its fingerprint.
    pub fingerprint: Fingerprint,
    /// Its described signature, as describe lists it.
    pub signature: Json,
}

impl Tool {
    /// A declaration built in Rust, with the named types it reaches.
    pub fn new(declaration: Declaration, env: TypeEnv) -> Result<Tool, GenerateError> {
        let signature = declaration.signature(&env)?;
        let fingerprint = declaration.fingerprint(&env)?;
        Ok(Tool {
            declaration,
            env,
            fingerprint,
            signature,
        })
    }

    /// The declaration's identity.
    pub fn identity(&self) -> &Identity {
        &self.declaration.identity
    }

    /// describe's entry: `{"tool", "fingerprint", "signature"}`.
    pub fn describe_entry(&self) -> Json {
        let mut entry = Map::new();
        entry.insert("tool".into(), self.identity().to_string().into());
        entry.insert("fingerprint".into(), self.fingerprint.to_string().into());
        entry.insert("signature".into(), self.signature.clone());
        Json::Object(entry)
    }

    /// Reads one listed entry, found at JSON path `at`.
    fn from_entry(entry: &Json, at: &str) -> Result<Tool, ListingError> {
        let obj = entry.as_object().ok_or_else(|| {
            ListingError::at(at, "an entry is {\"tool\", \"fingerprint\", \"signature\"}")
        })?;
        only(obj, at, &["tool", "fingerprint", "signature"], "an entry")?;
        let identity = identity_member(obj, at)?;
        let fingerprint = fingerprint_member(obj, at)?;
        let signature = obj
            .get("signature")
            .ok_or_else(|| ListingError::at(at, "an entry has `signature`"))?;
        let sig_at = format!("{at}.signature");
        let (declaration, env) = Declaration::from_signature(identity, signature)
            .map_err(|e| ListingError::at(&sig_at, e.to_string()))?;
        let computed = fingerprint_of_signature(signature)
            .map_err(|e| ListingError::at(&sig_at, e.to_string()))?;
        if computed != fingerprint {
            return Err(ListingError::at(
                &format!("{at}.fingerprint"),
                format!("the listed fingerprint {fingerprint} is not the signature's, {computed}"),
            ));
        }
        Ok(Tool {
            declaration,
            env,
            fingerprint,
            signature: signature.clone(),
        })
    }
}

/// A listing's or a describe result's refusal: where (a JSON path) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListingError {
    /// The JSON path of the offending part, `$` for the whole document.
    pub path: String,
    /// What is wrong there.
    pub reason: String,
}

impl ListingError {
    fn at(path: &str, reason: impl Into<String>) -> ListingError {
        ListingError {
            path: path.to_owned(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for ListingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.reason)
    }
}

impl std::error::Error for ListingError {}

/// Declarations read from a listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listing {
    /// The listing's data version.
    pub data: DataVersion,
    /// Its declarations, in the listing's order.
    pub tools: Vec<Arc<Tool>>,
}

impl Listing {
    /// Reads a listing's JSON text. Its data major must be ours, each
    /// identity listed once, each fingerprint the signature's own.
    pub fn parse(text: &[u8]) -> Result<Listing, ListingError> {
        let doc: Json = serde_json::from_slice(text)
            .map_err(|e| ListingError::at("$", format!("not JSON: {e}")))?;
        Listing::from_json(&doc)
    }

    /// Reads a listing already parsed as JSON.
    pub fn from_json(doc: &Json) -> Result<Listing, ListingError> {
        let obj = doc
            .as_object()
            .ok_or_else(|| ListingError::at("$", "a listing is {\"data\", \"tools\"}"))?;
        only(obj, "$", &["data", "tools"], "a listing")?;
        let data = data_member(obj)?;
        let ours = DataVersion::ours();
        if data.major != ours.major {
            return Err(ListingError::at(
                "$.data",
                format!("data version {data} has another major than ours, {ours}"),
            ));
        }
        let entries = tools_member(obj)?;
        let mut tools: Vec<Arc<Tool>> = Vec::with_capacity(entries.len());
        for (i, entry) in entries.iter().enumerate() {
            let at = format!("$.tools[{i}]");
            let tool = Tool::from_entry(entry, &at)?;
            if tools.iter().any(|t| t.identity() == tool.identity()) {
                return Err(ListingError::at(
                    &format!("{at}.tool"),
                    format!("`{}` is listed twice", tool.identity()),
                ));
            }
            tools.push(Arc::new(tool));
        }
        Ok(Listing { data, tools })
    }

    /// The declaration of `identity`, if listed.
    pub fn get(&self, identity: &Identity) -> Option<&Arc<Tool>> {
        self.tools.iter().find(|t| t.identity() == identity)
    }
}

/// describe's result for `tools`: `{"data": DATA_VERSION, "tools": […]}`.
pub fn describe_result<'a>(tools: impl IntoIterator<Item = &'a Arc<Tool>>) -> Json {
    let mut result = Map::new();
    result.insert("data".into(), super::DATA_VERSION.into());
    result.insert(
        "tools".into(),
        Json::Array(tools.into_iter().map(|t| t.describe_entry()).collect()),
    );
    Json::Object(result)
}

/// What an implementation's describe says: its data version and, for each
/// declaration it serves, the fingerprint it lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Described {
    /// The data version it speaks.
    pub data: DataVersion,
    /// Each declaration it serves, by identity, with its fingerprint.
    pub tools: BTreeMap<Identity, Fingerprint>,
    /// The whole result, as it was sent.
    pub result: Json,
}

impl Described {
    /// Reads describe's result (the JSON-RPC `result`'s text).
    pub fn parse(result: &[u8]) -> Result<Described, ListingError> {
        let doc: Json = serde_json::from_slice(result)
            .map_err(|e| ListingError::at("$", format!("not JSON: {e}")))?;
        Described::from_json(doc)
    }

    /// Reads describe's result already parsed as JSON. Members other than
    /// `data` and `tools` are ignored (minors only add), and so is what an
    /// entry holds beside `tool` and `fingerprint`.
    pub fn from_json(doc: Json) -> Result<Described, ListingError> {
        let obj = doc
            .as_object()
            .ok_or_else(|| ListingError::at("$", "describe's result is {\"data\", \"tools\"}"))?;
        let data = data_member(obj)?;
        let mut tools = BTreeMap::new();
        for (i, entry) in tools_member(obj)?.iter().enumerate() {
            let at = format!("$.tools[{i}]");
            let entry = entry.as_object().ok_or_else(|| {
                ListingError::at(
                    &at,
                    "an entry is {\"tool\", \"fingerprint\", \"signature\"}",
                )
            })?;
            let identity = identity_member(entry, &at)?;
            let fingerprint = fingerprint_member(entry, &at)?;
            if tools.insert(identity.clone(), fingerprint).is_some() {
                return Err(ListingError::at(
                    &format!("{at}.tool"),
                    format!("`{identity}` is listed twice"),
                ));
            }
        }
        Ok(Described {
            data,
            tools,
            result: doc,
        })
    }
}

fn only(
    obj: &Map<String, Json>,
    at: &str,
    allowed: &[&str],
    what: &str,
) -> Result<(), ListingError> {
    match obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        None => Ok(()),
        Some(k) => Err(ListingError::at(
            &format!("{at}.{k}"),
            format!("`{k}` is not a member of {what}"),
        )),
    }
}

fn data_member(obj: &Map<String, Json>) -> Result<DataVersion, ListingError> {
    match obj.get("data") {
        Some(Json::String(s)) => DataVersion::parse(s).ok_or_else(|| {
            ListingError::at(
                "$.data",
                format!("{s:?} is not a data version, MAJOR.MINOR"),
            )
        }),
        Some(_) => Err(ListingError::at(
            "$.data",
            "the data version is a string, MAJOR.MINOR",
        )),
        None => Err(ListingError::at("$", "`data` names the data version")),
    }
}

fn tools_member(obj: &Map<String, Json>) -> Result<&Vec<Json>, ListingError> {
    match obj.get("tools") {
        Some(Json::Array(items)) => Ok(items),
        Some(_) => Err(ListingError::at(
            "$.tools",
            "`tools` is an array of entries",
        )),
        None => Err(ListingError::at("$", "`tools` lists the declarations")),
    }
}

fn identity_member(obj: &Map<String, Json>, at: &str) -> Result<Identity, ListingError> {
    match obj.get("tool") {
        Some(Json::String(s)) => {
            Identity::parse(s).map_err(|e| ListingError::at(&format!("{at}.tool"), e.to_string()))
        }
        Some(_) => Err(ListingError::at(
            &format!("{at}.tool"),
            "`tool` is an identity, a string",
        )),
        None => Err(ListingError::at(
            at,
            "an entry has `tool`, the declaration's identity",
        )),
    }
}

fn fingerprint_member(obj: &Map<String, Json>, at: &str) -> Result<Fingerprint, ListingError> {
    match obj.get("fingerprint") {
        Some(Json::String(s)) => Fingerprint::parse(s)
            .map_err(|e| ListingError::at(&format!("{at}.fingerprint"), e.to_string())),
        Some(_) => Err(ListingError::at(
            &format!("{at}.fingerprint"),
            "`fingerprint` is a string, `sha256:` and 64 lowercase hex digits",
        )),
        None => Err(ListingError::at(at, "an entry has `fingerprint`")),
    }
}
