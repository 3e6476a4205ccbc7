//! The small test machine tests register.

use patchperf_common::protocol::MachineInventory;
use patchperf_common::run::MeasurementMode;

/// The inventory of a small test machine without KVM or a PMU.
pub fn inventory(name: &str) -> MachineInventory {
    MachineInventory {
        hostname: format!("{name}.lab"),
        cpu_model: "Intel(R) Xeon(R) Test CPU".into(),
        nr_cpu: 2,
        memory_bytes: 24 << 30,
        kernel_release: "6.1.0-test".into(),
        arch: "x86_64".into(),
        kvm_usable: false,
        pmu_usable: false,
        backends: vec![MeasurementMode::TcgIcount, MeasurementMode::Tcg],
        notes: vec![],
    }
}
