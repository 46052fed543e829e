/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The ONE definition of everything the XDP program and the Swift control plane share: map names,
 * key and value layouts, verdict reasons, the ABI version. Included by bpf/nearcast.bpf.c and, as
 * the C module CNearcastABI, by Swift (only NearcastDataPath and BPF tests touch these structs).
 *
 * Rules (ARCHITECTURE §8): fixed-width fields, explicit padding, no bool, no pointers, no bitfields;
 * every struct's size is asserted in abi.c (C side) and in the Swift tests.
 */
#ifndef NEARCAST_ABI_H
#define NEARCAST_ABI_H

#include <linux/types.h>

/* Bump on any change to a struct or a map below; the loader refuses a mismatched object. */
#define NC_ABI_VERSION 30

/* Map names (at most 15 characters: the kernel truncates longer ones). */
#define NC_MAP_NAMES "nc_names"
#define NC_MAP_SLOTS "nc_slots"
#define NC_MAP_STATS "nc_stats"
#define NC_MAP_CONFIG "nc_config"
#define NC_MAP_BUCKET "nc_bucket"
#define NC_MAP_GEO4 "nc_geo4"
#define NC_MAP_GEO6 "nc_geo6"
#define NC_MAP_CANDS "nc_cands"
#define NC_MAP_NODES "nc_nodes"
#define NC_MAP_POOLS "nc_pools"
#define NC_MAP_ALIASES "nc_geo_alias"
#define NC_MAP_GEO4_SPANS "nc_geo4_spans"
#define NC_MAP_RRL_CONFIG "nc_rrl_cfg"
#define NC_MAP_RRL_EXEMPT "nc_rrl_exempt"
#define NC_MAP_COOKIE "nc_cookie"
#define NC_MAP_NEGATIVES "nc_negatives"
#define NC_MAP_LOCAL "nc_local"
#define NC_MAP_BY_ZONE "nc_by_zone"
#define NC_MAP_BY_NODE "nc_by_node"
#define NC_MAP_GEO_SIGS "nc_geo_sigs"

/* A domain name in uncompressed wire form, root label included, is at most 255 octets. */
#define NC_NAME_MAX 256
/* The most section bytes (answer + authority + additional, without OPT) one entry holds. */
#define NC_SECTIONS_MAX 1024

/*
 * The names table: an open-addressing hash table of slots (an ARRAY map) whose entries are
 * records in an arena (an mmapable ARRAY map of pages), both looked up inline by the verifier (a
 * kernel hash map costs a hash of the whole key and a bucket walk on every query). One record per
 * name (ARCHITECTURE §10): its answers, one per type, and what the name's other types and the
 * names below it are answered.
 *
 * - nc_names, the arena: NC_ARENA_PAGE-byte pages (struct nc_arena_page), as many as the loader
 *   sizes it for. A record is struct nc_record_head, the name zero padded to a multiple of 8
 *   octets, the directory (`types` struct nc_type_ref, padded to 8), then the answers, each a
 *   struct nc_answer with only `len` section bytes (padded to 8): each record takes what its name
 *   and answers take, not the most any could. A record starts on an 8-octet boundary at most
 *   NC_ARENA_PAGE - NC_RECORD_MAX into its page, and an answer at most NC_ANSWER_AT_MAX into its
 *   record, so that the program's bounds hold without knowing a record's length. The control
 *   plane writes records through a mapping of the pages (BPF_F_MMAPABLE), never over one the
 *   live generation uses.
 * - nc_slots: two generations of `slot_mask + 1` slots each (a power of two, at least twice the
 *   capacity); generation g owns indexes [g * (slot_mask + 1), (g + 1) * (slot_mask + 1)). A slot
 *   is 0 (empty) or (hash >> 32) << 32 | (the record's offset in the arena / 8 + 1); a slot with a
 *   tag and no record (offset part 0) holds no name, and keeps those past it reachable. Mmapable:
 *   the control plane writes a generation's slots through a mapping, each with one 8-octet store.
 *
 * A name is looked for from slot `hash & slot_mask` of the live generation (nc_config), over
 * at most NC_PROBES slots, up to an empty slot; the first slot whose tag equals the hash's upper
 * half names the only record that may hold the name, which is then compared in full. The
 * control plane writes changed records into unused arena space and a whole new slot generation,
 * then switches `generation` with one write: a query sees the old table or the new one, never a mix.
 */
#define NC_ARENA_PAGE_SHIFT 17
#define NC_ARENA_PAGE (1 << NC_ARENA_PAGE_SHIFT)
/* The most bytes a record may take (a name's answers beyond it are the slow path's). */
#define NC_RECORD_MAX 4096
/* The furthest into its record an answer may start: NC_RECORD_MAX - sizeof(struct nc_answer) -
 * sizeof(struct nc_nx_head), so that a negative answer's sections, read past its head, lie within. */
#define NC_ANSWER_AT_MAX 3032
/* The most answers (types) one record holds. */
#define NC_TYPES_MAX 16
#define NC_NAMES_CAPACITY 16384 /* names (slots) unless the loader sizes it from the zones */
#define NC_ARENA_PAGES 32 /* pages in the object; the loader sizes the arena */
#define NC_PROBES 16

/*
 * The hash of a name (NC_HASH_*): h = NC_HASH_SEED ^ len; for each 8-byte little-endian word
 * w of the lower-cased name, zero padded to a multiple of 8 octets, and then for w = 0:
 * h = (h ^ w) * NC_HASH_MUL, h ^= h >> 32; last MurmurHash3's finaliser (fmix64). The XDP program
 * computes it while reading the name; the control plane (NamesTable.swift) the same way. (With
 * the query type for w instead of 0, it is the question's hash, which rate limiting counts by.)
 */
#define NC_HASH_SEED 0x9e3779b97f4a7c15ULL
#define NC_HASH_MUL 0xff51afd7ed558ccdULL
#define NC_HASH_FMIX1 0xff51afd7ed558ccdULL
#define NC_HASH_FMIX2 0xc4ceb9fe1a85ec53ULL

/*
 * Negative answers from the fast path (bpf/README.md, "Negative answers"). A zone's negative
 * answer (kind NC_KIND_NEGATIVE: the slow path's NXDOMAIN, its SOA in the authority section,
 * struct nc_nx_head before it) is a record of its own in the arena, under type NC_QTYPE_NEGATIVE
 * (0, which no record has), named by the anchor it was taken at (the zone's apex, or a name near
 * the SOA's own names), and in no slot: nc_negatives holds where it is, by its index, a half per
 * generation (index i of generation g at g * NC_NEGATIVES_MAX + i; index 0 is none). Every name's
 * record gives the index of its negative answer, and says in its flags where that stands for the
 * slow path's: NC_NAME_NODATA, for the types the name has no answer in its record (then every
 * type the name has is there), except those the slow path answers otherwise (ANY, AXFR, IXFR,
 * DS); NC_NAME_NXDOMAIN, for a name directly below it that does not exist. One answer a zone, so a
 * change of its SOA rewrites one record and one index.
 *
 * After a miss, the program walks up the query's labels to the first name that has a record (the
 * closest encloser), at most NC_NX_DEPTH - 1 of them, and answers NXDOMAIN when that record says so.
 * So every name that exists (by the slow path's lights, or more) must have a record: where one
 * cannot be placed, the control plane clears NC_NAME_NXDOMAIN on the closest encloser placed.
 * Except behind a name of the same tag: a lookup or a walk that meets another name's record in
 * the slot of its tag passes the query (the name may be the one left out behind it), so such a
 * name costs its encloser nothing (in a flat zone the encloser is the apex, and one name left out
 * would send the zone's NXDOMAINs to the slow path).
 */
#define NC_NEGATIVES_MAX 65536
#define NC_QTYPE_NEGATIVE 0
#define NC_NAME_NODATA 1
#define NC_NAME_NXDOMAIN 2
/*
 * The name's zone is signed: a query with the DO bit is answered with the record's signed answer
 * of its type (NC_AT_SIGNED), or passes, for the slow path to answer with the signatures and the
 * proofs of nonexistence (ARCHITECTURE §18). A NXDOMAIN's closest encloser says it for the names
 * below it.
 */
#define NC_NAME_SIGNED 4
#define NC_NX_DEPTH 8
#define NC_NX_PTRS 4

/*
 * The head of a negative answer's sections; the reply's sections follow it. They were taken from
 * the slow path's reply to a question `qname_len` octets long, so each compression pointer in them
 * (at `ptr_at[i]` within the reply's sections, `nptrs` of them) points into the zone's name at the
 * question's end, or past it, and moves with the query's length: by qname_len - this qname_len.
 * The answer's flags are the NXDOMAIN's; a NODATA has RCODE 0.
 */
struct nc_nx_head {
	__u64 zone;	       /* the zone's class for response rate limiting (RFC: NXDOMAINs by zone) */
	__u16 qname_len;       /* the question length the sections were taken for */
	__u16 nptrs;	       /* compression pointers to move, at most NC_NX_PTRS */
	__u16 ptr_at[NC_NX_PTRS];
	__u16 csum;	       /* one's-complement sum of the sections with the pointers' two bytes zero */
	__u16 pad;
};

/* A name in the scratch map: the query's, or one the walk looks up. */
struct nc_name_key {
	__u16 qtype;		/* host order (the query's type) */
	__u16 len;		/* wire length of name, root label included: 1..255 */
	__u32 pad;
	__u8 name[NC_NAME_MAX]; /* lower-cased, zero padded */
};

/*
 * The answer for a question: the reply the slow path sends for this question, less its header and
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
	__u8 kind;	   /* enum nc_answer_kind */
	__u8 pad[3];
	__u8 sections[NC_SECTIONS_MAX];
};

enum nc_answer_kind {
	NC_KIND_STATIC = 0, /* `sections` is the answer */
	NC_KIND_GEO = 1,    /* a geo name: `sections` starts with a struct nc_geo_name */
	NC_KIND_NEGATIVE = 2, /* under NC_QTYPE_NEGATIVE: `sections` starts with a struct nc_nx_head */
};

/*
 * Geo names (ARCHITECTURE §2, §5). The client's address (the ECS address when the query has one with a
 * source prefix, else the packet's source) is looked up in the prefix map of its family: its
 * location class, and the prefix length matched (the ECS scope). The candidates of
 * (ranking, class) are node indexes in rank order; the first `answers` whose node is up are the
 * answer. An address no prefix covers is in class 0 (unknown location), scope = source prefix.
 * IPv6 prefixes are an LPM trie; IPv4 prefixes are a sorted array of our own (nc_geo4_span),
 * which costs a fraction of the trie's lookup.
 *
 * Generations: every map a geo answer reads belongs to the names table's generation, so one
 * write of nc_config switches names and geo maps together (a reload that changes nodes, pools or
 * the database is atomic too). The prefix, candidate and node maps are ARRAY_OF_MAPS indexed by
 * the generation; both slots hold the same prefix and candidate maps when the geo data did not
 * change, while each generation has a nodes map of its own (NC_NODES_MAX entries), so health
 * written to the live one never reaches a generation being built. Pools are an ARRAY of
 * NC_GEO_GENERATIONS halves: pool i of generation g at g * NC_POOLS_MAX + i.
 */
#define NC_GEO_GENERATIONS 2
#define NC_GEO_DEPTH 16	      /* candidates kept per (ranking, class) */
/*
 * Spill-over: when the top candidate is down, the first answer is one of the next NC_SPILL
 * healthy candidates, picked in proportion to their weight by the matched prefix's seed (so each
 * prefix stays with one node, and the prefixes of a class spread by capacity); the rest follow in
 * rank order. A client no prefix covers has seed 0.
 */
#define NC_SPILL 3
#define NC_GEO_ANSWERS_MAX 8  /* addresses in one geo answer */
#define NC_NODES_MAX 16384 /* entries of a generation's nodes map: a fleet of thousands of registered nodes */
#define NC_POOLS_MAX 1024 /* pools whose TTL follows health (nc_pools), per generation; a power of two */
#define NC_GEO6_CAPACITY (2 << 20) /* LPM entries (not preallocated) */
/*
 * The inner maps of nc_geo4 and nc_cands are ARRAYs of one size, fixed when the outer maps are
 * made (the loader sets it from the geo data at start, with room to grow, and records it in
 * nc_config): so the verifier inlines their lookups, where an inner map of any size
 * (BPF_F_INNER_MAP) costs a helper call each, some 15 ns on the bench host (AMD, its return
 * mitigation), and a binary search makes several.
 */

/*
 * A generation's IPv4 prefixes: the compile's prefixes, disjoint and sorted by address, in
 * nc_geo4's inner ARRAY (struct nc_geo4_prefix); and a span for each /16, the prefixes that meet
 * it, in the generation's half of the ARRAY nc_geo4_spans (span i of generation g at
 * g * NC_GEO4_SPANS + i): `count` of them from entry `first` (a prefix shorter than /16 is the one
 * prefix of every /16 it covers). An address is looked up by its /16's span and a binary search
 * in it for the last prefix starting at or before it, which covers it when the address is inside
 * its length; else the address is in no prefix. At most NC_GEO4_STEPS halvings, as a /16 holds
 * at most 65536 prefixes. The spans are a plain array, so their lookup is inlined: on the bench
 * host (AMD, its return mitigation) each helper call costs some 15 ns.
 */
#define NC_GEO4_SPANS 65536
#define NC_GEO4_STEPS 16

struct nc_geo4_span {
	__u32 first; /* the index of the first prefix in the inner array */
	__u32 count; /* 0: no prefix meets this /16 */
};

struct nc_geo4_prefix {
	__u32 start; /* the prefix's first address, host order */
	__u32 cls;   /* location class */
	__u32 seed;  /* picks the spill-over node for this prefix (see NC_SPILL) */
	__u8 plen;   /* the prefix's length: the ECS scope */
	__u8 pad[3];
};

struct nc_geo6_key {
	__u32 prefixlen; /* always 128 in lookups */
	__u8 addr[16];
};

/* The value of an IPv6 prefix in its trie. */
struct nc_geo_class {
	__u32 cls;  /* location class */
	__u32 plen; /* the prefix's length: the ECS scope */
	__u32 seed; /* picks the spill-over node for this prefix (see NC_SPILL) */
};

/*
 * The candidates of (ranking r, class c): entry c * rankings + r of the generation's candidates
 * map, an ARRAY sized to the compile (so its lookups are a bounds check and a multiply, not a
 * hash), where `rankings` is the compile's count (struct nc_geo_name).
 */
struct nc_cands {
	__u16 count;
	__u16 node[NC_GEO_DEPTH]; /* indexes into the generation's nodes map, best first */
	__u16 pad;
};

struct nc_node {
	__u8 up;      /* 1: answered; 0: down or drained */
	__u8 pad;
	__u16 weight; /* capacity for spill-over: the node's weight x 100, 1..65535 */
	__u8 v4[4];
	__u8 v6[16];
};

/* What a geo name answers, at the start of its names-table entry's sections. */
struct nc_geo_name {
	__u16 ranking;
	__u8 answers;  /* 1..NC_GEO_ANSWERS_MAX */
	__u8 fail_open; /* all candidates down: 1 answers the top ones anyway, 0 passes to the slow path */
	__u16 qtype;   /* 1 (A) or 28 (AAAA), host order */
	__u16 pool;    /* index within a half of nc_pools: the TTL answered is min(ttl, the pool's ttl_cap) */
	__u32 ttl;
	__u16 rankings; /* rankings in the compile: the stride of the candidates map */
	__u16 pad;
};

/*
 * Signed geo answers (HASH nc_geo_sigs, not preallocated): a geo name of a zone the control plane
 * signs answers one of a few RRsets, its *variants* (the node sets its classes rank first, as
 * health leaves them); each one's signatures, keyed by the name (the names table's hash of it,
 * nc_hash_finish with type 0), the type, and the answered nodes' addresses as a set: `count` of
 * `addr`, in ascending order, the rest 0xffffffff. An IPv4 address is its 4 bytes as a native
 * word; an IPv6 address its 4 words XORed (the control plane writes no variant whose nodes' IPv6
 * addresses fold alike while different). The value is the answer section's RRSIG records as the
 * slow path writes them after the addresses (owner 0xc00c), `len` bytes (zero padded), `count`
 * records.
 * `ttl_at` says where each record's TTL is in `data` (the program writes the answer's there: its
 * pool may lower it; the signatures hold the name's own as their Original TTL), at most
 * NC_GEO_SIG_RECORDS records. A query with DO about such a name (its record's signed geo entry)
 * appends them; a set with no entry passes (NC_PASS_DNSSEC).
 */
#define NC_GEO_SIGS_MAX (1 << 20)
#define NC_GEO_SIG_MAX 512
#define NC_GEO_SIG_RECORDS 4

struct nc_geo_sig_key {
	__u64 name;
	__u16 qtype;
	__u16 count;
	__u32 addr[NC_GEO_ANSWERS_MAX];
	__u32 pad;
};

struct nc_geo_sig {
	__u16 len;
	__u16 count;
	__u16 ttl_at[NC_GEO_SIG_RECORDS];
	__u32 pad;
	__u8 data[NC_GEO_SIG_MAX];
};

/*
 * The IPv6 prefixes a compile's database locates by the IPv4 address inside them (ARRAY
 * nc_geo_alias, NC_GEO_ALIASES entries a generation; alias i of generation g at
 * g * NC_GEO_ALIASES + i; the first with plen 0 ends the list). An IPv6 client address that a
 * prefix covers is looked up in the IPv4 trie as its 4 bytes at v4_at, and its ECS scope is plen
 * plus the IPv4 prefix's length. MaxMind's trees alias ::/96, ::ffff:0:0/96, 2001::/32 (Teredo)
 * and 2002::/16 (6to4).
 */
#define NC_GEO_ALIASES 8

struct nc_geo_alias {
	__u64 value[2]; /* the prefix, as the address's two 8-byte words in network order, masked */
	__u64 mask[2];	/* its mask, in the same form */
	__u32 plen;	/* its length, a multiple of 8 up to 96; 0: no alias (the end of the list) */
	__u32 v4_at;	/* plen / 8: where the IPv4 address starts in the IPv6 address */
};

/*
 * A pool's TTL state (ARRAY nc_pools, NC_POOLS_MAX entries a generation): TTL follows health (ARCHITECTURE §6). The
 * control plane writes one entry when the pool's state changes: its low TTL while a member is
 * down or degraded or has changed state lately, its cap (or 0xffffffff) once it has settled.
 */
struct nc_pool {
	__u32 ttl_cap;
};

/* A page of the names arena (nc_names): records, each 8-aligned. */
struct nc_arena_page {
	__u8 bytes[NC_ARENA_PAGE];
};

/* The start of a record in the arena: its name's length, its directory's, and what its flags say. */
struct nc_record_head {
	__u16 len;	/* wire length of the name that follows, root label included: 1..255 */
	__u8 types;	/* entries of the directory after the name: at most NC_TYPES_MAX */
	__u8 flags;	/* NC_NAME_NODATA, NC_NAME_NXDOMAIN, NC_NAME_SIGNED */
	__u16 negative; /* the index of its negative answer in nc_negatives (0: none) */
	__u16 words;	/* the record's length in 8-octet words */
};

/*
 * An entry of a record's directory: an answer's type and where it starts in the record, and
 * whether it is the answer to a query with the DO bit (NC_AT_SIGNED: its signatures with it,
 * ARCHITECTURE §18). A name of a signed zone holds both where its record has room; a query with
 * DO finds the signed one or passes.
 */
struct nc_type_ref {
	__u16 qtype; /* host order; NC_QTYPE_NEGATIVE: a negative answer (its own record) */
	__u16 at;    /* octets from the record's start, 8-aligned, at most NC_ANSWER_AT_MAX; | NC_AT_SIGNED */
};
#define NC_AT_SIGNED 0x8000
/*
 * A name's part of its signed NODATA: under NC_QTYPE_NEGATIVE with NC_AT_SIGNED in the name's own
 * record, the name's proof (its NSEC and signatures, whose names point at the question alone),
 * sent after the signed entry of its negative answer's record (the SOA and its signatures, moved
 * with the query's length as the negative answer is). At most NC_PROOF_MAX section bytes.
 */
#define NC_PROOF_MAX 512

/* What XDP does with a DNS query above the pass budget. */
enum nc_over_budget {
	NC_OVER_BUDGET_TRUNCATE = 0, /* a minimal TC=1 reply: real resolvers retry over TCP */
	NC_OVER_BUDGET_DROP = 1,
};

/* Addresses of one family nc_config holds in place (struct nc_local_key, below, for the rest). */
#define NC_LOCAL_INLINE 4

/* Runtime settings of the program (ARRAY map, one entry, key 0). */
struct nc_config {
	__u32 abi_version;   /* NC_ABI_VERSION of the control plane that wrote this */
	__u16 dns_port;	     /* UDP port answered, host order; 0 = the program is idle (passes all) */
	__u16 udp_payload;   /* our EDNS UDP payload size, advertised in OPT and the most we send */
	__u32 enabled;	     /* 0 = pass everything (e.g. while maps are being filled) */
	__u32 pass_rate;     /* DNS queries per second each CPU may pass to the slow path; 0 = no limit */
	__u32 pass_burst;    /* queries a CPU may pass at once above the rate (bucket size) */
	__u32 over_budget;   /* enum nc_over_budget */
	__u32 generation;    /* the live generation of the names table and the geo maps: 0 or 1 */
	__u32 slot_mask;     /* slots per generation - 1 (a power of two - 1); 0 before the first fill */
	__u32 geo4_capacity; /* entries of every inner map of nc_geo4 (fixed when the maps were made) */
	__u32 cands_capacity; /* entries of every inner map of nc_cands (likewise) */
	__u32 names_capacity; /* names (records) the names table holds (its slots were sized for), kept for a successor */
	/*
	 * The addresses XDP answers queries to (nc_local holds them all): while a family has at most
	 * NC_LOCAL_INLINE, they are here too and compared in place (a hash lookup of each query cost
	 * ~45 ns, a quarter of an answer); NC_LOCAL_INLINE + 1: more, looked up in nc_local.
	 */
	__u32 local4_count;
	__u32 local6_count;
	__u32 pad;
	__u64 local6[NC_LOCAL_INLINE][2]; /* as on the wire, two words each */
	__be32 local4[NC_LOCAL_INLINE];
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
	NC_ANSWERED_GEO,	/* a geo name answered from the geo maps (XDP_TX) */
	NC_PASS_GEO,		/* a geo name XDP leaves to the slow path: every candidate down and no fail-open */
	NC_ANSWERED_GEO_ALL_DOWN, /* a geo name answered fail-open: every candidate down, the top ones anyway */
	NC_RRL_SLIPPED,		/* over the response rate limit: a TC=1 reply instead of the answer */
	NC_RRL_DROPPED,		/* over the response rate limit: dropped */
	NC_ANSWERED_NXDOMAIN,	/* a name that does not exist, answered NXDOMAIN from its zone's record (XDP_TX) */
	NC_PASS_COOKIE,		/* a server cookie that is not valid: the slow path answers BADCOOKIE */
	NC_PASS_NOT_OURS,	/* to the DNS port of an address that is not in nc_local: another server's, or forwarded */
	NC_PASS_DNSSEC,		/* DO=1 about a signed zone's name: the slow path adds the signatures and proofs */
	NC_REASON_MAX,
};

/*
 * What XDP's answers went to, counted as each answer is sent (not the TC=1 replies of the pass
 * budget or rate limiting), per CPU: the question's type, in nc_stats after the verdicts
 * (answered_by_type: type t at t, every type from NC_TYPE_TALLY - 1 up there); the zone, by the index of
 * the negative answer of the name's record (nc_by_zone, NC_NEGATIVES_MAX counters: the control
 * plane knows each index's zone; index 0, a record with none); and the node a geo answer puts
 * first (nc_by_node, generation * NC_NODES_MAX + its index in that generation's nodes map). The
 * control plane reads them summed over CPUs and names what each index stood for (ARCHITECTURE §16).
 * Both hold their counters in blocks of NC_TALLY_BLOCK, counter i at entry i / NC_TALLY_BLOCK: the
 * kernel allocates a per-CPU array's values one entry at a time, and 65,536 entries of one counter
 * took 50 ms of every start, against 1 ms for 1,024 blocks.
 */
#define NC_TALLY_BLOCK 64
struct nc_tally_block {
	__u64 count[NC_TALLY_BLOCK];
};
#define NC_TYPE_TALLY 512 /* a power of two: the program masks the index */
#define NC_TALLY_NO_NODE 0xffff /* the answer puts no node first (struct nc_scratch.geo_node) */

/*
 * Verdict counters, one per reason, in the order of enum nc_reason (the program indexes them by
 * reason), then the answers by type. The stats map holds one of these per CPU; with BTF, `bpftool
 * map dump` names each field.
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
	__u64 answered_geo;
	__u64 pass_geo;
	__u64 answered_geo_all_down;
	__u64 rrl_slipped;
	__u64 rrl_dropped;
	__u64 answered_nxdomain;
	__u64 pass_cookie;
	__u64 pass_not_ours;
	__u64 pass_dnssec;
	__u64 answered_by_type[NC_TYPE_TALLY]; /* not a verdict: XDP's answers by question type (above) */
};

/*
 * Response rate limiting of the answers XDP sends (ARRAY nc_rrl_cfg, one entry; the semantics of
 * the slow path's ResponseRateLimiter): per client prefix and class (the question; an NXDOMAIN's
 * zone), `rate` responses a second with a second's worth at once, going at most `window` seconds
 * into debt; over it every `slip`-th answer is a TC=1 reply and the others are dropped. The
 * buckets are shared by every CPU, so the rate holds however the NIC spreads a prefix's packets.
 */
struct nc_rrl_config {
	__u32 rate;	 /* responses a second per bucket; 0: off */
	__u32 slip;	 /* every slip-th limited response a TC=1 reply; 0: all dropped */
	__u32 v4_prefix; /* bits of an IPv4 client's address that make its prefix (1..32) */
	__u32 v6_prefix; /* the same for IPv6 (1..128) */
	__u32 window;	 /* seconds of debt a bucket may go into */
	__u32 nxdomain_rate; /* the same as `rate` for NXDOMAIN answers, counted by zone; 0: not limited */
	__u64 seed;	 /* keys the buckets' hash, so that no one can aim two keys at one slot */
	__u32 exempt;	 /* exempt prefixes in nc_rrl_exempt: 0 skips its lookup */
	__u32 interval_ns; /* NC_TOKEN / rate: the time one response takes of a bucket (at least 1) */
	__u32 nxdomain_interval_ns; /* the same for nxdomain_rate */
	__u32 pad;
};

/*
 * The buckets (ARRAY nc_rrl, NC_RRL_ENTRIES, 16 bytes each, shared by the CPUs): direct-mapped by
 * a seeded hash of (prefix, class); a slot is its key's while its tag matches, and a key that finds
 * another's tag takes the slot over with a full bucket (as an LRU table forgets its oldest). An
 * array slot costs an index, where a hash map's lookup hashes a 40-byte key and walks a bucket.
 * A bucket is one word, the generic cell rate algorithm's theoretical arrival time: the time its
 * answers so far would take at the rate. An answer is within the rate while that is at most a
 * second ahead of now, and moves it one interval on; a compare-and-swap makes that one step on
 * every CPU at once, without a lock.
 */
struct nc_rrl_slot {
	__u64 tag; /* the key's hash (never 0): whose bucket this is */
	__u64 tat; /* the theoretical arrival time (jiffies as ns, or the coarse clock: rrl.h) */
};

/*
 * The addresses XDP answers DNS queries to (HASH nc_local, the value unused): those the daemon
 * listens on at the program's port, or every address of the host where it listens on a wildcard
 * address. A query to any other address is passed untouched (NC_PASS_NOT_OURS): it is for another
 * server on the host, or for a host this one forwards to, and the slow path would not see it.
 */
#define NC_LOCAL_MAX 4096

struct nc_local_key {
	__u32 family;  /* 4 or 6 */
	__u8 addr[16]; /* as on the wire; IPv4 in the first 4 octets, the rest zero */
};

#define NC_RRL_ENTRIES 65536 /* a power of two */
#define NC_RRL_EXEMPT_MAX 256

/* An exempt prefix (LPM_TRIE nc_rrl_exempt): IPv4 as ::ffff:a.b.c.d, its length plus 96. */
struct nc_rrl_exempt_key {
	__u32 prefixlen;
	__u8 addr[16];
};

/*
 * DNS Cookies (ARRAY nc_cookie, one entry; the slow path's ServerCookies): server cookies as
 * RFC 9018 makes them, Version 1 | 3 reserved octets | time (seconds since 1970, 32 bits) | 8
 * octets of SipHash-2-4 under the secret of client cookie | those 8 octets | client address. A
 * valid one (made under `secret` or `previous`, at most an hour old, at most 5 minutes ahead) is
 * echoed when made under `secret` less than 30 minutes ago, else a new one is made; a client with
 * a valid one is not rate limited.
 */
struct nc_cookie_config {
	__u64 secret[2];	/* the current secret's 16 octets as two little-endian words: SipHash's k0, k1 */
	__u64 previous[2];	/* the one before, still accepted when has_previous */
	__s64 clock_offset_ns;	/* CLOCK_REALTIME minus bpf_ktime_get_ns (CLOCK_MONOTONIC), kept current by the control plane */
	__u32 enabled;		/* 0: a COOKIE option is ignored, as a server without cookies does */
	__u32 has_previous;
};

#endif /* NEARCAST_ABI_H */
