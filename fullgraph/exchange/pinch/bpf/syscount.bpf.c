// SPDX-License-Identifier: Apache-2.0
/* Tracepoint: count the system calls of watched processes.
 *
 * The benchmarks report system calls per training round for every transport, MPI ones
 * included, whose calls happen in libraries out of reach of any Python-level counter; counting
 * at sys_enter per thread group sees them all. Only the process ids user space put in `watch` are
 * counted, so the rest of the machine costs one hash lookup per call. A raw tracepoint, not
 * tracepoint/raw_syscalls/sys_enter: that one needs tracefs mounted to find its id, this one not.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define MAX_PROCESSES 16384

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, MAX_PROCESSES);
    __type(key, __u32);
    __type(value, __u8);
} watch SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, MAX_PROCESSES);
    __type(key, __u32);
    __type(value, __u64);
} counts SEC(".maps");

SEC("raw_tp/sys_enter")
int pinch_syscount(void *ctx)
{
    __u32 tgid = bpf_get_current_pid_tgid() >> 32;
    __u64 one = 1, *count;

    if (!bpf_map_lookup_elem(&watch, &tgid))
        return 0;
    count = bpf_map_lookup_elem(&counts, &tgid);
    if (count) {
        __sync_fetch_and_add(count, 1);
        return 0;
    }
    /* First call: insert; a thread of the same process may have raced us to it. */
    if (bpf_map_update_elem(&counts, &tgid, &one, BPF_NOEXIST)) {
        count = bpf_map_lookup_elem(&counts, &tgid);
        if (count)
            __sync_fetch_and_add(count, 1);
    }
    return 0;
}

char LICENSE[] SEC("license") = "GPL";
