//! Inputs for fuzzing JSON bodies, and the property every body must keep.
//!
//! Random JSON alone rarely gets past a body's first required field, so most
//! inputs start from a valid body and damage it: a value swapped for an
//! arbitrary or an edge-case one (numbers just past `u32`/`i64`, `1e308`,
//! NUL, a 100 KiB string, a percentage out of range), a field dropped or an
//! unknown one added, or the JSON text itself cut or changed byte by byte.
//! The runner's fuzz targets include this file for the guest protocol.

use std::fmt::Debug;

use proptest::prelude::*;
use proptest::sample::Index;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Field names of the bodies, so arbitrary objects sometimes carry them.
const KEYS: &[&str] = &[
    "kind",
    "url",
    "commit",
    "name",
    "outcome",
    "reason",
    "detail",
    "state",
    "message",
    "log_tail",
    "boot",
    "result",
    "seq",
    "side",
    "nr_task",
    "seconds",
    "warmup_seconds",
    "mode",
    "measurement",
    "metrics",
    "value",
    "series",
    "points",
    "samples",
    "total",
    "min",
    "max",
    "kernel",
    "workloads",
    "params",
    "runs",
    "max_runs",
    "backend",
    "machine_id",
    "inventory",
    "limit",
    "before",
    "verdict",
    "overall",
    "jobs",
];

/// Values at the edges of what the bodies' fields hold.
fn edge_values() -> Vec<Value> {
    vec![
        Value::Null,
        json!(true),
        json!(0),
        json!(-1),
        json!(u32::MAX),
        json!(u64::from(u32::MAX) + 1),
        json!(i64::MAX),
        json!(i64::MIN),
        json!(u64::MAX),
        json!(2_147_483_648_u64),
        json!(0.5),
        json!(1e308),
        json!(-1e308),
        json!(5e-324),
        json!(""),
        json!("\u{0}"),
        json!("100%"),
        json!("0%"),
        json!("101%"),
        json!("4294967296%"),
        json!("--upload-pack=touch /tmp/x"),
        json!("x".repeat(100_000)),
        json!([]),
        json!({}),
    ]
}

/// Arbitrary JSON, its objects keyed mostly by the bodies' field names.
pub fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        ".{0,16}".prop_map(Value::from),
        proptest::sample::select(edge_values()),
    ];
    let key = prop_oneof![
        proptest::sample::select(KEYS).prop_map(String::from),
        "[a-z_]{1,10}"
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((key.clone(), inner), 0..6)
                .prop_map(|fields| Value::Object(fields.into_iter().collect())),
        ]
    })
}

/// One change to a JSON tree, applied at the node `at` picks in pre-order.
#[derive(Debug, Clone)]
enum Edit {
    Replace(Value),
    RemoveChild(Index),
    AddChild(String, Value),
    DuplicateChild(Index),
}

fn edit() -> impl Strategy<Value = (Index, Edit)> {
    let value = prop_oneof![3 => proptest::sample::select(edge_values()), 1 => any_json()];
    let key = prop_oneof![
        proptest::sample::select(KEYS).prop_map(String::from),
        "[a-z_]{1,10}"
    ];
    let edit = prop_oneof![
        3 => value.clone().prop_map(Edit::Replace),
        2 => any::<Index>().prop_map(Edit::RemoveChild),
        1 => (key, value).prop_map(|(k, v)| Edit::AddChild(k, v)),
        1 => any::<Index>().prop_map(Edit::DuplicateChild),
    ];
    (any::<Index>(), edit)
}

fn count_nodes(value: &Value) -> usize {
    1 + match value {
        Value::Array(items) => items.iter().map(count_nodes).sum(),
        Value::Object(map) => map.values().map(count_nodes).sum(),
        _ => 0,
    }
}

/// Calls `f` on the `n`th node in pre-order; true once it was found.
fn with_node(value: &mut Value, n: &mut usize, f: &mut dyn FnMut(&mut Value)) -> bool {
    if *n == 0 {
        f(value);
        return true;
    }
    *n -= 1;
    match value {
        Value::Array(items) => items.iter_mut().any(|child| with_node(child, n, f)),
        Value::Object(map) => map.values_mut().any(|child| with_node(child, n, f)),
        _ => false,
    }
}

fn apply(value: &mut Value, at: Index, edit: &Edit) {
    let mut n = at.index(count_nodes(value));
    with_node(value, &mut n, &mut |node| match (edit, node) {
        (Edit::Replace(new), node) => *node = new.clone(),
        (Edit::RemoveChild(i), Value::Array(items)) if !items.is_empty() => {
            items.remove(i.index(items.len()));
        }
        (Edit::RemoveChild(i), Value::Object(map)) if !map.is_empty() => {
            let key = map.keys().nth(i.index(map.len())).cloned();
            key.map(|k| map.remove(&k));
        }
        (Edit::AddChild(_, new), Value::Array(items)) => items.push(new.clone()),
        (Edit::AddChild(key, new), Value::Object(map)) => {
            map.insert(key.clone(), new.clone());
        }
        (Edit::DuplicateChild(i), Value::Array(items)) if !items.is_empty() => {
            let copy = items[i.index(items.len())].clone();
            items.push(copy);
        }
        _ => {}
    });
}

/// `valid` with one to four edits, as JSON text.
fn edited(valid: Value) -> impl Strategy<Value = String> {
    proptest::collection::vec(edit(), 1..5).prop_map(move |edits| {
        let mut value = valid.clone();
        for (at, edit) in &edits {
            apply(&mut value, *at, edit);
        }
        value.to_string()
    })
}

/// `valid`'s text with up to four bytes deleted, inserted or overwritten,
/// or cut short (read back lossily as UTF-8).
fn garbled(valid: Value) -> impl Strategy<Value = String> {
    let text = serde_json::to_string_pretty(&valid).expect("a Value serializes");
    let op = (any::<Index>(), 0u8..4, any::<u8>());
    proptest::collection::vec(op, 1..5).prop_map(move |ops| {
        let mut bytes = text.clone().into_bytes();
        for (at, kind, byte) in ops {
            let i = at.index(bytes.len() + 1);
            match kind {
                0 if i < bytes.len() => {
                    bytes.remove(i);
                }
                1 => bytes.insert(i, byte),
                2 if i < bytes.len() => bytes[i] = byte,
                _ => bytes.truncate(i),
            }
        }
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Inputs for a body whose valid form is `valid`: mostly edits of it, some
/// garbled text, some arbitrary JSON, and `valid` itself.
pub fn inputs(valid: Value) -> impl Strategy<Value = String> {
    prop_oneof![
        1 => Just(valid.to_string()),
        6 => edited(valid.clone()),
        3 => garbled(valid),
        2 => any_json().prop_map(|v| v.to_string()),
    ]
}

/// What reads as a `T` writes back as JSON that reads as the same `T`;
/// reading never panics (a panic fails the test case).
pub fn round_trips<T>(text: &str) -> Result<Option<T>, TestCaseError>
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let Ok(value) = serde_json::from_str::<T>(text) else {
        return Ok(None);
    };
    let again = serde_json::to_string(&value)
        .map_err(|e| TestCaseError::fail(format!("{value:?} does not serialize: {e}")))?;
    let back: T = serde_json::from_str(&again)
        .map_err(|e| TestCaseError::fail(format!("{again} does not read back: {e}")))?;
    prop_assert_eq!(&back, &value, "{} changed on the way back", again);
    Ok(Some(value))
}

/// `T`'s valid form as a JSON tree.
pub fn tree<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("a valid body serializes")
}

/// [`round_trips`] for bodies without `PartialEq`: the JSON written from
/// what was read is written again, unchanged, after reading it back.
pub fn round_trips_as_json<T>(text: &str) -> Result<(), TestCaseError>
where
    T: Serialize + DeserializeOwned,
{
    let Ok(value) = serde_json::from_str::<T>(text) else {
        return Ok(());
    };
    let first = serde_json::to_string(&value)
        .map_err(|e| TestCaseError::fail(format!("what was read does not serialize: {e}")))?;
    let back: T = serde_json::from_str(&first)
        .map_err(|e| TestCaseError::fail(format!("{first} does not read back: {e}")))?;
    let second = serde_json::to_string(&back)
        .map_err(|e| TestCaseError::fail(format!("does not serialize again: {e}")))?;
    prop_assert_eq!(first, second);
    Ok(())
}
