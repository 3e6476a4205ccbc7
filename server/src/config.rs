//! Tunables of a running server. Defaults suit a small lab; tests shorten
//! the lease and the claim wait so they never sleep long.

use std::path::PathBuf;
use std::time::Duration;

/// Server configuration shared by all handlers through [`crate::AppState`].
#[derive(Debug, Clone)]
pub struct Config {
    /// How long a claim or a heartbeat keeps a job leased.
    pub lease: Duration,
    /// How many times a job may be claimed before a lease that runs out
    /// fails it (reason `lease-expired`).
    pub max_attempts: u32,
    /// Upper bound of a claim's long-poll, whatever the runner asks for.
    pub claim_wait_max: Duration,
    /// How often a waiting claim looks for work when no notification came
    /// (jobs become claimable by leases running out, which nobody announces).
    pub claim_poll: Duration,
    /// Largest request body accepted, in bytes.
    pub body_limit: usize,
    /// Absolute base URL for links in answers (`https://perf.example.org`);
    /// links are relative when unset.
    pub public_url: Option<String>,
    /// Longest a report's statistics or its plots may compute before the
    /// request answers 503 (see `domain::report::offload`).
    pub report_time_limit: Duration,
    /// Whether reading (the pages, and every `GET` of the API but
    /// `/healthz`) needs a token too; any valid token kind may read.
    pub private_reads: bool,
    /// Where the bare mirrors of the repositories that ranges name are
    /// kept (see [`crate::git`]).
    pub git_dir: PathBuf,
    /// Whether a range may name a repository on the server's own disk (an
    /// absolute path or `file://`); off unless the lab runs the server
    /// beside its repositories.
    pub local_git: bool,
    /// Longest one git command may take (a first clone of linux is
    /// minutes).
    pub git_timeout: Duration,
    /// Longest a clone or fetch may go without receiving a byte (a remote
    /// that accepts and never answers is given up after this, not after
    /// `git_timeout`).
    pub git_stall_timeout: Duration,
    /// Longest one read of a list's archive may take, its git commands
    /// included: a remote that drips a byte now and then (never stalling)
    /// holds one list's read this long at most, never the other lists'.
    /// A push hook's read is bounded by a tenth of it.
    pub list_read_timeout: Duration,
    /// Most git commands this server runs at once; a request that finds
    /// none free within a moment is answered 503 with `Retry-After`.
    pub git_jobs: usize,
    /// Most clones and fetches at once from one remote (`host:port`).
    pub git_jobs_per_remote: usize,
    /// Most bytes the mirrors under `git_dir` may take together; the least
    /// recently used go first (0: no bound).
    pub git_cache_max_bytes: u64,
    /// Whether a git remote or webhook a user names may be at a loopback,
    /// link-local, private or unique-local address (see
    /// [`crate::destination`]); off unless the lab's own servers are such.
    pub allow_private_destinations: bool,
    /// The SMTP relay reports are mailed through, as lettre reads it
    /// (`smtp://host:25`, `smtp://host:587?tls=required`,
    /// `smtps://user:pass@host`); without one, mail stays queued.
    pub smtp_url: Option<String>,
    /// The mails' `From:` (`patchperf <perf@example.org>`).
    pub mail_from: Option<String>,
    /// Whether a machine gets an A/A comparison before it runs an A/B
    /// comparison of a kind of run no current A/A on it measured (see
    /// [`crate::domain::calibration::automatic`]). `serve` turns it on unless told not
    /// to; off here, so that a test sees only the jobs it queued.
    pub auto_calibrate: bool,
    /// How long an A/A comparison calibrates δ for: a comparison created
    /// longer than this after it is judged with the mode's default until
    /// the machine measures its noise again.
    pub calibration_max_age: Duration,
    /// How often the sender looks for due mail and webhook calls.
    pub outbox_poll: Duration,
    /// Wait before the first retry of a failed send; each later one waits
    /// twice as long, at most an hour.
    pub outbox_retry: Duration,
    /// Attempts before a message is given up (`failed`).
    pub outbox_max_attempts: u32,
    /// Comparisons finished longer ago than this lose their bulky data
    /// (see [`crate::domain::retention`]) on a schedule; `None`: only when
    /// `patchperf-server prune` is run.
    pub prune_after: Option<Duration>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            lease: Duration::from_secs(120),
            max_attempts: 3,
            claim_wait_max: Duration::from_secs(30),
            claim_poll: Duration::from_secs(2),
            body_limit: 16 * 1024 * 1024,
            public_url: None,
            report_time_limit: Duration::from_secs(10),
            private_reads: false,
            git_dir: std::env::temp_dir().join("patchperf-server-git"),
            local_git: false,
            git_timeout: Duration::from_secs(1800),
            git_stall_timeout: Duration::from_secs(60),
            list_read_timeout: Duration::from_secs(300),
            git_jobs: 8,
            git_jobs_per_remote: 2,
            git_cache_max_bytes: 32 << 30,
            allow_private_destinations: false,
            smtp_url: None,
            mail_from: None,
            auto_calibrate: false,
            calibration_max_age: Duration::from_secs(30 * 86_400),
            outbox_poll: Duration::from_secs(5),
            outbox_retry: Duration::from_secs(60),
            prune_after: None,
            outbox_max_attempts: 10,
        }
    }
}

impl Config {
    /// `path` prefixed with the public URL when one is configured.
    pub fn link(&self, path: &str) -> String {
        match &self.public_url {
            Some(base) => format!("{}{path}", base.trim_end_matches('/')),
            None => path.to_string(),
        }
    }
}
