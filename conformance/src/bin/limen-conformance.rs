//! `limen-conformance`: replay a corpus through limen's machines, check a
//! live server against it, or hold a corpus to the reference fixtures.
#![forbid(unsafe_code)]

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(limen_conformance::cli::main(args));
}
