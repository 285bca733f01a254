//! The exposure: built from a program's text and an exposure's name, its
//! identity sources a table the caller fills ([`limen_identity`]), fed
//! requests (from a front) and completions, emitting dispatches and
//! deliveries as polled events.
//!
//! A thin wrapper of `limen_core::hale::runtime::Exposure`: every input is
//! the method of the same name, every event one [`limen_exposure_event`].

use std::ffi::{c_char, CString};
use std::sync::Arc;

use limen_core::hale::check_program;
use limen_core::hale::docs::ExposureDescriber;
use limen_core::hale::model::{Listener, Source, TransportKind};
use limen_core::hale::runtime::{
    step, Answer, BearerSource, Completion, Correlation, Delivery, Describer, Dispatch, Event,
    Exposure, ExposureDriver, Handed, Input, Principal, ReceiverId, RoleSource, RoleTable,
    TokenTable,
};
use limen_core::hale::serving::{exposure_spec, ShapeCodec};
use limen_core::wire::grpc::Framing as GrpcFraming;
use limen_core::wire::mcp::Framing;

use crate::{
    bytes, c_text, copy_out, free, guard, guard_value, handle, limen_result, limen_str, put,
    Failure,
};

/// The identity sources an exposure is built with: a bearer token table
/// (token → principal name, with an optional expiry) and a role table
/// (principal name → role). Made by [`limen_identity_new`], filled by
/// [`limen_identity_add_token`] and [`limen_identity_add_grant`], read (not
/// kept) by [`limen_exposure_new`], released by [`limen_identity_free`].
#[derive(Default)]
pub struct limen_identity {
    tokens: Vec<(String, String, Option<u64>)>,
    refused: Option<String>,
    grants: Vec<(String, String)>,
    callbacks: Option<Callbacks>,
}

/// Asked at admission for the principal a bearer token names: write its
/// name (UTF-8, not NUL-terminated) into `name` (`name_cap` bytes) and its
/// length to `*name_len`, and the credential's expiry in nanoseconds since
/// the Unix epoch to `*expires_unix_ns` (leave 0 for none); return
/// `LIMEN_RESULT_OK`. Return `LIMEN_RESULT_NOT_FOUND` when the token names
/// nobody (the refusal is unauthenticated). A name longer than `name_cap`
/// (256 bytes) names nobody. Must not unwind; called on the thread that
/// made the call into the exposure, during it.
pub type limen_bearer_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut std::ffi::c_void,
        token: *const c_char,
        name: *mut u8,
        name_cap: usize,
        name_len: *mut usize,
        expires_unix_ns: *mut u64,
    ) -> limen_result,
>;

/// Asked at admission whether the principal named `principal` (`mode` is
/// `bearer` or `unix`; both NUL-terminated) holds `role` directly. Must not
/// unwind; called on the thread that made the call into the exposure.
pub type limen_role_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut std::ffi::c_void,
        mode: *const c_char,
        principal: *const c_char,
        role: *const c_char,
    ) -> bool,
>;

#[derive(Clone, Copy)]
struct Callbacks {
    bearer: limen_bearer_fn,
    role: limen_role_fn,
    user_data: *mut std::ffi::c_void,
}

// SAFETY: the exposure that holds the callbacks is reached only through
// its handle, from whatever thread the caller makes its calls on; the
// caller promises (limen_identity_set_callbacks) that `user_data` may be
// used from that thread.
unsafe impl Send for Callbacks {}

/// A bearer source that asks the caller's callback.
struct CallbackBearer(Callbacks);

impl CallbackBearer {
    fn ask(&self, token: &str) -> Option<(String, u64)> {
        let f = self.0.bearer?;
        let token = CString::new(token).ok()?;
        let mut name = [0u8; 256];
        let mut len = 0usize;
        let mut expires = 0u64;
        // SAFETY: the callback's contract: it writes at most `name.len()`
        // bytes into `name` and one value to each out pointer, all valid
        // for the call.
        let rv = unsafe {
            f(
                self.0.user_data,
                token.as_ptr(),
                name.as_mut_ptr(),
                name.len(),
                &mut len,
                &mut expires,
            )
        };
        if rv != limen_result::LIMEN_RESULT_OK || len > name.len() {
            return None;
        }
        let name = std::str::from_utf8(&name[..len]).ok()?.to_owned();
        Some((name, expires))
    }
}

impl BearerSource for CallbackBearer {
    fn principal(&self, token: &str) -> Option<Principal> {
        self.ask(token).map(|(name, _)| Principal::bearer(&name))
    }

    fn expiry(&self, token: &str) -> Option<u64> {
        self.ask(token)
            .and_then(|(_, expires)| (expires != 0).then_some(expires))
    }
}

/// A role source that asks the caller's callback.
struct CallbackRoles(Callbacks);

impl RoleSource for CallbackRoles {
    fn holds(&self, principal: &Principal, role: &str) -> bool {
        let Some(f) = self.0.role else {
            return false;
        };
        let (Ok(mode), Ok(name), Ok(role)) = (
            CString::new(&*principal.mode),
            CString::new(&*principal.name),
            CString::new(role),
        ) else {
            return false;
        };
        // SAFETY: the callback's contract: it reads three NUL-terminated
        // texts alive for the call.
        unsafe {
            f(
                self.0.user_data,
                mode.as_ptr(),
                name.as_ptr(),
                role.as_ptr(),
            )
        }
    }
}

/// A bearer source, or none.
pub(crate) type Bearer = Option<Box<dyn BearerSource + Send>>;

impl limen_identity {
    /// The sources an exposure or a hub is built with: the callbacks when
    /// set, else copies of the tables; no bearer source when `kernel` (the
    /// serve site names the kernel's peer credentials).
    pub(crate) fn sources(&self, kernel: bool) -> (Bearer, Box<dyn RoleSource + Send>) {
        let bearer: Bearer = match (kernel, self.callbacks) {
            (true, _) => None,
            (false, Some(callbacks)) => Some(Box::new(CallbackBearer(callbacks))),
            (false, None) => {
                let table = self.tokens.iter().fold(
                    TokenTable::new(self.refused.as_deref()),
                    |t, (token, who, expiry)| match expiry {
                        Some(e) => t.with_expiry(token, who, *e),
                        None => t.with(token, who),
                    },
                );
                Some(Box::new(table))
            }
        };
        let roles: Box<dyn RoleSource + Send> = match self.callbacks {
            Some(callbacks) => Box::new(CallbackRoles(callbacks)),
            None => Box::new(
                self.grants
                    .iter()
                    .fold(RoleTable::new(), |t, (who, role)| t.grant(who, role)),
            ),
        };
        (bearer, roles)
    }
}

/// Makes the identity sources ask the caller at admission instead of the
/// tables: `bearer` for the principal a token names (`NULL`: no token names
/// anyone), `role` for whether a principal holds a role (`NULL`: nobody
/// holds any). The tables filled before are not read once callbacks are
/// set. `user_data` is passed to both, untouched.
///
/// # Safety
/// `identity` must be a live handle. The callbacks must follow their
/// contracts ([`limen_bearer_fn`], [`limen_role_fn`]) and stay callable,
/// with `user_data` valid, for as long as an exposure built from this
/// table lives, on the thread that calls into that exposure.
#[no_mangle]
pub unsafe extern "C" fn limen_identity_set_callbacks(
    identity: *mut limen_identity,
    bearer: limen_bearer_fn,
    role: limen_role_fn,
    user_data: *mut std::ffi::c_void,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promise, passed through.
        let h = unsafe { handle(identity) }?;
        h.callbacks = Some(Callbacks {
            bearer,
            role,
            user_data,
        });
        Ok(())
    })
}

/// Writes a new, empty identity table to `*out`.
///
/// # Safety
/// `out` must be valid for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_identity_new(out: *mut *mut limen_identity) -> limen_result {
    guard(|| {
        let h = Box::new(limen_identity::default());
        // SAFETY: the caller's promise, passed through.
        unsafe { put(out, Box::into_raw(h)) }
    })
}

/// Releases an identity table; `NULL` is ignored.
///
/// # Safety
/// `identity` must be `NULL` or a handle from [`limen_identity_new`] not
/// freed before.
#[no_mangle]
pub unsafe extern "C" fn limen_identity_free(identity: *mut limen_identity) {
    // SAFETY: the caller's promise, passed through.
    guard_value((), || unsafe { free(identity) })
}

/// The bearer token `token` names the principal `name` (both
/// NUL-terminated); `expires_unix_ns` is its expiry in nanoseconds since
/// the Unix epoch, 0 for none.
///
/// # Safety
/// `identity` must be a live handle; `token` and `name` NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn limen_identity_add_token(
    identity: *mut limen_identity,
    token: *const c_char,
    name: *const c_char,
    expires_unix_ns: u64,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(identity) }?;
        // SAFETY: as above.
        let token = unsafe { c_text(token, "the token") }?;
        // SAFETY: as above.
        let name = unsafe { c_text(name, "the name") }?;
        let expiry = (expires_unix_ns != 0).then_some(expires_unix_ns);
        h.tokens.push((token.to_owned(), name.to_owned(), expiry));
        Ok(())
    })
}

/// The bearer source's own reason for refusing a token it names nobody for
/// (NUL-terminated; `NULL` states none).
///
/// # Safety
/// `identity` must be a live handle; `reason` `NULL` or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn limen_identity_set_refused(
    identity: *mut limen_identity,
    reason: *const c_char,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(identity) }?;
        h.refused = if reason.is_null() {
            None
        } else {
            // SAFETY: as above.
            Some(unsafe { c_text(reason, "the reason") }?.to_owned())
        };
        Ok(())
    })
}

/// The principal named `principal` holds `role` directly (both
/// NUL-terminated). A Unix peer's principal is named `uid:<n>`.
///
/// # Safety
/// `identity` must be a live handle; `principal` and `role`
/// NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn limen_identity_add_grant(
    identity: *mut limen_identity,
    principal: *const c_char,
    role: *const c_char,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(identity) }?;
        // SAFETY: as above.
        let principal = unsafe { c_text(principal, "the principal") }?;
        // SAFETY: as above.
        let role = unsafe { c_text(role, "the role") }?;
        h.grants.push((principal.to_owned(), role.to_owned()));
        Ok(())
    })
}

/// The transport an exposure's serve site names.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum limen_transport {
    /// `unix::Rpc`: Unix JSON lines ([`crate::front::limen_front_new_unix`]).
    LIMEN_TRANSPORT_UNIX = 0,
    /// `http::Rpc`: HTTP/1.1 ([`crate::front::limen_front_new_http`]).
    LIMEN_TRANSPORT_HTTP = 1,
    /// `mcp::Rpc`: MCP over HTTP/1.1 ([`crate::front::limen_front_new_mcp`]).
    LIMEN_TRANSPORT_MCP = 2,
    /// Any other (the in-process test transport).
    LIMEN_TRANSPORT_OTHER = 3,
    /// `grpc::Rpc`: gRPC over HTTP/2 ([`crate::front::limen_front_new_grpc`]).
    LIMEN_TRANSPORT_GRPC = 4,
}

/// What an exposure event asks ([`limen_exposure_event`]'s `kind`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum limen_exposure_event_kind {
    /// No event is waiting.
    LIMEN_EXPOSURE_EVENT_NONE = 0,
    /// An outcome for the connection `correlation`: hand it to that
    /// connection's front with [`crate::front::limen_front_deliver`] before
    /// the next call on the exposure (it is dropped otherwise).
    LIMEN_EXPOSURE_EVENT_DELIVER = 1,
    /// Run a call: `receiver`, `member`, `payload` (its JSON), `caller_*`;
    /// report it with [`limen_exposure_complete`] naming `request_id`.
    LIMEN_EXPOSURE_EVENT_DISPATCH = 2,
    /// Ask `receiver` to announce itself: answer
    /// [`limen_exposure_receiver_born`] or [`limen_exposure_receiver_absent`].
    LIMEN_EXPOSURE_EVENT_ASK = 3,
    /// The exposure is finished with the connection `correlation`: abort its
    /// front ([`crate::front::limen_front_abort`]).
    LIMEN_EXPOSURE_EVENT_CLOSE_CONNECTION = 4,
    /// Shutdown is done: close the listener.
    LIMEN_EXPOSURE_EVENT_STOP_LISTENING = 5,
}

/// One exposure event. Its pointers stay valid until the next call on the
/// exposure; the fields a kind does not name are zero or empty.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct limen_exposure_event {
    /// What the event asks.
    pub kind: limen_exposure_event_kind,
    /// DELIVER, CLOSE_CONNECTION: the connection.
    pub correlation: u64,
    /// DELIVER, DISPATCH: the exposure's request id.
    pub request_id: u64,
    /// DISPATCH, ASK: the receiver, by its index (see
    /// [`limen_exposure_receiver_name`]).
    pub receiver: usize,
    /// DISPATCH, ASK: the receiver's name as the serve site binds it
    /// (`self.orders`), NUL-terminated.
    pub receiver_name: *const c_char,
    /// DISPATCH: the member, by index in the exposure's rows.
    pub member: usize,
    /// DISPATCH: the member's name (`Orders::place`), NUL-terminated.
    pub member_name: *const c_char,
    /// DISPATCH: the decoded payload as compact JSON.
    pub payload: limen_str,
    /// DISPATCH, DELIVER: the caller's mode (`bearer`, `unix`),
    /// NUL-terminated.
    pub caller_mode: *const c_char,
    /// DISPATCH, DELIVER: the caller's name, NUL-terminated.
    pub caller_name: *const c_char,
    /// DISPATCH: the receiver's generation the call was admitted under.
    pub generation: u64,
    /// DISPATCH: the incarnation stamp the call is handed to.
    pub stamp: u64,
}

/// An exposure of a program, serving through one transport. Made by
/// [`limen_exposure_new`], released by [`limen_exposure_free`].
pub struct limen_exposure {
    pub(crate) exposure: Exposure,
    pub(crate) transport: limen_transport,
    pub(crate) framing: Arc<Framing>,
    /// A gRPC exposure's framing, which its fronts share.
    pub(crate) grpc: Option<Arc<GrpcFraming>>,
    receivers: Vec<CString>,
    members: Vec<CString>,
    identity: Vec<u8>,
    /// The delivery of the last DELIVER event, until a front takes it.
    pub(crate) delivery: Option<Delivery>,
    payload: Vec<u8>,
    caller_mode: CString,
    caller_name: CString,
}

fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', "\\0")).unwrap_or_default()
}

/// Builds the exposure named `name` (NUL-terminated) of the program text
/// `src` (`src_len` bytes), with the identity sources of `identity` (read,
/// not kept: the caller still frees it), and writes a new handle to `*out`.
///
/// The exposure's bearer source is `identity`'s token table unless its serve
/// site names the kernel's peer credentials (a Unix exposure without a
/// bearer source); its role source is `identity`'s grants. `bound`
/// (NUL-terminated, or `NULL` for the address as written) is the listener's
/// address as described (`127.0.0.1:8080`, a socket's path).
///
/// `LIMEN_RESULT_REFUSED` when the program does not pass its check (the last
/// error is its first diagnostic), `LIMEN_RESULT_NOT_FOUND` when it serves
/// no exposure `name`, `LIMEN_RESULT_UNREADABLE` when the exposure cannot be
/// served. The caller frees the handle with [`limen_exposure_free`].
///
/// # Safety
/// `src` must be valid for `src_len` bytes; `name` NUL-terminated;
/// `identity` a live handle; `bound` `NULL` or NUL-terminated; `out` valid
/// for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_exposure_new(
    src: *const u8,
    src_len: usize,
    name: *const c_char,
    identity: *mut limen_identity,
    bound: *const c_char,
    out: *mut *mut limen_exposure,
) -> limen_result {
    // SAFETY: the caller's promises, passed through.
    guard(|| unsafe { new_exposure(src, src_len, name, None, identity, bound, out) })
}

/// As [`limen_exposure_new`], the exposure `name`'s serve site served over
/// `transport` instead of the transport it names: its surface, rows,
/// identity sources and receivers as written, its connections those of
/// `transport` (as `hale demo --mcp` and `--grpc` serve `public` over MCP
/// and gRPC). `transport` is a [`limen_transport`] number:
/// `LIMEN_TRANSPORT_HTTP`, `_MCP` or `_GRPC`;
/// another is `LIMEN_RESULT_INVALID_ARGUMENT` (a Unix serve site's
/// principals are the kernel's, which a TCP transport has none of).
///
/// # Safety
/// As [`limen_exposure_new`].
#[no_mangle]
pub unsafe extern "C" fn limen_exposure_new_over(
    src: *const u8,
    src_len: usize,
    name: *const c_char,
    transport: u32,
    identity: *mut limen_identity,
    bound: *const c_char,
    out: *mut *mut limen_exposure,
) -> limen_result {
    guard(|| {
        // A number, not the enum: C may pass any, and an enum that holds
        // none of its variants is undefined behaviour in Rust.
        let via = match transport {
            1 => TransportKind::Http,
            2 => TransportKind::Mcp,
            4 => TransportKind::Grpc,
            other => {
                return Err(Failure::new(
                    limen_result::LIMEN_RESULT_INVALID_ARGUMENT,
                    format!("an exposure is served over HTTP, MCP or gRPC, not transport {other}"),
                ))
            }
        };
        // SAFETY: the caller's promises, passed through.
        unsafe { new_exposure(src, src_len, name, Some(via), identity, bound, out) }
    })
}

/// The body of [`limen_exposure_new`] and [`limen_exposure_new_over`]:
/// `over`, when given, replaces the serve site's transport.
///
/// # Safety
/// As [`limen_exposure_new`].
unsafe fn new_exposure(
    src: *const u8,
    src_len: usize,
    name: *const c_char,
    over: Option<TransportKind>,
    identity: *mut limen_identity,
    bound: *const c_char,
    out: *mut *mut limen_exposure,
) -> Result<(), Failure> {
    // SAFETY: the caller's promises, passed through.
    let src = unsafe { crate::text(src, src_len, "the program") }?;
    // SAFETY: as above.
    let name = unsafe { c_text(name, "the exposure's name") }?;
    // SAFETY: as above.
    let ids = unsafe { handle(identity) }?;
    let bound = if bound.is_null() {
        None
    } else {
        // SAFETY: as above.
        Some(unsafe { c_text(bound, "the bound address") }?)
    };
    let mut program = checked_program(src)?;
    let not_found = || {
        Failure::new(
            limen_result::LIMEN_RESULT_NOT_FOUND,
            format!("the program serves no exposure `{name}`"),
        )
    };
    let unreadable = |e: String| Failure::new(limen_result::LIMEN_RESULT_UNREADABLE, e);
    if let Some(over) = over {
        // The program itself is changed, not a copy of the exposure: its
        // description and framing then read the serve site as served.
        let e = program
            .exposures
            .iter_mut()
            .find(|e| e.name.as_deref() == Some(name))
            .ok_or_else(not_found)?;
        if matches!(e.principals, Source::Kernel) {
            return Err(unreadable(format!(
                "`{name}`'s principals are the kernel's peer credentials, which {over:?} has none of"
            )));
        }
        let address = e.listener.as_ref().and_then(|l| l.address.clone());
        e.listener = Some(Listener {
            transport: over,
            address,
        });
    }
    let model = program.exposure(name).ok_or_else(not_found)?;
    let (via, transport) = match model.listener.as_ref().map(|l| &l.transport) {
        Some(TransportKind::Unix) => ("unix", limen_transport::LIMEN_TRANSPORT_UNIX),
        Some(TransportKind::Http) => ("http", limen_transport::LIMEN_TRANSPORT_HTTP),
        Some(TransportKind::Mcp) => ("mcp", limen_transport::LIMEN_TRANSPORT_MCP),
        Some(TransportKind::Grpc) => ("grpc", limen_transport::LIMEN_TRANSPORT_GRPC),
        _ => ("test", limen_transport::LIMEN_TRANSPORT_OTHER),
    };
    let spec = exposure_spec(&program, model, via).map_err(|e| unreadable(e.to_string()))?;
    let codec = ShapeCodec::new(&program, model).map_err(|e| unreadable(e.to_string()))?;
    let grpc = if transport == limen_transport::LIMEN_TRANSPORT_GRPC {
        Some(Arc::new(
            GrpcFraming::new(&program, model).map_err(|e| unreadable(e.to_string()))?,
        ))
    } else {
        None
    };
    // A gRPC exposure's codec reads the protobuf calls its front frames
    // too; another's refuses them (ShapeCodec::with_protobuf).
    let codec = if grpc.is_some() {
        codec.with_protobuf()
    } else {
        codec
    };
    let describer = ExposureDescriber::new(&program, name, bound)
        .map_err(|e| unreadable(format!("cannot describe `{name}`: {e}")))?;
    let (bearer, roles) = ids.sources(matches!(model.principals, Source::Kernel));
    let framing = Arc::new(Framing::new(&spec));
    let receivers = spec.receivers.iter().map(|r| c_string(r)).collect();
    let members = spec.members.iter().map(|m| c_string(&m.name)).collect();
    let identity = spec.identity().into_bytes();
    let exposure = Exposure::new(
        spec,
        bearer,
        roles,
        Box::new(codec),
        Box::new(describer) as Box<dyn Describer + Send>,
    );
    let h = Box::new(limen_exposure {
        exposure,
        transport,
        framing,
        grpc,
        receivers,
        members,
        identity,
        delivery: None,
        payload: Vec::new(),
        caller_mode: CString::default(),
        caller_name: CString::default(),
    });
    // SAFETY: as above.
    unsafe { put(out, Box::into_raw(h)) }
}

/// Releases an exposure; `NULL` is ignored. Requests still pending are
/// dropped unanswered.
///
/// # Safety
/// `exposure` must be `NULL` or a handle from [`limen_exposure_new`] not
/// freed before.
#[no_mangle]
pub unsafe extern "C" fn limen_exposure_free(exposure: *mut limen_exposure) {
    // SAFETY: the caller's promise, passed through.
    guard_value((), || unsafe { free(exposure) })
}

/// The transport the exposure is served over (its serve site's, or the
/// one [`limen_exposure_new_over`] named), which says which front its
/// connections take; `LIMEN_TRANSPORT_OTHER` for a `NULL` handle.
///
/// # Safety
/// `exposure` must be `NULL` or a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_exposure_transport(
    exposure: *const limen_exposure,
) -> limen_transport {
    guard_value(limen_transport::LIMEN_TRANSPORT_OTHER, || {
        // SAFETY: the caller's promise, passed through.
        unsafe { exposure.as_ref() }.map_or(limen_transport::LIMEN_TRANSPORT_OTHER, |h| h.transport)
    })
}

/// Writes the exposure's identity (`<surface>@<digest>/<name>`) into `buf`,
/// its length to `*written`.
///
/// # Safety
/// `exposure` must be a live handle; `buf` valid for `buf_cap` bytes;
/// `written` for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_exposure_identity(
    exposure: *mut limen_exposure,
    buf: *mut u8,
    buf_cap: usize,
    written: *mut usize,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(exposure) }?;
        // SAFETY: as above.
        unsafe { copy_out(&h.identity, buf, buf_cap, written) }
    })
}

/// How many receivers the exposure binds; 0 for a `NULL` handle.
///
/// # Safety
/// `exposure` must be `NULL` or a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_exposure_receiver_count(exposure: *const limen_exposure) -> usize {
    guard_value(0, || {
        // SAFETY: the caller's promise, passed through.
        unsafe { exposure.as_ref() }.map_or(0, |h| h.receivers.len())
    })
}

/// The name of receiver `receiver` as the serve site binds it
/// (`self.orders`), NUL-terminated and valid until the exposure is freed;
/// `NULL` past the end.
///
/// # Safety
/// `exposure` must be `NULL` or a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_exposure_receiver_name(
    exposure: *const limen_exposure,
    receiver: usize,
) -> *const c_char {
    guard_value(std::ptr::null(), || {
        // SAFETY: the caller's promise, passed through.
        unsafe { exposure.as_ref() }
            .and_then(|h| h.receivers.get(receiver))
            .map_or(std::ptr::null(), |n| n.as_ptr())
    })
}

/// The C ABI's side of the core's pump ([`step`]): it keeps the one event
/// a step acted on for [`limen_exposure_poll_event`] to lend out, and
/// leaves every answer to the caller — a dispatch is taken (the caller
/// runs it or reports it not taken), an ask is answered later
/// (`limen_exposure_receiver_born`/`_absent`), a recall declined.
struct Capture(Option<Event>);

impl ExposureDriver for Capture {
    fn deliver(&mut self, delivery: Delivery) {
        self.0 = Some(Event::Deliver(delivery));
    }

    fn dispatch(&mut self, dispatch: Box<Dispatch>) -> Handed {
        self.0 = Some(Event::Dispatch(dispatch));
        Handed::Taken
    }

    fn ask(&mut self, receiver: ReceiverId) -> Answer {
        self.0 = Some(Event::Ask(receiver));
        Answer::Later
    }

    fn close_connection(&mut self, correlation: Correlation) {
        self.0 = Some(Event::CloseConnection(correlation));
    }

    fn stop_listening(&mut self) {
        self.0 = Some(Event::StopListening);
    }
}

/// Takes the next event into `*out` (kind `LIMEN_EXPOSURE_EVENT_NONE` when
/// none waits). Poll until NONE after every input. A DELIVER event's
/// delivery is held by the exposure until a front takes it or the next call
/// on the exposure drops it.
///
/// # Safety
/// `exposure` must be a live handle; `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_exposure_poll_event(
    exposure: *mut limen_exposure,
    out: *mut limen_exposure_event,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(exposure) }?;
        h.delivery = None;
        let mut ev = limen_exposure_event {
            kind: limen_exposure_event_kind::LIMEN_EXPOSURE_EVENT_NONE,
            correlation: 0,
            request_id: 0,
            receiver: 0,
            receiver_name: std::ptr::null(),
            member: 0,
            member_name: std::ptr::null(),
            payload: limen_str::EMPTY,
            caller_mode: std::ptr::null(),
            caller_name: std::ptr::null(),
            generation: 0,
            stamp: 0,
        };
        // One step of the core's pump at a time, the event it acts on
        // captured for the caller. A recall is only ever asked of a call
        // handed ahead, and the ABI's exposures hand none ahead
        // (`ExposureLimits::dispatch_ahead` 0); were one asked, the capture
        // declines it (always correct: the call runs and completes as
        // usual) and captures nothing, so it is stepped over. The capture
        // feeds no input back (an ask is answered by the caller, later), so
        // the pump never reads a time and none is made up beyond this 0.
        let event = loop {
            let mut capture = Capture(None);
            if !step(&mut h.exposure, 0, &mut capture) {
                break None;
            }
            if capture.0.is_some() {
                break capture.0;
            }
        };
        match event {
            None => {}
            Some(Event::Deliver(d)) => {
                ev.kind = limen_exposure_event_kind::LIMEN_EXPOSURE_EVENT_DELIVER;
                ev.correlation = d.correlation;
                ev.request_id = d.request_id;
                h.caller_mode = c_string(&d.caller.mode);
                h.caller_name = c_string(&d.caller.name);
                ev.caller_mode = h.caller_mode.as_ptr();
                ev.caller_name = h.caller_name.as_ptr();
                h.delivery = Some(d);
            }
            Some(Event::Dispatch(d)) => {
                ev.kind = limen_exposure_event_kind::LIMEN_EXPOSURE_EVENT_DISPATCH;
                ev.request_id = d.request_id;
                ev.receiver = d.receiver;
                ev.receiver_name = h
                    .receivers
                    .get(d.receiver)
                    .map_or(std::ptr::null(), |n| n.as_ptr());
                ev.member = d.member;
                ev.member_name = h
                    .members
                    .get(d.member)
                    .map_or(std::ptr::null(), |n| n.as_ptr());
                h.payload = serde_json::to_vec(&d.payload).unwrap_or_default();
                ev.payload = limen_str::lend(&h.payload);
                h.caller_mode = c_string(&d.context.caller.mode);
                h.caller_name = c_string(&d.context.caller.name);
                ev.caller_mode = h.caller_mode.as_ptr();
                ev.caller_name = h.caller_name.as_ptr();
                ev.generation = d.generation;
                ev.stamp = d.stamp;
            }
            Some(Event::Ask(r)) => {
                ev.kind = limen_exposure_event_kind::LIMEN_EXPOSURE_EVENT_ASK;
                ev.receiver = r;
                ev.receiver_name = h.receivers.get(r).map_or(std::ptr::null(), |n| n.as_ptr());
            }
            Some(Event::CloseConnection(c)) => {
                ev.kind = limen_exposure_event_kind::LIMEN_EXPOSURE_EVENT_CLOSE_CONNECTION;
                ev.correlation = c;
            }
            Some(Event::StopListening) => {
                ev.kind = limen_exposure_event_kind::LIMEN_EXPOSURE_EVENT_STOP_LISTENING;
            }
            Some(Event::Recall { .. }) => unreachable!("declined, never captured"),
        }
        // SAFETY: as above.
        unsafe { put(out, ev) }
    })
}

/// One input to the exposure behind `exposure`: the handle checked, the
/// delivery it lent dropped (its pointers last until the next call), the
/// machine stepped. An input that comes with a `now` (stop, teardown,
/// timeout) steps it through `Exposure::handle_input`, the server's one
/// verb; the exports whose C signature carries no time (a lost
/// connection, a receiver's news, a dispatch not taken, a completion)
/// call the per-input method rather than make a `now` up, and a request
/// keeps `handle_request`, which returns the id `limen_front_submit`
/// writes out.
///
/// # Safety
/// `exposure` must be `NULL` or a live handle.
unsafe fn input(exposure: *mut limen_exposure, step: impl FnOnce(&mut Exposure)) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promise, passed through.
        let h = unsafe { handle(exposure) }?;
        h.delivery = None;
        step(&mut h.exposure);
        Ok(())
    })
}

/// [`input`] about receiver `receiver`, which must be one the exposure
/// binds.
///
/// # Safety
/// `exposure` must be `NULL` or a live handle.
unsafe fn receiver_input(
    exposure: *mut limen_exposure,
    receiver: usize,
    step: impl FnOnce(&mut Exposure),
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promise, passed through.
        let h = unsafe { handle(exposure) }?;
        h.delivery = None;
        check_receiver(h, receiver)?;
        step(&mut h.exposure);
        Ok(())
    })
}

fn check_receiver(h: &limen_exposure, receiver: usize) -> Result<(), Failure> {
    if receiver < h.receivers.len() {
        Ok(())
    } else {
        Err(Failure::new(
            limen_result::LIMEN_RESULT_NOT_FOUND,
            format!("the exposure has {} receivers", h.receivers.len()),
        ))
    }
}

/// How a handler ended ([`limen_exposure_complete`]'s `how`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum limen_completion {
    /// It returned: `body` is its response as JSON.
    LIMEN_COMPLETION_RETURNED = 0,
    /// It failed with its declared error: `body` is the error as JSON.
    LIMEN_COMPLETION_FAILED = 1,
    /// It violated a closure and supervision let execution return (the
    /// server error); `body` is ignored.
    LIMEN_COMPLETION_VIOLATED = 2,
    /// It violated and supervision exits the process; `body` is ignored.
    LIMEN_COMPLETION_PROCESS_EXITS = 3,
}

/// The call `request_id` ended: `how` is a [`limen_completion`] number,
/// `body` (`body_len` bytes, copied) its response or error as JSON.
/// `LIMEN_RESULT_INVALID_ARGUMENT` for a `how` that names no completion.
///
/// # Safety
/// `exposure` must be a live handle; `body` valid for `body_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn limen_exposure_complete(
    exposure: *mut limen_exposure,
    request_id: u64,
    how: u32,
    body: *const u8,
    body_len: usize,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(exposure) }?;
        h.delivery = None;
        // SAFETY: as above.
        let body = unsafe { bytes(body, body_len) }?;
        let completion = match how {
            0 => Completion::Returned(body.to_vec()),
            1 => Completion::Failed(body.to_vec()),
            2 => Completion::Violated,
            3 => Completion::ProcessExits,
            other => {
                return Err(Failure::new(
                    limen_result::LIMEN_RESULT_INVALID_ARGUMENT,
                    format!("{other} names no completion"),
                ))
            }
        };
        h.exposure.handle_completion(request_id, completion);
        Ok(())
    })
}

/// The connection `correlation` is gone: its requests run, their replies
/// are dropped.
///
/// # Safety
/// `exposure` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_exposure_connection_lost(
    exposure: *mut limen_exposure,
    correlation: u64,
) -> limen_result {
    // SAFETY: the caller's promise, passed through.
    unsafe { input(exposure, |e| e.connection_lost(correlation)) }
}

/// Receiver `receiver` announces its incarnation `stamp` (the answer to
/// an ASK; a receiver restarted announces a new stamp).
///
/// # Safety
/// `exposure` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_exposure_receiver_born(
    exposure: *mut limen_exposure,
    receiver: usize,
    stamp: u64,
) -> limen_result {
    // SAFETY: the caller's promise, passed through.
    unsafe { receiver_input(exposure, receiver, |e| e.receiver_born(receiver, stamp)) }
}

/// Receiver `receiver`'s incarnation `stamp` drains.
///
/// # Safety
/// `exposure` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_exposure_receiver_draining(
    exposure: *mut limen_exposure,
    receiver: usize,
    stamp: u64,
) -> limen_result {
    // SAFETY: the caller's promise, passed through.
    unsafe { receiver_input(exposure, receiver, |e| e.receiver_draining(receiver, stamp)) }
}

/// Receiver `receiver`'s incarnation `stamp` dissolved.
///
/// # Safety
/// `exposure` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_exposure_receiver_dissolved(
    exposure: *mut limen_exposure,
    receiver: usize,
    stamp: u64,
) -> limen_result {
    // SAFETY: the caller's promise, passed through.
    unsafe {
        receiver_input(exposure, receiver, |e| {
            e.receiver_dissolved(receiver, stamp)
        })
    }
}

/// Asked, receiver `receiver` has nobody to answer.
///
/// # Safety
/// `exposure` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_exposure_receiver_absent(
    exposure: *mut limen_exposure,
    receiver: usize,
) -> limen_result {
    // SAFETY: the caller's promise, passed through.
    unsafe { receiver_input(exposure, receiver, |e| e.receiver_absent(receiver)) }
}

/// The dispatched call `request_id` was not taken (its stamp is not the
/// receiver's incarnation).
///
/// # Safety
/// `exposure` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_exposure_dispatch_not_taken(
    exposure: *mut limen_exposure,
    request_id: u64,
) -> limen_result {
    // SAFETY: the caller's promise, passed through.
    unsafe { input(exposure, |e| e.dispatch_not_taken(request_id)) }
}

/// `stop()` at `now` (the monotonic clock, nanoseconds): refuse new
/// requests, wait for the pending ones up to the stop wait.
///
/// # Safety
/// `exposure` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_exposure_stop(
    exposure: *mut limen_exposure,
    now: u64,
) -> limen_result {
    // SAFETY: the caller's promise, passed through.
    unsafe { input(exposure, |e| e.handle_input(now, Input::Stop)) }
}

/// The serving locus's teardown at `now`.
///
/// # Safety
/// `exposure` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_exposure_teardown(
    exposure: *mut limen_exposure,
    now: u64,
) -> limen_result {
    // SAFETY: the caller's promise, passed through.
    unsafe { input(exposure, |e| e.handle_input(now, Input::Teardown)) }
}

/// Time passed: `now` is at or past [`limen_exposure_poll_timeout`]'s
/// deadline.
///
/// # Safety
/// `exposure` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_exposure_handle_timeout(
    exposure: *mut limen_exposure,
    now: u64,
) -> limen_result {
    // SAFETY: the caller's promise, passed through.
    unsafe { input(exposure, |e| e.handle_input(now, Input::Timeout)) }
}

/// Whether the exposure has a deadline; if so it is written to
/// `*deadline` (the monotonic clock, nanoseconds). `false` for a `NULL`
/// handle.
///
/// # Safety
/// `exposure` must be `NULL` or a live handle; `deadline` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_exposure_poll_timeout(
    exposure: *const limen_exposure,
    deadline: *mut u64,
) -> bool {
    guard_value(false, || {
        // SAFETY: the caller's promise, passed through.
        let Some(h) = (unsafe { exposure.as_ref() }) else {
            return false;
        };
        match h.exposure.poll_timeout() {
            // SAFETY: as above.
            Some(t) => unsafe { put(deadline, t) }.is_ok(),
            None => false,
        }
    })
}

/// Whether shutdown has finished; `true` for a `NULL` handle.
///
/// # Safety
/// `exposure` must be `NULL` or a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_exposure_is_stopped(exposure: *const limen_exposure) -> bool {
    guard_value(true, || {
        // SAFETY: the caller's promise, passed through.
        unsafe { exposure.as_ref() }.is_none_or(|h| h.exposure.is_stopped())
    })
}

/// The program `src` once it passes its check, or `LIMEN_RESULT_REFUSED`
/// naming its first diagnostic: what an exposure and a hub are built from.
pub(crate) fn checked_program(src: &str) -> Result<limen_core::hale::model::Program, Failure> {
    let checked = check_program("program.hl", src);
    let passed = checked.passed();
    checked.program.filter(|_| passed).ok_or_else(|| {
        let first = checked
            .errors
            .first()
            .map(|d| format!("{}:{}:{}: {}", d.file, d.line, d.col, d.message))
            .unwrap_or_default();
        Failure::new(
            limen_result::LIMEN_RESULT_REFUSED,
            format!("the program does not pass its check: {first}"),
        )
    })
}
