//! A surface's `.proto` (§ gRPC, the `.proto`): `syntax = "proto3"`, no
//! package, one service named after the surface with a unary rpc per
//! member (named as its MCP tool), a message per record the rows reach
//! (fields numbered in declaration order, every scalar `optional`), a
//! scalar request, response or error carried in `<rpc>Request`,
//! `<rpc>Response` or `<rpc>Error` (`value = 1`), a missing one in
//! `HaleEmpty`, and a refusal in `HaleRefusal`.
//!
//! What protoc would refuse is refused here first, naming what: a name
//! that is no proto3 identifier, a name two messages would share, and a
//! record two of whose fields have one proto3 JSON name.

use std::collections::BTreeMap;

use super::book::{Scalar, Slot, TypeBook};
use super::error::DocError;
use super::proto_file::{
    json_name, FieldDef, FieldType, Label, MessageDef, MethodDef, ProtoFile, ServiceDef,
};
use super::rows::{surface_members, tool_name, unique, ErrorSlot};
use crate::hale::model::Program;

/// The message of a row with no request or no response.
pub const EMPTY: &str = "HaleEmpty";
/// The message of a refusal, the detail of a refused call's status.
pub const REFUSAL: &str = "HaleRefusal";

/// The type URL of a status detail carrying `message`.
pub fn type_url(message: &str) -> String {
    format!("type.hale.dev/{message}")
}

fn is_ident(s: &str) -> bool {
    let mut cs = s.chars();
    matches!(cs.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn proto_scalar(s: &Scalar) -> FieldType {
    match s.json {
        "integer" => FieldType::Int64,
        "number" => FieldType::Double,
        "boolean" => FieldType::Bool,
        _ => FieldType::String,
    }
}

fn hale_comment(s: &Scalar) -> Option<String> {
    match (&s.hale_type, &s.unit) {
        (Some(t), Some(u)) => Some(format!("Hale: {t}, {u}")),
        (Some(t), None) => Some(format!("Hale: {t}")),
        (None, Some(u)) => Some(format!("Hale: {u}")),
        (None, None) => None,
    }
}

/// An `optional` scalar field, its Hale type in the comment.
fn scalar_field(name: &str, number: u32, s: &Scalar) -> FieldDef {
    FieldDef {
        comment: hale_comment(s),
        ..FieldDef::new(name, number, proto_scalar(s), Label::Optional)
    }
}

const HEADER_RULES: &str = "//
// Field numbers are the declaration order of the Hale struct's fields, 1, 2, …: the surface digest
// folds the fields in that order, so a reorder or an insertion moves the digest and no number
// moves while the digest holds. Every scalar field is `optional`: an absent field is not a zero one
// (a field with no default that is absent is a `malformed` refusal, missing_field). An identity or a
// quantity is its Int, int64, and the comment names its Hale type.
//
// The five outcomes of a call:
//   result           status OK (0); the message is the rpc's response.
//   handler error    status FAILED_PRECONDITION (9); grpc-status-details-bin is a google.rpc.Status
//                    whose one detail is an Any, type URL type.hale.dev/<the rpc's error message>,
//                    value that message. Only an rpc that declares an error type has one.
//   refusal          malformed INVALID_ARGUMENT (3), digest_mismatch FAILED_PRECONDITION (9),
//                    unauthenticated UNAUTHENTICATED (16), unauthorized PERMISSION_DENIED (7), full
//                    RESOURCE_EXHAUSTED (8), shutting_down and unavailable UNAVAILABLE (14); the
//                    detail is an Any, type URL type.hale.dev/HaleRefusal, value HaleRefusal.
//   server error     status INTERNAL (13); the detail is HaleRefusal with kind \"server\".
//   transport        the stream is reset or the connection ends without a status: the call may have run.
";

/// The `.proto` of `surface`, as `hale check --api --surface NAME --proto`
/// prints it and `hale api export` writes `NAME.proto`.
pub fn proto(program: &Program, surface: &str) -> Result<String, DocError> {
    proto_file(program, surface).map(|f| f.text())
}

/// The model of `surface`'s `.proto` (`NAME.proto`), whose text is
/// [`proto`] and whose descriptor server reflection answers.
pub fn proto_file(program: &Program, surface: &str) -> Result<ProtoFile, DocError> {
    let mut book = TypeBook::new();
    let (digest, members) = surface_members(program, surface, &mut book)?;
    // An imported surface (`lib::Public`) is the service `lib_Public`, as
    // an imported type's message is.
    let service = message_name(surface);
    if !is_ident(&service) {
        return Err(DocError::Proto(format!(
            "the surface `{surface}` is not a proto3 service name"
        )));
    }
    let reached = book.reach(members.iter().flat_map(|m| m.slots()));
    let mut messages = Vec::new();
    for name in &reached {
        messages.push(record(&book, name)?);
    }
    let mut wrappers = Vec::new();
    let mut uses_empty = false;
    let mut methods = Vec::new();
    for m in &members {
        let rpc = tool_name(&m.row.member);
        if !is_ident(&rpc) {
            return Err(DocError::Proto(format!(
                "rpc `{}`: its gRPC name `{rpc}` is not a proto3 identifier",
                m.row.member
            )));
        }
        let mut carry = |slot: Option<&Slot>, what: &str| match slot {
            None => {
                uses_empty = true;
                EMPTY.to_string()
            }
            Some(Slot::Record(n)) => message_name(n),
            Some(Slot::Scalar(s)) => {
                let name = format!("{rpc}{what}");
                wrappers.push(MessageDef {
                    comment: vec![format!(
                        "The {} of `{}`, a scalar.",
                        what.to_lowercase(),
                        m.row.member
                    )],
                    ..MessageDef::new(&name, vec![scalar_field("value", 1, s)])
                });
                name
            }
        };
        let input = carry(m.request.as_ref(), "Request");
        let output = carry(m.response.as_ref(), "Response");
        let roles = unique(&m.row.requires);
        let mut comment = vec![
            format!("rpc {}", m.row.member),
            if roles.is_empty() {
                "requires no role".to_string()
            } else {
                format!("requires {}", roles.join(", "))
            },
        ];
        match &m.error {
            ErrorSlot::None => {}
            ErrorSlot::ClosureViolation => comment.push(
                "a violation is the server error (ClosureViolation): status 13, no handler error"
                    .to_string(),
            ),
            ErrorSlot::Type(e) => {
                let e = carry(Some(e), "Error");
                comment.push(format!(
                    "handler error: status 9, a detail of type {}",
                    type_url(&e)
                ));
            }
        }
        methods.push(MethodDef {
            name: rpc,
            input,
            output,
            streaming: false,
            comment,
        });
    }
    messages.extend(wrappers);
    if uses_empty {
        messages.push(MessageDef {
            comment: vec!["A row with no request, or no response.".to_string()],
            ..MessageDef::new(EMPTY, Vec::new())
        });
    }
    let string = |name: &str, number: u32, label: Label| {
        FieldDef::new(name, number, FieldType::String, label)
    };
    messages.push(MessageDef {
        comment: vec![
            "A refusal, and the server error (kind \"server\"): the detail of its status.".to_string(),
            "`requires` is the roles of an unauthorized refusal, `served` the digest of a digest_mismatch one.".to_string(),
        ],
        ..MessageDef::new(
            REFUSAL,
            vec![
                string("kind", 1, Label::Singular),
                string("reason", 2, Label::Singular),
                string("requires", 3, Label::Repeated),
                string("served", 4, Label::Singular),
            ],
        )
    });
    let mut taken: BTreeMap<&str, ()> = BTreeMap::from([(service.as_str(), ())]);
    for m in &messages {
        if taken.insert(&m.name, ()).is_some() {
            return Err(DocError::Proto(format!(
                "the message `{}` is named twice in the .proto of {surface} (a type of the program, the surface, or a message the form adds)",
                m.name
            )));
        }
    }
    let mut header = format!(
        "// Generated by `hale api export` from the rows of the surface {surface} ({digest}).\n\
         // Do not edit it: regenerate it. `hale api export --check` refuses a copy that drifted.\n\
         //\n\
         // The wire (spec/api.md § gRPC): POST /{surface}/<rpc>, one unary message each way, content-type\n\
         // application/grpc or application/grpc+proto (application/grpc+json carries the row's JSON).\n\
         // An rpc is named as an MCP tool is: Orders::place is Orders__place.\n"
    );
    header.push_str(HEADER_RULES);
    if uses_empty {
        header.push_str(&format!(
            "//\n// {EMPTY} is the message of a row that takes, or returns, nothing.\n"
        ));
    }
    Ok(ProtoFile {
        name: format!("{surface}.proto"),
        package: None,
        header,
        services: vec![ServiceDef {
            name: service.clone(),
            methods,
        }],
        messages,
    })
}

/// The message a record is named by: the name the schema documents give
/// it, the `::` of an imported type (`lib::Item`) written `_` (`lib_Item`),
/// as § gRPC, the `.proto`, says.
pub fn message_name(type_name: &str) -> String {
    type_name.replace("::", "_")
}

/// The message of the record `type_name`, refused when a name is no proto3
/// identifier or two fields share a proto3 JSON name.
fn record(book: &TypeBook, type_name: &str) -> Result<MessageDef, DocError> {
    let r = &book.records()[type_name];
    let name = &message_name(type_name);
    if !is_ident(name) {
        return Err(DocError::Proto(format!(
            "the type `{name}` is not a proto3 message name"
        )));
    }
    let mut json_names: BTreeMap<String, &str> = BTreeMap::new();
    let mut fields = Vec::with_capacity(r.fields.len());
    for (i, f) in r.fields.iter().enumerate() {
        if !is_ident(&f.key) {
            return Err(DocError::Proto(format!(
                "`{name}`: the field `{}` is keyed `{}`, which is not a proto3 field name",
                f.name, f.key
            )));
        }
        let jn = json_name(&f.key);
        if let Some(first) = json_names.insert(jn.to_lowercase(), &f.key) {
            return Err(DocError::Proto(format!(
                "`{name}`: the fields `{first}` and `{}` have one proto3 JSON name, `{}` (compared without regard to case, as protoc compares them), so protoc refuses the message; a json: tag on one of them renames it",
                f.key,
                json_name(first)
            )));
        }
        let n = u32::try_from(i + 1).unwrap_or(u32::MAX);
        fields.push(match &f.slot {
            Slot::Scalar(s) => scalar_field(&f.key, n, s),
            Slot::Record(inner) => FieldDef::new(
                &f.key,
                n,
                FieldType::Message(message_name(inner)),
                Label::Singular,
            ),
        });
    }
    Ok(MessageDef::new(name, fields))
}
