//! The role and bearer sources of the witness's hub, shared between the
//! hub that reads them and whatever changes them while it is served (the
//! demo's control socket: a revoke, an expiry; the replay's scenario
//! steps), read as the static tables they wrap.

use std::sync::{Arc, Mutex, MutexGuard};

use limen_core::hale::runtime::{
    BearerSource, Grants, Principal, RoleSource, RoleTable, TokenTable,
};

/// A role source that can change while a hub holds it (a revoke from the
/// control socket), read as the static table it wraps.
#[derive(Clone, Debug, Default)]
pub struct SharedRoles(pub Arc<Mutex<RoleTable>>);

impl SharedRoles {
    /// The table, locked: to read it, or to change it in place.
    pub fn table(&self) -> MutexGuard<'_, RoleTable> {
        // The table is plain data: a poisoned lock still holds a whole one.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl RoleSource for SharedRoles {
    fn holds(&self, principal: &Principal, role: &str) -> bool {
        self.table().holds(principal, role)
    }
    fn grants(&self, principal: &Principal) -> Option<Grants> {
        self.table().grants(principal)
    }
    fn revision(&self, principal: &Principal) -> u64 {
        self.table().revision(principal)
    }
}

/// A bearer source that can change while a hub holds it (a credential
/// given an expiry from the control socket).
#[derive(Clone, Debug, Default)]
pub struct SharedTokens(pub Arc<Mutex<TokenTable>>);

impl SharedTokens {
    /// The table, locked: to read it, or to change it in place.
    pub fn table(&self) -> MutexGuard<'_, TokenTable> {
        // As for the roles: a poisoned lock still holds a whole table.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl BearerSource for SharedTokens {
    fn principal(&self, token: &str) -> Option<Principal> {
        self.table().principal(token)
    }
    fn refused(&self) -> Option<String> {
        self.table().refused()
    }
    fn expiry(&self, token: &str) -> Option<u64> {
        self.table().expiry(token)
    }
}
