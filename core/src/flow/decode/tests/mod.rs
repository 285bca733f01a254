//! One test per decoding rule, and per kind of refusal with its whole
//! message and path (`rules`); every limit at its edge (`limits`).

mod limits;
mod rules;

use super::*;
use crate::flow::canonical::to_canonical_string;
use crate::flow::identity::Identity;
use crate::flow::types::{Constructor, Field, TypeDecl};

fn id(name: &str) -> Identity {
    Identity::in_repository("github.com/acme/tools", "1.0.0", "search.flow", name)
}

fn env() -> TypeEnv {
    let mut env = TypeEnv::new();
    env.declare(TypeDecl::record(
        id("Hit"),
        vec![
            Field::new("score", Type::Int),
            Field::new("title", Type::Text),
            Field::new("note", Type::option(Type::Text)),
        ],
    ));
    env.declare(TypeDecl::record(
        id("Search"),
        vec![Field::new("hits", Type::list(Type::named(id("Hit"))))],
    ));
    env.declare(TypeDecl::enumeration(
        id("Shape"),
        vec![
            Constructor::unit("Empty"),
            Constructor::value("Circle", Type::Decimal),
            Constructor::fields(
                "Rect",
                vec![Field::new("w", Type::Int), Field::new("h", Type::Int)],
            ),
        ],
    ));
    env.declare(
        TypeDecl::record(id("Boxed"), vec![Field::new("value", Type::param("T"))]).generic(&["T"]),
    );
    env
}

fn ok(text: &str, ty: &Type) -> Value {
    match decode(text.as_bytes(), ty, &env(), &Limits::default()) {
        Ok(v) => v,
        Err(e) => panic!("{text}: {e}"),
    }
}

fn canon(text: &str, ty: &Type) -> String {
    to_canonical_string(&ok(text, ty))
}

fn refusal_with(text: &str, ty: &Type, limits: &Limits) -> (DecodeErrorKind, String) {
    match decode(text.as_bytes(), ty, &env(), limits) {
        Ok(v) => panic!("{text} decoded as {v:?}"),
        Err(e) => (e.kind, e.to_string()),
    }
}

fn refusal(text: &str, ty: &Type) -> (DecodeErrorKind, String) {
    refusal_with(text, ty, &Limits::default())
}

fn message(text: &str, ty: &Type) -> String {
    refusal(text, ty).1
}

use DecodeErrorKind as K;
