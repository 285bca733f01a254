//! docs/tool-protocol.md is the protocol: every message it shows is exactly
//! what the host's and the toolkit's machines write, and each machine reads
//! the other's as the document says.

use std::collections::BTreeMap;
use std::sync::Arc;

use limen_core::flow::tool::toolkit::{ToolkitEvent, ToolkitLimits};
use limen_core::flow::tool::{
    Call, CallKey, HostConn, HostEvent, Limits, Outcome, Reply, Tool, ToolConn, ToolkitConn,
};
use limen_core::flow::{Declaration, Identity, Param, Type, TypeEnv, Value};

/// The document's messages, by the name after `tool-protocol:` in each
/// fenced block's info string.
fn messages() -> BTreeMap<String, String> {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/tool-protocol.md"
    ))
    .expect("docs/tool-protocol.md");
    let mut out = BTreeMap::new();
    let mut lines = doc.lines();
    while let Some(line) = lines.next() {
        if let Some(name) = line.strip_prefix("```json tool-protocol:") {
            let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
            out.insert(name.trim().to_owned(), body.join("\n"));
        }
    }
    out
}

fn search() -> Arc<Tool> {
    let decl = Declaration::new(
        Identity::in_repository("example.com/acme", "1.2.0", "search.flow", "search"),
        vec![
            Param::new("query", Type::Text),
            Param::new("limit", Type::Int),
        ],
        Type::list(Type::Text),
        Type::Text,
    )
    .doc("Searches the index.");
    Arc::new(Tool::new(decl, TypeEnv::new()).unwrap())
}

fn parse() -> Arc<Tool> {
    let decl = Declaration::new(
        Identity::in_repository("example.com/acme", "1.2.0", "json.flow", "parse"),
        vec![Param::new("text", Type::Text)],
        Type::param("T"),
        Type::Text,
    )
    .generic(&["T"]);
    Arc::new(Tool::new(decl, TypeEnv::new()).unwrap())
}

fn line(conn: &mut impl ToolConn) -> String {
    let out = conn.pending_output().to_vec();
    conn.consume_output(0, out.len());
    String::from_utf8(out).unwrap().trim_end().to_owned()
}

fn toolkit_line(tk: &mut ToolkitConn) -> String {
    let out = tk.pending_output().to_vec();
    tk.consume_output(0, out.len());
    String::from_utf8(out).unwrap().trim_end().to_owned()
}

#[test]
fn every_message_in_the_document_is_the_one_the_machines_write() {
    let m = messages();
    let get = |name: &str| {
        m.get(name)
            .unwrap_or_else(|| panic!("no block {name}"))
            .clone()
    };
    let mut host = HostConn::new(Limits::default());
    let mut tk = ToolkitConn::new(vec![search(), parse()], ToolkitLimits::default());

    // describe, both ways.
    host.describe(0);
    assert_eq!(host.poll_event(), Some(HostEvent::Start));
    host.handle_started(0);
    assert_eq!(line(&mut host), get("describe"));
    tk.handle_data(0, format!("{}\n", get("describe")).as_bytes());
    assert_eq!(toolkit_line(&mut tk), get("describe-response"));
    host.handle_data(0, format!("{}\n", get("describe-response")).as_bytes());
    assert!(matches!(
        host.poll_event(),
        Some(HostEvent::Described(Ok(_)))
    ));

    // call.
    let call = Call {
        key: CallKey::new("run-5f2c", "17"),
        tool: search(),
        args: vec![Value::text("rust"), Value::int(10)],
        type_args: vec![],
    };
    host.send_call(0, call).unwrap();
    assert_eq!(line(&mut host), get("call"));
    tk.handle_data(0, format!("{}\n", get("call")).as_bytes());
    assert_eq!(
        tk.poll_event(),
        Some(ToolkitEvent::Call(limen_core::flow::tool::Incoming {
            key: CallKey::new("run-5f2c", "17"),
            tool: 0,
            args: vec![Value::text("rust"), Value::int(10)],
            expects: None,
        }))
    );

    // A generic call carries `expects`.
    let generic = Call {
        key: CallKey::new("run-5f2c", "18"),
        tool: parse(),
        args: vec![Value::text("[1, 2]")],
        type_args: vec![Type::list(Type::Int)],
    };
    host.send_call(0, generic).unwrap();
    assert_eq!(line(&mut host), get("call-generic"));
    tk.handle_data(0, format!("{}\n", get("call-generic")).as_bytes());
    assert!(matches!(tk.poll_event(), Some(ToolkitEvent::Call(c)) if c.expects.is_some()));

    // cancel.
    host.cancel(0, &CallKey::new("run-5f2c", "17"));
    assert_eq!(line(&mut host), get("cancel"));
    tk.handle_data(0, format!("{}\n", get("cancel")).as_bytes());
    assert_eq!(
        tk.poll_event(),
        Some(ToolkitEvent::Cancel(CallKey::new("run-5f2c", "17")))
    );

    // Each reply: written by the toolkit, admitted by the host as the
    // document says.
    let hits = Value::List(vec![Value::text("rust-lang.org"), Value::text("docs.rs")]);
    let cases = [
        ("reply-ok", Reply::Ok(hits.clone()), Outcome::Ok(hits)),
        (
            "reply-failed",
            Reply::Failed(Value::text("the index is offline")),
            Outcome::Failed(Value::text("the index is offline")),
        ),
        (
            "reply-notrun",
            Reply::NotRun("rate limited before the search started".into()),
            Outcome::NotRun("rate limited before the search started".into()),
        ),
        (
            "reply-unknown",
            Reply::Unknown("the upstream connection dropped mid-request".into()),
            Outcome::Unknown("the upstream connection dropped mid-request".into()),
        ),
    ];
    for (i, (name, reply, outcome)) in cases.into_iter().enumerate() {
        let call_id = (20 + i).to_string();
        let key = CallKey::new("run-5f2c", &call_id);
        host.send_call(
            0,
            Call {
                key: key.clone(),
                tool: search(),
                args: vec![Value::text("rust"), Value::int(10)],
                type_args: vec![],
            },
        )
        .unwrap();
        let sent = line(&mut host);
        tk.handle_data(0, format!("{sent}\n").as_bytes());
        while tk.poll_event().is_some() {}
        assert!(tk.reply(0, &key, &reply));
        let written = toolkit_line(&mut tk);
        assert_eq!(
            written,
            get(name).replace("\"callId\":\"17\"", &format!("\"callId\":\"{call_id}\"")),
            "{name}"
        );
        host.handle_data(0, format!("{written}\n").as_bytes());
        assert_eq!(
            host.poll_event(),
            Some(HostEvent::Closed { key, outcome }),
            "{name}"
        );
    }

    // A request the implementation does not have.
    tk.handle_data(0, format!("{}\n", get("unknown-method")).as_bytes());
    assert_eq!(toolkit_line(&mut tk), get("unknown-method-response"));
}
