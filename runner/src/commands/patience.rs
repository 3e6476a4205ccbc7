//! How often and how long `submit --wait` keeps following: a poll every
//! `--poll` seconds, the whole wait (`--timeout`, which bounds a server
//! outage too), a server that says nothing moves (`--stall-timeout`), and
//! a server that does not answer (ten minutes without `--timeout`, so
//! that a server restart does not end a CI job that has waited for hours).
//! While the server does not answer, polls back off (doubling up to a
//! minute) and the outage is said once when it starts and once when it
//! ends, naming what is followed, not at every poll. Giving up is its own
//! exit status.

use std::time::{Duration, Instant};

use crate::Error;

/// A server unreachable (or failing) for longer than this ends the wait
/// when no `--timeout` bounds it.
const UNREACHABLE_FOR: Duration = Duration::from_secs(600);

/// Longest pause between polls while the server does not answer.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// The limits of one wait and what has been seen against them.
#[derive(Debug)]
pub struct Patience {
    every: Duration,
    started: Instant,
    timeout: Option<Duration>,
    stall: Option<Duration>,
    stalled_since: Option<Instant>,
    unreachable_since: Option<Instant>,
    /// The pause before the next poll (longer while the server is gone).
    next_pause: Duration,
}

impl Patience {
    /// A poll every `poll` (at least a second), for at most `timeout`,
    /// and at most `stall` (zero: for ever) while the server says nothing
    /// moves; counted from now.
    pub fn new(poll: Duration, timeout: Option<Duration>, stall: Duration) -> Self {
        let every = poll.max(Duration::from_secs(1));
        Patience {
            every,
            started: Instant::now(),
            timeout,
            stall: (!stall.is_zero()).then_some(stall),
            stalled_since: None,
            unreachable_since: None,
            next_pause: every,
        }
    }

    /// Waits until the next poll: `--poll`, longer while the server does
    /// not answer, never past `--timeout`; at once on SIGINT or SIGTERM.
    pub fn pause(&self) {
        let left = self.timeout.map_or(self.next_pause, |t| {
            t.saturating_sub(self.started.elapsed())
        });
        let until = Instant::now() + self.next_pause.min(left);
        while !crate::proc::interrupted() {
            let now = Instant::now();
            if now >= until {
                break;
            }
            std::thread::sleep((until - now).min(Duration::from_millis(100)));
        }
    }

    /// After a poll the server answered: `what` is `comparison 12`,
    /// `stalled` the server's note on why nothing moves, if it gave one.
    pub fn answered(&mut self, what: &str, stalled: Option<&str>) -> Result<(), Error> {
        if let Some(since) = self.unreachable_since.take() {
            eprintln!(
                "patchperf-runner: {what}: the server answers again after {}",
                minutes(Duration::from_secs(since.elapsed().as_secs()))
            );
        }
        self.next_pause = self.every;
        self.timed_out(what, "had not ended")?;
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

    /// After a poll for `what` that failed with `e`: `Ok` to poll again
    /// (after a longer pause), or the end of the wait when `e` is not the
    /// passing kind, `--timeout` has passed, or (without one) the server
    /// has been gone for ten minutes.
    pub fn failed(&mut self, what: &str, e: Error) -> Result<(), Error> {
        if !e.is_transient() {
            return Err(e);
        }
        let first = self.unreachable_since.is_none();
        let since = *self.unreachable_since.get_or_insert_with(Instant::now);
        self.timed_out(what, &format!("had not ended ({e})"))?;
        if self.timeout.is_none() && since.elapsed() > UNREACHABLE_FOR {
            return Err(e);
        }
        if first {
            let until = self.timeout.map_or_else(
                || format!("for up to {}", minutes(UNREACHABLE_FOR)),
                |t| format!("until --timeout {}", minutes(t)),
            );
            eprintln!("patchperf-runner: {what}: {e}; retrying, backing off, {until}");
        }
        self.next_pause = (self.next_pause * 2).min(MAX_BACKOFF).max(self.every);
        Ok(())
    }

    fn timed_out(&self, what: &str, state: &str) -> Result<(), Error> {
        match self.timeout {
            Some(limit) if self.started.elapsed() >= limit => Err(Error::GaveUp(format!(
                "{what} {state} after --timeout {}; it goes on on the server",
                minutes(limit)
            ))),
            _ => Ok(()),
        }
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
            next_pause: Duration::from_secs(1),
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
        assert!(p.failed("comparison 7", refused).is_err());
        p.failed("comparison 7", Error::Unreachable("refused".into()))
            .unwrap();
        p.unreachable_since = Some(Instant::now() - UNREACHABLE_FOR - Duration::from_secs(1));
        let e = p
            .failed("comparison 7", Error::Unreachable("refused".into()))
            .unwrap_err();
        assert_eq!(e.exit_code(), crate::error::exit::TEMPFAIL);
    }

    #[test]
    fn a_timeout_bounds_an_outage_and_polls_back_off_until_the_server_answers() {
        let mut p = patience(Some(20), 0);
        let gone = || Error::Unreachable("connection refused".into());
        p.failed("comparison 7", gone()).unwrap();
        assert_eq!(p.next_pause, Duration::from_secs(2));
        for _ in 0..10 {
            p.failed("comparison 7", gone()).unwrap();
        }
        assert_eq!(p.next_pause, MAX_BACKOFF);
        p.answered("comparison 7", None).unwrap();
        assert_eq!(p.next_pause, Duration::from_secs(1));
        assert_eq!(p.unreachable_since, None);
        // The server gone when --timeout passes: the wait ends then, not
        // ten minutes later, with the give-up status.
        p.started = Instant::now() - Duration::from_secs(21);
        let e = p.failed("comparison 7", gone()).unwrap_err();
        assert_eq!(e.exit_code(), crate::error::exit::GAVE_UP);
        assert!(
            e.to_string().starts_with("comparison 7 had not ended (")
                && e.to_string().contains("--timeout 20 s"),
            "{e}"
        );
    }
}
