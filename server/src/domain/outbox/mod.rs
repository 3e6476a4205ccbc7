//! Telling people: what is queued to be mailed or posted ([`notify`]: a
//! tracked tree's change point to the commit's author, any mail such as a
//! list's reply, one row per recipient) and the sender that delivers the
//! outbox's rows ([`deliver`]: SMTP or a webhook, retried with a doubling
//! wait up to a bound). What every mail about a comparison says the same
//! way (its headline, links, report text) is [`compose`]'s.

pub mod compose;
pub mod deliver;
pub mod notify;
