//! `patchperf-runner`: entry point (being built; see issues 3, 4, 6).

fn main() {
    eprintln!("patchperf-runner: not built yet");
    std::process::exit(2);
}
