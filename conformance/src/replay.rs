//! `limen-conformance replay`: each record's request bytes through the
//! sans-I/O machines of a [`World`], its scenario taken first, and what the
//! machines emit compared with the recorded reply as a value, masked.

use limen_core::hale::model::Program;
use limen_core::hale::runtime::PeerCredentials;
use limen_core::Timestamp;
use serde_json::Value;

use crate::record::{exposure_name, Corpus, Record};
use crate::report::{Report, Verdict};
use crate::scenario::Step;
use crate::steps::{self, Overlay};
use crate::transport::{self, Form};
use crate::world::{DescriberFactory, Feed, World};

/// A millisecond of the virtual clock.
const MILLISECOND: Timestamp = 1_000_000;

/// How a replay runs.
#[derive(Default)]
pub struct Options<'a> {
    /// Scenarios for the records that state none.
    pub overlay: Overlay,
    /// How the machines are fed.
    pub feed: Feed,
    /// The describer the exposures answer a describe with, in place of
    /// the model's.
    pub describer: Option<&'a DescriberFactory>,
}

impl std::fmt::Debug for Options<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("feed", &self.feed)
            .field("describer", &self.describer.is_some())
            .finish_non_exhaustive()
    }
}

/// Replays every record of `corpus`, in the order of their names; a file
/// that could not be read fails in its place.
pub fn run(corpus: &Corpus, options: &Options<'_>) -> Report {
    let mut report = Report::default();
    let source = corpus.program_source().map_err(|e| e.to_string());
    let program = corpus.program_model().map_err(|e| e.to_string());
    let mut names: Vec<(&str, Result<&Record, &str>)> = corpus
        .records
        .iter()
        .map(|r| (r.name.as_str(), Ok(r)))
        .chain(
            corpus
                .unreadable
                .iter()
                .map(|u| (u.name.as_str(), Err(u.error.as_str()))),
        )
        .collect();
    names.sort_by(|a, b| a.0.cmp(b.0));
    for (name, record) in names {
        let verdict = match (&program, record) {
            (Err(e), _) => Verdict::Fail(format!("the corpus's program: {e}")),
            (_, Err(e)) => Verdict::Fail(e.to_owned()),
            (Ok(program), Ok(record)) if crate::hub_record::is_hub(record.transport.as_str()) => {
                let text = source.as_deref().unwrap_or_default();
                match crate::hub::replay(text, program, record, options.feed) {
                    Ok(()) => Verdict::Pass,
                    Err(why) => Verdict::Fail(why),
                }
            }
            (Ok(program), Ok(record)) => match replay(program, record, options) {
                Ok(()) => Verdict::Pass,
                Err(why) => Verdict::Fail(why),
            },
        };
        report.push(name, verdict);
    }
    report
}

/// The peer a connection of `form` is made from: the record's own where
/// the transport carries kernel credentials, nobody's otherwise.
fn peer_for(form: &dyn Form, peer: Option<PeerCredentials>) -> PeerCredentials {
    match peer {
        Some(p) if form.carries_peer() => p,
        _ => PeerCredentials::UNNAMED,
    }
}

fn replay(program: &Program, record: &Record, options: &Options<'_>) -> Result<(), String> {
    let form = record.transport.machine()?;
    let roles = record
        .scenario
        .as_ref()
        .map(|s| s.roles.clone())
        .unwrap_or_default();
    let mut world = World::new(program, &roles, options.describer, options.feed)?;
    let name = exposure_name(&record.exposure);
    let target = world
        .served(name)
        .ok_or_else(|| format!("the program serves no exposure `{name}`"))?;
    let served = world.exposure(target);
    if served.identity != record.exposure {
        return Err(format!(
            "the record is of {}, and the program serves {} as `{name}`",
            record.exposure, served.identity
        ));
    }
    if served.transport != record.transport {
        return Err(format!(
            "the record is over {}, and the program serves `{name}` over {}",
            record.transport.as_str(),
            served.transport.as_str()
        ));
    }
    let spec = served.spec().clone();
    let (steps, _) = steps::steps(record, &spec, &options.overlay);
    let bytes = form.request_bytes(&record.request, None)?;
    let peer = peer_for(form, record.peer);
    let mut exchange = None;
    // What the exchange held back of its request, and how much of it is
    // sent.
    let mut withheld: &[u8] = &[];
    for (i, step) in steps.iter().enumerate() {
        let at = format!("step {} ({})", i + 1, step.to_json());
        match step {
            Step::Gate(r) | Step::Open(r) | Step::Drain(r) | Step::Resume(r)
                if !world.has_instance(r) =>
            {
                return Err(format!("{at}: no receiver instance `{r}`"));
            }
            Step::Gate(r) => world.gate(r),
            Step::Open(r) => world.open(r),
            Step::Drain(r) => world.drain(r),
            Step::Resume(r) => world.resume(r),
            Step::Stop => world.stop(),
            Step::Copies(n) => {
                for _ in 0..*n {
                    let c = world
                        .connect(target, peer)
                        .ok_or_else(|| format!("{at}: the listener is closed"))?;
                    world.send(c, &bytes);
                }
            }
            Step::Exchange => {
                let c = world
                    .connect(target, peer)
                    .ok_or_else(|| format!("{at}: the listener is closed"))?;
                world.send(c, &bytes);
                exchange = Some(c);
            }
            Step::Withhold(n) => {
                let sent = bytes
                    .len()
                    .checked_sub(*n)
                    .ok_or_else(|| format!("{at}: the request is {} bytes", bytes.len()))?;
                let c = world
                    .connect(target, peer)
                    .ok_or_else(|| format!("{at}: the listener is closed"))?;
                world.send(c, &bytes[..sent]);
                withheld = &bytes[sent..];
                exchange = Some(c);
            }
            Step::Send(n) => {
                let c = exchange.ok_or_else(|| format!("{at}: no exchange yet"))?;
                if *n > withheld.len() {
                    return Err(format!("{at}: {} bytes are held back", withheld.len()));
                }
                if world.is_closed(c) {
                    return Err(format!("{at}: the connection ended before this step"));
                }
                let (now, rest) = withheld.split_at(*n);
                world.send(c, now);
                withheld = rest;
            }
            Step::Wait(ms) => world.wait(ms * MILLISECOND),
            Step::Call(call) => {
                let name = exposure_name(&call.exposure);
                let s = world
                    .served(name)
                    .ok_or_else(|| format!("{at}: the program serves no exposure `{name}`"))?;
                let call_form = world.exposure(s).form;
                let bytes = call_form
                    .request_bytes(&call.request, None)
                    .map_err(|e| format!("{at}: {e}"))?;
                let c = world
                    .connect(s, peer_for(call_form, call.peer.or(record.peer)))
                    .ok_or_else(|| format!("{at}: the listener is closed"))?;
                world.send(c, &bytes);
                let reply = call_form
                    .reply(world.output(c), world.is_closed(c))
                    .map_err(|e| format!("{at}: {e}"))?
                    .filter(|r| {
                        !transport::is_eof(r)
                            || call.outcome.as_deref() == Some(transport::TRANSPORT_FAILURE)
                    })
                    .ok_or_else(|| format!("{at}: no reply"))?;
                expect(
                    call_form,
                    call.outcome.as_deref(),
                    call.kind.as_deref(),
                    &reply,
                )
                .map_err(|e| format!("{at}: {e}"))?;
            }
        }
    }
    let c = exchange.ok_or("the scenario sends no exchange")?;
    let got = form
        .reply(world.output(c), world.is_closed(c))?
        .ok_or_else(|| {
            if record.outcome == transport::TRANSPORT_FAILURE {
                "no reply, and the connection is still open: a transport failure ends it".to_owned()
            } else {
                "no reply: the request is still with the exposure".to_owned()
            }
        })?;
    transport::hold_reply(form, &record.reply, record.peer, &got, Some(peer))
}

/// Holds a prior exchange's reply to the outcome its step states.
pub fn expect(
    form: &dyn Form,
    outcome: Option<&str>,
    kind: Option<&str>,
    reply: &Value,
) -> Result<(), String> {
    let Some(want) = outcome else {
        return Ok(());
    };
    let (got, got_kind) = form
        .outcome(reply)
        .ok_or_else(|| format!("the reply encodes no outcome: {reply}"))?;
    if got != want || (kind.is_some() && got_kind.as_deref() != kind) {
        return Err(format!(
            "expected {want}{}, got {got}{}: {reply}",
            kind.map(|k| format!(" ({k})")).unwrap_or_default(),
            got_kind.map(|k| format!(" ({k})")).unwrap_or_default()
        ));
    }
    Ok(())
}
