//! The tokio-tungstenite broadcast pattern (its `examples/server.rs`: a map
//! of peer → unbounded sender, each message forwarded to every peer) as the
//! peer of the fan-out bench (`benches/scripts/fanout-vs-tungstenite`),
//! adapted to publish what `hale demo --hub` publishes, when it publishes:
//!
//! - a WebSocket client's first text frame (the hub's subscribe frame) is
//!   answered `{"type":"subscribed","topic":"Fills"}` and puts the peer in
//!   the map, as the hub admits a subscription;
//! - `POST /call/Orders::place` on the trigger listener (HTTP/1.1,
//!   `Connection: close`, as the demo's Public answers) takes the next order
//!   number (from 41, as the demo's), answers the receipt, and sends every
//!   peer the event frame the hub sends for that order's fill,
//!   `{"type":"event","topic":"Fills","seq":N,"payload":{"order":ID,"qty":10,"price":12500}}`.
//!
//! Nothing is checked (no bearer, no body decoded): the peer does the
//! example's work and no more.
//!
//! Usage: `tungstenite-fanout WS-ADDR TRIGGER-ADDR` (defaults
//! 127.0.0.1:19001 and 127.0.0.1:19002).
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use futures_channel::mpsc::{unbounded, UnboundedSender};
use futures_util::{future, pin_mut, StreamExt, TryStreamExt};
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::protocol::Message;

type Tx = UnboundedSender<Message>;
/// The example's shared state: every peer's sender, by its address.
type PeerMap = Arc<Mutex<HashMap<SocketAddr, Tx>>>;

/// The order counter and the event sequence, moved together under one
/// lock so that seq and order rise together as the demo's do.
struct Desk {
    peers: PeerMap,
    next: Mutex<(u64, u64)>,
}

/// The example's `handle_connection`, but a peer joins the map with its
/// subscribe frame (answered `subscribed`) and what it sends later is not
/// broadcast: only the trigger publishes.
async fn handle_connection(peer_map: PeerMap, raw_stream: TcpStream, addr: SocketAddr) {
    let _ = raw_stream.set_nodelay(true);
    let Ok(ws_stream) = tokio_tungstenite::accept_async(raw_stream).await else {
        return;
    };
    let (tx, rx) = unbounded();
    let (outgoing, incoming) = ws_stream.split();
    let subscribe = incoming.try_for_each(|msg| {
        if msg.is_text() {
            let mut peers = peer_map.lock().expect("peers");
            if let std::collections::hash_map::Entry::Vacant(slot) = peers.entry(addr) {
                let _ =
                    tx.unbounded_send(Message::text(r#"{"type":"subscribed","topic":"Fills"}"#));
                slot.insert(tx.clone());
            }
        }
        future::ok(())
    });
    let receive_from_others = rx.map(Ok).forward(outgoing);
    pin_mut!(subscribe, receive_from_others);
    future::select(subscribe, receive_from_others).await;
    peer_map.lock().expect("peers").remove(&addr);
}

/// One trigger: the receipt, and the fill's event to every peer.
async fn place(
    desk: Arc<Desk>,
    _req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (order, seq) = {
        let mut next = desk.next.lock().expect("counter");
        next.0 += 1;
        next.1 += 1;
        *next
    };
    let event = format!(
        r#"{{"type":"event","topic":"Fills","seq":{seq},"payload":{{"order":{order},"qty":10,"price":12500}}}}"#
    );
    // As the example does: one message cloned into every peer's channel.
    let msg = Message::text(event);
    for tx in desk.peers.lock().expect("peers").values() {
        let _ = tx.unbounded_send(msg.clone());
    }
    let body = format!(r#"{{"order":{order},"notional":125000}}"#);
    Ok(Response::builder()
        .header("Content-Type", "application/json")
        .header("Connection", "close")
        .body(Full::new(Bytes::from(body)))
        .expect("a response"))
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let ws_addr = args.next().unwrap_or_else(|| "127.0.0.1:19001".into());
    let trigger_addr = args.next().unwrap_or_else(|| "127.0.0.1:19002".into());
    let desk = Arc::new(Desk {
        peers: PeerMap::new(Mutex::new(HashMap::new())),
        next: Mutex::new((40, 0)),
    });
    let ws = TcpListener::bind(&ws_addr).await.expect("bind ws");
    let trigger = TcpListener::bind(&trigger_addr)
        .await
        .expect("bind trigger");
    println!("tungstenite-fanout: ws on {ws_addr}, trigger on {trigger_addr}");
    let peers = desk.peers.clone();
    tokio::spawn(async move {
        while let Ok((stream, addr)) = ws.accept().await {
            tokio::spawn(handle_connection(peers.clone(), stream, addr));
        }
    });
    loop {
        let Ok((stream, _)) = trigger.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
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
