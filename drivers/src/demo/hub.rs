//! The witness's hub served by `hale demo --hub ADDR` (and over datagrams
//! by `--udp-hub ADDR`): `fills`, a `ws::Hub` (a `udp::Hub`) under the bearer source `Tokens` and the role source
//! `hub_roles` (dave holds `operator`), its one stream `Fills` fed by every
//! `Orders::place` that is accepted, as the program's `Fills <- Fill { … }`
//! publishes it.

use std::sync::{Arc, Mutex};

use limen_core::hale::docs::ExposureDescriber;
use limen_core::hale::model::{Program, TransportKind};
use limen_core::hale::runtime::{BearerSource, Principal, RoleSource};
use limen_core::wire::ws::{Hub, HubSpec};

use limen_witness::sources::{SharedRoles, SharedTokens};
use limen_witness::{self as witness, FillSink, Instances};

use super::BootError;
use crate::serve::hub::{HubHandle, HubServer};
use crate::serve::udp_hub::UdpHubServer;
use crate::serve::{BoundAddress, Listener};

/// What the control socket may do to the hub: revoke and grant roles
/// under its role source (announcing each revision, as a table fixed in
/// the program cannot), and give a credential an expiry.
#[derive(Clone, Debug)]
pub struct HubControl {
    /// The hub's listeners.
    pub handles: Vec<HubHandle>,
    /// Its role source.
    pub roles: SharedRoles,
    /// Its bearer source.
    pub tokens: SharedTokens,
}

impl HubControl {
    /// Answers one control line of the hub's (`revoke P R`, `grant P R`,
    /// `expire TOKEN MS`); `None` when the verb is not the hub's.
    pub fn handle(&self, verb: &str, args: &[&str]) -> Option<Result<(), String>> {
        Some(match (verb, args) {
            ("revoke" | "grant", [principal, role]) => {
                let revision = {
                    let mut table = self.roles.table();
                    if verb == "revoke" {
                        table.revoke(principal, role);
                    } else {
                        table.add_grant(principal, role);
                    }
                    table
                        .grants(&Principal::bearer(principal))
                        .map_or(0, |g| g.revision)
                };
                for hub in &self.handles {
                    hub.announce(revision);
                }
                Ok(())
            }
            ("expire", [token, ms]) => {
                let ms: u64 = match ms.parse() {
                    Ok(ms) => ms,
                    Err(_) => return Some(Err(format!("`{ms}` is not milliseconds"))),
                };
                let mut table = self.tokens.table();
                let Some(p) = table.principal(token) else {
                    return Some(Err(format!("no token `{token}`")));
                };
                // 0 is no expiry, as a bearer source states it.
                let at = if ms == 0 {
                    0
                } else {
                    crate::serve::unix_now() + ms * 1_000_000
                };
                *table = std::mem::take(&mut *table).with_expiry(token, &p.name, at);
                Ok(())
            }
            _ => return None,
        })
    }

    /// The `hub` control line's answer: each listener's counts, in the
    /// order served (`ok events=E subscribers=S connections=C`, one
    /// triple per listener, separated by `;`).
    pub fn report(&self) -> String {
        let counts: Vec<String> = self
            .handles
            .iter()
            .map(|h| match h.report() {
                Some(r) => format!(
                    "events={} subscribers={} connections={}",
                    r.events, r.subscribers, r.connections
                ),
                None => "ended".to_owned(),
            })
            .collect();
        format!("ok {}", counts.join("; "))
    }
}

/// One hub served, ready to run on a thread of its own.
#[derive(Debug)]
pub struct Served<S> {
    /// The loop to run.
    pub server: S,
    /// Its handle: publish, announce, stop.
    pub handle: HubHandle,
    /// The hub exposure's identity, `hub@<stream digest>/fills`.
    pub identity: String,
    /// Where it listens.
    pub bound: BoundAddress,
}

/// The witness's hub served over WebSocket, datagrams, or both (one hub's
/// rows and sources, two listeners).
#[derive(Debug)]
pub struct ServedHubs {
    /// Over WebSocket (`--hub`).
    pub ws: Option<Served<HubServer>>,
    /// Over datagrams (`--udp-hub`).
    pub udp: Option<Served<UdpHubServer>>,
    /// What the control socket may do to them.
    pub control: HubControl,
}

/// Binds the witness's hub at `ws` and `udp` (either may be absent; `None`
/// when both are) and has both `Orders` instances publish their fills to
/// it.
pub fn serve(
    program: &Program,
    instances: &Instances,
    ws: Option<&str>,
    udp: Option<&str>,
) -> Result<Option<ServedHubs>, BootError> {
    if ws.is_none() && udp.is_none() {
        return Ok(None);
    }
    let hub = program
        .hubs
        .first()
        .and_then(|h| h.name())
        .ok_or_else(|| BootError("hale demo: the program declares no hub".into()))?
        .to_owned();
    let fail = |err: String| BootError(format!("hale demo: cannot serve the hub {hub}: {err}"));
    let spec = HubSpec::from_program(program, &hub).map_err(fail)?;
    let identity = program
        .hub_exposure_id(&hub)
        .map_err(|err| fail(err.to_string()))?;
    let roles = SharedRoles(Arc::new(Mutex::new(witness::grants(program, "hub_roles"))));
    let tokens = SharedTokens(Arc::new(Mutex::new(witness::tokens())));
    let mut handles = Vec::new();
    let ws = match ws {
        None => None,
        Some(address) => {
            let listener = Listener::bind_tcp(address).map_err(|err| {
                BootError(format!("api: ws::Hub could not listen on {address}: {err}"))
            })?;
            let bound = listener.bound();
            let describer = ExposureDescriber::new(program, &hub, Some(&bound.to_string()))
                .map_err(|err| fail(err.to_string()))?;
            let machine = Hub::new(
                spec.clone(),
                Some(Box::new(tokens.clone())),
                Box::new(roles.clone()),
                Box::new(describer),
            );
            let server = HubServer::new(listener, machine).map_err(|err| fail(err.to_string()))?;
            let handle = server.handle();
            handles.push(handle.clone());
            Some(Served {
                server,
                handle,
                identity: identity.clone(),
                bound,
            })
        }
    };
    let udp = match udp {
        None => None,
        Some(address) => {
            let (socket, bound) = UdpHubServer::bind(address).map_err(|err| {
                BootError(format!(
                    "api: udp::Hub could not listen on {address}: {err}"
                ))
            })?;
            // The same rows over datagrams: the description states udp's
            // listener and frames.
            let mut over_udp = program.clone();
            for h in over_udp.hubs.iter_mut().filter(|h| h.name() == Some(&hub)) {
                h.literal.kind = TransportKind::Udp;
            }
            let describer = ExposureDescriber::new(&over_udp, &hub, Some(&bound.to_string()))
                .map_err(|err| fail(err.to_string()))?;
            let machine = limen_core::wire::udp::Hub::new(
                spec,
                Some(Box::new(tokens.clone())),
                Box::new(roles.clone()),
                Box::new(describer),
            );
            let server = UdpHubServer::new(socket, machine).map_err(|err| fail(err.to_string()))?;
            let handle = server.handle();
            handles.push(handle.clone());
            Some(Served {
                server,
                handle,
                identity,
                bound: BoundAddress::Tcp(bound),
            })
        }
    };
    for orders in [&instances.orders, &instances.partner_orders] {
        let to = handles.clone();
        orders.publish_to(FillSink(Arc::new(move |fill| {
            for hub in &to {
                hub.publish("Fills", fill.to_json());
            }
        })));
    }
    Ok(Some(ServedHubs {
        ws,
        udp,
        control: HubControl {
            handles,
            roles,
            tokens,
        },
    }))
}
