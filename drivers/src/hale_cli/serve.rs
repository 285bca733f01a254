//! `hale serve PROGRAM.hl [--config serve.toml] [--bind NAME=ADDR]…
//! [--grant SOURCE.ROLE=HOLDER]… [--check-config] [--control PATH]
//! [--loops N] [--broker nats://HOST:PORT]`: the program checked as `hale check` checks it (and not
//! served on any diagnostic), then served with the handlers and sources
//! the configuration names ([`crate::program`]).

use super::cli::{PublishArgs, ServeArgs, ToolsArgs};
use super::demo::{stop_limit, Signals, BOOT_EXIT};
use crate::program::config::ServeConfig;
use crate::program::{Application, Handlers, ServeOptions};

/// Runs `hale serve` with its arguments.
pub fn run(args: &ServeArgs) -> i32 {
    let Ok(program) = super::check::checked(&args.file, false) else {
        return 1;
    };
    let config = match &args.config {
        Some(path) => match ServeConfig::read(path) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("hale serve: {e}");
                return BOOT_EXIT;
            }
        },
        None => ServeConfig::default(),
    };
    let options = ServeOptions {
        file: args.file.clone(),
        config,
        binds: args.bind.iter().cloned().collect(),
        grants: args.grant.clone(),
        loops: args.loops.unwrap_or(0),
        bound: args.bound,
        log_calls: args.log == "calls",
        metrics: args.metrics.clone(),
        control: args.control.clone(),
        broker: args.broker.clone(),
        drain_grace: args.drain_grace.unwrap_or_default(),
        ..ServeOptions::default()
    };
    if args.check_config {
        return match Application::check(&program, &options) {
            Ok(()) => {
                println!("hale serve: {} and its configuration hold", args.file);
                0
            }
            Err(e) => {
                for line in &e.0 {
                    eprintln!("hale serve: {line}");
                }
                BOOT_EXIT
            }
        };
    }
    // Caught before any thread starts, as `hale demo` does.
    let signals = match Signals::catch() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("hale serve: cannot catch signals: {e}");
            return 1;
        }
    };
    let app = match Application::boot(&program, &options, Handlers::new()) {
        Ok(a) => a,
        Err(e) => {
            for line in &e.0 {
                eprintln!("hale serve: {line}");
            }
            return BOOT_EXIT;
        }
    };
    print!("{}", app.banner());
    let stop = app.stop_handle();
    std::thread::spawn(move || {
        signals.wait(None);
        eprintln!("hale serve: stopping");
        stop.drain_then_stop();
        let limit = stop_limit(&stop);
        if !signals.wait(Some(limit)) {
            eprintln!("hale serve: not stopped after {limit} s; exiting");
        }
        std::process::exit(130);
    });
    match app.run() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("hale serve: {e}");
            1
        }
    }
}

/// Runs `hale api tools`: the locus's rows as a `flow tools` listing.
pub fn tools(args: &ToolsArgs) -> i32 {
    let Ok(program) = super::check::checked(&args.file, false) else {
        return 1;
    };
    match limen_core::hale::tools::listing(&program, &args.locus) {
        Ok(listing) => {
            println!(
                "{}",
                serde_json::to_string_pretty(&listing).unwrap_or_default()
            );
            0
        }
        Err(e) => {
            eprintln!("hale api tools: {e}");
            1
        }
    }
}

/// Runs `hale publish SOCKET TOPIC JSON`.
pub fn publish(args: &PublishArgs) -> i32 {
    use std::io::{BufRead, BufReader, Read, Write};
    let text = if args.payload == "-" {
        let mut t = String::new();
        if let Err(e) = std::io::stdin().read_to_string(&mut t) {
            eprintln!("hale publish: cannot read the payload: {e}");
            return 5;
        }
        t
    } else {
        args.payload.clone()
    };
    // One line on the socket: the payload compacted.
    let payload: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("hale publish: the payload is not JSON: {e}");
            return 5;
        }
    };
    let reached = std::os::unix::net::UnixStream::connect(&args.socket).and_then(|mut s| {
        s.write_all(format!("publish {} {payload}\n", args.topic).as_bytes())?;
        let mut line = String::new();
        BufReader::new(s).read_line(&mut line)?;
        Ok(line)
    });
    match reached {
        Ok(line) if line.trim() == "ok" => 0,
        Ok(line) => {
            eprintln!(
                "hale publish: {}",
                line.trim().strip_prefix("error: ").unwrap_or(line.trim())
            );
            1
        }
        Err(e) => {
            eprintln!("hale publish: {}: {e}", args.socket.display());
            4
        }
    }
}
