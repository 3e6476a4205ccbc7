//! Arguments of `patchperf-runner machines`: a lab admin looking at and
//! steering the fleet from a shell, instead of `curl` against the admin
//! API.

/// Arguments of `patchperf-runner machines`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Exit status: 0 done; 2 refused (a bad command line, or the server answered \
4xx: no such machine, not an admin token, a busy machine not retired); 75 \
the server could not be reached or answered 5xx (retry later).")]
pub struct MachinesArgs {
    /// The patchperf server, e.g. http://perf.example.org:8080.
    #[arg(long, env = "PATCHPERF_SERVER", value_parser = super::server_url)]
    pub server: String,
    /// An admin token (`patchperf-server token create --kind admin`); a
    /// list needs any token the server takes. `$PATCHPERF_ADMIN_TOKEN`,
    /// its earlier variable, still counts and wins.
    #[arg(long, env = "PATCHPERF_TOKEN", hide_env_values = true)]
    pub token: String,
    /// What to do; `list` when left out.
    #[command(subcommand)]
    pub action: Option<MachineAction>,
}

/// What `machines` does.
#[derive(Debug, clap::Subcommand)]
pub enum MachineAction {
    /// One line a machine: its state, jobs in hand, jobs only it may run,
    /// when it was last heard from, and the note of its last state change.
    List {
        /// Retired machines too.
        #[arg(long)]
        retired: bool,
    },
    /// Finish the job in hand, then claim nothing until resumed.
    Drain(Steer),
    /// Claim nothing until resumed (a job in hand still finishes).
    Pause(Steer),
    /// Claim again.
    Resume(Steer),
    /// For good: its pinned comparisons that cannot finish are cancelled;
    /// a machine holding a job is refused (drain it first).
    Retire(Steer),
}

/// A machine to steer, and why.
#[derive(Debug, clap::Args)]
pub struct Steer {
    /// The machine's name.
    pub name: String,
    /// Why, one line, shown on the machine's page and in `list`.
    #[arg(long)]
    pub note: Option<String>,
}
