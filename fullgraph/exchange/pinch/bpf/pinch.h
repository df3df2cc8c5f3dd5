/* The PINCH wire format and the maps shared by the kernel programs and user space.
 *
 * Mirrors fullgraph/exchange/pinch/wire.py (the Python side); a change here must change there too, and
 * the version below. Little-endian on the wire: both ends and the BPF programs are x86-64/arm64.
 */
#ifndef PINCH_H
#define PINCH_H

#define PINCH_MAGIC 0x48434e50u /* "PNCH" read as a little-endian u32 */
#define PINCH_VERSION 2

/* Packet types */
#define PINCH_FIXED 1 /* fixed-point records, summed by the receiver (in XDP when attached) */
#define PINCH_RAW 2   /* a slice of a raw byte message, delivered to user space as it is */
#define PINCH_READY 3 /* receiver -> sender: armed for this epoch, send it */
#define PINCH_DONE 4  /* receiver -> sender: every packet of this epoch arrived */
#define PINCH_NACK 5  /* receiver -> sender: these sequence numbers are missing (u32 list) */
#define PINCH_SENT 6  /* sender -> receiver: the whole epoch has been transmitted */
#define PINCH_ALIVE 7 /* a rank -> every peer, periodically: this process is running */

/* Header flags */
#define PINCH_F_BROADCAST 1 /* TC egress clones this packet to every peer in the broadcast map */

#define PINCH_CHUNK 16       /* values per record */
#define PINCH_MAX_RECORDS 64 /* records per packet, at most (a 9,001-byte MTU would hold 124) */
#define PINCH_MAX_SENDERS 32 /* ranks a receiver takes from */
#define PINCH_WINDOW 32768   /* packets per sender per epoch (the dedup window) */
#define PINCH_MAX_PEERS 32   /* broadcast destinations */

/* Record flags (ORed into the aggregate's flags) */
#define PINCH_R_SATURATED 1 /* the sender clamped a value past the range (or not finite) */
#define PINCH_R_OVERFLOW 2  /* the receiver saw more than PINCH_MAX_CONTRIBUTIONS for the index */

/* Fixed point: int32 mantissas, one shift per record (block floating point), summed in int64 at
 * scale 2^-32. A contribution is at most 2^31 << 22 = 2^53, so 256 of them stay below 2^61 and an
 * int64 sum can never wrap. */
#define PINCH_SCALE_BITS 32
#define PINCH_MAX_SHIFT 22
#define PINCH_MAX_CONTRIBUTIONS 256

struct pinch_header {
    __u32 magic;
    __u8 version;
    __u8 type;
    __u16 sender;   /* the sending rank */
    __u32 epoch;    /* per (sender, receiver) message number, from 1 */
    __u32 seq;      /* packet number within the message, from 0 */
    __u32 packets;  /* packets in the message */
    __u16 count;    /* FIXED: records in this packet; RAW: payload bytes; NACK: u32 entries */
    __u8 kind;      /* what the message carries (the trainer's traffic kind), checked by the receiver */
    __u8 flags;     /* PINCH_F_* */
    __u32 offset;   /* RAW: byte offset of this payload in the message */
    __u32 aux;      /* RAW: message bytes; otherwise 0 */
} __attribute__((packed));

struct pinch_record {
    __u32 index; /* the aggregate this record adds to, relative to the sender's armed base */
    __u16 flags; /* PINCH_R_* */
    __u8 shift;  /* value[j] << shift is what value j adds, at scale 2^-32 (0..PINCH_MAX_SHIFT) */
    __u8 pad;
    __s32 value[PINCH_CHUNK];
} __attribute__((packed));

/* One aggregate: the sum of its contributions, how many, and their flags. */
struct pinch_aggregate {
    __s64 sum[PINCH_CHUNK];
    __u32 count;
    __u32 flags;
};

/* Per sender: which epoch is armed and where its records land in the aggregate array. */
struct pinch_arm {
    __u32 epoch; /* 0: nothing armed */
    __u32 base;  /* record index 0 of this sender lands at aggregates[base] */
    __u32 limit; /* indices >= limit are out of bounds */
    __u32 shared; /* 1: other senders add to the same range (atomic adds); 0: plain adds */
};

/* The receiver's state (array map of one entry). */
struct pinch_state {
    __u64 expected;   /* records the armed epochs will bring, all senders together */
    __u64 received;   /* records added so far */
    __u64 duplicates; /* packets dropped as already added */
    __u64 passed;     /* packets handed to user space (control, stale or unarmed epochs, completions) */
    __u64 packets;    /* data packets added */
    __u64 errors;     /* malformed data packets (dropped) */
    __u16 port_lo;    /* UDP destination ports this program takes: [port_lo, port_hi) */
    __u16 port_hi;
    __u32 pad;
};

/* Broadcast (TC egress): one destination of a PINCH_F_BROADCAST packet. */
struct pinch_peer {
    __u32 ifindex; /* the device the clone leaves by */
    __u32 ip;      /* destination IPv4 address, network order */
    __u16 port;    /* destination UDP port, network order */
    __u8 mac[6];   /* destination MAC */
};

/* Broadcast state (array map of one entry): peers to clone to, the mark that guards the
 * clones against being broadcast again (they re-enter the same egress hook), and counters. */
struct pinch_bstate {
    __u32 count;  /* peers[0, count) are live, at most PINCH_MAX_PEERS */
    __u32 mark;   /* skb->mark set on clones; packets carrying it pass untouched */
    __u64 clones; /* clones sent */
    __u64 errors; /* rewrites or clone_redirects that failed */
};

#endif
