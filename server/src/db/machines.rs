//! `machines` and `machine_fleet`: runner hosts, their inventory, and what
//! an admin said about them (their state, their labels) with the protocol
//! version they registered with. The second table is the first's
//! extension, apart only so that the release before (which reads
//! `SELECT * FROM machines` through prepared statements) keeps working
//! during a rolling upgrade; a machine without a row in it is active,
//! unlabelled, of version 1. Every whole row is read joined.

use chrono::{DateTime, Utc};
use patchperf_common::machine_state::MachineState;
use patchperf_common::protocol::MachineInventory;
use sqlx::{PgConnection, PgExecutor};

/// A machine as stored.
#[derive(Debug, Clone, serde::Serialize)]
pub struct MachineRow {
    /// Row id.
    pub id: i64,
    /// Operator-chosen unique name.
    pub name: String,
    /// The token it belongs to: the first to register it, or the admin
    /// or runner token it passed to (see [`upsert`]); only that token (or
    /// an admin) may act for it.
    #[serde(skip)]
    pub token_id: i64,
    /// Host name.
    pub hostname: String,
    /// CPU model name.
    pub cpu_model: String,
    /// Online CPUs.
    pub nr_cpu: i32,
    /// MemTotal in bytes.
    pub memory_bytes: i64,
    /// Host `uname -r`.
    pub kernel_release: String,
    /// `uname -m`.
    pub arch: String,
    /// KVM guests run at hardware speed.
    pub kvm_usable: bool,
    /// Hardware PMU events can be counted.
    pub pmu_usable: bool,
    /// Measurement modes this machine offers, best first.
    pub backends: Vec<String>,
    /// Free-form facts.
    pub notes: Vec<String>,
    /// First registration.
    pub registered_at: DateTime<Utc>,
    /// Last time it called the server.
    pub last_seen: DateTime<Utc>,
    /// What an admin said: only an active machine claims.
    pub state: MachineState,
    /// The admin's word on why (empty when none was given).
    pub state_note: String,
    /// When an admin last changed the state (`None`: never).
    pub state_changed_at: Option<DateTime<Utc>>,
    /// The protocol version its runner registered with last.
    pub protocol_version: i32,
    /// The pools it is in, as an admin labelled it.
    pub labels: Vec<String>,
}

// Every read of a whole row names its columns (a `SELECT *` prepared
// before a column is added fails after it), with the state typed; an
// added column is added to each.

/// Creates the machine `name` bound to `token_id`, or replaces its
/// inventory when it may pass to `token_id`: it is that token's already,
/// `take_over` (an admin registers it), or its token was revoked. Returns
/// its id, or `None` when another live token owns the name (nothing
/// written).
pub async fn upsert(
    conn: &mut PgConnection,
    name: &str,
    token_id: i64,
    take_over: bool,
    inv: &MachineInventory,
    protocol_version: u32,
) -> Result<Option<i64>, sqlx::Error> {
    let backends: Vec<String> = inv
        .backends
        .iter()
        .map(|b| b.as_str().to_string())
        .collect();
    let nr_cpu = i32::try_from(inv.nr_cpu).unwrap_or(i32::MAX);
    let memory = i64::try_from(inv.memory_bytes).unwrap_or(i64::MAX);
    let protocol_version = i32::try_from(protocol_version).unwrap_or(i32::MAX);
    let Some(id) = sqlx::query_scalar!(
        r#"INSERT INTO machines (name, token_id, hostname, cpu_model, nr_cpu, memory_bytes,
                                 kernel_release, arch, kvm_usable, pmu_usable, backends, notes)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
           ON CONFLICT (name) DO UPDATE SET
               token_id = EXCLUDED.token_id, hostname = EXCLUDED.hostname,
               cpu_model = EXCLUDED.cpu_model, nr_cpu = EXCLUDED.nr_cpu,
               memory_bytes = EXCLUDED.memory_bytes, kernel_release = EXCLUDED.kernel_release,
               arch = EXCLUDED.arch, kvm_usable = EXCLUDED.kvm_usable,
               pmu_usable = EXCLUDED.pmu_usable, backends = EXCLUDED.backends,
               notes = EXCLUDED.notes, last_seen = now()
           WHERE machines.token_id = EXCLUDED.token_id
              OR $13::boolean
              OR EXISTS (SELECT 1 FROM tokens t
                         WHERE t.id = machines.token_id AND t.revoked_at IS NOT NULL)
           RETURNING id"#,
        name,
        token_id,
        inv.hostname,
        inv.cpu_model,
        nr_cpu,
        memory,
        inv.kernel_release,
        inv.arch,
        inv.kvm_usable,
        inv.pmu_usable,
        &backends,
        &inv.notes,
        take_over
    )
    .fetch_optional(&mut *conn)
    .await?
    else {
        return Ok(None);
    };
    sqlx::query!(
        "INSERT INTO machine_fleet (machine_id, protocol_version) VALUES ($1, $2)
         ON CONFLICT (machine_id) DO UPDATE SET protocol_version = EXCLUDED.protocol_version",
        id,
        protocol_version
    )
    .execute(conn)
    .await?;
    Ok(Some(id))
}

/// The token a machine is registered under, as its owner is named to
/// another token that tries to register it.
#[derive(Debug, Clone)]
pub struct Owner {
    /// Token row id.
    pub token_id: i64,
    /// `runner`, `ci` or `admin`.
    pub kind: String,
    /// Operator-given token name.
    pub name: String,
}

/// The token machine `name` is registered under.
pub async fn owner(db: impl PgExecutor<'_>, name: &str) -> Result<Option<Owner>, sqlx::Error> {
    sqlx::query_as!(
        Owner,
        r#"SELECT t.id AS token_id, t.kind, t.name
           FROM machines m JOIN tokens t ON t.id = m.token_id
           WHERE m.name = $1"#,
        name
    )
    .fetch_optional(db)
    .await
}

/// The machines that pass every filter given: this id, this name, and
/// retired ones only when `retired`; by name.
async fn rows(
    db: impl PgExecutor<'_>,
    id: Option<i64>,
    name: Option<&str>,
    retired: bool,
) -> Result<Vec<MachineRow>, sqlx::Error> {
    sqlx::query_as!(
        MachineRow,
        r#"SELECT m.id, m.name, m.token_id, m.hostname, m.cpu_model, m.nr_cpu, m.memory_bytes,
                  m.kernel_release, m.arch, m.kvm_usable, m.pmu_usable, m.backends, m.notes,
                  m.registered_at, m.last_seen,
                  COALESCE(f.state, 'active') AS "state!: MachineState",
                  COALESCE(f.state_note, '') AS "state_note!", f.state_changed_at,
                  COALESCE(f.protocol_version, 1) AS "protocol_version!",
                  COALESCE(f.labels, '{}') AS "labels!"
           FROM machines m LEFT JOIN machine_fleet f ON f.machine_id = m.id
           WHERE ($1::bigint IS NULL OR m.id = $1)
             AND ($2::text IS NULL OR m.name = $2)
             AND ($3 OR f.state IS DISTINCT FROM 'retired')
           ORDER BY m.name"#,
        id,
        name,
        retired
    )
    .fetch_all(db)
    .await
}

/// The machine with this id.
pub async fn find(db: impl PgExecutor<'_>, id: i64) -> Result<Option<MachineRow>, sqlx::Error> {
    Ok(rows(db, Some(id), None, true).await?.pop())
}

/// The machine with this name.
pub async fn find_by_name(
    db: impl PgExecutor<'_>,
    name: &str,
) -> Result<Option<MachineRow>, sqlx::Error> {
    Ok(rows(db, None, Some(name), true).await?.pop())
}

/// Every machine by name; retired ones only when `retired`.
pub async fn list(db: impl PgExecutor<'_>, retired: bool) -> Result<Vec<MachineRow>, sqlx::Error> {
    rows(db, None, None, retired).await
}

/// Sets machine `name`'s state and note, locking its `machines` row until
/// the transaction ends (a claim reading the state waits for it); its id,
/// or `None` when no machine has that name.
pub async fn set_state(
    conn: &mut PgConnection,
    name: &str,
    state: MachineState,
    note: &str,
) -> Result<Option<i64>, sqlx::Error> {
    let Some(id) = sqlx::query_scalar!(
        "SELECT id FROM machines WHERE name = $1 FOR NO KEY UPDATE",
        name
    )
    .fetch_optional(&mut *conn)
    .await?
    else {
        return Ok(None);
    };
    sqlx::query!(
        "INSERT INTO machine_fleet (machine_id, state, state_note, state_changed_at)
         VALUES ($1, $2, $3, now())
         ON CONFLICT (machine_id) DO UPDATE SET
             state = EXCLUDED.state, state_note = EXCLUDED.state_note,
             state_changed_at = EXCLUDED.state_changed_at",
        id,
        state as MachineState,
        note
    )
    .execute(conn)
    .await?;
    Ok(Some(id))
}

/// Sets machine `name`'s labels (its pools); its id, or `None` when no
/// machine has that name.
pub async fn set_labels(
    db: impl PgExecutor<'_>,
    name: &str,
    labels: &[String],
) -> Result<Option<i64>, sqlx::Error> {
    sqlx::query_scalar!(
        "INSERT INTO machine_fleet (machine_id, labels)
         SELECT id, $2 FROM machines WHERE name = $1
         ON CONFLICT (machine_id) DO UPDATE SET labels = EXCLUDED.labels
         RETURNING machine_id",
        name,
        labels
    )
    .fetch_optional(db)
    .await
}

/// The machines of pool `label` that are not retired, with the
/// measurement modes they offer.
pub async fn in_pool(
    db: impl PgExecutor<'_>,
    label: &str,
) -> Result<Vec<(String, Vec<String>)>, sqlx::Error> {
    let rows = sqlx::query!(
        "SELECT m.name, m.backends FROM machines m JOIN machine_fleet f ON f.machine_id = m.id
         WHERE $1 = ANY (f.labels) AND f.state <> 'retired' ORDER BY m.name",
        label
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(|r| (r.name, r.backends)).collect())
}

/// Machine `id`'s state, read under a share lock of its `machines` row
/// until the transaction ends: a claim holding it and an admin changing
/// the state wait for each other, so a claim answered after the change saw
/// it.
pub async fn claim_state(
    conn: &mut PgConnection,
    id: i64,
) -> Result<Option<MachineState>, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT COALESCE(f.state, 'active') AS "state!: MachineState"
           FROM machines m LEFT JOIN machine_fleet f ON f.machine_id = m.id
           WHERE m.id = $1 FOR SHARE OF m"#,
        id
    )
    .fetch_optional(conn)
    .await
}

/// A job a machine holds: leased to it and not finished.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HeldJob {
    /// The machine.
    #[serde(skip)]
    pub machine_id: i64,
    /// The job.
    pub id: i64,
    /// Its comparison.
    pub comparison_id: i64,
    /// `claimed`, `building`, …
    pub state: String,
    /// What the runner last said it does.
    pub message: String,
    /// When the lease runs out unless a heartbeat extends it.
    pub lease_expires_at: Option<DateTime<Utc>>,
}

/// The jobs machines hold now (machine `only`'s, or every machine's), by
/// machine and id (an agent with `--parallel N` on a tcg-icount machine
/// holds jobs of several comparisons; a runner restarted mid-job shows its
/// old one until the lease runs out).
pub async fn held_jobs(
    db: impl PgExecutor<'_>,
    only: Option<i64>,
) -> Result<Vec<HeldJob>, sqlx::Error> {
    sqlx::query_as!(
        HeldJob,
        r#"SELECT machine_id AS "machine_id!", id, comparison_id, state, message,
                  lease_expires_at
           FROM jobs
           WHERE machine_id IS NOT NULL AND state NOT IN ('queued', 'done', 'failed')
             AND ($1::bigint IS NULL OR machine_id = $1)
           ORDER BY machine_id, id"#,
        only
    )
    .fetch_all(db)
    .await
}

/// How many queued jobs wait for each machine that only it may run (their
/// comparison is pinned to it), by machine id; and, under id 0, how many
/// any machine may take.
pub async fn queue_depths(db: impl PgExecutor<'_>) -> Result<Vec<(i64, i64)>, sqlx::Error> {
    let rows = sqlx::query!(
        r#"SELECT COALESCE(c.machine_id, 0) AS "machine_id!", count(*) AS "jobs!"
           FROM jobs j JOIN comparisons c ON c.id = j.comparison_id
           WHERE j.state = 'queued' AND c.status IN ('queued', 'running')
           GROUP BY 1"#
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(|r| (r.machine_id, r.jobs)).collect())
}

/// Seconds since the machine last called the server (the database's
/// clock, so servers with skewed clocks agree).
pub async fn silent_seconds(db: impl PgExecutor<'_>, id: i64) -> Result<Option<f64>, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT extract(epoch FROM now() - last_seen)::float8 AS "seconds!"
           FROM machines WHERE id = $1"#,
        id
    )
    .fetch_optional(db)
    .await
}

/// How many machines called the server in the last `seconds`.
pub async fn heard_within(db: impl PgExecutor<'_>, seconds: f64) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM machines
           WHERE last_seen > now() - make_interval(secs => $1)"#,
        seconds
    )
    .fetch_one(db)
    .await
}

/// Records that the machine just called.
pub async fn touch(db: impl PgExecutor<'_>, id: i64) -> Result<(), sqlx::Error> {
    sqlx::query!("UPDATE machines SET last_seen = now() WHERE id = $1", id)
        .execute(db)
        .await?;
    Ok(())
}

impl MachineRow {
    /// The inventory as the runner reported it, for the report header.
    pub fn inventory_json(&self) -> serde_json::Value {
        serde_json::json!({
            "name": self.name,
            "hostname": self.hostname,
            "cpu_model": self.cpu_model,
            "nr_cpu": self.nr_cpu,
            "memory_bytes": self.memory_bytes,
            "kernel_release": self.kernel_release,
            "arch": self.arch,
            "kvm_usable": self.kvm_usable,
            "pmu_usable": self.pmu_usable,
            "backends": self.backends,
            "notes": self.notes,
        })
    }
}

/// The high half of the advisory lock keys of [`lock_calibration`], so that
/// they meet no other advisory lock.
const CALIBRATION_LOCKS: i64 = 0x7070 << 48;

/// Serialises the calibration decisions of machine `id` until the
/// transaction ends: two claims of one machine at once (a runner retrying)
/// must not both queue an A/A.
pub async fn lock_calibration(conn: &mut PgConnection, id: i64) -> Result<(), sqlx::Error> {
    // Not a checked query: the function returns `void`, which the macros
    // cannot type.
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(CALIBRATION_LOCKS | id)
        .execute(conn)
        .await?;
    Ok(())
}
