// SPDX-License-Identifier: Apache-2.0

// Package schema is the columns of every kind of hour file and how a row is written in
// them: the CSV headers and row encoders the writer uses, the tables the README shows and
// the types DuckDB and Parquet read them as, and what counts as an active session.
package schema

import (
	"strings"

	"github.com/threadcap/threadcap/output/hourfile"
)

// Version is the version of the column layout below. It changes whenever a column is
// added, removed, renamed, reordered or changes type, so that saved queries can tell which
// files they understand.
const Version = 9

// Column describes one CSV column: what analysts need to load it and what DBAs need to read
// it.
type Column struct {
	Name    string // snake_case, with the unit as a suffix when there is one
	Type    string // DuckDB type to load it as
	Unit    string // "" when the value has no unit
	Meaning string // one line
}

// DuckDB types used by the schema.
const (
	TypeBigint      = "BIGINT"
	TypeInteger     = "INTEGER"
	TypeVarchar     = "VARCHAR"
	TypeTimestampTZ = "TIMESTAMPTZ"
	TypeBoolean     = "BOOLEAN"
)

// Columns is the layout of every file, in order. AppendCSV writes exactly these fields.
var Columns = []Column{
	{"sample_time", TypeTimestampTZ, "", "Tick time, RFC 3339 with microseconds, in the local time zone of threadcap."},
	{"pid", TypeInteger, "", "Process ID (thread group ID)."},
	{"tid", TypeInteger, "", "Thread ID."},
	{"process", TypeVarchar, "", "Process name (its main thread's comm)." + hourfile.TextNote},
	{"thread", TypeVarchar, "", "Thread name (comm)." + hourfile.TextNote},
	{"user", TypeVarchar, "", "User name of the process, or its numeric uid." + hourfile.TextNote},
	{"state", TypeVarchar, "", "on_cpu, runnable, sleeping, uninterruptible, stopped or dead."},
	{"state_us", TypeBigint, "µs", "How long the thread has been in state; empty when unknown."},
	{"syscall", TypeVarchar, "", "Syscall in progress; empty in user space or when unknown." + hourfile.TextNote},
	{"syscall_us", TypeBigint, "µs", "How long the syscall has run so far; empty when none or unknown."},
	{"syscall_cpu_us", TypeBigint, "µs", "Part of syscall_us spent on CPU; empty when none or unknown."},
	{"syscall_args", TypeVarchar, "", "The six raw syscall arguments as lowercase 0x hex, space separated; empty with no syscall."},
	{"cpu", TypeInteger, "", "CPU the thread runs on or last ran on; empty if never seen."},
	{"on_cpu_us", TypeBigint, "µs", "Time on CPU since the previous tick, as the kernel counts it (what schedstat, top and getrusage show); empty for a seeded thread."},
	{"runnable_us", TypeBigint, "µs", "Time waiting for a CPU since the previous tick; empty for a seeded thread."},
	{"sleeping_us", TypeBigint, "µs", "Time in interruptible sleep since the previous tick; empty for a seeded thread."},
	{"uninterruptible_us", TypeBigint, "µs", "Time in uninterruptible sleep (D) since the previous tick; empty for a seeded thread."},
	{"stopped_us", TypeBigint, "µs", "Time stopped since the previous tick; empty for a seeded thread."},
	{"voluntary_switches", TypeBigint, "", "Context switches off CPU by sleeping since the previous tick; empty when unknown."},
	{"involuntary_switches", TypeBigint, "", "Context switches off CPU by preemption since the previous tick; empty when unknown."},
	{"exe", TypeVarchar, "", "Path of the process's executable." + hourfile.TextNote},
	{"seeded", TypeBoolean, "", "true when read from /proc because the kernel side has not observed the thread yet."},
	{"wchan", TypeVarchar, "", "Kernel function the thread waits in: the innermost frame of kernel_stack, or from /proc for a seeded thread; empty otherwise." + hourfile.TextNote},
	{"cgroup", TypeVarchar, "", "cgroup v2 path of the thread, such as /system.slice/mysql.service; empty when unknown or turned off." + hourfile.TextNote},
	{"fd_target", TypeVarchar, "", "What the syscall's file descriptor argument is: a path (pipe:[inode] for an anonymous pipe), or a socket as protocol local->remote address:port (local only when listening), unix and its path; empty for other syscalls." + hourfile.TextNote},
	{"kernel_stack", TypeVarchar, "", "Hash of the kernel stack a thread off CPU waits in (by default in uninterruptible sleep only), or of the kernel code a thread on CPU ran at the tick (empty in user code); the hour's threadcap_stacks_ file has its frames."},
	{"user_stack", TypeVarchar, "", "Hash of the user-space stack captured with kernel_stack, when user stacks are turned on (off by default); its frames are in the same stacks file."},
	{"io_dev", TypeVarchar, "", "Disk of the oldest block request the thread submitted that was in flight at the tick, as lsblk names it (vda, nvme0n1, loop3); empty when none or io is off. Asynchronous I/O is its submitter's (io_uring, libaio), page-cache writeback the flusher's." + hourfile.TextNote},
	{"io_op", TypeVarchar, "", "That request's operation: read, write, flush, discard or other; empty when none."},
	{"io_bytes", TypeBigint, "bytes", "That request's size; empty when none."},
	{"io_us", TypeBigint, "µs", "How long that request had been in flight at the tick, from its insertion into the queue (or issue when it went straight to the driver); empty when none."},
	{"io_queue_us", TypeBigint, "µs", "Part of io_us the request spent queued, before the driver took it; empty when none."},
	{"span", TypeVarchar, "", "The innermost configured span (spans in the config) the thread was in at the tick, such as query; empty when none."},
	{"span_us", TypeBigint, "µs", "How long the thread had been in span at the tick; empty when no span."},
	{"span_arg", TypeVarchar, "", "The string argument span's start captured (its first 127 bytes), such as the query text; empty when none." + hourfile.TextNote},
	{"cmdline", TypeVarchar, "", "The process's command line, arguments joined by spaces, at most 256 bytes; read once per process and again at most every 5 s while it has rows (PostgreSQL backends show user, database, client and state there)." + hourfile.TextNote},
	{"container", TypeVarchar, "", "Container of the thread, from its cgroup: runtime:short id (docker, containerd, crio, podman; cri when a kubepods path does not name the runtime) with 12 hex digits as docker ps shows, or runtime:name for nspawn and lxc; empty outside containers." + hourfile.TextNote},
	{"pod_uid", TypeVarchar, "", "UID of the Kubernetes pod of the thread, from its kubepods cgroup; empty outside pods."},
	{"unit", TypeVarchar, "", "Innermost systemd unit or scope of the thread's cgroup, such as mysql.service or session-3.scope; empty when none." + hourfile.TextNote},
	{"tcp_state", TypeVarchar, "", "State of the TCP socket the syscall waits on, as the kernel names it when the row is written (within about a millisecond of the tick at 1,000 such rows: a socket is not kept as of the tick as a thread's record is) (ESTABLISHED, SYN_SENT, CLOSE_WAIT...): its file descriptor's when fd_target is tcp or tcp6, or the one descriptor of a poll or ppoll on one, of a select or pselect6 on one (across its three sets, nfds at most 1024), or of an epoll wait on an epoll of one target; empty for other rows, as are the tcp_ columns after it."},
	{"tcp_srtt_us", TypeBigint, "µs", "That connection's smoothed round-trip time (ss -ti's rtt)."},
	{"tcp_retrans", TypeBigint, "segments", "That connection's retransmissions since it opened (ss -ti's retrans total)."},
	{"tcp_lost", TypeBigint, "segments", "That connection's segments presumed lost."},
	{"tcp_cwnd", TypeBigint, "segments", "That connection's congestion window."},
	{"tcp_unacked", TypeBigint, "segments", "That connection's segments sent and not yet acknowledged."},
	{"tcp_rcv_queue", TypeBigint, "bytes", "Bytes received on that connection and not yet read (ss's Recv-Q)."},
	{"tcp_snd_queue", TypeBigint, "bytes", "Bytes written to that connection and not yet acknowledged (ss's Send-Q)."},
	{"sleep_split_estimated", TypeBoolean, "", "true when sleeping_us and uninterruptible_us are not each the kernel's count but their sum (the kernel's) split by the states seen at the ticks: the hook-free mode (syscalls: tick) without kernel.sched_schedstats=1, and kernel threads in that mode; false when each is counted; empty for a seeded thread."},
}

// StackColumns is the layout of every stacks file: a stack's hash, as rows show it, and its
// frames, outermost first and ';'-separated (the folded form flame graph tools read).
var StackColumns = []Column{
	{"hash", TypeVarchar, "", "The hash rows show in kernel_stack or user_stack."},
	{"frames", TypeVarchar, "", "The stack's frames, outermost first, ';'-separated." + hourfile.TextNote},
}

// TickColumns is the layout of every ticks file: the time of each tick taken in the hour,
// whether or not any thread had a row at it. Averages over ticks (threads active on
// average) need the ticks without rows too, which the samples cannot show.
var TickColumns = []Column{
	{"sample_time", TypeTimestampTZ, "", "Tick time, as in the samples."},
}

// KindColumns are the columns of each kind of hour file.
var KindColumns = map[hourfile.Kind][]Column{
	hourfile.Samples: Columns,
	hourfile.Stacks:  StackColumns,
	hourfile.Ticks:   TickColumns,
	hourfile.Spans:   SpanColumns,
	hourfile.IO:      IOColumns,
	hourfile.Profile: ProfileColumns,
}

// kindHeaders head each kind of hour file.
var kindHeaders = map[hourfile.Kind]string{
	hourfile.Samples: header,
	hourfile.Stacks:  stacksHeader,
	hourfile.Ticks:   ticksHeader,
	hourfile.IO:      ioHeader,
	hourfile.Spans:   spansHeader,
	hourfile.Profile: profileHeader,
}

// KindHeader is the first line of every hour file of kind, newline included.
func KindHeader(kind hourfile.Kind) string { return kindHeaders[kind] }

// HeaderOf is the first line of a file of columns, newline included.
func HeaderOf(columns []Column) string {
	names := make([]string, len(columns))
	for i, c := range columns {
		names[i] = c.Name
	}
	return strings.Join(names, ",") + "\n"
}

// header is the first line of every file, computed once because every rotation writes it.
var header = HeaderOf(Columns)

// Header is the first line of every file, newline included.
func Header() string { return header }

// ticksHeader heads every ticks file (see TickColumns).
var ticksHeader = HeaderOf(TickColumns)

// TicksHeader is the first line of every ticks file, newline included.
func TicksHeader() string { return ticksHeader }

// MarkdownTable renders the schema as the table the README documents, so that a test can
// keep the two from drifting apart.
func MarkdownTable() string { return markdownTable(Columns) }

// IOMarkdownTable renders the io files' columns likewise.
func IOMarkdownTable() string { return markdownTable(IOColumns) }

func markdownTable(columns []Column) string {
	var b strings.Builder
	b.WriteString("| column | type | unit | meaning |\n")
	b.WriteString("|---|---|---|---|\n")
	for _, c := range columns {
		for _, cell := range []string{c.Name, c.Type, c.Unit, c.Meaning} {
			b.WriteString("| ")
			b.WriteString(markdownCell(cell))
			b.WriteString(" ")
		}
		b.WriteString("|\n")
	}
	return b.String()
}

// markdownCell escapes what would otherwise end a table cell or start inline code.
func markdownCell(s string) string {
	return strings.NewReplacer("|", `\|`, "`", "\\`").Replace(s)
}

// DuckDBColumns is the columns argument of DuckDB's read_csv for these files, for example
//
//	SELECT * FROM read_csv('threadcap_samples_*.csv*', header = true, columns = <this>)
//
// Naming every column with its type stops DuckDB guessing types from the first rows, which
// would make an empty syscall column VARCHAR in one file and BIGINT in another.
func DuckDBColumns() string { return duckDBColumns(Columns) }

// DuckDBSpanColumns is DuckDBColumns for the spans files.
func DuckDBSpanColumns() string { return duckDBColumns(SpanColumns) }

func duckDBColumns(columns []Column) string {
	var b strings.Builder
	b.WriteString("{")
	for i, c := range columns {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("'" + c.Name + "': '" + c.Type + "'")
	}
	b.WriteString("}")
	return b.String()
}
