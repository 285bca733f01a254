//! Wire protocol machines, one module per protocol, and the transport
//! fronts that join them to an exposure.
//!
//! - [`front`]: the `Front` trait every transport's front implements (one
//!   connection between its bytes and an exposure: framing in, outcome
//!   encoding out), what every driver drives, and what the fronts share.
//!
//! Each transport has one module of the same shape: a framing step (wire
//! request → exposure `Request`), an answer step (outcome → bytes), and its
//! front:
//!
//! - [`unix`]: Hale's framing of Unix JSON lines, the Unix column of §
//!   Outcomes, `UnixFront`.
//! - [`http`]: Hale's framing of HTTP (`POST /call/<member>`,
//!   `GET /.description`), the HTTP column of § Outcomes, `HttpFront`.
//! - [`mcp`]: the MCP transport's framing of `POST /mcp`, the MCP column of
//!   § Outcomes, `McpFront`.
//! - [`grpc`]: Hale's framing of gRPC and the gRPC column of § Outcomes
//!   (the front, over `limen-nghttp2`'s HTTP/2 session, is `limen-grpc`'s).
//!
//! The hubs, one machine for every connection of a hub:
//!
//! - [`ws`]: WebSocket (RFC 6455), the server's side, as the hubs speak it,
//!   and `ws::Hub`, the WebSocket hub of § Streams.
//! - [`udp`]: `udp::Hub`, the datagram hub of § Over datagrams.
//!
//! The wire machines under them:
//!
//! - [`machine`]: the `Machine` trait every connection machine implements.
//! - [`http1`]: HTTP/1.1, one request to a connection.
//! - [`mod@line`]: Unix JSON lines, many requests in flight per connection.
//! - [`nats`]: a NATS client connection (the hubs' broker across nodes):
//!   INFO, CONNECT, SUB, PUB, MSG, PING/PONG, -ERR, and reconnection.
//!
//! [`admin`] is `hale admin`'s page as a pure machine: its gate (the
//! launch token, the page's own Host and Origin) and its routes.
//!
//! JSON-RPC 2.0, which MCP and the Flow Tool protocol both carry, is
//! [`crate::json::jsonrpc`].

pub mod admin;
pub mod front;
pub mod grpc;
pub mod http;
pub mod http1;
pub mod line;
pub mod machine;
pub mod mcp;
pub mod nats;
pub mod udp;
pub mod unix;
pub mod ws;
