//! Where a comparison leads besides its own report: a tracked tree's
//! comparison to its tree, the tree's histories and the change points
//! found at the commits it measured; a list series' comparison to the
//! series and its list; any comparison (a git range above all) to every
//! bisection of it, started from it or over the same range.

use crate::db::bisections::BisectionSummary;
use crate::db::changes::ChangeMark;
use crate::db::comparisons::ComparisonRow;
use crate::domain::Context;
use crate::{Error, db};

/// The tracked tree a comparison measured a new head of.
#[derive(Debug, Clone)]
pub struct TreeOf {
    /// The tree.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// The change points found at the commits the comparison measured.
    pub changes: Vec<ChangeMark>,
}

/// The list series a comparison measures.
#[derive(Debug, Clone)]
pub struct SeriesOf {
    /// The series version (`list_series`).
    pub id: i64,
    /// Its version.
    pub version: i32,
    /// The list it was posted to.
    pub list_id: i64,
    /// The list's name.
    pub list: String,
}

/// What a comparison links to.
#[derive(Debug, Clone, Default)]
pub struct Links {
    /// Its tracked tree, when a tree's new head asked for it.
    pub tree: Option<TreeOf>,
    /// The list series it measures, when a list's series asked for it.
    pub series: Option<SeriesOf>,
    /// Its bisections, oldest first.
    pub bisections: Vec<BisectionSummary>,
}

impl Links {
    /// What of them can change once the comparison settled (a change
    /// point found later, a bisection started or answered), as a key for
    /// what was rendered with them.
    pub fn key(&self) -> String {
        let changes = self.tree.iter().flat_map(|t| &t.changes).map(|c| c.id);
        let bisections = self
            .bisections
            .iter()
            .map(|b| format!("{}:{}:{}", b.id, b.status.as_str(), b.probes));
        let mut key = String::new();
        for c in changes {
            key.push_str(&format!("c{c} "));
        }
        for b in bisections {
            key.push_str(&format!("b{b} "));
        }
        key
    }
}

/// What comparison `c` links to.
pub async fn of(ctx: &Context, c: &ComparisonRow) -> Result<Links, Error> {
    let tree = match c.tree_id {
        Some(id) => {
            let mut conn = ctx.db.acquire().await?;
            match db::trees::find(&mut conn, id, false).await? {
                Some(t) => Some(TreeOf {
                    id,
                    name: t.name,
                    changes: db::changes::of_comparison(&mut *conn, c.id).await?,
                }),
                None => None,
            }
        }
        None => None,
    };
    let bisections = db::bisections::of_comparison(&ctx.db, c.id, c.git_range.as_deref()).await?;
    let series =
        db::list_series::of_comparison(&ctx.db, c.id)
            .await?
            .map(|(id, version, list_id, list)| SeriesOf {
                id,
                version,
                list_id,
                list,
            });
    Ok(Links {
        tree,
        series,
        bisections,
    })
}
