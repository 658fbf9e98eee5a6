fn main() {
    std::process::exit(abcd::cli::main());
}
