//! The watched processes' TCP sockets by state, and their listening sockets' accept queues.
//!
//! A process's sockets are the inodes its `fd` links name (`socket:[N]`); their states come from
//! the kernel's table of TCP sockets. Either way that table is read, the kernel walks every
//! bucket of the established hash, empty or not: as text (`/proc/PID/net/tcp`, `tcp6`), then
//! formatted line by line, 4.9 ms for both files on this project's test VM (kernel 6.18,
//! 262,144 buckets, ten sockets); over netlink's `sock_diag` (what `ss` uses), in binary,
//! 2.3–2.5 ms for IPv4 alone and 2.7–4.5 ms with IPv6 (`cargo bench -p probe --bench
//! collectors`, medians of three runs each). So a family the namespace holds no TCP socket of
//! is not asked for, and one dump per slow pass serves every process of the tree.
//!
//! TIME_WAIT and SYN_RECV sockets belong to no process (their inode is 0), so they are left out
//! of the dump. A target in another network namespace than the probe's (a container) is read
//! from its own `net/tcp` files instead, since netlink answers for the probe's namespace.

use std::collections::{HashMap, HashSet};
use std::io;
use std::os::unix::fs::MetadataExt;

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_packet_sock_diag::constants::{AF_INET, AF_INET6, IPPROTO_TCP};
use netlink_packet_sock_diag::inet::{ExtensionFlags, InetRequest, SocketId, StateFlags};
use netlink_packet_sock_diag::SockDiagMessage;
use netlink_sys::{protocols::NETLINK_SOCK_DIAG, Socket, SocketAddr};

use crate::collect::host::sockstat_value;
use crate::collect::ProcRoot;
use crate::sample::TcpSockets;

/// A socket's state (include/net/tcp_states.h) and, for a listening one, its accept queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpState {
    pub state: u8,
    /// `recv_queue`: connections waiting to be accepted, for a LISTEN socket.
    pub queue: u64,
}

/// The TCP sockets a process can hold, by inode.
pub type TcpTable = HashMap<u64, TcpState>;

/// Counts `inodes` (one process's sockets) by state.
pub fn count(table: &TcpTable, inodes: &HashSet<u64>) -> TcpSockets {
    let mut out = TcpSockets::default();
    for state in inodes.iter().filter_map(|i| table.get(i)) {
        let slot = match state.state {
            1 => &mut out.established,
            2 => &mut out.syn_sent,
            3 | 12 => &mut out.syn_recv,
            4 => &mut out.fin_wait1,
            5 => &mut out.fin_wait2,
            6 => &mut out.time_wait,
            7 => &mut out.close,
            8 => &mut out.close_wait,
            9 => &mut out.last_ack,
            10 => {
                out.accept_queue += state.queue;
                &mut out.listen
            }
            _ => &mut out.closing,
        };
        *slot += 1;
    }
    out
}

/// The states a process can hold a socket in: all but TIME_WAIT and SYN_RECV.
fn held_states() -> StateFlags {
    StateFlags::all() - StateFlags::TIME_WAIT - StateFlags::SYN_RECV
}

/// A netlink `sock_diag` socket, kept open between passes.
#[derive(Debug)]
pub struct SockDiag {
    socket: Socket,
    buf: Vec<u8>,
    /// This process's network namespace (the inode of `/proc/self/ns/net`).
    namespace: Option<u64>,
}

impl SockDiag {
    pub fn open() -> io::Result<Self> {
        let mut socket = Socket::new(NETLINK_SOCK_DIAG)?;
        socket.bind_auto()?;
        socket.connect(&SocketAddr::new(0, 0))?;
        Ok(SockDiag {
            socket,
            buf: vec![0; 64 * 1024],
            namespace: namespace_of("/proc/self/ns/net"),
        })
    }

    /// Whether `pid`'s sockets are in this namespace's table (when that cannot be told, its
    /// own files are read instead).
    pub fn sees(&self, root: &ProcRoot, pid: i32) -> bool {
        root.is_system()
            && self.namespace.is_some()
            && namespace_of(root.path().join(pid.to_string()).join("ns/net")) == self.namespace
    }

    /// Every TCP socket of this network namespace that a process can hold, by inode. A family
    /// the namespace holds no TCP socket of (`/proc/net/sockstat6` says `TCP6: inuse 0`) is
    /// not asked for: each dump walks every bucket of the established hash, empty or not.
    pub fn dump(&mut self) -> io::Result<TcpTable> {
        let mut table = TcpTable::new();
        for (family, file, key) in [
            (AF_INET, "/proc/net/sockstat", "TCP:"),
            (AF_INET6, "/proc/net/sockstat6", "TCP6:"),
        ] {
            let in_use = std::fs::read_to_string(file)
                .ok()
                .and_then(|text| sockstat_value(&text, key, "inuse"));
            if in_use != Some(0) {
                self.dump_family(family, &mut table)?;
            }
        }
        Ok(table)
    }

    fn dump_family(&mut self, family: u8, table: &mut TcpTable) -> io::Result<()> {
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | NLM_F_DUMP;
        let mut request = NetlinkMessage::new(
            header,
            SockDiagMessage::InetRequest(InetRequest {
                family,
                protocol: IPPROTO_TCP,
                extensions: ExtensionFlags::empty(),
                states: held_states(),
                socket_id: if family == AF_INET {
                    SocketId::new_v4()
                } else {
                    SocketId::new_v6()
                },
            })
            .into(),
        );
        request.finalize();
        let mut out = vec![0; request.buffer_len()];
        request.serialize(&mut out);
        self.socket.send(&out, 0)?;
        loop {
            let size = self.socket.recv(&mut &mut self.buf[..], 0)?;
            let mut offset = 0;
            while offset < size {
                let message =
                    NetlinkMessage::<SockDiagMessage>::deserialize(&self.buf[offset..size])
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
                let length = message.header.length as usize;
                match message.payload {
                    NetlinkPayload::InnerMessage(SockDiagMessage::InetResponse(response)) => {
                        let h = &response.header;
                        if h.inode != 0 {
                            table.insert(
                                u64::from(h.inode),
                                TcpState {
                                    state: h.state,
                                    queue: u64::from(h.recv_queue),
                                },
                            );
                        }
                    }
                    NetlinkPayload::Done(_) => return Ok(()),
                    NetlinkPayload::Error(e) => {
                        return Err(io::Error::other(format!("sock_diag: {e:?}")));
                    }
                    _ => {}
                }
                if length == 0 {
                    break;
                }
                offset += (length + 3) & !3;
            }
        }
    }
}

/// One line of `net/tcp` or `net/tcp6`, the fields used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpEntry {
    pub local_port: u16,
    pub state: u8,
    pub rx_queue: u64,
    pub inode: u64,
}

/// Parses `net/tcp` lines: `sl local_address rem_address st tx_queue:rx_queue tr:tm->when
/// retrnsmt uid timeout inode …`, all hexadecimal but `uid`, `timeout` and `inode`.
pub fn tcp_entries(text: &str) -> impl Iterator<Item = TcpEntry> + '_ {
    text.lines().skip(1).filter_map(|line| {
        let mut f = line.split_whitespace();
        let local = f.next().and(f.next())?;
        let local_port = u16::from_str_radix(local.rsplit(':').next()?, 16).ok()?;
        let state = u8::from_str_radix(f.nth(1)?, 16).ok()?;
        let queues = f.next()?;
        let rx_queue = u64::from_str_radix(queues.split(':').nth(1)?, 16).ok()?;
        let inode = f.nth(4)?.parse().ok()?;
        Some(TcpEntry {
            local_port,
            state,
            rx_queue,
            inode,
        })
    })
}

/// The TCP sockets among `inodes`, by state, from the `net/tcp` and `net/tcp6` files of process
/// `pid`'s network namespace: for a target in another namespace than the probe's.
pub fn from_files(root: &ProcRoot, pid: i32, inodes: &HashSet<u64>) -> Option<TcpSockets> {
    let dir = root.path().join(pid.to_string()).join("net");
    let mut table = TcpTable::new();
    let mut any = false;
    let mut buf = Vec::with_capacity(256 * 1024);
    for file in ["tcp", "tcp6"] {
        // In one read: each read of these files walks the kernel's whole TCP hash table
        // again, so small reads cost a walk each.
        let Ok(file) = std::fs::File::open(dir.join(file)) else {
            continue;
        };
        if crate::collect::pread_all(&file, &mut buf).is_err() {
            continue;
        }
        any = true;
        for entry in tcp_entries(&String::from_utf8_lossy(&buf)) {
            if entry.inode != 0 {
                table.insert(
                    entry.inode,
                    TcpState {
                        state: entry.state,
                        queue: entry.rx_queue,
                    },
                );
            }
        }
    }
    any.then(|| count(&table, inodes))
}

fn namespace_of(path: impl AsRef<std::path::Path>) -> Option<u64> {
    std::fs::metadata(path).ok().map(|m| m.ino())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_lines_give_port_state_queue_and_inode() {
        let text = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:1F90 00000000:0000 0A 00000000:00000005 00:00000000 00000000     0        0 34567 1 0000000000000000 100 0 0 10 0\n";
        let e: Vec<TcpEntry> = tcp_entries(text).collect();
        assert_eq!(
            e,
            vec![TcpEntry {
                local_port: 8080,
                state: 10,
                rx_queue: 5,
                inode: 34567
            }]
        );
    }

    #[test]
    fn this_process_sees_its_own_sockets_by_state() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        // One connection waits in the accept queue; a second is accepted.
        let _waiting = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let mut diag = SockDiag::open().unwrap();
        assert!(diag.sees(&ProcRoot::default(), std::process::id() as i32));
        let table = diag.dump().unwrap();
        let inode = |fd: &dyn std::os::fd::AsRawFd| {
            let link = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap();
            let text = link.to_string_lossy().into_owned();
            text.trim_start_matches("socket:[")
                .trim_end_matches(']')
                .parse::<u64>()
                .unwrap()
        };
        let mine: HashSet<u64> = [inode(&listener), inode(&client)].into();
        let counted = count(&table, &mine);
        assert_eq!(counted.listen, 1, "{counted:?}");
        assert_eq!(counted.established, 1, "{counted:?}");
        assert_eq!(
            counted.accept_queue, 2,
            "both connections wait: {counted:?}"
        );
    }

    #[test]
    fn sockstat_says_how_many_tcp_sockets_a_family_holds() {
        let v4 =
            "sockets: used 8\nTCP: inuse 3 orphan 0 tw 10 alloc 4 mem 88\nUDP: inuse 0 mem 0\n";
        let v6 = "TCP6: inuse 0\nUDP6: inuse 2\n";
        assert_eq!(sockstat_value(v4, "TCP:", "inuse"), Some(3));
        assert_eq!(sockstat_value(v6, "TCP6:", "inuse"), Some(0));
        assert_eq!(sockstat_value(v6, "TCP:", "inuse"), None, "TCP6 is not TCP");
        assert_eq!(sockstat_value("TCP: orphan 0", "TCP:", "inuse"), None);
    }

    #[test]
    fn an_ipv6_socket_is_in_the_table_beside_the_ipv4_ones() {
        // Where the machine has no IPv6 loopback there is nothing to look for.
        let Ok(listener) = std::net::TcpListener::bind("[::1]:0") else {
            return;
        };
        let link = std::fs::read_link(format!(
            "/proc/self/fd/{}",
            std::os::fd::AsRawFd::as_raw_fd(&listener)
        ))
        .unwrap();
        let inode: u64 = link
            .to_string_lossy()
            .trim_start_matches("socket:[")
            .trim_end_matches(']')
            .parse()
            .unwrap();
        let table = SockDiag::open().unwrap().dump().unwrap();
        assert_eq!(table.get(&inode).map(|s| s.state), Some(10), "{table:?}");
    }
}
