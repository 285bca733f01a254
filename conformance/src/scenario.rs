//! A record's scenario: what its exchange assumes of the server — the
//! handlers' state, the grants, and for the outcomes that need the server's
//! cooperation, the gate, the drain or the stop that provoked them.
//!
//! The project's records state it in a `scenario` member (an extension of
//! the reference format, `docs/conformance.md`):
//!
//! ```json
//! "scenario": {
//!   "note": "why, for the reviewer",
//!   "roles": {"admin_roles": {"operator": "uid:1001"}},
//!   "steps": [{"gate": "self.ledger"}, {"copies": 16}, {"exchange": true}]
//! }
//! ```
//!
//! A record without steps (every reference record) gets them from the
//! project's record of the same name when that record carries the same
//! request ([`Overlay`](crate::steps::Overlay)), and otherwise derives them
//! from its outcome and kind ([`derive()`](crate::steps::derive)): that is
//! [`crate::steps`], above the record; this module is the form a record
//! states, below it.

use std::collections::BTreeMap;

use limen_core::hale::runtime::PeerCredentials;
use serde_json::Value;

use crate::jsonpath::{self, error, object, string, RecordError};

/// What a record assumes. See the module documentation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scenario {
    /// Free text for the reviewer.
    pub note: Option<String>,
    /// Grants that differ from the program's literal, by role source param
    /// (`admin_roles`): role → the principal name that holds it instead.
    pub roles: BTreeMap<String, BTreeMap<String, String>>,
    /// The steps, in order; `None` when the record states none.
    pub steps: Option<Vec<Step>>,
}

/// One step of a scenario.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// A prior exchange, answered before the next step (`{"call": {…}}`).
    Call(Call),
    /// Close the gate of a receiver instance: calls handed to it wait.
    Gate(String),
    /// Open it: what waits runs, in order.
    Open(String),
    /// The instance drains: its members are refused `unavailable`.
    Drain(String),
    /// It is back; the exposure learns so when it next asks.
    Resume(String),
    /// `n` copies of the recorded request, each on a connection of its
    /// own, sent before the exchange and not awaited.
    Copies(usize),
    /// The recorded exchange itself.
    Exchange,
    /// The recorded exchange with the last `n` bytes of its request held
    /// back (`{"exchange": {"withhold": N}}`): a request cut off, a head
    /// that never ends.
    Withhold(usize),
    /// `n` more of the bytes the exchange held back, sent on its
    /// connection (`{"send": N}`).
    Send(usize),
    /// A silence of this many milliseconds (`{"wait_ms": N}`): nothing is
    /// sent, and the server's timers run.
    Wait(u64),
    /// `stop()` on every exposure.
    Stop,
}

/// The longest silence a step may state: ten minutes (a live check waits
/// it for real).
pub const MAX_WAIT_MS: u64 = 600_000;

/// A prior exchange of a scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// The exposure's identity (its name is what a runner looks it up by).
    pub exposure: String,
    /// The request, in the form of that exposure's transport.
    pub request: Value,
    /// For a Unix exposure, the peer; the record's own when absent.
    pub peer: Option<PeerCredentials>,
    /// The outcome it must have (`result`, `refusal`…), when stated.
    pub outcome: Option<String>,
    /// The refusal kind it must have, when stated.
    pub kind: Option<String>,
}

impl Step {
    /// The step as its record writes it.
    pub fn to_json(&self) -> Value {
        match self {
            Step::Call(c) => {
                let mut o = serde_json::Map::new();
                o.insert("exposure".into(), c.exposure.clone().into());
                o.insert("request".into(), c.request.clone());
                if let Some(p) = c.peer {
                    o.insert(
                        "peer".into(),
                        serde_json::json!({"uid": p.uid, "gid": p.gid, "pid": p.pid}),
                    );
                }
                if let Some(out) = &c.outcome {
                    o.insert("outcome".into(), out.clone().into());
                }
                if let Some(k) = &c.kind {
                    o.insert("kind".into(), k.clone().into());
                }
                serde_json::json!({ "call": o })
            }
            Step::Gate(r) => serde_json::json!({ "gate": r }),
            Step::Open(r) => serde_json::json!({ "open": r }),
            Step::Drain(r) => serde_json::json!({ "drain": r }),
            Step::Resume(r) => serde_json::json!({ "resume": r }),
            Step::Copies(n) => serde_json::json!({ "copies": n }),
            Step::Exchange => serde_json::json!({ "exchange": true }),
            Step::Withhold(n) => serde_json::json!({ "exchange": {"withhold": n} }),
            Step::Send(n) => serde_json::json!({ "send": n }),
            Step::Wait(ms) => serde_json::json!({ "wait_ms": ms }),
            Step::Stop => serde_json::json!({ "stop": true }),
        }
    }

    /// Whether the step is the recorded exchange (whole, or with bytes
    /// held back).
    pub fn is_exchange(&self) -> bool {
        matches!(self, Step::Exchange | Step::Withhold(_))
    }

    /// Whether the step needs the server's cooperation (a runner against a
    /// live server can take it only through a control channel).
    pub fn needs_cooperation(&self) -> bool {
        matches!(
            self,
            Step::Gate(_) | Step::Open(_) | Step::Drain(_) | Step::Resume(_) | Step::Stop
        )
    }
}

impl Scenario {
    /// Reads a `scenario` member at `path`.
    pub fn parse(v: &Value, path: &str) -> Result<Scenario, RecordError> {
        let o = object(v, path)?;
        let mut scenario = Scenario::default();
        for (key, value) in o {
            let at = format!("{path}.{key}");
            match key.as_str() {
                "note" => scenario.note = Some(string(Some(value), &at)?.to_owned()),
                "roles" => {
                    for (param, grants) in object(value, &at)? {
                        let at = format!("{at}.{param}");
                        let mut table = BTreeMap::new();
                        for (role, holder) in object(grants, &at)? {
                            let holder = string(Some(holder), &format!("{at}.{role}"))?;
                            table.insert(role.clone(), holder.to_owned());
                        }
                        scenario.roles.insert(param.clone(), table);
                    }
                }
                "steps" => {
                    let list = value
                        .as_array()
                        .ok_or_else(|| error(&at, "expected a list of steps"))?;
                    let mut steps = Vec::new();
                    for (i, s) in list.iter().enumerate() {
                        let at = format!("{at}[{i}]");
                        let step = parse_step(s, &at)?;
                        if matches!(step, Step::Send(_))
                            && !steps.iter().any(|s| matches!(s, Step::Withhold(_)))
                        {
                            return Err(error(
                                &at,
                                "a send follows an exchange that withholds bytes",
                            ));
                        }
                        steps.push(step);
                    }
                    if steps.iter().filter(|s| s.is_exchange()).count() > 1 {
                        return Err(error(&at, "a scenario has one exchange"));
                    }
                    scenario.steps = Some(steps);
                }
                other => {
                    return Err(error(
                        &at,
                        format!("`{other}` is none of note, roles, steps"),
                    ))
                }
            }
        }
        Ok(scenario)
    }
}

fn parse_step(v: &Value, path: &str) -> Result<Step, RecordError> {
    let o = object(v, path)?;
    let mut members = o.iter();
    let (Some((verb, arg)), None) = (members.next(), members.next()) else {
        return Err(error(path, "a step is an object of one member, its verb"));
    };
    let at = format!("{path}.{verb}");
    let instance = |arg: &Value| string(Some(arg), &at).map(str::to_owned);
    let yes = |arg: &Value| match arg {
        Value::Bool(true) => Ok(()),
        _ => Err(error(&at, "expected true")),
    };
    let count = |arg: &Value, at: &str, max: u64, what: &str| {
        arg.as_u64()
            .filter(|n| (1..=max).contains(n))
            .ok_or_else(|| error(at, format!("expected {what} from 1 to {max}")))
    };
    Ok(match verb.as_str() {
        "gate" => Step::Gate(instance(arg)?),
        "open" => Step::Open(instance(arg)?),
        "drain" => Step::Drain(instance(arg)?),
        "resume" => Step::Resume(instance(arg)?),
        "copies" => Step::Copies(
            arg.as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .filter(|n| *n <= 100_000)
                .ok_or_else(|| error(&at, "expected a count of at most 100000"))?,
        ),
        "exchange" if arg.is_object() => {
            let o = object(arg, &at)?;
            match (o.get("withhold"), o.len()) {
                (Some(n), 1) => Step::Withhold(
                    count(n, &format!("{at}.withhold"), 1 << 20, "a count of bytes")? as usize,
                ),
                _ => {
                    return Err(error(
                        &at,
                        "expected true, or {\"withhold\": N}: the bytes of the request's end held back",
                    ))
                }
            }
        }
        "exchange" => {
            yes(arg)?;
            Step::Exchange
        }
        "send" => Step::Send(count(arg, &at, 1 << 20, "a count of bytes")? as usize),
        "wait_ms" => Step::Wait(count(arg, &at, MAX_WAIT_MS, "a count of milliseconds")?),
        "stop" => {
            yes(arg)?;
            Step::Stop
        }
        "call" => {
            let c = object(arg, &at)?;
            let exposure = string(c.get("exposure"), &format!("{at}.exposure"))?.to_owned();
            let request = c
                .get("request")
                .cloned()
                .ok_or_else(|| error(&format!("{at}.request"), "missing"))?;
            let peer = match c.get("peer") {
                Some(p) => Some(jsonpath::peer(p, &format!("{at}.peer"))?),
                None => None,
            };
            let text = |k: &str| -> Result<Option<String>, RecordError> {
                match c.get(k) {
                    None => Ok(None),
                    Some(v) => Ok(Some(string(Some(v), &format!("{at}.{k}"))?.to_owned())),
                }
            };
            Step::Call(Call {
                exposure,
                request,
                peer,
                outcome: text("outcome")?,
                kind: text("kind")?,
            })
        }
        other => {
            return Err(error(
                path,
                format!(
                    "`{other}` is none of call, gate, open, drain, resume, copies, exchange, send, wait_ms, stop"
                ),
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_read_back_as_written() {
        let v = serde_json::json!({
            "note": "n",
            "roles": {"admin_roles": {"operator": "uid:7"}},
            "steps": [{"gate": "self.ledger"}, {"copies": 16}, {"exchange": true}, {"stop": true},
                      {"call": {"exposure": "P@d/p", "request": {}, "outcome": "result"}},
                      {"wait_ms": 5000}]
        });
        let s = Scenario::parse(&v, "$.scenario").unwrap();
        assert_eq!(s.roles["admin_roles"]["operator"], "uid:7");
        let steps = s.steps.unwrap();
        let back: Vec<Value> = steps.iter().map(Step::to_json).collect();
        assert_eq!(Value::Array(back), v["steps"]);
        let trickle = serde_json::json!({"steps": [{"exchange": {"withhold": 30}}, {"wait_ms": 3000},
                                                    {"send": 10}, {"wait_ms": 1}]});
        let s = Scenario::parse(&trickle, "$.scenario").unwrap();
        assert_eq!(
            s.steps.as_deref().unwrap(),
            [
                Step::Withhold(30),
                Step::Wait(3000),
                Step::Send(10),
                Step::Wait(1)
            ]
        );
        let back: Vec<Value> = s.steps.unwrap().iter().map(Step::to_json).collect();
        assert_eq!(Value::Array(back), trickle["steps"]);
    }

    #[test]
    fn a_bad_step_is_named_by_its_path() {
        for (v, path) in [
            (
                serde_json::json!({"steps": [{"gate": 1}]}),
                "$.scenario.steps[0].gate",
            ),
            (
                serde_json::json!({"steps": [{"gate": "a", "open": "b"}]}),
                "$.scenario.steps[0]",
            ),
            (
                serde_json::json!({"steps": [{"leap": true}]}),
                "$.scenario.steps[0]",
            ),
            (
                serde_json::json!({"steps": [{"exchange": true}, {"exchange": true}]}),
                "$.scenario.steps",
            ),
            (serde_json::json!({"colour": 1}), "$.scenario.colour"),
            (
                serde_json::json!({"steps": [{"wait_ms": 0}]}),
                "$.scenario.steps[0].wait_ms",
            ),
            (
                serde_json::json!({"steps": [{"wait_ms": 600_001}]}),
                "$.scenario.steps[0].wait_ms",
            ),
            (
                serde_json::json!({"steps": [{"exchange": {"hold": 2}}]}),
                "$.scenario.steps[0].exchange",
            ),
            (
                serde_json::json!({"steps": [{"exchange": true}, {"send": 2}]}),
                "$.scenario.steps[1]",
            ),
            (
                serde_json::json!({"steps": [{"exchange": {"withhold": 2}}, {"exchange": true}]}),
                "$.scenario.steps",
            ),
        ] {
            assert_eq!(Scenario::parse(&v, "$.scenario").unwrap_err().path, path);
        }
    }
}
