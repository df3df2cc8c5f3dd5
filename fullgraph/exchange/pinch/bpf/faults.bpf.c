// SPDX-License-Identifier: Apache-2.0
/* TC (ingress or egress): drop or duplicate UDP packets to a port range at random.
 *
 * This kernel has no netem, and the reliable-UDP layer must be tested under loss and
 * duplication on real links; this program injects both, at rates given in parts per million.
 * A duplicate is a clone sent back into the same hook direction of the same device, marked so
 * it is not faulted again.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define PPM 1000000u

/* The one entry of `faults`: written by user space before attach, counters read back. */
struct pinch_faults {
    __u16 port_lo; /* UDP destination ports faulted: [port_lo, port_hi) */
    __u16 port_hi;
    __u32 drop_ppm;
    __u32 dup_ppm;
    __u32 mark;    /* skb->mark of the duplicates, which pass untouched */
    __u32 ingress; /* 1: attached at ingress, duplicates go to ingress (BPF_F_INGRESS) */
    __u32 pad;
    __u64 seen;       /* packets in the port range */
    __u64 dropped;
    __u64 duplicated;
};

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct pinch_faults);
} faults SEC(".maps");

static __always_inline int chance(__u32 ppm)
{
    return ppm && bpf_get_prandom_u32() % PPM < ppm;
}

SEC("tc")
int pinch_faults(struct __sk_buff *skb)
{
    void *data, *data_end;
    struct ethhdr *eth;
    struct iphdr *iph;
    struct udphdr *udp;
    struct pinch_faults *cfg;
    __u32 zero = 0, mark;
    __u16 port;

    cfg = bpf_map_lookup_elem(&faults, &zero);
    if (!cfg || skb->mark == cfg->mark)
        return TC_ACT_UNSPEC;
    if (bpf_skb_pull_data(skb, sizeof(*eth) + sizeof(*iph) + sizeof(*udp)))
        return TC_ACT_UNSPEC;
    data = (void *)(long)skb->data;
    data_end = (void *)(long)skb->data_end;
    eth = data;
    iph = data + sizeof(*eth);
    if ((void *)(iph + 1) > data_end)
        return TC_ACT_UNSPEC;
    if (eth->h_proto != bpf_htons(ETH_P_IP) || iph->protocol != IPPROTO_UDP)
        return TC_ACT_UNSPEC;
    udp = (void *)iph + iph->ihl * 4;
    if ((void *)(udp + 1) > data_end)
        return TC_ACT_UNSPEC;
    port = bpf_ntohs(udp->dest);
    if (port < cfg->port_lo || port >= cfg->port_hi)
        return TC_ACT_UNSPEC;

    __sync_fetch_and_add(&cfg->seen, 1);
    if (chance(cfg->drop_ppm)) {
        __sync_fetch_and_add(&cfg->dropped, 1);
        return TC_ACT_SHOT;
    }
    if (chance(cfg->dup_ppm)) {
        mark = skb->mark;
        skb->mark = cfg->mark;
        if (bpf_clone_redirect(skb, skb->ifindex, cfg->ingress ? BPF_F_INGRESS : 0) == 0)
            __sync_fetch_and_add(&cfg->duplicated, 1);
        skb->mark = mark;
    }
    return TC_ACT_UNSPEC;
}

char LICENSE[] SEC("license") = "GPL";
