//! `patchperf-server`: entry point (being built; see issue 2).

fn main() {
    eprintln!("patchperf-server: not built yet");
    std::process::exit(2);
}
