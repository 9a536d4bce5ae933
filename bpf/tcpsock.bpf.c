// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/*
 * The tcp_ columns, read in the kernel: for each row that waits on a TCP socket, the
 * sampler asks for (thread, descriptor, inode of the socket fd_target named) and this
 * iterator answers them all in one run, with what ss -ti shows of the connection (the
 * kernel's tcp_get_info and tcp_diag_get_info: the same fields, read the same way).
 *
 * Why here and not through sock_diag: sock_diag finds a socket by its addresses in one
 * network namespace, through a netlink socket opened in that namespace (some 2-4 µs a
 * socket, or a dump of all the namespace's); a socket reached from its descriptor is one
 * pointer walk away whatever namespace it lives in, so threadcap reads it from its own
 * (PrivateNetwork=yes included), with no netlink socket and no namespace to enter.
 *
 * The walk (task->files->fdt->fd[fd] -> file -> socket -> sock) loads fields directly, as
 * untrusted pointers, which a fault cannot crash on: the descriptor table may change under
 * it (the iterator runs under RCU, which keeps a table and a file from being freed, not
 * from being replaced), so every step is checked instead: the file's inode must be a socket's with the inode asked for, the
 * socket's file the file (private_data is a struct socket), the sock TCP. A descriptor
 * closed and reused since fd_target named it is another inode, and gets no answer.
 *
 * The walk costs most of an answer (some 0.75 µs of 0.85, its loads a cache miss each), and
 * a thread waiting on a socket waits on the same one tick after tick: so an answer says
 * where it found a TCP sock, and the next ask for that socket names it (known_sock), read
 * from there when it still is the socket of that inode: two cache lines, read at once, to
 * check it, not the walk's ten one after the other.
 */
#include "include/vmlinux.h"
#include "include/bpf_helpers.h"
#include "include/bpf_core_read.h"
#include "askiter.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Kernel 6.2 and newer; user space loads this object only where the kernel has them. */
extern struct task_struct *bpf_task_from_pid(__s32 pid) __ksym __weak;
extern void bpf_task_release(struct task_struct *p) __ksym __weak;

#define AF_INET 2
#define AF_INET6 10
#define SOCK_STREAM 1
#define IPPROTO_TCP 6
#define IPPROTO_MPTCP 262
#define S_IFMT 00170000
#define S_IFSOCK 0140000
#define TCP_LISTEN 10

/* The kernel fields read, matched by CO-RE to the running kernel's (suffixes ignored). */
#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)
struct inode___tc {
	unsigned short i_mode;
	unsigned long i_ino;
};
struct file___tc {
	struct inode___tc *f_inode;
	void *private_data;
};
struct fdtable___tc {
	unsigned int max_fds;
	struct file___tc **fd;
};
struct files_struct___tc {
	struct fdtable___tc *fdt;
};
struct task_struct___tc {
	struct files_struct___tc *files;
};
struct in6_addr___tc {
	union {
		__u8 u6_addr8[16];
	} in6_u;
};
/* The addresses and ports sit in anonymous unions of the kernel's struct, which CO-RE
 * finds by name. */
struct sock_common___tc {
	__be32 skc_daddr;
	__be32 skc_rcv_saddr;
	__be16 skc_dport;
	__u16 skc_num;
	unsigned short skc_family;
	unsigned char skc_state;
	struct in6_addr___tc skc_v6_daddr;
	struct in6_addr___tc skc_v6_rcv_saddr;
};
struct socket___tc;
struct sock___tc {
	struct sock_common___tc __sk_common;
	struct socket___tc *sk_socket;
	__u16 sk_type;
	__u16 sk_protocol;
	__u32 sk_ack_backlog;
	__u32 sk_max_ack_backlog;
};
struct socket___tc {
	struct file___tc *file;
	struct sock___tc *sk;
};
/* A socket and its inode are allocated together (SOCK_INODE). */
struct socket_alloc___tc {
	struct socket___tc socket;
	struct inode___tc vfs_inode;
};
/* An MPTCP socket's first subflow: a TCP sock (a listener's listens). */
struct mptcp_sock___tc {
	struct sock___tc *first;
};
/* struct tcp_sock starts with its struct sock (through inet_connection_sock). */
struct tcp_sock___tc {
	__u32 srtt_us;
	__u32 total_retrans;
	__u32 lost_out;
	__u32 snd_cwnd;
	__u32 packets_out;
	__u32 rcv_nxt;
	__u32 copied_seq;
	__u32 write_seq;
	__u32 snd_una;
};
#pragma clang attribute pop

/* A connection as ss -ti shows it; state 0 when the socket asked for was not found. */
struct tc_tcp_sock {
	__u32 rcv_queue; /* Recv-Q: bytes received, not read (a listener: connections to accept) */
	__u32 snd_queue; /* Send-Q: bytes written, not acknowledged (a listener: its backlog) */
	__u32 srtt_us;
	__u32 retrans;
	__u32 lost;
	__u32 cwnd;
	__u32 unacked;
	__u8 state; /* include/net/tcp_states.h */
	__u8 family; /* AF_INET or AF_INET6 */
	__u16 local_port;
	__u16 remote_port; /* 0: none (a listener) */
	__u8 pad[6];
	/* Network byte order; IPv4 in the first 4 bytes. */
	__u8 local[16];
	__u8 remote[16];
};

/* One question and, after the run, its answer. */
struct tc_tcp_ask {
	__u64 ino; /* the socket's inode, as fd_target found it */
	/*
	 * In: where an earlier answer found this socket's sock, tried before the walk (0:
	 * none). Out: where this answer found it, 0 when it did not. A kernel address, in
	 * memory only the daemon (which may read the kernel's memory anyway) maps.
	 */
	__u64 sk;
	/* In and out as sk: where the socket whose sock that is was found. */
	__u64 socket;
	__s32 tid;
	__s32 fd;
	struct tc_tcp_sock sock;
};

/*
 * bpf_rdonly_cast (Linux 6.2) makes an address read with bpf_probe_read_kernel a pointer to
 * a kernel type again, whose fields then load directly (each a plain load the JIT guards
 * with an exception table entry), rather than through a helper call a field.
 */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;
#define kernel_cast(p, type) ((struct type *)bpf_rdonly_cast((p), bpf_core_type_id_kernel(struct type)))

/* The sock of descriptor fd of task, when its inode is ino; NULL otherwise. */
static struct sock___tc *sock_of(struct task_struct___tc *task, __s32 fd, __u64 ino)
{
	struct files_struct___tc *files = task->files;
	struct fdtable___tc *fdt;
	struct file___tc **fds;
	void *entry = NULL;

	if (!files)
		return NULL;
	fdt = files->fdt;
	if (!fdt || fd < 0 || (__u32)fd >= fdt->max_fds)
		return NULL;
	fds = fdt->fd;
	if (!fds || bpf_probe_read_kernel(&entry, sizeof(entry), fds + fd) || !entry)
		return NULL;
	struct file___tc *file = kernel_cast(entry, file___tc);
	struct inode___tc *inode = file->f_inode;
	if (!inode || (inode->i_mode & S_IFMT) != S_IFSOCK || inode->i_ino != ino)
		return NULL;
	struct socket___tc *sock = kernel_cast(file->private_data, socket___tc);
	if (!sock || (void *)sock->file != entry)
		return NULL;
	return sock->sk;
}

/*
 * The TCP sock at addr, where an earlier answer found the socket of inode ino, if it still
 * is that socket's; socket is where that answer found the socket. A TCP sock's memory stays
 * a TCP sock's while any is allocated from its slab (SLAB_TYPESAFE_BY_RCU), and a closed
 * socket's sock is orphaned (sk_socket NULL) before it is freed: so a sock freed since, or
 * reused for another socket, has no socket or another, and one that is still its socket's
 * is still TCP. A socket and its inode are freed after an RCU grace period, which this run
 * is inside: memory at socket that held the inode when the run began holds it to its end,
 * and memory reused before holds another number. Memory given back and reused for anything
 * else is read as untrusted (a fault reads 0): it would have to hold both that address and
 * that very number.
 *
 * The socket's inode is read at socket, not through sk_socket: both loads go out at once
 * rather than one after the other, each a cache miss at a tick (0.26 ms a tick for 1,000
 * sockets read one after the other, 0.235 at once).
 */
static struct sock___tc *known_sock(__u64 addr, __u64 socket, __u64 ino)
{
	struct sock___tc *sk = kernel_cast((void *)addr, sock___tc);
	__u64 socket_ino = kernel_cast((void *)socket, socket_alloc___tc)->vfs_inode.i_ino;

	if (!socket || (__u64)sk->sk_socket != socket || socket_ino != ino)
		return NULL;
	return sk;
}

/* The TCP sock of sk, a socket's sock; NULL when it is not TCP. */
static struct sock___tc *tcp_of(struct sock___tc *sk)
{
	if (!sk)
		return NULL;
	unsigned short family = sk->__sk_common.skc_family;
	if ((family != AF_INET && family != AF_INET6) || sk->sk_type != SOCK_STREAM)
		return NULL;
	/*
	 * Go listens with MPTCP by default (1.24); the kernel's /proc/net/tcp and sock_diag
	 * show its first subflow, a TCP sock grafted on the same inode, so fd_target names
	 * the socket tcp and ss shows that subflow: so does this.
	 */
	if (sk->sk_protocol == IPPROTO_MPTCP && bpf_core_type_exists(struct mptcp_sock___tc))
		sk = kernel_cast(sk, mptcp_sock___tc)->first;
	if (!sk || sk->sk_protocol != IPPROTO_TCP)
		return NULL;
	return sk;
}

/*
 * read_tcp fills out as tcp_diag_get_info (the queues) and tcp_get_info (the rest) do:
 * a listener's queues are its accept queue and backlog, its unacked the connections
 * waiting to be accepted, and of the rest only the congestion window. The addresses are
 * those /proc/net/tcp shows (which name the socket in fd_target).
 */
static void read_tcp(struct sock___tc *sk, struct tc_tcp_sock *out)
{
	struct tcp_sock___tc *tp = kernel_cast(sk, tcp_sock___tc);
	__u8 state = sk->__sk_common.skc_state;

	out->cwnd = tp->snd_cwnd;
	if (state == TCP_LISTEN) {
		out->rcv_queue = out->unacked = sk->sk_ack_backlog;
		out->snd_queue = sk->sk_max_ack_backlog;
	} else {
		__s32 unread = (__s32)(tp->rcv_nxt - tp->copied_seq);
		out->rcv_queue = unread > 0 ? unread : 0;
		out->snd_queue = tp->write_seq - tp->snd_una;
		out->srtt_us = tp->srtt_us >> 3;
		out->retrans = tp->total_retrans;
		out->lost = tp->lost_out;
		out->unacked = tp->packets_out;
	}
	out->state = state;
	out->family = sk->__sk_common.skc_family;
	out->local_port = sk->__sk_common.skc_num;
	out->remote_port = __builtin_bswap16(sk->__sk_common.skc_dport);
	if (out->family == AF_INET6 && bpf_core_field_exists(sk->__sk_common.skc_v6_daddr)) {
		bpf_probe_read_kernel(out->local, 16, &sk->__sk_common.skc_v6_rcv_saddr);
		bpf_probe_read_kernel(out->remote, 16, &sk->__sk_common.skc_v6_daddr);
	} else {
		__builtin_memcpy(out->local, &(__be32){sk->__sk_common.skc_rcv_saddr}, 4);
		__builtin_memcpy(out->remote, &(__be32){sk->__sk_common.skc_daddr}, 4);
	}
}

ASK_ITERATOR(struct tc_tcp_ask, answer, bpf_task_from_pid && bpf_task_release && bpf_rdonly_cast)

static long answer(__u32 i, void *unused)
{
	struct tc_tcp_ask *ask = ask_at(i);
	struct task_struct *task;
	struct sock___tc *sk = NULL, *tcp;

	if (!ask)
		return 1;
	__builtin_memset(&ask->sock, 0, sizeof(ask->sock));
	if (ask->sk && (tcp = known_sock(ask->sk, ask->socket, ask->ino))) {
		read_tcp(tcp, &ask->sock);
		return 0;
	}
	task = bpf_task_from_pid(ask->tid);
	if (task) {
		sk = sock_of((struct task_struct___tc *)task, ask->fd, ask->ino);
		bpf_task_release(task);
	}
	tcp = tcp_of(sk);
	/* An MPTCP subflow is not its socket's sock: known_sock could not tell it. */
	ask->sk = tcp && tcp == sk ? (__u64)sk : 0;
	ask->socket = ask->sk ? (__u64)sk->sk_socket : 0;
	if (tcp)
		read_tcp(tcp, &ask->sock);
	return 0;
}
