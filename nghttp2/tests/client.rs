//! A client session against a server session in memory: the request's
//! head and body reach the server, and the response's head, body and
//! trailers (or its one trailers-only HEADERS frame) reach the client,
//! each in its own event.

use limen_nghttp2::{H2Event, Limits, Session};

/// Moves everything each side queued to the other until neither has more.
fn pump(client: &mut Session, server: &mut Session) {
    loop {
        let to_server = {
            client.flush().unwrap();
            client.pending_output()
        }
        .to_vec();
        client.consume_output(0, to_server.len());
        server.handle_data(0, &to_server).unwrap();
        let to_client = {
            server.flush().unwrap();
            server.pending_output()
        }
        .to_vec();
        server.consume_output(0, to_client.len());
        client.handle_data(0, &to_client).unwrap();
        if to_server.is_empty() && to_client.is_empty() {
            return;
        }
    }
}

fn events(s: &mut Session) -> Vec<H2Event> {
    std::iter::from_fn(|| s.poll_event()).collect()
}

fn f(n: &str, v: &str) -> (Vec<u8>, Vec<u8>) {
    (n.as_bytes().to_vec(), v.as_bytes().to_vec())
}

#[test]
fn a_client_reads_the_response_head_body_and_trailers() {
    let mut client = Session::client(Limits::default()).unwrap();
    let mut server = Session::server(Limits::default()).unwrap();
    let head: [(&[u8], &[u8]); 4] = [
        (b":method", b"POST"),
        (b":scheme", b"http"),
        (b":path", b"/S/m"),
        (b":authority", b"x"),
    ];
    let stream = client.request(&head, Some(b"hello".to_vec())).unwrap();
    assert_eq!(stream, 1);
    pump(&mut client, &mut server);
    let got = events(&mut server);
    assert!(
        matches!(&got[0], H2Event::Headers { stream: 1, fields, end_stream: false }
            if fields[2] == f(":path", "/S/m")),
        "{got:?}"
    );
    assert!(
        got.contains(&H2Event::Data {
            stream: 1,
            bytes: b"hello".to_vec()
        }),
        "{got:?}"
    );
    assert!(got.contains(&H2Event::EndStream { stream: 1 }), "{got:?}");
    server.consume(1, 5).unwrap();
    let status: [(&[u8], &[u8]); 1] = [(b":status", b"200")];
    server
        .respond(1, &status, b"back".to_vec(), vec![f("grpc-status", "0")])
        .unwrap();
    pump(&mut client, &mut server);
    let got: Vec<H2Event> = events(&mut client)
        .into_iter()
        .filter(|e| !matches!(e, H2Event::Closed { .. }))
        .collect();
    assert_eq!(
        got,
        vec![
            H2Event::Headers {
                stream: 1,
                fields: vec![f(":status", "200")],
                end_stream: false
            },
            H2Event::Data {
                stream: 1,
                bytes: b"back".to_vec()
            },
            H2Event::Trailers {
                stream: 1,
                fields: vec![f("grpc-status", "0")]
            },
            H2Event::EndStream { stream: 1 },
        ]
    );
}

#[test]
fn a_trailers_only_response_is_one_head_that_ends_the_stream() {
    let mut client = Session::client(Limits::default()).unwrap();
    let mut server = Session::server(Limits::default()).unwrap();
    let head: [(&[u8], &[u8]); 4] = [
        (b":method", b"POST"),
        (b":scheme", b"http"),
        (b":path", b"/S/m"),
        (b":authority", b"x"),
    ];
    client.request(&head, None).unwrap();
    pump(&mut client, &mut server);
    let got = events(&mut server);
    assert!(
        matches!(
            &got[0],
            H2Event::Headers {
                end_stream: true,
                ..
            }
        ),
        "{got:?}"
    );
    let only: [(&[u8], &[u8]); 2] = [(b":status", b"200"), (b"grpc-status", b"3")];
    server.respond_headers_only(1, &only).unwrap();
    pump(&mut client, &mut server);
    let got = events(&mut client);
    assert_eq!(
        got[0],
        H2Event::Headers {
            stream: 1,
            fields: vec![f(":status", "200"), f("grpc-status", "3")],
            end_stream: true
        }
    );
}
