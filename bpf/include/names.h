/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The names table on the fast path: the question's hash, computed a word at a time while the name
 * is read, and the lookup of the question in the live generation of the table (the layout and the
 * hash are defined in nearcast_abi.h; the control plane's half is NamesTable.swift).
 */
#ifndef NC_NAMES_H
#define NC_NAMES_H

#include "maps.h"

static __always_inline __u64 nc_hash_start(__u32 len)
{
	return NC_HASH_SEED ^ len;
}

/* Adds one 8-byte word of the lower-cased, zero-padded name (and last, the query type). */
static __always_inline __u64 nc_hash_word(__u64 h, __u64 w)
{
	h = (h ^ w) * NC_HASH_MUL;
	return h ^ (h >> 32);
}

static __always_inline __u64 nc_hash_finish(__u64 h, __u16 qtype)
{
	h = nc_hash_word(h, qtype);
	h ^= h >> 33;
	h *= NC_HASH_FMIX1;
	h ^= h >> 33;
	h *= NC_HASH_FMIX2;
	return h ^ (h >> 33);
}

/*
 * The answer for `key` (whose hash is `hash`) in generation `gen` of the names table, or NULL.
 * The first slot in the probe sequence whose tag matches names the only candidate (the control
 * plane places nothing behind a slot of the same tag), so at most one entry is compared.
 */
static __always_inline struct nc_answer *nc_lookup_name(const struct nc_name_key *key, __u64 hash,
							 const struct nc_config *cfg, __u32 gen)
{
	__u32 mask = cfg->slot_mask;
	__u32 base = gen ? mask + 1 : 0;
	__u32 tag = hash >> 32;
	__u32 entry = 0;

	for (__u32 p = 0; p < NC_PROBES; p++) { /* bound: the control plane places within NC_PROBES */
		__u32 at = base + (((__u32)hash + p) & mask);
		__u64 *slot = bpf_map_lookup_elem(&nc_slots, &at);

		if (!slot)
			return NULL;
		__u64 v = *(volatile __u64 *)slot; /* one load: tag and index from the same write */

		if (!v)
			return NULL;
		if ((__u32)(v >> 32) == tag) {
			entry = (__u32)v;
			break;
		}
	}
	if (!entry)
		return NULL;
	entry -= 1;
	struct nc_name_entry *e = bpf_map_lookup_elem(&nc_names, &entry);

	if (!e || e->key.qtype != key->qtype || e->key.len != key->len)
		return NULL;
	const nc_u64a *a = (const nc_u64a *)e->key.name;
	const nc_u64a *b = (const nc_u64a *)key->name;
	__u32 len = key->len;

	for (__u32 j = 0; j < NC_NAME_MAX / 8; j++) { /* bound: the longest name, a word a step */
		if (j * 8 >= len)
			break;
		if (a[j] != b[j])
			return NULL;
	}
	return &e->answer;
}

/*
 * After a miss: the name's NODATA for the types it has none of (under NC_QTYPE_OTHER), or NULL.
 * Not for the types the slow path answers otherwise: ANY, AXFR, IXFR, and DS (answered from the
 * parent's side of a zone cut). The key's type is put back for the reply.
 */
static __always_inline const struct nc_answer *nc_lookup_other_type(struct nc_name_key *key, __u64 name_hash,
								   const struct nc_config *cfg, __u32 gen)
{
	__u16 qtype = key->qtype;

	if (qtype == 255 || qtype == 252 || qtype == 251 || qtype == 43 || qtype == NC_QTYPE_OTHER)
		return NULL;
	key->qtype = NC_QTYPE_OTHER;
	const struct nc_answer *a = nc_lookup_name(key, nc_hash_finish(name_hash, NC_QTYPE_OTHER), cfg, gen);

	key->qtype = qtype;
	return a && a->kind == NC_KIND_STATIC ? a : NULL;
}

#endif /* NC_NAMES_H */
