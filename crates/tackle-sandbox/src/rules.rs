//! The parent's half: the Landlock ruleset and the seccomp filter a policy compiles to.
//!
//! Landlock only grants. Reads are granted on `/`; with denied paths, on every sibling along
//! the way to each of them instead (the ancestors keep only directory listing). Writes are
//! granted on the writable places and a few devices. The filter refuses every socket but Unix
//! ones when the network is off, and every non-TCP socket when it goes through the proxy, where
//! Landlock also limits TCP connections to the proxy's port.

use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath,
    PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope,
};
use seccompiler::{
    SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
};

use crate::SandboxError;

/// The devices any sandboxed command may write.
const WRITABLE_DEVICES: [&str; 9] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/shm",
    "/dev/random",
    "/dev/urandom",
];

/// What the kernel is asked to enforce on the filesystem and TCP.
pub(crate) struct FsRules<'a> {
    pub(crate) abi: u32,
    pub(crate) writable: &'a [PathBuf],
    pub(crate) deny_read: &'a [PathBuf],
    /// `None`: TCP is not restricted; `Some(ports)`: connections only to these ports.
    pub(crate) tcp_connect: Option<&'a [u16]>,
}

/// The Landlock ruleset for `rules`, ready to enforce.
pub(crate) fn ruleset(rules: &FsRules<'_>) -> Result<OwnedFd, SandboxError> {
    let abi = abi_of(rules.abi);
    let fail = |error: landlock::RulesetError| SandboxError::Landlock(error.to_string());
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .map_err(fail)?;
    if rules.tcp_connect.is_some() && rules.abi >= 4 {
        ruleset = ruleset.handle_access(AccessNet::ConnectTcp).map_err(fail)?;
    }
    if rules.abi >= 6 {
        ruleset = ruleset
            .scope(Scope::Signal | Scope::AbstractUnixSocket)
            .map_err(fail)?;
    }
    let mut created = ruleset.create().map_err(fail)?;
    let read = AccessFs::from_read(abi);
    for (path, access) in read_grants(rules.deny_read, read) {
        add(&mut created, &path, access)?;
    }
    let write = AccessFs::from_all(abi);
    for path in rules.writable {
        add(&mut created, path, write)?;
    }
    for device in WRITABLE_DEVICES {
        add(&mut created, Path::new(device), write)?;
    }
    if let Some(ports) = rules.tcp_connect
        && rules.abi >= 4
    {
        for port in ports {
            created = created
                .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
                .map_err(fail)?;
        }
    }
    let fd: Option<OwnedFd> = created.into();
    fd.ok_or_else(|| SandboxError::Landlock("the kernel enforces no Landlock rule".to_owned()))
}

/// Adds a rule for `path` when it exists; a file gets only the rights a file can have.
fn add(
    created: &mut landlock::RulesetCreated,
    path: &Path,
    access: BitFlags<AccessFs>,
) -> Result<(), SandboxError> {
    let Ok(fd) = PathFd::new(path) else {
        return Ok(());
    };
    let is_dir = std::fs::metadata(path).is_ok_and(|m| m.is_dir());
    let access = if is_dir {
        access
    } else {
        access & AccessFs::from_file(ABI::V6)
    };
    created
        .add_rule(PathBeneath::new(fd, access))
        .map(|_| ())
        .map_err(|error| SandboxError::Landlock(format!("{}: {error}", path.display())))
}

/// Where reads are granted: `/` whole, or with each denied path cut out (its ancestors may
/// only be listed, their other entries are read whole).
fn read_grants(deny: &[PathBuf], read: BitFlags<AccessFs>) -> Vec<(PathBuf, BitFlags<AccessFs>)> {
    let deny: Vec<&Path> = deny
        .iter()
        .map(PathBuf::as_path)
        .filter(|p| p.is_absolute())
        .collect();
    if deny.is_empty() {
        return vec![(PathBuf::from("/"), read)];
    }
    let mut grants = Vec::new();
    let list = AccessFs::ReadDir | AccessFs::Execute;
    let mut stack = vec![PathBuf::from("/")];
    while let Some(dir) = stack.pop() {
        grants.push((dir.clone(), list));
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if deny.iter().any(|d| path == *d) {
                continue;
            }
            if deny.iter().any(|d| d.starts_with(&path)) {
                stack.push(path);
            } else {
                grants.push((path, read));
            }
        }
    }
    grants
}

fn abi_of(version: u32) -> ABI {
    match version {
        0 => ABI::Unsupported,
        1 => ABI::V1,
        2 => ABI::V2,
        3 => ABI::V3,
        4 => ABI::V4,
        5 => ABI::V5,
        _ => ABI::V6,
    }
}

/// The obsolete packet socket type (`libc` deprecates its name, the kernel still takes it).
const SOCK_PACKET: libc::c_int = 10;

/// What the filter allows of sockets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sockets {
    /// Unix sockets only.
    UnixOnly,
    /// Unix sockets and TCP (IPv4 and IPv6).
    UnixAndTcp,
}

/// The seccomp filter that refuses (with EPERM) what `sockets` excludes, and io_uring, which
/// would reach the network past it.
pub(crate) fn filter(sockets: Sockets) -> Result<seccompiler::BpfProgram, SandboxError> {
    static UNIX_ONLY: std::sync::OnceLock<seccompiler::BpfProgram> = std::sync::OnceLock::new();
    static UNIX_AND_TCP: std::sync::OnceLock<seccompiler::BpfProgram> = std::sync::OnceLock::new();
    let slot = match sockets {
        Sockets::UnixOnly => &UNIX_ONLY,
        Sockets::UnixAndTcp => &UNIX_AND_TCP,
    };
    if let Some(program) = slot.get() {
        return Ok(program.clone());
    }
    let program = compile(sockets)?;
    Ok(slot.get_or_init(|| program).clone())
}

/// Compiles the filter of `sockets`.
fn compile(sockets: Sockets) -> Result<seccompiler::BpfProgram, SandboxError> {
    let fail = |error: seccompiler::BackendError| SandboxError::Seccomp(error.to_string());
    let arg = |index, op, value| {
        SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value).map_err(fail)
    };
    let (unix, inet, inet6) = (
        libc::AF_UNIX as u64,
        libc::AF_INET as u64,
        libc::AF_INET6 as u64,
    );
    let mut socket_rules = Vec::new();
    match sockets {
        Sockets::UnixOnly => {
            socket_rules
                .push(SeccompRule::new(vec![arg(0, SeccompCmpOp::Ne, unix)?]).map_err(fail)?);
        }
        Sockets::UnixAndTcp => {
            socket_rules.push(
                SeccompRule::new(vec![
                    arg(0, SeccompCmpOp::Ne, unix)?,
                    arg(0, SeccompCmpOp::Ne, inet)?,
                    arg(0, SeccompCmpOp::Ne, inet6)?,
                ])
                .map_err(fail)?,
            );
            for family in [inet, inet6] {
                // Any type but a stream (the low bits; the high ones are flags).
                for kind in [
                    libc::SOCK_DGRAM,
                    libc::SOCK_RAW,
                    libc::SOCK_RDM,
                    libc::SOCK_SEQPACKET,
                    libc::SOCK_DCCP,
                    SOCK_PACKET,
                ] {
                    socket_rules.push(
                        SeccompRule::new(vec![
                            arg(0, SeccompCmpOp::Eq, family)?,
                            arg(1, SeccompCmpOp::MaskedEq(0xf), kind as u64)?,
                        ])
                        .map_err(fail)?,
                    );
                }
                // A stream of another protocol than TCP (SCTP, MPTCP).
                socket_rules.push(
                    SeccompRule::new(vec![
                        arg(0, SeccompCmpOp::Eq, family)?,
                        arg(2, SeccompCmpOp::Ne, 0)?,
                        arg(2, SeccompCmpOp::Ne, libc::IPPROTO_TCP as u64)?,
                    ])
                    .map_err(fail)?,
                );
            }
        }
    }
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_socket, socket_rules);
    for always in [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        rules.insert(always, Vec::new());
    }
    let arch = std::env::consts::ARCH.try_into().map_err(|_| {
        SandboxError::Seccomp(format!("{} is not supported", std::env::consts::ARCH))
    })?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(fail)?;
    let program: seccompiler::BpfProgram = filter.try_into().map_err(fail)?;
    Ok(program)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_grants_cut_a_denied_path_out_and_keep_its_siblings() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::create_dir(&secret).unwrap();
        std::fs::write(dir.path().join("open.txt"), "x").unwrap();
        let read = AccessFs::from_read(ABI::V1);
        let grants = read_grants(std::slice::from_ref(&secret), read);
        assert!(
            grants
                .iter()
                .all(|(p, _)| p != &secret && !p.starts_with(&secret))
        );
        assert!(grants.contains(&(dir.path().join("open.txt"), read)));
        assert!(
            grants
                .iter()
                .any(|(p, a)| p == dir.path() && !a.contains(AccessFs::ReadFile))
        );
    }
}
