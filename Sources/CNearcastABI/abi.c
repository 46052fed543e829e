// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// Compile-time checks of the shared layouts: a change that moves a field breaks the build here
// before it can break the program at run time. The Swift tests check the same sizes.
#include "nearcast_abi.h"

#include <stddef.h>

_Static_assert(sizeof(struct nc_name_key) == 264, "nc_name_key layout");
_Static_assert(NC_NEGATIVES_MAX % NC_TALLY_BLOCK == 0 && NC_NODES_MAX % NC_TALLY_BLOCK == 0,
	       "the tallies' counters fill whole blocks");
_Static_assert(offsetof(struct nc_name_key, name) == 8, "nc_name_key.name is 8-aligned: compared a word at a time");
_Static_assert(sizeof(struct nc_record_head) == 8, "nc_record_head layout: the name follows 8-aligned");
_Static_assert(sizeof(struct nc_type_ref) == 4, "nc_type_ref layout");
_Static_assert(NC_ANSWER_AT_MAX == NC_RECORD_MAX - sizeof(struct nc_answer) - sizeof(struct nc_nx_head),
	       "an answer anywhere it may start ends within its record, a negative's sections read past its head too");
_Static_assert(NC_NEGATIVES_MAX == 65536, "a record's negative index is 16 bits");
_Static_assert(NC_RECORD_MAX >= 8 + 256 + 4 * NC_TYPES_MAX + sizeof(struct nc_answer), "a record holds the longest name and a whole answer");
_Static_assert(NC_ARENA_PAGE % NC_RECORD_MAX == 0 && NC_RECORD_MAX % 8 == 0, "records lie 8-aligned within pages");
_Static_assert(sizeof(struct nc_arena_page) % 8 == 0, "mmapable pages lie 8-aligned");
_Static_assert(sizeof(struct nc_answer) == 16 + NC_SECTIONS_MAX, "nc_answer layout");
_Static_assert(offsetof(struct nc_answer, sections) == 16, "nc_answer.sections offset");
_Static_assert(sizeof(struct nc_config) == 136 && offsetof(struct nc_config, local6) % 8 == 0, "nc_config layout");
_Static_assert(sizeof(struct nc_bucket) == 16, "nc_bucket layout");
_Static_assert(offsetof(struct nc_answer, kind) == 12, "nc_answer.kind offset");
_Static_assert(sizeof(struct nc_geo6_key) == 20, "LPM key: prefixlen, then the address");
_Static_assert(sizeof(struct nc_geo4_span) == 8 && sizeof(struct nc_geo4_prefix) == 16, "IPv4 prefix layouts");
_Static_assert(NC_GEO4_SPANS == 1 << NC_GEO4_STEPS, "a span is searched in NC_GEO4_STEPS halvings");
_Static_assert(sizeof(struct nc_geo_class) == 12, "geo map layouts");
_Static_assert(sizeof(struct nc_cands) == 4 + 2 * NC_GEO_DEPTH, "nc_cands layout");
_Static_assert(sizeof(struct nc_node) == 24 && sizeof(struct nc_geo_name) == 16, "nc_node, nc_geo_name layouts");
_Static_assert(sizeof(struct nc_pool) == 4 && offsetof(struct nc_geo_name, pool) == 6, "nc_pool, nc_geo_name.pool");
_Static_assert(sizeof(struct nc_geo_alias) == 40, "nc_geo_alias layout");
_Static_assert(sizeof(struct nc_cookie_config) == 48, "nc_cookie_config layout");
_Static_assert(sizeof(struct nc_rrl_config) == 48 && sizeof(struct nc_rrl_slot) == 16, "rate limiting layouts");
_Static_assert((NC_RRL_ENTRIES & (NC_RRL_ENTRIES - 1)) == 0, "bucket slots are masked");
_Static_assert(sizeof(struct nc_nx_head) == 24, "nc_nx_head layout: the sections after it stay 8-aligned");
_Static_assert((NC_POOLS_MAX & (NC_POOLS_MAX - 1)) == 0, "pool indexes are masked into a generation's half");
_Static_assert(NC_GEO_GENERATIONS == 2, "the generation is one bit (names table slots, geo halves)");
_Static_assert(offsetof(struct nc_stats, answered_by_type) == NC_REASON_MAX * sizeof(__u64), "one nc_stats counter per reason, then the types");
_Static_assert(offsetof(struct nc_stats, limit_dropped) == NC_LIMIT_DROPPED * sizeof(__u64), "nc_stats in reason order");
_Static_assert(offsetof(struct nc_stats, pass_geo) == NC_PASS_GEO * sizeof(__u64), "nc_stats in reason order");
_Static_assert(offsetof(struct nc_stats, answered_geo_all_down) == NC_ANSWERED_GEO_ALL_DOWN * sizeof(__u64), "nc_stats in reason order");
_Static_assert(sizeof(NC_MAP_BUCKET) <= 16 && sizeof(NC_MAP_NAMES) <= 16 && sizeof(NC_MAP_SLOTS) <= 16 && sizeof(NC_MAP_CANDS) <= 16 && sizeof(NC_MAP_STATS) <= 16 &&
		       sizeof(NC_MAP_CONFIG) <= 16 && sizeof(NC_MAP_POOLS) <= 16 && sizeof(NC_MAP_NODES) <= 16 &&
		       sizeof(NC_MAP_GEO4) <= 16 && sizeof(NC_MAP_GEO4_SPANS) <= 16 && sizeof(NC_MAP_GEO6) <= 16 && sizeof(NC_MAP_ALIASES) <= 16 && sizeof(NC_MAP_NEGATIVES) <= 16 && sizeof(NC_MAP_LOCAL) <= 16 &&
		       sizeof(NC_MAP_BY_ZONE) <= 16 && sizeof(NC_MAP_BY_NODE) <= 16,
	       "map names fit the kernel's 15 characters");
_Static_assert(NC_TYPE_TALLY > 257 && (NC_TYPE_TALLY & (NC_TYPE_TALLY - 1)) == 0, "a count per type up to CAA and beyond, the index masked");
_Static_assert(NC_TALLY_NO_NODE >= NC_NODES_MAX, "no node is no node's index");
_Static_assert(sizeof(struct nc_local_key) == 20, "nc_local_key layout: the family, then the address");
_Static_assert(sizeof(struct nc_geo_sig_key) == 48 && sizeof(struct nc_geo_sig) == 16 + NC_GEO_SIG_MAX, "signed geo answer layouts");
_Static_assert((NC_GEO_SIG_MAX & (NC_GEO_SIG_MAX - 1)) == 0, "a record's TTL offset is masked into the data");
_Static_assert(sizeof(NC_MAP_GEO_SIGS) <= 16, "map names fit the kernel's 15 characters");

/* The ABI version, for Swift code that cannot see macros with values computed at compile time. */
const unsigned int nc_abi_version = NC_ABI_VERSION;
