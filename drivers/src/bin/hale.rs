//! `hale`: Hale API surfaces from the command line.
fn main() {
    std::process::exit(limen_drivers::hale_cli::main(
        std::env::args().skip(1).collect(),
    ));
}
