//! Retrying server calls that failed for a reason that may pass (no
//! connection, timeout, 5xx), waiting twice as long after each failure.

use std::time::Duration;

use crate::Error;

/// How often and how patiently to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// Tries in all (at least one).
    pub tries: u32,
    /// Wait after the first failure.
    pub first: Duration,
    /// Longest single wait.
    pub max: Duration,
}

impl Default for Backoff {
    /// 6 tries over about 30 s: 1, 2, 4, 8, 15 s between them.
    fn default() -> Self {
        Backoff {
            tries: 6,
            first: Duration::from_secs(1),
            max: Duration::from_secs(15),
        }
    }
}

impl Backoff {
    /// The waits between tries, in order.
    pub fn delays(&self) -> Vec<Duration> {
        let mut delays = Vec::new();
        let mut delay = self.first;
        for _ in 1..self.tries.max(1) {
            delays.push(delay.min(self.max));
            delay = delay.saturating_mul(2);
        }
        delays
    }

    /// Calls `f` until it succeeds, fails for good, or the tries run out;
    /// returns the last result.
    pub fn retry<T>(&self, mut f: impl FnMut() -> Result<T, Error>) -> Result<T, Error> {
        let mut delays = self.delays().into_iter();
        loop {
            match f() {
                Err(e) if e.is_transient() => match delays.next() {
                    Some(d) => std::thread::sleep(d),
                    None => return Err(e),
                },
                other => return other,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_the_maximum() {
        let b = Backoff {
            tries: 6,
            first: Duration::from_secs(1),
            max: Duration::from_secs(5),
        };
        let secs: Vec<u64> = b.delays().iter().map(Duration::as_secs).collect();
        assert_eq!(secs, [1, 2, 4, 5, 5]);
    }

    #[test]
    fn transient_failures_are_retried_and_refusals_are_not() {
        let b = Backoff {
            tries: 3,
            first: Duration::ZERO,
            max: Duration::ZERO,
        };
        let mut calls = 0;
        let r: Result<(), Error> = b.retry(|| {
            calls += 1;
            Err(Error::Unreachable("down".into()))
        });
        assert!(r.is_err());
        assert_eq!(calls, 3);

        let mut calls = 0;
        let r: Result<(), Error> = b.retry(|| {
            calls += 1;
            Err(Error::Server {
                status: 409,
                message: "lease gone".into(),
            })
        });
        assert!(r.is_err());
        assert_eq!(calls, 1);

        let mut calls = 0;
        let r = b.retry(|| {
            calls += 1;
            if calls < 2 {
                Err(Error::Server {
                    status: 503,
                    message: "busy".into(),
                })
            } else {
                Ok(7)
            }
        });
        assert_eq!(r.unwrap(), 7);
    }
}
