/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The names table on the fast path: a name's hash, computed a word at a time while the name is
 * read, and the lookup of the name's record in the live generation of the table (the layout and the
 * hash are defined in nearcast_abi.h; the control plane's half is NamesTable.swift).
 */
#ifndef NC_NAMES_H
#define NC_NAMES_H

#include "maps.h"

/*
 * A position in a name (or its length): below 256, names being at most 255 bytes. Read back from
 * the scratch map it is any value to the verifier; NC_NAME_POS states the bound (it changes no
 * value), so a pointer into the name made from it has a known range.
 */
#define NC_NAME_POS(pos) ((pos) & 0xff)

static __always_inline __u64 nc_hash_start(__u32 len)
{
	return NC_HASH_SEED ^ len;
}

/* Adds one 8-byte word of the lower-cased, zero-padded name (and last, 0: the table's hash; or
 * the query type: the question's, which rate limiting counts by). */
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
 * The record that may hold the name whose hash is `hash`, in generation `gen` of the names
 * table: its slot's reference (the record's offset in the arena / 8 + 1), or 0 when there is
 * none. The first slot in the probe sequence whose tag matches names the only candidate (the
 * control plane places nothing behind a slot of the same tag). Scalars only: inlined anywhere,
 * it costs the verifier little, and a miss costs no more than this.
 */
static __always_inline __u32 nc_probe(__u64 hash, const struct nc_config *cfg, __u32 gen)
{
	__u32 mask = cfg->slot_mask;
	__u32 base = gen ? mask + 1 : 0;
	__u32 tag = hash >> 32;

	for (__u32 p = 0; p < NC_PROBES; p++) { /* bound: the control plane places within NC_PROBES */
		__u32 at = base + (((__u32)hash + p) & mask);
		__u64 *slot = bpf_map_lookup_elem(&nc_slots, &at);

		if (!slot)
			return 0;
		__u64 v = *(volatile __u64 *)slot; /* one load: tag and record from the same write */

		if (!v)
			return 0;
		if ((__u32)(v >> 32) == tag)
			return (__u32)v;
	}
	return 0;
}

/*
 * The record `ref` (nc_probe) when its name is `key`'s (any name for a NULL `key`), or NULL: a
 * pointer into the arena at a variable offset, so only nc_find_answer calls this (lookup.h). The
 * record lies within its page, NC_RECORD_MAX octets from where it starts.
 */
static __always_inline __u8 *nc_record(const struct nc_name_key *key, __u32 ref)
{
	if (!ref)
		return NULL;
	/* The record: its page, and where in it (8-aligned, and never so far in that it could overrun). */
	__u32 words = ref - 1;
	__u32 page = words >> (NC_ARENA_PAGE_SHIFT - 3);
	__u32 off = (words << 3) & (NC_ARENA_PAGE - 1);

	if (off > NC_ARENA_PAGE - NC_RECORD_MAX)
		return NULL;
	struct nc_arena_page *pg = bpf_map_lookup_elem(&nc_names, &page);

	if (!pg)
		return NULL;
	__u8 *r = pg->bytes + off;

	if (!key)
		return r;
	const struct nc_record_head *head = (const struct nc_record_head *)r;
	__u32 len = key->len;

	if (head->len != len || len > NC_NAME_MAX - 1)
		return NULL;
	const nc_u64a *a = (const nc_u64a *)(r + sizeof(*head));
	const nc_u64a *b = (const nc_u64a *)key->name;

	for (__u32 j = 0; j < NC_NAME_MAX / 8; j++) { /* bound: the longest name, a word a step */
		if (j * 8 >= len)
			break;
		if (a[j] != b[j])
			return NULL;
	}
	return r;
}

#endif /* NC_NAMES_H */
