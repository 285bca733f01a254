//! Wire protocol machines, one module per protocol, and the transport
//! fronts that join them to an exposure.
//!
//! - [`front`]: one connection of one transport between its bytes and an
//!   exposure: framing in, outcome encoding out. What every driver drives.
//! - [`grpc`]: Hale's framing of gRPC and the gRPC column of § Outcomes
//!   (the HTTP/2 session is `limen-nghttp2`'s).
//! - [`http1`]: HTTP/1.1, one request to a connection.
//! - [`hale_http`]: Hale's framing of HTTP (`POST /call/<member>`,
//!   `GET /.description`) and the HTTP column of § Outcomes.
//! - [`mod@line`]: Unix JSON lines, many requests in flight per connection.
//! - [`mcp`]: the MCP transport's framing of `POST /mcp` and the MCP column of
//!   § Outcomes.
//! - [`ws`]: WebSocket (RFC 6455), the server's side, as the hubs speak it,
//!   and `ws::Hub`, the WebSocket hub of § Streams.
//! - [`udp`]: `udp::Hub`, the datagram hub of § Over datagrams.
//!
//! JSON-RPC 2.0, which MCP and the Flow Tool protocol both carry, is
//! [`crate::json::jsonrpc`].

pub mod front;
pub mod grpc;
pub mod hale_http;
pub mod http1;
pub mod line;
pub mod machine;
pub mod mcp;
pub mod udp;
pub mod ws;
