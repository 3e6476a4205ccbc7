//! How often and how long `submit --wait` keeps following: a poll every
//! `--poll` seconds, the whole wait (`--timeout`),
//! a server that says nothing moves (`--stall-timeout`), and a server that
//! does not answer (ten minutes, so that a server restart does not end a
//! CI job that has waited for hours). Giving up is its own exit status.

use std::time::{Duration, Instant};

use crate::Error;
use crate::cli::submit::SubmitArgs;

/// A server unreachable (or failing) for longer than this ends the wait.
const UNREACHABLE_FOR: Duration = Duration::from_secs(600);

/// The limits of one wait and what has been seen against them.
#[derive(Debug)]
pub struct Patience {
    every: Duration,
    started: Instant,
    timeout: Option<Duration>,
    stall: Option<Duration>,
    stalled_since: Option<Instant>,
    unreachable_since: Option<Instant>,
}

impl Patience {
    /// The limits `args` ask for, counted from now.
    pub fn new(args: &SubmitArgs) -> Self {
        Patience {
            every: Duration::from_secs(args.poll.max(1)),
            started: Instant::now(),
            timeout: args.timeout,
            stall: (args.stall_timeout > 0)
                .then(|| Duration::from_secs(args.stall_timeout.saturating_mul(60))),
            stalled_since: None,
            unreachable_since: None,
        }
    }

    /// Waits until the next poll (`--poll`).
    pub fn pause(&self) {
        std::thread::sleep(self.every);
    }

    /// After a poll the server answered: `what` is `comparison 12`,
    /// `stalled` the server's note on why nothing moves, if it gave one.
    pub fn answered(&mut self, what: &str, stalled: Option<&str>) -> Result<(), Error> {
        self.unreachable_since = None;
        if let Some(limit) = self.timeout {
            if self.started.elapsed() >= limit {
                return Err(Error::GaveUp(format!(
                    "{what} had not ended after --timeout {}; it goes on on the server",
                    minutes(limit)
                )));
            }
        }
        match (stalled, self.stall) {
            (Some(why), Some(limit)) => {
                let since = *self.stalled_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= limit {
                    return Err(Error::GaveUp(format!(
                        "{what} has not moved for --stall-timeout {}: {why}",
                        minutes(limit)
                    )));
                }
            }
            _ => self.stalled_since = None,
        }
        Ok(())
    }

    /// After a poll that failed with `e`: `Ok` to poll again, or `e` when
    /// it is not the passing kind or the server has been gone too long.
    pub fn failed(&mut self, e: Error) -> Result<(), Error> {
        if !e.is_transient() {
            return Err(e);
        }
        let since = *self.unreachable_since.get_or_insert_with(Instant::now);
        if since.elapsed() > UNREACHABLE_FOR {
            return Err(e);
        }
        eprintln!("patchperf-runner: {e} (retrying)");
        Ok(())
    }
}

/// `90 min`, `45 s`.
fn minutes(d: Duration) -> String {
    match d.as_secs() {
        s if s % 60 == 0 => format!("{} min", s / 60),
        s => format!("{s} s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patience(timeout: Option<u64>, stall_minutes: u64) -> Patience {
        Patience {
            every: Duration::from_secs(1),
            started: Instant::now(),
            timeout: timeout.map(Duration::from_secs),
            stall: (stall_minutes > 0).then(|| Duration::from_secs(stall_minutes * 60)),
            stalled_since: None,
            unreachable_since: None,
        }
    }

    #[test]
    fn a_passed_timeout_gives_up_with_its_own_status() {
        let mut p = patience(Some(0), 0);
        let e = p.answered("comparison 7", None).unwrap_err();
        assert_eq!(e.exit_code(), crate::error::exit::GAVE_UP);
        assert!(
            e.to_string().starts_with("comparison 7 had not ended"),
            "{e}"
        );
    }

    #[test]
    fn a_stall_counts_from_when_the_server_first_said_it_and_resets_when_it_moves() {
        let mut p = patience(None, 30);
        p.answered("comparison 7", Some("no runner")).unwrap();
        let first = p.stalled_since.unwrap();
        p.answered("comparison 7", Some("no runner")).unwrap();
        assert_eq!(p.stalled_since, Some(first));
        p.answered("comparison 7", None).unwrap();
        assert_eq!(p.stalled_since, None);
        // Already stalled for longer than the limit:
        p.stalled_since = Some(Instant::now() - Duration::from_secs(31 * 60));
        let e = p.answered("comparison 7", Some("no runner")).unwrap_err();
        assert!(
            e.to_string().contains("--stall-timeout 30 min: no runner"),
            "{e}"
        );
        // 0 waits for ever.
        let mut forever = patience(None, 0);
        forever.stalled_since = Some(Instant::now() - Duration::from_secs(86_400));
        forever.answered("comparison 7", Some("no runner")).unwrap();
    }

    #[test]
    fn a_refusal_ends_the_wait_at_once_and_an_outage_after_ten_minutes() {
        let mut p = patience(None, 30);
        let refused = Error::Server {
            status: 404,
            message: "gone".into(),
        };
        assert!(p.failed(refused).is_err());
        p.failed(Error::Unreachable("refused".into())).unwrap();
        p.unreachable_since = Some(Instant::now() - UNREACHABLE_FOR - Duration::from_secs(1));
        let e = p.failed(Error::Unreachable("refused".into())).unwrap_err();
        assert_eq!(e.exit_code(), crate::error::exit::TEMPFAIL);
    }
}
