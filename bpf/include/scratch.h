/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Per-CPU scratch for one packet: the names-table key (264 bytes), the parsed query, where the
 * headers are, the answer, and each step's own fields, labelled with the header that owns them.
 * Kept here rather than on the stack so that, read back, the offsets and lengths are bounded but
 * not exact: the paths through different header shapes (VLAN tags, IPv4 or IPv6) and name
 * lengths then converge, and the verifier checks the rest of the program once. For the same
 * reason the flags the last steps branch on (nx, geo, slipped) live here, not in registers.
 */
#ifndef NC_SCRATCH_H
#define NC_SCRATCH_H

#include "dns.h"
#include "maps.h"
#include "parse.h"

struct nc_scratch {
	/* The packet (parse.h, dns.h): the question's key, the query, where the headers are. */
	struct nc_name_key key;
	struct nc_query q;
	struct nc_packet pkt;
	/*
	 * The answer: the names table's, copied out of the arena (lookup.h), then for a geo name the
	 * answer built for this client (geo.h), for an NXDOMAIN the reply built for this query (negative.h).
	 */
	struct nc_answer answer;
	/* Room past the answer's sections for a proof appended at any length (negative.h): never read. */
	__u8 answer_slack[NC_PROOF_MAX];
	/*
	 * A signed NODATA's proof (nc_find_answer: the name's record's signed entry of type
	 * NC_QTYPE_NEGATIVE), appended to its negative answer (negative.h); proof_len 0: none.
	 */
	__u8 proof[NC_PROOF_MAX];
	__u16 proof_len;
	__u16 proof_csum;
	__u16 proof_nscount;
	__u16 pad4;
	/* The flow (nearcast.bpf.c). */
	__u32 gen;	  /* the generation this packet reads (names table and geo maps), read once from nc_config */
	__u32 geo;	  /* the answer is a geo name's */
	__u32 nx;	  /* the answer is an NXDOMAIN (set by negative.h) */
	__u32 slipped;	  /* the answer is over the response rate limit: the TC=1 reply goes instead (rrl.h) */
	__u32 src_family; /* the packet's source address, for rate limiting and cookies: 4 or 6 */
	__u32 pad;
	__u64 src[2];	  /* as loaded from the packet (IPv4 in the low 4 bytes of src[0]) */
	/* Geo answers (geo.h). */
	__u32 spill_at[4]; /* spill-over: candidate positions and weights, NC_SPILL used */
	__u32 spill_weight[4];
	__u32 geo_all_down; /* the geo answer is fail-open: every candidate of the class was down */
	__u32 geo_first;    /* the candidate spill-over puts first, and the answers wanted: read back at */
	__u32 geo_want;	    /* each candidate, so the verifier checks a step once (nc_geo_answer) */
	__u32 geo_node;	    /* the index of the node the geo answer puts first; NC_TALLY_NO_NODE: none (tally.h) */
	struct nc_geo_sig_key sig_key; /* a signed geo answer's variant: its nodes' addresses as answered, then sorted */
	__u64 geo_sig_csum;	       /* the variant's signatures appended: their sum, and how many records */
	__u32 geo_sig_count;
	__u32 pad5;
	/* The names table's record (lookup.h) and negative answers (negative.h). */
	__u8 rec_flags;	  /* the flags of the record nc_find_answer found last */
	__u8 signed_answer; /* the answer is a signed one (NC_AT_SIGNED): the query's DO is served */
	__u16 negative;	  /* and the index of its negative answer */
	__u32 pad3;
	__u64 nx_zone;	  /* an NXDOMAIN answer's zone, its class for rate limiting */
	struct nc_name_key below;  /* a name the NXDOMAIN walk looks up */
	struct nc_nx_head nx_head; /* a negative answer's head, its sections in `answer` */
	/* DNS cookies (cookie.h): this CPU's last reading of the monotonic clock, and the jiffies then. */
	__u64 clock_jiffies;
	__u64 clock_ns;
	/* Response rate limiting (rrl.h): answers this CPU limited, every slip-th is slipped. */
	__u64 rrl_limited;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nc_scratch);
} nc_scratch SEC(".maps");

#endif /* NC_SCRATCH_H */
