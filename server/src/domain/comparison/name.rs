//! A comparison's name and base as its page, its report and its mail show
//! them: the facts [`patchperf_common::naming`] names it by, read from its
//! row, its stored series (whose first message is the cover letter when
//! there is one) and its tracked tree.

use patchperf_common::mbox::subject::Subject;
use patchperf_common::naming::{self, Name, NameFacts};
use patchperf_common::run::MeasurementMode;
use sqlx::PgPool;

use crate::db::comparisons::ComparisonRow;
use crate::db::patches::PatchRow;
use crate::{Error, db};

/// What a comparison is called and where its base came from.
#[derive(Debug, Clone)]
pub struct Named {
    /// Its name ([`naming::name`]).
    pub name: Name,
    /// Its base ([`naming::base`]).
    pub base: String,
    /// A tracked tree's head: what the commit says of itself.
    pub commit_subject: Option<String>,
}

/// The name and base of comparison `c`, whose series' messages are
/// `messages`.
pub async fn of(db: &PgPool, c: &ComparisonRow, messages: &[PatchRow]) -> Result<Named, Error> {
    let tree = match c.tree_id {
        Some(id) => {
            db::trees::named_commit(db, id, c.commit_sha.as_deref().unwrap_or_default()).await?
        }
        None => None,
    };
    let (tree, commit_subject) = tree.unzip();
    let commit_subject = commit_subject.flatten();
    // A series read from a list is stored as its patches; its cover
    // letter's subject is the list series'.
    let has_cover = messages.first().is_some_and(|m| !m.has_diff);
    let listed = match (has_cover, c.parent_id) {
        (false, None) => db::list_series::subject_of_comparison(db, c.id)
            .await?
            .filter(|s| Subject::is_cover_letter(s)),
        _ => None,
    };
    Ok(Named {
        name: from_messages(
            NameFacts {
                cover_letter: listed.as_deref(),
                kind: Some(c.kind),
                machine: c.machine_name.as_deref(),
                backend: c.asked.backend.map(MeasurementMode::as_str),
                workloads: &c.asked.workloads,
                tree: tree.as_deref(),
                git_range: c.git_range.as_deref(),
                commit: c.commit_sha.as_deref(),
                commit_subject: commit_subject.as_deref(),
                ..NameFacts::default()
            },
            messages,
        ),
        base: naming::base(tree.as_deref(), &c.base.0),
        commit_subject,
    })
}

/// [`naming::name`] of `facts` with what `messages` say of the series.
pub fn from_messages(facts: NameFacts<'_>, messages: &[PatchRow]) -> Name {
    let patches = messages.iter().filter(|m| m.has_diff);
    naming::name(&NameFacts {
        cover_letter: messages
            .first()
            .filter(|m| !m.has_diff)
            .map(|m| m.subject.as_str())
            .or(facts.cover_letter),
        first_patch: patches.clone().next().map(|m| m.subject.as_str()),
        last_patch: patches.clone().next_back().map(|m| m.subject.as_str()),
        patches: patches.count(),
        ..facts
    })
}
