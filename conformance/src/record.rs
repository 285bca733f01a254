//! The record format (`docs/conformance.md`): one recorded exchange per file,
//! `<corpus>/wire/<transport>/<name>.json`, in the form of the reference
//! fixtures (`../shared/hale-witness/wire/`), and a corpus of them with the
//! program whose declarations they were recorded against.
//!
//! Reading a record checks its envelope and that its reply encodes the
//! outcome it names (§ Outcomes), so a record that contradicts itself is
//! refused before anything is replayed; every error names the JSON path
//! (`$.peer.uid`) of what is wrong.

use std::path::{Path, PathBuf};

use limen_core::hale::runtime::PeerCredentials;
use serde_json::Value;

pub use crate::jsonpath::RecordError;
use crate::jsonpath::{error, object, string};
use crate::mask;
use crate::scenario::Scenario;
pub use crate::transport::Transport;
use crate::transport::{self, Exchange, Form};

/// The record format's version this runner reads.
pub const WIRE: u64 = 1;

/// The outcomes of a Hale record: § Outcomes' five, a transport failure's
/// reply being [`transport::eof`] (the connection ended with nothing of a
/// reply written).
pub const HALE_OUTCOMES: [&str; 5] = [
    "result",
    "handler_error",
    "refusal",
    "server_error",
    transport::TRANSPORT_FAILURE,
];

/// The outcomes of a Tool protocol record: a reply's four, and `BadReply`,
/// which the runtime decides of a reply that does not decode.
pub const TOOL_OUTCOMES: [&str; 5] = ["Ok", "Failed", "NotRun", "Unknown", "BadReply"];

/// One recorded exchange.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// `<transport>/<name>`, the file's place in its corpus.
    pub name: String,
    /// `transport`.
    pub transport: Transport,
    /// `exposure`: the identity `<Surface>@<digest>/<name>` (for a Tool
    /// protocol record, `tool`: the declaration's identity).
    pub exposure: String,
    /// `outcome`: one of [`HALE_OUTCOMES`] (of [`TOOL_OUTCOMES`] for a Tool
    /// protocol record).
    pub outcome: String,
    /// `kind`: a refusal's kind.
    pub kind: Option<String>,
    /// `peer`: a Unix record's kernel credentials.
    pub peer: Option<PeerCredentials>,
    /// `request`, in the transport's form.
    pub request: Value,
    /// `reply`, in the transport's form (a hub record's `frames` or
    /// `datagrams`, [`crate::hub`]).
    pub reply: Value,
    /// `scenario`: the extension that states what the exchange assumes.
    pub scenario: Option<Scenario>,
    /// The record as read, whole.
    pub value: Value,
}

/// The exposure's name in an identity: what follows the last `/`.
pub fn exposure_name(identity: &str) -> &str {
    identity.rsplit_once('/').map_or(identity, |(_, n)| n)
}

/// Checks a request in the form of `transport`: an object, and what its
/// transport asks of one.
pub(crate) fn check_request(
    transport: &Transport,
    v: &Value,
    path: &str,
) -> Result<(), RecordError> {
    object(v, path)?;
    match transport.form() {
        Some(form) => form.check_request(v, path),
        None => Ok(()),
    }
}

impl Record {
    /// Reads the record `name` (`<transport>/<file stem>`) from its text.
    pub fn parse(name: &str, text: &str) -> Result<Record, RecordError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| error("$", format!("not JSON: {e}")))?;
        Record::from_value(name, value)
    }

    /// Reads the record `name` from its value.
    pub fn from_value(name: &str, value: Value) -> Result<Record, RecordError> {
        let o = object(&value, "$")?;
        let version = o
            .get("wire")
            .and_then(Value::as_u64)
            .ok_or_else(|| error("$.wire", "expected the format's version, 1"))?;
        if version != WIRE {
            return Err(error(
                "$.wire",
                format!("this runner reads wire {WIRE}, not {version}"),
            ));
        }
        let transport = Transport::parse(string(o.get("transport"), "$.transport")?);
        if let Some((folder, _)) = name.split_once('/') {
            if folder != transport.as_str() {
                return Err(error(
                    "$.transport",
                    format!(
                        "the record is in the folder `{folder}` but says `{}`",
                        transport.as_str()
                    ),
                ));
            }
        }
        let tool = transport.as_str() == "tool";
        let (exposure, outcome, kind) = if tool {
            Record::tool_envelope(o)?
        } else {
            Record::hale_envelope(o)?
        };
        if crate::hub_record::is_hub(transport.as_str()) {
            // A sequence of frames, not a request and a reply.
            let frames =
                crate::hub_record::check(transport.as_str(), o, &outcome, kind.as_deref())?;
            // The note, and nothing else: the sequence is the scenario.
            let scenario = match o.get("scenario") {
                None => None,
                Some(s) => {
                    let s = Scenario::parse(s, "$.scenario")?;
                    if s.steps.is_some() || !s.roles.is_empty() {
                        return Err(error(
                            "$.scenario",
                            "a hub record's scenario is its sequence: it states a note only",
                        ));
                    }
                    Some(s)
                }
            };
            return Ok(Record {
                name: name.to_owned(),
                transport,
                exposure,
                outcome,
                kind,
                peer: None,
                request: o.get("request").cloned().unwrap_or_default(),
                reply: frames,
                scenario,
                value,
            });
        }
        let peer = match (o.get("peer"), transport.form()) {
            (Some(p), _) => Some(crate::jsonpath::peer(p, "$.peer")?),
            (None, Some(form)) if form.carries_peer() => {
                return Err(error(
                    "$.peer",
                    format!("a {} record states its peer", form.title()),
                ))
            }
            (None, _) => None,
        };
        let request = o
            .get("request")
            .cloned()
            .ok_or_else(|| error("$.request", "missing"))?;
        check_request(&transport, &request, "$.request")?;
        let reply = o
            .get("reply")
            .cloned()
            .ok_or_else(|| error("$.reply", "missing"))?;
        object(&reply, "$.reply")?;
        if outcome == transport::TRANSPORT_FAILURE && !transport::is_eof(&reply) {
            return Err(error(
                "$.reply",
                "a transport failure's reply is {\"eof\": true}: the connection ended with nothing written",
            ));
        }
        if let Some((said, said_kind)) = transport::outcome_of(&transport, &reply) {
            if said != outcome || said_kind != kind {
                let show = |o: &str, k: &Option<String>| match k {
                    Some(k) => format!("{o} ({k})"),
                    None => o.to_owned(),
                };
                return Err(error(
                    "$.reply",
                    format!(
                        "the reply encodes {}, the record says {}",
                        show(&said, &said_kind),
                        show(&outcome, &kind)
                    ),
                ));
            }
        }
        let scenario = match o.get("scenario") {
            None => None,
            Some(s) => Some(Scenario::parse(s, "$.scenario")?),
        };
        Ok(Record {
            name: name.to_owned(),
            transport,
            exposure,
            outcome,
            kind,
            peer,
            request,
            reply,
            scenario,
            value,
        })
    }

    /// A Hale record's identity, outcome and kind.
    fn hale_envelope(
        o: &serde_json::Map<String, Value>,
    ) -> Result<(String, String, Option<String>), RecordError> {
        let exposure = string(o.get("exposure"), "$.exposure")?.to_owned();
        let well_formed = exposure
            .split_once('@')
            .and_then(|(s, rest)| rest.rsplit_once('/').map(|(d, n)| (s, d, n)))
            .is_some_and(|(s, d, n)| !s.is_empty() && !d.is_empty() && !n.is_empty());
        if !well_formed {
            return Err(error(
                "$.exposure",
                "an exposure identity is <Surface>@<digest>/<name>",
            ));
        }
        let outcome = string(o.get("outcome"), "$.outcome")?.to_owned();
        if !HALE_OUTCOMES.contains(&outcome.as_str()) {
            return Err(error(
                "$.outcome",
                format!("`{outcome}` is none of {}", HALE_OUTCOMES.join(", ")),
            ));
        }
        let kind = match o.get("kind") {
            None => None,
            Some(k) => Some(string(Some(k), "$.kind")?.to_owned()),
        };
        match (&*outcome, &kind) {
            ("refusal", None) => return Err(error("$.kind", "a refusal names its kind")),
            ("refusal", Some(k)) if limen_core::hale::runtime::RefusalKind::parse(k).is_none() => {
                return Err(error("$.kind", format!("`{k}` is no refusal kind")))
            }
            (o, Some(_)) if o != "refusal" => {
                return Err(error("$.kind", "only a refusal has a kind"))
            }
            _ => {}
        }
        Ok((exposure, outcome, kind))
    }

    /// A Tool protocol record's identity (the declaration's `tool`) and
    /// outcome (one of the reply's four, or the runtime's `BadReply`).
    fn tool_envelope(
        o: &serde_json::Map<String, Value>,
    ) -> Result<(String, String, Option<String>), RecordError> {
        let tool = string(o.get("tool"), "$.tool")?.to_owned();
        string(o.get("fingerprint"), "$.fingerprint")?;
        let outcome = string(o.get("outcome"), "$.outcome")?.to_owned();
        if !TOOL_OUTCOMES.contains(&outcome.as_str()) {
            return Err(error(
                "$.outcome",
                format!("`{outcome}` is none of {}", TOOL_OUTCOMES.join(", ")),
            ));
        }
        if o.contains_key("kind") {
            return Err(error("$.kind", "a Tool protocol outcome has no kind"));
        }
        Ok((tool, outcome, None))
    }

    /// The description document a describe record's reply carries: a Unix
    /// reply's `value`, an HTTP reply's `body`.
    pub fn document(&self) -> Option<&Value> {
        if crate::hub_record::is_hub(self.transport.as_str()) {
            return crate::hub_record::document(&self.reply);
        }
        let doc = self.transport.form()?.document(&self.reply)?;
        doc.get("description").is_some().then_some(doc)
    }

    /// The record's file stem: `result`, `refusal_full`.
    pub fn stem(&self) -> &str {
        self.name.rsplit_once('/').map_or(&self.name, |(_, s)| s)
    }

    /// The record as its transport reads it.
    pub fn exchange(&self) -> Exchange<'_> {
        Exchange {
            name: &self.name,
            transport: self.transport.as_str(),
            exposure: &self.exposure,
            outcome: &self.outcome,
            kind: self.kind.as_deref(),
            request: &self.request,
            reply: &self.reply,
        }
    }

    /// The record of the transport `form` this record implies, as an
    /// exchange of the exposure `identity`, named as this one in `form`'s
    /// folder ([`Form::implied_by`]: an MCP `tools/call` of an HTTP call).
    pub fn implied(&self, form: &dyn Form, identity: &str) -> Option<Record> {
        let value = form.implied_by(self.exchange(), identity)?;
        Record::from_value(&format!("{}/{}", form.name(), self.stem()), value).ok()
    }

    /// The whole record masked for comparison with the reference record of
    /// the same name: without its `scenario` (the reference states none),
    /// its peer, request and reply masked.
    pub fn masked(&self) -> Value {
        let mut v = self.value.clone();
        let Some(o) = v.as_object_mut() else {
            return v;
        };
        o.remove("scenario");
        if let Some(p) = self.peer {
            o.insert("peer".into(), mask::masked_peer(p));
        }
        o.insert(
            "request".into(),
            transport::mask_request(&self.transport, &self.request),
        );
        o.insert(
            "reply".into(),
            transport::mask_reply(&self.transport, &self.reply, self.peer),
        );
        v
    }
}

/// Compares a record with the reference record of the same name as values,
/// masked; the reference names what it holds the reply to (over HTTP, the
/// headers). `None` when they are equal.
pub fn compare_records(reference: &Record, ours: &Record) -> Option<String> {
    let want = reference.masked();
    let mut have = ours.masked();
    if let (Some(form), Some(w), Some(h)) =
        (ours.transport.form(), want.get("reply"), have.get("reply"))
    {
        let held = form.held_to(h.clone(), w);
        have["reply"] = held;
    }
    mask::first_difference(&want, &have)
}

/// A record file that could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unreadable {
    /// `<transport>/<name>`.
    pub name: String,
    /// Why.
    pub error: String,
}

/// A corpus: the program its records were recorded against, and the
/// records, in the order of their names.
#[derive(Clone, Debug)]
pub struct Corpus {
    /// The corpus's folder.
    pub dir: PathBuf,
    /// The program's declarations (`program.hl`, or the file `corpus.json`
    /// names).
    pub program: PathBuf,
    /// Every record that could be read, sorted by name.
    pub records: Vec<Record>,
    /// Every record file that could not be read, sorted by name.
    pub unreadable: Vec<Unreadable>,
    /// The description documents beside the records,
    /// `DIR/<exposure>.<caller>.description.json`, by `<exposure>.<caller>`
    /// (the reference fixtures have them; a corpus need not).
    pub documents: Vec<(String, Value)>,
}

/// Why a corpus could not be opened at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CorpusError(pub String);

impl std::fmt::Display for CorpusError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CorpusError {}

impl Corpus {
    /// Opens the corpus in `dir`: `dir/corpus.json` when present
    /// (`{"corpus": 1, "program": "<path relative to dir>"}`), else
    /// `dir/program.hl`; the records are `dir/wire/<transport>/*.json`.
    pub fn open(dir: &Path) -> Result<Corpus, CorpusError> {
        if !dir.is_dir() {
            return Err(CorpusError(format!(
                "{} is not a corpus folder",
                dir.display()
            )));
        }
        let manifest = dir.join("corpus.json");
        let program = if manifest.is_file() {
            let text = std::fs::read_to_string(&manifest)
                .map_err(|e| CorpusError(format!("{}: {e}", manifest.display())))?;
            let v: Value = serde_json::from_str(&text)
                .map_err(|e| CorpusError(format!("{}: not JSON: {e}", manifest.display())))?;
            if v.get("corpus").and_then(Value::as_u64) != Some(1) {
                return Err(CorpusError(format!(
                    "{}: $.corpus: expected the manifest's version, 1",
                    manifest.display()
                )));
            }
            let program = v.get("program").and_then(Value::as_str).ok_or_else(|| {
                CorpusError(format!(
                    "{}: $.program: expected the program's path",
                    manifest.display()
                ))
            })?;
            dir.join(program)
        } else {
            dir.join("program.hl")
        };
        if !program.is_file() {
            return Err(CorpusError(format!(
                "{}: the corpus's program is not there",
                program.display()
            )));
        }
        let wire_dir = dir.join("wire");
        let mut files = Vec::new();
        let transports = std::fs::read_dir(&wire_dir)
            .map_err(|e| CorpusError(format!("{}: {e}", wire_dir.display())))?;
        for t in transports.flatten() {
            if !t.path().is_dir() {
                continue;
            }
            let folder = t.file_name().to_string_lossy().into_owned();
            for f in std::fs::read_dir(t.path()).into_iter().flatten().flatten() {
                let path = f.path();
                if path.extension().and_then(|e| e.to_str()) != Some("json") {
                    continue;
                }
                let stem = path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                files.push((format!("{folder}/{stem}"), path));
            }
        }
        files.sort();
        let mut records = Vec::new();
        let mut unreadable = Vec::new();
        for (name, path) in files {
            let read = std::fs::read_to_string(&path)
                .map_err(|e| e.to_string())
                .and_then(|text| Record::parse(&name, &text).map_err(|e| e.to_string()));
            match read {
                Ok(r) => records.push(r),
                Err(error) => unreadable.push(Unreadable { name, error }),
            }
        }
        let mut documents = Vec::new();
        for f in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let file = f.file_name().to_string_lossy().into_owned();
            let Some(name) = file.strip_suffix(".description.json") else {
                continue;
            };
            let text = std::fs::read_to_string(f.path())
                .map_err(|e| CorpusError(format!("{}: {e}", f.path().display())))?;
            let doc = serde_json::from_str(&text)
                .map_err(|e| CorpusError(format!("{}: not JSON: {e}", f.path().display())))?;
            documents.push((name.to_owned(), doc));
        }
        documents.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(Corpus {
            dir: dir.to_owned(),
            program,
            records,
            unreadable,
            documents,
        })
    }

    /// The program's source text.
    pub fn program_source(&self) -> Result<String, CorpusError> {
        std::fs::read_to_string(&self.program)
            .map_err(|e| CorpusError(format!("{}: {e}", self.program.display())))
    }

    /// The program's model: its file and every file it imports (resolved
    /// against the importing file's folder, as `hale check` reads them), so
    /// a corpus of a program of several files replays and checks as one of
    /// one file does.
    pub fn program_model(&self) -> Result<limen_core::hale::model::Program, CorpusError> {
        let src = self.program_source()?;
        let file = self.program.to_string_lossy();
        limen_core::hale::imports::load(&file, &src, &mut |path| {
            std::fs::read_to_string(path).map_err(|e| e.to_string())
        })
        .map(|loaded| loaded.program)
        .map_err(|d| CorpusError(d.to_string()))
    }

    /// The description document `<exposure>.<caller>` (`public.alice`).
    pub fn document(&self, name: &str) -> Option<&Value> {
        self.documents
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, d)| d)
    }

    /// The record named `name` (`unix/result`).
    pub fn record(&self, name: &str) -> Option<&Record> {
        self.records.iter().find(|r| r.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RESULT: &str = r#"{"wire": 1, "transport": "unix",
        "exposure": "Admin@fnv1a64:40381db6685c9f75/admin", "outcome": "result",
        "peer": {"uid": 1000, "gid": 1000, "pid": 4242},
        "request": {"call": "Orders::cancel", "payload": {"order": 41}, "id": "c-1"},
        "reply": {"request_id": 1, "id": "c-1", "ok": true, "value": {}, "caller": {}}}"#;

    #[test]
    fn a_record_reads_its_envelope() {
        let r = Record::parse("unix/result", RESULT).unwrap();
        assert_eq!(r.transport.as_str(), "unix");
        assert_eq!(exposure_name(&r.exposure), "admin");
        assert_eq!(r.peer.unwrap().uid, 1000);
        assert_eq!(r.stem(), "result");
    }

    #[test]
    fn a_tool_protocol_record_has_its_own_envelope() {
        let text = r#"{"wire": 1, "transport": "tool", "tool": "desk.quote",
            "fingerprint": "sha256:00", "outcome": "NotRun",
            "request": {"jsonrpc": "2.0", "id": 1, "method": "call"},
            "reply": {"jsonrpc": "2.0", "id": 1, "result": {"outcome": {"NotRun": "x"}}}}"#;
        let r = Record::parse("tool/not_run", text).unwrap();
        assert_eq!(r.exposure, "desk.quote");
        let bad = text.replace("NotRun\",", "Refused\",");
        assert_eq!(
            Record::parse("tool/not_run", &bad).unwrap_err().path,
            "$.outcome"
        );
    }

    #[test]
    fn a_transport_failure_is_a_connection_ended_with_nothing_written() {
        let failure = RESULT
            .replace(
                "\"outcome\": \"result\"",
                "\"outcome\": \"transport_failure\"",
            )
            .replace(
                r#""reply": {"request_id": 1, "id": "c-1", "ok": true, "value": {}, "caller": {}}"#,
                r#""reply": {"eof": true}"#,
            );
        let r = Record::parse("unix/transport_failure", &failure).unwrap();
        assert_eq!(r.outcome, "transport_failure");
        // A reply is no transport failure, and an ended connection no result.
        let replied = RESULT.replace(
            "\"outcome\": \"result\"",
            "\"outcome\": \"transport_failure\"",
        );
        assert_eq!(
            Record::parse("unix/x", &replied).unwrap_err().path,
            "$.reply"
        );
        let ended = failure.replace(
            "\"outcome\": \"transport_failure\"",
            "\"outcome\": \"result\"",
        );
        let e = Record::parse("unix/x", &ended).unwrap_err();
        assert_eq!(
            e.to_string(),
            "$.reply: the reply encodes transport_failure, the record says result"
        );
    }

    #[test]
    fn errors_name_the_path() {
        let cases = [
            (RESULT.replace("\"wire\": 1", "\"wire\": 2"), "$.wire"),
            (
                RESULT.replace("\"uid\": 1000", "\"uid\": \"x\""),
                "$.peer.uid",
            ),
            (RESULT.replace("Admin@", "Admin"), "$.exposure"),
            (
                RESULT.replace("\"outcome\": \"result\"", "\"outcome\": \"refusal\""),
                "$.kind",
            ),
            (
                RESULT.replace("\"outcome\": \"result\"", "\"outcome\": \"server_error\""),
                "$.reply",
            ),
            (
                RESULT.replace("\"transport\": \"unix\"", "\"transport\": \"http\""),
                "$.transport",
            ),
        ];
        for (text, path) in cases {
            let e = Record::parse("unix/result", &text).unwrap_err();
            assert_eq!(e.path, path, "{e}");
        }
    }
}
