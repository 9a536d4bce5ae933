// SPDX-License-Identifier: Apache-2.0

// Package bpf holds threadcap's kernel side, the objects bpf2go compiled from it, and the
// Tracker that loads, attaches and reads them.
package bpf

//go:generate go tool bpf2go -cc clang-19 -strip llvm-strip-19 -target amd64,arm64 -type record -type tc_view -type task_slot -type tc_state -type tc_counter -type tc_probe -type tc_arg -type tc_arg_kind -type tc_span_thread -type tc_span_frame -type tc_span_stats -type tc_tick_kstack -cflags "-O2 -g -Wall -Werror -mcpu=v3 -nostdinc" threadcap threadcap.bpf.c
//go:generate go tool bpf2go -cc clang-19 -strip llvm-strip-19 -target amd64,arm64 -type tc_io -type tc_io_done_key -type tc_io_key -type tc_io_stat -type tc_io_op -cflags "-O2 -g -Wall -Werror -mcpu=v3 -nostdinc" io io.bpf.c
//go:generate go tool bpf2go -cc clang-19 -strip llvm-strip-19 -target amd64,arm64 -cflags "-O2 -g -Wall -Werror -mcpu=v3 -nostdinc" taskiter taskiter.bpf.c
//go:generate go tool bpf2go -cc clang-19 -strip llvm-strip-19 -target amd64,arm64 -type tc_profile_key -type tc_profile_count -cflags "-O2 -g -Wall -Werror -mcpu=v3 -nostdinc" profile profile.bpf.c
//go:generate go tool bpf2go -cc clang-19 -strip llvm-strip-19 -target amd64,arm64 -type tc_tcp_ask -type tc_tcp_sock -cflags "-O2 -g -Wall -Werror -mcpu=v3 -nostdinc" tcpsock tcpsock.bpf.c
//go:generate go tool bpf2go -cc clang-19 -strip llvm-strip-19 -target amd64,arm64 -type tc_kstack_ask -cflags "-O2 -g -Wall -Werror -mcpu=v3 -nostdinc" kstackask kstackask.bpf.c
