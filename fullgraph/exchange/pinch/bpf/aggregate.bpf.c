// SPDX-License-Identifier: Apache-2.0
/* XDP: add the records of PINCH FIXED packets into a memory-mapped aggregate array.
 *
 * Each armed data packet is deduplicated first (a per-sender, per-sequence-number slot claimed by
 * compare-and-swap with the epoch, since adds cannot be undone), then its records are added with
 * atomics, so user space reads finished sums through mmap without one system call per packet.
 * Everything it does not own (other traffic, control packets, stale or unarmed epochs) goes up
 * the stack unchanged; the packet that brings the last expected record goes up too, as the
 * signal user space waits on. Every other data packet is consumed here.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "pinch.h"

#define IP_MF 0x2000
#define IP_OFFSET 0x1fff
#define IPV4_IHL_NO_OPTIONS 5

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_MMAPABLE);
    __uint(max_entries, 1); /* the loader sets the capacity before load */
    __type(key, __u32);
    __type(value, struct pinch_aggregate);
} aggregates SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_MMAPABLE);
    __uint(max_entries, PINCH_MAX_SENDERS);
    __type(key, __u32);
    __type(value, struct pinch_arm);
} arms SEC(".maps");

/* seen[sender * PINCH_WINDOW + seq]: the last epoch whose packet seq of sender was added. */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_MMAPABLE);
    __uint(max_entries, PINCH_MAX_SENDERS * PINCH_WINDOW);
    __type(key, __u32);
    __type(value, __u32);
} seen SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_MMAPABLE);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct pinch_state);
} state SEC(".maps");

/* Where the headers sit: IPv4 without options, so every offset is a constant. */
#define IP_AT sizeof(struct ethhdr)
#define UDP_AT (IP_AT + sizeof(struct iphdr))
#define PINCH_AT (UDP_AT + sizeof(struct udphdr))
#define BODY_AT (PINCH_AT + sizeof(struct pinch_header))
#define SHIFT_AT 6 /* offsetof(struct pinch_record, shift) */
#define VALUE_AT 8 /* offsetof(struct pinch_record, value) */
/* What value j of a record adds: its int32 mantissa, sign-extended, shifted to scale 2^-32. */
#define VALUE(rec, j, shift) ((__s64) * (__s32 *)((rec) + VALUE_AT + (j) * sizeof(__s32)) << (shift))

static __always_inline int pass(struct pinch_state *st)
{
    __sync_fetch_and_add(&st->passed, 1);
    return XDP_PASS;
}

static __always_inline int malformed(struct pinch_state *st)
{
    __sync_fetch_and_add(&st->errors, 1);
    return XDP_DROP;
}

/* Adds one record (already bounds-checked against the packet) to its aggregate. */
static __always_inline void add_record(struct pinch_state *st, const struct pinch_arm *arm, void *rec)
{
    __u32 index = *(__u32 *)rec;
    __u16 flags = *(__u16 *)(rec + sizeof(__u32));
    __u8 shift = *(__u8 *)(rec + SHIFT_AT);
    struct pinch_aggregate *agg;
    __u32 key, seen_count;

    if (index >= arm->limit - arm->base || shift > PINCH_MAX_SHIFT) {
        __sync_fetch_and_add(&st->errors, 1);
        return;
    }
    key = arm->base + index;
    agg = bpf_map_lookup_elem(&aggregates, &key);
    if (!agg) {
        __sync_fetch_and_add(&st->errors, 1);
        return;
    }
    /* Unaligned 4-byte packet loads: fine where the kernel has efficient unaligned access
     * (x86-64, arm64), and one load instead of the four a packed struct would compile to. */
    if (!arm->shared) {
        /* This sender's range is its own and dedup let exactly one packet carry this record:
         * no other CPU touches the aggregate, so plain adds do (atomics cost 4x as much). */
#pragma unroll
        for (int j = 0; j < PINCH_CHUNK; j++)
            agg->sum[j] += VALUE(rec, j, shift);
        agg->count += 1;
        agg->flags |= flags;
        return;
    }
#pragma unroll
    for (int j = 0; j < PINCH_CHUNK; j++)
        __sync_fetch_and_add(&agg->sum[j], VALUE(rec, j, shift));
    seen_count = __sync_fetch_and_add(&agg->count, 1) + 1;
    if (seen_count > PINCH_MAX_CONTRIBUTIONS)
        __sync_fetch_and_or(&agg->flags, PINCH_R_OVERFLOW);
    if (flags)
        __sync_fetch_and_or(&agg->flags, (__u32)flags);
}

SEC("xdp")
int pinch_aggregate(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *data_end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    struct iphdr *ip = data + IP_AT;
    struct udphdr *udp = data + UDP_AT;
    struct pinch_header *hdr = data + PINCH_AT;
    struct pinch_state *st;
    struct pinch_arm *arm;
    __u32 zero = 0, sender, epoch, seq, count, slot_key, prev;
    __u32 *slot;
    __u16 port;
    __u64 received;

    if ((void *)(hdr + 1) > data_end)
        return XDP_PASS;
    if (eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != IPV4_IHL_NO_OPTIONS || ip->protocol != IPPROTO_UDP)
        return XDP_PASS;
    if (ip->frag_off & bpf_htons(IP_MF | IP_OFFSET))
        return XDP_PASS;
    st = bpf_map_lookup_elem(&state, &zero);
    if (!st)
        return XDP_PASS;
    port = bpf_ntohs(udp->dest);
    if (port < st->port_lo || port >= st->port_hi)
        return XDP_PASS;
    if (hdr->magic != PINCH_MAGIC || hdr->version != PINCH_VERSION)
        return XDP_PASS;
    if (hdr->type != PINCH_FIXED)
        return pass(st);

    sender = hdr->sender;
    if (sender >= PINCH_MAX_SENDERS)
        return malformed(st);
    arm = bpf_map_lookup_elem(&arms, &sender);
    if (!arm)
        return XDP_PASS;
    epoch = hdr->epoch;
    if (arm->epoch == 0 || epoch != arm->epoch)
        return pass(st); /* stale or not armed yet: user space answers it */

    count = hdr->count;
    seq = hdr->seq;
    if (count == 0 || count > PINCH_MAX_RECORDS || seq >= PINCH_WINDOW)
        return malformed(st);
    if (bpf_ntohs(udp->len) != sizeof(struct udphdr) + sizeof(struct pinch_header) + count * sizeof(struct pinch_record))
        return malformed(st);
    if (data + BODY_AT + count * sizeof(struct pinch_record) > data_end)
        return malformed(st);

    /* Dedup before the add: claim (sender, seq) for this epoch, or drop the copy. */
    slot_key = sender * PINCH_WINDOW + seq;
    slot = bpf_map_lookup_elem(&seen, &slot_key);
    if (!slot)
        return malformed(st);
    prev = *slot;
    if (prev >= epoch || __sync_val_compare_and_swap(slot, prev, epoch) != prev) {
        __sync_fetch_and_add(&st->duplicates, 1);
        return XDP_DROP;
    }

    for (__u32 i = 0; i < PINCH_MAX_RECORDS; i++) {
        void *rec = data + BODY_AT + i * sizeof(struct pinch_record);

        if (i >= count)
            break;
        if (rec + sizeof(struct pinch_record) > data_end)
            break; /* checked above; the verifier needs it per record */
        add_record(st, arm, rec);
    }

    __sync_fetch_and_add(&st->packets, 1);
    received = __sync_add_and_fetch(&st->received, count);
    if (received == st->expected)
        return pass(st); /* the completion signal */
    return XDP_DROP;
}

char LICENSE[] SEC("license") = "GPL";
