//! The exposure runtime (§ Serving, § The runtime boundaries, § Identity
//! sources, § Outcomes, § The request lifecycle, § Receiver failure and
//! generations): one pure machine every transport drives the same way.
//!
//! - [`exposure`]: the [`Exposure`] machine — admission's eight checks,
//!   dispatch one call per receiver at a time, the pending table that owns
//!   completion, shutdown and generations.
//! - [`sources`]: principals, credentials, the bearer and role source
//!   traits and static tables.
//! - [`outcome`]: the five outcomes, the refusal kinds and their fixed
//!   encodings.
//! - [`unix_reply`]: the Unix reply line (§ Outcomes' Unix column), which
//!   the fixture and `wire::unix` both write.
//! - [`pump`](mod@pump): the one exposure pump ([`ExposureDriver`], [`pump()`],
//!   [`step`]) the server, the replay and the C ABI drive an exposure by.
//! - [`fixture`]: `std::api::test::Rpc`, the in-process transport.

pub mod bearer;
pub mod exposure;
pub mod fixture;
pub mod outcome;
pub mod pump;
#[cfg(any(test, feature = "arbitrary"))]
pub mod sim;
pub mod sources;
pub mod unix_reply;

pub use exposure::{
    Completion, Correlation, Delivery, Describer, Dispatch, Event, Exposure, ExposureLimits,
    ExposureSpec, Input, MemberSpec, Payload, PayloadCodec, ReceiverId, Request, RequestId,
    RequestKind, ServedContext,
};
pub use fixture::{BatchCall, FixtureRpc, Receiver, Supervision};
pub use outcome::{Outcome, Refusal, RefusalKind};
pub use pump::{pump, step, Answer, ExposureDriver, Handed};
pub use sources::{
    BearerSource, Credential, Grants, HeldRoles, PeerCredentials, Principal, PrincipalData,
    RoleHierarchy, RoleSource, RoleTable, SharedRoles, SharedTokens, TokenTable,
};
