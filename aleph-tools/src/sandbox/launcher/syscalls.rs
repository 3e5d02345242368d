//! The seccomp filter: system calls no tool needs, refused with `EPERM` (`clone3`, whose
//! flags a filter cannot read, with `ENOSYS`, so the C library falls back to `clone`).

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::Failure;
use crate::sandbox::policy::Network;

/// Refused whatever their arguments: debugging other processes, reading their memory,
/// kernel-side programs and keys, performance counters, namespaces, mounts, modules, and the
/// machine's clock and power.
const REFUSED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_pidfd_getfd,
    libc::SYS_process_madvise,
    libc::SYS_kcmp,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_bpf,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_open_tree,
    libc::SYS_move_mount,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_syslog,
    libc::SYS_vhangup,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_clock_adjtime,
    libc::SYS_adjtimex,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_iopl,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_ioperm,
];

/// The `clone` flags that make namespaces.
const NAMESPACE_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWNS,
    libc::CLONE_NEWCGROUP,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWTIME,
];

/// The socket families a program without the host's network may open: IP (which reaches only
/// the sandbox's own network, and through it the proxy) and netlink (which speaks to the
/// sandbox's own network namespace). UNIX sockets are refused (`socketpair` still works): a
/// socket file is reached by its path, which no network namespace hides, and Landlock guards
/// such paths only from ABI 9. So are the families a network namespace does not separate,
/// such as `AF_VSOCK` (a virtual machine's host).
const CONFINED_FAMILIES: &[libc::c_int] = &[libc::AF_INET, libc::AF_INET6, libc::AF_NETLINK];

/// Installs the filters on this process, for everything it starts; without the host's
/// network, sockets only of the [`CONFINED_FAMILIES`].
pub(super) fn confine(network: &Network) -> Result<(), Failure> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|error| Failure::of("filter system calls on this architecture", error))?;
    let mut refused: BTreeMap<i64, Vec<SeccompRule>> =
        REFUSED.iter().map(|&call| (call, Vec::new())).collect();
    let mut clone_rules = Vec::new();
    for &flag in NAMESPACE_FLAGS {
        let flag = u64::from(flag.cast_unsigned());
        let condition = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Qword,
            SeccompCmpOp::MaskedEq(flag),
            flag,
        )
        .map_err(|error| Failure::of("build the system call filter", error))?;
        clone_rules.push(
            SeccompRule::new(vec![condition])
                .map_err(|error| Failure::of("build the system call filter", error))?,
        );
    }
    refused.insert(libc::SYS_clone, clone_rules);
    if *network != Network::Full {
        // One rule: refused when the family is none of those allowed.
        let others = CONFINED_FAMILIES
            .iter()
            .map(|&family| {
                SeccompCondition::new(
                    0,
                    SeccompCmpArgLen::Dword,
                    SeccompCmpOp::Ne,
                    u64::from(family.cast_unsigned()),
                )
            })
            .collect::<Result<Vec<_>, _>>()
            .and_then(SeccompRule::new)
            .map_err(|error| Failure::of("build the system call filter", error))?;
        refused.insert(libc::SYS_socket, vec![others]);
    }
    install(refused, libc::EPERM, arch)?;
    install(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        libc::ENOSYS,
        arch,
    )?;
    refuse_x32()
}

/// Kills a process making an x32 system call (an x86-64 call numbered from `0x4000_0000`):
/// the filters above match system calls by number, and an x32 number matches none of them,
/// so where the kernel has x32 enabled it would pass them all. Written by hand, as no rule
/// of the filters above can test a bit of the number.
#[cfg(target_arch = "x86_64")]
fn refuse_x32() -> Result<(), Failure> {
    use seccompiler::sock_filter;
    // Classic BPF: BPF_LD | BPF_W | BPF_ABS, BPF_JMP | BPF_JEQ | BPF_K,
    // BPF_JMP | BPF_JGE | BPF_K and BPF_RET | BPF_K.
    const LOAD: u16 = 0x20;
    const JUMP_IF_EQUAL: u16 = 0x15;
    const JUMP_IF_AT_LEAST: u16 = 0x35;
    const RETURN: u16 = 0x06;
    // Where `struct seccomp_data` holds the call's number and its architecture.
    const NUMBER: u32 = 0;
    const ARCHITECTURE: u32 = 4;
    // EM_X86_64 (62) | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE.
    const X86_64: u32 = 0x3e | 0x8000_0000 | 0x4000_0000;
    const X32_BIT: u32 = 0x4000_0000;
    let step = |code, jt, jf, k| sock_filter { code, jt, jf, k };
    let program = vec![
        step(LOAD, 0, 0, ARCHITECTURE),
        // Another architecture is the other filters' to kill: allow it here.
        step(JUMP_IF_EQUAL, 0, 3, X86_64),
        step(LOAD, 0, 0, NUMBER),
        step(JUMP_IF_AT_LEAST, 0, 1, X32_BIT),
        step(RETURN, 0, 0, libc::SECCOMP_RET_KILL_PROCESS),
        step(RETURN, 0, 0, libc::SECCOMP_RET_ALLOW),
    ];
    seccompiler::apply_filter(&program)
        .map_err(|error| Failure::of("install the x32 system call filter (seccomp)", error))
}

#[cfg(not(target_arch = "x86_64"))]
#[allow(clippy::unnecessary_wraps)]
fn refuse_x32() -> Result<(), Failure> {
    Ok(())
}

fn install(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    errno: libc::c_int,
    arch: TargetArch,
) -> Result<(), Failure> {
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno.cast_unsigned()),
        arch,
    )
    .map_err(|error| Failure::of("build the system call filter", error))?;
    let program: BpfProgram = filter
        .try_into()
        .map_err(|error: seccompiler::BackendError| {
            Failure::of("compile the system call filter", error)
        })?;
    seccompiler::apply_filter(&program)
        .map_err(|error| Failure::of("install the system call filter (seccomp)", error))
}
