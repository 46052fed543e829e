/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The ONE definition of everything the XDP program and the Swift control plane share: map names,
 * key and value layouts, verdict reasons, the ABI version. Included by bpf/nearcast.bpf.c and, as
 * the C module CNearcastABI, by Swift (only NearcastDataPath and BPF tests touch these structs).
 *
 * Rules (DESIGN.md §8): fixed-width fields, explicit padding, no bool, no pointers, no bitfields;
 * every struct's size is asserted in abi.c (C side) and in the Swift tests.
 */
#ifndef NEARCAST_ABI_H
#define NEARCAST_ABI_H

#include <linux/types.h>

/* Bump on any change to a struct or a map below; the loader refuses a mismatched object. */
#define NC_ABI_VERSION 3

/* Map names (at most 15 characters: the kernel truncates longer ones). */
/* Names maps, one per name-length class (see struct nc_name_key). */
#define NC_MAP_NAMES_32 "nc_names_32"
#define NC_MAP_NAMES_64 "nc_names_64"
#define NC_MAP_NAMES_128 "nc_names_128"
#define NC_MAP_NAMES_256 "nc_names_256"
#define NC_MAP_STATS "nc_stats"
#define NC_MAP_CONFIG "nc_config"
#define NC_MAP_BUCKET "nc_bucket"

/* A domain name in uncompressed wire form, root label included, is at most 255 octets. */
#define NC_NAME_MAX 256
/* The most section bytes (answer + authority + additional, without OPT) one entry holds. */
#define NC_SECTIONS_MAX 1024
/* Capacity of each names map (entries; the maps are not preallocated). */
#define NC_NAMES_CAPACITY 65536

/*
 * Key of the names maps: the query type and the lower-cased wire name. A name of `len` octets is
 * in the map of the smallest class that holds it (32, 64, 128 or 256 octets), whose key is this
 * struct cut after `name[class]`: most names are short, and the kernel hashes the whole key on
 * every lookup. Bytes of `name` past `len` are zero, so equal questions give equal keys.
 */
struct nc_name_key {
	__u16 qtype;		/* host order */
	__u16 len;		/* wire length of name, root label included: 1..255 */
	__u8 name[NC_NAME_MAX]; /* lower-cased, zero padded */
};

/* The name-length class (the names map) of a name of `len` octets, and the key of each class. */
#define NC_NAME_CLASS(len) ((len) <= 32 ? 32 : (len) <= 64 ? 64 : (len) <= 128 ? 128 : 256)
#define NC_NAME_KEY_CLASS(class)                                                                   \
	struct nc_name_key_##class {                                                               \
		__u16 qtype;                                                                       \
		__u16 len;                                                                         \
		__u8 name[class];                                                                  \
	}
NC_NAME_KEY_CLASS(32);
NC_NAME_KEY_CLASS(64);
NC_NAME_KEY_CLASS(128);

/*
 * Value of the names map: the reply the slow path sends for this question, less its header and
 * question. XDP keeps the query's header (ID, RD, CD) and question (the client's letter case),
 * sets the flags below, and appends `sections`; names in `sections` that equal the question point
 * at it (offset 12), so the bytes do not depend on the letter case of the query.
 */
struct nc_answer {
	__u16 flags;	   /* header flags word of the reply (QR, AA, RCODE; RD and CD come from the query) */
	__u16 ancount;	   /* host order */
	__u16 nscount;	   /* host order */
	__u16 arcount;	   /* additional records, not counting OPT; host order */
	__u16 len;	   /* bytes used in sections */
	__u16 csum;	   /* one's-complement sum (folded, not inverted) of sections, as at an even offset */
	__u32 pad;
	__u8 sections[NC_SECTIONS_MAX];
};

/* What XDP does with a DNS query above the pass budget. */
enum nc_over_budget {
	NC_OVER_BUDGET_TRUNCATE = 0, /* a minimal TC=1 reply: real resolvers retry over TCP */
	NC_OVER_BUDGET_DROP = 1,
};

/* Runtime settings of the program (ARRAY map, one entry, key 0). */
struct nc_config {
	__u32 abi_version;   /* NC_ABI_VERSION of the control plane that wrote this */
	__u16 dns_port;	     /* UDP port answered, host order; 0 = the program is idle (passes all) */
	__u16 udp_payload;   /* our EDNS UDP payload size, advertised in OPT and the most we send */
	__u32 enabled;	     /* 0 = pass everything (e.g. while maps are being filled) */
	__u32 pass_rate;     /* DNS queries per second each CPU may pass to the slow path; 0 = no limit */
	__u32 pass_burst;    /* queries a CPU may pass at once above the rate (bucket size) */
	__u32 over_budget;   /* enum nc_over_budget */
};

/* Per-CPU token bucket for what XDP passes up (PERCPU_ARRAY, one entry). */
struct nc_bucket {
	__u64 tokens;  /* credit, in nanotokens: one query costs NC_TOKEN */
	__u64 last_ns; /* when the bucket was last refilled (bpf_ktime_get_ns) */
};

#define NC_TOKEN 1000000000ULL

/* Why the program let a packet go the way it did: an index into struct nc_stats. */
enum nc_reason {
	NC_ANSWERED = 0,	/* answered from the names map (XDP_TX) */
	NC_PASS_NOT_DNS,	/* not IPv4/IPv6 UDP to the DNS port (or the program is idle) */
	NC_PASS_SHAPE,		/* a DNS message XDP does not answer: not a plain query */
	NC_PASS_EDNS,		/* EDNS XDP does not handle: options, version > 0, odd flags */
	NC_PASS_MISS,		/* name and type not in the names map */
	NC_PASS_TOO_BIG,	/* the reply would not fit the client's UDP size: the slow path sets TC */
	NC_PASS_NO_ROOM,	/* the frame could not grow to hold the reply (driver tailroom) */
	NC_DROP_MALFORMED,	/* to the DNS port but not DNS-shaped at all (shorter than a header) */
	NC_DROP_INTERNAL,	/* a bounds check that cannot fail failed after the packet was changed */
	NC_LIMIT_TRUNCATED,	/* above the pass budget: answered TC=1 instead of passed */
	NC_LIMIT_DROPPED,	/* above the pass budget: dropped instead of passed */
	NC_REASON_MAX,
};

/*
 * Verdict counters, one per reason, in the order of enum nc_reason (the program indexes them by
 * reason). The stats map holds one of these per CPU; with BTF, `bpftool map dump` names each field.
 */
struct nc_stats {
	__u64 answered;
	__u64 pass_not_dns;
	__u64 pass_shape;
	__u64 pass_edns;
	__u64 pass_miss;
	__u64 pass_too_big;
	__u64 pass_no_room;
	__u64 drop_malformed;
	__u64 drop_internal;
	__u64 limit_truncated;
	__u64 limit_dropped;
};

#endif /* NEARCAST_ABI_H */
