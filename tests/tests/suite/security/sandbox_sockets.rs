//! What sockets a confined program may hold: none its caller left open (a socket on the
//! host's network passed down by mistake, say), and, without the host's network, only IP
//! and netlink ones: no `AF_VSOCK` to a virtual machine's host, which no network namespace
//! separates. Each attack runs unconfined too, which proves the test can fail.
#![cfg(target_os = "linux")]

use std::net::UdpSocket;
use std::os::fd::AsRawFd as _;
use std::time::Duration;

use aleph_tools::sandbox::Sandbox;
use nix::fcntl::{FcntlArg, FdFlag, fcntl};

use super::sandbox::{Space, python};

/// Sends a datagram on descriptor `argv[1]`, to the host's loopback port `argv[2]`.
const SEND_ON_INHERITED: &str = r"
import socket, sys
try:
    s = socket.socket(fileno=int(sys.argv[1]))
    s.sendto(b'from inside', ('127.0.0.1', int(sys.argv[2])))
    print('sent')
except OSError as error:
    print('refused', error)
";

#[tokio::test]
async fn a_descriptor_the_caller_left_open_does_not_reach_the_program() {
    let space = Space::new();
    let host = UdpSocket::bind("127.0.0.1:0").unwrap();
    host.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let port = host.local_addr().unwrap().port().to_string();
    // A socket on the host's network, left open across exec (as a careless caller might).
    let leaked = UdpSocket::bind("127.0.0.1:0").unwrap();
    fcntl(&leaked, FcntlArg::F_SETFD(FdFlag::empty())).unwrap();
    let fd = leaked.as_raw_fd().to_string();
    let ran = python(
        &Sandbox::new(),
        &space.work,
        SEND_ON_INHERITED,
        &[&fd, &port],
    )
    .await;
    let mut buf = [0u8; 64];
    assert!(
        ran.stdout.starts_with("refused") && host.recv_from(&mut buf).is_err(),
        "the launcher must mark every inherited descriptor close-on-exec:\n{}",
        ran.shown()
    );
    // Unconfined, the leaked socket reaches the host: the test can fail.
    let open = python(
        &Sandbox::none(),
        &space.work,
        SEND_ON_INHERITED,
        &[&fd, &port],
    )
    .await;
    assert_eq!(open.stdout, "sent\n", "{}", open.shown());
    let (len, _) = host.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..len], b"from inside");
}

/// Opens a socket of each family named, and says which the kernel let it have.
const FAMILIES: &str = r"
import socket
for name, family, kind in [
    ('vsock', socket.AF_VSOCK, socket.SOCK_STREAM),
    ('unix', socket.AF_UNIX, socket.SOCK_STREAM),
    ('inet', socket.AF_INET, socket.SOCK_STREAM),
    ('inet6', socket.AF_INET6, socket.SOCK_DGRAM),
    ('netlink', socket.AF_NETLINK, socket.SOCK_RAW),
]:
    try:
        socket.socket(family, kind).close()
        print(name, 'opened')
    except OSError as error:
        print(name, 'refused', error.errno)
";

#[tokio::test]
async fn seccomp_lets_a_program_without_the_network_open_ip_and_netlink_sockets_alone() {
    let space = Space::new();
    let ran = python(&Sandbox::new(), &space.work, FAMILIES, &[]).await;
    assert_eq!(ran.code, Some(0), "{}", ran.shown());
    for family in ["vsock", "unix"] {
        assert_eq!(
            ran.line(family),
            format!("refused {}", nix::errno::Errno::EPERM as i32),
            "seccomp must refuse {family} sockets:\n{}",
            ran.shown()
        );
    }
    for family in ["inet", "inet6", "netlink"] {
        assert_eq!(ran.line(family), "opened", "{}", ran.shown());
    }
    // Unconfined, the kernel gives (or refuses for its own reasons) what seccomp refused.
    let open = python(&Sandbox::none(), &space.work, FAMILIES, &[]).await;
    assert_eq!(open.line("unix"), "opened", "{}", open.shown());
    assert_ne!(
        open.line("vsock"),
        format!("refused {}", nix::errno::Errno::EPERM as i32),
        "{}",
        open.shown()
    );
}
