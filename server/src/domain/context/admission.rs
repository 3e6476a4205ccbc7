//! How many requests of one costly kind run at once: in all, and per API
//! token. Mail handed in (`POST /api/v1/lists/{id}/messages`, an mbox of
//! up to 10,000 messages) holds a database connection while it is stored;
//! unbounded, a few callers took every connection of the pool and runner
//! claims and pages answered 500. Past the bound a caller is told to come
//! back (429 with `Retry-After`), never queued behind the others.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::Error;

/// When a refused caller may try again, in seconds.
pub const RETRY_AFTER_SECONDS: u64 = 5;

/// The bound of one kind of request.
#[derive(Debug)]
pub struct Admission {
    what: &'static str,
    in_all: usize,
    per_token: usize,
    running: Mutex<Running>,
}

#[derive(Debug, Default)]
struct Running {
    in_all: usize,
    by_token: HashMap<i64, usize>,
}

/// One admitted request; its place is given back when dropped.
#[derive(Debug)]
pub struct Admitted {
    of: Arc<Admission>,
    token: i64,
}

impl Admission {
    /// At most `in_all` of `what` at once, `per_token` of one token.
    pub fn new(what: &'static str, in_all: usize, per_token: usize) -> Arc<Admission> {
        Arc::new(Admission {
            what,
            in_all: in_all.max(1),
            per_token: per_token.max(1),
            running: Mutex::default(),
        })
    }

    /// Admits a request of token `token`, or refuses it (`Error::Busy`).
    pub fn enter(self: &Arc<Self>, token: i64) -> Result<Admitted, Error> {
        let mut r = self.running.lock().unwrap_or_else(|p| p.into_inner());
        let mine = r.by_token.get(&token).copied().unwrap_or(0);
        let busy = if mine >= self.per_token {
            Some(format!(
                "{}: this token already has {mine} running, the most one token may at once",
                self.what
            ))
        } else if r.in_all >= self.in_all {
            Some(format!(
                "{}: {} running, the most the server takes at once",
                self.what, r.in_all
            ))
        } else {
            None
        };
        if let Some(message) = busy {
            return Err(Error::Busy {
                message: format!("{message}: try again in {RETRY_AFTER_SECONDS} s"),
                retry_after: RETRY_AFTER_SECONDS,
            });
        }
        r.in_all += 1;
        *r.by_token.entry(token).or_default() += 1;
        Ok(Admitted {
            of: Arc::clone(self),
            token,
        })
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut r = self.of.running.lock().unwrap_or_else(|p| p.into_inner());
        r.in_all = r.in_all.saturating_sub(1);
        if let Some(n) = r.by_token.get_mut(&self.token) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                r.by_token.remove(&self.token);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_gets_its_share_and_the_whole_is_bounded() {
        let a = Admission::new("mail handed in", 2, 1);
        let first = a.enter(1).unwrap();
        assert!(matches!(
            a.enter(1),
            Err(Error::Busy { retry_after: 5, .. })
        ));
        let second = a.enter(2).unwrap();
        let Err(Error::Busy { message, .. }) = a.enter(3) else {
            panic!("a third in all was admitted");
        };
        assert_eq!(
            message,
            "mail handed in: 2 running, the most the server takes at once: try again in 5 s"
        );
        drop(first);
        let _again = a.enter(1).unwrap();
        drop(second);
        let _third = a.enter(3).unwrap();
    }
}
