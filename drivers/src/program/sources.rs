//! The identity sources of a served program: one bearer source or role
//! source per source param the configuration writes (`[sources.NAME]`),
//! each a table shared with every exposure that reads it, so a change —
//! a grant from the control socket, a reloaded file — reaches them all.
//!
//! A source read from a file (`tokens_file`, `grants_file`) is read again
//! when the file changes (its modification time, looked at twice a
//! second) and on SIGHUP. Each reload of a grants file is a new revision
//! of its role source (§ Identity sources: a hub rechecks its
//! subscriptions at a revision). A file that no longer reads keeps the
//! source as it was, and the reason is printed, never the file's lines:
//! they are credentials.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use limen_core::hale::runtime::{
    Grants, Principal, RoleSource, RoleTable, SharedRoles, SharedTokens, TokenTable,
};
use limen_core::MILLISECOND;

use super::config::{read_grants, read_tokens, ServeConfig, Token};
use crate::serve::hub::HubHandle;

/// How often the watched files are looked at.
const WATCH_EVERY: Duration = Duration::from_millis(500);

struct TokenSource {
    table: SharedTokens,
    file: Option<PathBuf>,
    refused: Option<String>,
}

struct RoleSourceEntry {
    table: SharedRoles,
    file: Option<PathBuf>,
    /// `--grant`s, held over every reload.
    extra: Vec<(String, String)>,
}

#[derive(Default)]
struct Inner {
    tokens: BTreeMap<String, TokenSource>,
    roles: BTreeMap<String, RoleSourceEntry>,
    seen: Mutex<BTreeMap<PathBuf, Option<(SystemTime, u64)>>>,
    /// The hubs each role source announces its revisions to.
    hubs: Mutex<Vec<(String, HubHandle)>>,
    /// Told of each change made on this node (a grant, a revoke, a
    /// reload): the broker carries it to the program's other nodes.
    on_change: Mutex<Option<ChangeHook>>,
}

/// What is told of a role-source change made on this node.
pub type ChangeHook = Arc<dyn Fn(&RoleChange) + Send + Sync>;

/// A change to the role sources, as one node tells the program's other
/// nodes of it (they apply it to their own sources and announce the
/// revision to their hubs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RoleChange {
    /// `grant PRINCIPAL ROLE [SOURCE]`.
    Grant {
        /// Who.
        principal: String,
        /// The role.
        role: String,
        /// The role source; every one when `None`.
        source: Option<String>,
    },
    /// `revoke PRINCIPAL ROLE [SOURCE]`.
    Revoke {
        /// Who.
        principal: String,
        /// The role.
        role: String,
        /// The role source; every one when `None`.
        source: Option<String>,
    },
    /// The grants files were read again (SIGHUP, `reload`, a file that
    /// moved): each node reads its own again.
    Reload,
}

impl RoleChange {
    /// Its JSON text: `{"op": "grant", "principal": …, "role": …,
    /// "source": … | null}` or `{"op": "reload"}`.
    pub fn to_json(&self) -> String {
        let (op, principal, role, source) = match self {
            RoleChange::Grant {
                principal,
                role,
                source,
            } => ("grant", principal, role, source),
            RoleChange::Revoke {
                principal,
                role,
                source,
            } => ("revoke", principal, role, source),
            RoleChange::Reload => return serde_json::json!({ "op": "reload" }).to_string(),
        };
        serde_json::json!({ "op": op, "principal": principal, "role": role, "source": source })
            .to_string()
    }

    /// Reads [`to_json`](RoleChange::to_json)'s text.
    pub fn from_json(text: &[u8]) -> Result<RoleChange, String> {
        let v: serde_json::Value =
            serde_json::from_slice(text).map_err(|e| format!("not JSON: {e}"))?;
        let field = |k: &str| {
            v.get(k)
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("no string `{k}`"))
        };
        let source = match v.get("source") {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::String(s)) => Some(s.clone()),
            Some(_) => return Err("`source` is neither a string nor null".into()),
        };
        match field("op")?.as_str() {
            "grant" => Ok(RoleChange::Grant {
                principal: field("principal")?,
                role: field("role")?,
                source,
            }),
            "revoke" => Ok(RoleChange::Revoke {
                principal: field("principal")?,
                role: field("role")?,
                source,
            }),
            "reload" => Ok(RoleChange::Reload),
            other => Err(format!("unknown op `{other}`")),
        }
    }
}

/// Every identity source of a served program.
#[derive(Clone, Default)]
pub struct Sources {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Sources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sources")
            .field("tokens", &self.inner.tokens.keys().collect::<Vec<_>>())
            .field("roles", &self.inner.roles.keys().collect::<Vec<_>>())
            .finish()
    }
}

fn token_table(tokens: &BTreeMap<String, Token>, refused: Option<&str>) -> TokenTable {
    tokens
        .iter()
        .fold(TokenTable::new(refused), |t, (token, entry)| {
            match entry.expires_ms {
                Some(ms) => t.with_expiry(token, &entry.principal, ms.saturating_mul(MILLISECOND)),
                None => t.with(token, &entry.principal),
            }
        })
}

fn role_table(grants: &BTreeMap<String, Vec<String>>, extra: &[(String, String)]) -> RoleTable {
    let written = grants
        .iter()
        .flat_map(|(role, holders)| holders.iter().map(move |h| (role.clone(), h.clone())));
    let groups = read_groups();
    written
        .chain(extra.iter().cloned())
        .fold(RoleTable::new(), |t, (role, holder)| {
            // `group:NAME` is held as `gid:N`, read from the group database
            // when the grants are; a name it does not know grants nothing.
            let holder = match holder.strip_prefix("group:") {
                Some(name) => match groups.get(name) {
                    Some(gid) => format!("gid:{gid}"),
                    None => {
                        eprintln!(
                            "hale serve: no group `{name}`: its grant of `{role}` holds for no one"
                        );
                        return t;
                    }
                },
                None => holder,
            };
            t.grant(&holder, &role)
        })
}

/// The group database's names and ids (`/etc/group`); empty when it cannot
/// be read.
fn read_groups() -> BTreeMap<String, u32> {
    std::fs::read_to_string("/etc/group")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut f = l.split(':');
            let name = f.next()?;
            let gid = f.nth(1)?.parse().ok()?;
            Some((name.to_owned(), gid))
        })
        .collect()
}

/// A role source that grants to Unix peers by user (`uid:1000`, the
/// principal's name), by group (`gid:100`: the peer's primary group or
/// one of its supplementary groups, SO_PEERGROUPS) or by group name
/// (`group:wheel`, held as its gid), and to bearer principals by name.
#[derive(Clone, Debug, Default)]
pub struct PeerRoles(pub SharedRoles);

impl PeerRoles {
    /// The names a principal is held under: its own, and a Unix peer's
    /// groups as `gid:N`.
    fn names(principal: &Principal) -> Vec<String> {
        let mut names = vec![principal.name.to_string()];
        if principal.mode == "unix" {
            let primary = principal
                .fields
                .iter()
                .find(|(k, _)| k == "gid")
                .map(|(_, v)| *v)
                .filter(|g| *g >= 0);
            names.extend(primary.map(|g| format!("gid:{g}")));
            names.extend(principal.groups.iter().map(|g| format!("gid:{g}")));
        }
        names
    }
}

impl RoleSource for PeerRoles {
    fn holds(&self, principal: &Principal, role: &str) -> bool {
        let table = self.0.table();
        Self::names(principal)
            .iter()
            .any(|n| table.holds(&Principal::new(&principal.mode, n, Vec::new()), role))
    }

    fn grants(&self, principal: &Principal) -> Option<Grants> {
        let table = self.0.table();
        let mut roles: Vec<String> = Vec::new();
        for n in Self::names(principal) {
            let as_name = Principal::new(&principal.mode, &n, Vec::new());
            for r in table.grants(&as_name).map(|g| g.roles).unwrap_or_default() {
                if !roles.contains(&r) {
                    roles.push(r);
                }
            }
        }
        Some(Grants {
            roles,
            revision: table.revision(principal),
        })
    }

    fn revision(&self, principal: &Principal) -> u64 {
        self.0.table().revision(principal)
    }
}

/// What tells a file changed: its modification time and its length (a
/// file system that keeps whole seconds still sees an edit that changed
/// the length within the second).
fn modified(path: &Path) -> Option<(SystemTime, u64)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

impl Sources {
    /// Reads every source of `config`, with `grants` (`--grant
    /// SOURCE.ROLE=HOLDER`) added to the role sources; every file that
    /// cannot be read is one diagnostic.
    pub fn read(
        config: &ServeConfig,
        grants: &[(String, String, String)],
    ) -> Result<Sources, Vec<String>> {
        let mut inner = Inner::default();
        let mut errors = Vec::new();
        let mut seen = BTreeMap::new();
        for (name, source) in &config.sources {
            let at = format!("sources.{name}");
            if source.is_bearer() {
                let file = source.tokens_file.as_deref().map(|f| config.resolve(f));
                let tokens = match (&source.tokens, &file) {
                    (Some(t), _) => Ok(t.clone()),
                    (None, Some(f)) => {
                        seen.insert(f.clone(), modified(f));
                        read_tokens(f).map_err(|e| format!("{at}.tokens_file: {e}"))
                    }
                    (None, None) => Ok(BTreeMap::new()),
                };
                match tokens {
                    Ok(t) => {
                        inner.tokens.insert(
                            name.clone(),
                            TokenSource {
                                table: SharedTokens(Arc::new(Mutex::new(token_table(
                                    &t,
                                    source.refused.as_deref(),
                                )))),
                                file,
                                refused: source.refused.clone(),
                            },
                        );
                    }
                    Err(e) => errors.push(e),
                }
            }
            if source.is_roles() {
                let file = source.grants_file.as_deref().map(|f| config.resolve(f));
                let written = match (&source.grants, &file) {
                    (Some(g), _) => Ok(g.clone()),
                    (None, Some(f)) => {
                        seen.insert(f.clone(), modified(f));
                        read_grants(f).map_err(|e| format!("{at}.grants_file: {e}"))
                    }
                    (None, None) => Ok(BTreeMap::new()),
                };
                let extra = extra_grants(grants, name);
                match written {
                    Ok(g) => {
                        inner.roles.insert(
                            name.clone(),
                            RoleSourceEntry {
                                table: SharedRoles(Arc::new(Mutex::new(role_table(&g, &extra)))),
                                file,
                                extra,
                            },
                        );
                    }
                    Err(e) => errors.push(e),
                }
            }
        }
        // A role source only `--grant` writes.
        for (source, _, _) in grants {
            if !inner.roles.contains_key(source) {
                let extra = extra_grants(grants, source);
                inner.roles.insert(
                    source.clone(),
                    RoleSourceEntry {
                        table: SharedRoles(Arc::new(Mutex::new(role_table(
                            &BTreeMap::new(),
                            &extra,
                        )))),
                        file: None,
                        extra,
                    },
                );
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        inner.seen = Mutex::new(seen);
        Ok(Sources {
            inner: Arc::new(inner),
        })
    }

    /// The bearer source `param`, shared.
    pub fn tokens(&self, param: &str) -> Option<SharedTokens> {
        self.inner.tokens.get(param).map(|s| s.table.clone())
    }

    /// The role source `param`, shared, reading Unix peers by group too
    /// ([`PeerRoles`]).
    pub fn roles(&self, param: &str) -> Option<PeerRoles> {
        self.inner
            .roles
            .get(param)
            .map(|s| PeerRoles(s.table.clone()))
    }

    /// Tells `hub` of each revision of the role source `param` from now on
    /// (a table fixed by the configuration cannot announce its own, so the
    /// server does: § Streams, How the hub knows).
    pub fn announce_to(&self, param: &str, hub: HubHandle) {
        lock(&self.inner.hubs).push((param.to_owned(), hub));
    }

    /// Announces each role source's revision to its hubs.
    fn announce(&self) {
        for (param, hub) in lock(&self.inner.hubs).iter() {
            if let Some(s) = self.inner.roles.get(param) {
                let revision = s.table.table().revision(&Principal::bearer(""));
                hub.announce(revision);
            }
        }
    }

    /// Reads every file again whose modification time moved (all of them
    /// when `all`); returns what could not be read.
    pub fn reload(&self, all: bool) -> Vec<String> {
        let (errors, roles_read) = self.read_again(all);
        self.announce();
        // Only a reload that read a role source again is news to the other
        // nodes: the watcher looks twice a second and mostly finds nothing.
        if all || roles_read {
            self.changed(&RoleChange::Reload);
        }
        errors
    }

    /// Tells `hook` of every change made on this node from now on (not of
    /// those [`apply`](Sources::apply) makes: they came from another node).
    pub fn on_change(&self, hook: ChangeHook) {
        *lock(&self.inner.on_change) = Some(hook);
    }

    fn changed(&self, change: &RoleChange) {
        let hook = lock(&self.inner.on_change).clone();
        if let Some(hook) = hook {
            hook(change);
        }
    }

    /// Makes a change another node made, and announces the revision to the
    /// hubs, without telling it on.
    pub fn apply(&self, change: &RoleChange) -> Result<(), String> {
        match change {
            RoleChange::Grant {
                principal,
                role,
                source,
            } => self.each_role_source(source.as_deref(), |t| t.add_grant(principal, role))?,
            RoleChange::Revoke {
                principal,
                role,
                source,
            } => self.each_role_source(source.as_deref(), |t| t.revoke(principal, role))?,
            RoleChange::Reload => {
                let (errors, _) = self.read_again(true);
                if !errors.is_empty() {
                    self.announce();
                    return Err(errors.join("; "));
                }
            }
        }
        self.announce();
        Ok(())
    }

    /// Reads the files again; what could not be read, and whether a role
    /// source was read again.
    fn read_again(&self, all: bool) -> (Vec<String>, bool) {
        let mut errors = Vec::new();
        // Which files moved, each looked at once: two sources may read one
        // file (a storefront's and a hub's customers), and both are read
        // again when it changes.
        let files: std::collections::BTreeSet<&Path> = self
            .inner
            .tokens
            .values()
            .filter_map(|s| s.file.as_deref())
            .chain(self.inner.roles.values().filter_map(|s| s.file.as_deref()))
            .collect();
        let moved: std::collections::BTreeSet<PathBuf> = {
            let mut seen = self.inner.seen.lock().unwrap_or_else(|e| e.into_inner());
            files
                .into_iter()
                .filter(|file| {
                    let now = modified(file);
                    let before = seen.insert(file.to_path_buf(), now);
                    all || before != Some(now)
                })
                .map(Path::to_path_buf)
                .collect()
        };
        let changed = |file: &Path| moved.contains(file);
        for (name, s) in &self.inner.tokens {
            let Some(file) = s.file.as_deref().filter(|f| changed(f)) else {
                continue;
            };
            match read_tokens(file) {
                Ok(t) => *s.table.table() = token_table(&t, s.refused.as_deref()),
                Err(e) => errors.push(format!("sources.{name}: {e} (the source is kept)")),
            }
        }
        let mut roles_read = false;
        for (name, s) in &self.inner.roles {
            let Some(file) = s.file.as_deref().filter(|f| changed(f)) else {
                continue;
            };
            match read_grants(file) {
                Ok(g) => {
                    s.table.table().replace(role_table(&g, &s.extra));
                    roles_read = true;
                }
                Err(e) => errors.push(format!("sources.{name}: {e} (the source is kept)")),
            }
        }
        (errors, roles_read)
    }

    /// Watches the files on a thread of its own: read again when one
    /// changes, and all of them on SIGHUP.
    pub fn watch(&self) -> std::io::Result<()> {
        let hup = Arc::new(AtomicBool::new(false));
        signal_hook::flag::register(signal_hook::consts::SIGHUP, hup.clone())?;
        let watched = self.inner.tokens.values().any(|s| s.file.is_some())
            || self.inner.roles.values().any(|s| s.file.is_some());
        let sources = self.clone();
        std::thread::Builder::new()
            .name("hale serve sources".into())
            .spawn(move || loop {
                std::thread::sleep(WATCH_EVERY);
                let all = hup.swap(false, Ordering::AcqRel);
                if !all && !watched {
                    continue;
                }
                if all {
                    eprintln!("hale serve: SIGHUP: reading the identity files again");
                }
                for e in sources.reload(all) {
                    eprintln!("hale serve: {e}");
                }
            })?;
        Ok(())
    }

    /// Grants `role` to `principal` in the role source `source`, or in
    /// every role source when none is named (a new revision of each).
    pub fn grant(&self, principal: &str, role: &str, source: Option<&str>) -> Result<(), String> {
        self.each_role_source(source, |t| t.add_grant(principal, role))?;
        self.announce();
        self.changed(&RoleChange::Grant {
            principal: principal.to_owned(),
            role: role.to_owned(),
            source: source.map(str::to_owned),
        });
        Ok(())
    }

    /// Takes `role` from `principal`, as [`grant`](Sources::grant) gives it.
    pub fn revoke(&self, principal: &str, role: &str, source: Option<&str>) -> Result<(), String> {
        self.each_role_source(source, |t| t.revoke(principal, role))?;
        self.announce();
        self.changed(&RoleChange::Revoke {
            principal: principal.to_owned(),
            role: role.to_owned(),
            source: source.map(str::to_owned),
        });
        Ok(())
    }

    fn each_role_source(
        &self,
        source: Option<&str>,
        mut f: impl FnMut(&mut RoleTable),
    ) -> Result<(), String> {
        let mut any = false;
        for (name, s) in &self.inner.roles {
            if source.is_none_or(|n| n == name) {
                f(&mut s.table.table());
                any = true;
            }
        }
        match (any, source) {
            (true, _) => Ok(()),
            (false, Some(n)) => Err(format!("no role source `{n}`")),
            (false, None) => Err("the program has no role source".into()),
        }
    }

    /// Gives the bearer credential `token` an expiry `ms` milliseconds
    /// from now, in every bearer source that knows it; 0 takes its expiry
    /// away (0 is no expiry, as a bearer source states it).
    pub fn expire(&self, token: &str, ms: u64) -> Result<(), String> {
        let at = match ms {
            0 => 0,
            ms => crate::serve::unix_now().saturating_add(ms.saturating_mul(MILLISECOND)),
        };
        let mut any = false;
        for s in self.inner.tokens.values() {
            let mut table = s.table.table();
            if let Some(p) = limen_core::hale::runtime::BearerSource::principal(&*table, token) {
                let t = std::mem::take(&mut *table);
                *table = t.with_expiry(token, &p.name, at);
                any = true;
            }
        }
        if any {
            Ok(())
        } else {
            Err("no bearer source knows that token".into())
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn extra_grants(grants: &[(String, String, String)], source: &str) -> Vec<(String, String)> {
    grants
        .iter()
        .filter(|(s, _, _)| s == source)
        .map(|(_, role, holder)| (role.clone(), holder.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use limen_core::hale::runtime::PeerCredentials;

    fn roles(holders: &[(&str, &str)]) -> PeerRoles {
        let grants: BTreeMap<String, Vec<String>> =
            holders.iter().fold(BTreeMap::new(), |mut m, (role, h)| {
                m.entry((*role).to_owned())
                    .or_insert_with(Vec::new)
                    .push((*h).to_owned());
                m
            });
        PeerRoles(SharedRoles(Arc::new(Mutex::new(role_table(&grants, &[])))))
    }

    fn peer(uid: i64, gid: i64, groups: &'static [u32]) -> Principal {
        Principal::unix(PeerCredentials {
            uid,
            gid,
            pid: 1,
            groups: Some(groups),
        })
    }

    #[test]
    fn a_unix_peer_holds_by_user_by_primary_group_and_by_supplementary_group() {
        let r = roles(&[
            ("operator", "uid:1000"),
            ("auditor", "gid:100"),
            ("ops", "gid:27"),
        ]);
        assert!(r.holds(&peer(1000, 1000, &[]), "operator"));
        assert!(!r.holds(&peer(1001, 1001, &[]), "operator"));
        assert!(
            r.holds(&peer(1001, 100, &[]), "auditor"),
            "its primary group"
        );
        assert!(
            r.holds(&peer(1001, 1001, &[4, 27]), "ops"),
            "a supplementary group"
        );
        assert!(!r.holds(&peer(1001, 1001, &[4]), "ops"));
        let g = r.grants(&peer(1000, 100, &[27])).unwrap();
        assert_eq!(g.roles, ["operator", "auditor", "ops"]);
        // A bearer principal named like a group is not a member of it.
        assert!(!r.holds(&Principal::bearer("alice"), "auditor"));
    }

    #[test]
    fn a_role_change_reads_back_as_written() {
        for c in [
            RoleChange::Grant {
                principal: "dave".into(),
                role: "operator".into(),
                source: Some("hub_roles".into()),
            },
            RoleChange::Revoke {
                principal: "dave".into(),
                role: "operator".into(),
                source: None,
            },
            RoleChange::Reload,
        ] {
            assert_eq!(RoleChange::from_json(c.to_json().as_bytes()), Ok(c));
        }
        assert!(RoleChange::from_json(br#"{"op":"drop"}"#).is_err());
        assert!(RoleChange::from_json(br#"{"op":"grant","role":"x"}"#).is_err());
    }

    #[test]
    fn a_group_name_is_read_from_the_group_database() {
        // root's group is 0 on every Linux system this runs on.
        let r = roles(&[
            ("admin", "group:root"),
            ("none", "group:no-such-group-here"),
        ]);
        assert!(r.holds(&peer(1001, 0, &[]), "admin"));
        assert!(!r.holds(&peer(1001, 0, &[]), "none"));
    }
}
