//! `flow`: the Flow host boundary from the command line.
#![forbid(unsafe_code)]
fn main() {
    std::process::exit(limen_drivers::flow_cli::main(
        std::env::args().skip(1).collect(),
    ));
}
