//! Properties of schemas and fingerprints over generated type models:
//! schema → type → schema is the identity, a listed signature gives the
//! declaration's own fingerprint and reads back as the declaration, no
//! doc comment moves a fingerprint, and a schema changed anywhere is either
//! refused or is one we write (never read as something else, never a
//! panic).

mod support;

use limen_core::flow::{
    canonical_signature, fingerprint_of_signature, schema_of, type_from_schema, Constructor,
    Declaration, Field, Payload, TypeBody, TypeDecl, TypeEnv,
};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::Value as Json;

/// The JSON pointer of every node of `v`.
fn pointers(v: &Json, at: String, out: &mut Vec<String>) {
    match v {
        Json::Object(m) => {
            for (k, child) in m {
                pointers(
                    child,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        Json::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                pointers(child, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
    out.push(at);
}

/// `v` with the node at a chosen pointer changed in one of several ways.
fn mutate(v: &Json, at: Index, how: u8) -> Json {
    let mut all = Vec::new();
    pointers(v, String::new(), &mut all);
    let pointer = at.get(&all).clone();
    let mut out = v.clone();
    let node = out.pointer_mut(&pointer).unwrap();
    *node = match (how % 7, node.clone()) {
        (0, Json::Object(mut m)) => {
            let first = m.keys().next().cloned();
            if let Some(k) = first {
                m.shift_remove(&k);
            }
            Json::Object(m)
        }
        (1, Json::Object(mut m)) => {
            m.insert("minimum".into(), 0.into());
            Json::Object(m)
        }
        (2, Json::Array(mut items)) => {
            items.reverse();
            items.push(Json::Bool(true));
            Json::Array(items)
        }
        (3, _) => Json::Bool(false),
        (4, _) => serde_json::json!({}),
        (5, _) => serde_json::json!("integer"),
        _ => serde_json::json!([1]),
    };
    out
}

fn undocumented_fields(fields: &[Field]) -> Vec<Field> {
    fields
        .iter()
        .map(|f| Field {
            doc: None,
            ..f.clone()
        })
        .collect()
}

/// `env` with every doc comment removed.
fn undocumented(env: &TypeEnv) -> TypeEnv {
    let mut out = TypeEnv::new();
    for decl in env.iter() {
        let body = match &decl.body {
            TypeBody::Record(fs) => TypeBody::Record(undocumented_fields(fs)),
            TypeBody::Enum(cs) => TypeBody::Enum(
                cs.iter()
                    .map(|c| Constructor {
                        name: c.name.clone(),
                        doc: None,
                        payload: match &c.payload {
                            Payload::Fields(fs) => Payload::Fields(undocumented_fields(fs)),
                            other => other.clone(),
                        },
                    })
                    .collect(),
            ),
        };
        out.declare(TypeDecl {
            doc: None,
            body,
            ..decl.clone()
        });
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn schema_to_type_to_schema_is_the_identity((env, ty) in support::arb_model()) {
        let schema = schema_of(&ty, &env).unwrap();
        let (back, back_env) = type_from_schema(&schema).unwrap();
        prop_assert_eq!(&back, &ty);
        prop_assert_eq!(&back_env, &support::reachable(&env, [&ty]));
        let again = schema_of(&back, &back_env).unwrap();
        // The same value, and the same text: key order is fixed too.
        prop_assert_eq!(
            serde_json::to_string(&again).unwrap(),
            serde_json::to_string(&schema).unwrap()
        );
    }

    #[test]
    fn a_listed_signature_is_its_declarations((decl, env) in support::arb_declaration()) {
        let listed = decl.signature(&env).unwrap();
        prop_assert_eq!(
            canonical_signature(&listed).unwrap(),
            decl.canonical_signature(&env).unwrap()
        );
        prop_assert_eq!(
            fingerprint_of_signature(&listed).unwrap(),
            decl.fingerprint(&env).unwrap()
        );
        let (read, read_env) = Declaration::from_signature(decl.identity.clone(), &listed).unwrap();
        prop_assert_eq!(&read, &decl);
        let roots = decl.params.iter().map(|p| &p.ty).chain([&decl.ok, &decl.err]);
        prop_assert_eq!(&read_env, &support::reachable(&env, roots));
        prop_assert_eq!(read.signature(&read_env).unwrap(), listed);
    }

    #[test]
    fn no_doc_comment_moves_a_fingerprint((decl, env) in support::arb_declaration()) {
        let bare = Declaration {
            doc: None,
            params: decl
                .params
                .iter()
                .map(|p| limen_core::flow::Param { doc: None, ..p.clone() })
                .collect(),
            ..decl.clone()
        };
        prop_assert_eq!(
            bare.fingerprint(&undocumented(&env)).unwrap(),
            decl.fingerprint(&env).unwrap()
        );
    }

    #[test]
    fn a_changed_schema_is_refused_or_is_one_we_write(
        (env, ty) in support::arb_model(),
        at in any::<Index>(),
        how in any::<u8>(),
    ) {
        let schema = mutate(&schema_of(&ty, &env).unwrap(), at, how);
        if let Ok((read, read_env)) = type_from_schema(&schema) {
            prop_assert_eq!(schema_of(&read, &read_env).unwrap(), schema);
        }
    }

    #[test]
    fn a_changed_signature_is_refused_or_fingerprinted_without_panic(
        (decl, env) in support::arb_declaration(),
        at in any::<Index>(),
        how in any::<u8>(),
    ) {
        let listed = mutate(&decl.signature(&env).unwrap(), at, how);
        let _ = fingerprint_of_signature(&listed);
        if let Ok((read, read_env)) = Declaration::from_signature(decl.identity.clone(), &listed) {
            prop_assert_eq!(read.signature(&read_env).unwrap(), listed);
        }
    }
}
