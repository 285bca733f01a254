//! Principals and the identity sources (§ Identity sources).
//!
//! A transport hands the runtime a [`Credential`]; the exposure's
//! [`BearerSource`] (or the peer's kernel credentials) names the
//! [`Principal`], and its [`RoleSource`] says which roles that principal
//! holds. Both are traits so a deployment can plug in any provider; the
//! static tables here ([`TokenTable`], [`RoleTable`]) are ready to use.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::Timestamp;

/// Who a request comes from, as the exposure established it: one shared
/// record ([`PrincipalData`], read through `Deref`), since every accepted
/// request's context and reply hold a copy, often on another thread, and a
/// copy is then one reference count rather than one a text.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Principal(Arc<PrincipalData>);

/// What a [`Principal`] says.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PrincipalData {
    /// `"bearer"` for a bearer source's principal, `"unix"` for a peer's
    /// kernel credentials.
    pub mode: String,
    /// The principal's name: the bearer source's, or `uid:<n>`.
    pub name: String,
    /// Further fields the source sets (a Unix peer's `uid`, `gid`, `pid`),
    /// in the order they are written.
    pub fields: Vec<(String, i64)>,
    /// A Unix peer's supplementary groups (empty for any other principal,
    /// or when the kernel's were not read), for a role source to read. Not
    /// written in the principal's JSON: the description's principal has no
    /// member for them.
    pub groups: Vec<u32>,
}

impl std::ops::Deref for Principal {
    type Target = PrincipalData;
    fn deref(&self) -> &PrincipalData {
        &self.0
    }
}

impl From<PrincipalData> for Principal {
    fn from(data: PrincipalData) -> Principal {
        Principal(Arc::new(data))
    }
}

impl std::fmt::Debug for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Principal")
            .field("mode", &self.mode)
            .field("name", &self.name)
            .field("fields", &self.fields)
            .field("groups", &self.groups)
            .finish()
    }
}

impl Principal {
    /// A principal of `mode` and `name` with further `fields`.
    pub fn new(mode: &str, name: &str, fields: Vec<(String, i64)>) -> Principal {
        PrincipalData {
            mode: mode.to_owned(),
            name: name.to_owned(),
            fields,
            groups: Vec::new(),
        }
        .into()
    }

    /// The record, to change (copied first when it is shared).
    pub fn data_mut(&mut self) -> &mut PrincipalData {
        Arc::make_mut(&mut self.0)
    }

    /// A bearer principal of `name`.
    pub fn bearer(name: &str) -> Principal {
        Principal::new("bearer", name, Vec::new())
    }

    /// The principal a Unix peer's kernel credentials name: `uid:<n>`, its
    /// uid, gid and pid, and its supplementary groups.
    pub fn unix(peer: PeerCredentials) -> Principal {
        let mut p = Principal::new(
            "unix",
            &format!("uid:{}", peer.uid),
            vec![
                ("uid".to_owned(), peer.uid),
                ("gid".to_owned(), peer.gid),
                ("pid".to_owned(), peer.pid),
            ],
        );
        if let Some(groups) = peer.groups {
            p.data_mut().groups = groups.to_vec();
        }
        p
    }

    /// Appends the principal as the JSON object a reply's `caller` carries
    /// (what [`to_json`](Principal::to_json) serializes to, written without
    /// building a map: it is on every reply's path).
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"mode\":");
        crate::json::write_string(&self.mode, out);
        out.extend_from_slice(b",\"name\":");
        crate::json::write_string(&self.name, out);
        for (k, v) in self.fields.iter() {
            out.push(b',');
            crate::json::write_string(k, out);
            out.push(b':');
            if *v < 0 {
                out.push(b'-');
            }
            write_u64(v.unsigned_abs(), out);
        }
        out.push(b'}');
    }

    /// The principal as the JSON object a reply's `caller` carries.
    pub fn to_json(&self) -> serde_json::Value {
        let mut object = serde_json::Map::new();
        object.insert("mode".into(), (*self.mode).into());
        object.insert("name".into(), (*self.name).into());
        for (k, v) in self.fields.iter() {
            object.insert(k.clone(), (*v).into());
        }
        serde_json::Value::Object(object)
    }

    /// Reads a principal from its JSON object (`{"mode": …, "name": …, …}`),
    /// as `hale check --caller` takes one. Integer fields are kept in order.
    pub fn from_json(value: &serde_json::Value) -> Result<Principal, String> {
        let object = value
            .as_object()
            .ok_or("a principal is a JSON object with mode and name")?;
        let text = |key: &str| {
            object
                .get(key)
                .and_then(|v| v.as_str())
                .ok_or_else(|| format!("a principal's `{key}` is a string"))
        };
        let mut fields = Vec::new();
        for (k, v) in object {
            if k == "mode" || k == "name" {
                continue;
            }
            let n = v
                .as_i64()
                .ok_or_else(|| format!("a principal's `{k}` is an integer"))?;
            fields.push((k.clone(), n));
        }
        Ok(Principal::new(text("mode")?, text("name")?, fields))
    }
}

/// Appends `n` in decimal: replies write a few integers each, and the
/// formatting machinery costs more than the digits.
pub(crate) fn write_u64(n: u64, out: &mut Vec<u8>) {
    let mut digits = [0u8; 20];
    out.extend_from_slice(decimal(n, &mut digits).as_bytes());
}

/// `n` in decimal, written at the end of `digits`: the text it takes
/// there. For a writer that copies it into a frame of its own (a hub's
/// event, one per subscriber).
pub(crate) fn decimal(mut n: u64, digits: &mut [u8; 20]) -> &str {
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    std::str::from_utf8(&digits[i..]).expect("ASCII digits")
}

/// A Unix peer's kernel credentials (SO_PEERCRED). A peer the kernel will
/// not name has uid, gid and pid -1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PeerCredentials {
    /// The peer's user id, or -1.
    pub uid: i64,
    /// The peer's group id, or -1.
    pub gid: i64,
    /// The peer's process id, or -1.
    pub pid: i64,
    /// The peer's supplementary groups as the kernel gave them
    /// (SO_PEERGROUPS), or `None` when they were not read. A driver hands
    /// each distinct set once for the life of the process, so the
    /// credentials stay `Copy`.
    pub groups: Option<&'static [u32]>,
}

impl PeerCredentials {
    /// The credentials of a peer the kernel did not name.
    pub const UNNAMED: PeerCredentials = PeerCredentials {
        uid: -1,
        gid: -1,
        pid: -1,
        groups: None,
    };
}

/// What a transport read about who sent a request.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Credential {
    /// A bearer token (`Authorization: Bearer <token>`), or `None` when the
    /// request carried none or carried another scheme.
    Bearer(Option<String>),
    /// The kernel credentials of a Unix socket peer.
    Peer(PeerCredentials),
}

/// A bearer source names the principal a token stands for
/// (`std::api::BearerSource`).
pub trait BearerSource {
    /// The principal `token` names, or `None` when it names nobody.
    fn principal(&self, token: &str) -> Option<Principal>;

    /// The source's own reason for refusing a token it names nobody for
    /// (`refused()`); `None` when it states none.
    fn refused(&self) -> Option<String> {
        None
    }

    /// When `token` expires, as nanoseconds since the Unix epoch, `None` for
    /// no expiry (`std::api::ExpiringBearerSource`). A source that states no
    /// expiry keeps the default: its credentials never expire.
    fn expiry(&self, token: &str) -> Option<u64> {
        let _ = token;
        None
    }
}

/// A principal's grants and the role source's revision, read as one pair
/// (`std::api::Grants`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grants {
    /// The roles the principal holds directly.
    pub roles: Vec<String>,
    /// The source's revision these grants were read at (0: unstated).
    pub revision: u64,
}

/// A role source says which roles a principal holds (`std::api::RoleSource`,
/// with `grants` of `std::api::RevisedRoleSource`).
pub trait RoleSource {
    /// Whether `principal` holds `role` directly.
    fn holds(&self, principal: &Principal, role: &str) -> bool;

    /// The principal's direct grants and the source's revision as one pair,
    /// when the source states them (a `RevisedRoleSource`); `None` makes the
    /// exposure ask [`holds`](RoleSource::holds) once per role instead.
    fn grants(&self, principal: &Principal) -> Option<Grants> {
        let _ = principal;
        None
    }

    /// The roles of [`grants`](RoleSource::grants), lent rather than copied
    /// when the source keeps them as a list (admission reads them once per
    /// request). A source that overrides it answers exactly the roles its
    /// `grants` would.
    fn direct_roles(&self, principal: &Principal) -> Option<Cow<'_, [String]>> {
        self.grants(principal).map(|g| Cow::Owned(g.roles))
    }

    /// The revision [`grants`](RoleSource::grants) would state (0 when it
    /// states none), without the roles: a hub asks it before every event
    /// it delivers. A source that overrides it answers exactly the
    /// revision its `grants` would.
    fn revision(&self, principal: &Principal) -> u64 {
        self.grants(principal).map_or(0, |g| g.revision)
    }
}

/// Which roles include which: a principal holding a role holds every role
/// it includes, transitively.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoleHierarchy {
    includes: BTreeMap<String, Vec<String>>,
}

impl RoleHierarchy {
    /// No role includes another.
    pub fn flat() -> RoleHierarchy {
        RoleHierarchy::default()
    }

    /// Whether no role includes another.
    pub fn is_flat(&self) -> bool {
        self.includes.is_empty()
    }

    /// Declares that `role` includes `included`.
    pub fn include(&mut self, role: &str, included: &str) {
        self.includes
            .entry(role.to_owned())
            .or_default()
            .push(included.to_owned());
    }

    /// The roles that hold `role`: itself and every role that includes it,
    /// directly or through others. Cycles are harmless.
    pub fn holders_of(&self, role: &str) -> Vec<String> {
        let mut holders = vec![role.to_owned()];
        let mut i = 0;
        while i < holders.len() {
            let target = holders[i].clone();
            for (r, included) in &self.includes {
                if included.contains(&target) && !holders.contains(r) {
                    holders.push(r.clone());
                }
            }
            i += 1;
        }
        holders
    }
}

/// What the exposure concluded about one principal's roles for one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldRoles<'a> {
    direct: Option<Cow<'a, [String]>>,
}

impl<'a> HeldRoles<'a> {
    /// Asks `source` once for the principal's grants (when it states them).
    pub fn read(source: &'a dyn RoleSource, principal: &Principal) -> HeldRoles<'a> {
        HeldRoles {
            direct: source.direct_roles(principal),
        }
    }

    /// Whether the principal holds `role`, directly or through a role that
    /// includes it.
    pub fn holds(
        &self,
        source: &dyn RoleSource,
        hierarchy: &RoleHierarchy,
        principal: &Principal,
        role: &str,
    ) -> bool {
        let held = |holder: &str| match &self.direct {
            Some(direct) => direct.iter().any(|r| r == holder),
            None => source.holds(principal, holder),
        };
        // Most programs declare no includes: ask for the role itself first.
        held(role) || (!hierarchy.is_flat() && hierarchy.holders_of(role).iter().any(|h| held(h)))
    }
}

/// A static token table: each token names one bearer principal.
#[derive(Clone, Debug, Default)]
pub struct TokenTable {
    tokens: BTreeMap<String, (Principal, Option<u64>)>,
    refused: Option<String>,
}

impl TokenTable {
    /// An empty table, refusing unknown tokens with `refused` as its reason.
    pub fn new(refused: Option<&str>) -> TokenTable {
        TokenTable {
            tokens: BTreeMap::new(),
            refused: refused.map(str::to_owned),
        }
    }

    /// `token` names the bearer principal `name`, without expiry.
    pub fn with(mut self, token: &str, name: &str) -> TokenTable {
        self.tokens
            .insert(token.to_owned(), (Principal::bearer(name), None));
        self
    }

    /// `token` names `name` until `expires` (nanoseconds since the epoch).
    pub fn with_expiry(mut self, token: &str, name: &str, expires: u64) -> TokenTable {
        self.tokens
            .insert(token.to_owned(), (Principal::bearer(name), Some(expires)));
        self
    }
}

impl BearerSource for TokenTable {
    fn principal(&self, token: &str) -> Option<Principal> {
        self.tokens
            .get(token)
            .map(|(principal, _)| principal.clone())
    }
    fn refused(&self) -> Option<String> {
        self.refused.clone()
    }
    fn expiry(&self, token: &str) -> Option<u64> {
        self.tokens.get(token).and_then(|(_, e)| *e)
    }
}

/// A static role table: which principal names hold which roles, at a fixed
/// revision (`std::api::RevisedStaticRoles`).
#[derive(Clone, Debug, Default)]
pub struct RoleTable {
    grants: BTreeMap<String, Vec<String>>,
    revision: u64,
}

impl RoleTable {
    /// A table granting nothing, at revision 0.
    pub fn new() -> RoleTable {
        RoleTable::default()
    }

    /// Grants `role` to the principal named `name`.
    pub fn grant(mut self, name: &str, role: &str) -> RoleTable {
        self.grants
            .entry(name.to_owned())
            .or_default()
            .push(role.to_owned());
        self
    }

    /// Grants `role` to `name` in place, moving the revision on.
    pub fn add_grant(&mut self, name: &str, role: &str) {
        self.grants
            .entry(name.to_owned())
            .or_default()
            .push(role.to_owned());
        self.revision += 1;
    }

    /// Holds `other`'s grants in place of its own, moving the revision on
    /// (a reloaded grants file: a hub rechecks its subscriptions at it).
    pub fn replace(&mut self, other: RoleTable) {
        self.grants = other.grants;
        self.revision += 1;
    }

    /// Takes `role` from `name`, moving the revision on.
    pub fn revoke(&mut self, name: &str, role: &str) {
        if let Some(roles) = self.grants.get_mut(name) {
            roles.retain(|r| r != role);
        }
        self.revision += 1;
    }
}

impl RoleSource for RoleTable {
    fn holds(&self, principal: &Principal, role: &str) -> bool {
        self.grants
            .get(&*principal.name)
            .is_some_and(|roles| roles.iter().any(|r| r == role))
    }
    fn grants(&self, principal: &Principal) -> Option<Grants> {
        Some(Grants {
            roles: self
                .direct_roles(principal)
                .map(Cow::into_owned)
                .unwrap_or_default(),
            revision: self.revision,
        })
    }
    fn direct_roles(&self, principal: &Principal) -> Option<Cow<'_, [String]>> {
        Some(Cow::Borrowed(
            self.grants
                .get(&*principal.name)
                .map_or(&[][..], Vec::as_slice),
        ))
    }
    fn revision(&self, _: &Principal) -> u64 {
        self.revision
    }
}

/// A role source that can change while it is served (a grant or revoke
/// from a control socket, a reloaded grants file), read as the static
/// table it wraps.
#[derive(Clone, Debug, Default)]
pub struct SharedRoles(pub std::sync::Arc<std::sync::Mutex<RoleTable>>);

impl SharedRoles {
    /// The table, locked: to read it, or to change it in place.
    pub fn table(&self) -> std::sync::MutexGuard<'_, RoleTable> {
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

/// A bearer source that can change while it is served (a credential
/// given an expiry from a control socket, a reloaded tokens file).
#[derive(Clone, Debug, Default)]
pub struct SharedTokens(pub std::sync::Arc<std::sync::Mutex<TokenTable>>);

impl SharedTokens {
    /// The table, locked: to read it, or to change it in place.
    pub fn table(&self) -> std::sync::MutexGuard<'_, TokenTable> {
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

/// When a bearer credential is past its expiry at `now_unix_nanos`.
pub(crate) fn is_expired(expiry: Option<u64>, now_unix_nanos: Timestamp) -> bool {
    matches!(expiry, Some(e) if e != 0 && now_unix_nanos >= e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_role_is_held_through_a_role_that_includes_it() {
        let mut h = RoleHierarchy::flat();
        h.include("admin", "operator");
        h.include("root", "admin");
        let table = RoleTable::new()
            .grant("ann", "root")
            .grant("bo", "operator");
        let ann = Principal::bearer("ann");
        let held = HeldRoles::read(&table, &ann);
        assert!(held.holds(&table, &h, &ann, "operator"));
        assert!(held.holds(&table, &h, &ann, "admin"));
        let bo = Principal::bearer("bo");
        let held = HeldRoles::read(&table, &bo);
        assert!(held.holds(&table, &h, &bo, "operator"));
        assert!(!held.holds(&table, &h, &bo, "admin"));
    }

    #[test]
    fn a_tables_lent_roles_are_its_grants() {
        let table = RoleTable::new()
            .grant("ann", "root")
            .grant("ann", "operator")
            .grant("bo", "operator");
        for name in ["ann", "bo", "cy", ""] {
            let p = Principal::bearer(name);
            let lent = table.direct_roles(&p).map(Cow::into_owned);
            assert_eq!(lent, table.grants(&p).map(|g| g.roles), "{name}");
            assert_eq!(table.revision(&p), table.grants(&p).unwrap().revision);
        }
        let mut revised = table.clone();
        revised.revoke("bo", "operator");
        let bo = Principal::bearer("bo");
        assert_eq!(revised.revision(&bo), revised.grants(&bo).unwrap().revision);
        assert_ne!(revised.revision(&bo), table.revision(&bo));
        // A source that states no grants lends none, and one that states
        // them without lending has them copied.
        struct Stated;
        impl RoleSource for Stated {
            fn holds(&self, _: &Principal, _: &str) -> bool {
                false
            }
            fn grants(&self, _: &Principal) -> Option<Grants> {
                Some(Grants {
                    roles: vec!["x".into()],
                    revision: 3,
                })
            }
        }
        let p = Principal::bearer("ann");
        assert_eq!(
            Stated.direct_roles(&p).as_deref(),
            Some(&["x".to_owned()][..])
        );
        assert_eq!(Stated.revision(&p), 3);
        struct Silent;
        impl RoleSource for Silent {
            fn holds(&self, _: &Principal, _: &str) -> bool {
                true
            }
        }
        assert_eq!(Silent.direct_roles(&p), None);
        assert_eq!(Silent.revision(&p), 0);
    }

    #[test]
    fn decimal_writes_as_to_string_does() {
        let mut buf = [0u8; 20];
        for n in [
            0,
            1,
            9,
            10,
            99,
            100,
            12_345,
            u64::from(u32::MAX),
            u64::MAX - 1,
            u64::MAX,
        ] {
            assert_eq!(decimal(n, &mut buf), n.to_string());
            let mut out = b"x".to_vec();
            write_u64(n, &mut out);
            assert_eq!(out, format!("x{n}").into_bytes());
        }
    }

    #[test]
    fn a_source_without_grants_is_asked_holds() {
        struct Only(&'static str);
        impl RoleSource for Only {
            fn holds(&self, p: &Principal, role: &str) -> bool {
                &*p.name == self.0 && role == "trader"
            }
        }
        let src = Only("alice");
        let alice = Principal::bearer("alice");
        let held = HeldRoles::read(&src, &alice);
        assert!(held.holds(&src, &RoleHierarchy::flat(), &alice, "trader"));
        assert!(!held.holds(&src, &RoleHierarchy::flat(), &alice, "operator"));
    }

    #[test]
    fn principals_round_trip_through_json() {
        let p = Principal::unix(PeerCredentials {
            uid: 1000,
            gid: 1000,
            pid: 4242,
            groups: None,
        });
        let json = p.to_json();
        assert_eq!(
            json.to_string(),
            r#"{"mode":"unix","name":"uid:1000","uid":1000,"gid":1000,"pid":4242}"#
        );
        let mut written = Vec::new();
        p.write_json(&mut written);
        assert_eq!(written, json.to_string().into_bytes());
        let odd = Principal::bearer("a\"b\u{1}é");
        let mut written = Vec::new();
        odd.write_json(&mut written);
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(&written).unwrap(),
            odd.to_json()
        );
        assert_eq!(Principal::from_json(&json).unwrap(), p);
    }

    #[test]
    fn expiry_is_read_against_the_time_passed_in() {
        assert!(!is_expired(None, 5));
        assert!(!is_expired(Some(0), 5));
        assert!(!is_expired(Some(10), 9));
        assert!(is_expired(Some(10), 10));
    }
}
