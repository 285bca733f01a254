//! The Python toolkit's publish client (`limen_toolkit.publish`) speaks
//! the control socket's line protocol as the Rust one
//! (`limen_toolkit::publish`) does: one `publish TOPIC JSON` line, `ok` or
//! `error: REASON` back, one connection for the process, and the same
//! refusals. A Unix socket here plays the server. Without `python3` the
//! test skips (`LIMEN_REQUIRE_PEERS=1` fails instead).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::Command;

const SCRIPT: &str = r#"
import os
from limen_toolkit.publish import PublishError, publish

def attempt(topic, payload):
    try:
        publish(topic, payload)
        print("ok")
    except (PublishError, ValueError) as e:
        print(type(e).__name__ + ": " + str(e))

attempt("Fills", '{"order":41,"qty":10,"price":12500}')
attempt("Fills", '{"order":"seven"}')
attempt("Two words", "{}")
attempt("Fills", '{"order":42,"qty":1,"price":5}')
del os.environ["HALE_CONTROL"]
attempt("Fills", "{}")
"#;

#[test]
fn the_python_publish_client_speaks_the_control_socket_as_the_rust_one() {
    let python = Command::new("python3").arg("--version").output();
    if !python.is_ok_and(|o| o.status.success()) {
        limen_clients::absent("python3 is not on the PATH");
        return;
    }
    let dir = std::env::temp_dir().join(format!("limen-py-publish-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("control");
    let listener = UnixListener::bind(&path).unwrap();
    // The server: one connection, two events answered, a third read and
    // the connection closed without an answer.
    let server = std::thread::spawn(move || {
        let (conn, _) = listener.accept().unwrap();
        let mut lines = BufReader::new(conn.try_clone().unwrap()).lines();
        let mut conn = conn;
        let mut seen = Vec::new();
        for answer in [
            "ok",
            "error: the payload is not Fills's: $.order: expected Int",
        ] {
            seen.push(lines.next().unwrap().unwrap());
            writeln!(conn, "{answer}").unwrap();
        }
        seen.push(lines.next().unwrap().unwrap());
        seen
    });
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../toolkits/python/src");
    let out = Command::new("python3")
        .args(["-c", SCRIPT])
        .env("PYTHONPATH", src)
        .env("HALE_CONTROL", &path)
        .output()
        .unwrap();
    let seen = server.join().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        seen,
        [
            r#"publish Fills {"order":41,"qty":10,"price":12500}"#,
            r#"publish Fills {"order":"seven"}"#,
            r#"publish Fills {"order":42,"qty":1,"price":5}"#,
        ]
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "ok\n\
         PublishError: the payload is not Fills's: $.order: expected Int\n\
         ValueError: a topic is one word and a payload one line\n\
         PublishError: the server closed the control socket\n\
         PublishError: HALE_CONTROL is not set: the server was started without --control\n"
    );
}
