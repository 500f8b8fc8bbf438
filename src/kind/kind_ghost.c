/*-------------------------------------------------------------------------
 *
 * kind_ghost.c
 *	  The ghosts: each victim's key hash and value, remembered in sets of
 *	  PGSS_NG_GHOST_WAYS in main shared memory, so that a new entry of that
 *	  key starts from that value, decayed (kind_ghost_usage, from
 *	  create_body).  One writer, the holder of <name>_dealloc; readers take
 *	  no lock.  docs/design.md, "Eviction and the backstop".
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <float.h>
#include <xxhash.h>

#include "utils/timestamp.h"

#include "kind_int.h"

/*
 * kind_ghost_sets_for
 *		Sets of ghosts for a kind whose max is max_entries at start: the
 *		power of two at or above max_entries / 2, at least 16, at most
 *		PGSS_NG_GHOST_SETS_MAX (so 2 to 4 ghosts per entry of max).
 */
uint32
kind_ghost_sets_for(int max_entries)
{
	uint32		sets = 16;

	while (sets < (uint32) (max_entries / 2) && sets < PGSS_NG_GHOST_SETS_MAX)
		sets <<= 1;
	return sets;
}

/*
 * kind_ghost_hash
 *		The 64-bit hash of a key that names its ghost (never 0: no ghost).
 */
uint64
kind_ghost_hash(PgssNgKind *kind, const void *key)
{
	uint64		h = XXH3_64bits(key, kind->desc->key_size);

	return h != 0 ? h : 1;
}

static inline PgssNgGhostSet *
ghost_set(PgssNgKind *kind, uint64 h)
{
	return &kind->ghosts[h & (kind->ctl->ghost_sets - 1)];
}

/*
 * kind_ghost_remember
 *		Remember the victim whose key hashes to h, worth value at now: in
 *		its set, over its own ghost, else a free one, else the oldest.
 *		The holder of <name>_dealloc is the only writer; readers
 *		(kind_ghost_usage) take no lock: the tag is cleared while the value
 *		changes, and read again after it.
 */
void
kind_ghost_remember(PgssNgKind *kind, uint64 h, double value, TimestampTz now)
{
	PgssNgGhostSet *set = ghost_set(kind, h);
	float		f = (float) Min(value, (double) FLT_MAX);
	uint32		fbits;
	uint32		oldest_sec = PG_UINT32_MAX;
	int			way = -1;
	int			i;

	for (i = 0; i < PGSS_NG_GHOST_WAYS; i++)
	{
		uint64		tag = pg_atomic_read_u64(&set->tag[i]);
		uint32		sec = (uint32) pg_atomic_read_u64(&set->value[i]);

		if (tag == h)
		{
			way = i;
			break;
		}
		if (tag == 0)
			sec = 0;
		if (sec < oldest_sec || way < 0)
		{
			oldest_sec = sec;
			way = i;
		}
	}
	memcpy(&fbits, &f, sizeof(fbits));
	pg_atomic_write_u64(&set->tag[way], 0);
	pg_write_barrier();
	pg_atomic_write_u64(&set->value[way],
						((uint64) fbits << 32) | (uint32) (now / USECS_PER_SEC));
	pg_write_barrier();
	pg_atomic_write_u64(&set->tag[way], h);
}

/*
 * kind_ghost_usage
 *		The value an evicted entry of key had, decayed to now: what a new
 *		entry of that key adds to its usage (0 if eviction remembers none).
 *		No lock (see kind_ghost_remember): a value being replaced reads as none.
 */
double
kind_ghost_usage(PgssNgKind *kind, const void *key, TimestampTz now)
{
	uint64		h;
	PgssNgGhostSet *set;
	int			i;

	if (kind->ghosts == NULL)
		return 0;
	h = kind_ghost_hash(kind, key);
	set = ghost_set(kind, h);
	for (i = 0; i < PGSS_NG_GHOST_WAYS; i++)
	{
		uint64		v;
		uint32		fbits;
		float		f;

		if (pg_atomic_read_u64(&set->tag[i]) != h)
			continue;
		pg_read_barrier();
		v = pg_atomic_read_u64(&set->value[i]);
		pg_read_barrier();
		if (pg_atomic_read_u64(&set->tag[i]) != h)
			return 0;
		fbits = (uint32) (v >> 32);
		memcpy(&f, &fbits, sizeof(f));
		return kind_decayed_usage((double) f,
								  (TimestampTz) (uint32) v * USECS_PER_SEC,
								  now);
	}
	return 0;
}

/*
 * kind_ghosts_forget
 *		Forget every ghost (a full reset).  <name>_dealloc held.
 */
void
kind_ghosts_forget(PgssNgKind *kind)
{
	uint32		i;
	int			w;

	for (i = 0; i < kind->ctl->ghost_sets; i++)
		for (w = 0; w < PGSS_NG_GHOST_WAYS; w++)
			pg_atomic_write_u64(&kind->ghosts[i].tag[w], 0);
}
