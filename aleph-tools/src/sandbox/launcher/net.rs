//! The first stage's side of the network proxy: the proxy started on the host's network
//! before the namespaces are made, the sandbox's loopback brought up, and the socket the
//! proxy listens on made inside the sandbox and handed out to it.

use std::ffi::OsString;
use std::io::IoSlice;
use std::mem::MaybeUninit;
use std::net::{Ipv4Addr, TcpListener};
use std::os::fd::{AsFd as _, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, Stdio};

use rustix::net::{
    AddressFamily, RecvFlags, SendAncillaryBuffer, SendAncillaryMessage, SendFlags, SocketFlags,
    SocketType, netlink::SocketAddrNetlink,
};

use super::Failure;
use crate::sandbox::launch::{PROXY_NAME, Plan};

/// The proxy process, and the channel it is handed its socket over. The proxy ends when the
/// channel closes, and is ended and reaped when this is dropped.
pub(super) struct Proxy {
    channel: UnixStream,
    process: Child,
}

/// What points programs at the proxy.
const VARIABLES: &[&str] = &[
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
];

impl Proxy {
    /// Starts the proxy, with the channel as its standard input, while this process is still
    /// on the host's network.
    pub(super) fn start(plan: &Plan) -> Result<Self, Failure> {
        let (channel, theirs) =
            UnixStream::pair().map_err(|error| Failure::of("open the proxy's channel", error))?;
        let plan_text =
            serde_json::to_string(plan).map_err(|error| Failure::of("pass the plan on", error))?;
        let process = Command::new("/proc/self/exe")
            .arg0(PROXY_NAME)
            .arg(plan_text)
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .stdout(Stdio::null())
            .spawn()
            .map_err(|error| Failure::of("start the network proxy", error))?;
        Ok(Self { channel, process })
    }

    /// Brings the sandbox's loopback up, listens on a free port of it, hands the socket to
    /// the proxy, and returns the port. Called inside the sandbox's network namespace.
    pub(super) fn listen_inside(&self) -> Result<u16, Failure> {
        loopback_up()?;
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .map_err(|error| Failure::of("listen on the sandbox's loopback", error))?;
        let port = listener
            .local_addr()
            .map_err(|error| Failure::of("listen on the sandbox's loopback", error))?
            .port();
        let fds = [listener.as_fd()];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        control.push(SendAncillaryMessage::ScmRights(&fds));
        rustix::net::sendmsg(
            &self.channel,
            &[IoSlice::new(&port.to_be_bytes())],
            &mut control,
            // Before `main`, SIGPIPE still ends the process: a proxy that died is an error.
            SendFlags::NOSIGNAL,
        )
        .map_err(|error| Failure::of("hand the proxy its socket", error))?;
        Ok(port)
    }
}

/// The variables that point programs at the proxy on `port`, and leave no host out of it.
pub(super) fn variables(port: u16) -> Vec<(&'static str, OsString)> {
    let url = OsString::from(format!("http://127.0.0.1:{port}"));
    let mut variables: Vec<(&'static str, OsString)> =
        VARIABLES.iter().map(|&name| (name, url.clone())).collect();
    variables.extend([
        ("NO_PROXY", OsString::new()),
        ("no_proxy", OsString::new()),
        ("NODE_USE_ENV_PROXY", OsString::from("1")),
    ]);
    variables
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// Sets the loopback interface up (`RTM_NEWLINK` over netlink; loopback is interface 1 of
/// every network namespace), and waits for the kernel's acknowledgement.
fn loopback_up() -> Result<(), Failure> {
    let fail = |error| Failure::of("bring the sandbox's loopback up", error);
    let socket = rustix::net::socket_with(
        AddressFamily::NETLINK,
        SocketType::RAW,
        SocketFlags::CLOEXEC,
        None,
    )
    .map_err(fail)?;
    let up = libc::IFF_UP.cast_unsigned();
    let mut message = Vec::with_capacity(32);
    message.extend_from_slice(&32_u32.to_ne_bytes());
    message.extend_from_slice(&libc::RTM_NEWLINK.to_ne_bytes());
    let flags = u16::try_from(libc::NLM_F_REQUEST | libc::NLM_F_ACK).unwrap_or_default();
    message.extend_from_slice(&flags.to_ne_bytes());
    message.extend_from_slice(&1_u32.to_ne_bytes());
    message.extend_from_slice(&0_u32.to_ne_bytes());
    // ifinfomsg: family, padding, type, index, flags, the flags changed.
    message.extend_from_slice(&[0, 0, 0, 0]);
    message.extend_from_slice(&1_i32.to_ne_bytes());
    message.extend_from_slice(&up.to_ne_bytes());
    message.extend_from_slice(&up.to_ne_bytes());
    rustix::net::sendto(
        &socket,
        &message,
        SendFlags::empty(),
        &SocketAddrNetlink::new(0, 0),
    )
    .map_err(fail)?;
    let mut answer = [0_u8; 256];
    let (read, _) = rustix::net::recv(&socket, &mut answer, RecvFlags::empty()).map_err(fail)?;
    let kind = answer
        .get(4..6)
        .map(|bytes| u16::from_ne_bytes([bytes[0], bytes[1]]));
    let code = answer
        .get(16..20)
        .filter(|_| read >= 20)
        .map(|bytes| i32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]));
    match (kind, code) {
        (Some(kind), Some(0)) if i32::from(kind) == libc::NLMSG_ERROR => Ok(()),
        (Some(kind), Some(code)) if i32::from(kind) == libc::NLMSG_ERROR => Err(fail(
            rustix::io::Errno::from_raw_os_error(code.saturating_neg()),
        )),
        _ => Err(Failure(
            "cannot bring the sandbox's loopback up: the kernel answered in a form not known"
                .to_owned(),
        )),
    }
}
