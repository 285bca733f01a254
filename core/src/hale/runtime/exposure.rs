//! The exposure: admission, dispatch, completion, shutdown and generations,
//! as one pure state machine every transport drives the same way.
//!
//! A transport frames bytes into a [`Request`] and hands it to
//! [`Exposure::handle_request`]. The exposure runs the eight checks of
//! § Serving in the spec's order; a refusal is delivered at once, an
//! accepted request takes a request id and a unit of the bound and waits in
//! its receiver's queue. A receiver is an actor: at most one call is handed
//! to it ([`Event::Dispatch`]) at a time, in the order accepted. The driver
//! runs the handler and reports back with [`Exposure::handle_completion`];
//! the pending table, the one owner of completion, delivers exactly one
//! terminal outcome per accepted request and releases its unit exactly once,
//! whatever order completions, losses, receiver failures and `stop()` come
//! in.
//!
//! Time comes in as arguments; the machine reads no clock. `now` is the
//! driver's monotonic clock (nanoseconds from any origin), which the
//! shutdown wait runs on; the wall clock (nanoseconds since the Unix epoch)
//! comes in only with a request, since the one thing that reads it is a
//! bearer credential's expiry, stated on that clock.
//!
//! Everything reaches the exposure as an input ([`Exposure::handle_input`],
//! or the method each [`Input`] names) and everything it asks comes out of
//! [`Exposure::poll_event`]: one thread owns it, and the workers that run
//! the handlers send their completions back as messages. After any input,
//! poll until `None`; [`Exposure::poll_timeout`] names the one deadline
//! [`Input::Timeout`] acts on.

use std::collections::{BTreeMap, HashMap, VecDeque};

use crate::hash::Fixed;

use super::bearer::{authenticate, BearerRefusal};
use super::outcome::{reasons, Outcome, Refusal, RefusalKind};
use super::sources::{
    BearerSource, Credential, HeldRoles, PeerCredentials, Principal, RoleHierarchy, RoleSource,
};
use crate::{Timestamp, SECOND};

/// The exposure's number for a request, unique and increasing for its
/// lifetime (0 is never assigned: it is a line that is not a request).
pub type RequestId = u64;

/// The transport's correlation: a connection, or a connection and stream.
pub type Correlation = u64;

/// A receiver, by its place in [`ExposureSpec::receivers`].
pub type ReceiverId = usize;

/// One row of the served surface, as admission and dispatch read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberSpec {
    /// The member as a caller names it: `Orders::cancel`.
    pub name: String,
    /// The receiver instance the serve site binds the row's locus to.
    pub receiver: ReceiverId,
    /// The roles a caller must hold, as written.
    pub requires: Vec<String>,
}

/// What an exposure serves and how: everything admission and dispatch read
/// besides the sources and the codec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExposureSpec {
    /// The exposure's name (`as:`).
    pub name: String,
    /// The surface's name.
    pub surface: String,
    /// The surface's digest, `fnv1a64:…`.
    pub digest: String,
    /// The transport's name for `Context.via`: `unix`, `http`, `mcp`, `test`…
    pub via: String,
    /// The surface's rows.
    pub members: Vec<MemberSpec>,
    /// The bound receiver instances, named for messages (`self.orders`).
    pub receivers: Vec<String>,
    /// The requests accepted and not yet answered the exposure holds.
    pub bound: usize,
    /// Which roles include which.
    pub hierarchy: RoleHierarchy,
    /// The machine's limits.
    pub limits: ExposureLimits,
}

/// The limits of an exposure beside its program's `bound:`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExposureLimits {
    /// How long `stop()` waits for executing calls (the spec: ten seconds).
    pub stop_wait: Timestamp,
    /// How long a teardown waits for executing calls (the spec: one second).
    pub teardown_wait: Timestamp,
    /// How many calls a receiver may be handed beyond the one it runs.
    ///
    /// 0 (the default) hands a receiver its next call only once the last
    /// one completed: a handed call is executing. A driver whose workers
    /// run on other threads sets more, so a worker finds its next call
    /// waiting instead of a round trip through the exposure's owner; a
    /// call handed ahead has not started until its worker starts it, so
    /// where the exposure would settle queued calls (`stop()`, a drain, a
    /// receiver gone) it asks for every handed call back
    /// ([`Event::Recall`]) and the driver answers, for each one its worker
    /// never started and now never will, [`Input::Recalled`].
    pub dispatch_ahead: usize,
}

impl Default for ExposureLimits {
    fn default() -> ExposureLimits {
        ExposureLimits {
            stop_wait: 10 * SECOND,
            teardown_wait: SECOND,
            dispatch_ahead: 0,
        }
    }
}

/// One input to an [`Exposure`], as a driver that owns it hands them over
/// (from its connections, its workers, its timers and its operator).
#[derive(Debug)]
pub enum Input {
    /// A framed request arrived; `wall` is the wall clock (nanoseconds since
    /// the Unix epoch) a credential's expiry is read against.
    Request {
        /// The request.
        request: Request,
        /// The wall clock at its arrival.
        wall: Timestamp,
    },
    /// A handler ended ([`Exposure::handle_completion`]).
    Completion {
        /// The call.
        request_id: RequestId,
        /// How it ended.
        completion: Completion,
    },
    /// A connection is gone ([`Exposure::connection_lost`]).
    Lost(Correlation),
    /// A receiver announced its incarnation ([`Exposure::receiver_born`]).
    ReceiverBorn {
        /// The receiver.
        receiver: ReceiverId,
        /// Its incarnation stamp.
        stamp: u64,
    },
    /// A receiver's incarnation drains ([`Exposure::receiver_draining`]).
    ReceiverDraining {
        /// The receiver.
        receiver: ReceiverId,
        /// Its incarnation stamp.
        stamp: u64,
    },
    /// A receiver's incarnation dissolved ([`Exposure::receiver_dissolved`]).
    ReceiverDissolved {
        /// The receiver.
        receiver: ReceiverId,
        /// Its incarnation stamp.
        stamp: u64,
    },
    /// Asked, a receiver has nobody to answer ([`Exposure::receiver_absent`]).
    ReceiverAbsent(ReceiverId),
    /// A dispatched call was not taken ([`Exposure::dispatch_not_taken`]).
    DispatchNotTaken(RequestId),
    /// A recalled call never started and never will
    /// ([`Exposure::recalled`]).
    Recalled(RequestId),
    /// `stop()` ([`Exposure::stop`]).
    Stop,
    /// The serving locus's teardown ([`Exposure::teardown`]).
    Teardown,
    /// Time passed ([`Exposure::handle_timeout`]).
    Timeout,
}

impl ExposureSpec {
    /// The exposure's identity, `<surface>@<digest>/<name>`.
    pub fn identity(&self) -> String {
        format!("{}@{}/{}", self.surface, self.digest, self.name)
    }

    /// The member named `name`, also accepting the `%3A%3A` spelling of `::`.
    pub fn member_index(&self, name: &str) -> Option<usize> {
        self.members.iter().position(|m| m.name == name)
    }

    /// Every role a row of the surface requires, sorted, each once.
    pub fn required_roles(&self) -> Vec<String> {
        let mut roles: Vec<String> = self
            .members
            .iter()
            .flat_map(|m| m.requires.iter().cloned())
            .collect();
        roles.sort();
        roles.dedup();
        roles
    }
}

/// Decodes a member's payload by its request shape under the exposure's
/// codec (strict: no coercion, no default).
pub trait PayloadCodec {
    /// The decoded payload of `member`, or the malformed reason
    /// (`missing_field: qty`, `wrong_type: order`).
    fn decode(&self, member: usize, payload: &[u8]) -> Result<serde_json::Value, String>;

    /// The decoded protobuf message of `member` (§ The protobuf codec), or
    /// the malformed reason in the JSON codec's words. The protobuf codec
    /// joins a program only with a gRPC exposure, so by default a protobuf
    /// payload is refused as a payload that is not the member's.
    fn decode_protobuf(&self, member: usize, message: &[u8]) -> Result<serde_json::Value, String> {
        let _ = (member, message);
        Err("wrong_type: payload".into())
    }
}

/// A call's payload as its transport read it, undecoded: the codec it is
/// in travels beside the bytes, so the exposure's codec decodes it once
/// and nothing is smuggled in the bytes themselves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Payload {
    /// JSON text, as the Unix, HTTP, MCP and WebSocket transports and
    /// gRPC's `+json` carry it.
    Json(Vec<u8>),
    /// A protobuf message (gRPC's `application/grpc` and `+proto`). The
    /// member names its message: the exposure's codec decodes it by the
    /// member's request shape ([`PayloadCodec::decode_protobuf`]).
    Proto(Vec<u8>),
}

/// Builds the description document for a caller (§ The description).
pub trait Describer {
    /// The compact JSON document for `caller`, who holds `roles` (among those
    /// the rows require) and may call `members` (indices into the spec's
    /// members), as admission would decide.
    fn describe(&self, caller: &Principal, roles: &[String], members: &[usize]) -> Vec<u8>;
}

/// What a handler is called with (`std::api::ServedContext`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServedContext {
    /// The caller the exposure established.
    pub caller: Principal,
    /// The exposure's request id.
    pub request_id: RequestId,
    /// The transport the request came through.
    pub via: std::sync::Arc<str>,
    /// The first role of the row's requires as written, or empty (shared:
    /// every call of the row carries it).
    pub role: std::sync::Arc<str>,
    /// The exposure's name.
    pub exposure: std::sync::Arc<str>,
    /// The receiver's execution generation the call was admitted under.
    pub generation: u64,
}

/// A request as a transport framed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// The transport's correlation for the reply.
    pub correlation: Correlation,
    /// What the request asks.
    pub kind: RequestKind,
    /// The digest the client sent, if any.
    pub digest: Option<String>,
    /// Who sent it, as the transport read it.
    pub credential: Credential,
    /// The client's own id as raw JSON text, echoed in the reply (Unix).
    pub client_id: Option<String>,
}

/// What a framed request asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestKind {
    /// Call `member` with the payload's bytes.
    Call {
        /// The member as the request names it.
        member: String,
        /// The payload, undecoded, in the codec it was sent in.
        payload: Payload,
    },
    /// Describe the exposure for the caller.
    Describe,
    /// The transport could not frame a request: the reason.
    Malformed {
        /// Why the message is not a request.
        reason: String,
    },
}

/// An outcome (or a refusal) for the transport to deliver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// Where the reply goes.
    pub correlation: Correlation,
    /// The exposure's request id.
    pub request_id: RequestId,
    /// The client's id, echoed.
    pub client_id: Option<String>,
    /// The caller the exposure established (or would have).
    pub caller: Principal,
    /// The member called, by index, when the request named one the
    /// surface has (a call log's `member`).
    pub member: Option<usize>,
    /// When the request came, on the wall clock it was admitted under
    /// (nanoseconds since the Unix epoch): a call log's duration is from
    /// here to the delivery.
    pub accepted: Timestamp,
    /// The outcome.
    pub outcome: Outcome,
}

/// A call handed to its receiver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dispatch {
    /// The receiver instance.
    pub receiver: ReceiverId,
    /// The exposure's request id; the completion names it.
    pub request_id: RequestId,
    /// The member, by index.
    pub member: usize,
    /// The decoded payload.
    pub payload: serde_json::Value,
    /// The handler's context.
    pub context: ServedContext,
    /// The generation the call was admitted under.
    pub generation: u64,
    /// The incarnation stamp the call is handed to: the receiver runs it
    /// only if this is its own incarnation's, and otherwise reports
    /// [`Exposure::dispatch_not_taken`].
    pub stamp: u64,
}

/// What the exposure asks of its transport and driver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// Encode and write an outcome.
    Deliver(Delivery),
    /// Run a call on its receiver. Boxed: a call's payload and context make
    /// it the largest event by far, and events are moved several times on
    /// their way to the thread that acts on them.
    Dispatch(Box<Dispatch>),
    /// Ask a receiver whose incarnation is not known to announce itself
    /// ([`Exposure::receiver_born`]) or be found absent
    /// ([`Exposure::receiver_absent`]).
    Ask(ReceiverId),
    /// The runtime has finished with this connection: a reply for it was
    /// dropped after it was lost (or its call abandoned at shutdown).
    CloseConnection(Correlation),
    /// Only with [`ExposureLimits::dispatch_ahead`] above 0: take back the
    /// handed call `request_id` if its worker has not started it, so that
    /// it settles as a queued call would. Answer [`Exposure::recalled`]
    /// when it was taken back (it must then never start); say nothing when
    /// it started — its completion follows as usual.
    Recall {
        /// The receiver it was handed to.
        receiver: ReceiverId,
        /// The call.
        request_id: RequestId,
    },
    /// Shutdown is done: release the listener.
    StopListening,
}

/// How a handler ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Completion {
    /// It returned its response, encoded by the codec.
    Returned(Vec<u8>),
    /// It failed with its declared error, encoded by the codec.
    Failed(Vec<u8>),
    /// It violated (`ClosureViolation`); the owner's on_failure has run and
    /// supervision let execution return: the server error.
    Violated,
    /// It violated and supervision exits the process: the caller sees a
    /// transport failure, never a swallowed structural failure.
    ProcessExits,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReceiverState {
    /// Not known yet: calls wait queued for the answer, which will be
    /// `generation`.
    Unknown { generation: u64, asked: bool },
    /// The incarnation `stamp`, at `generation`.
    Known { stamp: u64, generation: u64 },
    /// Draining, dissolved or restarting, last known at `generation`.
    Unavailable { generation: u64 },
}

#[derive(Debug)]
struct Slot {
    state: ReceiverState,
    /// The calls handed over and not yet completed, in the order handed,
    /// each with the incarnation stamp it was handed to: at most one, or
    /// `1 + dispatch_ahead` with calls handed ahead.
    handed: VecDeque<(RequestId, u64)>,
    queue: VecDeque<RequestId>,
}

impl Slot {
    fn forget_handed(&mut self, id: RequestId) {
        if let Some(at) = self.handed.iter().position(|h| h.0 == id) {
            self.handed.remove(at);
        }
    }
}

#[derive(Debug)]
enum Place {
    Queued(serde_json::Value),
    /// Handed to its receiver (with no call handed ahead, executing).
    Executing,
    /// Handed ahead and asked back; if taken back, it settles with this
    /// refusal, as a queued call settled at the same moment did.
    Recalling(RefusalKind),
}

impl Place {
    fn is_handed(&self) -> bool {
        matches!(self, Place::Executing | Place::Recalling(_))
    }
}

#[derive(Debug)]
struct Pending {
    correlation: Correlation,
    client_id: Option<String>,
    caller: Principal,
    member: usize,
    generation: u64,
    place: Place,
    /// The wall clock at admission.
    accepted: Timestamp,
}

#[derive(Debug, Default)]
struct Connection {
    /// Accepted requests of this connection not yet terminal.
    pending: usize,
    /// The connection is gone (or its call abandoned): replies are dropped.
    lost: bool,
    /// The transport was told `CloseConnection` already.
    told: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lifecycle {
    Serving,
    Stopping { deadline: Timestamp },
    Stopped,
}

/// The exposure machine. See the module documentation.
pub struct Exposure {
    spec: ExposureSpec,
    bearer: Option<Box<dyn BearerSource + Send>>,
    roles: Box<dyn RoleSource + Send>,
    codec: Box<dyn PayloadCodec + Send>,
    describer: Box<dyn Describer + Send>,
    next_id: RequestId,
    /// The accepted requests not yet terminal. A hash map, not an ordered
    /// one: ids are assigned in order, so a B-tree inserted at the back and
    /// removed at the front shifts a leaf's records (over a hundred bytes
    /// each) on nearly every call; nothing reads the table in id order but
    /// the shutdown deadline, which sorts what it takes.
    pending: HashMap<RequestId, Pending, Fixed>,
    connections: BTreeMap<Correlation, Connection>,
    slots: Vec<Slot>,
    lifecycle: Lifecycle,
    events: VecDeque<Event>,
    /// `spec.via` and `spec.name`, shared by every context handed out.
    via: std::sync::Arc<str>,
    /// Each member's first required role, as its calls' contexts carry it.
    roles_first: Vec<std::sync::Arc<str>>,
    /// The principal of the Unix peer last authenticated.
    unix_caller: Option<(PeerCredentials, Principal)>,
    name: std::sync::Arc<str>,
}

impl std::fmt::Debug for Exposure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exposure")
            .field("identity", &self.spec.identity())
            .field("pending", &self.pending.len())
            .field("lifecycle", &self.lifecycle)
            .finish()
    }
}

impl Exposure {
    /// An exposure serving `spec` under its sources: `bearer` names callers
    /// by token (`None`: the transport's peer credentials name them), `roles`
    /// answers what they hold.
    pub fn new(
        spec: ExposureSpec,
        bearer: Option<Box<dyn BearerSource + Send>>,
        roles: Box<dyn RoleSource + Send>,
        codec: Box<dyn PayloadCodec + Send>,
        describer: Box<dyn Describer + Send>,
    ) -> Exposure {
        let slots = spec
            .receivers
            .iter()
            .map(|_| Slot {
                state: ReceiverState::Unknown {
                    generation: 1,
                    asked: false,
                },
                handed: VecDeque::new(),
                queue: VecDeque::new(),
            })
            .collect();
        Exposure {
            roles_first: spec
                .members
                .iter()
                .map(|m| m.requires.first().map_or("", String::as_str).into())
                .collect(),
            via: spec.via.as_str().into(),
            name: spec.name.as_str().into(),
            spec,
            bearer,
            roles,
            codec,
            describer,
            next_id: 1,
            pending: HashMap::default(),
            connections: BTreeMap::new(),
            slots,
            lifecycle: Lifecycle::Serving,
            events: VecDeque::new(),
            unix_caller: None,
        }
    }

    /// What the exposure serves.
    pub fn spec(&self) -> &ExposureSpec {
        &self.spec
    }

    /// The next event, if any. Poll until `None` after every input.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When [`handle_timeout`](Exposure::handle_timeout) next has work: the
    /// end of shutdown's wait.
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        match self.lifecycle {
            Lifecycle::Stopping { deadline } => Some(deadline),
            _ => None,
        }
    }

    /// How many requests are accepted and not yet answered.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Whether shutdown has finished.
    pub fn is_stopped(&self) -> bool {
        self.lifecycle == Lifecycle::Stopped
    }

    /// The generation the exposure knows for `receiver`.
    pub fn generation(&self, receiver: ReceiverId) -> u64 {
        match self.slots[receiver].state {
            ReceiverState::Unknown { generation, .. }
            | ReceiverState::Known { generation, .. }
            | ReceiverState::Unavailable { generation } => generation,
        }
    }

    /// Takes one input at `now` (the monotonic clock). See [`Input`]: each
    /// case is the method of the same name.
    pub fn handle_input(&mut self, now: Timestamp, input: Input) {
        match input {
            Input::Request { request, wall } => {
                self.handle_request(now, wall, request);
            }
            Input::Completion {
                request_id,
                completion,
            } => self.handle_completion(request_id, completion),
            Input::Lost(correlation) => self.connection_lost(correlation),
            Input::ReceiverBorn { receiver, stamp } => self.receiver_born(receiver, stamp),
            Input::ReceiverDraining { receiver, stamp } => self.receiver_draining(receiver, stamp),
            Input::ReceiverDissolved { receiver, stamp } => {
                self.receiver_dissolved(receiver, stamp)
            }
            Input::ReceiverAbsent(receiver) => self.receiver_absent(receiver),
            Input::DispatchNotTaken(request_id) => self.dispatch_not_taken(request_id),
            Input::Recalled(request_id) => self.recalled(request_id),
            Input::Stop => self.stop(now),
            Input::Teardown => self.teardown(now),
            Input::Timeout => self.handle_timeout(now),
        }
    }

    /// The request id the next request will take.
    pub fn next_request_id(&self) -> RequestId {
        self.next_id
    }

    /// A framed request arrives at `now` (monotonic), the wall clock
    /// reading `wall`. Every request takes a request id, which is returned;
    /// a refused one is delivered at once, an accepted one is queued.
    pub fn handle_request(
        &mut self,
        _now: Timestamp,
        wall: Timestamp,
        request: Request,
    ) -> RequestId {
        let id = self.next_id;
        self.admit(wall, request);
        id
    }

    /// Whether `request_id` is accepted and not yet terminal.
    pub fn is_pending(&self, request_id: RequestId) -> bool {
        self.pending.contains_key(&request_id)
    }

    fn admit(&mut self, wall: Timestamp, request: Request) {
        let id = self.next_id;
        self.next_id += 1;
        let Request {
            correlation,
            kind,
            digest,
            credential,
            client_id,
        } = request;
        let refuse = |this: &mut Exposure, caller: Principal, member, refusal: Refusal| {
            this.events.push_back(Event::Deliver(Delivery {
                correlation,
                request_id: id,
                client_id: client_id.clone(),
                caller,
                member,
                accepted: wall,
                outcome: Outcome::from(refusal),
            }));
        };

        // 1. The request is a request.
        let (member_name, payload) = match kind {
            RequestKind::Malformed { reason } => {
                let caller = anonymous(&credential);
                return refuse(
                    self,
                    caller,
                    None,
                    Refusal::new(RefusalKind::Malformed, reason),
                );
            }
            RequestKind::Describe => (None, Payload::Json(Vec::new())),
            RequestKind::Call { member, payload } => (Some(member), payload),
        };

        // 2. The caller is established from the exposure's sources.
        let caller = match self.authenticate(wall, &credential) {
            Ok(caller) => caller,
            Err((caller, reason)) => {
                return refuse(
                    self,
                    caller,
                    None,
                    Refusal::new(RefusalKind::Unauthenticated, reason),
                );
            }
        };
        let Some(member_name) = member_name else {
            let held = HeldRoles::read(self.roles.as_ref(), &caller);
            let (roles, members) = self.visible_to(&held, &caller);
            let document = self.describer.describe(&caller, &roles, &members);
            self.events.push_back(Event::Deliver(Delivery {
                correlation,
                request_id: id,
                client_id,
                caller,
                member: None,
                accepted: wall,
                outcome: Outcome::Description(document),
            }));
            return;
        };

        // 3. A digest the request carries is the served one.
        if let Some(sent) = digest.as_deref() {
            if sent != self.spec.digest {
                let refusal = Refusal {
                    served: Some(self.spec.digest.clone()),
                    ..Refusal::new(RefusalKind::DigestMismatch, reasons::digest_mismatch(sent))
                };
                return refuse(self, caller, None, refusal);
            }
        }

        // 4. The surface has the member.
        let Some(member) = self.spec.member_index(&member_name) else {
            let reason = reasons::unknown_member(&member_name);
            return refuse(
                self,
                caller,
                None,
                Refusal::new(RefusalKind::Malformed, reason),
            );
        };

        // 5. The caller holds every role of the row's requires.
        let row = &self.spec.members[member];
        // The role source is asked only when the row requires a role.
        if !row.requires.is_empty()
            && !self.authorized(
                &HeldRoles::read(self.roles.as_ref(), &caller),
                &caller,
                &row.requires,
            )
        {
            let refusal = Refusal {
                requires: Some(row.requires.clone()),
                ..Refusal::new(
                    RefusalKind::Unauthorized,
                    reasons::unauthorized(&row.name, &row.requires),
                )
            };
            return refuse(self, caller, Some(member), refusal);
        }

        // 6. The payload decodes by the request's shape.
        let decoded = match &payload {
            Payload::Json(text) => self.codec.decode(member, text),
            Payload::Proto(message) => self.codec.decode_protobuf(member, message),
        };
        let decoded = match decoded {
            Ok(v) => v,
            Err(reason) => {
                return refuse(
                    self,
                    caller,
                    Some(member),
                    Refusal::new(RefusalKind::Malformed, reason),
                )
            }
        };

        // 7. The exposure is accepting and below its bound.
        if self.lifecycle != Lifecycle::Serving {
            let refusal = Refusal::new(RefusalKind::ShuttingDown, reasons::SHUTTING_DOWN);
            return refuse(self, caller, Some(member), refusal);
        }
        if self.pending.len() >= self.spec.bound {
            return refuse(
                self,
                caller,
                Some(member),
                Refusal::new(RefusalKind::Full, reasons::FULL),
            );
        }

        // 8. The member's receiver is not known to be unavailable.
        let receiver = row.receiver;
        let generation = match self.slots[receiver].state {
            ReceiverState::Unavailable { generation } => {
                // It may be back: ask again, for the next request.
                self.slots[receiver].state = ReceiverState::Unknown {
                    generation: generation + 1,
                    asked: true,
                };
                self.events.push_back(Event::Ask(receiver));
                let reason = reasons::unavailable(&row.name);
                return refuse(
                    self,
                    caller,
                    Some(member),
                    Refusal::new(RefusalKind::Unavailable, reason),
                );
            }
            ReceiverState::Unknown { generation, asked } => {
                if !asked {
                    self.slots[receiver].state = ReceiverState::Unknown {
                        generation,
                        asked: true,
                    };
                    self.events.push_back(Event::Ask(receiver));
                }
                generation
            }
            ReceiverState::Known { generation, .. } => generation,
        };

        // Accepted.
        self.connections.entry(correlation).or_default().pending += 1;
        self.pending.insert(
            id,
            Pending {
                correlation,
                client_id,
                caller,
                member,
                generation,
                place: Place::Queued(decoded),
                accepted: wall,
            },
        );
        self.slots[receiver].queue.push_back(id);
        self.pump(receiver);
    }

    /// The handler of `request_id` ended. A completion for a request the
    /// table no longer holds (already settled or abandoned) changes nothing.
    pub fn handle_completion(&mut self, request_id: RequestId, completion: Completion) {
        let Some(pending) = self.pending.get(&request_id) else {
            return;
        };
        if !pending.place.is_handed() {
            // A completion for a call never handed over is a driver bug;
            // refusing to act keeps the table's accounting whole.
            return;
        }
        let receiver = self.spec.members[pending.member].receiver;
        let outcome = match completion {
            Completion::Returned(v) => Some(Outcome::Result(v)),
            Completion::Failed(e) => Some(Outcome::HandlerError(e)),
            Completion::Violated => Some(Outcome::ServerError),
            Completion::ProcessExits => None,
        };
        self.slots[receiver].forget_handed(request_id);
        match outcome {
            Some(outcome) => self.finish(request_id, outcome),
            None => self.abandon(request_id),
        }
        self.pump(receiver);
        self.maybe_stopped();
    }

    /// The connection `correlation` is gone. Its requests still run, once;
    /// their replies will be dropped. Never a refusal, never a cancel.
    pub fn connection_lost(&mut self, correlation: Correlation) {
        if let Some(conn) = self.connections.get_mut(&correlation) {
            conn.lost = true;
        }
    }

    /// `receiver` announced the incarnation `stamp` at its birth. A stamp the
    /// exposure already knows changes nothing; a new one is a new
    /// generation, which calls queued under an earlier one do not enter.
    pub fn receiver_born(&mut self, receiver: ReceiverId, stamp: u64) {
        let slot = &mut self.slots[receiver];
        let generation = match slot.state {
            ReceiverState::Known { stamp: known, .. } if known == stamp => return,
            ReceiverState::Known { generation, .. } | ReceiverState::Unavailable { generation } => {
                generation + 1
            }
            ReceiverState::Unknown { generation, .. } => generation,
        };
        slot.state = ReceiverState::Known { stamp, generation };
        // A call handed to an earlier incarnation completes under its own
        // generation; it does not hold the new incarnation's slot. One
        // handed to this very incarnation (announced again) still does.
        // Calls handed ahead to the earlier one are asked back: unstarted,
        // they settle as the calls queued under its generation do.
        let earlier: Vec<RequestId> = slot
            .handed
            .iter()
            .filter(|h| h.1 != stamp)
            .map(|h| h.0)
            .collect();
        slot.handed.retain(|h| h.1 == stamp);
        self.recall(receiver, &earlier, RefusalKind::Unavailable);
        self.settle_queue(receiver, |g| g < generation);
        self.pump(receiver);
    }

    /// `receiver`'s incarnation `stamp` dissolved. The departure of an
    /// incarnation a successor already replaced is news to nobody.
    pub fn receiver_dissolved(&mut self, receiver: ReceiverId, stamp: u64) {
        self.receiver_gone(receiver, Some(stamp));
    }

    /// `receiver`'s incarnation `stamp` is draining: its queued calls settle
    /// unavailable, its executing call completes.
    pub fn receiver_draining(&mut self, receiver: ReceiverId, stamp: u64) {
        self.receiver_gone(receiver, Some(stamp));
    }

    /// Asked, `receiver` has no subscriber to answer: it is unavailable.
    pub fn receiver_absent(&mut self, receiver: ReceiverId) {
        self.receiver_gone(receiver, None);
    }

    /// The call `request_id` was handed to an incarnation that did not take
    /// it (draining, or its stamp not the receiver's own): it did not run,
    /// so it and every call queued behind it settle unavailable.
    pub fn dispatch_not_taken(&mut self, request_id: RequestId) {
        let Some(pending) = self.pending.get(&request_id) else {
            return;
        };
        if !pending.place.is_handed() {
            return;
        }
        let receiver = self.spec.members[pending.member].receiver;
        self.slots[receiver].forget_handed(request_id);
        let member = &self.spec.members[pending.member].name;
        let refusal = Refusal::new(RefusalKind::Unavailable, reasons::unavailable(member));
        self.finish(request_id, Outcome::from(refusal));
        self.receiver_gone(receiver, None);
        self.maybe_stopped();
    }

    /// The call `request_id`, asked back with [`Event::Recall`], was taken
    /// back before its worker started it: it settles as a queued call did
    /// when it was asked back (`shutting_down` at a stop, `unavailable` for
    /// a receiver gone). Anything else named here changes nothing.
    pub fn recalled(&mut self, request_id: RequestId) {
        let Some(pending) = self.pending.get(&request_id) else {
            return;
        };
        let Place::Recalling(kind) = pending.place else {
            return;
        };
        let receiver = self.spec.members[pending.member].receiver;
        self.slots[receiver].forget_handed(request_id);
        let refusal = match kind {
            RefusalKind::ShuttingDown => {
                Refusal::new(RefusalKind::ShuttingDown, reasons::SHUTTING_DOWN)
            }
            _ => {
                let member = &self.spec.members[pending.member].name;
                Refusal::new(RefusalKind::Unavailable, reasons::unavailable(member))
            }
        };
        self.finish(request_id, Outcome::from(refusal));
        self.pump(receiver);
        self.maybe_stopped();
    }

    /// `stop()`: admission closes, queued calls are refused `shutting_down`,
    /// executing calls finish and are delivered for up to ten seconds, then
    /// the listener is released. Idempotent.
    pub fn stop(&mut self, now: Timestamp) {
        self.shut_down(now, self.spec.limits.stop_wait);
    }

    /// The serving locus's teardown: the same shutdown with a one-second
    /// wait (a shorter one than a `stop()` already running, never longer).
    pub fn teardown(&mut self, now: Timestamp) {
        self.shut_down(now, self.spec.limits.teardown_wait);
    }

    /// Time passes. At the end of shutdown's wait, calls still executing
    /// are abandoned: their replies dropped, their connections finished
    /// with (a transport failure for their callers), their units released.
    pub fn handle_timeout(&mut self, now: Timestamp) {
        let Lifecycle::Stopping { deadline } = self.lifecycle else {
            return;
        };
        if now < deadline {
            return;
        }
        let mut executing: Vec<RequestId> = self
            .pending
            .iter()
            .filter(|(_, p)| p.place.is_handed())
            .map(|(id, _)| *id)
            .collect();
        // In id order, as an ordered table gave them: the events of a run
        // stay the same from one run to the next.
        executing.sort_unstable();
        for id in executing {
            self.abandon(id);
        }
        for slot in &mut self.slots {
            slot.handed.clear();
        }
        self.maybe_stopped();
    }

    fn shut_down(&mut self, now: Timestamp, wait: Timestamp) {
        let deadline = now.saturating_add(wait);
        match self.lifecycle {
            Lifecycle::Stopped => return,
            Lifecycle::Stopping { deadline: d } if d <= deadline => return,
            _ => {}
        }
        self.lifecycle = Lifecycle::Stopping { deadline };
        for receiver in 0..self.slots.len() {
            let queued: Vec<RequestId> = self.slots[receiver].queue.drain(..).collect();
            for id in queued {
                let refusal = Refusal::new(RefusalKind::ShuttingDown, reasons::SHUTTING_DOWN);
                self.finish(id, Outcome::from(refusal));
            }
            let handed: Vec<RequestId> = self.slots[receiver].handed.iter().map(|h| h.0).collect();
            self.recall(receiver, &handed, RefusalKind::ShuttingDown);
        }
        self.maybe_stopped();
    }

    /// Asks back every call of `ids` handed ahead and not asked back yet,
    /// to settle with `kind` if taken back. Nothing is asked with no call
    /// handed ahead: then a handed call is executing.
    fn recall(&mut self, receiver: ReceiverId, ids: &[RequestId], kind: RefusalKind) {
        if self.spec.limits.dispatch_ahead == 0 {
            return;
        }
        for &request_id in ids {
            let Some(p) = self.pending.get_mut(&request_id) else {
                continue;
            };
            if matches!(p.place, Place::Executing) {
                p.place = Place::Recalling(kind);
                self.events.push_back(Event::Recall {
                    receiver,
                    request_id,
                });
            }
        }
    }

    fn maybe_stopped(&mut self) {
        if matches!(self.lifecycle, Lifecycle::Stopping { .. }) && self.pending.is_empty() {
            self.lifecycle = Lifecycle::Stopped;
            self.events.push_back(Event::StopListening);
        }
    }

    fn receiver_gone(&mut self, receiver: ReceiverId, stamp: Option<u64>) {
        let slot = &mut self.slots[receiver];
        let generation = match slot.state {
            ReceiverState::Known { stamp: known, .. } if stamp.is_some_and(|s| s != known) => {
                return;
            }
            ReceiverState::Known { generation, .. }
            | ReceiverState::Unknown { generation, .. }
            | ReceiverState::Unavailable { generation } => generation,
        };
        slot.state = ReceiverState::Unavailable { generation };
        self.settle_queue(receiver, |_| true);
        let handed: Vec<RequestId> = self.slots[receiver].handed.iter().map(|h| h.0).collect();
        self.recall(receiver, &handed, RefusalKind::Unavailable);
    }

    /// Refuses `unavailable` every call queued for `receiver` whose
    /// generation `stale` names.
    fn settle_queue(&mut self, receiver: ReceiverId, stale: impl Fn(u64) -> bool) {
        let queue = std::mem::take(&mut self.slots[receiver].queue);
        let mut keep = VecDeque::with_capacity(queue.len());
        for id in queue {
            let Some(p) = self.pending.get(&id) else {
                continue;
            };
            if stale(p.generation) {
                let member = &self.spec.members[p.member].name;
                let refusal = Refusal::new(RefusalKind::Unavailable, reasons::unavailable(member));
                self.finish(id, Outcome::from(refusal));
            } else {
                keep.push_back(id);
            }
        }
        self.slots[receiver].queue = keep;
    }

    /// Hands the receiver its next calls while it is known and has room:
    /// one call at a time, or as many ahead as the limits allow.
    fn pump(&mut self, receiver: ReceiverId) {
        while self.pump_one(receiver) {}
    }

    fn pump_one(&mut self, receiver: ReceiverId) -> bool {
        let slot = &mut self.slots[receiver];
        let ReceiverState::Known { stamp, .. } = slot.state else {
            return false;
        };
        if slot.handed.len() > self.spec.limits.dispatch_ahead {
            return false;
        }
        let Some(id) = slot.queue.pop_front() else {
            return false;
        };
        slot.handed.push_back((id, stamp));
        let pending = self
            .pending
            .get_mut(&id)
            .expect("a queued id has its record");
        let Place::Queued(payload) = std::mem::replace(&mut pending.place, Place::Executing) else {
            unreachable!("a queued id is queued");
        };
        let context = ServedContext {
            caller: pending.caller.clone(),
            request_id: id,
            via: self.via.clone(),
            role: self.roles_first[pending.member].clone(),
            exposure: self.name.clone(),
            generation: pending.generation,
        };
        self.events.push_back(Event::Dispatch(Box::new(Dispatch {
            receiver,
            request_id: id,
            member: pending.member,
            payload,
            context,
            generation: pending.generation,
            stamp,
        })));
        true
    }

    /// The one terminal step of an accepted request: the record is removed,
    /// its unit released, its outcome delivered or, on a lost connection,
    /// dropped.
    fn finish(&mut self, id: RequestId, outcome: Outcome) {
        let Some(p) = self.pending.remove(&id) else {
            return;
        };
        if self.release_connection(p.correlation, false) {
            return;
        }
        self.events.push_back(Event::Deliver(Delivery {
            correlation: p.correlation,
            request_id: id,
            client_id: p.client_id,
            caller: p.caller,
            member: Some(p.member),
            accepted: p.accepted,
            outcome,
        }));
    }

    /// Like [`finish`](Exposure::finish) with the reply dropped: the caller
    /// observes a transport failure, so the connection is finished with now.
    fn abandon(&mut self, id: RequestId) {
        let Some(p) = self.pending.remove(&id) else {
            return;
        };
        self.release_connection(p.correlation, true);
    }

    /// Releases one pending request of `correlation`; `drop_reply` abandons
    /// it. Returns whether its reply is dropped: the connection was lost, or
    /// the call abandoned, in which case the transport is told once that the
    /// runtime is finished with the connection.
    fn release_connection(&mut self, correlation: Correlation, drop_reply: bool) -> bool {
        let Some(conn) = self.connections.get_mut(&correlation) else {
            return false;
        };
        conn.pending -= 1;
        if drop_reply && !conn.lost {
            // The caller must see the connection end; any other reply still
            // owed on it is dropped with it.
            conn.lost = true;
            conn.told = true;
            self.events.push_back(Event::CloseConnection(correlation));
        }
        let lost = conn.lost;
        if conn.pending == 0 {
            let told = conn.told;
            self.connections.remove(&correlation);
            if lost && !told {
                self.events.push_back(Event::CloseConnection(correlation));
            }
        }
        lost
    }

    fn authenticate(
        &mut self,
        wall: Timestamp,
        credential: &Credential,
    ) -> Result<Principal, (Principal, String)> {
        match credential {
            Credential::Peer(peer) => {
                // A connection's requests come from one peer: its principal
                // is built once and shared (its texts are reference
                // counted), not formatted again for every request.
                let principal = match &self.unix_caller {
                    Some((known, p)) if known == peer => p.clone(),
                    _ => {
                        let p = Principal::unix(*peer);
                        self.unix_caller = Some((*peer, p.clone()));
                        p
                    }
                };
                if peer.uid < 0 {
                    Err((principal, reasons::UNNAMED_PEER.to_owned()))
                } else {
                    Ok(principal)
                }
            }
            Credential::Bearer(token) => {
                authenticate(self.bearer.as_deref(), token.as_deref(), wall)
                    .map(|(p, _)| p)
                    .map_err(|refusal| {
                        let reason = refusal.reason();
                        match refusal {
                            BearerRefusal::Expired(p) => (p, reason),
                            _ => (Principal::bearer(""), reason),
                        }
                    })
            }
        }
    }

    fn authorized(&self, held: &HeldRoles, caller: &Principal, requires: &[String]) -> bool {
        requires
            .iter()
            .all(|role| held.holds(self.roles.as_ref(), &self.spec.hierarchy, caller, role))
    }

    /// The roles `caller` holds among those the rows require, and the
    /// members it may call: the same test admission's fifth check makes.
    fn visible_to(&self, held: &HeldRoles, caller: &Principal) -> (Vec<String>, Vec<usize>) {
        let roles = self
            .spec
            .required_roles()
            .into_iter()
            .filter(|r| held.holds(self.roles.as_ref(), &self.spec.hierarchy, caller, r))
            .collect();
        let members = (0..self.spec.members.len())
            .filter(|&m| self.authorized(held, caller, &self.spec.members[m].requires))
            .collect();
        (roles, members)
    }
}

/// The caller a request that was not a request is answered as: the peer the
/// kernel named, or a bearer nobody.
fn anonymous(credential: &Credential) -> Principal {
    match credential {
        Credential::Peer(peer) => Principal::unix(*peer),
        Credential::Bearer(_) => Principal::bearer(""),
    }
}

impl Default for PeerCredentials {
    fn default() -> Self {
        PeerCredentials::UNNAMED
    }
}
