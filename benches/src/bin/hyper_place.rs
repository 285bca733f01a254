//! A minimal hyper server doing the work `hale demo`'s public exposure does
//! for `Orders::place`: the bearer looked up in a token table, the JSON body
//! decoded into a struct, the handler run, the receipt encoded, and the
//! response sent with `Connection: close`. The peer of the HTTP bench
//! (`benches/scripts/http-vs-hyper`).
//!
//! Usage: `hyper-place ADDR` (e.g. 127.0.0.1:18080).
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

#[derive(serde::Deserialize)]
struct PlaceOrder {
    #[allow(dead_code)]
    symbol: String,
    qty: i64,
    limit: i64,
}

#[derive(serde::Serialize)]
struct OrderReceipt {
    order: i64,
    notional: i64,
}

struct Desk {
    tokens: HashMap<&'static str, &'static str>,
    next: AtomicI64,
}

fn reply(status: StatusCode, body: Vec<u8>) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("Content-Type", "application/json")
        .header("Cache-Control", "no-store")
        .header("Connection", "close")
        .body(Full::new(Bytes::from(body)))
        .expect("a response")
}

async fn place(
    desk: Arc<Desk>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let bearer = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .and_then(|t| desk.tokens.get(t).copied());
    if bearer.is_none() {
        return Ok(reply(
            StatusCode::UNAUTHORIZED,
            br#"{"refusal":{"kind":"unauthenticated","reason":"no such token"}}"#.to_vec(),
        ));
    }
    if req.uri().path() != "/call/Orders::place" {
        return Ok(reply(
            StatusCode::BAD_REQUEST,
            br#"{"refusal":{"kind":"malformed","reason":"unknown_member"}}"#.to_vec(),
        ));
    }
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return Ok(reply(StatusCode::BAD_REQUEST, Vec::new())),
    };
    let Ok(order) = serde_json::from_slice::<PlaceOrder>(&body) else {
        return Ok(reply(
            StatusCode::BAD_REQUEST,
            br#"{"refusal":{"kind":"malformed","reason":"wrong_type: payload"}}"#.to_vec(),
        ));
    };
    let id = desk.next.fetch_add(1, Ordering::Relaxed);
    let receipt = OrderReceipt {
        order: id,
        notional: order.qty * order.limit,
    };
    Ok(reply(
        StatusCode::OK,
        serde_json::to_vec(&receipt).expect("a receipt"),
    ))
}

#[tokio::main]
async fn main() {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:18080".into());
    let listener = TcpListener::bind(&addr).await.expect("bind");
    let desk = Arc::new(Desk {
        tokens: [
            ("t-alice", "alice"),
            ("t-bob", "bob"),
            ("t-carol", "carol"),
            ("t-dave", "dave"),
        ]
        .into(),
        next: AtomicI64::new(41),
    });
    println!(
        "hyper-place listening on {}",
        listener.local_addr().expect("addr")
    );
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let desk = desk.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| place(desk.clone(), req));
            let _ = http1::Builder::new()
                .keep_alive(false)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
