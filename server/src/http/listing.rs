//! What every listing's query says, read once: a filter by one of an
//! enum's spellings, a search term, and the comparison listing's filters
//! and order, which the API (`GET /api/v1/comparisons`) and the dashboard
//! both take.

use patchperf_common::comparison::{ComparisonStatus, OverallVerdict};

use crate::Error;
use crate::db::comparisons::{ListFilter, ListOrder};

/// Most characters a listing's search term may have.
pub const MAX_SEARCH_CHARS: usize = 200;

/// A listing's search term (`q`), checked: blank is no search; more than
/// [`MAX_SEARCH_CHARS`] characters or a control character is refused.
pub(crate) fn search_term(q: Option<&str>) -> Result<Option<&str>, Error> {
    let Some(q) = q.map(str::trim).filter(|q| !q.is_empty()) else {
        return Ok(None);
    };
    if q.chars().count() > MAX_SEARCH_CHARS {
        return Err(Error::Malformed(format!(
            "search term of {} characters: at most {MAX_SEARCH_CHARS}",
            q.chars().count()
        )));
    }
    if q.chars().any(char::is_control) {
        return Err(Error::Malformed(
            "search term with a control character".into(),
        ));
    }
    Ok(Some(q))
}

/// Reads a listing filter (by status or verdict) into its enum, rejecting
/// a value that is none of `allowed` (spelled by `name`) and naming them.
pub(crate) fn one_of<T: Copy>(
    what: &str,
    value: Option<&str>,
    allowed: &[T],
    name: fn(T) -> &'static str,
) -> Result<Option<T>, Error> {
    let Some(v) = value else {
        return Ok(None);
    };
    match allowed.iter().copied().find(|a| name(*a) == v) {
        Some(found) => Ok(Some(found)),
        None => Err(Error::Malformed(format!(
            "{what} `{v}` is not one of {}",
            allowed
                .iter()
                .map(|a| name(*a))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// The comparison listing's filters as a query spells them (a blank value
/// is no filter).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ComparisonQuery<'a> {
    pub status: Option<&'a str>,
    pub machine: Option<&'a str>,
    pub workload: Option<&'a str>,
    pub verdict: Option<&'a str>,
    pub q: Option<&'a str>,
    pub sort: Option<&'a str>,
}

/// `query` read into the listing's filter, its order one of `orders`;
/// the caller sets the page (cursor or offset) and its size.
pub(crate) fn comparison_filter<'a>(
    query: &ComparisonQuery<'a>,
    orders: &[ListOrder],
) -> Result<ListFilter<'a>, Error> {
    let given = |v: Option<&'a str>| v.filter(|v| !v.is_empty());
    Ok(ListFilter {
        status: one_of(
            "status",
            given(query.status),
            ComparisonStatus::ALL,
            ComparisonStatus::as_str,
        )?,
        machine: given(query.machine),
        workload: given(query.workload),
        verdict: one_of(
            "verdict",
            given(query.verdict),
            OverallVerdict::ALL,
            OverallVerdict::as_str,
        )?,
        order: one_of("sort", given(query.sort), orders, ListOrder::as_str)?.unwrap_or_default(),
        search: search_term(query.q)?,
        ..ListFilter::default()
    })
}
