//! Boot: a built kernel booted under QEMU and watched to the end of its
//! runs ([`qemu`]), whether KVM runs at hardware speed here
//! ([`kvm_probe`]), and what host and guest say to each other
//! ([`guest_protocol`]).

pub mod guest_protocol;
pub mod kvm_probe;
pub mod qemu;
