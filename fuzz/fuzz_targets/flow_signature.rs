//! Listed signatures and fingerprints (`core/src/flow/fingerprint`), both
//! ways, and the small text parsers beside them.
//!
//! The first input byte picks the mode:
//! - even: the rest is a JSON document read as describe's `"signature"`.
//!   Fingerprinting it never panics; a signature read back as a
//!   declaration writes that signature again. The rest is also read as an
//!   identity, a fingerprint and a Hale surface digest, each of which
//!   writes its own text.
//! - odd: the rest builds a Tool declaration over a type model. Its listed
//!   signature gives the declaration's own canonical signature and
//!   fingerprint, and reads back as the declaration.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use limen_core::flow::{
    canonical_signature, fingerprint_of_signature, Declaration, Fingerprint, Identity,
};
use limen_core::hale::digest::Digest;
use limen_fuzz::model::declaration;
use serde_json::Value;

fn search() -> Identity {
    Identity::in_repository("github.com/acme/tools", "1.4.0", "search.flow", "search")
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        if let Ok(text) = std::str::from_utf8(rest) {
            if let Ok(id) = Identity::parse(text) {
                assert_eq!(id.to_string(), text, "{id:?}");
                assert_eq!(Identity::parse(&id.to_string()), Ok(id));
            }
            if let Ok(f) = Fingerprint::parse(text) {
                assert_eq!(f.to_string(), text);
            }
            if let Some(d) = Digest::parse(text) {
                assert_eq!(d.to_string(), text);
            }
        }
        let Ok(listed) = serde_json::from_slice::<Value>(rest) else {
            return;
        };
        let canonical = canonical_signature(&listed);
        let fingerprint = fingerprint_of_signature(&listed);
        assert_eq!(canonical.is_ok(), fingerprint.is_ok());
        if let Ok((read, env)) = Declaration::from_signature(search(), &listed) {
            let again = read
                .signature(&env)
                .expect("a declaration read back has a signature");
            assert_eq!(again, listed, "read as {read:?}");
            assert_eq!(read.fingerprint(&env).ok(), fingerprint.ok());
        }
    } else {
        let Ok((decl, env)) = declaration(&mut Unstructured::new(rest)) else {
            return;
        };
        let listed = decl
            .signature(&env)
            .expect("a well-formed declaration has a signature");
        assert_eq!(
            canonical_signature(&listed).expect("our own signature is read"),
            decl.canonical_signature(&env).unwrap()
        );
        assert_eq!(
            fingerprint_of_signature(&listed).unwrap(),
            decl.fingerprint(&env).unwrap()
        );
        let (read, read_env) =
            Declaration::from_signature(decl.identity.clone(), &listed).expect("read back");
        assert_eq!(read, decl);
        assert_eq!(read.signature(&read_env).unwrap(), listed);
    }
});
