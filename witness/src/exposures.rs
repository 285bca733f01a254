//! The serve sites `hale demo` adds to the witness program, which the
//! replay serves the same way: Public over MCP as `mcp`
//! ([`mcp_exposure`]), over gRPC as `grpc` ([`grpc_exposure`]) — the
//! program declares neither, so both are derived from public's — and over
//! the WebSocket hub as `desk` ([`hub_desk_program`]), written into the
//! program's text.

use limen_core::hale::model::{
    parse_program, Exposure as ModelExposure, Listener, Program, TransportKind,
};

use crate::DESK;

/// The exposure `mcp`: public's serve site (its surface, sources, receivers
/// and bound) over `mcp::Rpc` at `address`. `None` when the program serves
/// no `public`.
pub fn mcp_exposure(program: &Program, address: &str) -> Option<ModelExposure> {
    derived(program, "mcp", TransportKind::Mcp, address)
}

/// The exposure `grpc`: public's serve site over `grpc::Rpc` at
/// `address`, as [`mcp_exposure`] derives `mcp`. `None` when the program
/// serves no `public`.
pub fn grpc_exposure(program: &Program, address: &str) -> Option<ModelExposure> {
    derived(program, "grpc", TransportKind::Grpc, address)
}

/// Public's serve site renamed `name`, over `transport` at `address`.
fn derived(
    program: &Program,
    name: &str,
    transport: TransportKind,
    address: &str,
) -> Option<ModelExposure> {
    let mut e = program.exposure("public")?.clone();
    e.name = Some(name.into());
    e.listener = Some(Listener {
        transport,
        address: Some(address.to_owned()),
    });
    Some(e)
}

/// The serve site `--hub-desk` adds to the witness program: Public over
/// the hub, as `desk` (§ Rpcs on a hub's own example), bound to public's
/// `Orders` instance and under the hub's sources, with public's bound.
pub const HUB_DESK_SITE: &str = "let desk = api::serve(Public, self.hub, as: \"desk\", receivers: { Orders: self.orders }, bound: 64, on_full: refuse);";

/// The witness program with [`HUB_DESK_SITE`] first in its main locus's
/// `run()`: the program's text is what the exposure `desk` is read from, so
/// its rows, sources and description are the model's, as they would be
/// were the witness to write the site.
pub fn hub_desk_program() -> Program {
    let text = with_hub_desk(DESK).expect("desk.hl has a main locus with run()");
    parse_program("desk.hl", &text).expect("desk.hl with desk parses")
}

/// A program's text with [`HUB_DESK_SITE`] written first in its main
/// locus's `run()`; `None` when the text has no `run() {` after `main
/// locus`. The replay runner reads a corpus's program so, as the demo does.
pub fn with_hub_desk(text: &str) -> Option<String> {
    let main = text.find("main locus")?;
    let open = "run() {";
    let run = main + text[main..].find(open)? + open.len();
    Some(format!(
        "{}\n        {HUB_DESK_SITE}{}",
        &text[..run],
        &text[run..]
    ))
}
