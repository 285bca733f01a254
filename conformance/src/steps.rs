//! The steps a runner takes for a record's exchange (the replay and the
//! live check alike): the record's own `scenario.steps`, else those of the
//! project's record of the same name and request ([`Overlay`]), else the
//! ones its outcome and kind imply ([`derive()`]).
//!
//! Above [`crate::record`] (it reads records) and [`crate::scenario`] (the
//! steps a record states), which sit below it and do not import it.

use std::collections::BTreeMap;

use limen_core::hale::runtime::ExposureSpec;
use serde_json::Value;

use crate::record::Record;
use crate::scenario::Step;
use crate::transport::{self, Transport};

/// The steps a record's outcome and kind imply, on the exposure `spec`
/// serves: `full` gates the member's receiver and fills the bound with
/// copies; `shutting_down` gates it, sends one copy (which executes), the
/// exchange (which is queued), then stops; `unavailable` drains the
/// receiver first. Every other record is its exchange alone: a Unix peer
/// the kernel did not name is the record's `peer`, which a runner hands its
/// connection.
pub fn derive(record: &Record, spec: &ExposureSpec) -> Vec<Step> {
    let member = record
        .transport
        .form()
        .and_then(|f| f.member_of(&record.request, spec));
    let receiver = member
        .and_then(|m| spec.member_index(&m))
        .map(|i| spec.receivers[spec.members[i].receiver].clone());
    match (record.kind.as_deref(), receiver) {
        (Some("full"), Some(r)) => vec![Step::Gate(r), Step::Copies(spec.bound), Step::Exchange],
        (Some("shutting_down"), Some(r)) => {
            vec![Step::Gate(r), Step::Copies(1), Step::Exchange, Step::Stop]
        }
        (Some("unavailable"), Some(r)) => vec![Step::Drain(r), Step::Exchange],
        _ => vec![Step::Exchange],
    }
}

/// Where a record's steps came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provenance {
    /// Its own `scenario.steps`.
    Stated,
    /// The project's record of the same name and request.
    Overlay,
    /// Its outcome and kind ([`derive()`]).
    Derived,
}

/// The scenarios of another corpus (the project's), by record name, for
/// the records that state none.
#[derive(Clone, Debug, Default)]
pub struct Overlay {
    by_name: BTreeMap<String, (Transport, Value, Vec<Step>)>,
}

impl Overlay {
    /// No overlay.
    pub fn none() -> Overlay {
        Overlay::default()
    }

    /// The stated steps of every record of `records` that states some.
    pub fn from_records(records: &[Record]) -> Overlay {
        let by_name = records
            .iter()
            .filter_map(|r| {
                let steps = r.scenario.as_ref()?.steps.clone()?;
                Some((
                    r.name.clone(),
                    (r.transport.clone(), r.request.clone(), steps),
                ))
            })
            .collect();
        Overlay { by_name }
    }

    /// The steps for `record`, if the overlay has a record of its name
    /// whose request is the same (as a value, masked as § the comparison
    /// masks a request).
    pub fn steps_for(&self, record: &Record) -> Option<&[Step]> {
        let (transport, request, steps) = self.by_name.get(&record.name)?;
        let same = *transport == record.transport
            && transport::mask_request(transport, request)
                == transport::mask_request(transport, &record.request);
        same.then_some(steps.as_slice())
    }
}

/// The steps a runner takes for `record`, and where they came from: its
/// own, else the overlay's, else derived; with the exchange appended when
/// the steps name none.
pub fn steps(record: &Record, spec: &ExposureSpec, overlay: &Overlay) -> (Vec<Step>, Provenance) {
    let (mut steps, from) = match record.scenario.as_ref().and_then(|s| s.steps.clone()) {
        Some(s) => (s, Provenance::Stated),
        None => match overlay.steps_for(record) {
            Some(s) => (s.to_vec(), Provenance::Overlay),
            None => (derive(record, spec), Provenance::Derived),
        },
    };
    if !steps.iter().any(Step::is_exchange) {
        steps.push(Step::Exchange);
    }
    (steps, from)
}
