// SPDX-License-Identifier: Apache-2.0
/* TC egress: send one PINCH_F_BROADCAST packet to every peer as clones, rewritten per peer.
 *
 * The sender hands the kernel one datagram and this program fans it out (destination MAC, IPv4
 * address and UDP port rewritten, checksums fixed incrementally), so a broadcast to n peers
 * costs one system call instead of n. The clones re-enter this same egress hook; they carry
 * bstate.mark and pass untouched, which stops the recursion. The original is dropped.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "pinch.h"

/* Packets this program lets by return TC_ACT_UNSPEC: under tcx that hands them to the next
 * program on the hook (TC_ACT_OK would end the chain, hiding them from, e.g., the fault program). */

#define IPV4_IHL_NO_OPTIONS 5
#define IP_AT sizeof(struct ethhdr)
#define UDP_AT (IP_AT + sizeof(struct iphdr))
#define PINCH_AT (UDP_AT + sizeof(struct udphdr))
#define IP_DADDR_AT (IP_AT + __builtin_offsetof(struct iphdr, daddr))
#define IP_CSUM_AT (IP_AT + __builtin_offsetof(struct iphdr, check))
#define UDP_DEST_AT (UDP_AT + __builtin_offsetof(struct udphdr, dest))
#define UDP_CSUM_AT (UDP_AT + __builtin_offsetof(struct udphdr, check))

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, PINCH_MAX_PEERS);
    __type(key, __u32);
    __type(value, struct pinch_peer);
} peers SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct pinch_bstate);
} bstate SEC(".maps");

/* Points the packet at one peer; the previous destination is (*ip, *port), updated in place. */
static __always_inline int retarget(struct __sk_buff *skb, const struct pinch_peer *peer, __u32 *ip, __u16 *port)
{
    if (bpf_skb_store_bytes(skb, 0, peer->mac, ETH_ALEN, 0))
        return -1;
    if (peer->ip != *ip) {
        if (bpf_l3_csum_replace(skb, IP_CSUM_AT, *ip, peer->ip, sizeof(__u32)))
            return -1;
        if (bpf_l4_csum_replace(skb, UDP_CSUM_AT, *ip, peer->ip,
                                BPF_F_PSEUDO_HDR | BPF_F_MARK_MANGLED_0 | sizeof(__u32)))
            return -1;
        if (bpf_skb_store_bytes(skb, IP_DADDR_AT, &peer->ip, sizeof(__u32), 0))
            return -1;
        *ip = peer->ip;
    }
    if (peer->port != *port) {
        if (bpf_l4_csum_replace(skb, UDP_CSUM_AT, *port, peer->port, BPF_F_MARK_MANGLED_0 | sizeof(__u16)))
            return -1;
        if (bpf_skb_store_bytes(skb, UDP_DEST_AT, &peer->port, sizeof(__u16), 0))
            return -1;
        *port = peer->port;
    }
    return 0;
}

SEC("tc")
int pinch_broadcast(struct __sk_buff *skb)
{
    void *data = (void *)(long)skb->data;
    void *data_end = (void *)(long)skb->data_end;
    struct ethhdr *eth = data;
    struct iphdr *iph = data + IP_AT;
    struct udphdr *udp = data + UDP_AT;
    struct pinch_header *hdr = data + PINCH_AT;
    struct pinch_bstate *bs;
    __u32 zero = 0, ip, count;
    __u16 port;

    bs = bpf_map_lookup_elem(&bstate, &zero);
    if (!bs || skb->mark == bs->mark)
        return TC_ACT_UNSPEC; /* one of our clones (or nothing configured) */
    if (bpf_skb_pull_data(skb, PINCH_AT + sizeof(struct pinch_header)))
        return TC_ACT_UNSPEC;
    data = (void *)(long)skb->data;
    data_end = (void *)(long)skb->data_end;
    eth = data;
    iph = data + IP_AT;
    udp = data + UDP_AT;
    hdr = data + PINCH_AT;
    if ((void *)(hdr + 1) > data_end)
        return TC_ACT_UNSPEC;
    if (eth->h_proto != bpf_htons(ETH_P_IP) || iph->ihl != IPV4_IHL_NO_OPTIONS || iph->protocol != IPPROTO_UDP)
        return TC_ACT_UNSPEC;
    if (hdr->magic != PINCH_MAGIC || hdr->version != PINCH_VERSION || !(hdr->flags & PINCH_F_BROADCAST))
        return TC_ACT_UNSPEC;

    ip = iph->daddr;
    port = udp->dest;
    count = bs->count;
    skb->mark = bs->mark;
    for (__u32 i = 0; i < PINCH_MAX_PEERS; i++) {
        struct pinch_peer *peer;

        if (i >= count)
            break;
        peer = bpf_map_lookup_elem(&peers, &i);
        if (!peer || retarget(skb, peer, &ip, &port) || bpf_clone_redirect(skb, peer->ifindex, 0)) {
            __sync_fetch_and_add(&bs->errors, 1);
            continue;
        }
        __sync_fetch_and_add(&bs->clones, 1);
    }
    return TC_ACT_SHOT;
}

char LICENSE[] SEC("license") = "GPL";
