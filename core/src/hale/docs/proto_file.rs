//! One `.proto` file as a model, and the two things made of it: its text
//! ([`ProtoFile::text`], what `hale api export` writes) and its
//! `google.protobuf.FileDescriptorProto` ([`ProtoFile::descriptor`], what
//! server reflection answers, § gRPC). Both walk the same model, so the
//! descriptor is the file a compiler makes of the text: the fields protoc
//! fills in (`json_name`, and for an `optional` field of proto3 its
//! synthetic oneof `_<field>` and `proto3_optional`) in the order protoc
//! writes them, so `protoc --descriptor_set_out` of the text gives the same
//! bytes, less the source info.
//!
//! The files the gRPC transport serves beside a surface's are modelled
//! here too: [`description_file`] (`hale/api/description.proto`, the
//! Describe method's) and [`reflection_file`] (reflection's own, v1 and
//! v1alpha, the messages of `grpc/reflection/v1/reflection.proto` without
//! its language options).

use crate::hale::protobuf::{write_tag, write_varint, LEN, VARINT};

/// A field's default proto3 JSON name (protoc's): the underscores removed
/// and the letter after each capitalised (`a_b` is `aB`).
pub fn json_name(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut upper = false;
    for c in field.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// A field's type, as far as the files here use them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldType {
    /// `int64`.
    Int64,
    /// `int32`.
    Int32,
    /// `double`.
    Double,
    /// `bool`.
    Bool,
    /// `string`.
    String,
    /// `bytes`.
    Bytes,
    /// A message of the same file, by its name.
    Message(String),
}

impl FieldType {
    /// The type as the text writes it.
    pub fn text(&self) -> &str {
        match self {
            FieldType::Int64 => "int64",
            FieldType::Int32 => "int32",
            FieldType::Double => "double",
            FieldType::Bool => "bool",
            FieldType::String => "string",
            FieldType::Bytes => "bytes",
            FieldType::Message(name) => name,
        }
    }

    /// `FieldDescriptorProto.Type`.
    fn number(&self) -> u64 {
        match self {
            FieldType::Double => 1,
            FieldType::Int64 => 3,
            FieldType::Int32 => 5,
            FieldType::Bool => 8,
            FieldType::String => 9,
            FieldType::Message(_) => 11,
            FieldType::Bytes => 12,
        }
    }
}

/// How a field is declared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Label {
    /// proto3's plain field (implicit presence).
    Singular,
    /// `optional`: explicit presence.
    Optional,
    /// `repeated`.
    Repeated,
}

/// A field of a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldDef {
    /// Its name.
    pub name: String,
    /// Its number.
    pub number: u32,
    /// Its type.
    pub ty: FieldType,
    /// How it is declared.
    pub label: Label,
    /// The message's oneof it belongs to, by index in
    /// [`MessageDef::oneofs`].
    pub oneof: Option<usize>,
    /// A comment after it on its line (without `//`).
    pub comment: Option<String>,
}

impl FieldDef {
    /// A field outside any oneof, with no comment.
    pub fn new(name: &str, number: u32, ty: FieldType, label: Label) -> FieldDef {
        FieldDef {
            name: name.to_string(),
            number,
            ty,
            label,
            oneof: None,
            comment: None,
        }
    }
}

/// A message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageDef {
    /// Its name.
    pub name: String,
    /// The comment lines above it (without `//`).
    pub comment: Vec<String>,
    /// Its fields, in the order written.
    pub fields: Vec<FieldDef>,
    /// Its oneofs, by name; a oneof's fields are written together.
    pub oneofs: Vec<String>,
}

impl MessageDef {
    /// A message of `fields`, with no comment and no oneof.
    pub fn new(name: &str, fields: Vec<FieldDef>) -> MessageDef {
        MessageDef {
            name: name.to_string(),
            comment: Vec::new(),
            fields,
            oneofs: Vec::new(),
        }
    }
}

/// An rpc of a service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MethodDef {
    /// Its name.
    pub name: String,
    /// The request's message.
    pub input: String,
    /// The response's message.
    pub output: String,
    /// Both sides are streams (reflection's one rpc); otherwise unary.
    pub streaming: bool,
    /// The comment lines above it (without `//`).
    pub comment: Vec<String>,
}

/// A service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceDef {
    /// Its name.
    pub name: String,
    /// Its rpcs, in order.
    pub methods: Vec<MethodDef>,
}

/// A `.proto` file. See the module documentation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtoFile {
    /// Its name, as an import or a reflection request names it
    /// (`Public.proto`, `hale/api/description.proto`).
    pub name: String,
    /// Its package, when it has one.
    pub package: Option<String>,
    /// The comment before `syntax`, whole lines with their `//` and LF.
    pub header: String,
    /// Its services (the text writes them before the messages).
    pub services: Vec<ServiceDef>,
    /// Its messages, in order.
    pub messages: Vec<MessageDef>,
}

impl ProtoFile {
    /// The fully-qualified name of a symbol the file declares
    /// (`grpc.reflection.v1.ServerReflection`, `Public`).
    pub fn qualified(&self, name: &str) -> String {
        match &self.package {
            Some(p) => format!("{p}.{name}"),
            None => name.to_string(),
        }
    }

    /// The fully-qualified names of its services.
    pub fn service_names(&self) -> Vec<String> {
        self.services
            .iter()
            .map(|s| self.qualified(&s.name))
            .collect()
    }

    /// Whether the file declares the fully-qualified `symbol`: a service,
    /// a method of one (`Service.Method`), a message, or a field of one
    /// (`Message.field`), as reflection's `file_containing_symbol` asks.
    pub fn declares(&self, symbol: &str) -> bool {
        let local = match &self.package {
            Some(p) => match symbol
                .strip_prefix(p.as_str())
                .and_then(|s| s.strip_prefix('.'))
            {
                Some(local) => local,
                None => return false,
            },
            None => symbol,
        };
        let (head, member) = match local.split_once('.') {
            Some((h, m)) => (h, Some(m)),
            None => (local, None),
        };
        let service = self.services.iter().find(|s| s.name == head);
        let message = self.messages.iter().find(|m| m.name == head);
        match member {
            None => service.is_some() || message.is_some(),
            Some(m) => {
                service.is_some_and(|s| s.methods.iter().any(|x| x.name == m))
                    || message.is_some_and(|x| {
                        x.fields.iter().any(|f| f.name == m) || x.oneofs.iter().any(|o| o == m)
                    })
            }
        }
    }

    /// The text: the header, `syntax = "proto3";`, the package, the
    /// services, then the messages, each after a blank line.
    pub fn text(&self) -> String {
        let mut out = self.header.clone();
        out.push_str("\nsyntax = \"proto3\";\n");
        if let Some(p) = &self.package {
            out.push_str(&format!("\npackage {p};\n"));
        }
        for s in &self.services {
            out.push_str(&format!("\nservice {} {{\n", s.name));
            for (i, m) in s.methods.iter().enumerate() {
                if i > 0 {
                    out.push('\n');
                }
                for c in &m.comment {
                    out.push_str(&format!("  // {c}\n"));
                }
                let stream = if m.streaming { "stream " } else { "" };
                out.push_str(&format!(
                    "  rpc {}({stream}{}) returns ({stream}{});\n",
                    m.name, m.input, m.output
                ));
            }
            out.push_str("}\n");
        }
        for m in &self.messages {
            out.push('\n');
            for c in &m.comment {
                out.push_str(&format!("// {c}\n"));
            }
            if m.fields.is_empty() {
                out.push_str(&format!("message {} {{}}\n", m.name));
                continue;
            }
            out.push_str(&format!("message {} {{\n", m.name));
            let mut open: Option<usize> = None;
            for f in &m.fields {
                if f.oneof != open {
                    if open.is_some() {
                        out.push_str("  }\n");
                    }
                    if let Some(o) = f.oneof {
                        out.push_str(&format!("  oneof {} {{\n", m.oneofs[o]));
                    }
                    open = f.oneof;
                }
                let indent = if open.is_some() { "    " } else { "  " };
                let label = match f.label {
                    Label::Singular => "",
                    Label::Optional => "optional ",
                    Label::Repeated => "repeated ",
                };
                let comment = f
                    .comment
                    .as_ref()
                    .map(|c| format!(" // {c}"))
                    .unwrap_or_default();
                out.push_str(&format!(
                    "{indent}{label}{} {} = {};{comment}\n",
                    f.ty.text(),
                    f.name,
                    f.number
                ));
            }
            if open.is_some() {
                out.push_str("  }\n");
            }
            out.push_str("}\n");
        }
        out
    }

    /// The serialized `google.protobuf.FileDescriptorProto`, as protoc
    /// writes it for the text (fields in number order, no source info).
    pub fn descriptor(&self) -> Vec<u8> {
        let mut out = Vec::new();
        put_str(&mut out, 1, &self.name);
        if let Some(p) = &self.package {
            put_str(&mut out, 2, p);
        }
        for m in &self.messages {
            put_len(&mut out, 4, &self.message_descriptor(m));
        }
        for s in &self.services {
            let mut service = Vec::new();
            put_str(&mut service, 1, &s.name);
            for m in &s.methods {
                let mut method = Vec::new();
                put_str(&mut method, 1, &m.name);
                put_str(&mut method, 2, &self.type_name(&m.input));
                put_str(&mut method, 3, &self.type_name(&m.output));
                if m.streaming {
                    put_varint(&mut method, 5, 1);
                    put_varint(&mut method, 6, 1);
                }
                put_len(&mut service, 2, &method);
            }
            put_len(&mut out, 6, &service);
        }
        put_str(&mut out, 12, "proto3");
        out
    }

    /// A message's type name as a descriptor holds it: fully qualified,
    /// with a leading dot.
    fn type_name(&self, message: &str) -> String {
        format!(".{}", self.qualified(message))
    }

    fn message_descriptor(&self, m: &MessageDef) -> Vec<u8> {
        let mut out = Vec::new();
        put_str(&mut out, 1, &m.name);
        // protoc gives each `optional` field a synthetic oneof, declared
        // after the message's own, in field order.
        let mut synthetic = Vec::new();
        for f in &m.fields {
            let mut field = Vec::new();
            put_str(&mut field, 1, &f.name);
            put_varint(&mut field, 3, u64::from(f.number));
            let label = if f.label == Label::Repeated { 3 } else { 1 };
            put_varint(&mut field, 4, label);
            put_varint(&mut field, 5, f.ty.number());
            if let FieldType::Message(name) = &f.ty {
                put_str(&mut field, 6, &self.type_name(name));
            }
            let oneof = match (f.label, f.oneof) {
                (Label::Optional, _) => {
                    synthetic.push(format!("_{}", f.name));
                    Some(m.oneofs.len() + synthetic.len() - 1)
                }
                (_, oneof) => oneof,
            };
            if let Some(o) = oneof {
                put_varint(&mut field, 9, o as u64);
            }
            put_str(&mut field, 10, &json_name(&f.name));
            if f.label == Label::Optional {
                put_varint(&mut field, 17, 1);
            }
            put_len(&mut out, 2, &field);
        }
        for name in m.oneofs.iter().chain(&synthetic) {
            let mut oneof = Vec::new();
            put_str(&mut oneof, 1, name);
            put_len(&mut out, 8, &oneof);
        }
        out
    }
}

/// A length-delimited field, written even when empty (a descriptor's
/// fields have presence).
fn put_len(out: &mut Vec<u8>, number: u64, bytes: &[u8]) {
    write_tag(out, number, LEN);
    write_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn put_str(out: &mut Vec<u8>, number: u64, s: &str) {
    put_len(out, number, s.as_bytes());
}

fn put_varint(out: &mut Vec<u8>, number: u64, v: u64) {
    write_tag(out, number, VARINT);
    write_varint(out, v);
}

/// The name of the Describe method's file.
pub const DESCRIPTION_FILE: &str = "hale/api/description.proto";

/// `hale/api/description.proto`: `service hale.api.Description { rpc
/// Describe(DescribeRequest) returns (DescriptionDocument); }`, the request
/// empty (§ gRPC: the request message is ignored) and the document the
/// JSON text in field 1.
pub fn description_file() -> ProtoFile {
    ProtoFile {
        name: DESCRIPTION_FILE.to_string(),
        package: Some("hale.api".to_string()),
        header:
            "// The description method every gRPC exposure of Hale serves (spec/api.md § gRPC).\n\
                 // The request is ignored; the answer is the caller's description document, the\n\
                 // JSON text of § The description, as the one field of DescriptionDocument.\n"
                .to_string(),
        services: vec![ServiceDef {
            name: "Description".to_string(),
            methods: vec![MethodDef {
                name: "Describe".to_string(),
                input: "DescribeRequest".to_string(),
                output: "DescriptionDocument".to_string(),
                streaming: false,
                comment: Vec::new(),
            }],
        }],
        messages: vec![
            MessageDef::new("DescribeRequest", Vec::new()),
            MessageDef::new(
                "DescriptionDocument",
                vec![FieldDef::new("json", 1, FieldType::String, Label::Singular)],
            ),
        ],
    }
}

/// The name of reflection's own file, v1 or v1alpha.
pub fn reflection_file_name(alpha: bool) -> &'static str {
    if alpha {
        "grpc/reflection/v1alpha/reflection.proto"
    } else {
        "grpc/reflection/v1/reflection.proto"
    }
}

/// `grpc/reflection/v1/reflection.proto` (or v1alpha's, the same messages
/// in package `grpc.reflection.v1alpha`): gRPC's messages and numbers, as
/// the upstream file declares them, without its language options.
pub fn reflection_file(alpha: bool) -> ProtoFile {
    use FieldType::{Bytes, Int32, Message, String as Text};
    use Label::{Repeated, Singular};
    let version = if alpha { "v1alpha" } else { "v1" };
    let f = FieldDef::new;
    let in_oneof = |name: &str, number: u32, ty: FieldType| FieldDef {
        oneof: Some(0),
        ..FieldDef::new(name, number, ty, Singular)
    };
    let msg = |name: &str| Message(name.to_string());
    let request = MessageDef {
        oneofs: vec!["message_request".to_string()],
        ..MessageDef::new(
            "ServerReflectionRequest",
            vec![
                f("host", 1, Text, Singular),
                in_oneof("file_by_filename", 3, Text),
                in_oneof("file_containing_symbol", 4, Text),
                in_oneof("file_containing_extension", 5, msg("ExtensionRequest")),
                in_oneof("all_extension_numbers_of_type", 6, Text),
                in_oneof("list_services", 7, Text),
            ],
        )
    };
    let response = MessageDef {
        oneofs: vec!["message_response".to_string()],
        ..MessageDef::new(
            "ServerReflectionResponse",
            vec![
                f("valid_host", 1, Text, Singular),
                f(
                    "original_request",
                    2,
                    msg("ServerReflectionRequest"),
                    Singular,
                ),
                in_oneof("file_descriptor_response", 4, msg("FileDescriptorResponse")),
                in_oneof(
                    "all_extension_numbers_response",
                    5,
                    msg("ExtensionNumberResponse"),
                ),
                in_oneof("list_services_response", 6, msg("ListServiceResponse")),
                in_oneof("error_response", 7, msg("ErrorResponse")),
            ],
        )
    };
    ProtoFile {
        name: reflection_file_name(alpha).to_string(),
        package: Some(format!("grpc.reflection.{version}")),
        header: format!(
            "// gRPC server reflection ({version}), as a Hale gRPC exposure serves it: the service and\n\
             // messages of gRPC's grpc/reflection/{version}/reflection.proto, without its language options.\n"
        ),
        services: vec![ServiceDef {
            name: "ServerReflection".to_string(),
            methods: vec![MethodDef {
                name: "ServerReflectionInfo".to_string(),
                input: "ServerReflectionRequest".to_string(),
                output: "ServerReflectionResponse".to_string(),
                streaming: true,
                comment: Vec::new(),
            }],
        }],
        messages: vec![
            request,
            MessageDef::new(
                "ExtensionRequest",
                vec![
                    f("containing_type", 1, Text, Singular),
                    f("extension_number", 2, Int32, Singular),
                ],
            ),
            response,
            MessageDef::new(
                "FileDescriptorResponse",
                vec![f("file_descriptor_proto", 1, Bytes, Repeated)],
            ),
            MessageDef::new(
                "ExtensionNumberResponse",
                vec![
                    f("base_type_name", 1, Text, Singular),
                    f("extension_number", 2, Int32, Repeated),
                ],
            ),
            MessageDef::new(
                "ListServiceResponse",
                vec![f("service", 1, msg("ServiceResponse"), Repeated)],
            ),
            MessageDef::new("ServiceResponse", vec![f("name", 1, Text, Singular)]),
            MessageDef::new(
                "ErrorResponse",
                vec![
                    f("error_code", 1, Int32, Singular),
                    f("error_message", 2, Text, Singular),
                ],
            ),
        ],
    }
}
