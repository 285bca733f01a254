//! Why a document could not be made.

use std::fmt;

use crate::hale::model::DigestError;

/// Which form refused a shape: the JSON codec carries every document but
/// the `.proto`, which has rules of its own (§ gRPC, the `.proto`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// The JSON codec (§ Codecs): descriptions, the inventory, OpenAPI,
    /// JSON Schema and MCP.
    Json,
    /// The protobuf form (§ gRPC, The protobuf codec).
    Proto,
}

impl Form {
    fn words(self) -> &'static str {
        match self {
            Form::Json => "the JSON codec does not carry",
            Form::Proto => "the protobuf form has no encoding for",
        }
    }
}

/// Why a document could not be made. Every variant names what was asked
/// and what stood in the way, never approximated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DocError {
    /// No surface of that name; the surfaces the program declares.
    NoSurface {
        /// The name asked for.
        name: String,
        /// The surfaces there are, by name.
        known: Vec<String>,
    },
    /// No exposure (serve site or hub) of that name; the names there are.
    NoExposure {
        /// The name asked for.
        name: String,
        /// The exposures there are, by name.
        known: Vec<String>,
    },
    /// A digest could not be computed (a row naming no handler, a stream
    /// missing its bound, …).
    Digest(DigestError),
    /// A shape the form does not carry: `rpc `Ledger::dump`: its response
    /// `Export` has a field `inner.raw: Bytes`, which the JSON codec does not
    /// carry`.
    NotCarried {
        /// What the shape belongs to: ``rpc `Orders::place` `` or
        /// ``stream `Fills` ``.
        owner: String,
        /// Which of its slots: `request`, `response`, `error`, `payload`.
        slot: &'static str,
        /// The slot's type as written.
        ty: String,
        /// The field, by its path from the slot's type, and its type as
        /// written; none when the slot's type itself is not carried.
        field: Option<(String, String)>,
        /// The form that refuses it.
        form: Form,
    },
    /// An exposure whose transport is not a literal the document can read.
    NoTransport {
        /// The exposure.
        exposure: String,
    },
    /// A transport with no outcome encoding in v1's description format.
    NoOutcomes {
        /// The exposure.
        exposure: String,
        /// Its transport.
        transport: String,
    },
    /// `--caller` is neither a name nor a principal object.
    Caller(String),
    /// A rule of the `.proto` form (§ gRPC, the `.proto`): a name that is
    /// no proto3 identifier, a name two messages would share, two fields
    /// of one proto3 JSON name.
    Proto(String),
}

impl From<DigestError> for DocError {
    fn from(e: DigestError) -> Self {
        DocError::Digest(e)
    }
}

fn names(known: &[String]) -> String {
    if known.is_empty() {
        "none".to_string()
    } else {
        known.join(", ")
    }
}

impl fmt::Display for DocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DocError::NoSurface { name, known } => write!(
                f,
                "the program declares no surface `{name}`; its surfaces: {}",
                names(known)
            ),
            DocError::NoExposure { name, known } => write!(
                f,
                "the program serves no exposure named `{name}`; its exposures: {}",
                names(known)
            ),
            DocError::Digest(e) => write!(f, "{e}"),
            DocError::NotCarried {
                owner,
                slot,
                ty,
                field: Some((path, fty)),
                form,
            } => write!(
                f,
                "{owner}: its {slot} `{ty}` has a field `{path}: {fty}`, which {}",
                form.words()
            ),
            DocError::NotCarried {
                owner,
                slot,
                ty,
                field: None,
                form,
            } => write!(f, "{owner}: its {slot} is `{ty}`, which {}", form.words()),
            DocError::NoTransport { exposure } => write!(
                f,
                "exposure `{exposure}` names no transport instance built by a literal"
            ),
            DocError::NoOutcomes {
                exposure,
                transport,
            } => write!(
                f,
                "exposure `{exposure}`: the `{transport}` transport has no outcome encoding in the v1 description (http, unix, mcp, the fixture transport, and a hub's ws and udp)"
            ),
            DocError::Caller(m) => write!(f, "--caller: {m}"),
            DocError::Proto(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for DocError {}
