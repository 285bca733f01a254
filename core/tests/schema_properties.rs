//! Properties of schemas and fingerprints over generated type models:
//! schema → type → schema is the identity, a listed signature gives the
//! declaration's own fingerprint and reads back as the declaration, and no
//! doc comment moves a fingerprint.

mod support;

use limen_core::flow::{
    canonical_signature, fingerprint_of_signature, schema_of, type_from_schema, Constructor,
    Declaration, Field, Payload, TypeBody, TypeDecl, TypeEnv,
};
use proptest::prelude::*;

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
}
