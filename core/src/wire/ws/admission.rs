//! What both hubs (`ws::Hub`, `udp::Hub`) ask of their sources: who a token
//! names and until when, whether a caller may read a stream, the role
//! source's revision, the caller's document, and a subscribe's checks in
//! their order (§ Streams, admission).

use crate::hale::runtime::bearer::authenticate;
use crate::hale::runtime::{
    BearerSource, Describer, HeldRoles, Principal, Refusal, RefusalKind, RoleSource,
};
use crate::Timestamp;

use super::hub_spec::{HubSpec, STOPPING_REASON};

/// A hub's bearer source, role source and describer.
pub(crate) struct Sources {
    pub(crate) bearer: Option<Box<dyn BearerSource + Send>>,
    pub(crate) roles: Box<dyn RoleSource + Send>,
    pub(crate) describer: Box<dyn Describer + Send>,
}

impl Sources {
    /// Who `token` names, and when its credential expires on the monotonic
    /// clock (the bearer source's instant, read against `wall`); or the
    /// unauthenticated reason. A credential already past its expiry names
    /// nobody: a spent credential admits nothing.
    pub(crate) fn authenticate(
        &self,
        now: Timestamp,
        wall: Timestamp,
        token: Option<&str>,
    ) -> Result<(Principal, Option<Timestamp>), String> {
        match authenticate(self.bearer.as_deref(), token, wall) {
            Ok((p, Some(e))) => Ok((p, Some(now.saturating_add(e - wall)))),
            Ok((p, None)) => Ok((p, None)),
            Err(refusal) => Err(refusal.subscribe_reason()),
        }
    }

    /// The caller's document: the roles it holds among those the rows
    /// require, no members.
    pub(crate) fn describe(&self, spec: &HubSpec, caller: &Principal) -> Vec<u8> {
        let held = HeldRoles::read(self.roles.as_ref(), caller);
        let roles: Vec<String> = spec
            .required_roles()
            .into_iter()
            .filter(|r| held.holds(self.roles.as_ref(), &spec.hierarchy, caller, r))
            .collect();
        self.describer.describe(caller, &roles, &[])
    }

    /// Whether `caller` holds every role row `stream` requires.
    pub(crate) fn authorized(&self, spec: &HubSpec, caller: &Principal, stream: usize) -> bool {
        let held = HeldRoles::read(self.roles.as_ref(), caller);
        spec.streams[stream]
            .requires
            .iter()
            .all(|r| held.holds(self.roles.as_ref(), &spec.hierarchy, caller, r))
    }

    /// The role source's revision for `caller` as its grants state it (0
    /// when it states none).
    pub(crate) fn revision(&self, caller: &Principal) -> u64 {
        self.roles.revision(caller)
    }

    /// A subscribe's checks after the caller is named: the hub binds a
    /// stream for `topic` (else malformed, `unknown_topic: T`), the caller
    /// holds its requires (else unauthorized, with `requires`), the hub is
    /// not stopping (else shutting_down). The row, when admitted.
    pub(crate) fn admit(
        &self,
        spec: &HubSpec,
        caller: &Principal,
        topic: &str,
        stopped: bool,
    ) -> Result<usize, Refusal> {
        let Some(stream) = spec.stream(topic) else {
            return Err(Refusal::new(
                RefusalKind::Malformed,
                format!("unknown_topic: {topic}"),
            ));
        };
        if !self.authorized(spec, caller, stream) {
            let requires = spec.streams[stream].requires.clone();
            return Err(Refusal {
                requires: Some(requires.clone()),
                ..Refusal::new(
                    RefusalKind::Unauthorized,
                    format!("{topic} requires {}", requires.join(", ")),
                )
            });
        }
        if stopped {
            return Err(Refusal::new(RefusalKind::ShuttingDown, STOPPING_REASON));
        }
        Ok(stream)
    }
}
