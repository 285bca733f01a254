//! The hubs' records (`wire/ws`, `wire/udp`) and their replay through the
//! core's hub machines (`ws::Hub`, `udp::Hub`) on the virtual clock.
//!
//! A hub exchange is a sequence, not a request and a reply, so a hub
//! record's `request` is what opens it — over WebSocket the upgrade
//! (`{"path", "headers"}`, the credential in `Authorization: Bearer` or the
//! path's `?access_token=`), over datagrams the subscriber's first
//! datagram (the credential rides it) — and `frames` (`datagrams` over
//! udp) the rest, in the order they happened, each an object naming where
//! it came from:
//!
//! | element | what |
//! |---|---|
//! | `{"from": "client", "frame": F}` | a text frame (a datagram: `"datagram": D`) the client sent |
//! | `{"from": "client", "stall": true}` | (ws) the client stops reading: the hub's socket takes nothing until `"stall": false` |
//! | `{"from": "server", "frame": F}` | the next frame (datagram) the hub wrote, compared as a value |
//! | `{"from": "server", "close": CODE}` | the hub's close frame (ws), after which nothing more comes |
//! | `{"from": "program", "place": P}` | an `Orders::place` of `P` accepted on public's `Orders` instance: its fill is published on the hub |
//! | `{"from": "program", "revoke": {"principal", "role"}}` | the hub's role source loses the grant, and the hub is told the revision |
//! | `{"from": "program", "expire": {"token", "in_ms"}}` | the bearer source states the token's expiry, `in_ms` from now |
//! | `{"from": "program", "stop": true}` | the hub's `stop()` |
//! | `{"from": "clock", "wait_ms": N}` | N milliseconds pass; the hub's timers fire at their instants |
//!
//! The record's `exposure` is the hub exposure's identity
//! (`hub@<stream digest>/fills`), or, for `call` frames, the identity of
//! the surface served over the hub (`Public@…/desk`, as `hale demo
//! --hub-desk` serves it; a program that serves no `desk` is read with
//! that site added, as the demo adds it). Its `outcome` is what the last
//! frame the hub wrote that encodes one says: a `refusal` frame its kind;
//! an `unauthorized` frame a refusal `unauthorized`; a `reply` frame the
//! Unix reply's outcome; `subscribed`, `event` (and over udp
//! `description`) a result; `closed`, which ends the connection, none.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use limen_core::hale::docs::ExposureDescriber;
use limen_core::hale::model::{parse_program, Program, TransportKind};
use limen_core::hale::runtime::{
    pump, Answer, BearerSource, Correlation, Delivery, Dispatch, Exposure, ExposureDriver, Handed,
    Input, Principal, Receiver, ReceiverId, RequestId, RoleSource, ServedContext,
};
use limen_core::hale::serving::{exposure_spec, ShapeCodec};
use limen_core::wire::http1::client::{read_response, write_request, Limits};
use limen_core::wire::ws::client::{self, ServerFrame, ServerReader};
use limen_core::wire::ws::{Hub, HubEvent, HubSpec};
use limen_core::Timestamp;
use limen_witness::exposures::with_hub_desk;
use limen_witness::sources::{SharedRoles, SharedTokens};
use limen_witness::{self as witness, FillSink, Instances};
use serde_json::Value;

use crate::world::{Feed, EPOCH, TICK};

/// A millisecond of the virtual clock.
const MILLISECOND: Timestamp = 1_000_000;

/// The connection (ws) or the subscriber's address (udp) of a replay.
const CONN: u64 = 1;

/// The bearer token a record's request presents in its `Authorization`
/// header (any case), if any: the credential its upgrade carries, in the
/// replay and against a live hub alike.
pub(crate) fn request_bearer(request: &Value) -> Option<&str> {
    request["headers"]
        .as_object()
        .and_then(|h| {
            h.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))
                .and_then(|(_, v)| v.as_str())
        })
        .and_then(|v| v.strip_prefix("Bearer "))
}

/// The HTTP/1.1 head of a record's request on the hub's listener
/// (`GET /.description` when the record names none) to `host`, with
/// `bearer` as `Authorization: Bearer` when given, written by
/// [`write_request`]. One builder for the replay and the live check, so
/// both send a record's request alike.
pub(crate) fn describe_head(
    request: &Value,
    host: &str,
    bearer: Option<&str>,
) -> Result<Vec<u8>, String> {
    let authorization = bearer.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("Host", host)];
    for (k, v) in request["headers"].as_object().into_iter().flatten() {
        headers.push((k.as_str(), v.as_str().unwrap_or_default()));
    }
    if let Some(a) = &authorization {
        headers.push(("Authorization", a.as_str()));
    }
    write_request(
        describe_method(request),
        describe_path(request),
        &headers,
        None,
    )
}

/// The method of a record's request on the hub's listener (`GET` when it
/// names none).
pub(crate) fn describe_method(request: &Value) -> &str {
    request["method"].as_str().unwrap_or("GET")
}

fn describe_path(request: &Value) -> &str {
    request["path"].as_str().unwrap_or("/.description")
}

/// A frame masked for comparison: a reply's positive `request_id` (the
/// exposure numbers its requests, which a record does not fix) and a
/// description's `listener.address` (the run's).
pub fn mask(frame: &Value) -> Value {
    let mut f = frame.clone();
    if f["request_id"].as_u64().is_some_and(|n| n > 0) {
        f["request_id"] = Value::String("<request_id>".into());
    }
    for key in ["document", "value"] {
        if let Some(address) = f
            .get_mut(key)
            .and_then(|d| d.get_mut("listener"))
            .and_then(|l| l.get_mut("address"))
        {
            *address = Value::String("<address>".into());
        }
    }
    f
}

/// The program side of a replay: the hub's two sources as tables the
/// steps change, and public's `Orders`, whose fills the hub publishes.
struct Side {
    tokens: SharedTokens,
    roles: SharedRoles,
    orders: Box<dyn Receiver + Send>,
    fills: Arc<Mutex<Vec<String>>>,
}

impl Side {
    fn new(program: &Program) -> Side {
        let instances = Instances::new(program);
        let fills = Arc::new(Mutex::new(Vec::new()));
        let to = fills.clone();
        instances.orders.publish_to(FillSink(Arc::new(move |fill| {
            if let Ok(mut f) = to.lock() {
                f.push(fill.to_json());
            }
        })));
        let orders = instances
            .receiver("self.orders")
            .expect("the witness implements self.orders");
        Side {
            tokens: SharedTokens(Arc::new(Mutex::new(witness::tokens()))),
            roles: SharedRoles(Arc::new(Mutex::new(witness::grants(program, "hub_roles")))),
            orders,
            fills,
        }
    }

    fn take_fills(&self) -> Vec<String> {
        self.fills
            .lock()
            .map(|mut f| std::mem::take(&mut *f))
            .unwrap_or_default()
    }

    /// A place accepted on public's instance (its fill is then taken).
    fn place(&mut self, payload: &Value) -> Result<(), String> {
        let ctx = ServedContext {
            caller: Principal::bearer("alice"),
            request_id: 0,
            via: "http".into(),
            role: "".into(),
            exposure: "public".into(),
            generation: 1,
        };
        match self.orders.call("Orders::place", payload, &ctx) {
            limen_core::hale::runtime::Completion::Returned(_) => Ok(()),
            other => Err(format!("the place was not accepted: {other:?}")),
        }
    }

    /// The grant taken; the role source's new revision.
    fn revoke(&self, principal: &str, role: &str) -> u64 {
        let mut t = self.roles.0.lock().unwrap_or_else(|e| e.into_inner());
        t.revoke(principal, role);
        t.grants(&Principal::bearer(principal))
            .map_or(0, |g| g.revision)
    }

    fn expire(&self, token: &str, at: Timestamp) -> Result<(), String> {
        let mut t = self.tokens.0.lock().unwrap_or_else(|e| e.into_inner());
        let p = t
            .principal(token)
            .ok_or_else(|| format!("no token `{token}`"))?;
        *t = std::mem::take(&mut *t).with_expiry(token, &p.name, at);
        Ok(())
    }
}

/// The hub named by a hub identity, and whether the record is of the
/// surface served over it (`desk`): the program to read, the hub's name.
fn resolve(
    program_text: &str,
    program: &Program,
    identity: &str,
) -> Result<(Program, String, bool), String> {
    let name = crate::record::exposure_name(identity);
    let hub = program
        .hubs
        .first()
        .and_then(|h| h.name())
        .ok_or("the program declares no hub")?
        .to_owned();
    if name == hub {
        let want = program.hub_exposure_id(&hub).map_err(|e| e.to_string())?;
        if want != identity {
            return Err(format!(
                "the record is of {identity}, and the program serves {want}"
            ));
        }
        return Ok((program.clone(), hub, false));
    }
    // A surface over the hub: the program's own serve site, else the one
    // `hale demo --hub-desk` adds.
    let with = if program.exposure(name).is_some() {
        program.clone()
    } else if name == "desk" {
        let text = with_hub_desk(program_text)
            .ok_or("the program has no main locus run() to serve desk from")?;
        parse_program("program.hl", &text).map_err(|e| e.to_string())?
    } else {
        return Err(format!("the program serves no exposure `{name}`"));
    };
    Ok((with, hub, true))
}

/// Replays a hub record; `program_text` is the corpus's program source.
pub fn replay(
    program_text: &str,
    program: &Program,
    record: &crate::record::Record,
    feed: Feed,
) -> Result<(), String> {
    let (program, hub_name, calls) = resolve(program_text, program, &record.exposure)?;
    let spec = HubSpec::from_program(&program, &hub_name)?;
    let mut side = Side::new(&program);
    if record.request.get("method").is_some() {
        let mut ws = Ws::new(&program, &hub_name, spec, &side, calls, &record.exposure)?;
        ws.feed = feed;
        return ws.describe(&mut side, &record.request, &record.reply);
    }
    let seq = record.reply.as_array().ok_or("no sequence")?;
    match record.transport.as_str() {
        "ws" => {
            let mut ws = Ws::new(&program, &hub_name, spec, &side, calls, &record.exposure)?;
            ws.feed = feed;
            ws.run(&mut side, &record.request, seq)
        }
        _ => Udp::new(&program, &hub_name, spec, &side)?.run(&mut side, &record.request, seq),
    }
}

/// The clock of a replay: monotonic from 0, the wall [`EPOCH`] plus it.
#[derive(Default)]
struct Clock {
    now: Timestamp,
}

impl Clock {
    fn wall(&self) -> Timestamp {
        EPOCH + self.now
    }
}

/// A ws replay: the hub machine, and the exposure of the surface it
/// carries when the record is of one.
struct Ws {
    hub: Hub,
    exposure: Option<Exposure>,
    clock: Clock,
    reader: ServerReader,
    received: VecDeque<Received>,
    /// The upgrade's 101 is not yet read whole.
    head: Option<(Vec<u8>, String)>,
    /// The client does not read.
    stalled: bool,
    /// How the client's bytes are fed to the hub.
    feed: Feed,
    /// An HTTP exchange on the hub's listener: what the hub wrote, raw.
    raw: Option<Vec<u8>>,
}

#[derive(Debug)]
enum Received {
    Text(Value),
    Close(u16),
}

/// The hub side's answers to the exposure's events, for [`pump`]:
/// deliveries go to the hub, calls are kept to run once the pump returns,
/// every receiver is there as incarnation 1; nothing else is acted on.
struct HubDriver<'a> {
    hub: &'a mut Hub,
    now: Timestamp,
    /// The calls handed, to run after the pump.
    handed: Vec<Dispatch>,
    /// Whether any event came.
    moved: bool,
}

impl ExposureDriver for HubDriver<'_> {
    fn deliver(&mut self, delivery: Delivery) {
        self.moved = true;
        self.hub.deliver(self.now, delivery);
    }

    fn dispatch(&mut self, dispatch: Box<Dispatch>) -> Handed {
        self.moved = true;
        self.handed.push(*dispatch);
        Handed::Taken
    }

    fn ask(&mut self, _receiver: ReceiverId) -> Answer {
        self.moved = true;
        Answer::Born(1)
    }

    fn recall(&mut self, _receiver: ReceiverId, _request_id: RequestId) -> bool {
        self.moved = true;
        false
    }

    fn close_connection(&mut self, _correlation: Correlation) {
        self.moved = true;
    }

    fn stop_listening(&mut self) {
        self.moved = true;
    }
}

impl Ws {
    fn new(
        program: &Program,
        hub_name: &str,
        spec: HubSpec,
        side: &Side,
        calls: bool,
        identity: &str,
    ) -> Result<Ws, String> {
        // The listener as the program writes it: nothing is bound.
        let describer =
            ExposureDescriber::new(program, hub_name, None).map_err(|e| e.to_string())?;
        let mut hub = Hub::new(
            spec,
            Some(Box::new(side.tokens.clone())),
            Box::new(side.roles.clone()),
            Box::new(describer),
        );
        let exposure = if calls {
            let name = crate::record::exposure_name(identity);
            let e = program
                .exposure(name)
                .ok_or_else(|| format!("the program serves no exposure `{name}`"))?;
            let spec = exposure_spec(program, e, "ws").map_err(|e| e.to_string())?;
            if spec.identity() != identity {
                return Err(format!(
                    "the record is of {identity}, and the program serves {}",
                    spec.identity()
                ));
            }
            let codec = ShapeCodec::new(program, e).map_err(|e| e.to_string())?;
            let docs = ExposureDescriber::new(program, name, None).map_err(|e| e.to_string())?;
            let mut exposure = Exposure::new(
                spec,
                Some(Box::new(side.tokens.clone())),
                Box::new(side.roles.clone()),
                Box::new(codec),
                Box::new(docs),
            );
            exposure.handle_input(
                0,
                Input::ReceiverBorn {
                    receiver: 0,
                    stamp: 1,
                },
            );
            hub.serve_calls();
            Some(exposure)
        } else {
            None
        };
        Ok(Ws {
            hub,
            exposure,
            clock: Clock::default(),
            reader: ServerReader::default(),
            received: VecDeque::new(),
            head: None,
            stalled: false,
            feed: Feed::Whole,
            raw: None,
        })
    }

    fn tick(&mut self) -> Timestamp {
        self.clock.now += TICK;
        self.clock.now
    }

    /// Moves the clock to `to`, firing each deadline on the way at its
    /// instant.
    fn advance(&mut self, side: &mut Side, to: Timestamp) -> Result<(), String> {
        while let Some(at) = self.hub.poll_timeout().filter(|&t| t <= to) {
            self.clock.now = self.clock.now.max(at);
            self.hub.handle_timeout(self.clock.now);
            self.settle(side)?;
        }
        self.clock.now = self.clock.now.max(to);
        Ok(())
    }

    /// Runs the wiring until nothing moves: the hub's calls to the
    /// exposure, its dispatches to public's `Orders`, the fills they
    /// publish to the hub, the deliveries back, and what the hub writes
    /// read as a client reads it.
    fn settle(&mut self, side: &mut Side) -> Result<(), String> {
        loop {
            let mut moved = false;
            let now = self.clock.now;
            // The hub's events: its calls go to the exposure; there is no
            // socket to write or close (what the hub writes is read below
            // from its pending output).
            while let Some(event) = self.hub.poll_event() {
                let input = match event {
                    HubEvent::Call(r) => Input::Request {
                        request: *r,
                        wall: self.clock.wall(),
                    },
                    HubEvent::Lost(c) => Input::Lost(c),
                    HubEvent::Output(_) | HubEvent::Close(_) => continue,
                };
                moved = true;
                if let Some(ex) = self.exposure.as_mut() {
                    ex.handle_input(now, input);
                }
            }
            if let Some(ex) = self.exposure.as_mut() {
                // The core's pump; the calls it hands are run once it
                // returns (as the server's owner runs an inline receiver's),
                // then it pumps again.
                loop {
                    let mut driver = HubDriver {
                        hub: &mut self.hub,
                        now,
                        handed: Vec::new(),
                        moved: false,
                    };
                    pump(ex, now, &mut driver);
                    moved |= driver.moved;
                    if driver.handed.is_empty() {
                        break;
                    }
                    for d in driver.handed {
                        let member = ex.spec().members[d.member].name.clone();
                        let completion = side.orders.call(&member, &d.payload, &d.context);
                        // What the handler published while it ran reaches
                        // the hub before its completion, as on the server
                        // (one mailbox, in order).
                        for fill in side.take_fills() {
                            self.hub.publish(now, "Fills", &fill);
                        }
                        let request_id = d.request_id;
                        ex.handle_input(
                            now,
                            Input::Completion {
                                request_id,
                                completion,
                            },
                        );
                    }
                }
            }
            for fill in side.take_fills() {
                moved = true;
                self.hub.publish(now, "Fills", &fill);
            }
            let out = self.hub.pending_output(CONN).to_vec();
            if !out.is_empty() && !self.stalled {
                moved = true;
                self.hub.consume_output(now, CONN, out.len());
                self.read(&out)?;
            }
            if !moved {
                return Ok(());
            }
        }
    }

    fn read(&mut self, mut bytes: &[u8]) -> Result<(), String> {
        if let Some(raw) = &mut self.raw {
            raw.extend_from_slice(bytes);
            return Ok(());
        }
        if let Some((mut head, key)) = self.head.take() {
            head.extend_from_slice(bytes);
            match client::upgrade_answer(&head, &key)? {
                None => {
                    self.head = Some((head, key));
                    return Ok(());
                }
                Some(n) => {
                    let rest = head[n..].to_vec();
                    return self.read_frames(&rest);
                }
            }
        }
        self.read_frames(std::mem::take(&mut bytes))
    }

    fn read_frames(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.reader.handle_data(bytes);
        while let Some(f) = self.reader.poll_frame()? {
            match f {
                ServerFrame::Text(t) => {
                    let v = serde_json::from_str(&t)
                        .map_err(|_| format!("the hub wrote a frame that is not JSON: {t}"))?;
                    self.received.push_back(Received::Text(v));
                }
                ServerFrame::Close(code) => self.received.push_back(Received::Close(code)),
                ServerFrame::Ping(_) | ServerFrame::Pong => {}
            }
        }
        Ok(())
    }

    /// `GET /.description` (or any HTTP request the record holds) on the
    /// hub's listener, its response held to the record's reply: the status
    /// and the body as a value, the listener's address masked.
    fn describe(&mut self, side: &mut Side, request: &Value, reply: &Value) -> Result<(), String> {
        let head = describe_head(request, "127.0.0.1:9000", None)?;
        self.raw = Some(Vec::new());
        let now = self.tick();
        self.hub.handle_accept(now, CONN);
        self.send(side, &head)?;
        let raw = self.raw.take().unwrap_or_default();
        let response = read_response(describe_method(request), &raw, true, Limits::default())
            .map_err(|e| format!("the hub answered no whole HTTP response: {e}"))?
            .ok_or("the hub answered no whole HTTP response")?;
        let body: Value = serde_json::from_slice(&response.body).map_err(|_| {
            format!(
                "the body is not JSON: {}",
                String::from_utf8_lossy(&response.body)
            )
        })?;
        let got = serde_json::json!({"status": response.status, "body": body});
        let want = serde_json::json!({"status": reply["status"], "body": reply["body"]});
        let masked = |v: &Value| {
            let mut v = v.clone();
            v["body"] = mask(&serde_json::json!({"document": v["body"]}))["document"].clone();
            v
        };
        match crate::mask::first_difference(&masked(&want), &masked(&got)) {
            None => Ok(()),
            Some(d) => Err(format!("reply {d}")),
        }
    }

    /// The client's bytes to the hub, whole or one at a time.
    fn send(&mut self, side: &mut Side, bytes: &[u8]) -> Result<(), String> {
        let now = self.tick();
        let wall = self.clock.wall();
        match self.feed {
            Feed::Whole => self.hub.handle_data(now, wall, CONN, bytes),
            Feed::Bytes => {
                for b in bytes.chunks(1) {
                    self.hub.handle_data(now, wall, CONN, b);
                }
            }
        }
        self.settle(side)
    }

    fn upgrade(&mut self, side: &mut Side, request: &Value) -> Result<(), String> {
        let path = request["path"].as_str().unwrap_or("/");
        let bearer = request_bearer(request);
        let key = client::key([7; 16]);
        let now = self.tick();
        self.hub.handle_accept(now, CONN);
        self.head = Some((Vec::new(), key.clone()));
        let bytes = client::upgrade_request("127.0.0.1:9000", path, &key, bearer);
        self.send(side, &bytes)?;
        if self.head.is_some() {
            return Err("the upgrade was not answered 101".into());
        }
        Ok(())
    }

    fn run(mut self, side: &mut Side, request: &Value, seq: &[Value]) -> Result<(), String> {
        let mut upgraded = false;
        for (i, e) in seq.iter().enumerate() {
            let at = format!("frames[{i}]");
            let from = e["from"].as_str().unwrap_or_default();
            if !upgraded && matches!(from, "client" | "server") {
                self.upgrade(side, request)?;
                upgraded = true;
            }
            match from {
                "client" if e.get("stall").is_some() => {
                    self.stalled = e["stall"] == true;
                    self.tick();
                    self.settle(side)?;
                }
                "client" => {
                    let text = e["frame"].to_string();
                    self.send(side, &client::text(&text, [1, 2, 3, 4]))?;
                }
                "server" => {
                    let got = self
                        .received
                        .pop_front()
                        .ok_or_else(|| format!("{at}: the hub wrote nothing more"))?;
                    match (got, e.get("frame"), e.get("close")) {
                        (Received::Text(v), Some(want), _) => {
                            if let Some(d) = crate::mask::first_difference(&mask(want), &mask(&v)) {
                                return Err(format!("{at}: frame {d}"));
                            }
                        }
                        (Received::Close(code), _, Some(want)) => {
                            if want.as_u64() != Some(u64::from(code)) {
                                return Err(format!("{at}: the close frame is {code}, not {want}"));
                            }
                        }
                        (got, _, _) => return Err(format!("{at}: the hub wrote {got:?}")),
                    }
                }
                _ => self.program_step(side, e, &at)?,
            }
        }
        if !upgraded {
            self.upgrade(side, request)?;
        }
        self.settle(side)?;
        match self.received.pop_front() {
            None => Ok(()),
            Some(more) => Err(format!("the hub wrote more than the record: {more:?}")),
        }
    }

    fn program_step(&mut self, side: &mut Side, e: &Value, at: &str) -> Result<(), String> {
        let now = self.tick();
        if let Some(ms) = e["wait_ms"].as_u64() {
            let to = self.clock.now + ms * MILLISECOND;
            return self.advance(side, to);
        }
        if let Some(p) = e.get("place") {
            side.place(p).map_err(|w| format!("{at}: {w}"))?;
        } else if let Some(r) = e.get("revoke") {
            let (p, role) = (r["principal"].as_str(), r["role"].as_str());
            let (Some(p), Some(role)) = (p, role) else {
                return Err(format!("{at}: revoke names a principal and a role"));
            };
            let revision = side.revoke(p, role);
            self.hub.announce(now, revision);
        } else if let Some(x) = e.get("expire") {
            let (Some(token), Some(ms)) = (x["token"].as_str(), x["in_ms"].as_u64()) else {
                return Err(format!("{at}: expire names a token and in_ms"));
            };
            side.expire(token, self.clock.wall() + ms * MILLISECOND)
                .map_err(|w| format!("{at}: {w}"))?;
        } else if e.get("stop").is_some() {
            self.hub.stop(now);
            if let Some(ex) = self.exposure.as_mut() {
                ex.stop(now);
            }
        }
        self.settle(side)
    }
}

/// A udp replay: the datagram hub, one subscriber address.
struct Udp {
    hub: limen_core::wire::udp::Hub<u64>,
    clock: Clock,
    received: VecDeque<Value>,
}

impl Udp {
    fn new(program: &Program, hub_name: &str, spec: HubSpec, side: &Side) -> Result<Udp, String> {
        // Described as the datagram hub the demo serves: the same rows,
        // the listener udp's.
        let mut over_udp = program.clone();
        for h in over_udp
            .hubs
            .iter_mut()
            .filter(|h| h.name() == Some(hub_name))
        {
            h.literal.kind = TransportKind::Udp;
        }
        let describer =
            ExposureDescriber::new(&over_udp, hub_name, None).map_err(|e| e.to_string())?;
        Ok(Udp {
            hub: limen_core::wire::udp::Hub::new(
                spec,
                Some(Box::new(side.tokens.clone())),
                Box::new(side.roles.clone()),
                Box::new(describer),
            ),
            clock: Clock::default(),
            received: VecDeque::new(),
        })
    }

    fn settle(&mut self, side: &mut Side) -> Result<(), String> {
        loop {
            let now = self.clock.now;
            let mut moved = false;
            for fill in side.take_fills() {
                moved = true;
                self.hub.publish(now, "Fills", &fill);
            }
            while let Some((_, d)) = self.hub.pending_transmit(now) {
                moved = true;
                let v = serde_json::from_slice(d).map_err(|_| {
                    format!(
                        "the hub sent a datagram that is not JSON: {}",
                        String::from_utf8_lossy(d)
                    )
                })?;
                let len = d.len();
                self.received.push_back(v);
                self.hub.consume_transmit(now, len);
            }
            if !moved {
                return Ok(());
            }
        }
    }

    fn send(&mut self, side: &mut Side, d: &Value) -> Result<(), String> {
        self.clock.now += TICK;
        let wall = self.clock.wall();
        self.hub
            .handle_datagram(self.clock.now, wall, CONN, d.to_string().as_bytes());
        self.settle(side)
    }

    fn run(mut self, side: &mut Side, request: &Value, seq: &[Value]) -> Result<(), String> {
        let mut sent = false;
        for (i, e) in seq.iter().enumerate() {
            let at = format!("datagrams[{i}]");
            let from = e["from"].as_str().unwrap_or_default();
            if !sent && matches!(from, "client" | "server") {
                self.send(side, request)?;
                sent = true;
            }
            match from {
                "client" => self.send(side, &e["datagram"])?,
                "server" => {
                    let got = self
                        .received
                        .pop_front()
                        .ok_or_else(|| format!("{at}: the hub sent nothing more"))?;
                    if let Some(d) =
                        crate::mask::first_difference(&mask(&e["datagram"]), &mask(&got))
                    {
                        return Err(format!("{at}: datagram {d}"));
                    }
                }
                _ => {
                    self.clock.now += TICK;
                    let now = self.clock.now;
                    if let Some(ms) = e["wait_ms"].as_u64() {
                        let to = now + ms * MILLISECOND;
                        while let Some(t) = self.hub.poll_timeout().filter(|&t| t <= to) {
                            self.clock.now = self.clock.now.max(t);
                            self.hub.handle_timeout(self.clock.now);
                            self.settle(side)?;
                        }
                        self.clock.now = self.clock.now.max(to);
                    } else if let Some(p) = e.get("place") {
                        side.place(p).map_err(|w| format!("{at}: {w}"))?;
                    } else if let Some(r) = e.get("revoke") {
                        let (Some(p), Some(role)) = (r["principal"].as_str(), r["role"].as_str())
                        else {
                            return Err(format!("{at}: revoke names a principal and a role"));
                        };
                        let revision = side.revoke(p, role);
                        self.hub.announce(now, revision);
                    } else if let Some(x) = e.get("expire") {
                        let (Some(token), Some(ms)) = (x["token"].as_str(), x["in_ms"].as_u64())
                        else {
                            return Err(format!("{at}: expire names a token and in_ms"));
                        };
                        side.expire(token, self.clock.wall() + ms * MILLISECOND)
                            .map_err(|w| format!("{at}: {w}"))?;
                    } else if e.get("stop").is_some() {
                        self.hub.stop(now);
                    }
                    self.settle(side)?;
                }
            }
        }
        if !sent {
            self.send(side, request)?;
        }
        self.settle(side)?;
        match self.received.pop_front() {
            None => Ok(()),
            Some(more) => Err(format!("the hub sent more than the record: {more}")),
        }
    }
}
