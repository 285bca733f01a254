//! Implementations registered in process: bound through the host's
//! override like a process, held to the fingerprints they declare, their
//! answers admitted at the declared types, a panic Unknown.

use std::sync::{Arc, Mutex};

use limen_core::flow::tool::{CallKey, Implementation, InProcessCall, Outcome, Reply, Tool};
use limen_core::flow::{Declaration, Identity, Param, Type, TypeEnv, Value};
use limen_drivers::tool::{Host, HostOptions, Registry};

fn id(name: &str) -> Identity {
    Identity::in_repository("example.com/in-process", "1.0.0", "t.flow", name)
}

fn tool(decl: Declaration) -> Arc<Tool> {
    Arc::new(Tool::new(decl, TypeEnv::new()).unwrap())
}

/// `echo(text: Text) -> Result<Text, Text>`.
fn echo() -> Arc<Tool> {
    tool(Declaration::new(
        id("echo"),
        vec![Param::new("text", Type::Text)],
        Type::Text,
        Type::Text,
    ))
}

/// `first<T>(items: List<T>, fallback: T) -> Result<T, Text>`.
fn first() -> Arc<Tool> {
    let t = || Type::Param("T".into());
    tool(
        Declaration::new(
            id("first"),
            vec![
                Param::new("items", Type::List(Box::new(t()))),
                Param::new("fallback", t()),
            ],
            t(),
            Type::Text,
        )
        .generic(&["T"]),
    )
}

/// Every declaration bound to the in-process implementation `name`.
fn options(tools: &[Arc<Tool>], name: &str, registry: Registry) -> HostOptions {
    HostOptions {
        overrides: tools
            .iter()
            .map(|t| (t.identity().clone(), Implementation::InProcess(name.into())))
            .collect(),
        in_process: registry,
        ..HostOptions::default()
    }
}

fn bind(tools: &[Arc<Tool>], options: &HostOptions) -> Host {
    let binding = Host::bind(tools, options);
    match binding.host {
        Some(host) => host,
        None => panic!("{}", binding.report.refusal().unwrap_or_default()),
    }
}

fn key(call: &str) -> CallKey {
    CallKey::new("run-1", call)
}

/// The echo: `text` answered by what it holds, so each outcome is asked for.
fn echo_registry(seen: Arc<Mutex<Vec<InProcessCall>>>) -> Registry {
    let mut registry = Registry::default();
    registry.register_fn("echo", vec![echo(), first()], move |call| {
        seen.lock().unwrap().push(call.clone());
        if call.tool == id("first") {
            return match call.arg("items") {
                Some(Value::List(items)) if !items.is_empty() => Reply::Ok(items[0].clone()),
                _ => Reply::Ok(call.arg("fallback").cloned().unwrap_or(Value::none())),
            };
        }
        let Some(Value::Text(text)) = call.arg("text") else {
            return Reply::NotRun("no text".into());
        };
        match text.as_ref() {
            "fail" => Reply::Failed(Value::text("asked to fail")),
            "not run" => Reply::NotRun("asked not to run".into()),
            "unknown" => Reply::Unknown("asked to be unknown".into()),
            "int" => Reply::Ok(Value::int(5)),
            "bad error" => Reply::Failed(Value::List(vec![])),
            "panic" => panic!("asked to panic"),
            _ => Reply::Ok(Value::text(text)),
        }
    });
    registry
}

#[test]
fn an_in_process_implementation_answers_every_outcome_with_the_calls_fields() {
    let seen = Arc::default();
    let tools = [echo(), first()];
    let host = bind(
        &tools,
        &options(&tools, "echo", echo_registry(Arc::clone(&seen))),
    );
    assert!(host.report().refusal().is_none());
    assert_eq!(host.processes().count(), 0);
    let call = |k: &str, t: &str| host.call(key(k), &id("echo"), vec![Value::text(t)], vec![]);
    assert_eq!(call("1", "hello"), Outcome::Ok(Value::text("hello")));
    assert_eq!(
        call("2", "fail"),
        Outcome::Failed(Value::text("asked to fail"))
    );
    assert_eq!(
        call("3", "not run"),
        Outcome::NotRun("asked not to run".into())
    );
    assert_eq!(
        call("4", "unknown"),
        Outcome::Unknown("asked to be unknown".into())
    );
    // The fields a call message carries, as values.
    let fields = seen.lock().unwrap()[0].clone();
    assert_eq!(fields.key, key("1"));
    assert_eq!(fields.tool, id("echo"));
    assert_eq!(fields.args, vec![("text".to_owned(), Value::text("hello"))]);
    assert_eq!(fields.type_args, vec![]);
    assert_eq!(fields.expects, None);
    // A generic Tool: its type arguments by name and the schema expected,
    // the answer decoded at the type the caller bound.
    let ints = Value::List(vec![Value::int(7), Value::int(8)]);
    assert_eq!(
        host.call(
            key("5"),
            &id("first"),
            vec![ints, Value::int(0)],
            vec![Type::Int]
        ),
        Outcome::Ok(Value::int(7))
    );
    let fields = seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!(fields.type_args, vec![("T".to_owned(), Type::Int)]);
    assert_eq!(
        fields.expects.unwrap()["type"],
        serde_json::Value::from("integer")
    );
    // Calls overlap: each answered by its own outcome.
    let pending: Vec<_> = (0..32)
        .map(|i| {
            let t = format!("call {i}");
            let rx = host
                .start_call(
                    key(&format!("m{i}")),
                    &id("echo"),
                    vec![Value::text(&t)],
                    vec![],
                )
                .unwrap();
            (t, rx)
        })
        .collect();
    for (t, rx) in pending {
        assert_eq!(rx.recv().unwrap(), Outcome::Ok(Value::text(&t)));
    }
}

#[test]
fn an_answer_that_does_not_decode_at_the_declared_type_is_bad_reply() {
    let tools = [echo(), first()];
    let host = bind(
        &tools,
        &options(&tools, "echo", echo_registry(Arc::default())),
    );
    let call = |k: &str, t: &str| host.call(key(k), &id("echo"), vec![Value::text(t)], vec![]);
    assert_eq!(
        call("1", "int"),
        Outcome::BadReply(
            "the Ok value does not decode at the success type: $: expected Text, found 5".into()
        )
    );
    let Outcome::BadReply(why) = call("2", "bad error") else {
        panic!("a Failed value that is not Text is BadReply");
    };
    assert!(
        why.starts_with("the Failed value does not decode at the error type: "),
        "{why}"
    );
    // Bound at Text, the generic's answer (an Int) does not decode.
    let ints = Value::List(vec![Value::int(7)]);
    let Outcome::BadReply(why) = host.call(
        key("3"),
        &id("first"),
        vec![ints, Value::text("none")],
        vec![Type::Text],
    ) else {
        panic!("an Int where Text is bound is BadReply");
    };
    assert!(why.starts_with("the Ok value does not decode"), "{why}");
}

#[test]
fn a_panic_in_the_function_is_unknown_and_the_host_goes_on() {
    let tools = [echo()];
    let host = bind(
        &tools,
        &options(&tools, "echo", echo_registry(Arc::default())),
    );
    let call = |k: &str, t: &str| host.call(key(k), &id("echo"), vec![Value::text(t)], vec![]);
    assert_eq!(
        call("1", "panic"),
        Outcome::Unknown("the in-process implementation panicked: asked to panic".into())
    );
    assert_eq!(call("2", "after"), Outcome::Ok(Value::text("after")));
    // Arity is refused before anything runs, as for a process.
    assert_eq!(
        host.call(key("3"), &id("echo"), vec![], vec![]),
        Outcome::NotRun("the Tool takes 1 arguments, given 0".into())
    );
}

#[test]
fn a_second_call_with_a_key_that_is_out_is_refused() {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let rx = Mutex::new(rx);
    let mut registry = Registry::default();
    registry.register_fn("slow", vec![echo()], move |call| {
        let _ = rx.lock().unwrap().recv();
        Reply::Ok(call.arg("text").cloned().unwrap_or(Value::text("")))
    });
    let tools = [echo()];
    let host = bind(&tools, &options(&tools, "slow", registry));
    let out = host
        .start_call(key("1"), &id("echo"), vec![Value::text("a")], vec![])
        .unwrap();
    let again = host.start_call(key("1"), &id("echo"), vec![Value::text("b")], vec![]);
    assert_eq!(
        again.err(),
        Some("a call with run \"run-1\", call \"1\" is already open".into())
    );
    tx.send(()).unwrap();
    assert_eq!(out.recv().unwrap(), Outcome::Ok(Value::text("a")));
}

#[test]
fn binding_holds_an_in_process_implementation_to_its_fingerprints() {
    // The function was written against `echo(text: Text) -> Result<Text,
    // Int>`: the run's declaration has another error type, so another
    // fingerprint, and the run is refused as it would be for a process.
    let stale = tool(Declaration::new(
        id("echo"),
        vec![Param::new("text", Type::Text)],
        Type::Text,
        Type::Int,
    ));
    let mut registry = Registry::default();
    registry.register_fn("stale", vec![stale.clone()], |_| {
        Reply::Unknown("never called".into())
    });
    let tools = [echo()];
    let binding = Host::bind(&tools, &options(&tools, "stale", registry));
    assert!(binding.host.is_none());
    assert_eq!(
        binding.report.refusal().unwrap(),
        format!(
            "the run is refused: 1 of 1 declarations is not bound\n  {}: mismatch: bound to \
             in-process implementation `stale` (the host's override), whose describe lists \
             fingerprint {} where the declaration's is {}",
            id("echo"),
            stale.fingerprint,
            echo().fingerprint
        )
    );
    // One that does not declare the Tool at all does not serve it.
    let mut registry = Registry::default();
    registry.register_fn("other", vec![first()], |_| Reply::NotRun("no".into()));
    let binding = Host::bind(&tools, &options(&tools, "other", registry));
    let refusal = binding.report.refusal().unwrap();
    assert!(
        refusal.ends_with("whose describe does not list it"),
        "{refusal}"
    );
    // A name nobody registered is unavailable.
    let binding = Host::bind(&tools, &options(&tools, "nobody", Registry::default()));
    assert_eq!(
        binding.report.refusal().unwrap(),
        format!(
            "the run is refused: 1 of 1 declarations is not bound\n  {}: unavailable: bound to \
             in-process implementation `nobody` (the host's override), which is not registered \
             with this host",
            id("echo")
        )
    );
    // The registry is what an override names: the same name, registered,
    // binds.
    let mut registry = Registry::default();
    registry.register_fn("nobody", vec![echo()], |c| {
        Reply::Ok(c.arg("text").cloned().unwrap_or(Value::none()))
    });
    let host = bind(&tools, &options(&tools, "nobody", registry));
    assert_eq!(
        host.call(key("1"), &id("echo"), vec![Value::text("x")], vec![]),
        Outcome::Ok(Value::text("x"))
    );
}
