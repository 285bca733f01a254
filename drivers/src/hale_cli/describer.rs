//! The live describer of a served exposure, as the serving drivers (`hale
//! demo`, a program's own server) build it once its listener is bound: the
//! model's [`ExposureDescriber`], told the address the kernel gave, so a
//! bind of port 0 is described by its real port.

use limen_core::hale::docs::{DocError, ExposureDescriber};
use limen_core::hale::model::{Exposure, Program};
use limen_core::hale::runtime::Describer;

use crate::serve::BoundAddress;

/// The describer of `exposure` of `program`, bound at `bound`.
pub fn model_describer(
    program: &Program,
    exposure: &Exposure,
    bound: &BoundAddress,
) -> Result<Box<dyn Describer + Send>, DocError> {
    let name = exposure.name.as_deref().unwrap_or_default();
    let address = bound.to_string();
    Ok(Box::new(ExposureDescriber::new(
        program,
        name,
        Some(&address),
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use limen_core::hale::model::parse_program;
    use limen_core::hale::runtime::Principal;

    #[test]
    fn the_bound_address_is_described() {
        let p = parse_program(
            "t.hl",
            "type A { n: Int; }\napi S { rpc B::f; }\nlocus B { fn f(a: A) -> A { return a; } }\n\
             main locus M { params { b: B = B { }; } run() { let s = api::serve(S, http::Rpc { bind: \"127.0.0.1:0\" }, as: \"web\", bound: 1, on_full: refuse); } }\n",
        )
        .unwrap();
        let bound = BoundAddress::Tcp("127.0.0.1:40123".parse().unwrap());
        let d = model_describer(&p, &p.exposures[0], &bound).unwrap();
        let doc: serde_json::Value =
            serde_json::from_slice(&d.describe(&Principal::bearer("x"), &[], &[0])).unwrap();
        assert_eq!(
            doc["listener"],
            serde_json::json!({"transport": "http", "address": "127.0.0.1:40123"})
        );
        assert_eq!(doc["members"][0]["name"], "B::f");
    }
}
